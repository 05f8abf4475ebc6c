"""The training rung as a script: the program's own slice, trained (static side, no TF import).

The training rung and its reproducer are one text.  :func:`render` writes the objective the
program optimizes (``slicing.program.ProgramSpec``) as plain TensorFlow and NumPy: its weights
with their initializers, its data (the program's NumPy recipe replayed on our own generator, a
uniform draw inside the fed range, or its probability producer's output: ``produced.py``), its
optimizer, and a loop that trains the slice and stops at the first step where the loss, the
flagged term, the term's gradient, a weight gradient or a weight is not finite.  The worker
runs this text (``training_rung.py``) and ``--emit-repro`` writes the same text, so a
reproducer replays exactly the run that confirmed the finding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..optimizers import OPTIMIZERS
from . import kinds, produced
from .batch_spread import reads_batch_spread
from .repro_code import Renderer, identifier, number
from .repro_train import TRAIN, fills_masked

# on the program's data: a sigmoid output of an Adam(0.01) autoencoder with 16 hidden units
# rounds to 1.0 after 220 to 430 steps (measured by running it), past a budget of 300
STEPS = 1000
STEERED_STEPS = 1000  # on one of its examples, repeated: saturating takes longer
WORK = 1.5e10  # multiply-adds of one run at most (weights x rows x steps): a large slice runs fewer steps
DEFAULT_BATCH = 32
RANGE_ROWS = 8  # a fed range becomes a fixed dataset of this many batches


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


def apart_picks(spec: dict[str, Any], names: dict[str, str]) -> dict[str, int]:
    """The feeds whose rows the program picks with an index of their own (``data[j]`` beside
    ``data[i]``), each numbered by its index: the run draws their rows apart from the rest,
    since picking every feed's rows together would make a triplet's negative its anchor."""
    keys: list[str] = []
    out: dict[str, int] = {}
    for name, d in spec["data"].items():
        key = (d.get("feeds") or [{}])[0].get("pick")
        if key is None:
            continue
        keys += [key] if key not in keys else []
        if key != keys[0]:
            out[names[name]] = keys.index(key)
    return out


def optimizer_source(opt: dict[str, Any], lr: str) -> str:
    family = opt["optimizer"]
    row = OPTIMIZERS[family]
    if opt.get("tf1") and row.tf1:
        if family == "sgd" and opt.get("momentum"):
            return f"tf.compat.v1.train.MomentumOptimizer({lr}, {number(opt['momentum'])})"
        return f"tf.compat.v1.train.{row.tf1}(learning_rate={lr})"
    schedule = opt.get("schedule")
    if schedule:  # the program's decaying schedule, from a scaled initial rate
        given = ", ".join(f"{k}={v!r}" for k, v in schedule["args"].items())
        lr = f"tf.keras.optimizers.schedules.{schedule['kind']}({lr}, {given})"
    kw = [f"learning_rate={lr}"]
    if opt.get("momentum"):
        kw.append(f"momentum={number(opt['momentum'])}")
    if opt.get("clipnorm") is not None:
        kw.append(f"clipnorm={number(opt['clipnorm'])}")
    return f"tf.keras.optimizers.{row.keras}({', '.join(kw)})"


def initial_value(w: dict[str, Any], fan_in: str | None = None) -> str:
    """A weight's starting value, as the program's initializer makes it."""
    shape = [str(fan_in) if d is None else str(d) for d in w.get("shape") or []]
    dims = "[" + ", ".join(shape) + "]"
    kind = w.get("init")
    if kind == "zeros":
        return f"tf.zeros({dims}, DTYPE)"
    if kind == "ones":
        return f"tf.ones({dims}, DTYPE)"
    if kind == "constant" and w.get("recipe") is not None:  # a value of the program's data
        recipe = json.dumps({"value": w["recipe"]})
        value = f"float(np.mean(evaluate(json.loads({recipe!r}), 0)['value']))"
        return f"tf.fill({dims}, tf.cast({value}, DTYPE))"
    if kind == "constant":
        return f"tf.fill({dims}, tf.cast({number(w.get('value', 0.0))}, DTYPE))"
    if kind == "drawn":  # the program's NumPy code, replayed: each start of the weights its own
        recipe = json.dumps({"value": w["recipe"]})
        return f"tf.constant(evaluate(json.loads({recipe!r}), next(SEEDS))['value'], DTYPE)"
    if kind == "literal":
        return f"tf.constant({[float(v) for v in w['value']]!r}, DTYPE)"
    if kind in ("normal", "truncated_normal"):  # stateless: every run starts from the same weights
        fn = (
            "tf.random.stateless_truncated_normal"
            if kind == "truncated_normal"
            else "tf.random.stateless_normal"
        )
        mean, std = number(w.get("mean", 0.0)), number(w.get("stddev", 1.0))
        return f"{fn}({dims}, [0, next(SEEDS)], {mean}, {std}, DTYPE)"
    if kind == "uniform":
        lo, hi = number(w.get("minval", 0.0)), number(w.get("maxval", 1.0))
        return f"tf.random.stateless_uniform({dims}, [0, next(SEEDS)], {lo}, {hi}, DTYPE)"
    initializers = {
        "glorot_normal": "GlorotNormal",
        "he_normal": "HeNormal",
        "he_uniform": "HeUniform",
        "orthogonal": "Orthogonal",  # a recurrent kernel's
        "lecun_normal": "LecunNormal",
        "lecun_uniform": "LecunUniform",
    }
    cls = initializers.get(str(kind), "GlorotUniform")  # Keras's and get_variable's default
    return f"tf.keras.initializers.{cls}(seed=next(SEEDS))({dims}, DTYPE)"


def data_source(spec: dict[str, Any], names: dict[str, str], batch: int | None) -> str:
    """``data()``: every fed array at full length, drawn once (x and y share their rows)."""
    recipes, lines = {}, []
    labels = drawn_labels(spec)
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
        got = produced.producer(spec, name)
        wide = (produced.width(got) if got else None) or widths.get(name, 1)
        width = (d.get("shape") or [None, wide])[1:] or []
        dims = ", ".join(str(x if x is not None else 1) for x in width)
        rows = "rows"  # data(): as many as the replayed feeds it is paired with, row by row
        if got is not None:  # its producer's output: softmax rows, sigmoid values
            lines += produced.draw_lines(ident, got, rows, dims)
            continue
        label = labels.get(name)
        if label == kinds.INDICES:  # a one-hot's indices: whole numbers below its depth
            depth = kinds.one_hot_depths(spec.get("loss"))[name]
            steps = [d for d in (d.get("shape") or [])[1:] if isinstance(d, int)]  # ids per row
            size = ", ".join(str(n) for n in [rows, *steps])
            lines.append(
                f"    out[{ident!r}] = RNG.integers(0, {depth}, size=({size},)).astype(np.float32)"
            )
            continue
        if label == kinds.CLASSES:  # one class per row, as labelled data gives
            lines.append(
                f"    out[{ident!r}] = np.eye({width[0]}, dtype=np.float32)"
                f"[RNG.integers(0, {width[0]}, size={rows})]"
            )
            continue
        if label == kinds.BINARY:
            lines.append(
                f"    out[{ident!r}] = RNG.integers(0, 2, size=({rows}, {dims})).astype(np.float32)"
            )
            continue
        lines.append(
            f"    out[{ident!r}] = RNG.uniform({number(lo)}, {number(hi)}, size=({rows}, {dims}))"
            ".astype(np.float32)"
        )
    ranges = {names[n]: [float(lo), float(hi)] for n, (lo, hi) in ranged(spec).items()}
    body = [f"RANGES = {ranges!r}", "", "", "def data():", "    out = {}"]
    drawn = RANGE_ROWS * (batch or DEFAULT_BATCH)
    if recipes:
        body.append(f"    out.update(evaluate(json.loads({json.dumps(recipes)!r}), 0))")
    if recipes and batch is not None and lines:
        # a feed drawn beside replayed ones stands in for an array the program batches with
        # them row by row: as long (all 4097 rows, the last batch of an epoch shorter)
        body.append(
            f"    rows = min((len(a) for a in out.values() if np.ndim(a)), default={drawn})"
        )
    elif lines:
        body.append(f"    rows = {drawn}")
    body += [*lines, "    return out"]
    return "\n".join(body)


def drawn_labels(spec: dict[str, Any]) -> dict[str, str]:
    """The feeds with no data code and no fed range that the loss reads as labels: drawn as
    labels of their kind (``kinds.label_kinds``), never as uniform draws in [-1, 1], which
    no labelled data holds (a target of -1 rewards a log-probability of -inf).  A class
    distribution needs its class count: the feed's declared width."""
    out = {}
    for name, kind in kinds.label_kinds(spec.get("loss")).items():
        d = spec["data"].get(name)
        if d is None:
            continue
        feed = (d.get("feeds") or [{}])[0]
        if feed.get("data") is not None or feed.get("range") is not None:
            continue
        if produced.producer(spec, name) is not None:  # drawn as its producer's output
            continue
        width = (d.get("shape") or [None])[1:]
        if kind == kinds.CLASSES and not (len(width) == 1 and isinstance(width[0], int)):
            continue
        out[name] = kind
    return out


def ranged(spec: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The feeds drawn from a range (no data recipe, no label kind, no probability producer):
    their range, or [-1, 1] when unknown."""
    out = {}
    labels = drawn_labels(spec)
    for name, d in spec["data"].items():
        feed = (d.get("feeds") or [{}])[0]
        if feed.get("data") is None and name not in labels and not produced.producer(spec, name):
            lo, hi = feed.get("range") or [-1.0, 1.0]
            out[name] = (float(lo), float(hi))
    return out


MAX_WATCHED = 80  # operations of the objective whose values and gradients a run watches


def node_key(tree: Any) -> str:
    """Two copies of one computation (a name the slicer expanded twice) are one node."""
    return json.dumps(tree, sort_keys=True)


def _children(tree: dict) -> list[tuple[str, Any]]:
    if tree.get("k") == "call":
        return [(str(i), a) for i, a in enumerate(tree.get("args") or [])] + [
            (f"kw:{k}", v) for k, v in (tree.get("kw") or {}).items()
        ]
    if tree.get("k") == "bin" or tree.get("k") == "cmp":
        return [("l", tree.get("l")), ("r", tree.get("r"))]
    if tree.get("k") in ("neg", "src"):
        return [("x", tree.get("x"))]
    return []


def _rebuilt(tree: dict, swapped: dict[str, Any]) -> dict:
    out = dict(tree)
    for key, _child in _children(tree):
        if key.startswith("kw:"):
            out["kw"] = {**out.get("kw", {}), key[3:]: swapped[key]}
        elif key in ("l", "r", "x"):
            out[key] = swapped[key]
        else:
            out["args"] = list(out.get("args") or [])
            out["args"][int(key)] = swapped[key]
    return out


class Steps:
    """The objective as straight-line code: one line per operation (``t3 = tf.math.log(t2)``),
    so that the run can watch each operation's value and the gradient that reaches it, and
    tell the operation where a NaN starts from the ones it only flows through."""

    def __init__(self, r: Renderer, taken: set[str]) -> None:
        self.r, self.taken = r, taken
        self.lines: list[str] = []
        self.index: dict[str, int] = {}  # node key -> watched index
        self.children: list[list[int]] = []  # watched index -> watched children
        self.where: list[list[int]] = []  # watched index -> [line, col] of its code
        self.files: list[str] = []  # ... and its module, when the objective imports it
        self.spread: list[int] = []  # watched indices that read the batch's spread
        self.fills: list[int] = []  # watched indices that fill masked entries with -inf
        self.kinds: list[str] = []  # watched index -> its tree's kind ("call", "bin", "neg")

    def node(self, tree: Any) -> Any:
        """The tree with its operations computed on lines of their own (a reference each)."""
        if not isinstance(tree, dict) or tree.get("k") not in ("call", "bin", "neg"):
            return tree
        key = node_key(tree)
        if key in self.index:
            return self._ref(self.index[key])
        swapped = {k: self.node(c) for k, c in _children(tree)}
        rebuilt = _rebuilt(tree, swapped)
        if len(self.lines) >= MAX_WATCHED:
            return rebuilt
        i = len(self.lines)
        ident = identifier(f"t{i}", self.taken)
        self.r.names[f"__t{i}"] = ident
        self.lines.append(f"    {ident} = {self.r.expr(rebuilt)}")
        self.index[key] = i
        self.children.append(
            sorted(
                {
                    int(v["name"][3:])
                    for v in swapped.values()
                    if isinstance(v, dict) and str(v.get("name", "")).startswith("__t")
                }
            )
        )
        self.where.append([int(tree.get("line") or 0), int(tree.get("col") or 0)])
        self.files.append(str(tree.get("file") or ""))
        self.kinds.append(str(tree.get("k")))
        if reads_batch_spread(tree):
            self.spread.append(i)
        if fills_masked(tree):
            self.fills.append(i)
        return self._ref(i)

    def _ref(self, i: int) -> dict:
        return {"k": "input", "name": f"__t{i}"}


@dataclass
class Rendered:
    body: str  # the run: data, weights, forward, optimizer, train (one per objective)
    term: int  # the watched operation the finding flags (-1: the whole run)
    where: list[list[int]]
    children: list[list[int]]
    span: list[int]
    term_kind: str = "call"
    files: list[str] = field(default_factory=list)  # watched index -> its code's module
    file: str = ""  # the flagged code's module ("": the objective's own)
    kinds: list[str] = field(default_factory=list)  # watched index -> its tree's kind

    def flagged(self) -> set[int]:
        """The operations a break at counts for the finding.  A flagged call (``log(...)``,
        ``sqrt(...)``) is itself the hazard: only a break that starts at it counts, not one
        that starts inside its argument.  A flagged arithmetic (``y * log(p)``, ``a / b``)
        counts with what it computes within the code it underlines (not the model upstream).
        The code may run more than once in a step (a layer class stacked twice, a helper
        called twice): each time it runs is the flagged code."""
        if self.term < 0:
            return set()
        place = (self.where[self.term], self._file(self.term), self._kind(self.term))
        terms = [
            i
            for i in range(len(self.where))
            if i == self.term
            or (self.where[i] != [0, 0] and (self.where[i], self._file(i), self._kind(i)) == place)
        ]
        if self.term_kind == "call":
            return set(terms)
        seen, todo = set(), list(terms)
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo.extend(self.children[i])
        if len(self.span) != 4:
            return {self.term}
        l1, c1, l2, c2 = self.span
        return {
            i
            for i in seen
            if i in terms
            or (self._file(i) == self.file and (l1, c1) <= tuple(self.where[i]) <= (l2, c2))
        }

    def _file(self, i: int) -> str:
        return self.files[i] if i < len(self.files) else ""

    def _kind(self, i: int) -> str:
        return self.kinds[i] if i < len(self.kinds) else ""

    def script(self, steer: bool | str, draw: int = 0) -> str:
        """The body with its ``__main__``: the reproducer (after ``repro_code.header``)."""
        main = (
            MAIN.replace("TERM_INDEX", repr(sorted(self.flagged())))
            .replace("STEER_FLAG", repr(steer))
            .replace("DRAW_INDEX", repr(int(draw)))
        )
        return self.body + "\n\n" + main.strip("\n") + "\n"


def _const(tree: Any) -> float | None:
    if isinstance(tree, dict) and tree.get("k") == "const":
        try:
            return float(tree["v"])
        except (TypeError, ValueError):
            return None
    return None


def compiled_form(tree: Any, dtype: str) -> Any:
    """The tree as TensorFlow's graph optimizer compiles it: its arithmetic optimizer adds
    the constants of ``(c1 - x) + c2`` and ``(x + c1) + c2`` first, in the graph's dtype, so
    ``1 - p + 1e-10`` is ``1 - p`` in float32 (``compiled.py``).  The run watches every
    operation's value, which would keep grappler from regrouping them (a watched value has a
    second consumer), so the regrouping is made here, in the tree, as the program compiles."""
    if isinstance(tree, list):
        return [compiled_form(t, dtype) for t in tree]
    if not isinstance(tree, dict):
        return tree
    out = {k: compiled_form(v, dtype) for k, v in tree.items()}
    if out.get("k") != "bin" or out.get("op") != "+":
        return out
    left, right = out.get("l"), out.get("r")
    c2, inner = (_const(right), left) if _const(right) is not None else (_const(left), right)
    if c2 is None or not isinstance(inner, dict) or inner.get("k") != "bin":
        return out
    cast = getattr(np, dtype if dtype in ("float16", "float32", "float64") else "float32")
    if inner.get("op") == "-" and _const(inner.get("l")) is not None:  # (c1 - x) + c2
        total = float(cast(_const(inner["l"])) + cast(c2))
        return {**out, "op": "-", "l": {"k": "const", "v": total}, "r": inner["r"]}
    if inner.get("op") == "+" and _const(inner.get("r")) is not None:  # (x + c1) + c2
        total = float(cast(_const(inner["r"])) + cast(c2))
        return {**out, "l": inner["l"], "r": {"k": "const", "v": total}}
    return out


def render(spec: dict[str, Any], evaluator_source: str = "") -> Rendered:
    """The objective's run, and which of its operations the finding flags."""
    taken: set[str] = set()
    weights: dict[str, dict] = spec["weights"]
    data: dict[str, dict] = spec["data"]
    names = {n: identifier(n, taken) for n in [*data, *weights]}
    r = Renderer(names)
    steps = Steps(r, taken)
    dtype = str(spec.get("dtype") or "float32")
    loss = r.expr(steps.node(compiled_form(spec["loss"], dtype)))
    n_loss = len(steps.lines)
    term_ref = steps.node(
        compiled_form(spec["term"], dtype)
    )  # a term outside the objective: watched after it
    ref = str(term_ref.get("name", "")) if isinstance(term_ref, dict) else ""
    term = int(ref[3:]) if ref.startswith("__t") and not spec.get("whole") else -1
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
    trained = spec.get("trained")
    trained_ids = None if trained is None else [names[n] for n in trained if n in names]
    lr = number(spec["optimizer"].get("learning_rate") or 0.001)
    watched = ", ".join(steps.r.names[f"__t{i}"] for i in range(len(steps.lines)))
    parts = [
        "import itertools\nimport json\nimport sys\n\nimport numpy as np\nimport tensorflow as tf",
        "\n".join(
            [
                f"DTYPE = tf.{spec.get('dtype') or 'float32'}",
                "dtype = DTYPE",
                f"STEPS = {STEPS}",
                f"STEERED_STEPS = {STEERED_STEPS}",
                f"WORK = {WORK:g}",
                f"BATCH = {batch_expr}",
                f"EPOCHS = {spec.get('style') == 'fit'}  # Keras fit's order: shuffled passes",
                f"APART = {apart_picks(spec, names)!r}  # feeds whose rows a draw of their own picks",
                f"LEARNING_RATE = {lr}",
                f"TRAINED = {trained_ids!r}  # the weights its optimizer updates (None: all)",
                "RNG = np.random.default_rng(0)",
                "SEEDS = itertools.count(1)",
                "MASKS = tf.random.Generator.from_seed(0)  # dropout's, when the slice has one",
                "# each watched operation: where the program computes it, what it reads",
                f"WHERE = {steps.where!r}",
                f"FILES = {steps.files!r}  # an imported module's code: its path (else this one's)",
                f"CHILDREN = {steps.children!r}",
                f"IN_OBJECTIVE = {n_loss}  # operations 0..{n_loss - 1} make the loss",
                f"SPREAD = {steps.spread!r}  # operations that read the batch's spread",
                f"FILLS = {steps.fills!r}  # operations that fill a mask's entries with -inf",
            ]
        ),
        evaluator_source,
        r.helper_source(),
        data_source(spec, names, batch),
        "def weights(arrays):\n    return {\n" + "\n".join(weight_lines) + "\n    }",
        f"def forward({args}):\n" + "\n".join(steps.lines) + f"\n    return {loss}, [{watched}]",
        f"def optimizer(lr):\n    return {optimizer_source(spec['optimizer'], 'lr')}",
        TRAIN,
    ]
    body = "\n\n\n".join(p.strip("\n") for p in parts if p) + "\n"
    kind = str(spec["term"].get("k")) if isinstance(spec.get("term"), dict) else "call"
    span = list(spec.get("span") or [])
    file = str(spec.get("file") or "")
    return Rendered(
        body, term, steps.where, steps.children, span, kind, steps.files, file, steps.kinds
    )


MAIN = """
FLAGGED = TERM_INDEX  # the flagged operations (none: the whole run, as for a learning rate)

if __name__ == "__main__":
    got = train(steer=STEER_FLAG, draw=DRAW_INDEX)
    if got["step"] is None:
        print(f"finite for {got['steps']} steps (loss {got['first_loss']:.6g} -> {got['loss']:.6g})")
        sys.exit(0)
    starts = ", ".join(f"a {how} at {FILES[i] + ':' if FILES[i] else 'line '}{WHERE[i][0]}"
                       if WHERE[i][0] else f"a {how} of the loss's operation {i}"
                       for i, how in got["origins"].items())  # fmt: skip
    print(f"step {got['step']}: non-finite (nan/inf), starting at {starts or 'an update'} "
          f"(loss {got['loss']})")
    whole = not got["loss_finite"] or not got["weights_finite"]
    hit = any(i in got["origins"] for i in FLAGGED) if FLAGGED else whole
    sys.exit(1 if hit else 0)
"""
