"""The training rung as a script: the program's own slice, trained (static side, no TF import).

The training rung and its reproducer are one text.  :func:`render` writes the objective the
program optimizes (``program_slice.ProgramSpec``) as plain TensorFlow and NumPy: its weights
with their initializers, its data (the program's NumPy recipe replayed on our own generator, or
a uniform draw inside the fed range), its optimizer, and a loop that trains the slice and stops
at the first step where the loss, the flagged term, the term's gradient, a weight gradient or a
weight is not finite.  The worker runs this text (``training_rung.py``) and ``--emit-repro``
writes the same text, so a reproducer replays exactly the run that confirmed the finding.
"""

from __future__ import annotations

import json
from typing import Any

from ..optimizers import OPTIMIZERS
from .repro_code import Renderer, identifier, number

STEPS = 300
DEFAULT_BATCH = 32
RANGE_ROWS = 8  # a fed range becomes a fixed dataset of this many batches
TERM = "__term__"


def swap_term(loss: Any, term: Any) -> tuple[Any, bool]:
    """The loss with every copy of the term replaced by an input that holds the term's tensor."""
    found = False

    def swap(tree: Any) -> Any:
        nonlocal found
        if tree == term:
            found = True
            return {"k": "input", "name": TERM}
        if isinstance(tree, dict):
            return {k: swap(v) for k, v in tree.items()}
        if isinstance(tree, list):
            return [swap(v) for v in tree]
        return tree

    return swap(loss), found


def batch_size(spec: dict[str, Any]) -> tuple[int | None, bool]:
    """The rows per step, and whether the code gives it (``None``: every row, as fed)."""
    sizes = {f.get("batch") for d in spec["data"].values() for f in d.get("feeds") or []}
    rows = {f.get("rows") for d in spec["data"].values() for f in d.get("feeds") or []}
    known = {s for s in sizes if isinstance(s, int)}
    if known:
        return min(known), True
    if rows == {"all"}:
        return None, True
    return DEFAULT_BATCH, False


def optimizer_source(opt: dict[str, Any], lr: str) -> str:
    family = opt["optimizer"]
    row = OPTIMIZERS[family]
    if opt.get("tf1") and row.tf1:
        if family == "sgd" and opt.get("momentum"):
            return f"tf.compat.v1.train.MomentumOptimizer({lr}, {number(opt['momentum'])})"
        return f"tf.compat.v1.train.{row.tf1}(learning_rate={lr})"
    kw = [f"learning_rate={lr}"]
    if opt.get("momentum"):
        kw.append(f"momentum={number(opt['momentum'])}")
    if opt.get("clipnorm") is not None:
        kw.append(f"clipnorm={number(opt['clipnorm'])}")
    return f"tf.keras.optimizers.{row.keras}({', '.join(kw)})"


def initial_value(w: dict[str, Any], fan_in: str | None = None) -> str:
    """A weight's starting value, as the program's initializer makes it."""
    shape = [fan_in if d is None else str(d) for d in w.get("shape") or []]
    dims = "[" + ", ".join(shape) + "]"
    kind = w.get("init")
    if kind == "zeros":
        return f"tf.zeros({dims}, DTYPE)"
    if kind == "ones":
        return f"tf.ones({dims}, DTYPE)"
    if kind == "constant":
        return f"tf.fill({dims}, tf.cast({number(w.get('value', 0.0))}, DTYPE))"
    if kind == "literal":
        return f"tf.constant({[float(v) for v in w['value']]!r}, DTYPE)"
    if kind in ("normal", "truncated_normal"):
        fn = "tf.random.truncated_normal" if kind == "truncated_normal" else "tf.random.normal"
        mean, std = number(w.get("mean", 0.0)), number(w.get("stddev", 1.0))
        return f"{fn}({dims}, {mean}, {std}, DTYPE, seed=next(SEEDS))"
    if kind == "uniform":
        lo, hi = number(w.get("minval", 0.0)), number(w.get("maxval", 1.0))
        return f"tf.random.uniform({dims}, {lo}, {hi}, DTYPE, seed=next(SEEDS))"
    initializers = {"glorot_normal": "GlorotNormal", "he_normal": "HeNormal", "he_uniform": "HeUniform"}
    cls = initializers.get(str(kind), "GlorotUniform")  # Keras's and get_variable's default
    return f"tf.keras.initializers.{cls}(seed=next(SEEDS))({dims}, DTYPE)"


def data_source(spec: dict[str, Any], names: dict[str, str], batch: int | None) -> str:
    """``data()``: every fed array at full length, drawn once (x and y share their rows)."""
    recipes, lines = {}, []
    widths = {  # a feed of unknown shape that a model reads is as wide as its first kernel
        w["fan_in_from"]: w["shape"][0]
        for w in spec["weights"].values()
        if w.get("fan_in_from") and w.get("shape") and w["shape"][0] is not None
    }
    for name, d in spec["data"].items():
        feed = (d.get("feeds") or [{}])[0]
        ident = names[name]
        if feed.get("data") is not None:
            recipes[ident] = feed["data"]
            continue
        lo, hi = feed.get("range") or [-1.0, 1.0]
        width = (d.get("shape") or [None, widths.get(name, 1)])[1:] or []
        dims = ", ".join(str(x if x is not None else 1) for x in width)
        rows = RANGE_ROWS * (batch or DEFAULT_BATCH)
        lines.append(
            f"    out[{ident!r}] = RNG.uniform({number(lo)}, {number(hi)}, size=({rows}, {dims}))"
            ".astype(np.float32)"
        )
    ranges = {names[n]: [float(lo), float(hi)] for n, (lo, hi) in ranged(spec).items()}
    body = [f"RANGES = {ranges!r}", "", "", "def data():", "    out = {}"]
    if recipes:
        body.append(f"    out.update(evaluate({json.dumps(recipes)!r}))")
    body += lines + ["    return out"]
    return "\n".join(body)


def ranged(spec: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The feeds drawn from a range (no data recipe): their range, or [-1, 1] when unknown."""
    out = {}
    for name, d in spec["data"].items():
        feed = (d.get("feeds") or [{}])[0]
        if feed.get("data") is None:
            lo, hi = feed.get("range") or [-1.0, 1.0]
            out[name] = (float(lo), float(hi))
    return out


def render(spec: dict[str, Any], evaluator_source: str = "") -> str:
    """The script body: everything but the header (``header`` needs the finding)."""
    taken: set[str] = set()
    weights: dict[str, dict] = spec["weights"]
    data: dict[str, dict] = spec["data"]
    names = {n: identifier(n, taken) for n in [*data, *weights]}
    names[TERM] = identifier("term", taken)
    r = Renderer(names)
    loss_tree, _in_objective = swap_term(spec["loss"], spec["term"])  # else only watched
    term = r.expr(spec["term"])
    loss = r.expr(loss_tree)
    batch, _known = batch_size(spec)
    args = ", ".join(names[n] for n in [*data, *weights])
    weight_lines = []
    for n, w in weights.items():
        fan_in = None
        if w.get("shape") and w["shape"][0] is None and w.get("fan_in_from") in names:
            source = names[w["fan_in_from"]]  # a model's first kernel: the width of its input
            fan_in = f"arrays[{source!r}].shape[-1]"
        weight_lines.append(f"        {names[n]!r}: tf.Variable({initial_value(w, fan_in)}),")
    batch_expr = "None" if batch is None else str(batch)
    lr = number(spec["optimizer"].get("learning_rate") or 0.001)
    parts = [
        "import itertools\nimport json\nimport sys\n\nimport numpy as np\nimport tensorflow as tf",
        f"DTYPE = tf.{spec.get('dtype') or 'float32'}\ndtype = DTYPE\nSTEPS = {STEPS}\nBATCH = {batch_expr}"
        f"\nLEARNING_RATE = {lr}\nSTEER = {bool(spec.get('steer'))}\nRNG = np.random.default_rng(0)\nSEEDS = itertools.count(1)",
        evaluator_source,
        r.helper_source(),
        data_source(spec, names, batch),
        "def weights(arrays):\n    return {\n" + "\n".join(weight_lines) + "\n    }",
        f"def term({args}):\n    return {term}",
        f"def objective({names[TERM]}, {args}):\n    return {loss}",
        f"def optimizer(lr):\n    return {optimizer_source(spec['optimizer'], 'lr')}",
        TRAIN,
        MAIN,
    ]
    return "\n\n\n".join(p.strip("\n") for p in parts if p) + "\n"


TRAIN = '''
def finite(*tensors):
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors if t is not None])


def steered(arrays):
    """Every row one example: the first of the program's own rows, or, for a feed drawn from
    its range, a corner of that range.  Training on one example drives the outputs to its
    targets, as far as the optimizer can take them."""
    out = {}
    for k, a in arrays.items():
        if k in RANGES:
            lo, hi = RANGES[k]
            row = np.where(RNG.random(a.shape[1:]) < 0.5, lo, hi)
        else:
            row = a[0]
        out[k] = np.ascontiguousarray(np.broadcast_to(row, a.shape), np.float32)
    return out


def train(lr=LEARNING_RATE, steps=STEPS, steer=False):
    """Train the slice; the first step where something is not finite, and what."""
    global RNG, SEEDS
    RNG, SEEDS = np.random.default_rng(0), itertools.count(1)
    arrays = {k: np.asarray(v, np.float32) for k, v in data().items()}
    if steer:
        arrays = steered(arrays)
    w = weights(arrays)
    names = list(w)
    opt = optimizer(lr)
    rows = min(len(a) for a in arrays.values())

    @tf.function(autograph=False)
    def step(batch):
        with tf.GradientTape() as tape:
            t = term(**batch, **w)
            loss = objective(t, **batch, **w)
        grads = tape.gradient(loss, [w[n] for n in names] + [t])
        opt.apply_gradients(zip(grads[:-1], [w[n] for n in names]))
        return (loss, finite(t), finite(grads[-1]), finite(*grads[:-1]),
                finite(*[w[n] for n in names]), tf.reduce_min(t), tf.reduce_max(t))

    first = None
    for i in range(steps):
        pick = RNG.integers(0, rows, BATCH) if BATCH else np.arange(rows)
        batch = {k: tf.constant(a[pick], DTYPE) for k, a in arrays.items()}
        loss, t_ok, dt_ok, g_ok, w_ok, lo, hi = (x.numpy() for x in step(batch))
        if first is None:
            first = float(loss)
        bad = [what for what, ok in (("the term's value", t_ok), ("its gradient", dt_ok),
                                     ("the loss", np.isfinite(loss)), ("a weight gradient", g_ok),
                                     ("a weight", w_ok)) if not ok]
        if bad:
            return {"step": i, "bad": bad, "loss": float(loss), "first_loss": first,
                    "term_range": [float(lo), float(hi)]}
    return {"step": None, "loss": float(loss), "first_loss": first,
            "term_range": [float(lo), float(hi)]}
'''

MAIN = '''
if __name__ == "__main__":
    got = train(steer=STEER)
    if got["step"] is None:
        print(f"finite for {STEPS} steps (loss {got['first_loss']:.6g} -> {got['loss']:.6g})")
        sys.exit(0)
    print(f"step {got['step']}: not finite: {', '.join(got['bad'])} (loss {got['loss']})")
    sys.exit(1)
'''
