"""A probe traced into one function over batched inputs, and its evaluation at probe points.

A probe is traced once into a ``tf.function`` over batched inputs (``[N, 1, K]``: one row per
probe point) that returns the flagged expression's value, the loss, and their gradients with
respect to every free input.  One call (:func:`run`) evaluates every point.  The climb
objective (the unsafe ops' distance to their danger zone) is traced here too, since it reads the
graph's ops; the climb itself is ``climb.py``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from .. import ops as registry
from ..rules.recipes import recipe_for
from . import intervals as iv
from . import kinds, trace, trace_ops
from .trace import UnsupportedProbe


def recipe(probe: dict[str, Any]) -> dict[str, Any]:
    """How to check this probe: carried in it; older probes name their rule instead."""
    return probe.get("recipe") or recipe_for(probe.get("rule")).as_probe()


@dataclass
class Input:
    name: str
    ident: str
    lo: float
    hi: float
    prob: bool  # modelled as sigmoid(free logit)
    scale: bool = False  # read only as a divisor: every entry of a row holds its value
    producer: str = ""  # the op that makes it, when the slice knows (softmax, sigmoid)


@dataclass
class Program:
    """A probe traced into one concrete function over batched inputs."""

    probe: dict[str, Any]
    dtype: str
    inputs: list[Input]
    k: int
    fn: Any
    graph: tf.Graph
    logits: set[str]
    has_loss: bool
    ops: set[str]
    make_traced: Any = None  # builds the traced function with the climb objective, on demand
    rank: int = 2  # user rank of every input: [1, ..., 1, K]
    # the loss reads the target's own tensor: "gw" is dloss/dterm, "gtx_*" the loss's gradient
    # through the term alone
    term_in_loss: bool = False
    _traced: Any = None

    def is_traced(self) -> bool:
        return self._traced is not None

    def traced(self) -> Any:
        if self._traced is None:
            self._traced = self.make_traced() if self.make_traced else self.fn
        return self._traced


def probe_dtype(probe: dict[str, Any]) -> str:
    dtype = probe.get("dtype") or "float32"
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise UnsupportedProbe(f"unsupported dtype {dtype!r}")
    return dtype


def declared_inputs(probe: dict[str, Any]) -> list[Input]:
    """The probe's free inputs; probabilities over the full [0, 1] become sigmoid(logit)."""
    out = []
    for i, spec in enumerate(probe.get("inputs") or []):
        lo, hi = trace.parse_float(spec.get("lo", "-inf")), trace.parse_float(spec.get("hi", "inf"))
        is_prob = bool(spec.get("prob")) or spec.get("producer") in registry.PROBABILITY
        prob = is_prob and lo <= 0 and hi >= 1
        scale = spec.get("row") == "scale"
        producer = str(spec.get("producer") or "")
        out.append(Input(str(spec["name"]), f"in_{i}", lo, hi, prob, scale, producer))
    return out


MAX_ONE_HOT_WIDTH = 64  # wider rows cost more per point than a probe can spend


def one_hot_width(depths: dict[str, int], k: int) -> int:
    """The row width of a probe that one_hot rows meet: their literal depth, when every
    one_hot of the probe's inputs agrees on it (a chosen action's one_hot times a softmax row
    of the same width); ``k`` otherwise."""
    widths = set(depths.values())
    if len(widths) == 1 and 1 < (width := widths.pop()) <= MAX_ONE_HOT_WIDTH:
        return width
    return k


def without_eps(tree: Any, eps: float) -> Any:
    """A copy of the tree with the epsilon constant replaced by 0: what the eps changes."""
    if isinstance(tree, dict):
        if tree.get("k") == "const" and trace.parse_float(tree["v"]) == eps:
            return {"k": "const", "v": 0.0}
        return {k: without_eps(v, eps) for k, v in tree.items()}
    if isinstance(tree, list):
        return [without_eps(v, eps) for v in tree]
    return tree


def build(probe: dict[str, Any], dtype: str | None = None, extras: bool = True,
          grads: bool = True, shape: tuple[int, int] | None = None,
          batch: int = 1) -> Program:  # fmt: skip
    """Trace the probe: target, loss and gradients, one row per probe point.  ``shape`` (k,
    rank) gives a part of a probe the input shapes of the whole, so it sees the same values;
    ``batch`` examples along the user's axis 0 (``spread.py`` makes them differ)."""
    dtype = dtype or probe_dtype(probe)
    tf_dtype = trace_ops.DTYPES[dtype]
    inputs = declared_inputs(probe)
    ids = {i.name: i.ident for i in inputs}
    path, line = str(probe.get("path") or "<probe>"), int(probe.get("line") or 1)
    target_tree, loss_tree = probe.get("target"), probe.get("loss")
    target_code, ops = trace.compile_tree(target_tree, ids, path, line)
    loss_code = None
    hooked, term_in_loss = with_term_hook(loss_tree, target_tree)
    if loss_tree is not None:
        loss_code, loss_ops = trace.compile_tree(hooked, {**ids, TERM: TERM_ID}, path, line)
        ops |= loss_ops  # the target's own ops are in ``ops`` already
    eps = probe.get("eps")
    noeps_code = None
    if extras and recipe(probe)["check"] == "absorption" and eps is not None:
        noeps_code, _ = trace.compile_tree(
            without_eps(target_tree, trace.parse_float(eps)), ids, path, line
        )
    k = 2 if ops & trace_ops.SOFTMAX_OPS else 1
    rank = user_rank(target_tree, loss_tree)
    indices = kinds.one_hot_depths([target_tree, loss_tree])
    k = one_hot_width(indices, k)
    if shape is not None:
        k, rank = shape
    logits = trace.logit_inputs(target_tree) | trace.logit_inputs(loss_tree)
    logits |= {i.name for i in inputs if i.prob}

    batched: dict[str, bool] = {}  # per output: does it carry the point axis (set while tracing)

    def make_body(grads: bool):
        def body(*xs: tf.Tensor) -> dict[str, tf.Tensor]:
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(xs)
                values: dict[str, Any] = {"dtype_same": tf_dtype}
                for spec, x in zip(inputs, xs, strict=True):
                    values[spec.ident] = tf.math.sigmoid(x) if spec.prob else x
                    if k > 1 and spec.name in indices:  # one index per row, as one_hot takes
                        values[spec.ident] = x[..., 0]
                with tf.name_scope("target"):
                    target = trace.evaluate(target_code, values)
                term = values[TERM_ID] = tf.convert_to_tensor(target)
                target = per_point(
                    tf.cast(tf.convert_to_tensor(target), tf_dtype), xs, batched, "t"
                )
                objective = climb_objective(path)
                if loss_code is not None:
                    with tf.name_scope("loss"):
                        loss = tf.cast(
                            tf.convert_to_tensor(trace.evaluate(loss_code, values)), tf_dtype
                        )
                    loss = per_point(loss, xs, batched, "l")
                else:
                    loss = target
                t_sum, l_sum = tf.reduce_sum(target), tf.reduce_sum(loss)
            if xs:  # with no input at all, the one point is the whole batch
                check_batched(target, loss)
            out = {"t": target, "l": per_row(loss)}
            if not grads:
                return out
            if noeps_code is not None:
                out["t0"] = tf.cast(
                    tf.convert_to_tensor(trace.evaluate(noeps_code, values)), tf_dtype
                )
            if objective is not None:
                out["obj"] = objective
            if term_in_loss:  # how the loss weighs the term, and its gradient through it
                weight = zero_if_none(tape.gradient(l_sum, term), term)
                out["gw"] = per_point(tf.cast(weight, tf_dtype), xs, batched, "t")
                for spec, x in zip(inputs, xs, strict=True):
                    through = tape.gradient(term, x, output_gradients=weight)
                    out[f"gtx_{spec.ident}"] = zero_if_none(through, x)
            for spec, x in zip(inputs, xs, strict=True):
                v = values[spec.ident]
                out[f"gt_{spec.ident}"] = zero_if_none(tape.gradient(t_sum, v), v)
                out[f"gz_{spec.ident}"] = zero_if_none(tape.gradient(l_sum, x), x)
                if objective is not None:
                    out[f"go_{spec.ident}"] = zero_if_none(
                        tape.gradient(tf.reduce_sum(objective), x), x
                    )
            return out

        return body

    dims = [batch, *[1] * (rank - 2)] if rank > 1 else []
    specs = [tf.TensorSpec([None, *dims, k], tf_dtype, name=i.ident) for i in inputs]
    # The forward graph alone is cheap to trace (~9 ms) and is all the interval analysis and
    # the source mapping need; values and gradients at the points run eagerly.  Tracing the
    # gradient graph too costs ~45 ms, so that is done only if the gradient climb needs it.
    forward = tf.function(make_body(False), autograph=False).get_concrete_function(*specs)
    if not grads:
        return Program(
            probe,
            dtype,
            inputs,
            k,
            forward,
            forward.graph,
            logits,
            loss_code is not None,
            ops,
            rank=rank,
            term_in_loss=term_in_loss,
        )
    full = make_body(True)

    def traced():
        return tf.function(full, autograph=False).get_concrete_function(*specs)

    return Program(probe, dtype, inputs, k, full, forward.graph, logits, loss_code is not None, ops,
                   make_traced=traced, rank=rank, term_in_loss=term_in_loss)  # fmt: skip


# The flagged term inside its statement: the loss reads the target's own tensor there, so the
# gradient of the loss with respect to it (how much the loss weighs the term at a point) is
# known, and a symptom of the loss can be told apart from a symptom of this term.
TERM = "\x00term"  # no user label holds a NUL
TERM_ID = "term_t"


def with_term_hook(loss: Any, target: Any) -> tuple[Any, bool]:
    """The loss tree with every copy of the target replaced by a reference to the target's
    tensor, and whether there was one (a statement the slicer rebuilt differently has none)."""
    if loss is None or target is None:
        return loss, False
    found = False

    def swap(tree: Any) -> Any:
        nonlocal found
        if tree == target:
            found = True
            return {"k": "input", "name": TERM}
        if isinstance(tree, dict):
            return {k: swap(v) for k, v in tree.items()}
        if isinstance(tree, list):
            return [swap(v) for v in tree]
        return tree

    out = swap(loss)
    return out, found


TRACE_ERRORS = (UnsupportedProbe, tf.errors.OpError, ValueError, TypeError)


def build_with_fallback(probe: dict[str, Any], dtype: str) -> Program:
    """The probe with its enclosing statement, or the target alone when the statement does not
    trace (it mixes shapes or ops the probe cannot model; the target's hazard is the same)."""
    try:
        return build(probe, dtype)
    except TRACE_ERRORS:
        if probe.get("loss") is None:
            raise
    return build({**probe, "loss": None}, dtype)


def per_point(t: tf.Tensor, xs: tuple, batched: dict[str, bool], key: str) -> tf.Tensor:
    """An output that does not depend on any input (``exp(1.0) - 1``) has no point axis:
    give it one, the same value at every point.  Decided while tracing, where the point axis
    is the only unknown dimension; the eager run repeats the decision."""
    if not tf.executing_eagerly():
        batched[key] = t.shape.rank is not None and t.shape.rank >= 1 and t.shape[0] is None
    if batched.get(key, True):
        return t
    n = tf.shape(xs[0])[:1] if xs else tf.constant([1])
    return tf.broadcast_to(t, tf.concat([n, tf.shape(t)], 0))


def user_rank(*trees: Any) -> int:
    """The rank each input gets: 2 ([1, K]), or more when an axis the code names needs it."""
    rank = 2
    for node in trace.walk(list(trees)):
        if node.get("k") != "call":
            continue
        names = trace.PARAM_NAMES.get(str(node.get("op")), ())
        given = dict(zip(names, node.get("args") or [], strict=False))
        given.update(node.get("kw") or {})
        axes = _literal_ints(given.get("axis"))
        front = max((a + 1 for a in axes if a >= 0), default=0)
        back = max((-a for a in axes if a < 0), default=0)
        rank = max(rank, front + back if front and back else front or back)  # (1, -1): 3
    return min(rank, 6)


def _literal_ints(tree: Any) -> list[int]:
    if not isinstance(tree, dict):
        return []
    if tree.get("k") == "const":
        return [int(trace.parse_float(tree["v"]))]
    if tree.get("k") == "neg":
        return [-i for i in _literal_ints(tree["x"])]
    if tree.get("k") == "tuple":
        return [i for t in tree["items"] for i in _literal_ints(t)]
    return []


def zero_if_none(g: tf.Tensor | None, like: tf.Tensor) -> tf.Tensor:
    return tf.zeros_like(like) if g is None else g


def per_row(x: tf.Tensor) -> tf.Tensor:
    """Sum every axis but the batch axis."""
    rank = x.shape.rank or 0
    return tf.reduce_sum(x, axis=list(range(1, rank))) if rank > 1 else x


def check_batched(*tensors: tf.Tensor) -> None:
    """Every output must keep the point axis; otherwise rows would mix.  Checked while
    tracing (the batch axis is unknown there); the eager run repeats the traced computation."""
    if tf.executing_eagerly():
        return
    for t in tensors:
        if t.shape.rank is None or t.shape.rank < 1 or t.shape[0] is not None:
            raise UnsupportedProbe(f"a dynamic shape it could not bind (output shape {t.shape})")


def climb_objective(path: str) -> tf.Tensor | None:
    """Per-row distance of the target's unsafe ops' inputs to their danger zone (GRIST)."""
    if tf.executing_eagerly():
        return None  # the objective reads graph ops: only the traced function has them
    graph = tf.compat.v1.get_default_graph()
    terms = []
    for op in trace.unsafe_ops(graph, path, "target/"):
        u = _danger_distance(op)
        # an unsafe op on constants (exp(1.0)) has no point axis and nothing to climb
        if u is not None and u.shape.rank and u.shape[0] is None:
            terms.append(per_row(tf.cast(u, tf.float32)))
    if not terms:
        return None
    return tf.add_n(terms)


def _danger_distance(op: tf.Operation) -> tf.Tensor | None:
    t = op.type
    if t in ("Log", "Sqrt", "Rsqrt", "Reciprocal", "Inv"):
        return tf.abs(op.inputs[0])
    if t == "Log1p":
        return tf.abs(op.inputs[0] + 1)
    if t in ("RealDiv", "Div", "Xlogy", "Pow"):
        return tf.abs(op.inputs[1] if t != "Pow" else op.inputs[0])
    if t in ("Exp", "Expm1"):
        return -op.inputs[0]
    if t in ("Acos", "Asin", "Atanh"):
        return 1 - tf.abs(op.inputs[0])
    return None


def to_batch(program: Program, rows: np.ndarray) -> list[tf.Tensor]:
    """Turn point rows into the function's [N, 1, K] input tensors."""
    tensors = []
    n = rows.shape[0]
    for j, spec in enumerate(program.inputs):
        col = rows[:, j]
        arr = np.zeros((n, program.k), dtype=np.float64)
        arr[:, 0] = col
        if program.k > 1 and not spec.prob and not spec.scale:
            arr[:, 1:] = 0.0  # softmax-family probes: [v, 0] against a reference logit
        elif program.k > 1:  # a probability, or a divisor: the same value in every entry
            arr[:, 1:] = col[:, None]
        arr = arr.reshape((n, *[1] * (program.rank - 1), program.k))
        tensors.append(tf.constant(arr.astype(iv.np_dtype(program.dtype))))
    return tensors


class OverBudget(BaseException):
    """The probe has used its time budget: raised between evaluations, so the worker answers
    as the parent would on a timeout and lives on (no kill, no new TensorFlow import).  A
    BaseException, so that no handler of the search takes it for a failed evaluation."""


DEADLINE = [math.inf]  # time.monotonic() after which run() stops the probe (set by the worker)


def run(program: Program, rows: np.ndarray, traced: bool = False) -> dict[str, np.ndarray]:
    """One call over every row (eager, or the traced function with the climb objective);
    results as float64 numpy arrays."""
    if time.monotonic() > DEADLINE[0]:
        raise OverBudget
    fn = program.traced() if traced else program.fn
    out = fn(*to_batch(program, rows))
    return {k: np.asarray(tf.cast(v, tf.float64)) for k, v in out.items()}
