"""A parameter's range from its callers, and witnesses that respect it (issue 11).

A helper's parameter has the range of what the project's call sites pass (a softmax output
in [0, 1], a ReLU output >= 0).  The static side turns it into a domain of the probe input
(strong when the range is the producer's own); the verdict side does not confirm a witness
outside it: refuted when strong, inconclusive otherwise.
"""

from __future__ import annotations

from pathlib import Path

from conftest import run_json
from test_project import project

from tfnumlint.config import load_config, resolve_codes
from tfnumlint.discovery import discover
from tfnumlint.engine import LintOptions
from tfnumlint.incremental import Job, analyse_project
from tfnumlint.verify import domains, gates


def probes(root: Path, path: str, rule: str) -> list[dict]:
    """The probe programs of ``rule``'s findings in ``path``, linted as one project."""
    config = load_config(None, root)
    codes = resolve_codes(config, [rule], None)
    candidates = discover(["."], root, config.exclude, config.extend_exclude, config.root)
    job = Job(LintOptions(codes=codes, slice_probes=True), config.fingerprint(codes), None)
    out = []
    for result in analyse_project(candidates, job, 1):
        for f in result.findings:
            if f.path == path and f.rule == rule and f.probe is not None:
                out.append(f.probe)
    return out


def caller_domain(probe: dict, name: str) -> dict | None:
    return next(
        (d for d in probe.get("domains") or [] if d["name"] == name and d.get("callers")), None
    )


# One module: a layer whose method passes a masked softmax assignment to a static loss helper
# through `self.` (the shape of a graph-pooling layer's auxiliary entropy loss).
POOL = """\
    import tensorflow as tf
    from tensorflow.keras import activations
    from tensorflow.keras import backend as K


    class Pool(tf.keras.layers.Layer):
        def select(self, x, mask=None):
            s = activations.softmax(tf.matmul(x, self.kernel), axis=-1)
            if mask is not None:
                s *= mask[0]
            self.add_loss(self.entropy_loss(s))
            return s

        @staticmethod
        def entropy_loss(s):
            entr = -tf.reduce_sum(tf.multiply(s, K.log(s + K.epsilon())), axis=-1)
            return K.mean(entr, axis=-1)
    """

HELPER = """\
    import tensorflow as tf


    def log_loss(s):
        return tf.reduce_mean(tf.math.log(s + 1e-7))
    """


def caller(name: str, value: str) -> str:
    return f"""\
        import tensorflow as tf
        from helper import log_loss


        def {name}(x, w):
            s = {value}
            return log_loss(s)
        """


def test_a_masked_softmax_passed_through_self_to_a_staticmethod_keeps_its_range(tmp_path):
    root = project(tmp_path, {"pool.py": POOL})
    [probe] = probes(root, "pool.py", "TNL102")
    [spec] = [s for s in probe["inputs"] if s["name"] == "s"]
    assert (spec["lo"], spec["hi"]) == (0.0, 1.0)  # softmax * mask[0]: still in [0, 1]
    dom = caller_domain(probe, "s")
    assert dom is not None and (dom["lo"], dom["hi"]) == (0.0, 1.0)
    assert not dom["strong"]  # the mask's range is a name convention


def test_the_masked_softmax_entropy_is_not_confirmed(tmp_path):
    report = run_json(
        "--show-refuted", "--select", "TNL102", ".", cwd=project(tmp_path, {"pool.py": POOL})
    )
    [f] = [f for f in report["findings"] if f["path"] == "pool.py"]
    v = f["verification"]
    assert v["status"] != "confirmed", v
    assert -1.0 not in (v.get("inputs") or {}).values()


def test_a_softmax_caller_makes_a_strong_domain_in_a_two_module_project(tmp_path):
    root = project(
        tmp_path,
        {"helper.py": HELPER, "a.py": caller("select", "tf.nn.softmax(tf.matmul(x, w))")},
    )
    [probe] = probes(root, "helper.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and dom["strong"]
    assert (dom["lo"], dom["hi"]) == (0.0, 1.0)
    assert "every caller" in dom["why"] and "softmax" in dom["why"]


def test_a_witness_outside_the_callers_softmax_range_is_refuted_with_the_reason(tmp_path):
    root = project(
        tmp_path,
        {"helper.py": HELPER, "a.py": caller("select", "tf.nn.softmax(tf.matmul(x, w))")},
    )
    [probe] = probes(root, "helper.py", "TNL102")
    seen = {
        "status": "confirmed",
        "symptom": "nan-value",
        "detail": "at s = -1, log(s + 1e-07) = nan",
        "dtype": "float32",
        "inputs": {"s": -1.0},
        "observed": {"value": "nan", "needed": ["s"]},
    }
    verdict = gates.judge(probe, seen)
    assert verdict["status"] == "refuted"
    assert "needs `s` = -1, but every caller in the project passes" in verdict["detail"]
    assert "[0, 1]" in verdict["detail"]


def test_a_witness_inside_the_callers_range_still_confirms(tmp_path):
    root = project(
        tmp_path,
        {"helper.py": HELPER, "a.py": caller("select", "tf.nn.softmax(tf.matmul(x, w))")},
    )
    [probe] = probes(root, "helper.py", "TNL102")
    inside = {"s": 0.0}
    assert not domains.broken(probe, inside)
    assert not domains.unreachable_inputs(probe, inside, ["s"], "float32")
    # and the verifier finds such a witness: log(s + eps) alone dies where the softmax saturates
    report = run_json("--select", "TNL102", ".", cwd=root)
    [f] = [f for f in report["findings"] if f["path"] == "helper.py"]
    assert f["verification"]["status"] == "confirmed", f["verification"]


def test_the_gate_rejects_an_out_of_range_value_of_a_driven_parameter(tmp_path):
    root = project(
        tmp_path,
        {"helper.py": HELPER, "a.py": caller("select", "tf.nn.relu(tf.matmul(x, w))")},
    )
    [probe] = probes(root, "helper.py", "TNL102")
    [spec] = [s for s in probe["inputs"] if s["name"] == "s"]
    assert spec["drive"] == "driven"  # its callers pass a model activation
    [reason] = domains.unreachable_inputs(probe, {"s": -1.0}, ["s"], "float32")
    assert "needs `s` = -1" in reason and ">= 0" in reason


def test_mixed_callers_one_unbounded_give_no_domain(tmp_path):
    root = project(
        tmp_path,
        {
            "helper.py": HELPER,
            "a.py": caller("select", "tf.nn.softmax(tf.matmul(x, w))"),
            "b.py": caller("raw", "tf.matmul(x, w)"),
        },
    )
    [probe] = probes(root, "helper.py", "TNL102")
    assert caller_domain(probe, "s") is None
    [spec] = [s for s in probe["inputs"] if s["name"] == "s"]
    assert spec["lo"] == "-inf"
    report = run_json("--select", "TNL102", ".", cwd=root)
    [f] = [f for f in report["findings"] if f["path"] == "helper.py"]
    assert f["verification"]["status"] == "confirmed", f["verification"]


def test_a_caller_passing_an_unknown_value_makes_the_range_weak(tmp_path):
    """`b.py` passes a bare parameter (nothing known): the softmax range holds for the other
    caller only, so a witness outside it is inconclusive, not refuted."""
    root = project(
        tmp_path,
        {
            "helper.py": HELPER,
            "a.py": caller("select", "tf.nn.softmax(tf.matmul(x, w))"),
            "b.py": caller("passthrough", "x"),
        },
    )
    [probe] = probes(root, "helper.py", "TNL102")
    dom = caller_domain(probe, "s")
    assert dom is not None and not dom["strong"]
    assert "every caller" not in dom["why"]
    seen = {
        "status": "confirmed",
        "symptom": "nan-value",
        "detail": "at s = -1, log(s + 1e-07) = nan",
        "dtype": "float32",
        "inputs": {"s": -1.0},
        "observed": {"value": "nan", "needed": ["s"]},
    }
    assert gates.judge(probe, seen)["status"] == "inconclusive"


def test_a_sequential_built_by_list_concatenation_has_its_last_layers_activation(tmp_path):
    root = project(
        tmp_path,
        {
            "pool.py": """\
                import tensorflow as tf
                from tensorflow.keras import Sequential
                from tensorflow.keras.layers import Dense


                class Pool(tf.keras.layers.Layer):
                    def build(self, input_shape):
                        self.mlp = Sequential(
                            [Dense(c, "relu") for c in self.hidden] + [Dense(self.k, "softmax")]
                        )

                    def select(self, x):
                        s = self.mlp(x)
                        return self.loss_of(s)

                    def loss_of(self, s):
                        return tf.reduce_mean(tf.math.log(s + 1e-7))
                """
        },
    )
    [probe] = probes(root, "pool.py", "TNL102")
    [spec] = [s for s in probe["inputs"] if s["name"] == "s"]
    assert spec["producer"] == "softmax" and (spec["lo"], spec["hi"]) == (0.0, 1.0)
