"""Declared parameter transforms (analysis/invariants.transform_bound): an attribute assigned
``Parameter(x, transform=positive())`` is > 0 in every instance, and a parameter annotated with
the class (``kernel: SqExp``) reads it with that bound as a code-derived domain."""

from __future__ import annotations

import math
import textwrap

from conftest import run_json
from test_caller_ranges import probes
from test_project import project

from tfnumlint.verify import gates

PARAMS = """\
    def Parameter(value, transform=None):
        return value


    def positive(lower=None):
        return None
    """

KERNELS = """\
    import tensorflow as tf
    import tensorflow_probability as tfp
    from params import Parameter, positive


    class Stationary:
        def __init__(self, lengthscales=1.0, variance=1.0, period=1.0):
            self.lengthscales = Parameter(lengthscales, transform=positive())
            self.variance = Parameter(variance, transform=positive(lower=1e-6))
            self.period = Parameter(period, transform=tfp.bijectors.Softplus())


    class SqExp(Stationary):
        pass


    class Frozen(Stationary):
        def freeze(self):
            self.lengthscales = Parameter(self.lengthscales.numpy())
    """


def det(name: str, annotation: str, attr: str = "lengthscales") -> str:
    return f"""\
        def {name}(kernel: {annotation}, x):
            squared = kernel.{attr} ** 2
            return tf.reduce_prod(0.5 * squared) ** 0.5 + x
        """


def use(*functions: str) -> str:
    head = "import tensorflow as tf\nfrom typing import Optional\n"
    head += "from kernels import Frozen, SqExp, Stationary\n\n\n"
    return head + "\n\n".join(textwrap.dedent(f) for f in functions)


def domain(tmp_path, *functions: str, attr: str = "lengthscales") -> dict | None:
    root = project(tmp_path, {"params.py": PARAMS, "kernels.py": KERNELS})
    (root / "use.py").write_text(use(*functions), encoding="utf-8")
    [probe] = probes(root, "use.py", "TNL204")
    name = f"kernel.{attr}"
    return next((d for d in probe.get("domains") or [] if d["name"] == name), None)


def test_a_positive_transform_in_a_base_class_bounds_an_annotated_parameters_attribute(tmp_path):
    dom = domain(tmp_path, det("f", "SqExp"))
    assert dom is not None and dom["strong"]
    assert (dom["lo"], dom["lo_open"], float(dom["hi"])) == (0.0, True, math.inf)
    assert "positive()" in dom["why"] and "`Stationary`" in dom["why"]


def test_a_lower_bound_and_a_softplus_transform_give_their_ranges(tmp_path):
    dom = domain(tmp_path, det("f", "SqExp", "variance"), attr="variance")
    assert dom is not None and dom["lo"] == 1e-6 and dom["lo_open"]
    dom = domain(tmp_path, det("g", "SqExp", "period"), attr="period")
    assert dom is not None and dom["lo"] == 0.0 and "Softplus" in dom["why"]


def test_optional_and_string_annotations_name_the_class(tmp_path):
    dom = domain(tmp_path, det("f", 'Optional["SqExp"]'))
    assert dom is not None and dom["lo"] == 0.0


def test_a_subclass_that_reassigns_without_the_transform_has_no_bound(tmp_path):
    assert domain(tmp_path, det("f", "Frozen")) is None


def test_a_base_class_annotation_admits_a_subclass_that_drops_the_transform(tmp_path):
    assert domain(tmp_path, det("f", "Stationary")) is None


def test_an_unannotated_parameter_has_no_bound(tmp_path):
    assert domain(tmp_path, det("f", "SqExp").replace(": SqExp", "")) is None


def test_a_witness_at_zero_lengthscale_is_refuted_naming_the_transform(tmp_path):
    root = project(tmp_path, {"params.py": PARAMS, "kernels.py": KERNELS})
    (root / "use.py").write_text(use(det("f", "SqExp")), encoding="utf-8")
    [probe] = probes(root, "use.py", "TNL204")
    seen = {
        "status": "confirmed",
        "symptom": "nan-gradient",
        "detail": "at kernel.lengthscales = 0, the gradient is nan",
        "dtype": "float32",
        "inputs": {"kernel.lengthscales": 0.0, "x": 1.0},
        "observed": {"value": "nan", "needed": ["kernel.lengthscales"]},
    }
    verdict = gates.judge(probe, seen)
    assert verdict["status"] == "refuted"
    assert "positive()" in verdict["detail"]


OWN = """\
    import tensorflow as tf
    from params import Parameter, positive


    class Kernel:
        def __init__(self, lengthscales=1.0):
            self.lengthscales = Parameter(lengthscales, transform=positive())

        def det(self, x):
            squared = self.lengthscales ** 2
            return tf.reduce_prod(0.5 * squared) ** 0.5 + x
    """

REASSIGN = """\

        def freeze(self):
            self.lengthscales = Parameter(self.lengthscales.numpy())
    """


def own_domain(tmp_path, code: str) -> dict | None:
    root = project(tmp_path, {"params.py": PARAMS, "own.py": code})
    [probe] = probes(root, "own.py", "TNL204")
    # the slicer labels the attribute by what `__init__` assigned it
    [name] = [s["name"] for s in probe["inputs"] if "lengthscales" in s["name"]]
    return next((d for d in probe.get("domains") or [] if d["name"] == name), None)


def test_the_declared_transform_bounds_the_attribute_in_the_classs_own_methods(tmp_path):
    dom = own_domain(tmp_path, OWN)
    assert dom is not None and dom["strong"] and dom["lo"] == 0.0 and dom["lo_open"]


def test_a_method_reassigning_without_the_transform_leaves_the_attribute_unbounded(tmp_path):
    assert own_domain(tmp_path, OWN + REASSIGN) is None


def test_a_local_alias_of_the_annotated_parameter_keeps_the_bound(tmp_path):
    aliased = """\
        def f(kern1: SqExp, x):
            kernel = kern1
            squared = kernel.lengthscales ** 2
            return tf.reduce_prod(0.5 * squared) ** 0.5 + x
        """
    dom = domain(tmp_path, aliased)
    assert dom is not None and dom["lo"] == 0.0 and dom["strong"]


# A training step that differentiates `f` and `g` without passing facts into their parameters
# (a function with no caller in the project is conditional: the message would be that condition).
TRAIN_F_AND_G = """\
    def train_step(*args):
        with tf.GradientTape() as tape:
            loss = f(*args) + g(*args)
        return tape.gradient(loss, args)
    """


def test_the_message_names_a_declared_parameter_trainable(tmp_path):
    root = project(tmp_path, {"params.py": PARAMS, "kernels.py": KERNELS})
    code = use(det("f", "SqExp"), det("g", "Frozen"), TRAIN_F_AND_G)
    (root / "use.py").write_text(code, encoding="utf-8")
    report = run_json("--show-refuted", "--select", "TNL204", ".", cwd=root)
    found = sorted(report["findings"], key=lambda f: f["line"])
    declared, frozen = (f["verification"].get("detail", "") for f in found)  # f, then g
    assert "`kernel.lengthscales` is a trainable `Parameter`" in declared
    assert "not a trainable weight" not in declared
    assert "is a trainable `Parameter`" not in frozen  # no declared transform: not known here
