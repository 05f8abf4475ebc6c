"""``# noqa``, ``# noqa: CODE`` and ``# tfnumlint: ignore[CODE]`` on the finding's line or its statement's first line."""

from __future__ import annotations

import textwrap

import pytest
from conftest import lint, run_json

HEADER = "import tensorflow as tf\n\n\ndef loss(p, a, b):\n"
LOG = "tf.math.log(p + 1e-10)"  # TNL102


def body(*lines: str) -> str:
    return HEADER + "".join(f"    {line}\n" for line in lines)


def codes(code: str) -> list[tuple[str, int]]:
    return sorted((f.rule, f.line) for f in lint(code, ["TNL102", "TNL202", "TNL203"]))


def test_unsuppressed_baseline():
    assert codes(body(f"return {LOG}")) == [("TNL102", 5)]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: TNL102",
        "# noqa:TNL102",
        "#noqa: TNL102",
        "# NOQA: tnl102",
        "# noqa",
        "# NoQA",
        "# noqa: E501, TNL102",
        "# noqa: E501 TNL102",
        "# noqa: TNL102 -- the input is clipped upstream",
        "# noqa: TNL1",  # a prefix, as in flake8
        "# tfnumlint: ignore[TNL102]",
        "# tfnumlint: ignore[TNL202, TNL102]",
        "# tfnumlint: ignore[TNL1]",
        "# tfnumlint: ignore",
        "# type: ignore  # noqa: TNL102",
    ],
)
def test_suppressed_on_the_finding_line(comment):
    assert codes(body(f"return {LOG}  {comment}")) == []


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: TNL202",
        "# noqa: TNL2",
        "# noqa: TNL1022",
        "# noqa: E501",
        "# tfnumlint: ignore[TNL202]",
        "# tfnumlint: ignore[]",
        "# type: ignore",
        "# some other comment",
    ],
)
def test_other_codes_do_not_suppress(comment):
    # `ignore[]` names no code: it must not silence everything by accident
    assert codes(body(f"return {LOG}  {comment}")) == [("TNL102", 5)]


def test_only_the_named_code_is_suppressed_on_a_line_with_two():
    code = body(f"return {LOG} + tf.norm(a - b)  # noqa: TNL102")
    assert codes(code) == [("TNL203", 5)]
    code = body(f"return {LOG} + tf.norm(a - b)  # noqa: TNL203")
    assert codes(code) == [("TNL102", 5)]
    code = body(f"return {LOG} + tf.norm(a - b)  # noqa: TNL102, TNL203")
    assert codes(code) == []
    code = body(f"return {LOG} + tf.norm(a - b)  # noqa")
    assert codes(code) == []


@pytest.mark.parametrize(
    "comment",
    ["# noqa: TNL102", "# noqa", "# tfnumlint: ignore[TNL102]", "# noqa: TNL1"],
)
def test_first_line_of_a_multiline_statement(comment):
    code = body(
        f"total = (  {comment}",
        "    1.0",
        f"    + {LOG}",
        ")",
        "return total",
    )
    assert codes(code) == []


def test_first_line_of_a_multiline_call_statement():
    code = body(
        "return tf.reduce_mean(  # noqa: TNL102",
        "    tf.math.log(",
        "        p + 1e-10",
        "    )",
        ")",
    )
    assert codes(code) == []
    unsuppressed = code.replace("  # noqa: TNL102", "")
    assert codes(unsuppressed) == [("TNL102", 6)]


def test_other_code_on_first_line_of_multiline_statement_does_not_suppress():
    code = body(
        "total = (  # noqa: TNL202",
        "    1.0",
        f"    + {LOG}",
        ")",
        "return total",
    )
    assert codes(code) == [("TNL102", 7)]


def test_noqa_on_a_middle_line_of_the_statement_does_not_suppress():
    code = body(
        "total = (",
        "    1.0  # noqa: TNL102",
        f"    + {LOG}",
        ")",
        "return total",
    )
    assert codes(code) == [("TNL102", 7)]


def test_noqa_on_the_enclosing_block_does_not_suppress_its_body():
    code = textwrap.dedent(
        f"""\
        import tensorflow as tf


        def loss(p):  # noqa
            with tf.name_scope("loss"):  # noqa: TNL102
                return {LOG}
        """
    )
    assert codes(code) == [("TNL102", 6)]


def test_noqa_on_the_previous_line_does_not_suppress():
    assert codes(body("# noqa: TNL102", f"return {LOG}")) == [("TNL102", 6)]


def test_noqa_inside_a_string_is_not_a_comment():
    code = body(f"note = '# noqa'; return {LOG}")
    assert codes(code) == [("TNL102", 5)]
    code = body(f'return {LOG} if "# tfnumlint: ignore" else p')
    assert codes(code) == [("TNL102", 5)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_suppression_with_any_line_ending(newline):
    code = body(f"x = {LOG}", f"return {LOG}  # noqa: TNL102").replace("\n", newline)
    assert codes(code) == [("TNL102", 5)]


def test_form_feed_does_not_shift_lines():
    code = "import tensorflow as tf\n\x0c\n\ndef loss(p):\n    return tf.math.log(p + 1e-10)  # noqa: TNL202\n"
    (f,) = lint(code, ["TNL102"])
    assert f.line == 5
    assert f.source_line == "    return tf.math.log(p + 1e-10)  # noqa: TNL202"
    assert lint(code.replace("TNL202", "TNL102"), ["TNL102"]) == []


def test_suppressions_through_the_cli_in_every_format(tmp_path, write):
    write(
        "m.py",
        body(
            f"x = {LOG}  # noqa: TNL102",
            f"y = {LOG}  # tfnumlint: ignore[TNL102]",
            f"z = {LOG}  # noqa",
            f"return {LOG} + x + y + z  # noqa: TNL202",
        ),
    )
    report = run_json("--no-verify", "--select", "TNL102", "m.py", cwd=tmp_path)
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("TNL102", 8)]
    assert report["summary"]["findings"] == 1


def test_suppression_in_a_notebook_cell(tmp_path, write):
    import json

    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": ["import tensorflow as tf\n"],
                "metadata": {},
                "outputs": [],
            },
            {
                "cell_type": "code",
                "source": [f"a = {LOG}  # noqa: TNL102\n", f"b = {LOG}\n"],
                "metadata": {},
                "outputs": [],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    write("n.ipynb", json.dumps(nb).replace("p + ", "0.5 * p + "))
    report = run_json("--no-verify", "--select", "TNL102", "n.ipynb", cwd=tmp_path)
    assert [(f["cell"], f["line"]) for f in report["findings"]] == [(2, 2)]
