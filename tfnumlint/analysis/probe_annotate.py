"""What the static pass adds to a sliced probe: where gradients flow, and the input domains.

Input domains are the values each free input of a probe can really take.

A probe's free input (a parameter, an attribute, an opaque call) is otherwise probed over every
float.  A witness is only evidence when it lies where the code's inputs can be, so each input
gets a domain, and pairs of inputs get relations, from four sources (strongest first):

- **assertions in scope**: ``tf.debugging.assert_positive(x)``, ``assert_non_negative``,
  ``assert_greater(a, b)``, ``assert_less``... in the same function, or in a class helper it
  passes the value to (``self._maybe_assert_valid_x(x)``);
- **class invariants** (analysis/invariants.py): assertions on ``self.scale`` anywhere in the
  class, ``__init__`` guards that raise, constraining bijectors in ``_parameter_properties``;
- **producers**: a value only ever assigned ``x + square(g)``, ``abs``, ``exp``, norms, ``relu``,
  ``softplus`` (an accumulator of non-negative terms) is non-negative; an input that is a call
  of a known math function the slice does not enter lies in its range (:data:`PRODUCER_RANGES`);
- **callers**: a parameter lies in the range of what the project's call sites pass (the
  index's cross-function provenance: `entropy_loss(softmax(...))` gives [0, 1], a ReLU output
  >= 0); strong when every call site passes a known value and the range is its producer's own
  (:data:`CODE_RANGED_KINDS`), weak when a caller passes an unknown value or the range rests on
  a name (`s * mask`).  A witness outside it is refuted or inconclusive whatever the input's
  origin: a driven parameter too (:func:`unreachable`).  An input that untraced calls only
  move from a parameter (``repeat``, ``reshape``, ``cast``...) keeps that range
  (:func:`passthrough_domain`); two parameters every caller passes from attributes its class
  asserts ordered keep the order (:func:`caller_relations`);
- **relations**: the shifted slices ``x[1:] - x[:-1]`` of a sorted array (``sort``, ``cumsum`` of a
  non-negative value, ``linspace``, ``range``) are non-negative;
- **whole numbers** (:func:`integer_inputs`): an input read from ``tf.shape``/``tf.size``/
  ``count_nonzero``/``argmax`` (>= 0), ``tf.range``, a cast to an integer dtype or a rounding,
  or one asserted ``assert_integer_form`` in scope, takes whole values only: a witness that
  needs it at 1e-8 or 0.5 breaks a code-derived domain (refuted);
- **constants** (:mod:`.domain_constants`): an input the code fixes to one value (a literal
  cast to a dtype, ``np.pi``, a name whose every binding is the same constant) is probed at
  that value only.  Names give no domain (issue 22).

The static side (:func:`annotate`, here) stores them in the probe as plain data; the probing
side keeps only points inside them (``verify/domains.split_rows``); the verdict side
(``verify/domains.py``) checks the witness.  A symptom found only outside a domain is not
confirmed: ``refuted`` when the domain comes from the code, ``inconclusive`` with the reason
when it is weak (a caller that passes an unknown value, a producer known only by its callee's
name).  No TensorFlow.  The evidence itself is read by ``domain_code`` (assertions, classes, types, contracts,
producers), ``domain_relations`` (slices, reads, whole numbers, callers, Gram factors) and
``domain_constants`` (values the code fixes).
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

from ..ops import FED, ops_with
from .dead_stores import overwritten_reason
from .discrete import discrete_returns
from .domain_code import (
    assertion_domains,
    call_domain,
    class_domains,
    contract_domains,
    producer_domain,
    typed_domains,
)
from .domain_constants import constant_domain
from .domain_model import (
    Domain,
    Relation,
    from_json_float,
    to_json_float,
    without_weaker_duplicates,
)
from .domain_relations import (
    caller_domain,
    caller_relations,
    gram_domains,
    integer_inputs,
    name_value,
    passthrough_domain,
    repeated_reads,
    shifted_slice_relations,
    stop_gradient_copies,
    with_integer,
)
from .driven import mark_inputs
from .gradflow import dataset_map_reason, element_map_reason, no_gradient
from .guards import cond_guard_reason, where_guard_reason
from .readers import Readers


def annotate(probe: dict[str, Any] | None, ctx, hit) -> None:
    """Add the inputs' domains and relations to the probe (plain data, in place)."""
    if not probe or probe.get("kind") != "expr":
        return
    names = [spec["name"] for spec in probe.get("inputs") or []]
    if not names:
        return
    site = hit.site
    scope = site.scope
    fn_scope = scope
    while fn_scope is not None and fn_scope.kind != "function":
        fn_scope = fn_scope.parent
    domains: dict[str, Domain] = {}
    relations: list[Relation] = []
    if fn_scope is not None:
        doms, rels = assertion_domains(ctx, fn_scope, set(names))
        for d in doms:
            domains.setdefault(d.name, d)
        relations += rels
        doms, rels = class_domains(ctx, fn_scope, names)
        for d in doms:
            domains.setdefault(d.name, d)
        relations += rels
        doms, rels = contract_domains(ctx, fn_scope, site.statement, names)
        declared = typed_domains(ctx, fn_scope, names)
        for d in doms + declared:
            domains.setdefault(d.name, d)
        for spec in probe.get("inputs") or []:
            if any(d.name == spec["name"] for d in declared):
                spec["declared"] = True  # a trainable Parameter, not a plain attribute
        relations += rels
    for spec in probe.get("inputs") or []:
        passed = caller_domain(ctx, spec, site) or passthrough_domain(ctx, spec, site)
        if passed is not None:
            domains.setdefault(passed.name, passed)
    relations += caller_relations(ctx, probe, fn_scope)
    for name, (lo, why) in integer_inputs(ctx, probe, fn_scope).items():
        domains[name] = with_integer(domains.get(name), name, lo, why)
    for spec in probe.get("inputs") or []:
        name = spec["name"]
        if name in domains or spec.get("prob") or spec.get("producer") in ("logits", "sigmoid"):
            continue
        found: Domain | None = constant_domain(ctx, name, scope)
        if found is None and from_json_float(spec.get("lo", "-inf")) >= 0:
            continue  # provenance already knows it
        if found is None and re.fullmatch(r"\w+", name):
            found = producer_domain(ctx, name, scope)
        elif found is None:
            found = call_domain(ctx, name, (scope, site.order), str(probe.get("dtype") or ""))
        if found is not None:
            domains[name] = found
    mark_masked(probe, ctx, site)
    mark_exponents(probe)
    for name, dom in gram_domains(probe, ctx, site).items():
        domains.setdefault(name, dom)
    relations += shifted_slice_relations(ctx, site.statement, site, set(names))
    relations += repeated_reads(ctx, site.statement, names)
    relations += stop_gradient_copies(ctx, site, names)
    for spec in probe.get("inputs") or []:
        held = domains.get(spec["name"])
        if held is not None and held.lo == held.hi:  # a constant (a weak one too): probe it there
            spec["lo"] = spec["hi"] = to_json_float(held.lo)
    if domains:
        probe["domains"] = [
            {**asdict(d), "lo": to_json_float(d.lo), "hi": to_json_float(d.hi)}
            for d in domains.values()
        ]
    relations = without_weaker_duplicates(relations)
    if relations:
        probe["relations"] = [asdict(r) for r in relations]


# ops that exponentiate their input (exp, expm1; sigmoid/softmax of logits; logsumexp): an
# input read through them is a log-scale value, whose extremes are a far tail of its own scale
_EXPONENTIATING = ops_with(
    lambda op: (
        (op.danger is not None and op.danger.test == "overflows")
        or op.logits_input
        or op.log_sum_exp
    )
)


def mark_exponents(probe: dict[str, Any]) -> None:
    """``spec["exponent"] = True`` for each input the target exponentiates, directly or through
    sums, differences, negations and scalings (``exp(new_lp - old_lp)``, ``sigmoid(z / t)``):
    a log-scale value by its use, where its name once decided it (issue 22)."""
    found: set[str] = set()
    stack: list[tuple[Any, bool]] = [(probe.get("target"), False)]
    while stack:
        node, inside = stack.pop()
        if not isinstance(node, dict):
            if isinstance(node, list):
                stack.extend((n, inside) for n in node)
            continue
        kind = node.get("k")
        if kind == "input" and inside:
            found.add(str(node.get("name")))
            continue
        if kind == "call":
            below = node.get("op") in _EXPONENTIATING
            stack.extend((a, below) for a in node.get("args") or [])
            stack.extend((v, below) for v in (node.get("kw") or {}).values())
            continue
        keeps = kind in ("neg", "src") or (kind == "bin" and node.get("op") in ("+", "-", "*", "/"))
        stack.extend(
            (v, inside and keeps) for k, v in node.items() if k not in ("k", "op", "line", "col")
        )
    for spec in probe.get("inputs") or []:
        if spec.get("name") in found and spec.get("producer") not in FED:  # fed data: its range
            spec["exponent"] = True


def mark_masked(probe: dict[str, Any], ctx, site) -> None:
    """Inputs that are a strictly positive value times a mask (``softmax(z) * mask``, passed by
    the callers or bound here): ``spec["masked_by"] = [mask code, producer]``.  Such a value is
    0 only where the mask is, so the precondition gate reads a witness needing it all-zero as an
    empty selection (``preconditions.empty_selection_reason``)."""
    for spec in probe.get("inputs") or []:
        name = spec.get("name", "")
        if not re.fullmatch(r"\w+", name):
            continue
        masked = name_value(ctx, name, site.scope, site.order).masked_by
        if masked:
            spec["masked_by"] = list(masked)


def annotate_probe(probe: dict[str, Any] | None, ctx, hit, positions=None) -> None:
    """Everything issue #11 adds to a probe: where gradients flow, and the inputs' domains
    (``positions``: the file's, so a reason can say on which line a sink is).  Best effort: an
    analysis failure leaves the probe as the slicer made it, never loses a file."""
    if not probe or probe.get("kind") != "expr":
        return
    try:
        _annotate_probe(probe, ctx, hit, positions)
    except (RecursionError, AttributeError, KeyError, TypeError, ValueError, IndexError):
        for key in (
            "no_gradient",
            "no_gradient_likely",
            "per_example",
            "unused",
            "loop_state",
            "value_guarded",
            "guarded",
            "domains",
            "relations",
        ):
            probe.pop(key, None)


def _imported_elsewhere(ctx):
    """``name -> bool``: another module of the project reads that name from this module
    (``""``: imports the module itself) and may differentiate it; a reader whose every call
    of it is on no path to a differentiation root does not count (``readers.Readers``).
    Without a project index nothing is imported."""
    project = getattr(ctx.ev, "project", None)
    if project is None:
        return None
    return Readers(project.module, project.ask)


def _discrete_call(ctx):
    """``dotted -> bool``: every return of the function a call names is a whole number or a
    boolean (a module-level function here, or a project function through the index)."""
    project = getattr(ctx.ev, "project", None)
    functions = ctx.info.functions

    def discrete(dotted: str) -> bool:
        local = functions.get(dotted)
        if local is not None:
            return discrete_returns(local, ctx.ev.lookup)
        return project is not None and project.discrete(dotted)

    return discrete


def _line_of(ctx, positions):
    """``node -> its first line`` in the file, or None where ``positions`` cannot place it."""

    def line(node) -> int | None:
        pos = positions.get(node) if positions is not None else None
        if pos is None and hasattr(positions, "resolve"):  # a sink in another top statement
            top = next((s.top for s in ctx.info.calls if s.node is node), None)
            positions.resolve([top] if top is not None else [])
            pos = positions.get(node)
        return pos.start.line if pos else None

    return line


def _annotate_probe(probe: dict[str, Any], ctx, hit, positions) -> None:
    site = hit.site
    elsewhere = _imported_elsewhere(ctx)
    flow = no_gradient(
        site.scope,
        site.statement,
        hit.node,
        ctx.path,
        probe,
        elsewhere,
        _discrete_call(ctx),
        resolve=ctx.info.imports.resolve,
        line=_line_of(ctx, positions),
    )
    if flow:
        probe["no_gradient"] = flow.reason
        if not flow.certain:
            probe["no_gradient_likely"] = True  # no caller, or a dataset map: conditional
    mapped = dataset_map_reason(site.scope) or element_map_reason(site.scope)
    if mapped:
        probe["per_example"] = mapped  # one example at a time: axis 0 is not the batch axis
    unused = overwritten_reason(site.scope, site.statement, ctx.info.imports.op)
    if unused:
        probe["unused"] = unused  # a dead store: no symptom of it reaches anything
    guard = where_guard_reason(site.statement, hit.node, site.scope)
    if guard:
        probe["value_guarded"] = guard  # tf.where computes the branch: its gradient still leaks
    branch = cond_guard_reason(site.scope, site.statement, hit.node)
    if branch:
        probe["guarded"] = branch  # tf.cond / if: the branch does not run at all
    annotate(probe, ctx, hit)
    mark_inputs(probe, ctx, site)  # which inputs training drives: the genericity test reads it
