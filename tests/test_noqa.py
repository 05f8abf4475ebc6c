"""``--add-noqa``: directives on each finding's statement, idempotent, formatting kept."""

from __future__ import annotations

import textwrap

import pytest
from conftest import run_cli, run_json

from tfnumlint.noqa import add_to_text

MULTI_LINE = """\
import tensorflow as tf


def loss(p_pred, a, b):
    d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))  # distance
    total = (
        -tf.reduce_mean(
            tf.math.log(p_pred + 1e-10)
        )
        + d
    )
    return total
"""

EXPECTED = """\
import tensorflow as tf


def loss(p_pred, a, b):
    d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))  # distance  # noqa: TNL202
    total = (  # noqa: TNL102
        -tf.reduce_mean(
            tf.math.log(p_pred + 1e-10)
        )
        + d
    )
    return total
"""


def test_add_noqa_marks_the_first_line_of_each_statement_and_is_idempotent(tmp_path):
    (tmp_path / "a.py").write_text(MULTI_LINE)
    proc = run_cli("--no-verify", "--add-noqa", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "added 2 noqa directives in 1 file" in proc.stderr
    assert (tmp_path / "a.py").read_text() == EXPECTED
    assert run_json("--no-verify", ".", cwd=tmp_path)["findings"] == []
    again = run_cli("--no-verify", "--add-noqa", ".", cwd=tmp_path)
    assert again.returncode == 0
    assert "added 0 noqa directives" in again.stderr
    assert (tmp_path / "a.py").read_text() == EXPECTED


def test_add_noqa_with_codes_only_adds_those(tmp_path):
    (tmp_path / "a.py").write_text(MULTI_LINE)
    proc = run_cli("--no-verify", "--add-noqa=TNL2", "a.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "a.py").read_text()
    assert "# noqa: TNL202" in text and "TNL102" not in text
    assert {f["rule"] for f in run_json("--no-verify", ".", cwd=tmp_path)["findings"]} == {"TNL102"}


def test_add_noqa_followed_by_a_path_takes_it_as_the_path(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(MULTI_LINE)
    (tmp_path / "other.py").write_text(MULTI_LINE)
    proc = run_cli("--no-verify", "--add-noqa", "src", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "src" / "a.py").read_text() == EXPECTED
    assert (tmp_path / "other.py").read_text() == MULTI_LINE


def test_add_noqa_keeps_crlf_endings_and_a_bom(tmp_path):
    raw = b"\xef\xbb\xbf" + MULTI_LINE.replace("\n", "\r\n").encode()
    (tmp_path / "a.py").write_bytes(raw)
    assert run_cli("--no-verify", "--add-noqa", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / "a.py").read_bytes() == b"\xef\xbb\xbf" + EXPECTED.replace(
        "\n", "\r\n"
    ).encode()


@pytest.mark.parametrize(
    ("line", "codes", "expected"),
    [
        ("x = f(y)\n", ["TNL102"], "x = f(y)  # noqa: TNL102\n"),
        ("x = f(y)   \n", ["TNL102"], "x = f(y)  # noqa: TNL102\n"),
        ("x = f(y)  # noqa: TNL201\n", ["TNL102"], "x = f(y)  # noqa: TNL201, TNL102\n"),
        ("x = f(y)  # noqa: TNL1\n", ["TNL102"], "x = f(y)  # noqa: TNL1\n"),
        ("x = f(y)  # noqa\n", ["TNL102"], "x = f(y)  # noqa\n"),
        (
            "x = f(y)  # why  # noqa:TNL201\n",
            ["TNL102"],
            "x = f(y)  # why  # noqa: TNL201, TNL102\n",
        ),
        ('x = "# noqa"\n', ["TNL102"], 'x = "# noqa"  # noqa: TNL102\n'),
    ],
)
def test_directive_text(line, codes, expected):
    text, _added, skipped = add_to_text(line, {1: codes})
    assert text == expected
    assert skipped == []


def test_lines_that_cannot_take_a_comment_are_skipped():
    src = textwrap.dedent(
        '''\
        x = f("""a
        b""")
        y = 1 + \\
            2
        '''
    )
    text, added, skipped = add_to_text(src, {1: ["TNL102"], 3: ["TNL201"]})
    assert text == src
    assert added == 0
    assert skipped == [1, 3]


def test_add_noqa_with_a_decorator_statement(tmp_path):
    src = textwrap.dedent(
        """\
        import tensorflow as tf


        @tf.function(
            reduce_retracing=True,
        )
        def loss(p_pred, floor=tf.math.log(
            tf.constant(1.0) + 1e-10
        )):
            return tf.math.log(p_pred + 1e-10)
        """
    )
    (tmp_path / "a.py").write_text(src)
    assert {f["rule"] for f in run_json("--no-verify", ".", cwd=tmp_path)["findings"]} == {
        "TNL102",
        "TNL401",
    }
    assert run_cli("--no-verify", "--add-noqa", ".", cwd=tmp_path).returncode == 0
    text = (tmp_path / "a.py").read_text()
    # the default is a constant: 1 + 1e-10 rounds to 1 (TNL401), and its log has no gradient
    # to explode (no TNL102 there)
    assert "def loss(p_pred, floor=tf.math.log(  # noqa: TNL401\n" in text
    assert "    return tf.math.log(p_pred + 1e-10)  # noqa: TNL102\n" in text
    assert run_json("--no-verify", ".", cwd=tmp_path)["findings"] == []


def test_add_noqa_on_standard_input_is_a_usage_error(tmp_path):
    proc = run_cli("--no-verify", "--add-noqa", "-", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--add-noqa cannot be used on standard input" in proc.stderr


def test_a_directive_that_does_not_suppress_is_reported(tmp_path, monkeypatch, capsys):
    """Safety net: every edited file is linted again, and a finding still shown is named."""
    from tfnumlint import noqa
    from tfnumlint.cli import main

    (tmp_path / "a.py").write_text(MULTI_LINE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(noqa, "first_line_of_statement", lambda spans, line: 1)  # wrong line
    assert main(["--no-verify", "--no-cache", "--add-noqa", "a.py"]) == 0
    err = capsys.readouterr().err
    assert "not suppressed: a.py:8:13: TNL102 is still reported after --add-noqa" in err
    assert "not suppressed: a.py:5:9: TNL202 is still reported after --add-noqa" in err


SAME_HAZARD = """\
import tensorflow as tf


def loss(y, z):
    p = tf.nn.softmax(z)
    return -tf.reduce_sum(y * tf.math.log(p), axis=-1)
"""


def test_add_noqa_writes_every_rule_of_a_merged_finding(tmp_path):
    """TNL101 and TNL103 on one expression are shown as one finding; the directive needs both."""
    src = tmp_path / "m.py"
    src.write_text(SAME_HAZARD)
    shown = run_json("--no-verify", "--no-cache", str(src))["findings"]
    assert [(f["rule"], f.get("related_rules")) for f in shown] == [("TNL103", ["TNL101"])]
    run_cli("--no-verify", "--no-cache", "--add-noqa=TNL101", str(src))
    assert src.read_text().splitlines()[-1].endswith("# noqa: TNL101")
    src.write_text(SAME_HAZARD)
    run_cli("--no-verify", "--no-cache", "--add-noqa", str(src))
    assert src.read_text().splitlines()[-1].endswith("# noqa: TNL101, TNL103")
    assert run_json("--no-verify", "--no-cache", str(src))["findings"] == []
