"""Op facts live in the registry: no module but ``ops.py`` keeps a table of op names.

A set, dict, list or tuple literal holding two or more registered op spellings (canonical
names or dotted spellings) is a side table of op facts: it drifts from the registry (a
"saturating" copy once omitted ``log_sigmoid``; a producer range gave softmax [0, inf)) and a
new op's entry never reaches it.  Such a table must be a query on :mod:`tfnumlint.ops`.

Two lists keep the test honest about what is left:

- :data:`NOT_OP_FACTS`: literals that name ops without stating a fact about them (a rule's
  dispatch declaration, the implementation table the registry's ``interval=`` field names),
  each with its reason;
- :data:`NOT_YET_DERIVED`: op-fact tables still waiting to be derived (issue 26).  It may only
  shrink: a new table fails, and an entry that no longer matches a literal fails too.

Entries are (module, sorted op names in the literal), so moving a table does not break them.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tfnumlint import ops

PACKAGE = Path(__file__).resolve().parents[1] / "tfnumlint"
Key = tuple[str, tuple[str, ...]]

NOT_OP_FACTS: dict[Key, str] = {
    ("analysis/slicing/program_inits.py", ("constant", "ones", "zeros")): (
        "TF initializer calls a weight starts from (API names, mapped to how the training rung "
        "draws the weight)"
    ),
    ("rules/domain.py", ("euclidean_norm", "norm")): "TNL203's dispatch: the ops the rule checks",
    ("rules/domain.py", ("acos", "asin", "atanh")): "TNL205's dispatch: the ops the rule checks",
    ("rules/domain.py", ("reciprocal", "rsqrt")): "TNL206's dispatch: the ops the rule checks",
    ("rules/precision.py", ("add", "clip_by_value", "maximum")): "a rule's dispatch declaration",
    ("rules/precision.py", ("exp", "square")): "TNL404's dispatch: the ops the rule checks",
    ("analysis/dtypectx.py", ("cast", "constant", "ones", "placeholder", "set_policy", "zeros")): (
        "the dtype argument's position by the callee's last name (TF, Keras and NumPy calls "
        "alike, `astype`, `Policy`), read before any call resolves to an op"
    ),
    ("rules/datascale.py", ("reshape", "squeeze")): "NumPy array methods, not TF ops",
    ("analysis/in_place.py", ("expand_dims", "reshape", "squeeze", "transpose")): (
        "NumPy methods and functions whose result may share its argument's memory (a view)"
    ),
    ("analysis/roles.py", ("clip_by_value", "divide", "log", "log1p", "maximum", "multiply")): (
        "the parameter-roles walk's dispatch: the calls `_Walk._call` compares by op name"
    ),
    ("rules/training_batch.py", ("sigmoid_xent", "softmax_xent")): (
        "the training simulation's loss forms, most specific first (two are named after the "
        "fused ops they model; `softmax_log` is none)"
    ),
    ("analysis/special.py", ("digamma", "lgamma")): (
        "the functions special.py implements a range for, by callee word (TFP's `lbeta` and "
        "`log_gamma_difference` are no ops): an implementation table, as intervals.py's is"
    ),
    ("analysis/transfer.py", (
        "activation_layer", "cast", "concat", "conv_layer", "einsum", "epsilon", "lambda_layer",
        "maximum", "minimum", "moments", "one_hot", "sequential", "where",
    )): "handlers by Transfer.rule family name (the registry names them, as it names intervals)",
    ("verify/intervals.py", (
        "abs", "acos", "asin", "lgamma", "reciprocal", "relu", "relu6", "rsqrt", "softplus",
        "sqrt", "square",
    )): "interval transfers the registry's `interval=` field names",
    ("verify/intervals.py", ("elu", "exp", "expm1", "log", "log1p", "round", "selu", "sigmoid", "sign")): (
        "monotone functions the registry's `interval='monotone:...'` names"
    ),
    ("verify/intervals.py", ("add", "matmul", "maximum", "minimum")): (
        "binary interval transfers, by graph transfer name"
    ),
    ("verify/graphs/ranges.py", ("relu", "relu6")): "vectorised interval transfers, by name",
    ("verify/graphs/ranges.py", ("add", "maximum", "minimum")): "vectorised binary transfers",
    ("analysis/slicing/constants.py", (
        "abs", "cos", "exp", "expm1", "lgamma", "log", "log1p", "sin", "sqrt", "tanh",
    )): "Python `math`/NumPy host functions by their own names, not TF ops",
    ("analysis/tfvalues.py", ("abs", "pow")): "Python builtins (`abs(x)`, `pow(x, y)`)",
    ("analysis/feeds.py", ("ceil", "floor", "round")): "NumPy functions of fed data, not TF ops",
    ("analysis/feeds.py", ("cos", "sin")): "NumPy functions of fed data, not TF ops",
    ("analysis/feeds.py", ("maximum", "minimum")): "NumPy functions of fed data, not TF ops",
    ("analysis/feeds.py", ("expand_dims", "reshape", "squeeze", "tile", "transpose")): (
        "NumPy functions of fed data, not TF ops"
    ),
    ("analysis/feeds.py", ("reshape", "squeeze", "transpose")): "NumPy array methods, not TF ops",
    ("analysis/recipe_tables.py", (
        "abs", "ceil", "cos", "exp", "expand_dims", "expm1", "floor", "identity", "log", "log1p",
        "matmul", "maximum", "minimum", "ones", "reshape", "round", "sign", "sin", "sqrt",
        "square", "squeeze", "tanh", "tile", "transpose", "where", "zeros",
    )): "the NumPy functions a data recipe may replay (datagen), with their shape rules",
    ("analysis/recipe_tables.py", ("round", "squeeze")): "NumPy array methods of a recipe",
    ("analysis/recipe.py", ("reshape", "transpose")): "NumPy array methods given a shape",
    ("analysis/recipe_datasets.py", ("one_hot", "reshape")): (
        "the parameters of the TF1 tutorial's read_data_sets, not TF ops"
    ),
}  # fmt: skip

# Op-fact tables not derived from the registry yet: a debt that may only shrink.  Empty since
# issue 26 derived the last two (project_summary's _CARRIED and rules/logs' _COMPUTED); keep the
# mechanism: a table that cannot be derived at once is listed here, with its reason.
NOT_YET_DERIVED: Counter[Key] = Counter()


def op_spellings() -> frozenset[str]:
    """Every string the registry knows as an op: canonical names and dotted spellings."""
    return frozenset(ops.REGISTRY) | frozenset(ops.SPELLINGS) | frozenset(ops.PROBE_SPELLINGS)


def op_tables(source: str, module: str, names: frozenset[str]) -> Counter[Key]:
    """The literals in ``source`` that hold two or more of ``names`` (dict keys count)."""
    found: Counter[Key] = Counter()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            elts: list[ast.expr | None] = list(node.elts)
        elif isinstance(node, ast.Dict):
            elts = list(node.keys)
        else:
            continue
        hits = {
            e.value
            for e in elts
            if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in names
        }
        if len(hits) >= 2:
            found[(module, tuple(sorted(hits)))] += 1
    return found


def package_tables() -> Counter[Key]:
    names = op_spellings()
    found: Counter[Key] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "ops.py":
            continue
        module = path.relative_to(PACKAGE).as_posix()
        found += op_tables(path.read_text(encoding="utf-8"), module, names)
    return found


def unexplained(
    found: Counter[Key], debt: Counter[Key] = NOT_YET_DERIVED
) -> tuple[list[Key], list[Key]]:
    """(tables neither allowlisted nor in the debt, debt entries no literal matches)."""
    rest = Counter({k: n for k, n in found.items() if k not in NOT_OP_FACTS})
    new = sorted((rest - debt).elements())
    stale = sorted((debt - rest).elements())
    return new, stale


def test_no_new_op_tables_outside_the_registry() -> None:
    new, stale = unexplained(package_tables())
    assert not new, f"op-name tables outside ops.py (derive them from ops.py): {new}"
    assert not stale, f"derived or moved: remove from NOT_YET_DERIVED: {stale}"


def test_allowlist_entries_still_exist() -> None:
    found = package_tables()
    gone = [k for k in NOT_OP_FACTS if k not in found]
    assert not gone, f"allowlisted tables that no longer exist: {gone}"


def test_the_check_finds_a_new_table() -> None:
    """A module adding its own set, dict or tuple of op names is caught; one name, strings
    that are not ops, and a registry query are not."""
    names = op_spellings()
    source = (
        "import tfnumlint.ops as ops\n"
        "SQUASH = frozenset({'sigmoid', 'softmax'})\n"
        "RANGES = {'exp': (0, 1), 'tf.math.log': (0, 1)}\n"
        "def f(op):\n"
        "    return op in ('relu', 'relu6', 'banana')\n"
        "ONE = {'sigmoid', 'banana'}\n"
        "WORDS = ['count', 'size']\n"
        "DERIVED = ops.PROBABILITY | {'banana'}\n"
    )
    found = op_tables(source, "rules/new_rule.py", names)
    assert sorted(found) == [
        ("rules/new_rule.py", ("exp", "tf.math.log")),
        ("rules/new_rule.py", ("relu", "relu6")),
        ("rules/new_rule.py", ("sigmoid", "softmax")),
    ]
    new, _ = unexplained(package_tables() + found)
    assert len(new) == 3


def test_a_derived_table_leaves_a_stale_debt_entry() -> None:
    """Deriving a table without striking it from the debt fails (the list only shrinks)."""
    key = ("rules/new_rule.py", ("sigmoid", "softmax"))
    debt = NOT_YET_DERIVED + Counter({key: 1})
    found = package_tables()
    assert unexplained(found + Counter({key: 1}), debt) == ([], [])
    _, stale = unexplained(found, debt)
    assert stale == [key]


def test_an_entry_range_agrees_with_its_static_transfer() -> None:
    """The static evaluator's unary bounds and the gates' producer range are one fact."""
    both = [
        op
        for op in ops.REGISTRY.values()
        if op.range and op.transfer and op.transfer.rule == "unary"
    ]
    assert len(both) >= 10
    for op in both:
        assert op.range is not None and op.transfer is not None
        assert (op.transfer.lo, op.transfer.hi) == (op.range.lo, op.range.hi), op.name


def test_the_gates_read_the_corrected_facts() -> None:
    """Where copies disagreed, the gates now read the registry's (numerically correct) fact."""
    from tfnumlint.analysis import call_ranges
    from tfnumlint.analysis.slicing import tools
    from tfnumlint.verify import preconditions

    assert call_ranges.PRODUCER_RANGES["softmax"] == (0.0, False, 1.0)  # was [0, inf)
    assert call_ranges.PRODUCER_RANGES["relu6"] == (0.0, False, 6.0)  # was [0, inf)
    assert call_ranges.PRODUCER_RANGES["bessel_i1e"][0] < 0.0  # odd: was >= 0
    assert call_ranges.PRODUCER_RANGES["exp"] == (
        0.0,
        False,
        ops.INF,
    )  # float32 exp underflows to 0
    assert "log_sigmoid" in preconditions.SQUASHING  # the copy that omitted it
    assert preconditions.SQUASHING == tools.SATURATING
    assert ops.float_range("tanh") == (-1.0, False, 1.0)  # tanh(10) rounds to 1.0
    assert ops.float_range("sigmoid") == (0.0, False, 1.0)


def test_the_derived_tables_hold_what_their_copies_held() -> None:
    """Each table derived in issue 26 still holds every op its literal copy named; where it is
    wider, the copy had missed an op (the registry's fact is the one kept)."""
    from tfnumlint.analysis import conditions, driven, guards, invariants, transfer
    from tfnumlint.analysis.slicing import tools, uses
    from tfnumlint.rules import overflow, training
    from tfnumlint.verify import preconditions

    assert conditions._CMP_CALLS == {
        "less": "<",
        "less_equal": "<=",
        "greater": ">",
        "greater_equal": ">=",
    }
    assert guards._LESS_CALLS == {"less": "<", "less_equal": "<="}
    assert ops.OPERATORS["divide"] == "/" and ops.OPERATORS["multiply"] == "*"
    assert transfer.ACTIVATION_RANGES["tanh"] == (-1.0, 1.0)
    assert transfer.ACTIVATION_RANGES["exponential"] == (0.0, ops.INF)
    assert invariants._BIJECTOR_RANGES["Sigmoid"] == (0.0, True, 1.0)  # exact: open at 0
    assert {"log", "log1p", "pow", "acos", "asin", "atanh", "divide", "exp"} == overflow._UNSAFE
    assert {
        "sigmoid_xent",
        "softmax_xent",
        "sparse_softmax_xent",
        "weighted_xent",
    } == training._XENT
    assert {"clip_by_norm", "clip_by_global_norm"} == ops.NORM_CLIPPING
    assert {"placeholder", "variable", "input"} == tools.DATA_KINDS
    assert {"placeholder", "input", "variable", "random", "log_sigmoid"} <= driven.PASSED_KINDS
    assert {"reduce_logsumexp", "log_softmax", "softmax", "exp"} == uses.LOGSUMEXP_OPS
    assert {"sqrt", "rsqrt"} == ops.ROOTS and {"square", "squared_difference"} == ops.SQUARING
    # wider than the copies: the canonical euclidean_norm (the copy said reduce_euclidean_norm),
    # rsqrt divides, a norm of a mask is 0 exactly when nothing is selected
    assert "euclidean_norm" in preconditions.REDUCTIONS
    assert "rsqrt" in preconditions.DIVIDING
    assert {"count_nonzero", "reduce_sum", "reduce_mean", "reduce_max"} < preconditions.SELECTING
    assert {"relu", "relu6", "one_hot", "clip_by_value", "zeros", "ones", "constant"} < (
        preconditions.IDENTICAL_PRODUCERS
    )


def test_the_last_two_derived_tables_hold_their_copies_exactly() -> None:
    """project_summary's _CARRIED and TNL104's _COMPUTED were the last literal tables (issue 26):
    derived from registry facts, they hold exactly what their copies held, so the summaries
    carry the same values and TNL104 reads the same producers."""
    from tfnumlint.analysis import project_summary, values
    from tfnumlint.rules import logs, overflow

    assert {
        "linear", "matmul", "diff", "neg", "exp", "tanh", "placeholder", "input", "sigmoid",
        "softmax", "relu", "relu6", "softplus", "clip_by_value", "maximum", "log_softmax",
        "log_sigmoid", "one_hot", "mask", "layer", "model", "asserted",
    } == project_summary._CARRIED  # fmt: skip
    assert {"matmul", "diff", "linear", "tanh", "placeholder", "input"} == logs._COMPUTED
    assert {"matmul", "diff", "linear", "neg"} == overflow._COMPUTED
    assert {"matmul", "linear"} == values.LINEAR_KINDS
    assert {"tanh"} == ops.SIGNED_SQUASHING  # not sin, cos or sign: TNL104 stays as reviewed
    assert {"placeholder", "input"} == ops.FED  # keras_input makes an "input"


def test_the_summaries_carry_every_kind_a_rule_reads() -> None:
    """analysis/ may not import rules/, so _CARRIED restates the facts the rules read: a rule's
    kind table outside it would lose its values at a module boundary."""
    from tfnumlint.analysis.project_summary import _CARRIED, BOUND_KINDS
    from tfnumlint.rules import logs, overflow, saturation, training

    for table in (
        logs._COMPUTED,
        overflow._COMPUTED,
        saturation.SQUASHES,
        training.SATURATING,
        ops.DEAD_ZONE,
        BOUND_KINDS,
    ):
        assert table <= _CARRIED, sorted(table - _CARRIED)
