"""A plain method of the finding's own class, called on ``self``, is inlined by the slicer as a
module helper is: a value it computes stays tied to the values it is computed from, so a
witness is a state of the sources, not a free value for an intermediate (issue 22; review round
16: TFP's Geometric ``logits, probs = self._logits_and_probs_no_checks()`` and NegativeBinomial
``self._mean(logits=logits)``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

from test_inlined_helpers import sliced  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_reachability import one_probe  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402

HEADER = "import tensorflow as tf\n\n\n"


def probe_of(src: str, rule: str = "TNL201") -> dict:
    return sliced(src, rule)


def names(probe: dict) -> list[str]:
    return sorted(i["name"] for i in probe["inputs"])


def tied(probe: dict) -> set[frozenset[str]]:
    """The pairs of inputs the probe keeps equal."""
    return {frozenset((r["a"], r["b"])) for r in probe.get("relations", []) if r["op"] == "=="}


GEOMETRIC = (
    HEADER
    + """class Geometric:
    def __init__(self, logits):
        self._logits = logits

    def _logits_and_probs(self):
        logits = tf.convert_to_tensor(self._logits)
        return logits, tf.sigmoid(logits)

    def _variance(self):
        logits, probs = self._logits_and_probs()
        return tf.exp(-logits) / probs
"""
)


def test_a_tuple_a_method_returns_is_unpacked_as_the_values_it_computes():
    probe = one_probe(GEOMETRIC, "TNL201")
    assert "probs" not in names(probe)  # sigmoid(logits), not a free input
    # the source, and the sigmoid's logit cut of the same value, kept equal to it
    assert names(probe) == ["logits", "logits (2)"]
    assert frozenset(("logits", "logits (2)")) in tied(probe)
    out = probing.verify(probe, 1e6)
    assert out["status"] != "confirmed", out
    seen = out["inputs"]
    assert "probs" not in seen and seen["logits"] == seen["logits (2)"], out
    # exp(-logits) / sigmoid(logits) overflows only past the float32 exp range
    assert seen["logits"] < -40, out


NEGATIVE_BINOMIAL = (
    HEADER
    + """class NegativeBinomial:
    def __init__(self, total_count, logits):
        self.total_count = total_count
        self._logits = logits

    def _logits_parameter(self):
        if self._logits is None:
            return tf.math.log(self._probs) - tf.math.log1p(-self._probs)
        return tf.identity(self._logits)

    def _mean(self, logits=None):
        logits = self._logits_parameter() if logits is None else logits
        return self.total_count * tf.exp(logits)

    def _variance(self):
        logits = self._logits_parameter()
        return self._mean(logits=logits) / tf.sigmoid(-logits)
"""
)


def test_a_method_called_with_a_keyword_is_inlined_with_its_argument():
    """``self._mean(logits=logits)``: the parameter is the caller's ``logits`` (the method's
    ``logits if logits is None else ...`` takes the argument, a value the caller computes),
    and the sigmoid's logit ``-logits`` is cut at ``logits``, kept equal to it."""
    probe = one_probe(NEGATIVE_BINOMIAL, "TNL201")
    assert names(probe) == ["logits", "logits (2)", "total_count"]
    assert frozenset(("logits", "logits (2)")) in tied(probe)
    out = probing.verify(probe, 1e6)
    seen = out["inputs"]
    assert seen["logits"] == seen["logits (2)"], out  # no witness sets them apart


@pytest.mark.parametrize("init", ["self.scale = scale", "self.scale = make_scale(scale)"])
def test_an_attribute_read_in_the_method_and_its_caller_is_one_input(init: str):
    src = HEADER + (
        "class Scaled:\n"
        "    def __init__(self, scale):\n"
        f"        {init}\n\n"
        "    def _scaled(self, x):\n"
        "        return x * self.scale\n\n"
        "    def log_rest(self, x):\n"
        "        return tf.identity(tf.math.log(self._scaled(x) - x * self.scale + 1.0))\n"
    )
    probe = probe_of(src, "TNL101")
    assert len(names(probe)) == 2, names(probe)  # x and the one scale
    assert probing.verify(probe, 1e6)["status"] != "confirmed"  # log(1)


BRANCHY = (
    HEADER
    + """class Picks:
    def _pick(self, x):
        if x > 0:
            return x
        return 1.0

    def _sq(self, x):
        return x * x

    def f(self, y):
        return tf.identity(1.0 / (self._pick(y) + self._sq(y)))
"""
)


def test_a_method_with_a_branch_is_not_inlined_but_a_straight_line_one_is():
    probe = probe_of(BRANCHY)
    assert names(probe) == ["self._pick(y)", "y"]  # _pick stays one untraced value


OTHER = (
    HEADER
    + """class Pair:
    def _sq(self, x):
        return x * x

    def f(self, other, y):
        return tf.identity(1.0 / (self._sq(y) + other._sq(y) + 1.0))
"""
)


def test_a_method_called_on_another_object_is_not_inlined():
    """``other._sq`` may be another class's method (or a subclass's): only ``self``'s own
    class is read."""
    probe = probe_of(OTHER)
    assert names(probe) == ["other._sq(y)", "y"]


INHERITED = (
    HEADER
    + """class Base:
    def _sq(self, x):
        return x * x


class Child(Base):
    def _shift(self, x):
        return x - 2.0

    def f(self, y):
        return tf.identity(1.0 / (self._sq(y) + self._shift(y)))
"""
)


def test_an_inherited_method_is_not_inlined():
    probe = probe_of(INHERITED)
    assert names(probe) == ["self._sq(y)", "y"]  # only Child's own `_shift` is read


def test_a_tuple_a_module_helper_returns_is_unpacked_too():
    src = HEADER + (
        "def _split(x):\n"
        "    return x, x - 2.0\n\n\n"
        "def f(y):\n"
        "    a, b = _split(y)\n"
        "    return tf.identity(1.0 / (a * a + b * b))\n"
    )
    probe = probe_of(src)
    assert names(probe) == ["y"]  # neither item is a free input
    assert probing.verify(probe, 1e6)["status"] == "refuted"  # y^2 + (y-2)^2 > 0
