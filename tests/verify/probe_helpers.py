"""Builders for hand-written probes in the slicer's JSON format.

Every probe :func:`expr` builds is checked against the contract production is held to
(``tfnumlint.analysis.slicing.contract.NODE_KEYS``/``INPUT_KEYS``, which every probe the slicer
makes from the examples and the rule cases must also satisfy: ``tests/test_probe_contract.py``),
so a hand-built probe cannot keep a key or a node kind the slicer and the tracer no longer
use."""

from __future__ import annotations

from typing import Any

from tfnumlint.analysis.slicing.contract import probe_errors

PATH = "/virtual/user_model.py"


def inp(name: str) -> dict[str, Any]:
    return {"k": "input", "name": name}


def const(v: float) -> dict[str, Any]:
    return {"k": "const", "v": v}


def call(op: str, *args: Any, line: int = 3, **kw: Any) -> dict[str, Any]:
    return {"k": "call", "op": op, "args": list(args), "kw": kw, "line": line, "col": 5}


def binop(op: str, left: Any, right: Any, line: int = 3) -> dict[str, Any]:
    return {"k": "bin", "op": op, "l": left, "r": right, "line": line, "col": 9}


def cmp(op: str, left: Any, right: Any) -> dict[str, Any]:
    return {"k": "cmp", "op": op, "l": left, "r": right}


def free(name: str, lo: float | str = "-inf", hi: float | str = "inf", producer: str = "unknown",
         prob: bool = False) -> dict[str, Any]:  # fmt: skip
    return {"name": name, "producer": producer, "lo": lo, "hi": hi, "prob": prob, "role": "value"}


def prob(name: str) -> dict[str, Any]:
    return free(name, 0.0, 1.0, "sigmoid", True)


def expr(rule: str, target: Any, inputs: list[dict[str, Any]], loss: Any = None,
         eps: float | None = None, dtype: str = "float32",
         hostile: bool = False) -> dict[str, Any]:  # fmt: skip
    """An expression probe; ``hostile``: one the tracer must refuse (not checked here)."""
    probe = {
        "kind": "expr",
        "rule": rule,
        "dtype": dtype,
        "path": PATH,
        "line": 3,
        "target": target,
        "loss": loss,
        "inputs": inputs,
        "eps": eps,
        "truncated": False,
    }
    errors = [] if hostile else probe_errors(probe)
    assert not errors, (
        f"a hand-built probe the tracer would not read as production writes it: {errors}"
    )
    return probe


def seed_loss() -> tuple[dict[str, Any], dict[str, Any]]:
    """The seed autoencoder loss and its flagged log(sigmoid(z) + 1e-10)."""
    s = call("sigmoid", inp("z"))
    first = call("log", binop("+", s, const(1e-10)))
    second = call("log", binop("+", binop("-", const(1), s), const(1e-10)))
    weighted = binop("*", binop("*", const(0.55), binop("-", const(1), inp("p"))), second)
    total = call("reduce_sum", binop("+", binop("*", inp("p"), first), weighted))
    return first, {"k": "neg", "x": total}
