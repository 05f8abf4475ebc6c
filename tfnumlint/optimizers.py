"""Optimizer facts in one table, read by the rules, the verifier and the fixer.

One row per family (the ``<family>`` of the canonical op ``optimizer:<family>``): its class
names, the spellings analysed code may use, its epsilon defaults and where a positional
epsilon sits, and the learning rate above which it counts as "high".  Static: no TensorFlow.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Optimizer:
    family: str
    keras: str  # class under keras.optimizers
    tf1: str | None  # class under tf.train, if there is one
    spellings: tuple[str, ...]  # qualified names that construct it
    keras_epsilon: float | None  # default epsilon of the Keras class (None: no epsilon)
    tf1_epsilon: float | None  # default epsilon of the tf.train class
    epsilon_index: int  # positional index of ``epsilon`` (-1: none)
    adaptive: bool  # divides by a running gradient statistic (sqrt(v) + eps)
    high_lr: float  # default learning-rate threshold of the training rules


def _row(family: str, keras: str, tf1: str | None, *extra: str, **facts) -> Optimizer:
    spellings = (f"keras.optimizers.{keras}", *((f"tf.train.{tf1}",) if tf1 else ()), *extra)
    return Optimizer(family, keras, tf1, spellings, **facts)


OPTIMIZERS: dict[str, Optimizer] = {
    o.family: o
    for o in (
        _row("adam", "Adam", "AdamOptimizer", "keras.optimizers.legacy.Adam",
             keras_epsilon=1e-7, tf1_epsilon=1e-8, epsilon_index=3, adaptive=True, high_lr=0.003),
        _row("adamw", "AdamW", None, "keras.optimizers.experimental.AdamW",
             keras_epsilon=1e-7, tf1_epsilon=1e-8, epsilon_index=4, adaptive=True, high_lr=0.003),
        _row("adamax", "Adamax", None,
             keras_epsilon=1e-7, tf1_epsilon=1e-8, epsilon_index=3, adaptive=True, high_lr=0.003),
        _row("nadam", "Nadam", None,
             keras_epsilon=1e-7, tf1_epsilon=1e-8, epsilon_index=3, adaptive=True, high_lr=0.003),
        _row("rmsprop", "RMSprop", "RMSPropOptimizer", "keras.optimizers.legacy.RMSprop",
             keras_epsilon=1e-7, tf1_epsilon=1e-10, epsilon_index=3, adaptive=True, high_lr=0.003),
        _row("adagrad", "Adagrad", "AdagradOptimizer",
             keras_epsilon=1e-7, tf1_epsilon=None, epsilon_index=2, adaptive=True, high_lr=0.1),
        _row("adadelta", "Adadelta", "AdadeltaOptimizer",
             keras_epsilon=1e-7, tf1_epsilon=1e-8, epsilon_index=2, adaptive=True, high_lr=10.0),
        _row("ftrl", "Ftrl", "FtrlOptimizer",
             keras_epsilon=None, tf1_epsilon=None, epsilon_index=-1, adaptive=True, high_lr=0.1),
        _row("sgd", "SGD", "GradientDescentOptimizer", "tf.train.MomentumOptimizer",
             "keras.optimizers.legacy.SGD",
             keras_epsilon=None, tf1_epsilon=None, epsilon_index=-1, adaptive=False, high_lr=1.0),
    )
}  # fmt: skip

ADAPTIVE = frozenset(f for f, o in OPTIMIZERS.items() if o.adaptive)
