"""Integer-valued inputs (issue 11): a value the code makes whole-numbered (a size, a count, a
range, a cast to an integer dtype, an ``assert_integer_form``) never takes 1e-8 or 0.5, so a
witness that needs such a value for it breaks a code-derived domain and is refuted.  A name
alone (`num_items`) stays weak evidence.
"""

from __future__ import annotations

import math
import random

from test_caller_ranges import probes
from test_project import project

from tfnumlint.analysis import domain_model, domain_relations
from tfnumlint.verify import domains, gates, generic


def whole_domain(probe: dict, name: str) -> dict | None:
    return next(
        (d for d in probe.get("domains") or [] if d["name"] == name and d.get("integer")), None
    )


def precision_loss(name: str, value: float) -> dict:
    """A confirmed TNL105-style outcome that needs ``name`` = ``value``."""
    return {
        "status": "confirmed",
        "symptom": "precision-loss",
        "detail": f"at {name} = {value:g}, log(n + 1) = 0 but the exact value is {value:g}",
        "dtype": "float32",
        "inputs": {name: value},
        "observed": {"needed": [name]},
    }


def one_probe(tmp_path, body: str, params: str = "x") -> dict:
    code = f"import tensorflow as tf\n\n\ndef f({params}):\n" + "".join(
        f"    {line}\n" for line in body.splitlines()
    )
    root = project(tmp_path, {"m.py": code})
    [probe] = probes(root, "m.py", "TNL105")
    return probe


def test_an_item_of_a_shape_is_a_whole_number_at_least_zero(tmp_path):
    probe = one_probe(
        tmp_path, "n = tf.cast(tf.shape(x)[0], tf.float32)\nreturn tf.math.log(n + 1.0)"
    )
    dom = whole_domain(probe, "tf.shape(x)[0]")
    assert dom is not None and dom["strong"] and dom["lo"] == 0.0
    verdict = gates.judge(probe, precision_loss("tf.shape(x)[0]", 1e-8))
    assert verdict["status"] == "refuted"
    assert "is not a whole number" in verdict["detail"] and "`shape`" in verdict["detail"]
    assert gates.judge(probe, precision_loss("tf.shape(x)[0]", 2.0))["status"] == "confirmed"


def test_sizes_and_counts_of_other_calls(tmp_path):
    for i, call in enumerate(("tf.size(x)", "tf.rank(x)", "tf.argmax(x)")):
        probe = one_probe(
            tmp_path / str(i), f"n = tf.cast({call}, tf.float32)\nreturn tf.math.log(n + 1.0)"
        )
        dom = whole_domain(probe, call)
        assert dom is not None and dom["lo"] == 0.0, call
        assert domains.broken(probe, {call: 0.5}), call
        assert not domains.broken(probe, {call: 3.0}), call


def test_a_range_and_an_integer_cast_are_whole_numbers_of_any_sign(tmp_path):
    probe = one_probe(
        tmp_path / "r", "i = tf.cast(tf.range(10), tf.float32)\nreturn tf.math.log(i + 1.0)"
    )
    dom = whole_domain(probe, "tf.range(10)")
    assert dom is not None and dom["lo"] == "-inf"
    assert domains.broken(probe, {"tf.range(10)": 1e-8})
    assert not domains.broken(probe, {"tf.range(10)": -3.0})


def test_an_in_scope_integer_form_assertion_makes_the_parameter_whole(tmp_path):
    probe = one_probe(
        tmp_path,
        "tf.debugging.assert_nonnegative_integer_form(n)\nreturn tf.math.log(n + 1.0)",
        params="n",
    )
    dom = whole_domain(probe, "n")
    assert dom is not None and dom["strong"] and dom["lo"] == 0.0
    assert "assert_nonnegative_integer_form" in dom["why"]
    assert gates.judge(probe, precision_loss("n", 1e-8))["status"] == "refuted"


def test_the_depth_of_a_one_hot_is_a_class_count_of_at_least_one(tmp_path):
    probe = one_probe(
        tmp_path,
        "labels = tf.one_hot(y, depth=k)\nreturn tf.math.log(k + 1.0) * labels",
        params="y, k",
    )
    dom = whole_domain(probe, "k")
    assert dom is not None and dom["strong"] and dom["lo"] == 1.0 and "`depth`" in dom["why"]
    assert domains.broken(probe, {"k": 0.5}) and domains.broken(probe, {"k": 0.0})
    assert not domains.broken(probe, {"k": 3.0})


def test_a_count_by_its_name_alone_gets_no_code_derived_whole_domain(tmp_path):
    probe = one_probe(tmp_path, "return tf.math.log(num_items + 1.0)", params="num_items")
    assert whole_domain(probe, "num_items") is None
    assert gates.judge(probe, precision_loss("num_items", 1e-8))["status"] != "refuted"


def test_a_float_cast_and_an_unknown_call_are_not_whole(tmp_path):
    probe = one_probe(
        tmp_path, "n = tf.cast(tf.reduce_mean(x), tf.float64)\nreturn tf.math.log(n + 1.0)"
    )
    assert not any(d.get("integer") for d in probe.get("domains") or [])


def test_the_integer_form_joins_a_stronger_range_and_narrows_generic_values():
    dom = domain_relations.with_integer(
        domain_model.Domain("n", 1.0, 5.0, False, "asserted by `assert_positive`", True),
        "n",
        0.0,
        "asserted by `assert_integer_form`",
    )
    assert (dom.lo, dom.hi, dom.integer, dom.strong) == (1.0, 5.0, True, True)
    assert dom.holds(3.0) and not dom.holds(2.5) and not dom.holds(6.0)
    assert dom.holds(math.nan)
    probe = {
        "inputs": [{"name": "n", "drive": "free"}],
        "domains": [{**dom.__dict__, "lo": 1.0, "hi": 5.0}],
    }
    for point in generic.generic_points(probe, {"n": 1e-8}):
        assert point["n"] == math.floor(point["n"]) and 1 <= point["n"] <= 5
    assert generic.generic_points(probe, {"n": 1e-8})  # whole draws exist inside the domain
    rng = random.Random(0)
    assert generic.generic_value(rng, {"name": "n", "integer": True}, 0.5, 0.0, math.inf) % 1 == 0


# ------------------------------------------- sizes read through a method or a helper's return

# Review round 17 #18 (tfp's power_spherical.py:270): `_event_shape_tensor` returns
# `ps.shape(x)[-1:]`, and its item cast to float was set to 0.5 by a witness.  `{size}` is the
# call the method's divisor reads, `{defs}` what defines it.
SPHERICAL = """\
    import tensorflow as tf
    from tensorflow_probability.python.internal import prefer_static as ps
    {imports}


    {defs}


    class Spherical(tf.Module):
        def __init__(self, mean_direction, concentration):
            self.mean_direction = mean_direction
            self.concentration = concentration

        def _event_shape_tensor(self, mean_direction=None):
            return ps.shape(self.mean_direction if mean_direction is None else mean_direction)[-1:]

        def _variance(self):
            c = tf.convert_to_tensor(self.concentration)
            d = tf.cast({size}, dtype=tf.float32)
            return (2 * c + d - 1.0) / (tf.math.square(c + d - 1.0) * (c + d))
    """


def spherical_probe(tmp_path, size: str, defs: str = "", imports: str = "", files=None) -> dict:
    code = SPHERICAL.format(size=size, defs=defs, imports=imports)
    root = project(tmp_path, {"pkg/__init__.py": "", "pkg/dist.py": code, **(files or {})})
    [probe] = probes(root, "pkg/dist.py", "TNL201")
    return probe


def fractional(name: str) -> dict:
    """A confirmed outcome that needs ``name`` = 0.5 (with the concentration at 0.5)."""
    return {
        "status": "confirmed",
        "symptom": "inf-value",
        "detail": f"at {name} = 0.5, ... = inf",
        "dtype": "float32",
        "inputs": {"self.concentration": 0.5, name: 0.5},
        "observed": {"needed": ["self.concentration", name]},
    }


def test_an_item_of_a_shape_a_method_of_the_class_returns_is_a_whole_number(tmp_path):
    name = "self._event_shape_tensor(mean_direction=self.mean_direction)[0]"
    probe = spherical_probe(tmp_path, name)
    dom = whole_domain(probe, name)
    assert dom is not None and dom["strong"] and dom["lo"] == 0.0, probe.get("domains")
    assert "`_event_shape_tensor` returns `ps.shape(" in dom["why"]
    verdict = gates.judge(probe, fractional(name))
    assert verdict["status"] == "refuted", verdict
    assert "is not a whole number" in verdict["detail"]


def test_a_module_function_returning_a_name_bound_to_a_shape_item(tmp_path):
    defs = "def event_size(x):\n        size = ps.shape(x)[-1]\n        return size"
    probe = spherical_probe(tmp_path, "event_size(self.mean_direction)", defs)
    dom = whole_domain(probe, "event_size(self.mean_direction)")
    assert dom is not None and dom["lo"] == 0.0 and "`event_size` returns" in dom["why"]


def test_a_helper_in_another_module_that_returns_a_shape_slice(tmp_path):
    helper = (
        "import tensorflow as tf\n"
        "from tensorflow_probability.python.internal import prefer_static as ps\n\n\n"
        "def event_size(x):\n    return ps.shape(x)[-1:]\n"
    )
    name = "event_size(self.mean_direction)[0]"
    probe = spherical_probe(
        tmp_path, name, imports="from .shapes import event_size", files={"pkg/shapes.py": helper}
    )
    dom = whole_domain(probe, name)
    assert dom is not None and dom["strong"] and dom["lo"] == 0.0, probe.get("domains")
    assert domains.broken(probe, {name: 0.5}) and not domains.broken(probe, {name: 3.0})


def test_a_method_whose_return_is_no_size_gives_no_whole_domain(tmp_path):
    """Named like a shape, computing a float: its body decides (issue 22)."""
    defs = "def event_size(x):\n        return tf.reduce_sum(x, axis=-1)"
    probe = spherical_probe(tmp_path, "event_size(self.mean_direction)", defs)
    assert whole_domain(probe, "event_size(self.mean_direction)") is None


def test_a_program_function_named_like_a_size_api_is_read_from_its_body(tmp_path):
    """``size`` here is the program's own function computing a float: named like ``tf.size``,
    read from its body (issue 22: the name decides nothing, and its rename changes nothing);
    the same function returning a shape item is a whole number under either name."""
    for fn in ("size", "qzx"):
        floats = f"def {fn}(x):\n        return tf.reduce_sum(x, axis=-1)"
        probe = spherical_probe(tmp_path / fn, f"{fn}(self.mean_direction)", floats)
        assert whole_domain(probe, f"{fn}(self.mean_direction)") is None, fn
        sized = f"def {fn}(x):\n        return ps.shape(x)[-1]"
        probe = spherical_probe(tmp_path / f"{fn}_sized", f"{fn}(self.mean_direction)", sized)
        dom = whole_domain(probe, f"{fn}(self.mean_direction)")
        assert dom is not None and dom["lo"] == 0.0 and f"`{fn}` returns" in dom["why"], fn
