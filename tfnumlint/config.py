"""``[tool.tfnumlint]`` in pyproject.toml, merged with the command line (which wins)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .optimizers import OPTIMIZERS
from .ruledocs import all_docs

SEVERITIES = ("error", "warning", "info")


class ConfigError(Exception):
    """A usage or configuration error: exit 2 with this one line."""


@dataclass
class Settings:
    """Rule thresholds, configurable under ``[tool.tfnumlint]``."""

    # learning rate above which an optimizer family counts as "high"
    lr_thresholds: dict[str, float] = field(
        default_factory=lambda: {f: o.high_lr for f, o in OPTIMIZERS.items()}
    )
    exploding_gradient: float = 1e6
    # the float type the project computes in when no local dtype says otherwise: the
    # ``float`` key, else what analysis/dtypectx.project_float finds in the code; None is float32
    float_type: str | None = None
    # what the code fixes, per top-level package (analysis/dtypectx.float_package) when no
    # ``float`` key is set: a run over several libraries keeps each one's own float type
    float_packages: dict[str, str] = field(default_factory=dict)


@dataclass
class Config:
    root: Path = field(default_factory=Path.cwd)
    path: Path | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)
    baseline: str | None = None  # relative to ``root``
    force_exclude: bool = False
    graph_ignore: list[str] = field(default_factory=list)  # op names/scopes of saved models

    def fingerprint(self, codes: frozenset[str]) -> str:
        """What the cache key must change with."""
        data = {
            "codes": sorted(codes),
            "severity": self.severity,
            "lr": self.settings.lr_thresholds,
            "grad": self.settings.exploding_gradient,
            "pfi": self.per_file_ignores,
            "float": self.settings.float_type,
            "float_packages": self.settings.float_packages,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _list_of_str(key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"config key '{key}' must be a list of strings, got {value!r}")
    return value


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml that configures tfnumlint (as ruff does for [tool.ruff])."""
    for d in [start, *start.parents]:
        candidate = d / "pyproject.toml"
        if candidate.is_file() and _mentions_tfnumlint(candidate):
            return candidate
    return None


def _mentions_tfnumlint(path: Path) -> bool:
    """Has a [tool.tfnumlint] table, or is too broken to tell (then loading reports why)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if "tfnumlint" not in text:
        return False
    try:
        return "tfnumlint" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return True


def load_config(explicit: Path | None, start: Path) -> Config:
    path = explicit if explicit is not None else find_pyproject(start.resolve())
    if path is None:
        return Config(root=start.resolve())
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    if path.name == "pyproject.toml" or "tool" in data:
        section = data.get("tool", {}).get("tfnumlint", {})
    else:  # a dedicated file such as tfnumlint.toml holds the keys at top level
        section = data
    return parse_section(section, path)


_KEYS = {
    "baseline",
    "force-exclude",
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "severity",
    "learning-rate-thresholds",
    "exploding-gradient-threshold",
    "float",
    "graph-ignore",
}
FLOAT_TYPES = ("float16", "bfloat16", "float32", "float64")


def parse_section(section: Any, path: Path) -> Config:
    if not isinstance(section, dict):
        raise ConfigError(f"[tool.tfnumlint] in {path} must be a table")
    unknown = sorted(set(section) - _KEYS)
    if unknown:
        raise ConfigError(
            f"unknown config key '{unknown[0]}' in {path} (known: {', '.join(sorted(_KEYS))})"
        )
    cfg = Config(root=path.parent.resolve(), path=path)
    if "select" in section:
        cfg.select = _list_of_str("select", section["select"])
    cfg.extend_select = _list_of_str("extend-select", section.get("extend-select", []))
    cfg.ignore = _list_of_str("ignore", section.get("ignore", []))
    if "exclude" in section:
        cfg.exclude = _list_of_str("exclude", section["exclude"])
    cfg.extend_exclude = _list_of_str("extend-exclude", section.get("extend-exclude", []))
    cfg.graph_ignore = _list_of_str("graph-ignore", section.get("graph-ignore", []))
    if "baseline" in section:
        if not isinstance(section["baseline"], str) or not section["baseline"]:
            raise ConfigError(
                f"config key 'baseline' must be a file name, got {section['baseline']!r}"
            )
        cfg.baseline = section["baseline"]
    force = section.get("force-exclude", False)
    if not isinstance(force, bool):
        raise ConfigError(f"config key 'force-exclude' must be true or false, got {force!r}")
    cfg.force_exclude = force
    pfi = section.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError("config key 'per-file-ignores' must be a table of glob = [codes]")
    cfg.per_file_ignores = {k: _list_of_str(f"per-file-ignores.{k}", v) for k, v in pfi.items()}
    sev = section.get("severity", {})
    if not isinstance(sev, dict):
        raise ConfigError("config key 'severity' must be a table of CODE = \"error|warning|info\"")
    docs = all_docs()
    for code, level in sev.items():
        if code not in docs:
            raise ConfigError(f"config key 'severity.{code}': unknown rule code")
        if level not in SEVERITIES:
            raise ConfigError(
                f"config key 'severity.{code}' must be one of {', '.join(SEVERITIES)}, got {level!r}"
            )
    cfg.severity = dict(sev)
    thresholds = section.get("learning-rate-thresholds", {})
    if not isinstance(thresholds, dict):
        raise ConfigError(
            "config key 'learning-rate-thresholds' must be a table of optimizer = number"
        )
    for name, value in thresholds.items():
        if name not in cfg.settings.lr_thresholds:
            raise ConfigError(
                f"config key 'learning-rate-thresholds.{name}': unknown optimizer "
                f"(known: {', '.join(sorted(cfg.settings.lr_thresholds))})"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(
                f"config key 'learning-rate-thresholds.{name}' must be a positive number, got {value!r}"
            )
        cfg.settings.lr_thresholds[name] = float(value)
    if "exploding-gradient-threshold" in section:
        value = section["exploding-gradient-threshold"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(
                f"config key 'exploding-gradient-threshold' must be a positive number, got {value!r}"
            )
        cfg.settings.exploding_gradient = float(value)
    if "float" in section:
        value = section["float"]
        if value not in FLOAT_TYPES:
            raise ConfigError(
                f"config key 'float' must be one of {', '.join(FLOAT_TYPES)} (the float type "
                f"the project computes in), got {value!r}"
            )
        cfg.settings.float_type = value
    return cfg


def expand_codes(patterns: list[str], where: str) -> set[str]:
    """Codes and prefixes (``TNL1``, ``ALL``) to codes; an unmatched one is a usage error."""
    docs = all_docs()
    out: set[str] = set()
    for raw in patterns:
        pattern = raw.strip().upper()
        if not pattern:
            continue
        if pattern == "ALL":
            out |= set(docs)
            continue
        if pattern in docs:
            out.add(pattern)
            continue
        matched = {c for c, d in docs.items() if c.startswith(pattern) and d.default}
        if not matched and not any(c.startswith(pattern) for c in docs):
            raise ConfigError(f"unknown rule code or prefix '{raw.strip()}' in {where}")
        out |= matched
    return out


def resolve_codes(
    cfg: Config, cli_select: list[str] | None, cli_ignore: list[str] | None
) -> frozenset[str]:
    docs = all_docs()
    # The config's own selection; codes in it are checked even when --select replaces it.
    if cfg.select is not None:
        selected = expand_codes(cfg.select, "config 'select'")
    else:
        selected = {c for c, d in docs.items() if d.default}
    selected |= expand_codes(cfg.extend_select, "config 'extend-select'")
    selected -= expand_codes(cfg.ignore, "config 'ignore'")
    # As in ruff, --select starts afresh: the config's select, extend-select and ignore do not apply.
    if cli_select is not None:
        selected = expand_codes(cli_select, "--select")
    if cli_ignore is not None:
        selected -= expand_codes(cli_ignore, "--ignore")
    for pattern, codes in cfg.per_file_ignores.items():
        expand_codes(codes, f"config 'per-file-ignores.{pattern}'")
    return frozenset(selected)


def named_codes(cfg: Config, cli_select: list[str] | None) -> frozenset[str]:
    """Codes selected by their full name or by ALL (not by a prefix): an evidence rule
    selected this way shows its unconfirmed findings too."""
    names = cli_select if cli_select is not None else [*(cfg.select or []), *cfg.extend_select]
    docs = all_docs()
    wanted = {c.strip().upper() for c in names}
    return frozenset(docs) if "ALL" in wanted else frozenset(wanted & set(docs))


def per_file_ignored(cfg: Config, display_path: str, code: str) -> bool:
    # Patterns are relative to the project root (the config's directory), as in ruff,
    # whichever directory the run starts from; the path as shown and the bare name match too.
    names = {display_path, Path(display_path).name}
    absolute = Path(os.path.abspath(display_path))
    if absolute.is_relative_to(cfg.root):
        names.add(absolute.relative_to(cfg.root).as_posix())
    for pattern, codes in cfg.per_file_ignores.items():
        if any(fnmatch.fnmatch(name, pattern) for name in names) and any(
            code.startswith(c.upper()) or c.upper() == "ALL" for c in codes
        ):
            return True
    return False
