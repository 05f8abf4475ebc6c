"""What callers pass, followed further (issue 11): calls through ``self``/``cls``, a parameter
passed on over several hops, and a class's invariants on the attributes it passes to a helper.

Each test builds a small project, lints it statically (probes sliced, never run) and asks the
verdict side about a witness written here: inside what the callers pass it stands, outside a
code-derived range it is refuted, outside a weaker one it is inconclusive.
"""

from __future__ import annotations

from test_caller_ranges import caller_domain, probes
from test_project import project

from tfnumlint.verify import domains, gates

HELPER = """\
    import tensorflow as tf


    def log_loss(s):
        return tf.reduce_mean(tf.math.log(s + 1e-7))
    """


def seen(name: str, value: float, detail: str = "log(s + 1e-07) = nan") -> dict:
    """A confirmed probe outcome that needs ``name`` = ``value``."""
    return {
        "status": "confirmed",
        "symptom": "nan-value",
        "detail": f"at {name} = {value:g}, {detail}",
        "dtype": "float32",
        "inputs": {name: value},
        "observed": {"value": "nan", "needed": [name]},
    }


def chain(outer_value: str, hops: int) -> dict[str, str]:
    """``a.py`` passes ``outer_value`` to ``f0``, which passes its parameter on through
    ``f1`` ... to ``log_loss``: ``hops`` functions between the value and the helper."""
    lines = ["import tensorflow as tf", "from helper import log_loss", "", ""]
    for i in range(hops):
        callee = f"f{i + 1}" if i + 1 < hops else "log_loss"
        lines += [f"def f{i}(s):", f"    return {callee}(s)", "", ""]
    lines += ["def select(x, w):", f"    return f0({outer_value})", ""]
    return {"helper.py": HELPER, "a.py": "\n".join(lines)}


# -- calls through self and cls ------------------------------------------------------------------


def test_a_softmax_passed_to_a_method_through_self_makes_a_strong_domain(tmp_path):
    root = project(
        tmp_path,
        {
            "pool.py": """\
                import tensorflow as tf


                class Pool(tf.keras.layers.Layer):
                    def call(self, x):
                        return self.collapse_loss(tf.nn.softmax(tf.matmul(x, self.kernel)))

                    def collapse_loss(self, s):
                        return tf.reduce_mean(tf.math.log(s + 1e-7))
                """
        },
    )
    [probe] = probes(root, "pool.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and dom["strong"] and (dom["lo"], dom["hi"]) == (0.0, 1.0)
    verdict = gates.judge(probe, seen("s", -1.0))
    assert verdict["status"] == "refuted"
    assert "every caller in the project passes a value in [0, 1]" in verdict["detail"]


def test_a_classmethod_called_through_cls_and_a_subclass_call_count_as_call_sites(tmp_path):
    root = project(
        tmp_path,
        {
            "pool.py": """\
                import tensorflow as tf


                class Base:
                    @classmethod
                    def make(cls, x):
                        return cls.loss_of(tf.nn.sigmoid(x))

                    @classmethod
                    def loss_of(cls, s):
                        return tf.reduce_mean(tf.math.log(s + 1e-7))


                class Child(Base):
                    def go(self, x):
                        return self.loss_of(tf.nn.softmax(x))
                """
        },
    )
    [probe] = probes(root, "pool.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and dom["strong"] and (dom["lo"], dom["hi"]) == (0.0, 1.0)
    assert gates.judge(probe, seen("s", -1.0))["status"] == "refuted"
    assert gates.judge(probe, seen("s", 0.0))["status"] == "confirmed"


# -- several hops ----------------------------------------------------------------------------------


def test_a_parameter_passed_on_twice_takes_the_range_of_the_outermost_call(tmp_path):
    root = project(tmp_path, chain("tf.nn.softmax(tf.matmul(x, w))", hops=2))
    [probe] = probes(root, "helper.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and dom["strong"] and (dom["lo"], dom["hi"]) == (0.0, 1.0)
    assert "a.py:" in dom["why"]  # the outermost call site names the range
    assert gates.judge(probe, seen("s", -1.0))["status"] == "refuted"


def test_a_chain_longer_than_the_project_rounds_is_followed_through_its_forwards(tmp_path):
    """Each round of project linting makes one more hop known; a call that passes its own
    parameter on is followed within a round too (``CallSite.forwards``), so six hops still
    reach the softmax."""
    root = project(tmp_path, chain("tf.nn.softmax(tf.matmul(x, w))", hops=6))
    [probe] = probes(root, "helper.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and dom["strong"] and (dom["lo"], dom["hi"]) == (0.0, 1.0)


def test_an_unbounded_outermost_argument_gives_no_domain(tmp_path):
    root = project(tmp_path, chain("tf.matmul(x, w)", hops=2))
    [probe] = probes(root, "helper.py", "TNL102")
    assert caller_domain(probe, "s") is None


def test_a_recursive_pass_through_ends_at_the_outer_callers_range(tmp_path):
    """``f`` calls itself with its own parameter: the cycle adds no value of its own (it
    passes on what ``f`` received), so the outer caller's softmax decides."""
    root = project(
        tmp_path,
        {
            "helper.py": HELPER,
            "a.py": """\
                import tensorflow as tf
                from helper import log_loss


                def f(s, depth):
                    if depth:
                        return f(s, depth - 1)
                    return log_loss(s)


                def select(x, w):
                    return f(tf.nn.softmax(tf.matmul(x, w)), 3)
                """,
        },
    )
    [probe] = probes(root, "helper.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and (dom["lo"], dom["hi"]) == (0.0, 1.0)
    assert gates.judge(probe, seen("s", -1.0))["status"] == "refuted"


# -- class invariants on the arguments of a helper ------------------------------------------------

COUNTED = """\
    import tensorflow as tf
    from tensorflow_probability.python.internal import assert_util
    from tensorflow_probability.python.internal import distribution_util


    class Counted:
        def __init__(self, total_count, rate):
            self._total_count = tf.convert_to_tensor(total_count)
            self._rate = tf.convert_to_tensor(rate)

        @property
        def total_count(self):
            return self._total_count

        def _params_list(self):
            return [self._total_count, self._rate]

        def _params_list_as_tensors(self):
            return [tf.convert_to_tensor(p) for p in self._params_list()]

        def _log_prob(self, counts):
            {READ}
            return _log_combinations(n, counts)

        def _parameter_control_dependencies(self, is_init):
            total_count = tf.convert_to_tensor(self.total_count)
            return [
                assert_util.assert_non_negative(total_count),
                distribution_util.assert_integer_form(total_count),
            ]


    def _log_combinations(n, k):
        return tf.math.lgamma(k + 1.) - tf.math.log(n + 1)
    """

READS = (
    "n, _ = self._params_list_as_tensors()",
    "n = tf.convert_to_tensor(self.total_count)",
    "n = self._total_count",
)


def counted(read: str) -> str:
    return COUNTED.replace("{READ}", read)


def test_an_asserted_integer_count_passed_to_a_helper_is_a_whole_number_domain(tmp_path):
    for i, read in enumerate(READS):
        root = project(tmp_path / str(i), {"dist.py": counted(read)})
        [probe] = probes(root, "dist.py", "TNL105")
        dom = caller_domain(probe, "n")
        assert dom is not None, read
        assert dom["strong"] and dom["integer"] and dom["lo"] == 0.0, (read, dom)
        assert "assert_non_negative" in dom["why"] and "assert_integer_form" in dom["why"]


def test_a_fractional_witness_for_an_asserted_count_is_refuted_a_whole_one_stands(tmp_path):
    root = project(tmp_path, {"dist.py": counted(READS[0])})
    [probe] = probes(root, "dist.py", "TNL105")
    verdict = gates.judge(probe, seen("n", 1e-8, "log(n + 1) = 0"))
    assert verdict["status"] == "refuted"
    assert "needs `n` = 1e-08" in verdict["detail"]
    assert "whole number >= 0" in verdict["detail"] and "`Counted`" in verdict["detail"]
    assert gates.judge(probe, seen("n", -1.0, "log(n + 1) = -inf"))["status"] == "refuted"
    assert gates.judge(probe, seen("n", 3.0, "log(n + 1) = 1.386"))["status"] == "confirmed"


def test_a_helper_also_called_with_an_unasserted_value_gets_no_integer_domain(tmp_path):
    code = (
        counted(READS[0]) + "\n\n    def elsewhere(m, k):\n        return _log_combinations(m, k)\n"
    )
    root = project(tmp_path, {"dist.py": code})
    [probe] = probes(root, "dist.py", "TNL105")
    dom = caller_domain(probe, "n")
    assert dom is None or not dom["strong"]
    assert gates.judge(probe, seen("n", 1e-8, "log(n + 1) = 0"))["status"] != "refuted"


def test_an_attribute_without_an_assertion_passes_nothing_known(tmp_path):
    code = (
        counted(READS[0])
        .replace("distribution_util.assert_integer_form(total_count),", "")
        .replace("assert_util.assert_non_negative(total_count),", "")
    )
    root = project(tmp_path, {"dist.py": code})
    [probe] = probes(root, "dist.py", "TNL105")
    assert caller_domain(probe, "n") is None


def test_a_staticmethod_passes_its_first_parameter_on(tmp_path):
    """A staticmethod's first parameter is no instance: what ``self.loss(...)`` passes for
    it reaches the helper it is passed on to."""
    root = project(
        tmp_path,
        {
            "helper.py": HELPER,
            "pool.py": """\
                import tensorflow as tf
                from helper import log_loss


                class Pool(tf.keras.layers.Layer):
                    def call(self, x):
                        return self.loss(tf.nn.softmax(x), x)

                    @staticmethod
                    def loss(s, a):
                        return log_loss(s) + tf.reduce_sum(a)
                """,
        },
    )
    [probe] = probes(root, "helper.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and dom["strong"] and (dom["lo"], dom["hi"]) == (0.0, 1.0)


SPREAD = """\
    import tensorflow as tf
    from tensorflow_probability.python.internal import assert_util
    from tensorflow_probability.python.internal import distribution_util


    class Spread:
        def __init__(self, total_count):
            self._total_count = total_count

        def _prob(self, x):
            return _pdf(self._total_count, x)

        def _parameter_control_dependencies(self, is_init):
            total_count = tf.convert_to_tensor(self._total_count)
            return [
                assert_util.assert_positive(total_count),
                distribution_util.assert_casting_closed(total_count, target_dtype=tf.int32),
            ]


    def _pdf(total_count, x):
        total_count = tf.cast(total_count, tf.float32)
        flat = tf.reshape(tf.broadcast_to(total_count, tf.shape(x)), [-1])
        reps = {REPEAT}
        return 1. / ((reps + 1.) * tf.math.exp(x))
    """


def test_a_parameter_moved_by_untraced_calls_keeps_what_its_callers_pass(tmp_path):
    """``tf.repeat(tf.reshape(tf.cast(n)))`` only moves ``n``'s values: the class's invariant
    on what it passes (positive, whole: a round trip through int32) is the input's domain."""
    root = project(tmp_path, {"dist.py": SPREAD.replace("{REPEAT}", "tf.repeat(flat, 3)")})
    [probe] = probes(root, "dist.py", "TNL206")
    [dom] = [d for d in probe["domains"] or [] if d["name"] == "reps"]
    assert dom["strong"] and dom["integer"] and dom["lo"] == 1.0  # positive and whole
    assert "`reps` is `total_count` passed through `repeat`" in dom["why"]
    assert "assert_casting_closed" in dom["why"] and "assert_positive" in dom["why"]
    assert domains.broken(probe, {"reps": 0.0}) and domains.broken(probe, {"reps": 0.5})
    assert not domains.broken(probe, {"reps": 4.0})


def test_a_call_that_computes_new_values_from_the_parameter_gives_no_domain(tmp_path):
    root = project(tmp_path, {"dist.py": SPREAD.replace("{REPEAT}", "tf.math.cumsum(flat) - 9.")})
    [probe] = probes(root, "dist.py", "TNL206")
    assert not any(d.get("callers") for d in probe.get("domains") or [])


BOX = """\
    import tensorflow as tf
    from tensorflow_probability.python.internal import assert_util


    class Box:
        def __init__(self, low, high):
            self._low = low
            self._high = high

        def _prob(self, x):
            return _pdf(self._low, self._high, x)

        def _parameter_control_dependencies(self, is_init):
            return [assert_util.assert_less(self.low, self.high)]


    def _pdf(low, high, x):
        low = tf.convert_to_tensor(low)
        return x / (high - low)
    """


def test_attributes_the_class_asserts_ordered_stay_ordered_in_the_helper(tmp_path):
    root = project(tmp_path, {"dist.py": BOX})
    [probe] = probes(root, "dist.py", "TNL201")
    [rel] = [r for r in probe["relations"] or [] if r["strong"]]
    assert (rel["a"], rel["op"], rel["b"]) == ("low", "<", "high")
    assert "every caller" in rel["why"] and "assert_less" in rel["why"]
    assert domains.broken(probe, {"low": 1.0, "high": 1.0, "x": 1.0})
    assert not domains.broken(probe, {"low": 0.0, "high": 1.0, "x": 1.0})


def test_a_caller_passing_unrelated_values_drops_the_relation(tmp_path):
    code = BOX + "\n\n    def other(a, b, x):\n        return _pdf(b, a, x)\n"
    root = project(tmp_path, {"dist.py": code})
    [probe] = probes(root, "dist.py", "TNL201")
    assert not [r for r in probe.get("relations") or [] if r["strong"]]
