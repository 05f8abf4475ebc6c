"""``--emit-repro DIR``: one standalone script per confirmed finding (static side, no TF import).

A script needs only TensorFlow and NumPy: it never imports tfnumlint nor the analysed code.  It
rebuilds what the verifier ran from the verdict's record of it (``Verification.repro``): the
slice at its witness point (``repro_code.py`` writes the trees as TF calls), or the training
simulation (``repro_training.py``).  The slice is evaluated in both forms the program may run
in: eagerly, and compiled in a ``tf.function`` with TensorFlow's graph optimizer on (a fresh
process has it on).  It prints what it sees and exits 1 when the finding's symptom shows,
0 when it does not (a fixed program's reproducer passes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import ops
from ..analysis.slicing.contract import walk
from ..model import Finding
from . import repro_training
from .repro_code import NotRenderable, Renderer, header, identifier, number

LOGIT_OPS = ops.ops_with(lambda op: op.logits_input) | ops.FUSED_XENT
NON_FINITE = ("nan-value", "inf-value", "nan-gradient", "inf-gradient")


def emit_all(findings: list[Finding], directory: Path) -> list[str]:
    """Write a reproducer for every confirmed finding that has a record; set ``finding.repro``.
    Returns notices (a directory that cannot be written, a slice with no source form)."""
    notices: list[str] = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return [f"--emit-repro: cannot create {directory}: {exc.strerror or exc}"]
    used: set[str] = set()
    for finding in findings:
        if finding.verification.rung is None:
            continue
        try:
            text = script(finding)
        except (NotRenderable, KeyError, TypeError, ValueError) as exc:
            notices.append(f"no reproducer for {finding.path}:{finding.line}: {exc}")
            continue
        path = directory / unique(file_name(finding), used)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            notices.append(f"--emit-repro: cannot write {path}: {exc.strerror or exc}")
            continue
        finding.repro = str(path)
    return notices


def unique(name: str, used: set[str]) -> str:
    """The name, or ``<name>_2.py``... when two findings share file stem, line and code."""
    stem, n, out = name[:-3], 2, name
    while out in used:
        out, n = f"{stem}_{n}.py", n + 1
    used.add(out)
    return out


def file_name(finding: Finding) -> str:
    """``<file-stem>_<line>_<code>.py``."""
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(finding.path).stem)
    return f"{stem}_{finding.line}_{finding.rule}.py"


def script(finding: Finding) -> str:
    record = finding.verification.repro or {}
    if record.get("rung") == "training":
        return repro_training.script(finding, record["probe"])
    if record.get("rung") == "training-program":
        return program_script(finding, record["spec"])
    if record.get("rung") == "graph":
        from .repro_graph import script as graph_script  # a saved model's finding

        return graph_script(finding, record)
    return witness_script(finding, record)


def program_script(finding: Finding, spec: dict[str, Any]) -> str:
    """The training rung's own run, written out: the program's slice trained to the hazard."""
    from .repro_program import render
    from .repro_program_eval import evaluator_source

    how = (
        "It replays the verifier's training run: the objective the program optimizes, rebuilt\n"
        "from TensorFlow ops, with the program's initializers, data code and optimizer, trained\n"
        "inside a tf.function (TensorFlow's graph optimizer on, as the program runs)."
    )
    layout = render(spec, evaluator_source())
    return (
        header(finding, how)
        + "\n\n"
        + layout.script(spec.get("steer") or False, int(spec.get("draw") or 0))
    )


# ---------------------------------------------------------------- the witness rung


def witness_script(finding: Finding, record: dict[str, Any]) -> str:
    probe = record["probe"]
    v = finding.verification
    dtype = probe.get("dtype") or v.dtype or "float32"
    inputs = [spec_of(s) for s in probe.get("inputs") or []]
    taken: set[str] = set()
    names = {i["name"]: identifier(i["name"], taken) for i in inputs}
    r = Renderer(names)
    target = r.expr(probe["target"])
    loss = r.expr(probe["loss"]) if probe.get("loss") is not None else None
    eps = probe.get("eps")
    # the eps-free twin only where the symptom compares with it: in one graph with the target
    # it shares the target's subexpressions, which changes what the graph optimizer may fold
    absorbed = v.symptom == "epsilon-absorbed" and eps is not None
    noeps = r.expr(without(probe["target"], float(eps))) if absorbed else None
    point = witness_values(inputs, v.inputs or {})
    how = (
        "It rebuilds the slice the verifier traced, from TensorFlow ops alone, at its witness\n"
        "point, and evaluates it twice: eagerly, and inside a tf.function with TensorFlow's\n"
        "graph optimizer on, as the program runs under tf.function, Keras fit or a Session."
    )
    parts = [
        header(finding, how),
        f"DTYPE = tf.{dtype}\nTHRESHOLD = {number(record.get('threshold', 1e6))}  "
        "# a gradient this many times the value's scale explodes\n",
        r.helper_source(),
        witness_block(inputs, names, point, int(record.get("k", 1)), int(record.get("rank", 2))),
        forward_block(inputs, names, target, loss, noeps),
        evaluate_block(inputs),
        check_block(str(v.symptom), inputs, probe, eps, v.observed or {}),
        MAIN,
    ]
    return "\n\n".join(p.rstrip() for p in parts if p) + "\n"


def spec_of(spec: dict[str, Any]) -> dict[str, Any]:
    """An input as the verifier modelled it (``program.declared_inputs``)."""
    lo, hi = float(spec.get("lo", "-inf")), float(spec.get("hi", "inf"))
    is_prob = bool(spec.get("prob")) or spec.get("producer") in ops.PROBABILITY
    return {
        "name": str(spec["name"]),
        "prob": is_prob and lo <= 0 and hi >= 1,
        "scale": spec.get("row") == "scale",
    }


def witness_values(inputs: list[dict[str, Any]], seen: dict[str, Any]) -> list[float | None]:
    """Each input's free value at the witness: a probability's logit, else the value; None
    where the verdict names none (the script then says which value it chose)."""
    out: list[float | None] = []
    for spec in inputs:
        key = f"logit({spec['name']})" if spec["prob"] else spec["name"]
        raw = seen.get(key)
        out.append(None if raw is None else float(raw))
    return out


def without(tree: Any, eps: float) -> Any:
    """The tree with the epsilon constant replaced by 0 (``program.without_eps``)."""
    if isinstance(tree, dict):
        if tree.get("k") == "const" and float(tree["v"]) == eps:
            return {"k": "const", "v": 0.0}
        return {k: without(v, eps) for k, v in tree.items()}
    if isinstance(tree, list):
        return [without(v, eps) for v in tree]
    return tree


def witness_block(
    inputs: list[dict[str, Any]], names: dict[str, str], point: list[float | None], k: int,
    rank: int,
) -> str:  # fmt: skip
    shape = [1] * (rank - 1) + [k]
    lines = [
        "def witness():",
        '    """The witness point, one tensor per input at the shape the verifier gave it."""',
        "    xs = []",
    ]
    for spec, value in zip(inputs, point, strict=True):
        chosen = value if value is not None else 0.0 if spec["prob"] else 1.0
        note = "" if value is not None else "  # the verdict names no value: an ordinary one"
        whole = k == 1 or spec["prob"] or spec["scale"]
        what = f"logit of {spec['name']}" if spec["prob"] else spec["name"]
        lines.append(f"    x = np.full({shape}, {number(chosen)})  # {what}{note}")
        if not whole:
            lines.append("    x[..., 1:] = 0.0  # a row against a reference entry of 0")
        lines.append("    xs.append(tf.constant(x, DTYPE))")
    lines.append("    return xs")
    return "\n".join(lines)


def forward_block(
    inputs: list[dict[str, Any]], names: dict[str, str], target: str, loss: str | None,
    noeps: str | None,
) -> str:  # fmt: skip
    args = ", ".join(names[i["name"]] for i in inputs)
    lines = [
        f"def forward(dtype, {args}):" if args else "def forward(dtype):",
        '    """The flagged expression and its statement, as sliced from the source."""',
        f"    target = tf.cast({target}, dtype)",
    ]
    if loss is not None:
        lines += [
            "    try:",
            f"        loss = tf.cast({loss}, dtype)",
            "    except (TypeError, ValueError, tf.errors.OpError):",
            "        loss = target  # the statement does not build at these shapes",
        ]
    else:
        lines.append("    loss = target")
    lines.append(f"    noeps = tf.cast({noeps}, dtype)" if noeps else "    noeps = target")
    lines.append("    return target, loss, noeps")
    return "\n".join(lines)


def evaluate_block(inputs: list[dict[str, Any]]) -> str:
    probs = [j for j, spec in enumerate(inputs) if spec["prob"]]
    return f'''def evaluate(xs, dtype=DTYPE):
    """Values and gradients at the point: d(value)/d(each input), d(loss)/d(each free input)."""
    xs = [tf.cast(x, dtype) for x in xs]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        values = [tf.math.sigmoid(x) if j in {probs!r} else x for j, x in enumerate(xs)]
        target, loss, noeps = forward(dtype, *values)
        t_sum, l_sum = tf.reduce_sum(target), tf.reduce_sum(loss)
    grads = [tape.gradient(t_sum, v) for v in values]
    loss_grads = [tape.gradient(l_sum, x) for x in xs]
    return {{
        "value": target,
        "loss": loss,
        "noeps": noeps,
        "gradient": [tf.zeros_like(v) if g is None else g for g, v in zip(grads, values)],
        "loss_gradient": [tf.zeros_like(x) if g is None else g for g, x in zip(loss_grads, xs)],
    }}


FORMS = {{"eager": evaluate, "compiled (tf.function, graph optimizer on)": tf.function(evaluate)}}'''


def hazard_inputs(inputs: list[dict[str, Any]], probe: dict[str, Any]) -> list[int]:
    """The logits whose gradient dies (``symptoms.hazard_logits``): those under the flagged
    expression, or every logit of the statement."""

    def logits(tree: Any) -> set[str]:
        found: set[str] = set()
        for node in walk(tree):
            if node.get("k") == "call" and node.get("op") in LOGIT_OPS:
                found |= {n["name"] for n in walk(node.get("args")) if n.get("k") == "input"}
                kw = (node.get("kw") or {}).get("logits")
                found |= {n["name"] for n in walk(kw) if n.get("k") == "input"}
        return found

    read = {n["name"] for n in walk(probe.get("target")) if n.get("k") == "input"}
    probs = {i["name"] for i in inputs if i["prob"]}
    own = logits(probe.get("target")) | (probs & read)
    every = logits(probe.get("target")) | logits(probe.get("loss")) | probs
    chosen = own or every
    return [j for j, i in enumerate(inputs) if i["name"] in chosen] or list(range(len(inputs)))


def check_block(
    symptom: str, inputs: list[dict[str, Any]], probe: dict[str, Any], eps: Any,
    observed: dict[str, Any],
) -> str:  # fmt: skip
    """``shows(out)``: whether one evaluation shows the symptom, printing what it saw."""
    head = "def shows(out):\n"
    head += f'    """Whether this evaluation shows {symptom}."""\n'
    head += "    value = out['value'].numpy()\n"
    head += "    grads = [g.numpy() for g in out['gradient']]\n"
    head += "    print('  value:', value.ravel()[:6])\n"
    if symptom in ("nan-value", "inf-value"):
        body = "    return not np.isfinite(value).all()"
    elif symptom in ("nan-gradient", "inf-gradient"):
        body = (
            "    print('  gradient:', [g.ravel()[:6] for g in grads])\n"
            "    return np.isfinite(value).all() and not all(np.isfinite(g).all() for g in grads)"
        )
    elif symptom == "exploding-gradient":
        body = (
            "    print('  gradient:', [g.ravel()[:6] for g in grads])\n"
            "    finite = np.isfinite(value).all() and all(np.isfinite(g).all() for g in grads)\n"
            "    largest = max(float(np.abs(g).max()) for g in grads) if grads else 0.0\n"
            "    scale = max(1.0, float(np.abs(np.nan_to_num(value, posinf=0, neginf=0)).max()))\n"
            "    print(f'  largest |gradient| {largest:.4g}, {largest / scale:.3g} x the value')\n"
            "    return finite and largest > THRESHOLD * scale"
        )
    elif symptom == "dead-gradient":
        dying = hazard_inputs(inputs, probe)
        body = (
            f"    dying = [out['loss_gradient'][j].numpy() for j in {dying!r}]\n"
            "    loss = out['loss'].numpy()\n"
            "    print('  loss:', loss.ravel()[:6], ' d(loss)/d(logits):', [d.ravel()[:6] for d in dying])\n"
            "    return np.isfinite(loss).all() and all((d == 0).all() for d in dying)"
        )
    elif symptom == "epsilon-absorbed":
        e = number(eps if eps is not None else 0.0)
        body = (
            "    same = out['noeps'].numpy()\n"
            f"    print('  without the {e}:', same.ravel()[:6])\n"
            "    return np.isfinite(value).all() and np.array_equal(value, same)"
        )
    elif symptom == "diverges":
        body = (
            "    exact = evaluate(witness(), tf.float64)['value'].numpy()\n"
            "    rel = np.abs(value - exact) / np.maximum(np.abs(exact), 1e-300)\n"
            "    print('  float64:', exact.ravel()[:6], ' relative error:', rel.ravel()[:6])\n"
            "    return np.isfinite(value).all() and bool((rel > 1e-2).any())"
        )
    elif symptom == "epsilon-underflow":
        e = number(observed.get("eps", eps if eps is not None else 0.0))
        body = (
            f"    stored = float(tf.cast(tf.constant({e}, tf.float64), DTYPE).numpy())\n"
            f"    print('  tf.cast({e}, DTYPE) =', stored)\n"
            "    return stored == 0.0"
        )
    else:
        raise ValueError(f"no reproducer for the symptom {symptom!r}")
    return head + body


MAIN = """def main():
    seen = []
    for form, run in FORMS.items():
        print(f"{form}:")
        if shows(run(witness())):
            seen.append(form)
    if seen:
        print("REPRODUCED in:", "; ".join(seen))
        return 1
    print("not reproduced: every form is fine")
    return 0


if __name__ == "__main__":
    sys.exit(main())"""
