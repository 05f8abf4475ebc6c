"""Whole-program provenance: values followed across functions, classes and modules.

Each test writes a small multi-module project and lints the tree as the CLI does (in
process, through the same rounds), then checks where findings land and what they say.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import run_json

from tfnumlint.config import load_config, resolve_codes
from tfnumlint.discovery import discover
from tfnumlint.engine import LintOptions
from tfnumlint.incremental import Job, analyse_project


def project(root: Path, files: dict[str, str]) -> Path:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code), encoding="utf-8")
    return root


def lint_tree(root: Path, jobs: int = 1, select: list[str] | None = None):
    """(path, line, rule, message, related) for every finding of the tree, in order."""
    config = load_config(None, root)
    codes = resolve_codes(config, select, None)
    candidates = discover(["."], root, config.exclude, config.extend_exclude, config.root)
    job = Job(LintOptions(codes=codes), config.fingerprint(codes), None)
    results = analyse_project(candidates, job, jobs)
    out = []
    for r in results:
        assert not r.errors, r.errors
        for f in r.findings:
            out.append((f.path, f.line, f.rule, f.message, f.related))
    return out


def rules_at(findings, path: str) -> set[tuple[int, str]]:
    return {(line, rule) for p, line, rule, _, _ in findings if p == path}


MODEL_LOSS_TRAIN = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import tensorflow as tf


        def dense(x, units, activation=None):
            w = tf.Variable(tf.random.normal([int(x.shape[-1]), units]))
            b = tf.Variable(tf.zeros([units]))
            y = tf.matmul(x, w) + b
            return activation(y) if activation is not None else y


        class Net(tf.Module):
            def __call__(self, x):
                h = dense(x, 64, activation=tf.nn.relu)
                return dense(h, 10, activation=tf.nn.softmax)
        """,
    "pkg/losses.py": """\
        import tensorflow as tf


        def xent(labels, out):
            return -tf.reduce_sum(labels * tf.math.log(out), axis=-1)


        def energy(z):
            return tf.reduce_sum(tf.exp(z), axis=-1)
        """,
    "pkg/train.py": """\
        import tensorflow as tf

        from .losses import energy, xent
        from .model import Net, dense


        def step(x, y):
            net = Net()
            loss = xent(y, net(x))
            logits = dense(x, 10)
            return loss, energy(logits)
        """,
}


def test_model_loss_and_training_loop_across_files_with_relative_imports(tmp_path):
    findings = lint_tree(project(tmp_path, MODEL_LOSS_TRAIN))
    losses = rules_at(findings, "pkg/losses.py")
    # `out` is the softmax that Net.__call__ returns (through dense's passed activation);
    # `z` is dense's linear output, since that call passes no activation
    assert (5, "TNL101") in losses
    assert (9, "TNL301") in losses
    assert rules_at(findings, "pkg/train.py") == set()  # reported once, at the helper
    [msg] = [m for p, line, r, m, _ in findings if (p, line, r) == ("pkg/losses.py", 9, "TNL301")]
    assert "`z`" in msg and "linear" in msg and "pkg/train.py:11" in msg


def test_the_call_site_is_named_in_json(tmp_path):
    findings = lint_tree(project(tmp_path, MODEL_LOSS_TRAIN))
    [related] = [
        rel for p, line, r, _, rel in findings if (p, line, r) == ("pkg/losses.py", 9, "TNL301")
    ]
    assert related == [
        {"path": "pkg/train.py", "line": 11, "column": 18, "message": related[0]["message"]}
    ]
    assert "`z`" in related[0]["message"]


def test_without_the_project_the_helper_is_silent(tmp_path):
    """Control: the helper alone has nothing to go on (a bare parameter)."""
    root = project(tmp_path, {"losses.py": MODEL_LOSS_TRAIN["pkg/losses.py"]})
    findings = lint_tree(root)
    assert (9, "TNL301") not in rules_at(findings, "losses.py")


def test_helper_called_from_several_sites_is_reported_once_naming_the_risky_one(tmp_path):
    root = project(
        tmp_path,
        {
            "helpers.py": """\
                import tensorflow as tf


                def rate(z):
                    return tf.exp(z)
                """,
            "a.py": """\
                import tensorflow as tf
                from helpers import rate


                def safe(x):
                    return rate(tf.clip_by_value(x, -20.0, 20.0))
                """,
            "b.py": """\
                import tensorflow as tf
                from helpers import rate


                def risky(x, w):
                    return rate(tf.matmul(x, w))
                """,
        },
    )
    findings = lint_tree(root)
    hits = [(p, line, r, m) for p, line, r, m, _ in findings if r == "TNL301"]
    assert [(p, line) for p, line, _, _ in hits] == [("helpers.py", 5)]
    assert "b.py:6" in hits[0][3] and "a.py" not in hits[0][3]


def test_helper_only_called_with_safe_values_stays_silent(tmp_path):
    root = project(
        tmp_path,
        {
            "helpers.py": """\
                import tensorflow as tf


                def nll(p_hat):
                    return -tf.math.log(p_hat)
                """,
            "a.py": """\
                import tensorflow as tf
                from helpers import nll


                def loss(p):
                    return nll(tf.clip_by_value(p, 1e-7, 1.0))
                """,
        },
    )
    assert rules_at(lint_tree(root), "helpers.py") == set()
    # control: alone, `p_hat` looks like a probability and is reported
    alone = lint_tree(
        project(
            tmp_path / "alone",
            {
                "helpers.py": "import tensorflow as tf\n\n\ndef nll(p_hat):\n    return -tf.math.log(p_hat)\n"
            },
        )
    )
    assert (5, "TNL101") in rules_at(alone, "helpers.py")


def test_inheritance_across_modules(tmp_path):
    root = project(
        tmp_path,
        {
            "base.py": """\
                import tensorflow as tf


                class Head(tf.Module):
                    def __init__(self, n):
                        self.w = tf.Variable(tf.random.normal([n, n]))
                        self.scores = tf.keras.layers.Dense(n)

                    def probs(self, x):
                        return tf.nn.sigmoid(self.scores(x))
                """,
            "heads.py": """\
                import tensorflow as tf
                from base import Head


                class BinaryHead(Head):
                    def loss(self, x, y):
                        p = self.probs(x)
                        return -tf.reduce_mean(y * tf.math.log(p))

                    def energy(self, x):
                        return tf.exp(self.scores(x))
                """,
        },
    )
    heads = rules_at(lint_tree(root), "heads.py")
    assert (8, "TNL101") in heads  # the inherited method returns a sigmoid
    assert (11, "TNL301") in heads  # the inherited attribute is a linear Dense layer


def test_star_imports_and_reexports_through_init(tmp_path):
    root = project(
        tmp_path,
        {
            "lib/__init__.py": "from .layers import *\n",
            "lib/layers.py": """\
                import tensorflow as tf


                def probabilities(x):
                    return tf.nn.softmax(x)
                """,
            "app/__init__.py": "",
            "app/star.py": """\
                import tensorflow as tf
                from lib.layers import *


                def loss(x):
                    return tf.math.log(probabilities(x))
                """,
            "app/reexport.py": """\
                import tensorflow as tf
                import lib


                def loss(x):
                    return tf.math.log(lib.probabilities(x))
                """,
        },
    )
    findings = lint_tree(root)
    assert (6, "TNL101") in rules_at(findings, "app/star.py")
    assert (6, "TNL101") in rules_at(findings, "app/reexport.py")


def test_an_activation_passed_as_an_argument(tmp_path):
    root = project(
        tmp_path,
        {
            "layers.py": """\
                import tensorflow as tf


                def add_layer(x, n_in, n_out, activation_function=None):
                    w = tf.Variable(tf.random.normal([n_in, n_out]))
                    out = tf.matmul(x, w)
                    if activation_function is None:
                        return out
                    return activation_function(out)
                """,
            "net.py": """\
                import tensorflow as tf
                from layers import add_layer


                def loss(x, y):
                    pred = add_layer(x, 784, 10, activation_function=tf.nn.softmax)
                    return -tf.reduce_sum(y * tf.math.log(pred))


                def hidden(x):
                    h = add_layer(x, 784, 10, activation_function=tf.nn.relu)
                    return tf.math.log(h)
                """,
        },
    )
    net = rules_at(lint_tree(root, select=["TNL101", "TNL103"]), "net.py")
    assert (7, "TNL101") in net
    assert not any(line == 12 for line, _ in net)  # a relu is no probability


def test_a_change_in_a_dependency_relints_the_dependent_file(tmp_path):
    """Editing model.py changes what train.py's helper receives: the cached result of
    losses.py must not be served; reverting serves it again."""
    root = project(tmp_path, MODEL_LOSS_TRAIN)
    cache = tmp_path.parent / f"{tmp_path.name}-cache"
    env = {"TFNUMLINT_CACHE_DIR": str(cache)}

    def run():
        report = run_json("--no-verify", "--exit-zero", ".", cwd=root, env=env)
        return {(f["path"], f["line"], f["rule"]) for f in report["findings"]}

    before = run()
    assert ("pkg/losses.py", 9, "TNL301") in before
    model = root / "pkg" / "model.py"
    original = model.read_text()
    model.write_text(
        original.replace(
            "y = tf.matmul(x, w) + b", "y = tf.clip_by_value(tf.matmul(x, w) + b, -30.0, 30.0)"
        )
    )
    after = run()
    assert ("pkg/losses.py", 9, "TNL301") not in after
    model.write_text(original)
    assert run() == before


def test_output_is_identical_across_jobs(tmp_path):
    files = dict(MODEL_LOSS_TRAIN)
    for i in range(6):  # enough files for the process pool
        files[f"pkg/extra_{i}.py"] = (
            "import tensorflow as tf\nfrom .losses import energy\n\n\n"
            f"def f{i}(x, w):\n    return energy(tf.matmul(x, w) * {i + 1}.0)\n"
        )
    root = project(tmp_path, files)
    assert lint_tree(root, jobs=1) == lint_tree(root, jobs=2)


def test_no_user_module_is_imported(tmp_path):
    """The index reads sibling modules; it never imports them (that would run this)."""
    canary = tmp_path / "CANARY"
    root = project(
        tmp_path,
        {
            "model.py": f"import tensorflow as tf\nopen({str(canary)!r}, 'w').write('ran')\n\n\ndef probs(x):\n    return tf.nn.sigmoid(x)\n",
            "train.py": "import tensorflow as tf\nfrom model import probs\n\n\ndef loss(x):\n    return tf.math.log(probs(x))\n",
        },
    )
    findings = lint_tree(root)
    assert (6, "TNL101") in rules_at(findings, "train.py")
    assert not canary.exists()


def test_json_report_carries_the_related_call_site(tmp_path):
    root = project(tmp_path, MODEL_LOSS_TRAIN)
    report = run_json("--no-verify", "--no-cache", "--exit-zero", ".", cwd=root)
    [f] = [f for f in report["findings"] if f["rule"] == "TNL301"]
    assert f["related"][0]["path"] == "pkg/train.py"
    assert f["related"][0]["line"] == 11
    json.dumps(report)  # plain JSON all the way down


def test_softmax_helper_hazards_follow_what_callers_pass(tmp_path):
    """A hand-written softmax in one module: its exp can overflow and its sum underflow.
    Which of the two is real depends on what the callers in other modules pass."""
    helper = """\
        import tensorflow as tf


        def normalise(s):
            e = tf.exp(s)
            return e / tf.reduce_sum(e, axis=-1, keepdims=True)
        """
    loose = """\
        import tensorflow as tf
        from helper import normalise


        def attend(s):
            return normalise(tf.clip_by_value(s, -100.0, 80.0))
        """
    tight = loose.replace("-100.0, 80.0", "-30.0, 30.0")
    raw = loose.replace("tf.clip_by_value(s, -100.0, 80.0)", "tf.matmul(s, s)")

    def run(caller: str, name: str):
        return rules_at(
            lint_tree(project(tmp_path / name, {"helper.py": helper, "a.py": caller})), "helper.py"
        )

    # clipped below 88.7 but not above -87.3: no overflow, the sum can be exactly 0
    assert run(loose, "loose") == {(6, "TNL201")}
    # clipped to [-30, 30]: neither
    assert run(tight, "tight") == set()
    # a raw matmul: both; the exp overflows (line 5) and so does the softmax it feeds (line 6)
    assert run(raw, "raw") == {(5, "TNL301"), (6, "TNL301"), (6, "TNL201")}
