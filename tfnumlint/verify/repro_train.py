"""The training rung's loop, as the text of its script (``repro_program.py`` writes the rest).

``train`` trains the rendered slice until something is not finite and says where that starts
(``origins``): an operation whose value is not finite though all it reads is, or where a
non-finite gradient starts.  A watched operation that fills masked entries with -inf
(``tf.where(mask, scores, -inf)``, listed in ``FILLS``) is finite for this: its -inf entries
are the code's own mask, and the break, if any, starts where they are read (a softmax of a
row the mask leaves empty is NaN there).
"""

from __future__ import annotations

import math
from typing import Any


def fills_masked(tree: Any) -> bool:
    """Is the tree a ``where`` that fills one branch with -inf (a mask on scores)?"""
    if not isinstance(tree, dict) or tree.get("k") != "call" or tree.get("op") != "where":
        return False
    return any(_minus_inf(a) for a in (tree.get("args") or [])[1:3])


def _minus_inf(tree: Any) -> bool:
    if not isinstance(tree, dict):
        return False
    if tree.get("k") == "neg":
        inner = tree.get("x")
        return isinstance(inner, dict) and inner.get("k") == "const" and _number(inner) == math.inf
    return tree.get("k") == "const" and _number(tree) == -math.inf


def _number(tree: dict) -> float | None:
    try:
        return float(tree.get("v"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


TRAIN = '''
def finite(*tensors, fill=False):
    """Every entry finite; with ``fill``, -inf too (a mask's -inf fill: FILLS)."""
    ok = [tf.math.is_finite(t) | tf.equal(t, -np.inf) if fill else tf.math.is_finite(t)
          for t in tensors if t is not None]
    return tf.reduce_all([tf.reduce_all(o) for o in ok])


def steered(arrays, steer=True):
    """Every row one example: the first of the program's own rows, or, for a feed drawn from
    its range, a corner of that range (each entry either end, or every entry at the low or
    the high end).  Training on one example drives the outputs to its targets, as far as the
    optimizer can take them; a feed held at one end of its range (an advantage at its lowest)
    pushes the same way at every step."""
    out = {}
    for k, a in arrays.items():
        if k in APART:  # rows of its own draw: not tied to the repeated example's
            out[k] = a
            continue
        if k in RANGES:
            lo, hi = RANGES[k]
            if steer in ("low", "high"):
                row = np.full(a.shape[1:], lo if steer == "low" else hi)
            else:
                row = np.where(RNG.random(a.shape[1:]) < 0.5, lo, hi)
        else:
            row = a[0]
        out[k] = np.ascontiguousarray(np.broadcast_to(row, a.shape), np.float32)
    return out


def origins(values_ok, grads_ok):
    """The operations where a non-finite value or gradient starts: its value is not finite
    though all it reads is ("value"); or the gradient reaching something it reads is not
    finite though the gradient reaching it is, and no other reader of that value passes a
    non-finite gradient back or holds a non-finite value ("gradient")."""
    parents = [[] for _ in CHILDREN]
    for i, kids in enumerate(CHILDREN):
        for k in kids:
            parents[k].append(i)
    found = {}
    for i, kids in enumerate(CHILDREN):
        if not values_ok[i] and all(values_ok[k] for k in kids):
            found[i] = "value"
        elif grads_ok[i] and values_ok[i]:
            for k in kids:
                others = [j for j in parents[k] if j != i]
                if not grads_ok[k] and all(grads_ok[j] and values_ok[j] for j in others):
                    found[i] = "gradient"
    return found


def batches(rows):
    """The rows of each step: under Keras ``fit``, each epoch is a shuffled pass over the data
    in slices of BATCH, the last one shorter (4097 rows in batches of 64 end each epoch with a
    batch of one); otherwise BATCH rows drawn at random, or every row."""
    while True:
        if EPOCHS and BATCH:
            shuffled = RNG.permutation(rows)
            for start in range(0, rows, BATCH):
                yield shuffled[start:start + BATCH]
        else:
            yield RNG.integers(0, rows, BATCH) if BATCH else np.arange(rows)


STEERED_ROWS = 128  # one example repeated: more copies of it add nothing to a mean


def rows_per_step(arrays, steer):
    rows = BATCH or min(len(a) for a in arrays.values())
    return min(rows, STEERED_ROWS) if steer else rows


def step_budget(arrays, w, steer):
    """The steps of one run: fixed by the slice's size, not by the machine's speed, so every
    run of the same program gives the same verdict.  A row's work is a multiply-add per weight,
    and a conv kernel's at every output position (``KERNEL_USES``, filled as the step is
    traced): a 5x5x32x64 kernel on 14x14 images is 196 times its size."""
    rows = rows_per_step(arrays, steer)
    reused = sum(size * (positions - 1) for size, positions in globals().get("KERNEL_USES", ()))
    size = (sum(int(np.prod(v.shape)) for v in w.values()) + reused) * rows
    return max(50, min(STEERED_STEPS if steer else STEPS, int(WORK / max(size, 1))))


def train(lr=LEARNING_RATE, steps=None, steer=False, seconds=None, draw=0):
    """Train the slice until something is not finite: that step, and where it starts.  The
    steps are ``step_budget``'s unless given; ``seconds`` is a safety net against a machine
    much slower than the budget assumes (the run then stops early: ``steps`` says where).
    ``draw`` picks another start of the weights from their initializers (the same data)."""
    import time

    deadline = None if seconds is None else time.perf_counter() + seconds
    global RNG, SEEDS
    RNG, SEEDS = np.random.default_rng(0), itertools.count(1 + 1000 * draw)
    MASKS.reset_from_seed(0)
    arrays = {k: np.asarray(v, np.float32) for k, v in data().items()}
    if steer:
        arrays = steered(arrays, steer)
    w = weights(arrays)
    names = [n for n in w if TRAINED is None or n in TRAINED]  # the rest stay as they start
    opt = optimizer(lr)
    rows = min(len(a) for a in arrays.values())
    budget = None  # step_budget's, once the first step is traced

    @tf.function(autograph=False)
    def step(batch):
        globals().get("KERNEL_USES", []).clear()  # each trace of the forward fills it anew
        with tf.GradientTape() as tape:
            loss, ts = forward(**batch, **w)
        grads = tape.gradient(loss, [w[n] for n in names] + ts[:IN_OBJECTIVE])
        grads = grads + [None] * (len(ts) - IN_OBJECTIVE)
        opt.apply_gradients(zip(grads[:len(names)], [w[n] for n in names]))
        return (loss, tf.stack([finite(t, fill=i in FILLS) for i, t in enumerate(ts)]),
                tf.stack([finite(g) for g in grads[len(names):]]),
                finite(*grads[:len(names)]), finite(*[w[n] for n in names]))

    losses = []  # each step's loss, up to the break: whether it blew up geometrically
    order = batches(rows)
    i = -1
    while budget is None or i + 1 < steps:
        i += 1
        if steer:  # every row is the same example: a batch of its copies (a summed loss
            pick = np.arange(rows_per_step(arrays, steer))  # steps no further than the program's)
        else:
            pick = next(order)
        picks = {g: RNG.integers(0, rows, len(pick)) for g in set(APART.values())}
        batch = {k: tf.constant(a[picks[APART[k]] if k in APART else pick], DTYPE)
                 for k, a in arrays.items()}
        loss, values_ok, grads_ok, g_ok, w_ok = (x.numpy() for x in step(batch))
        if budget is None:
            budget = step_budget(arrays, w, steer)
            steps = budget if steps is None else steps
        losses.append(float(loss))
        first = losses[0]
        if not (values_ok.all() and grads_ok.all() and g_ok and w_ok and np.isfinite(loss)):
            return {"step": i, "loss": float(loss), "first_loss": first,
                    "origins": origins(values_ok, grads_ok), "steps": i + 1, "budget": budget,
                    "loss_finite": bool(np.isfinite(loss)), "weights_finite": bool(w_ok),
                    "losses": losses}
        if deadline is not None and time.perf_counter() > deadline:
            break
    return {"step": None, "loss": float(loss), "first_loss": first, "origins": {},
            "steps": i + 1, "budget": budget, "loss_finite": True, "weights_finite": True,
            "losses": losses}
'''
