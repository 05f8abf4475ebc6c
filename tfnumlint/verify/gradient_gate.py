"""The gradient-flow gate of a verdict: what the static pass found about where gradients flow
(``analysis/gradflow.py``: no gradient here, a dead store, a guard that selects away, a branch
that does not run) applied to a confirmed witness, with the reason the user reads.  A value
symptom stays confirmed where no gradient flows; a gradient-only one does not.
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..analysis.gradflow import (
    GRADIENT_ONLY,
    VALUE_ONLY,
)

# ops normalising a row of logits: softmax, log_softmax
_SOFTMAX_FAMILY = ops.ops_with(lambda op: op.row_coupled and op.logits_input)


def _has_op(tree: Any, names: frozenset[str]) -> bool:
    if isinstance(tree, dict):
        if tree.get("k") == "call" and tree.get("op") in names:
            return True
        return any(_has_op(v, names) for v in tree.values())
    if isinstance(tree, list):
        return any(_has_op(v, names) for v in tree)
    return False


def zero_by_construction(probe: dict[str, Any], out: dict[str, Any]) -> bool:
    """A dead gradient of softmax outputs summed without a label: sum_i log softmax_i(z) has
    gradient 1 - K * softmax(z), 0 at the uniform point by construction, not by saturation."""
    return (
        out.get("symptom") == "dead-gradient"
        and not probe.get("loss")
        and _has_op(probe.get("target"), _SOFTMAX_FAMILY)
    )


def _bad(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, float)) and abs(v) >= 1e6)


def labels_only_reason(out: dict[str, Any], probe: dict[str, Any] | None = None) -> str | None:
    """The bad gradient is only with respect to inputs no gradient reaches: data (placeholders,
    dataset elements, model inputs: their producer says so), which nothing trains, values
    computed from ``tf.stop_gradient`` (``spec["stopped"]``: a distillation teacher's logits),
    or values made only from constants and shapes (``spec["constant"]``: ``tf.eye(n) / d``).
    A dead gradient's bad inputs are those the loss's gradient is exactly 0 for."""
    observed = out.get("observed") or {}
    if out.get("symptom") == "dead-gradient":
        grads = observed.get("loss_gradient") or observed.get("gradient") or {}
        bad = [name for name, v in grads.items() if isinstance(v, (int, float)) and v == 0]
    else:
        grads = observed.get("gradient") or {}
        bad = [name for name, v in grads.items() if _bad(v)]
    specs = {str(s.get("name")): s for s in (probe or {}).get("inputs") or []}
    if not bad or any(name not in specs for name in bad):
        return None
    if all(specs[name].get("origin") == "data" for name in bad):
        return f"the bad gradient is only with respect to `{bad[0]}`, a data input"
    if all(specs[name].get("stopped") for name in bad):
        stop = specs[bad[0]]["stopped"]
        return f"the bad gradient is only with respect to `{bad[0]}`, computed from `{stop}`"
    return constants_only_reason(out, probe)


def constants_only_reason(out: dict[str, Any], probe: dict[str, Any] | None) -> str | None:
    """The bad gradient is only with respect to values made only from constants and shapes
    (``spec["constant"]``: ``tf.eye(n)``, ``tf.shape(x)[0]``), besides data: no variable
    reaches them, so the program never takes that derivative (``eye(d) / d`` at d = 0)."""
    grads = (out.get("observed") or {}).get("gradient") or {}
    bad = [name for name, v in grads.items() if _bad(v)]
    specs = {str(s.get("name")): s for s in (probe or {}).get("inputs") or []}
    if out.get("symptom") == "dead-gradient" or any(name not in specs for name in bad):
        return None
    made = [name for name in bad if specs[name].get("constant")]
    if not made or not all(n in made or specs[n].get("origin") == "data" for n in bad):
        return None
    makers = ", ".join(dict.fromkeys(str(specs[n]["constant"]) for n in made))
    return (
        f"no gradient can reach {' or '.join(f'`{n}`' for n in made)}: made only from "
        f"constants and shapes, or whole numbers TF does not differentiate ({makers}), so the "
        "program computes no derivative with respect to them"
    )


def statement_value_symptom(out: dict[str, Any]) -> str | None:
    """The enclosing statement's non-finite value at a gradient-only witness (``(x - mean) /
    sqrt(var)`` is 0/0 where ``sqrt(var)`` has its inf gradient): the forward value is broken
    too, which matters wherever the code runs, differentiated or not."""
    value = (out.get("observed") or {}).get("loss")
    return value if value in ("nan", "inf", "-inf") else None


def cancelled_downstream(out: dict[str, Any]) -> str | None:
    """An exploding gradient seen only locally: the flagged op's own derivative explodes
    (`1/(p + eps)` at p = 0), but the gradient of the loss it feeds, with respect to the same
    inputs, stays bounded at the witness (the `p` factor of `p * log(p + eps)`, a label that
    weights the term, a sigmoid or softmax Jacobian): what is differentiated does not explode
    there (issue 22, "gradients are judged locally")."""
    observed = out.get("observed")
    if out.get("symptom") != "exploding-gradient" or not isinstance(observed, dict):
        return None
    local, loss = observed.get("gradient"), observed.get("loss_gradient")
    if not isinstance(local, dict) or not isinstance(loss, dict) or not loss:
        return None
    if any(_bad(v) for v in loss.values()):
        return None
    name, worst = max(
        ((n, v) for n, v in local.items() if _bad(v)),
        key=lambda item: float("inf") if isinstance(item[1], str) else abs(item[1]),
        default=(None, None),
    )
    if name is None:
        return None
    bounded = max((abs(v) for v in loss.values() if isinstance(v, (int, float))), default=0.0)
    return (
        f"the gradient explodes only locally (d/d{name} = {_fmt(worst)}); the loss it feeds "
        f"gets a bounded gradient there (at most {_fmt(bounded)} in magnitude): a factor "
        "further down cancels it"
    )


def _fmt(v: Any) -> str:
    return v if isinstance(v, str) else f"{float(v):.4g}"


def apply(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The whole gradient-flow decision on a verdict: :func:`settle`, then :func:`conditional`
    (the verifier's gate list runs the two apart, with the other gates between them)."""
    return conditional(probe, settle(probe, out))


def settle(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The verdict: a gradient-only symptom where no gradient flows is not confirmed, nor is a
    value the code never computes (a guard), nor an explosion the loss does not see.  Where
    only a caller not in view could differentiate it, the condition is left to
    :func:`conditional`."""
    cancelled = cancelled_downstream(out) if out.get("status") == "confirmed" else None
    if cancelled:
        return {
            **out,
            "status": "inconclusive",
            "detail": f"{cancelled} (seen: {out.get('detail', '')})",
        }
    if out.get("status") == "confirmed" and zero_by_construction(probe, out):
        return {
            **out,
            "status": "inconclusive",
            "detail": (
                "the only zero gradient found is that of the plain sum of softmax outputs, which "
                "is 0 by construction (no loss weights them here): no evidence of saturation"
            ),
        }
    unused = probe.get("unused")
    if unused and out.get("status") == "confirmed":
        return {
            **out,
            "status": "refuted",
            "detail": f"{out.get('detail', '')}; but nothing reads that value: {unused}",
        }
    branch = probe.get("guarded")
    if branch and out.get("status") == "confirmed":
        return {
            **out,
            "status": "refuted",
            "detail": f"{out.get('detail', '')}; but that branch never runs there: {branch}",
        }
    guard = probe.get("value_guarded")
    if guard and out.get("status") == "confirmed" and out.get("symptom") in VALUE_ONLY:
        return {
            **out,
            "status": "refuted",
            "detail": f"{out.get('detail', '')}; but that value is never selected: {guard}",
        }
    reason = probe.get("no_gradient")
    likely = bool(reason and probe.get("no_gradient_likely"))
    gradient_witness = out.get("status") == "confirmed" and out.get("symptom") in GRADIENT_ONLY
    if gradient_witness and (not reason or likely):
        # a code fact about the witness (a stopped or data input) outranks a caller not in view
        certain = labels_only_reason(out, probe)
        if certain:
            reason, likely = certain, False
    if not reason or out.get("status") != "confirmed" or out.get("symptom") not in GRADIENT_ONLY:
        return out
    statement = statement_value_symptom(out)
    if statement:
        flows = "is likely to flow" if likely else "flows"
        return {
            **out,
            "symptom": "nan-value" if statement == "nan" else "inf-value",
            "detail": (
                f"{out.get('detail', '')}; no gradient {flows} here ({reason}), but at that point "
                f"the enclosing statement's value is {statement}: a value symptom"
            ),
        }
    if likely:
        return out  # a condition, stated after the gates that may find a sharper one
    if reason == constants_only_reason(out, probe):  # the fact first: no such derivative is taken
        return {**out, "status": "refuted", "detail": f"{reason} (seen: {out.get('detail', '')})"}
    return {
        **out,
        "status": "refuted",
        "detail": f"{out.get('detail', '')}; but no gradient flows here: {reason}",
    }


def conditional(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A gradient-only symptom that only a caller not in view could differentiate (a function
    with no caller in the project, one mapped over a dataset): it holds on that condition.
    Run after the other gates, so that a sharper condition they state (a far tail, the sign
    of a free parameter) comes first and this one is added to it."""
    reason = probe.get("no_gradient")
    if not (reason and probe.get("no_gradient_likely")) or out.get("symptom") not in GRADIENT_ONLY:
        return out
    detail = str(out.get("detail", ""))
    if out.get("status") == "confirmed":
        return {**out, "status": "inconclusive", "detail": f"{detail}; conditional: {reason}"}
    if out.get("status") == "inconclusive":
        head, seen, rest = detail.partition(" (seen: ")
        return {**out, "detail": f"{head}; and conditional: {reason}{seen}{rest}"}
    return out
