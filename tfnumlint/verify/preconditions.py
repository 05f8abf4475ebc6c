"""Preconditions a confirmed witness may still rest on (issue 11): a far tail, an empty selection.

(And one thing a witness cannot show: an identity matrix set to one value everywhere.)

A witness on a *driven* input (a logit, a layer input, a log-variance) is evidence at any value
the input really takes.  Two kinds of values it can take in principle but not in practice make a
symptom a precondition of the code rather than a hazard of training:

**Far tails of log-scale values.**  A logit, a log-probability, a log-variance, or the logit of a
modelled probability is a value on a log scale: its size is an exponent.  A witness at
``logits`` = -100 asks for a probability of e^-100.  The band :data:`BAND` = 30 comes from the
numerics: exp(30) ~ 1.1e13 is still finite in float32 (and bfloat16, float64), sigmoid(30)
already rounds to 1 in float32 and sigmoid(-30) ~ 9e-14 is still a normal number, so within
|x| <= 30 every float32 saturation a model can express already shows.  Past it lies a value
that nothing in the expression shows the program reaches, though training can: a
cross-entropy fitted to separable data moves its logits apart at a steady rate under Adam.
Whether it does is the training rung's question, so the reason states the band as the
condition, never as a fact about trained models.  float16's exp overflows at 11.1,
inside the band, so a float16 overflow still confirms.  The worker (``witness.clamp_far_tail``)
re-runs the symptom with each such input clamped into the band (sign kept): if the symptom
survives, the clamped point is the witness; if it vanishes, :func:`far_tail_reason` makes the
finding inconclusive.  Values not on a log scale (a reward sum, a pixel, a feature) have no
known scale, so no band is claimed for them; inputs nothing drives are the genericity gate's
(``generic.py``); a probability taken as it is (``output`` = 0) is at its domain's edge, not in
a tail.

**Empty selections.**  A whole reduction of a mask, an indicator, an adjacency or a count
(``reduce_sum(target_mask)``, ``count_nonzero(a)``) is 0 only when nothing is selected: no
target token, a graph without edges, no legal action.  When the witness needs such an input
(one the code reads only through whole reductions) with every entry 0,
:func:`empty_selection_reason` says so: a precondition on the batch, not a numeric hazard.  A
norm of a feature vector or of a target is no selection: a zero feature row stays confirmed.

Plain Python: no TensorFlow, no numpy (the verdict side runs in the static process too).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .. import ops
from ..analysis.domain_model import fmt_g
from . import domains

BAND = 30.0  # |x| of a log-scale value a model or data produces (see the module docstring)
CLAMPS = (17.0, BAND)  # clamped magnitudes tried, mildest first (a sigmoid saturates at 17)
# log(max finite value): past it exp overflows (shown in the far-tail reason)
EXP_RANGE = {"float16": 11.09, "bfloat16": 88.72, "float32": 88.72, "float64": 709.78}
# Drives this gate owns: values training or code produces (free inputs are the genericity
# gate's, fixed ones never move; a probe without drive labels keeps its verdict).
CLAMPED_DRIVES = frozenset({"driven", "computed"})

SQUASHING = ops.LOGIT_SQUASHING

# Whole reductions that are 0 exactly when nothing is selected, and the value-preserving ops a
# selection may pass through on its way there (`reduce_sum(cast(reshape(mask)))`).
SELECTING = ops.ZERO_WHEN_EMPTY | {"reduce_any"}  # + a name the registry does not hold
PRESERVING = ops.ENTRY_KEEPING | {"to_float"}  # + a name the registry does not hold
# A product under a selecting reduction is a masked sum: its factors are read through it.
MASKING_PRODUCTS = frozenset({("bin", "*"), ("call", "multiply")})
SELECTION_PRODUCERS = frozenset({"mask", "bool", "one_hot"})
DIVIDING = ops.DIVIDING | {"truediv", "div", "inv"}  # + names the registry does not hold


# ---------------------------------------------------------------- far tails


def log_scale(spec: dict[str, Any], modelled_probability: bool) -> bool:
    """Is the input's value an exponent: a logit by origin, one the target exponentiates
    (``exp(new_lp - old_lp)``: ``spec["exponent"]``, set by the static pass), a log-density a
    library method returns (``dist.log_prob(x)``), or the logit through which a predicted
    probability is probed (:func:`predicted`)?  Never by its name (issue 22)."""
    if spec.get("origin") == "logits" or spec.get("producer") == "logits":
        return True
    if modelled_probability:
        return predicted(spec)
    return bool(spec.get("exponent")) or domains.log_density_call(str(spec.get("source") or ""))


def predicted(spec: dict[str, Any]) -> bool:
    """A probability that squashes logits (a sigmoid or softmax, a model output): 0 or 1 only at
    a far logit.  A target of 0 is data at its domain's edge.  By producer, never by name."""
    return spec.get("producer") in SQUASHING or spec.get("origin") in ("model", "logits")


def tail_candidate(spec: dict[str, Any], modelled_probability: bool, v: float) -> bool:
    """An input whose witness value is past the band on a log scale, and that this gate owns."""
    return (
        abs(v) > BAND
        and math.isfinite(v)
        and spec.get("drive") in CLAMPED_DRIVES
        and log_scale(spec, modelled_probability)
    )


def clamped(v: float, magnitude: float) -> float:
    """``v`` brought to at most ``magnitude``, its sign kept."""
    return math.copysign(min(abs(v), magnitude), v)


def far_tail_reason(out: dict[str, Any]) -> str | None:
    """Why a witness is a far-tail precondition (``observed["far_tail"]``, set by the worker when
    the clamped point lost the symptom), or None."""
    observed = out.get("observed")
    tail = observed.get("far_tail") if isinstance(observed, dict) else None
    if not isinstance(tail, dict) or not tail.get("inputs"):
        return None
    dtype = str(out.get("dtype") or "float32")
    values = ", ".join(f"`{n}` = {fmt_g(float(v))}" for n, v in tail["inputs"].items())
    names = ", ".join(f"|`{n}`|" for n in tail["inputs"])
    biggest = max(abs(float(v)) for v in tail["inputs"].values())
    past = EXP_RANGE.get(dtype, EXP_RANGE["float32"])
    where = f"past the {dtype} exp range" if biggest > past else "far in the tail of a log scale"
    band = fmt_g(float(tail.get("band", BAND)))
    return (
        f"needs {values}, {where}; at {names} <= {band} the symptom is gone (exp({band}) is "
        f"finite in {dtype}), so it shows only where training or data take "
        f"{'it' if len(tail['inputs']) == 1 else 'them'} past {band}"
    )


# ---------------------------------------------------------------- empty selections


def _children(node: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for key, value in node.items():
        if key == "kw" and isinstance(value, dict):
            out.extend(value.values())
        elif isinstance(value, (dict, list)):
            out.append(value)
    return out


def _reads(node: Any, via: str | None, found: dict[str, list[str | None]]) -> None:
    """Every read of each input, with the selecting reduction it reaches through
    value-preserving ops and products only (None for any other read)."""
    if isinstance(node, list):
        for item in node:
            _reads(item, None, found)
        return
    if not isinstance(node, dict):
        return
    if node.get("k") == "input":
        found.setdefault(str(node.get("name")), []).append(via)
        return
    if via and (node.get("k"), node.get("op")) in MASKING_PRODUCTS:
        for child in _children(node):  # `reduce_sum(values * mask)`: a masked sum
            _reads(child, via, found)
        return
    op = node.get("op") if node.get("k") == "call" else None
    args = node.get("args") or []
    if op in SELECTING or (op in PRESERVING and via):
        _reads(args[0] if args else None, op if op in SELECTING else via, found)
        rest = {**node, "args": args[1:]}
        for child in _children(rest):
            _reads(child, None, found)
        return
    for child in _children(node):
        _reads(child, None, found)


def _selection_like(spec: dict[str, Any]) -> bool:
    """A mask, indicator, adjacency or count by its producer: what zero entries mean there is
    'not selected', unlike a feature or a target value."""
    return spec.get("producer") in SELECTION_PRODUCERS


def selections(probe: dict[str, Any]) -> dict[str, str]:
    """Inputs read only through whole selecting reductions -> the reduction
    (``count_nonzero`` of anything; a sum, mean or max of a mask-like input)."""
    found: dict[str, list[str | None]] = {}
    _reads(probe.get("target"), None, found)
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    out: dict[str, str] = {}
    for name, vias in found.items():
        if not vias or None in vias:
            continue
        if set(vias) == {"count_nonzero"} or _selection_like(specs.get(name) or {"name": name}):
            out[name] = "count_nonzero" if "count_nonzero" in vias else str(vias[0])
    return out


def masked_inputs(probe: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Inputs that are a strictly positive value times a mask (``probe_annotate.mark_masked``) ->
    (the mask's code, the positive producer): all-zero only on an empty mask."""
    out: dict[str, tuple[str, str]] = {}
    for spec in probe.get("inputs") or []:
        masked = spec.get("masked_by")
        if isinstance(masked, list) and len(masked) == 2:
            out[str(spec.get("name"))] = (str(masked[0]), str(masked[1]))
    return out


def _divides(node: Any) -> bool:
    if isinstance(node, list):
        return any(_divides(n) for n in node)
    if not isinstance(node, dict):
        return False
    if (node.get("k") == "bin" and node.get("op") in ("/", "//")) or node.get("op") in DIVIDING:
        return True
    return any(_divides(c) for c in _children(node))


def empty_selection_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Why a witness only shows on an empty selection: every input it needs that the code reads
    through whole reductions of a mask or a count is all zeros.  None otherwise."""
    observed, point = out.get("observed"), out.get("inputs")
    if not isinstance(observed, dict) or not isinstance(point, dict):
        return None
    needed = observed.get("needed")
    if not isinstance(needed, list):
        return None
    chosen = selections(probe)
    empty = [n for n in needed if n in chosen and point.get(n) == 0]
    masked = masked_inputs(probe)
    zeroed = [n for n in needed if n in masked and n not in empty and point.get(n) == 0]
    if not empty and not zeroed:
        return None
    parts = [
        f"every entry of `{n}` is 0 "
        + ("(nothing counted)" if chosen[n] == "count_nonzero" else "(no element selected)")
        for n in empty
    ] + [
        f"every entry of `{masked[n][0]}` is 0 (`{n}` is a {masked[n][1]} output times it, "
        "never 0 where the mask is not)"
        for n in zeroed
    ]
    what = "the division" if _divides(probe.get("target")) else "it"
    return f"needs an empty selection: {'; '.join(parts)}; guard {what} if such a batch can occur"


# ---------------------------------------------------------------- rows masked whole

# Ops that read a whole row at once: a softmax's shift by the row maximum is -inf - (-inf) =
# NaN in a row whose every entry a mask filled with -inf.
ROW_READERS = ops.ops_with(lambda op: op.row_coupled or op.reduction == "max")


def _neg_inf(node: Any) -> bool:
    """A where branch that is -inf wherever it is taken: a -inf constant, or one times or
    plus constants and shapes (``ones_like(s) * -inf``)."""
    if not isinstance(node, dict):
        return False
    if node.get("k") == "const":
        return node.get("v") == "-inf"
    return node.get("k") == "bin" and any(_neg_inf(node.get(side)) for side in ("l", "r"))


def _fill_masks(node: Any, under: bool, found: set[str]) -> None:
    """Inputs read by the condition of a -inf fill (``where(m, s, -inf)``, either branch)
    under an op that reads whole rows."""
    if isinstance(node, list):
        for item in node:
            _fill_masks(item, under, found)
        return
    if not isinstance(node, dict):
        return
    under = under or (node.get("k") == "call" and node.get("op") in ROW_READERS)
    args = node.get("args") or []
    if under and node.get("op") == "where" and len(args) == 3 and any(map(_neg_inf, args[1:])):
        reads: dict[str, list[str | None]] = {}
        _reads(args[0], None, reads)
        found.update(reads)
    for child in _children(node):
        _fill_masks(child, under, found)


def fill_masks(probe: dict[str, Any]) -> set[str]:
    """Inputs the condition of a -inf fill under a row reader reads (``m`` in
    ``softmax(where(m, s, -inf))``): the worker moves them to see whether a witness rests on
    a row the mask empties (``probing.masked_row``)."""
    found: set[str] = set()
    _fill_masks(probe.get("target"), False, found)
    return found


def masked_row_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Why a NaN witness only shows on a row the mask empties: with the fill's mask inputs
    moved, the worker saw the value finite (``observed["masked_row"]``), so the witness needs
    a row whose every entry the -inf fill covers (softmax of all -inf is NaN).  A row with
    nothing to keep (an empty history, a padding-only sequence) is a precondition on the
    data; the program's training run decides whether it occurs."""
    observed, point = out.get("observed"), out.get("inputs")
    if not isinstance(observed, dict) or not isinstance(point, dict):
        return None
    names = observed.get("masked_row")
    if not isinstance(names, list) or not names:
        return None
    values = ", ".join(
        f"`{n}` = {fmt_g(float(point[n]))}" for n in names if isinstance(point.get(n), (int, float))
    )
    return (
        f"needs an empty selection: at {values} the mask of the -inf fill keeps no entry of a "
        "row (nothing to attend to); guard the softmax if such a row can occur"
    )


# ---------------------------------------------------------------- identity matrices

# `tf.eye(k)`: 1 on the diagonal, 0 elsewhere.  The probe sets an input to one value
# everywhere, so an identity cut as an input becomes an all-ones matrix, which no code gets.
IDENTITY_CALL = re.compile(r"(?:^|\.)(?:eye|identity_matrix)\(")


def identity_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Why a witness resting on an identity matrix is no witness: the probe gave the identity
    one value everywhere (an all-ones matrix), a structure the code never has.  It rests on it
    when the identity is a needed input, or when no input is needed (the symptom shows at every
    point: it comes from the all-ones structure); a witness needing another input (``ss`` = 0
    next to the identity) keeps its verdict."""
    point, observed = out.get("inputs"), out.get("observed")
    if not isinstance(point, dict) or not isinstance(observed, dict):
        return None
    needed = observed.get("needed")
    if not isinstance(needed, list):
        return None
    names = [
        str(spec.get("name"))
        for spec in probe.get("inputs") or []
        if spec.get("name") in point and IDENTITY_CALL.search(str(spec.get("source") or ""))
    ]
    if not names or (needed and not set(needed) & set(names)):
        return None
    shown = ", ".join(f"`{n}`" for n in names)
    return (
        f"sets the identity matrix {shown} to {fmt_g(float(point[names[0]]))} everywhere; "
        "it is 1 only on its diagonal, which the probe's single value cannot represent"
    )


# ---------------------------------------------------------------- identical examples

# A reduction over the batch (sample) axis 0 sees one example per row.  The probe fills each
# input with one value, so every example it holds is the same: a dispersion across axis 0
# (a variance, a Jensen gap `log(mean(x, 0)) - mean(log(x), 0)`) is exactly 0 there, as it is
# only for a batch of identical examples (or a batch of one).  The worker re-evaluates the
# witness with such inputs spread along axis 0 (``verify/spread.py``); the verdict side reads
# what it saw (``observed["identical_batch"]``).
REDUCTIONS = ops.REDUCTIONS
AXIS_PARAM = {"moments": "axes"}  # the rest name it `axis`, where their signature puts it
# Producers whose outputs are identical across a batch by construction: a dead ReLU unit is 0
# for every example, a mask, a one-hot or a constant repeats its values, a clip or a maximum
# sits at its floor.
IDENTICAL_PRODUCERS = ops.DEAD_ZONE | ops.FIXED_VALUES | ops.FLOORING | {"mask", "bool"}


def _axes_of(node: dict[str, Any]) -> list[int] | None:
    """The literal axes a reduction call names, None when none are given or not literal."""
    given = axis_argument(node)
    return literal_axes(given) if given is not None else None


def axis_argument(node: dict[str, Any]) -> Any:
    """The tree a reduction call passes as its axis (keyword or position), None if none."""
    args = node.get("args") or []
    op = str(node.get("op"))
    name = AXIS_PARAM.get(op, "axis")
    params = ops.PARAMS.get(op) or ()
    at = params.index(name) if name in params else 1  # tf.norm(x, ord, axis)
    given = (node.get("kw") or {}).get(name)
    if given is None and len(args) > at:
        given = args[at]
    return given


def literal_axes(node: Any) -> list[int] | None:
    if not isinstance(node, dict):
        return None
    if node.get("k") == "const":
        v = node.get("v")
        return [int(v)] if isinstance(v, (int, float)) and float(v).is_integer() else None
    if node.get("k") == "neg":
        inner = literal_axes(node.get("x"))
        return [-a for a in inner] if inner is not None else None
    if node.get("k") == "tuple":
        out: list[int] = []
        for item in node.get("items") or []:
            axes = literal_axes(item)
            if axes is None:
                return None
            out += axes
        return out
    return None


# Ops whose outputs repeat across examples by construction (a dead ReLU unit, a clip at its
# bound, a rounding, a comparison): inputs read through them are not spread.
IDENTICAL_OPS = IDENTICAL_PRODUCERS | ops.STEP_FUNCTIONS


def _inputs_under(node: Any) -> set[str]:
    """The inputs an expression reads, except through an op of :data:`IDENTICAL_OPS`."""
    if isinstance(node, list):
        return set().union(*(_inputs_under(n) for n in node)) if node else set()
    if not isinstance(node, dict) or node.get("k") == "cmp":
        return set()
    if node.get("k") == "input":
        return {str(node.get("name"))}
    if node.get("k") == "call" and node.get("op") in IDENTICAL_OPS:
        return set()
    return set().union(*(_inputs_under(c) for c in _children(node)))


def identical_by_construction(spec: dict[str, Any], kind: str | None = None) -> bool:
    """An input (or, given ``kind``, the producer a batch statistic reduces) whose entries are
    identical across examples by construction: a ReLU output (dead units), a mask, a one-hot, a
    count or an integer, a clip at a bound, class labels.  Those witnesses stay confirmed."""
    if kind is not None:
        return kind in IDENTICAL_PRODUCERS
    return spec.get("producer") in IDENTICAL_PRODUCERS or _selection_like(spec)


def batch_inputs(probe: dict[str, Any]) -> list[str]:
    """The inputs a reduction over the batch axis 0 reads (``reduce_mean(x, axis=0)``,
    ``moments(x, axes=[0, 1])``), less those identical across examples by construction: the
    ones the worker spreads along axis 0.  None in a function mapped over a dataset
    (``per_example``): there axis 0 is an axis of one example."""
    if probe.get("per_example"):
        return []
    found: set[str] = set()
    for tree in (probe.get("target"), probe.get("loss")):
        for node in _walk(tree):
            if node.get("k") == "call" and node.get("op") in REDUCTIONS:
                axes = _axes_of(node)
                if axes is not None and 0 in axes and node.get("args"):
                    found |= _inputs_under(node["args"][0])
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    return [
        str(s.get("name"))
        for s in probe.get("inputs") or []
        if s.get("name") in found and not identical_by_construction(specs[s.get("name")])
    ]


def _walk(node: Any):
    if isinstance(node, list):
        for n in node:
            yield from _walk(n)
    elif isinstance(node, dict):
        yield node
        for c in _children(node):
            yield from _walk(c)


def _guard(probe: dict[str, Any]) -> str:
    sqrt = any(n.get("op") in ops.ROOTS for n in _walk(probe.get("target")))
    return "with `sqrt(var + eps)`" if sqrt else "the division with an eps"


def identical_batch_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Why a witness only shows when every example along the batch axis is identical: the
    worker saw the symptom go once the inputs differ along axis 0 (``identical_batch``), or the
    witness needs a variance over axis 0 (``batch_of``) at exactly 0.  None otherwise."""
    observed, point = out.get("observed"), out.get("inputs")
    if not isinstance(observed, dict) or not isinstance(point, dict):
        return None
    guard = _guard(probe)
    spread = observed.get("identical_batch")
    if isinstance(spread, dict) and spread.get("inputs"):
        names = ", ".join(f"`{n}`" for n in spread["inputs"])
        return (
            f"needs every example along axis 0 of {names} to be identical (or a batch of one): "
            f"with the examples {spread.get('how', 'spread')} the symptom is gone; guard "
            f"{guard} if that can happen"
        )
    needed = observed.get("needed")
    if not isinstance(needed, list) or probe.get("per_example"):
        return None
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    batch = [
        n
        for n in needed
        if isinstance(specs.get(n), dict)
        and isinstance(specs[n].get("batch_of"), str)
        and not identical_by_construction(specs[n], str(specs[n]["batch_of"]))
        and point.get(n) == 0
    ]
    if not batch:
        return None
    parts = ", ".join(f"`{n}` = 0 (`{specs[n].get('source', n)}`)" for n in batch)
    return (
        f"needs {parts}, a variance over the batch axis 0: 0 only when every example is "
        f"identical (or a batch of one); guard {guard} if that can happen"
    )


# ---------------------------------------------------------------- verdict


def judge(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A confirmed witness that rests on a far tail, an empty selection or a batch of identical
    examples is inconclusive, with
    the reason; what was seen stays in the detail."""
    if out.get("status") != "confirmed":
        return out
    reason = (
        far_tail_reason(out)
        or empty_selection_reason(probe, out)
        or masked_row_reason(probe, out)
        or identity_reason(probe, out)
        or identical_batch_reason(probe, out)
    )
    if not reason:
        return out
    return {**out, "status": "inconclusive", "detail": f"{reason} (seen: {out.get('detail', '')})"}
