"""A project helper's return range, read from its body (review round 17, #11).

A call the slice does not enter is a free probe input; when it calls a function of the project
whose body the index reads, its value lies in the interval the helper's return expression
evaluates to (an affine map of `erf` is in [1e-3, 0.999]), wherever the helper lives.  Only the
code decides: a helper's name gives no range.
"""

from __future__ import annotations

import textwrap

from conftest import run_json
from test_caller_ranges import probes
from test_project import project

from tfnumlint.analysis.slicing.contract import walk
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.ruledocs import all_docs
from tfnumlint.source import Source

# a probit squashed into [jitter, 1 - jitter], in a module of its own
SQUASH = """\
    import numpy as np
    import tensorflow as tf


    def {name}(x):
        jitter = 1e-3
        return {body}
    """
PROBIT = "0.5 * (1.0 + tf.math.erf(x / np.sqrt(2.0))) * (1 - 2 * jitter) + jitter"

# an ordinal likelihood's log-probability of a bin: the difference of the helper at two edges
ORDINAL = """\
    import tensorflow as tf

    from .utils import {name}


    class Ordinal:
        def __init__(self, edges, sigma):
            self.edges = edges
            self.sigma = sigma

        def log_prob(self, f, y):
            left = tf.gather(self.edges, y)
            right = tf.gather(self.edges, y + 1)
            return tf.math.log(
                {name}(left - f / self.sigma) - {name}(right - f / self.sigma) + 1e-6
            )
    """


def ordinal_project(tmp_path, name: str = "squash", body: str = PROBIT):
    return project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": SQUASH.format(name=name, body=body),
            "pkg/lik.py": ORDINAL.format(name=name),
        },
    )


def helper_inputs(root, name: str = "squash") -> list[dict]:
    [probe] = probes(root, "pkg/lik.py", "TNL102")
    return [s for s in probe["inputs"] if s["name"].startswith(f"{name}(")]


def test_a_helper_of_another_module_gives_its_calls_the_range_of_its_return(tmp_path):
    specs = helper_inputs(ordinal_project(tmp_path))
    assert len(specs) == 2
    for spec in specs:
        assert (spec["lo"], spec["hi"]) == (0.001, 0.999), spec


def test_the_helper_name_gives_no_range(tmp_path):
    """Named like GPflow's probit, but its body is unbounded: no range (issue 22)."""
    root = ordinal_project(tmp_path, "inv_probit", "x * 2.0 + jitter")
    for spec in helper_inputs(root, "inv_probit"):
        assert (spec["lo"], spec["hi"]) == ("-inf", "inf"), spec


def test_the_witness_keeps_the_helper_calls_inside_its_range(tmp_path):
    report = run_json("--show-refuted", "--select", "TNL102", ".", cwd=ordinal_project(tmp_path))
    [f] = [f for f in report["findings"] if f["path"] == "pkg/lik.py"]
    seen = f["verification"].get("inputs") or {}
    assert "= 1e-08" not in f["verification"]["detail"], f["verification"]
    for name, value in seen.items():
        if name.startswith("squash("):
            # the probe runs in float32, where 0.999 rounds to 0.99900001
            assert 1e-3 - 1e-7 <= value <= 0.999 + 1e-7, f["verification"]


def test_erf_is_traced_with_its_range():
    """`erf` is an op: an inlined helper's `erf` is traced, not cut into a free input."""
    text = textwrap.dedent(
        """\
        import numpy as np
        import tensorflow as tf


        def probit(x):
            return 0.5 * (1.0 + tf.math.erf(x / np.sqrt(2.0)))


        def log_bin(a, b):
            return tf.math.log(probit(a) - probit(b))
        """
    )
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    result = lint_source(Source("m.py", text, text.encode()), options)
    [probe] = [f.probe for f in result.findings if f.rule == "TNL104"]
    assert [s["name"] for s in probe["inputs"]] == ["a", "b"]
    assert [n.get("op") for n in walk(probe["target"]) if n.get("k") == "call"].count("erf") == 2
