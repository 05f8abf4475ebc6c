"""The pre-commit hook round trip with the real ``pre-commit``: a risky commit is blocked, a clean one passes.

The hook repository is a snapshot of this working tree (``.pre-commit-hooks.yaml``, the package,
its metadata and rule docs) committed into a temporary git repository, so the test exercises
exactly what is on disk whatever the state of this checkout's own git index.  pre-commit
pip-installs it into its own virtualenv (PRE_COMMIT_HOME under the test's temp dir).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

RISKY = """\
import tensorflow as tf


def loss(p_pred):
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10))
"""

CLEAN = """\
import tensorflow as tf


def loss(labels, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
"""

GIT_ID = [
    "-c",
    "user.name=tfnumlint-test",
    "-c",
    "user.email=test@example.invalid",
    "-c",
    "commit.gpgsign=false",
]


def git(cwd, *args, check=True, env=None):
    return subprocess.run(
        ["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, check=check, env=env
    )


def test_hook_manifest():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "tfnumlint"]
    assert hook["entry"] == "tfnumlint --force-exclude"  # pre-commit names excluded files too
    assert hook["require_serial"] is True  # one process: one TF import, one summary
    assert hook["language"] == "python"
    assert set(hook["types_or"]) == {"python", "jupyter"}
    assert hook["name"]


def readme_precommit_config() -> dict:
    """The .pre-commit-config.yaml recipe from the README, parsed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", text, re.S)
    assert block, "README has no .pre-commit-config.yaml recipe"
    return yaml.safe_load(block.group(1))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("precommit")
    hook_repo = base / "hook-repo"
    hook_repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, hook_repo / name)
    for name in ("tfnumlint", "rules"):
        shutil.copytree(ROOT / name, hook_repo / name, ignore=ignore)
    git(hook_repo, "init", "-q")
    git(hook_repo, "add", "-A")
    git(hook_repo, "commit", "-q", "-m", "hook snapshot")
    rev = git(hook_repo, "rev-parse", "HEAD").stdout.strip()
    run_env = dict(os.environ)
    run_env.update(
        PRE_COMMIT_HOME=str(base / "pre-commit-home"),
        TFNUMLINT_CACHE_DIR=str(base / "tfnumlint-cache"),
        PRE_COMMIT_COLOR="never",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    run_env.pop("PRE_COMMIT", None)
    return base, hook_repo, rev, run_env


def new_repo(base, name, env):
    repo = base / name
    repo.mkdir()
    git(repo, "init", "-q", env=env)
    (repo / "risky.py").write_text(RISKY, encoding="utf-8")
    (repo / "clean.py").write_text(CLEAN, encoding="utf-8")
    return repo


def pre_commit(*args, cwd, env):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def test_try_repo_blocks_risky_and_passes_clean(env):
    base, hook_repo, _, run_env = env
    repo = new_repo(base, "try-repo", run_env)
    git(repo, "add", "risky.py", "clean.py", env=run_env)

    risky = pre_commit(
        "try-repo", str(hook_repo), "tfnumlint", "--files", "risky.py", cwd=repo, env=run_env
    )
    out = risky.stdout + risky.stderr
    assert risky.returncode != 0, out
    assert "Failed" in out
    assert "risky.py:5:" in out and "TNL102" in out
    assert "Traceback" not in out

    clean = pre_commit(
        "try-repo", str(hook_repo), "tfnumlint", "--files", "clean.py", cwd=repo, env=run_env
    )
    out = clean.stdout + clean.stderr
    assert clean.returncode == 0, out
    assert "Passed" in out


def test_try_repo_honours_excludes_and_runs_one_process(env):
    """--force-exclude: a file pre-commit names but the project excludes is skipped;
    require_serial: 30 files give one run and one summary, not one per CPU."""
    base, hook_repo, _, run_env = env
    repo = new_repo(base, "serial", run_env)
    (repo / "pyproject.toml").write_text('[tool.tfnumlint]\nextend-exclude = ["vendored"]\n')
    (repo / "vendored").mkdir()
    (repo / "vendored" / "lib.py").write_text(RISKY, encoding="utf-8")
    for i in range(30):
        (repo / f"m{i:02d}.py").write_text(CLEAN, encoding="utf-8")
    git(repo, "add", "-A", env=run_env)

    excluded = pre_commit(
        "try-repo", str(hook_repo), "tfnumlint", "--files", "vendored/lib.py", cwd=repo, env=run_env
    )
    out = excluded.stdout + excluded.stderr
    assert excluded.returncode == 0, out
    assert "TNL102" not in out

    everything = pre_commit(
        "try-repo", str(hook_repo), "tfnumlint", "--all-files", cwd=repo, env=run_env
    )
    out = everything.stdout + everything.stderr
    assert everything.returncode != 0, out
    assert "risky.py:5:" in out
    assert "vendored/lib.py" not in out
    summaries = re.findall(r"^Found \d+ findings?.* in (\d+) files?\.", out, re.M)
    assert summaries == ["32"], out  # risky.py, clean.py and the 30 modules, in one process


def test_installed_hook_blocks_a_risky_commit_and_lets_a_clean_one_through(env):
    """The README's .pre-commit-config.yaml, pointed at a snapshot of this repository."""
    base, hook_repo, rev, run_env = env
    repo = new_repo(base, "consumer", run_env)
    config = readme_precommit_config()
    (entry,) = config["repos"]
    assert entry["rev"] == "COMMIT" and entry["repo"].startswith("https://")
    entry.update(repo=str(hook_repo), rev=rev)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git(repo, "add", ".pre-commit-config.yaml", env=run_env)
    git(repo, "commit", "-q", "--no-verify", "-m", "config", env=run_env)
    installed = pre_commit("install", cwd=repo, env=run_env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    git(repo, "add", "clean.py", env=run_env)
    ok = git(repo, "commit", "-m", "clean", check=False, env=run_env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Passed" in ok.stdout + ok.stderr

    git(repo, "add", "risky.py", env=run_env)
    blocked = git(repo, "commit", "-m", "risky", check=False, env=run_env)
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, out
    assert "TNL102" in out
    log = git(repo, "log", "--format=%s", env=run_env).stdout.split()
    assert log == ["clean", "config"]  # the risky commit never happened
    assert "risky.py" in git(repo, "diff", "--cached", "--name-only", env=run_env).stdout
