"""Issue 22: names never decide a verdict.  Walks tfnumlint/ with ``ast`` and lists every
module-level table (set, tuple, list, frozenset, dict) of two or more identifier-like strings,
and every compiled regex, that is not an API table.  A table is API when its module and name
are in ``API_TABLES`` (TensorFlow/Keras/NumPy function, hook, keyword or dtype names; internal
tags of the probe format; report and config words).  ``PENDING`` lists the lexicons of user
identifier words that are not removed yet: the test fails on any new one, and on a pending
entry that no longer exists (so the list only shrinks)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "tfnumlint"
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Lexicons of user identifier or path words still read by a verdict (to be removed), each with
# why it is still here.  Empty since issue 22's last tables went; a new one fails the test.
PENDING: dict[str, str] = {}


def tables() -> dict[str, list[str]]:
    """``module:NAME`` -> the identifier-like strings of each module-level table or regex."""
    out: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                name, value = node.target.id, node.value
            else:
                continue
            words = _words(value) if value is not None else None
            if words is not None and name != "__all__":
                out[f"{rel}:{name}"] = words
    return out


def _words(value: ast.expr) -> list[str] | None:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr == "compile" and value.args:  # a regex: its word alternatives
            text = " ".join(
                n.value for n in ast.walk(value.args[0])
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )  # fmt: skip
            words = [w for w in re.findall(r"[A-Za-z_]{2,}", text) if w not in ("w", "d")]
            return words if len(words) >= 1 else None
        return None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.args
        and value.func.id in ("frozenset", "set", "tuple")
    ):
        value = value.args[0]
    if isinstance(value, ast.BinOp):
        return None
    items = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", None)
    if not isinstance(value, (ast.Set, ast.Tuple, ast.List, ast.Dict)) or items is None:
        return None
    words = [
        e.value for e in _flat(items)
        if isinstance(e, ast.Constant) and isinstance(e.value, str) and IDENT.match(e.value)
    ]  # fmt: skip
    return words if len(words) >= 2 else None


def _flat(items: list) -> list:
    """The items, with nested tuples/lists/sets opened: a table built in a loop from
    ``((words...), domain)`` pairs (the removed ``NAME_LEXICON``) is a table of its words."""
    out = []
    for e in items:
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            out += _flat(e.elts)
        else:
            out.append(e)
    return out


def test_no_new_name_lexicon():
    found = tables()
    unknown = sorted(k for k in found if k not in PENDING and k not in _api_tables())
    assert not unknown, f"tables of words that are neither API nor pending: {unknown}"


def test_the_pending_list_only_shrinks():
    found = tables()
    gone = sorted(k for k in PENDING if k not in found)
    assert not gone, f"remove these from PENDING, they are gone: {gone}"


def test_the_gradient_gate_and_the_drive_labels_have_no_name_lexicon():
    """The modules issue 22 names first: what is left there are API tables only."""
    found = tables()
    for module in ("analysis/driven.py", "analysis/roots.py"):
        leftover = [k for k in found if k.startswith(module) and k in PENDING]
        assert not leftover, leftover


def _api_tables() -> frozenset[str]:
    return API_TABLES


# Tables of API names (TF/Keras/NumPy functions, hooks, keywords, dtypes), probe-format tags,
# report and config words.  Entries name the table, so a new table must be judged here.
API_TABLES: frozenset[str] = frozenset(
    {
        "analysis/contracts.py:INVERSE_METHODS",
        "verify/preconditions.py:MASKING_PRODUCTS",  # probe-format node kinds and op names
        "analysis/feeds.py:_HULL",  # NumPy functions that join arrays
        "analysis/feeds.py:_SAME",  # NumPy functions that move values
        "analysis/in_place.py:_VIEWS",  # NumPy methods and functions that may return a view
        # TF/Keras initializer calls and classes a weight of the training rung may start from
        "analysis/slicing/program_inits.py:_INITIALIZERS",
        "analysis/slicing/program_inits.py:_INIT_CALLS",
        "analysis/slicing/program_sources.py:_DENSE_KEYWORDS",  # Keras Dense's keywords
        "analysis/slicing/program_sources.py:_SEQUENCE",  # layer kinds of the slice's stacks
        "analysis/slicing/program_conv.py:_CONV1D_LAYERS",  # Keras's 1-D convolution classes
        # Keras's Embedding initializer strings and global pooling layer classes
        "analysis/slicing/program_layers.py:_EMBEDDING_INIT",
        "analysis/slicing/program_layers.py:_STRING_INITS",
        "analysis/slicing/program_layers.py:_POOLS",
        # Keras's recurrent layer classes, their default activations and their keywords
        "analysis/slicing/program_recurrent.py:CELLS",
        "analysis/slicing/program_recurrent.py:_DEFAULTS",
        "analysis/slicing/program_recurrent.py:_KEYWORDS",
        # BatchNormalization's keyword arguments the rung computes as Keras does
        "analysis/slicing/program_layers.py:_NORM_KEYWORDS",
        # tf.data methods that keep a dataset's elements (fit on a pipeline of arrays)
        "analysis/slicing/program_fit.py:_DATASET_KEEPS",
        # TF's and Keras's image-op keywords, data formats and Conv2D / 2-D pooling classes
        "analysis/slicing/program_conv.py:_NEUTRAL",
        "analysis/slicing/program_conv.py:_CHANNELS_LAST",
        "analysis/slicing/program_conv.py:_POOL_LAYERS",
        "analysis/slicing/program_conv.py:_CONV_LAYERS",
        "analysis/slicing/program_conv.py:_CONV_KEYWORDS",
        # TF/Keras attributes that are a model's trainable variables; the slicer's own
        # attribute names (state put back after reading an optimizer's variable list)
        "analysis/slicing/program_objectives.py:_ALL_TRAINABLE",
        "analysis/slicing/program_objectives.py:_SLICER_STATE",
        # Keras initializer classes an add_weight may name, and their default spreads
        "analysis/slicing/program_inits.py:_KERAS_SPREAD",
        "analysis/slicing/program_inits.py:KERAS_UNIFORM",
        # TF/Keras base classes (resolved through the imports) and the method a call runs
        "analysis/slicing/program_models.py:_CALLED_THROUGH",
        # the parameters of TF1's functional layers (tf.layers.dense, contrib's
        # fully_connected/linear) and of tf.variable_scope, by their API keyword names
        "analysis/slicing/program_tf1.py:_DENSE",
        "analysis/slicing/program_tf1.py:_CONTRIB",
        "analysis/slicing/program_tf1.py:_LINEAR",
        "analysis/slicing/program_tf1.py:_IGNORED",
        "analysis/slicing/program_tf1.py:_SCOPE_NAMING",
        "analysis/slicing/program_tf1.py:_SCOPE_PARAMS",
        # Keras learning-rate schedule classes and their arguments
        "analysis/slicing/program_objectives.py:_SCHEDULES",
        # the probe format's own keys (the slicer writes them, the tracer reads them)
        "analysis/slicing/contract.py:INPUT_KEYS",
        "analysis/slicing/contract.py:NODE_KEYS",
        # the syntax of a cut call's source text (callee, arguments): no words
        "verify/verdicts.py:_CALL_TEXT",
        # the syntax of a zero-argument call in a dtype position (`dtype=f()`, `cast(x, f())`)
        "analysis/dtypectx.py:_DTYPE_USES",
        # the optimizer, tape and compile methods an objective is made of (a text pre-check)
        "analysis/slicing/program_modules.py:_TRAINING_CALL",
        # op names (the op table's canonical names) whose calls a parameter role reads
        "analysis/roles.py:_READ_OPS",
        # TF/NumPy functions and the array method that compute a maximum
        "rules/overflow.py:_MAX_CALLS",
        # TF/TFP/SciPy special functions, matched only on a callee resolved to that library
        "analysis/special.py:SPECIAL_FUNCTIONS",
        # TFP Distribution methods that return a log-density
        "verify/domains.py:LOG_DENSITY_METHODS",
        # the relative imports of the evaluator's source, dropped when it is pasted in a script
        "verify/repro_program_eval.py:_RELATIVE",
        # NumPy functions, methods, keywords, dtypes and draws a data recipe may hold
        "analysis/recipe_tables.py:ARRAY_METHODS",
        "analysis/recipe_tables.py:BUILTIN_DTYPES",
        "analysis/recipe_tables.py:DRAW_PARAMS",
        "analysis/recipe_tables.py:DTYPES",
        "analysis/recipe_tables.py:FIRST_ARGUMENT_MUTATORS",
        "analysis/recipe_tables.py:MUTATORS",
        "analysis/recipe_tables.py:NUMPY_CONSTANTS",
        "analysis/recipe_tables.py:NUMPY_FUNCTIONS",
        "analysis/recipe_tables.py:NUMPY_KEYWORDS",
        "analysis/recipe_tables.py:UNIT_DRAWS",
        "verify/datagen_eval.py:_OTHER_DRAWS",
        # the TF1 tutorial's read_data_sets: its object's splits and its parameters
        "analysis/recipe_datasets.py:SPLITS",
        "analysis/recipe_datasets.py:TUTORIAL_PARAMETERS",
        "analysis/recipe_scalers.py:_FITS",  # scikit-learn's fit methods
        "verify/graphs/layers.py:_CONTAINERS",  # Keras's saved attribute names, not the user's
        "verify/graphs/layers.py:_LIBRARY",  # TF/Keras install paths: which frame is the user's
        "analysis/contracts.py:SAMPLE_METHODS",
        "analysis/driven.py:BATCH_MEANS",
        "analysis/driven.py:BATCH_SUMS",
        "analysis/driven.py:COMPUTED_ORIGINS",
        "analysis/driven.py:DRIVEN_ORIGINS",
        "analysis/driven.py:FORWARD_FUNCTIONS",
        "analysis/driven.py:LOSS_BASES",
        "analysis/driven.py:PASSED_KINDS",
        "analysis/driven.py:WEIGHT_CALLS",
        "analysis/driven.py:_LEADING_NAME",
        "analysis/dtypectx.py:LOW_PRECISION",
        "analysis/dtypectx.py:_DTYPE_KEYWORDS",
        "analysis/dtypectx.py:FLOAT_WORDS",
        "analysis/dtypectx.py:_POSITIONAL",
        # dtype and mixed-precision policy names, and the dtype-scope markers made of them
        "analysis/layer_policy.py:PRECISION",
        "analysis/layer_policy.py:_MARKER_DTYPE",
        "analysis/layer_policy.py:_POLICY_COMPUTE",
        "analysis/layer_policy.py:_POLICY_MARKERS",
        "analysis/layer_inputs.py:_DATA_METHODS",  # Keras Model methods that take input data
        "analysis/layer_policy.py:_LAYER_BASES",  # Keras layer and model classes
        "analysis/discrete.py:INTEGER_DTYPE",
        "analysis/discrete.py:STEP_FUNCTIONS",
        "analysis/gradflow.py:_DIFFERENTIATE",
        "analysis/gradflow.py:_ELEMENT_MAPS",
        "analysis/gradflow.py:_GRADIENT_RULE_KEYWORDS",
        "analysis/guards.py:_LESS_CALLS",
        "analysis/gradflow.py:_MAP_METHODS",
        "analysis/gradflow.py:_METRIC_METHODS",
        "analysis/guards.py:_NONZERO_ASSERTS",
        "analysis/gradflow.py:_NO_GRAD_CALL",
        "analysis/gradflow.py:_NO_GRAD_CALL_REASON",
        # tf.Variable's store methods and the keywords of their signatures
        "analysis/gradflow.py:_STORE_KEYWORDS",
        "analysis/gradflow.py:_STORE_METHODS",
        "analysis/guards.py:_OR_CALLS",
        "verify/gradient_gate.py:_SOFTMAX_FAMILY",
        "analysis/gradflow.py:_UPDATE_METHODS",
        "analysis/guards.py:_ZERO_PRESERVING",
        "analysis/invariants.py:ASSERT_INTEGER",
        "analysis/invariants.py:ASSERT_ONE",
        "analysis/invariants.py:ASSERT_TWO",
        "analysis/invariants.py:CONVERSIONS",
        "analysis/invariants.py:_BIJECTOR_RANGES",
        "analysis/module.py:BFLOAT16_MARKERS",
        "analysis/module.py:FLOAT16_MARKERS",
        "analysis/module.py:_SKIP_FIELDS",
        "analysis/names.py:_ROOTS",
        "analysis/project_summary.py:BOUND_KINDS",
        "analysis/project_summary.py:_CARRIED",
        "analysis/project_imports.py:_THIRD_PARTY_ROOTS",
        "analysis/provenance.py:FINFO_POSITIVE",
        "analysis/roots.py:DIFFERENTIATING_CALLS",
        "analysis/roots.py:TRAINED_BASES",
        "analysis/roots.py:TRAINED_METHODS",
        "analysis/roots.py:TRAINING_CALLS",
        "analysis/tfvalues.py:_HOOK",
        "analysis/tfvalues.py:_HOST_METHODS",
        "analysis/tfvalues.py:_HOST_ROOTS",
        "analysis/tfvalues.py:_NUMBER_BUILTINS",
        "analysis/tfvalues.py:_PASS_BUILTINS",
        "analysis/transfer.py:ACTIVATION_RANGES",
        "analysis/conditions.py:_CMP_CALLS",
        "analysis/transfer.py:_FACTORIES",
        "analysis/transfer.py:_HANDLERS",
        "analysis/transfer.py:_RESHAPING_ARGS",
        "analysis/values.py:LAYER_KINDS",
        "analysis/values.py:LINEAR_KINDS",
        "analysis/values.py:NOT_KNOWN",
        "analysis/values.py:STRICTLY_POSITIVE_KINDS",
        "changed.py:_HUNK",
        "cli_args.py:FAIL_ON",
        "cli_args.py:_CODE_LIST",
        "config.py:FLOAT_TYPES",
        "config.py:SEVERITIES",
        "config.py:_KEYS",
        "discovery.py:DEFAULT_EXCLUDES",
        "engine.py:_IGNORE",
        "engine.py:_NOQA",
        "fix/domain.py:_SUBSTITUTE",
        "fix/guards.py:_COMPARISONS",
        "fix/match.py:EPS",
        "fix/proof.py:NOTHING_TO_PROBE",
        "fix/rewrites.py:FIXERS",
        "floats.py:_FMT",
        "floats.py:_LAYOUT",
        "grouping.py:DIVISIONS",
        "grouping.py:RANK",
        "grouping.py:ROOTS",
        "grouping.py:SHOWN",
        "grouping.py:STATUS_RANK",
        "noqa.py:_NOQA",
        "ops.py:_CONV_LAYERS",
        "report/__init__.py:FORMATS",
        "report/github.py:_LEVEL",
        "report/sarif.py:_LEVEL",
        "report/statistics.py:_STATUS_ORDER",
        "report/style.py:SEVERITY",
        "report/style.py:STATUS",
        "report/style.py:_CODES",
        "rules/common.py:MAX_VALUE",
        "rules/datascale.py:LOADERS",
        "rules/datascale.py:PASS_THROUGH_METHODS",
        "rules/datascale.py:PASS_THROUGH_OPS",
        "rules/logs.py:LOG_ARG",
        "rules/logs.py:_COMPUTED",
        "rules/logs.py:_LINEAR_KINDS",
        "rules/overflow.py:_COMPUTED",
        "rules/overflow.py:_MAX_WRAPPERS",
        "rules/overflow.py:_UNSAFE",
        "rules/precision.py:_F16_OVERFLOW_OPS",
        "rules/precision.py:_HOST_PRECISION",
        "rules/precision.py:_LOW_PRECISION",
        "rules/recipes.py:RECIPES",
        "rules/training.py:SATURATING",
        "rules/training.py:SQUARED_LOSS_NAMES",
        "rules/training.py:_CLIP_KWARGS",
        "rules/training.py:_XENT",
        "source.py:_PYTHON_CELL_MAGICS",
        "analysis/slicing/contract.py:STAND_INS",
        "analysis/domain_relations.py:CODE_RANGED_KINDS",
        "verify/domains.py:COMPUTED",
        "analysis/domain_relations.py:GRAM_CALLS",
        "verify/domains.py:NATURAL_ZERO_CALLS",
        "analysis/call_ranges.py:PRODUCER_RANGES",
        "verify/domains.py:RECEIVED",
        "analysis/wholes.py:SIZE_CALLS",
        "verify/domains.py:SMALLEST_NORMAL",
        "analysis/domain_relations.py:TRANSPOSE_KEYWORDS",
        "verify/domains.py:UNDERFLOWING",
        "analysis/domain_relations.py:VALUE_PRESERVING",
        "analysis/wholes.py:WHOLE_CALLS",
        "analysis/domain_relations.py:_ASSERT_INTEGER",
        "analysis/domain_code.py:_ASSERT_ONE",
        "analysis/domain_code.py:_ASSERT_TWO",
        "analysis/wholes.py:_INT_DTYPE",
        "analysis/domain_code.py:_NONNEG_OPS",
        "analysis/call_ranges.py:_NUMERIC_LIBRARIES",
        "analysis/domain_code.py:SORTED_OPS",
        "verify/downstream.py:COUNTING_CALLS",
        "verify/downstream.py:GRADIENT_FREE",
        "verify/downstream.py:ORDER_KINDS",
        "verify/intervals.py:BINARY_TRANSFERS",
        "verify/intervals.py:UNARY_TRANSFERS",
        "verify/intervals.py:_COMPARE",
        "verify/intervals.py:_MONOTONE",
        "verify/intervals.py:_PASS_OPS",
        "verify/preconditions.py:CLAMPED_DRIVES",
        "verify/preconditions.py:DIVIDING",
        "verify/preconditions.py:EXP_RANGE",
        "verify/preconditions.py:IDENTICAL_PRODUCERS",
        "verify/preconditions.py:IDENTITY_CALL",
        "verify/preconditions.py:PRESERVING",
        "verify/preconditions.py:REDUCTIONS",
        "verify/preconditions.py:SELECTING",
        "verify/preconditions.py:SELECTION_PRODUCERS",
        "verify/preconditions.py:SQUASHING",
        "verify/proving.py:ATOL",
        "verify/proving.py:EPS_GRADIENT_BOUND",
        "verify/proving.py:RTOL",
        "analysis/slicing/signatures.py:IGNORED",
        "analysis/slicing/tools.py:DATA_CALLS",
        "analysis/slicing/tools.py:DATA_KINDS",
        "analysis/slicing/constants.py:HOST_FUNCTIONS",
        "analysis/slicing/constants.py:FILLS",  # TF/NumPy/Keras functions that fill a tensor
        "rules/masking.py:_ARRAY_ROOTS",  # array libraries (numpy, math, jax, tf, keras)
        "analysis/slicing/tools.py:SATURATING",
        "analysis/slicing/tools.py:SHAPE_ATTRS",
        "analysis/slicing/tools.py:DTYPE_WORDS",
        "analysis/slicing/tools.py:_RANK_FREE_PARAMS",
        "analysis/slicing/tools.py:_RANK_OPS",
        "analysis/slicing/tools.py:_RECIPROCALS",
        "verify/stand_ins.py:WHY",
        "verify/trace_ops.py:CAST_DTYPES",
        "verify/trace_ops.py:DTYPES",
        "verify/trace.py:_PRECEDENCE",
        "verify/trace_ops.py:_WRAPPERS",
        "verify/training.py:RECIPES",
        "analysis/slicing/uses.py:COMPARE_OPS",
        "analysis/slicing/uses.py:ENTRY_KEEPING",
        "analysis/slicing/uses.py:LOGSUMEXP_OPS",
        "analysis/slicing/uses.py:NAN_TESTS",
        "analysis/slicing/uses.py:NO_NAN_CALLS",
        "analysis/slicing/uses.py:ORDER_INDEX_CALLS",
        "analysis/slicing/uses.py:REORDER_CALLS",
        "analysis/slicing/uses.py:SHAPE_ATTRS",
        "analysis/slicing/uses.py:SHAPE_CALLS",
        # added since the first list: TF op / dtype / Keras loss-string names, report, stage and
        # dev-tool words, and the reproducer's own helper and reserved names (not user words)
        "analysis/callplaces.py:_CALL_START",
        "analysis/names.py:_VISITED_FIELD",
        "analysis/names.py:_SEQUENCES",  # libcst's visit helpers (visit_sequence...)
        "dev/examples.py:_BLOCK",
        "dev/new_rule.py:CODE",
        "dev/new_rule.py:FAMILIES",
        "model.py:STATUSES",
        "rules/saturation.py:SQUASHES",
        "stages.py:ORDER",
        "verify/compiled.py:FORMS",
        "verify/graphs/inputs.py:_INT_BOXES",
        "verify/graphs/layers.py:WEIGHT_OPERANDS",  # TF graph op types and their weight operand
        "verify/graphs/layers.py:_READS",  # TF graph op types that pass a weight through
        "verify/graphs/training_step.py:OPTIMIZER_OPS",
        "verify/graphs/loader.py:VARIABLE_OPS",
        "verify/graphs/training_step.py:_SEED",  # tf.gradients' name for its seed, not a user's
        "verify/graphs/training.py:_KIND_TEXT",  # the target kinds (internal tags), worded
        "verify/graphs/training.py:_LOGS",  # TF graph op types
        "verify/graphs/stack.py:_BIAS_OPS",  # TF graph op types
        "verify/graphs/stack.py:_CLIPS",  # TF graph op types
        "verify/graphs/stack.py:_SCALING",  # TF graph op types
        "verify/graphs/patterns.py:_LOW_FLOATS",
        "verify/graphs/ranges.py:_HULL_SAME",
        "verify/graphs/ranges.py:_SPATIAL_SAME",
        "verify/graphs/ranges.py:_SPECIAL",
        "verify/graphs/ranges.py:_VECTOR_BINARY",
        "verify/graphs/ranges.py:_VECTOR_UNARY",
        "verify/graphs/screen.py:SAFE_STATEFUL",
        "verify/graphs/screen.py:_CODE_CLASSES",
        "verify/kinds.py:COUNT_PRODUCERS",
        "verify/repro_code.py:HELPERS",
        "verify/repro_code.py:INFIX",
        "verify/repro_code.py:RESERVED",
        "verify/training_text.py:MSE_NAMES",
        # were pending: Keras loss strings for compile(loss=...), TF keyword-argument aliases
        "analysis/names.py:PROBABILITY_LOSSES",
        "analysis/slicing/program_losses.py:_FORMS",  # Keras loss classes, functions, strings
        "analysis/slicing/program_losses.py:_OBJECT_KEYWORDS",  # a Keras loss's keywords
        "analysis/slicing/program_losses.py:_FUNCTION_KEYWORDS",
        "analysis/slicing/signatures.py:ALIASES",
    }
)
