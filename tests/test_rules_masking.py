"""TNL303 softmax-of-masked-row: what makes a -inf fill, a mask, and a row that keeps an entry."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import func, hits, lint

PARAMS = "s, m"


@pytest.mark.parametrize(
    "body",
    [
        'return tf.nn.softmax(tf.where(m, s, float("-inf")), axis=-1)',
        "return tf.math.softmax(tf.where(m, s, -np.inf))",
        "return tf.nn.softmax(tf.where(m, s, np.NINF))",
        "return tf.nn.softmax(tf.where(m, s, -math.inf))",
        "return tf.nn.softmax(tf.where(m, s, tf.constant(-np.inf)))",
        "return tf.nn.softmax(tf.where(m, s, tf.fill(tf.shape(s), -np.inf)))",
        "return tf.nn.softmax(tf.where(m, s, tf.ones_like(s) * -np.inf))",
        'return tf.nn.softmax(tf.where(m, float("-inf"), s))',  # the fill on either side
        "x = tf.where(m, s, -np.inf)\nx = tf.reshape(x, [-1, 8])\nreturn tf.nn.softmax(x / 0.5)",
        'return tf.nn.softmax(s + tf.where(m, 0.0, float("-inf")))',  # a -inf bias
        "return tf.keras.activations.softmax(tf.where(m, s, -np.inf))",
        "return tf.keras.layers.Softmax(axis=-1)(tf.where(m, s, -np.inf))",
        'return tf.keras.layers.Activation("softmax")(tf.where(m, s, -np.inf))',
        "x = tf.where(m, s, -np.inf)\nreturn x - tf.reduce_max(x, axis=-1, keepdims=True)",
        # a padding mask combined with a causal one can still empty a row
        "n = tf.shape(s)[-1]\ncausal = tf.linalg.band_part(tf.ones((n, n)), -1, 0)\n"
        "return tf.nn.softmax(tf.where(tf.logical_and(causal > 0, m), s, -np.inf))",
        # the diagonal of a causal mask filled: its last row is all -inf
        "n = tf.shape(s)[-1]\ncausal = tf.linalg.band_part(tf.ones((n, n)), -1, 0)\n"
        "return tf.nn.softmax(tf.where(causal > 0, -np.inf, s))",
    ],
)
def test_fires_on_a_minus_inf_fill_under_a_softmax(body):
    src = "import math\nimport numpy as np\n" + func(body, PARAMS)
    [f] = hits("TNL303", src)
    assert "-inf" in f.message and "NaN" in f.message


def test_a_module_constant_fill_and_a_layer_attribute():
    src = """\
        import tensorflow as tf

        NEG_INF = float("-inf")


        class Attend(tf.keras.layers.Layer):
            def __init__(self):
                super().__init__()
                self.softmax = tf.keras.layers.Softmax(axis=-1)

            def call(self, s, m):
                return self.softmax(tf.where(m, s, NEG_INF))
        """
    [f] = hits("TNL303", src)
    assert f.line == 12 and "softmax layer" in f.message


def test_the_additive_form_is_nan_in_every_row():
    body = "return tf.nn.softmax(s + (1.0 - m) * -np.inf)"
    [f] = hits("TNL303", "import numpy as np\n" + func(body, PARAMS))
    assert "0 * -inf = NaN" in f.message and "every row" in f.message


@pytest.mark.parametrize(
    "body",
    [
        "return tf.nn.softmax(tf.where(m, s, -1e9))",  # finite fills
        "return tf.nn.softmax(tf.where(m, s, tf.float32.min))",
        "return tf.nn.softmax(s + (1.0 - m) * -1e9)",
        "return tf.nn.softmax(tf.where(m, s, np.inf))",  # +inf is no mask fill
        "return tf.nn.softmax(tf.maximum(tf.where(m, s, -np.inf), -1e9))",  # clamped back
        "return tf.keras.layers.Softmax()(s, m)",  # Keras applies its own finite fill
        # a Dense layer's softmax reads its matmul, not the filled scores
        "return tf.keras.layers.Dense(4, activation='softmax')(tf.where(m, s, -np.inf))",
        "return tf.reduce_max(tf.where(m, s, -np.inf), axis=-1)",  # max pooling: no softmax
    ],
)
def test_silent_without_a_minus_inf_fill_under_a_softmax(body):
    assert hits("TNL303", "import numpy as np\n" + func(body, PARAMS)) == []


CAUSAL = "n = tf.shape(s)[-1]\n"


@pytest.mark.parametrize(
    "body",
    [
        "causal = tf.linalg.band_part(tf.ones((n, n)), -1, 0)\n"
        "return tf.nn.softmax(tf.where(causal > 0, s, -np.inf))",
        "causal = tf.cast(tf.linalg.band_part(tf.ones((n, n)), -1, 0), tf.bool)\n"
        "return tf.nn.softmax(tf.where(causal, s, -np.inf))",
        "causal = tf.linalg.band_part(tf.ones((n, n)), -1, 0)\n"
        "return tf.nn.softmax(tf.where(tf.equal(causal, 0), -np.inf, s))",
        "future = np.triu(np.ones((8, 8)), k=1)\n"
        "return tf.nn.softmax(tf.where(future == 1, -np.inf, s))",
        "keep = 1.0 - np.triu(np.ones((8, 8)), k=1)\n"
        "return tf.nn.softmax(tf.where(keep > 0, s, -np.inf))",
        "i = tf.range(n)\nreturn tf.nn.softmax(tf.where(i[:, None] >= i[None, :], s, -np.inf))",
        # a padding mask or-ed with the diagonal still keeps it
        "causal = tf.linalg.band_part(tf.ones((n, n)), -1, 0) > 0\n"
        "return tf.nn.softmax(tf.where(causal | m, s, -np.inf))",
    ],
)
def test_silent_when_the_mask_keeps_the_diagonal(body):
    src = "import numpy as np\n" + func(CAUSAL + body, PARAMS)
    assert hits("TNL303", src) == []


@pytest.mark.parametrize(
    "body",
    [
        "p = tf.nn.softmax(tf.where(m, s, -np.inf))\n"
        "return tf.where(tf.reduce_any(m, -1, keepdims=True), p, 0.0)",
        "p = tf.nn.softmax(tf.where(m, s, -np.inf))\n"
        "any_kept = tf.reduce_any(m, axis=-1, keepdims=True)\n"
        "return tf.where(any_kept, p, tf.zeros_like(p))",
        "return tf.where(tf.reduce_any(m, -1, keepdims=True), "
        "tf.nn.softmax(tf.where(m, s, -np.inf)), 0.0)",
        "p = tf.nn.softmax(tf.where(m, s, -np.inf))\n"
        "return tf.where(tf.math.is_nan(p), tf.zeros_like(p), p)",
        "p = tf.nn.softmax(tf.where(m, s, -np.inf))\n"
        "return tf.math.multiply_no_nan(p, tf.cast(m, tf.float32))",
        # the rows refilled before the softmax, by a select that reads the mask
        "x = tf.where(m, s, -np.inf)\n"
        "x = tf.where(tf.reduce_any(m, -1, keepdims=True), x, tf.zeros_like(x))\n"
        "return tf.nn.softmax(x)",
    ],
)
def test_silent_when_the_empty_rows_are_replaced(body):
    assert hits("TNL303", "import numpy as np\n" + func(body, PARAMS)) == []


def test_a_guard_on_another_mask_does_not_count():
    body = (
        "p = tf.nn.softmax(tf.where(m, s, -np.inf))\n"
        "return tf.where(tf.reduce_any(other, -1, keepdims=True), p, 0.0)"
    )
    assert len(hits("TNL303", "import numpy as np\n" + func(body, "s, m, other"))) == 1


def test_names_do_not_decide_a_fill():
    """A name that says 'inf' bound to a finite number is no fill; one that says nothing,
    bound to -inf, is."""
    finite = "neg_inf = -1e9\nreturn tf.nn.softmax(tf.where(m, s, neg_inf))"
    assert hits("TNL303", func(finite, PARAMS)) == []
    plain = 'c = float("-inf")\nreturn tf.nn.softmax(tf.where(m, s, c))'
    assert len(hits("TNL303", func(plain, PARAMS))) == 1


def test_float16_fills_are_divided_with_tnl404():
    """-1e9 in float16 is TNL404's (it rounds to -inf there); -inf in any dtype is TNL303's,
    whose advice is then a fill float16 holds."""
    src = textwrap.dedent(
        """\
        import numpy as np
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")


        def finite(s, m):
            return tf.nn.softmax(s + (1.0 - m) * -1e9)


        def infinite(s, m):
            return tf.nn.softmax(tf.where(m, s, -np.inf))
        """
    )
    found = {(f.rule, f.line) for f in lint(src, select=["TNL303", "TNL404"])}
    assert found == {("TNL404", 8), ("TNL303", 12)}
    [f] = hits("TNL303", src)
    assert "-1e4" in f.message


# ---------------------------------------------------------------- what the verifier is given


def _target(src: str) -> str:
    from test_reachability import one_probe

    return json.dumps(one_probe(src, "TNL303")["target"])


@pytest.mark.parametrize(
    "fill", ["np.NINF", "tf.fill(tf.shape(s), -np.inf)", "np.full((4, 8), -np.inf)", "NEG"]
)
def test_the_probe_keeps_the_fill_a_minus_inf_constant(fill):
    """A fill the slicer cut as a free input would be set to 0 or 100 by probing: no NaN, and
    a real hazard refuted."""
    src = (
        'import numpy as np\nimport tensorflow as tf\n\nNEG = float("-inf")\n\n\n'
        f"def f(s, m):\n    return tf.nn.softmax(tf.where(m, s, {fill}))\n"
    )
    target = _target(src)
    assert '{"k": "const", "v": "-inf"}' in target
    assert '"k": "input", "name": "m"' in target and '"k": "input", "name": "s"' in target


def test_the_probe_keeps_what_computes_the_softmax_input():
    """Other rules cut a softmax at a free logit; this rule's hazard is that logit's fill."""
    src = 'import tensorflow as tf\n\n\ndef f(s, m):\n    x = tf.where(m, s, float("-inf"))\n'
    src += "    return tf.nn.softmax(x)\n"
    assert '"op": "where"' in _target(src)


def test_a_softmax_layer_is_sliced_as_the_softmax_it_computes():
    src = """\
        import numpy as np
        import tensorflow as tf


        class Attend(tf.keras.layers.Layer):
            def __init__(self):
                super().__init__()
                self.softmax = tf.keras.layers.Softmax(axis=1)

            def call(self, s, m):
                return self.softmax(tf.where(m, s, -np.inf))
        """
    target = json.loads(_target(textwrap.dedent(src)))
    assert (target["op"], target["kw"]["axis"]) == ("softmax", {"k": "const", "v": 1.0})


def test_a_mask_read_only_as_a_condition_holds_one_value_across_a_row():
    """Probe rows are [v, 0] (0 a reference logit): a mask given that 0 could never keep (or
    mask) a whole row.  Read only as a where's condition it is held uniform, like a scale."""
    from test_reachability import one_probe

    src = "import numpy as np\n" + func("return tf.nn.softmax(tf.where(m, -np.inf, s))", PARAMS)
    rows = {i["name"]: i.get("row") for i in one_probe(src, "TNL303")["inputs"]}
    assert rows == {"m": "scale", "s": None}
