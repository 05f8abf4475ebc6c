"""Issue 22, item 2: a gradient symptom needs a path to a differentiation root; names and
paths never decide.  A function with no caller in the project (or a helper only such
functions call, or module-level code of a module that differentiates nothing) is a free
input: its gradient symptom is conditional on a caller the project does not show, whatever
the function's name or the file's path.  Static side only (the probe annotations the verdict
reads)."""

from __future__ import annotations

import pytest
from conftest import differentiated
from test_reachability import one_probe

from tfnumlint.verify import gradient_gate

BODY = """\
    import tensorflow as tf


    def {name}(labels, logits):
        return -tf.reduce_mean(labels * tf.math.log(tf.sigmoid(logits)))
    """

TAPE = """\
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.Adam()


    def {name}(labels, logits):
        return -tf.reduce_mean(labels * tf.math.log(tf.sigmoid(logits)))


    def step(x, y):
        with tf.GradientTape() as tape:
            loss = {name}(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    """

METRIC_AFTER_STEP = """\
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])


    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        spread = tf.sqrt(tf.reduce_sum(tf.square(model(x) - y)))
        return grads, spread
    """

MODULE_LEVEL_ONLY = """\
    import tensorflow as tf

    a = tf.Variable(tf.ones([3]))
    b = tf.Variable(tf.zeros([3]))
    spread = tf.sqrt(tf.reduce_sum(tf.square(a - b)))
    """

SESSION_ONLY = """\
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [None, 3])
    w = tf.Variable(tf.ones([3, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    train = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss)
    spread = tf.sqrt(tf.reduce_sum(tf.square(tf.matmul(x, w))))
    """


def _flow(code: str, rule: str, path: str = "model.py") -> tuple[str | None, bool]:
    """(why no gradient flows, whether that reason only makes the finding inconclusive)."""
    probe = one_probe(code, rule, path=path)
    # "likely" qualifies a reason: it never comes alone
    assert probe.get("no_gradient") or not probe.get("no_gradient_likely")
    return probe.get("no_gradient"), bool(probe.get("no_gradient_likely"))


CONFIRMED = {"status": "confirmed", "detail": "at x = 0", "inputs": {}, "symptom": "nan-gradient"}


def _assert_conditional(probe: dict, fact: str) -> None:
    """A conditional gradient symptom: the witness is inconclusive with its condition (not
    refuted, not confirmed), and a value symptom at the same place still confirms."""
    out = gradient_gate.apply(probe, dict(CONFIRMED))
    assert out["status"] == "inconclusive"
    assert "conditional" in out["detail"] and fact in out["detail"]
    value = gradient_gate.apply(probe, {**CONFIRMED, "symptom": "nan-value"})
    assert value["status"] == "confirmed"


@pytest.mark.parametrize("name", ["bce_loss", "bce", "qzxv"])
def test_a_free_function_is_conditional_whatever_its_name(name):
    """`log(1 - sigmoid(logits))` in `def bce_loss`, `def bce` and `def qzxv`, none of them
    called in the project: one verdict, conditional on a caller that differentiates it."""
    reason, likely = _flow(BODY.format(name=name), "TNL101")
    assert likely is True
    assert f"`{name}` has no caller in the project" in reason
    other, _ = _flow(BODY.format(name="qzxv"), "TNL101")
    assert reason.replace(f"`{name}`", "`qzxv`") == other  # the name is only quoted
    _assert_conditional(one_probe(BODY.format(name=name), "TNL101"), "no caller in the project")


@pytest.mark.parametrize("name", ["feature_loss", "feature_matching_loss", "qzxv"])
def test_a_loss_called_inside_a_gradient_tape_is_reached_whatever_its_name(name):
    assert _flow(TAPE.format(name=name), "TNL101") == (None, False)


@pytest.mark.parametrize("path", ["model.py", "tests/test_model.py", "optimization/step.py"])
def test_paths_never_refute_a_reached_loss(path):
    assert _flow(TAPE.format(name="f"), "TNL101", path=path) == (None, False)


@pytest.mark.parametrize("path", ["model.py", "tests/test_model.py", "optimization/step.py"])
def test_paths_never_decide_for_a_free_function(path):
    """A test file or an optimization folder neither refutes nor confirms: the same condition
    as in `model.py`."""
    reason, likely = _flow(BODY.format(name="f"), "TNL101", path=path)
    assert likely is True and "`f` has no caller in the project" in reason
    assert (reason, likely) == _flow(BODY.format(name="f"), "TNL101", path="model.py")
    _assert_conditional(one_probe(BODY.format(name="f"), "TNL101", path=path), "no caller")


def test_a_value_computed_after_tape_gradient_has_no_path_to_a_root():
    reason, likely = _flow(METRIC_AFTER_STEP, "TNL202")
    assert likely is False
    assert reason.startswith("no path to a differentiation root: `spread`")


def test_a_graph_value_only_fetched_has_no_path_to_a_root():
    reason, likely = _flow(SESSION_ONLY, "TNL202")
    assert likely is False
    assert reason.startswith("no path to a differentiation root: `spread`")


def test_the_unreached_gradient_symptom_is_refuted_and_a_value_symptom_is_not():
    probe = one_probe(SESSION_ONLY, "TNL202")
    confirmed = {"status": "confirmed", "detail": "at x = 0", "inputs": {}}
    assert (
        gradient_gate.apply(probe, {**confirmed, "symptom": "nan-gradient"})["status"] == "refuted"
    )
    assert (
        gradient_gate.apply(probe, {**confirmed, "symptom": "nan-value"})["status"] == "confirmed"
    )


def test_a_free_gradient_symptom_is_inconclusive_with_its_condition():
    """A function with no caller here may be a library's loss that its users differentiate, or
    a statistic nobody does: the witness holds only if a caller differentiates it."""
    probe = one_probe(BODY.format(name="bce"), "TNL101")
    out = gradient_gate.apply(probe, dict(CONFIRMED))
    assert out["status"] == "inconclusive"
    assert "conditional: `bce` has no caller in the project" in out["detail"]
    assert "holds only if a caller differentiates it" in out["detail"]


def test_the_same_function_with_a_differentiating_caller_keeps_its_status():
    """The condition is only the missing caller: a training step that differentiates the
    function (passing no facts into its parameters) makes the witness confirm."""
    code = differentiated(BODY.format(name="bce"), name="bce")
    assert _flow(code, "TNL101") == (None, False)
    assert gradient_gate.apply(one_probe(code, "TNL101"), dict(CONFIRMED))["status"] == "confirmed"


def test_module_level_code_of_a_module_that_differentiates_nothing_is_conditional():
    """No function, no caller: module-level code whose module differentiates nothing (and no
    other module imports) is free too.  (A module that differentiates something else refutes:
    SESSION_ONLY above.)"""
    reason, likely = _flow(MODULE_LEVEL_ONLY, "TNL202")
    assert likely is True
    assert "nothing in this module differentiates it" in reason
    _assert_conditional(one_probe(MODULE_LEVEL_ONLY, "TNL202"), "nothing in this module")


def test_the_call_of_a_keras_layer_is_a_root():
    code = """\
        import tensorflow as tf


        class Head(tf.keras.layers.Layer):
            def call(self, logits):
                return tf.math.log(tf.sigmoid(logits))
        """
    assert _flow(code, "TNL101") == (None, False)


def test_a_loss_passed_to_compile_is_a_root():
    code = """\
        import tensorflow as tf


        def q(y, p):
            return -tf.reduce_mean(y * tf.math.log(tf.sigmoid(p)))


        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss=q)
        """
    assert _flow(code, "TNL101") == (None, False)


def test_a_helper_called_only_from_an_unreached_function_is_refuted():
    code = """\
        import tensorflow as tf


        def g(a, b):
            return tf.sqrt(tf.reduce_sum(tf.square(a - b)))


        def report(a, b):
            return float(g(a, b))


        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        print(report(tf.ones([3]), tf.zeros([3])))
        """
    reason, likely = _flow(code, "TNL202")
    assert likely is False
    assert "`g` is only called from `report`" in reason


HELPER_OF_A_FREE_FUNCTION = """\
    import tensorflow as tf


    def g(a, b):
        return tf.sqrt(tf.reduce_sum(tf.square(a - b)))


    def distance(a, b):
        return g(a, b)
    """


def test_a_helper_called_only_by_a_free_function_is_conditional():
    """`g` has a caller, `distance`, but nothing calls `distance`: `g`'s gradient symptom holds
    only if `distance`'s unseen callers differentiate it."""
    reason, likely = _flow(HELPER_OF_A_FREE_FUNCTION, "TNL202")
    assert likely is True
    assert reason.startswith(
        "`g` is only called from functions that nothing in the project differentiates "
        "(the calls end at `distance`, with no caller)"
    )
    _assert_conditional(
        one_probe(HELPER_OF_A_FREE_FUNCTION, "TNL202"), "the calls end at `distance`"
    )


def test_a_chain_of_callers_is_named_by_the_functions_it_ends_at():
    """`g` <- `distance` <- `report`, and nothing calls `report`: `distance` has a caller, so
    the condition names where the calls end (review round 16: `iou` <- `box_voting` <-
    `refine_boxes` <- `refine_boxes_multi_class`), not "functions with no caller"."""
    code = HELPER_OF_A_FREE_FUNCTION + (
        """

    def report(a, b):
        return distance(a, b) * 2.0
    """
    )
    reason, likely = _flow(code, "TNL202")
    assert likely is True
    assert "`g` is only called from functions that nothing in the project differentiates" in reason
    assert "(the calls end at `report`, with no caller)" in reason
    assert "`distance`" not in reason


def test_a_helper_of_a_differentiated_function_is_reached():
    code = differentiated(HELPER_OF_A_FREE_FUNCTION, name="distance")
    assert _flow(code, "TNL202") == (None, False)


def test_a_helper_of_a_callback_run_inside_a_tape_is_reached():
    """`tf.while_loop(c, body, v)` runs `body` where it is passed: inside the tape block, so
    what `body` calls is differentiated (not "only called from functions not in view")."""
    code = """\
        import tensorflow as tf


        def g(a, b):
            return tf.sqrt(tf.reduce_sum(tf.square(a - b)))


        def step(x, y, w):
            def body(i, acc):
                return i + 1, acc + g(x * w, y)

            with tf.GradientTape() as tape:
                _, total = tf.while_loop(lambda i, acc: i < 3, body, (0, 0.0))
            return tape.gradient(total, w)
        """
    assert _flow(code, "TNL202") == (None, False)


COST = """\
    import tensorflow as tf


    def nmse(output, target):
        a = tf.sqrt(tf.reduce_sum(tf.square(output - target), axis=-1))
        b = tf.sqrt(tf.reduce_sum(tf.square(target), axis=-1))
        return tf.reduce_mean(a / b)
    """


def _cost_probes(tmp_path, files: dict[str, str]) -> list[dict]:
    from test_caller_ranges import probes
    from test_project import project

    root = project(tmp_path, {"pkg/cost.py": COST, **files})
    return probes(root, "pkg/cost.py", "TNL202")


def test_a_function_only_re_exported_by_its_package_has_no_caller(tmp_path):
    """`from pkg import cost` in the package's `__init__` reads nothing of `cost`: `nmse` has
    no caller in the project, so its gradient symptoms are conditional."""
    found = _cost_probes(tmp_path, {"pkg/__init__.py": "from pkg import cost\n"})
    assert found and all(p.get("no_gradient_likely") for p in found), found
    assert all("`nmse` has no caller in the project" in p["no_gradient"] for p in found)


@pytest.mark.parametrize(
    "use",
    [
        "from pkg.cost import nmse\n\n\ndef step(x, y):\n    return nmse(x, y)\n",
        "import pkg.cost\n\nLOSSES = {'nmse': pkg.cost.nmse}\n",
        "from pkg import cost as c\n\n\ndef pick():\n    return c.nmse\n",
    ],
)
def test_a_function_another_module_reads_keeps_its_callers_unknown(tmp_path, use):
    """Called, stored in a table, returned: whoever reads it may differentiate it, and its
    callers there are not followed (no gate)."""
    found = _cost_probes(tmp_path, {"pkg/__init__.py": "", "train.py": use})
    assert found and not any(p.get("no_gradient") for p in found), found


TEST_OF_COST = """\
    import tensorflow as tf
    from pkg.cost import nmse


    class CostTest(tf.test.TestCase):
        def {method}(self):
            x = tf.ones([2, 3])
            {body}
    """


def test_a_function_only_a_test_calls_is_conditional_not_unknown(tmp_path):
    """A test runner calls a test class's methods and differentiates nothing they compute:
    a metric only a test calls has no caller in the project that differentiates it."""
    test = TEST_OF_COST.format(method="test_zero", body="self.assertAllClose(nmse(x, x), 0.0)")
    found = _cost_probes(tmp_path, {"pkg/__init__.py": "", "pkg/cost_test.py": test})
    assert found and all(p.get("no_gradient_likely") for p in found), found
    for p in found:
        assert "`nmse` has no caller in the project that differentiates it" in p["no_gradient"]
        assert "`pkg.cost_test`" in p["no_gradient"]


def test_the_test_method_rule_reads_the_base_class_not_the_method_name(tmp_path):
    test = TEST_OF_COST.format(method="check", body="self.assertAllClose(nmse(x, x), 0.0)")
    found = _cost_probes(tmp_path, {"pkg/__init__.py": "", "pkg/cost_test.py": test})
    assert found and all(p.get("no_gradient_likely") for p in found), found
    plain = test.replace("(tf.test.TestCase)", "(object)")
    found = _cost_probes(tmp_path / "plain", {"pkg/__init__.py": "", "pkg/cost_test.py": plain})
    assert found and not any(p.get("no_gradient") for p in found), found  # a method: unknown


def test_a_test_that_differentiates_the_function_keeps_its_reach_unknown(tmp_path):
    body = (
        "with tf.GradientTape() as tape:\n"
        "                tape.watch(x)\n"
        "                loss = nmse(x, 2 * x)\n"
        "            self.assertIsNotNone(tape.gradient(loss, x))"
    )
    test = TEST_OF_COST.format(method="test_grad", body=body)
    found = _cost_probes(tmp_path, {"pkg/__init__.py": "", "pkg/cost_test.py": test})
    assert found and not any(p.get("no_gradient") for p in found), found


def test_a_reader_that_also_passes_the_function_on_keeps_its_reach_unknown(tmp_path):
    body = "self.assertAllClose(nmse(x, x), 0.0)\n            tf.map_fn(nmse, x)"
    test = TEST_OF_COST.format(method="test_zero", body=body)
    found = _cost_probes(tmp_path, {"pkg/__init__.py": "", "pkg/cost_test.py": test})
    assert found and not any(p.get("no_gradient") for p in found), found


def test_a_test_reading_through_star_re_exports_is_followed(tmp_path):
    """`import lib` then `lib.metrics.nmse`: the package star-imports a subpackage that imports
    `metrics`, whose `__init__` star-imports `cost`.  The re-exports call nothing, and the one
    reader that calls `nmse` is a test."""
    from test_caller_ranges import probes
    from test_project import project

    body = "self.assertAllClose(lib.metrics.nmse(x, x), 0.0)"
    test = TEST_OF_COST.format(method="test_zero", body=body)
    test = test.replace("from pkg.cost import nmse", "import lib")
    files = {
        "lib/__init__.py": "from lib.python import *\n",
        "lib/python/__init__.py": "from lib.python import metrics\n\n__all__ = ['metrics']\n",
        "lib/python/metrics/__init__.py": "from .cost import *\n",
        "lib/python/metrics/cost.py": COST,
        "lib/python/metrics/cost_test.py": test,
    }
    found = probes(project(tmp_path, files), "lib/python/metrics/cost.py", "TNL202")
    assert found and all(p.get("no_gradient_likely") for p in found), found
    assert all("`lib.python.metrics.cost_test`" in p["no_gradient"] for p in found), found
    assert not any("`lib.python.metrics`" in p["no_gradient"] for p in found)  # re-export only


def test_a_hazard_inside_a_test_method_has_no_path_to_a_root():
    code = """\
        import tensorflow as tf


        class NormTest(tf.test.TestCase):
            def test_norm(self):
                x = tf.zeros([3])
                return tf.sqrt(tf.reduce_sum(tf.square(x)))  # the runner drops it
        """
    reason, likely = _flow(code, "TNL202")
    assert reason and "is a test method" in reason and not likely, reason


def test_reads_are_counted_outside_the_import_statements():
    from tfnumlint.analysis.project_imports import project_reads

    text = "from pkg import cost\nimport pkg.losses as L\nimport numpy as np\n\nf = L.focal\n"
    imports = {"cost": ("pkg", "cost"), "L": ("pkg.losses", None), "np": ("numpy", None)}
    code = ["from pkg import cost\n", "import pkg.losses as L\n", "import numpy as np\n"]
    assert project_reads(text, imports, code) == ("L", "L.focal")  # `cost` only imported


def test_a_method_and_what_it_calls_have_unknown_callers_not_none():
    """A distribution's `_log_cdf` is called by its base class (another module) through
    `self`, and any method through instances anywhere: "no caller in the project" would be
    false, so neither the method nor a helper only it calls is made conditional."""
    code = """\
        import tensorflow as tf


        def _tail(x):
            return tf.math.log(tf.sigmoid(x))


        class Bernoulli(Base):
            def _log_cdf(self, x):
                return tf.math.log(tf.sigmoid(x)) + _tail(x)
        """
    from test_reachability import probed

    found = [f.probe for f in probed(code, select=["TNL101"]) if f.probe]
    assert len(found) == 2  # the method's log and the helper's
    assert not [p["no_gradient"] for p in found if "no_gradient" in p]
    free = code.replace(
        "class Bernoulli(Base):\n            def _log_cdf(self, x):", "def log_cdf(x):"
    )
    free = free.replace(
        "\n                return tf.math.log(tf.sigmoid(x)) + _tail(x)",
        "\n            return tf.math.log(tf.sigmoid(x)) + _tail(x)",
    )
    found = [f.probe for f in probed(free, select=["TNL101"]) if f.probe]
    assert len(found) == 2 and all(p.get("no_gradient_likely") for p in found)  # a plain function


PLAIN_LOG_CDF = """\
    import tensorflow as tf


    def log_cdf(x):
        return tf.math.log(tf.sigmoid(x))
    """


@pytest.mark.parametrize(
    "src",
    [
        PLAIN_LOG_CDF.replace("    def log_cdf", "    @registry.register('b')\n    def log_cdf"),
        PLAIN_LOG_CDF + '\n\n    TABLE = {"b": log_cdf}\n',
    ],
    ids=["decorated", "stored in a table"],
)
def test_a_registered_or_stored_function_has_unknown_callers(src):
    """A decorator may register the function (a dispatch table, a KL registry), and a table
    that stores it is read by name: its callers are not in view, so no condition is stated."""
    assert one_probe(PLAIN_LOG_CDF, "TNL101").get("no_gradient_likely")  # plain: no caller
    assert "no_gradient" not in one_probe(src, "TNL101")
