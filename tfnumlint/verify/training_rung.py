"""The training rung: train the program's own slice and see whether it reaches the hazard.

``repro_program.render`` writes the objective the program optimizes as a script (weights
with their initializers, the program's data replayed, its optimizer); this module runs that
text, compiled with TensorFlow's graph optimizer on, as a Session, ``tf.function`` or ``fit``
runs it.  The text is ours, built from allow-listed ops and the data recipe: nothing of the
analysed program runs.

The verdict is **confirmed** only when training reaches a step where the flagged term itself
(its value, or the loss's gradient with respect to it) is not finite; a run that goes
non-finite elsewhere confirms nothing about this term and says where it broke.  A control run
at a tenth of the learning rate says whether the step size is what drives it.  A run that
stays finite says nothing either way: it keeps the verdict of the rungs below.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from typing import Any

import tensorflow as tf

from . import kinds, produced
from .repro_program import Rendered, batch_size, drawn_labels, render
from .repro_program_eval import evaluator_source
from .trace import format_number
from .training_saturation import graph_optimizer
from .training_text import assumed

SAFETY_SHARE = 0.8  # of the rung's budget (24 s of the default 30): step budgets keep under it
# Other starts of the weights tried after a finite run on the data: each a draw of the program's
# initializers, as another run of it makes, trained this many steps (a start that breaks at once)
INIT_DRAWS = 2
DRAW_STEPS = 20


def safety_seconds() -> float:
    """When the runs stop, whatever their step budgets: before the share of the probe's budget
    a training probe gets for them (``runner.TRAINING_BUDGETS``) is used.  A longer budget
    (``--probe-timeout``) lets a slow or busy machine finish the same steps, so the verdict is
    the same."""
    from .runner import TRAINING_BUDGETS, probe_timeout

    return SAFETY_SHARE * TRAINING_BUDGETS * probe_timeout()


def rendered(spec: dict[str, Any]) -> Rendered:
    return render(spec, evaluator_source())


@functools.lru_cache(maxsize=8)
def _namespace(body: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "tfnumlint_training_rung"}
    exec(compile(body, "<tfnumlint training rung>", "exec"), namespace)  # our text, see above
    namespace[
        "__runs__"
    ] = {}  # (lr, steer, steps) -> the run: findings of one objective share them
    return namespace


def steer_modes(namespace: dict[str, Any]) -> tuple[bool | str, ...]:
    """The program's data, then one example repeated; a feed drawn from a range (an advantage,
    a reward) is also held at each end of it, since the sign it takes decides which way
    training pushes the flagged term (GRIST steers its inputs toward the hazard the same way)."""
    return (False, True, "low", "high") if namespace.get("RANGES") else (False, True)


def run_modes(namespace: dict[str, Any]):
    """(steer, draw) of each run in turn: the data from the program's start, then from other
    draws of its initializers (the program's weights start at random: a start that breaks at
    once is one of its runs), then steered."""
    for steer in steer_modes(namespace):
        yield steer, 0
        if steer is False:
            yield from ((False, draw) for draw in range(1, INIT_DRAWS + 1))


def _train(
    namespace: dict[str, Any],
    lr: float,
    steer: bool | str,
    steps: int | None,
    seconds: float,
    draw: int = 0,
):
    """One run, or the same run made for another finding of this objective."""
    key = (lr, steer, steps, draw)
    runs = namespace["__runs__"]
    if key not in runs:
        runs[key] = namespace["train"](lr, steps=steps, steer=steer, seconds=seconds, draw=draw)
    return runs[key]


def run_body(
    body: str,
    whole: bool,
    control_divisor: float = 10.0,
    further: tuple[float, ...] = (),
    flagged: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """Run an objective's ``train`` on the program's data, then, if nothing breaks, steered
    to one example; a run that breaks is repeated at a tenth of the rate (the control).  For a
    claim about the step size (``further``: a finding on the whole run's learning rate), a
    control that breaks too is followed by smaller rates (``lr / d`` for each ``d``), when the
    run's own break was a geometric blow-up.  The runs are shared by every finding of the
    objective.  Another start of the weights counts only when it breaks where the finding is
    (``flagged``; for a whole run, its loss or weights)."""
    namespace = _namespace(body)
    lr = float(namespace["LEARNING_RATE"])
    got: dict[str, Any] = {}
    copies: dict[str, Any] | None = None  # a steered break where the batch's spread is read
    broke: dict[str, Any] | None = None  # a run that broke at a tenth of the rate as well
    deadline = time.perf_counter() + safety_seconds()
    cut = False  # a run stopped by the time budget, or a mode never run: no evidence
    draws = 0  # other starts of the weights tried, each finite
    with graph_optimizer():
        for steer, draw in run_modes(namespace):
            left = deadline - time.perf_counter()
            if left <= 0:
                cut = True
                break
            run = _train(namespace, lr, steer, DRAW_STEPS if draw else None, left, draw)
            if steer and on_copies_spread(run, namespace):
                copies = run  # copies of one example have no spread: no evidence either way
                continue
            if draw and not _breaks_there(run, flagged, whole):
                draws += run["step"] is None  # it trains: the run from the program's start stands
                continue
            got = run
            cut = got["step"] is None and got["steps"] < got["budget"]
            if got["step"] is not None:
                # the control runs ten times the steps the break took (a tenth of the rate
                # goes as far in ten times the steps), within the run's own budget
                steps = min(got["budget"], max(100, 10 * (got["step"] + 1)))
                left = max(deadline - time.perf_counter(), 1.0)
                control = _train(namespace, lr / control_divisor, steer, steps, left, draw)
                tried = [(control_divisor, control)]
                if whole and control["step"] is not None and further and blew_up(got, steps):
                    tried += _smaller_rates(namespace, lr, steer, steps, further, deadline)
                    control = tried[-1][1]
                short = len(tried) > 1 and control["steps"] < steps  # a smaller rate was cut
                calm = len(tried) > 1 and not short and not trains(control, steps)
                if whole and (control["step"] is not None or short or calm):
                    # every rate broke, or the last smaller one stayed finite while its loss
                    # kept rising, or was stopped by the budget
                    broke = {"run": got, "control": control, "steer": steer, "rate_free": True,
                             "tried": tried, "steps": steps, "draw": draw}  # fmt: skip
                    continue  # the learning rate is not shown to break it: try the other mode
                return {"run": got, "control": control, "steer": steer, "tried": tried,
                        "draw": draw}  # fmt: skip
    if broke is not None:
        return broke
    return {"run": got, "control": None, "steer": False, "cut": cut, "copies": copies,
            "draws": draws}  # fmt: skip


def _breaks_there(run: dict[str, Any], flagged: frozenset[int], whole: bool) -> bool:
    if run["step"] is None:
        return False
    if whole:
        return not (run["loss_finite"] and run["weights_finite"])
    return bool(flagged & set(run["origins"]))


def on_copies_spread(got: dict[str, Any], namespace: dict[str, Any]) -> bool:
    """A steered run's break that starts only where the batch's spread is read: its batch
    is copies of one example, whose standard deviation or centred value is exactly 0."""
    origins = set(got.get("origins") or {})
    return got["step"] is not None and bool(origins) and origins <= set(namespace["SPREAD"])


def _smaller_rates(
    namespace: dict[str, Any], lr: float, steer: bool | str, steps: int, further, deadline: float
) -> list[tuple[float, dict[str, Any]]]:
    """Runs at ``lr / d`` for each ``d`` in turn, ``steps`` steps each (the control's), up
    to the first that trains (:func:`trains`); one the time budget leaves no room for is
    marked as run for 0 steps."""
    out: list[tuple[float, dict[str, Any]]] = []
    for divisor in further:
        left = deadline - time.perf_counter()
        if left <= 0:
            out.append((divisor, {"step": None, "steps": 0}))
            break
        out.append((divisor, _train(namespace, lr / divisor, steer, steps, left)))
        run = out[-1][1]
        if trains(run, steps) or (run["step"] is None and run["steps"] < steps):
            break  # it trains, or the time budget cut it
    return out


def trains(run: dict[str, Any], steps: int) -> bool:
    """A smaller rate's run shows a rate that trains: finite for all its ``steps``, and its
    loss does not rise (:func:`loss_held`).  A tiny rate stays finite for as long as any run
    lasts even where every rate diverges (more slowly); one whose loss holds is stable there."""
    return run["step"] is None and run["steps"] >= steps and loss_held(run)


def loss_held(run: dict[str, Any]) -> bool:
    """The loss's size over the run's last tenth of steps is, on average, at most its largest
    over the first tenth: it settles or falls (a plateau of an ill-conditioned fit counts, and
    a batch of one example makes each step's loss another example's), where a divergence,
    however slow, keeps rising past where it started."""
    losses = [abs(float(v)) for v in run.get("losses") or [run["first_loss"], run["loss"]]]
    tenth = max(1, len(losses) // 10)
    return sum(losses[-tenth:]) / tenth <= max(losses[:tenth])


def blew_up(got: dict[str, Any], steps: int) -> bool:
    """Did the run's break come as a geometric blow-up, early?  Within a tenth of ``steps``
    (the control's), the loss rose at every step from its lowest value to the break (a
    non-finite loss counts as a rise), over two steps or more, at least twofold a step on
    average while it was finite.  A slow drift, or a break out of a calm run, is not one."""
    losses = [abs(v) for v in got.get("losses") or []]
    if got["step"] is None or 10 * (got["step"] + 1) > steps or not losses:
        return False
    finite = [i for i, v in enumerate(losses) if math.isfinite(v)]
    if not finite:
        return False
    low = min(finite, key=lambda i: losses[i])
    tail = losses[low:]
    if len(tail) < 3 or losses[low] <= 0:
        return False
    if any(math.isfinite(b) and b <= a for a, b in itertools.pairwise(tail)):
        return False
    last = max(i for i in finite if i >= low)
    return last > low and (losses[last] / losses[low]) ** (1 / (last - low)) >= 2.0


def flagged_origin(got: dict[str, Any], layout: Rendered) -> int | None:
    """The flagged operation where the run's break starts, if it starts there (for a
    learning rate, -1 when the loss or the weights are no longer finite)."""
    if got["step"] is None:
        return None
    if layout.term < 0:
        return -1 if not (got["loss_finite"] and got["weights_finite"]) else None
    mine = sorted(layout.flagged() & set(got["origins"]))
    return mine[0] if mine else None


def verify_program(spec: dict[str, Any]) -> dict[str, Any]:
    """A verdict from training the slice: confirmed (the program's own run breaks at the
    flagged operation), inconclusive (it does on data the code does not give), or ``status:
    finite`` with the run, which says nothing either way."""
    start = time.perf_counter()
    layout = rendered(spec)
    whole = layout.term < 0
    further = tuple(float(d) for d in spec.get("further") or ())
    control_divisor = float(spec.get("control") or 10.0)
    out = run_body(layout.body, whole, control_divisor, further, frozenset(layout.flagged()))
    got, control = out["run"], out["control"]
    if not got:  # the safety net stopped it before a run was made
        return {"status": "not run"}
    origin = flagged_origin(got, layout)
    if origin is None or out.get("rate_free"):
        return {"status": "finite", "run": got, "spec": spec, "own": own_evidence(spec),
                "where": layout.where, "files": layout.files, "control": control,
                "tried": out.get("tried") or [], "steps": out.get("steps"),
                "cut": bool(out.get("cut")),
                "copies": out.get("copies"), "draws": out.get("draws", 0)}  # fmt: skip
    spec = {**spec, "steer": out["steer"], "draw": out.get("draw", 0)}
    how = "value" if whole else got["origins"][origin]
    verdict = {
        "status": "confirmed" if own_evidence(spec) else "inconclusive",
        "detail": describe(spec, got, control, how, out.get("tried")),
        "symptom": symptom(got, how, whole),
        "dtype": spec.get("dtype"),
        "observed": {"step": got["step"], "loss": got["loss"]},
        "training_seconds": round(time.perf_counter() - start, 3),
    }
    verdict["reached"] = verdict["detail"]
    if verdict["status"] == "confirmed" and whole and short_control(got, control):
        verdict["status"] = "inconclusive"
        verdict["detail"] = (
            f"no verdict: {verdict['detail']}, but the control stopped at its time budget "
            f"before step {got['step']}: it does not show that the learning rate breaks it"
        )
    elif verdict["status"] == "confirmed":
        verdict["repro"] = {"rung": "training-program", "spec": spec}
    else:
        verdict["detail"] = f"no verdict: {verdict['detail']}, which is not the program's own data"
    return verdict


def short_control(got: dict[str, Any], control: dict[str, Any] | None) -> bool:
    """The control stayed finite only because it stopped first: it ran no further than the
    step at which the run broke (a busy machine's time budget), so it shows nothing."""
    return (
        control is not None
        and control["step"] is None
        and got["step"] is not None
        and control["steps"] <= got["step"]
    )


def own_evidence(spec: dict[str, Any]) -> bool:
    """Is the run the program's own?  Every weight starts as the code starts it, and every
    feed is the program's: replayed from its data code (steered, the repeated example is one
    of its rows), a whole number below the depth of the one_hot that reads it (an action,
    a class id: each one the program can pick), a value inside the range the code gives
    the feed (an advantage ``r - baseline``), held at one end of it when steered, or an output
    of the probability op the code produces the feed with (a softmax row: ``produced.py``),
    which is inside what that producer emits though not its own values."""
    if spec.get("assumed"):
        return False
    indices = {n for n, kind in drawn_labels(spec).items() if kind == kinds.INDICES}
    drawn = set(produced.produced(spec))
    return all(
        feed.get("data") or feed.get("range") is not None or name in indices | drawn
        for name, feed in ((n, (d.get("feeds") or [{}])[0]) for n, d in spec["data"].items())
    )


def reached(trained: dict[str, Any]) -> str:
    """What a run that did not confirm saw, for the verdict it leaves standing."""
    got, spec = trained["run"], trained["spec"]
    head = run_text(spec) + assumed(spec.get("assumed") or [])  # a run with them says so
    if trained.get("cut"):
        return f"{head} was stopped by its time budget after {got['steps']} steps, finite so far"
    if got["step"] is None:
        copies, draws = trained.get("copies"), trained.get("draws")
        starts = (
            f", and for {DRAW_STEPS} steps from "
            + ("another draw" if draws == 1 else f"each of {draws} other draws")
            + " of its initial weights"
            if draws
            else ""
        )
        return f"{head} stays finite for {got['steps']} steps{starts}" + (
            f" (a batch of copies of one example breaks at step {copies['step']}, where the "
            "batch's spread is read: copies have none, the program's batches do)"
            if copies
            else ""
        )
    control = trained.get("control")
    if spec.get("whole") and control is not None and len(trained.get("tried") or []) > 1:
        return f"{head} goes non-finite at step {got['step']}, and {smaller_rates(trained)}"
    if spec.get("whole") and control is not None and control["step"] is not None:
        if spec.get("further"):  # a claim about the step size, but no blow-up to take smaller
            return (
                f"{head} goes non-finite at step {got['step']}, and at a tenth of the rate too "
                f"(step {control['step']}), with no geometric blow-up of the loss before its "
                "break: the learning rate is not shown to be what breaks it"
            )
        return (
            f"{head} goes non-finite at step {got['step']}, and at a tenth of the rate too (step "
            f"{control['step']}): the learning rate is not what breaks it"
        )
    starts = ", ".join(place(trained, i) for i in got["origins"]) or "an update"
    return f"{head} goes non-finite at step {got['step']}, starting at {starts}, not at this term"


def smaller_rates(trained: dict[str, Any]) -> str:
    """What the controls of a claim about the step size saw, when none confirmed it: every
    rate tried broke too or stayed finite while its loss kept rising, or the last one was
    stopped by the time budget."""
    spec, tried = trained["spec"], trained["tried"]
    last_rate, last = rate_text(spec, tried[-1][0], len(tried) == 1), tried[-1][1]
    if last["step"] is None and last["steps"] < int(trained.get("steps") or 1):
        cut = (
            f"{last_rate} did not start within the time budget"
            if not last["steps"]
            else f"{last_rate} was stopped by the time budget after {last['steps']} steps, "
            "finite so far"
        )
        return f"{ladder(spec, tried[:-1])}; {cut}: whether a smaller rate trains is not shown"
    return (
        f"{ladder(spec, tried)}: no rate tried trains it, so the runs do not show that the "
        f"learning rate is what breaks it (something else does, or it needs less than "
        f"{last_rate})"
    )


def ladder(spec: dict[str, Any], tried: list) -> str:
    """The controls' runs in order, runs alike told together: ``at lr / 10 to lr / 10000 (each
    a tenth) too (steps 9, 5, 5 and 9); at lr / 100000 it stays finite for 100 steps, its loss
    not rising``.  A smaller rate's finite run trains only if its loss held."""
    groups: list[tuple[str, list[str], list[dict[str, Any]]]] = []
    for i, (divisor, run) in enumerate(tried):
        kind = "broke" if run["step"] is not None else "finite"
        if kind == "finite" and i > 0 and not loss_held(run):
            kind = "calm"  # a smaller rate that stays finite but confirms nothing
        if groups and groups[-1][0] == kind:
            groups[-1][1].append(rate_text(spec, divisor, i == 0))
            groups[-1][2].append(run)
        else:
            groups.append((kind, [rate_text(spec, divisor, i == 0)], [run]))
    return "; ".join(_told(kind, rates, runs, len(tried) > 1) for kind, rates, runs in groups)


def _told(kind: str, rates: list[str], runs: list[dict[str, Any]], smaller: bool) -> str:
    span = _listed(rates) if len(rates) <= 3 else f"{rates[0]} to {rates[-1]} (each a tenth)"
    if kind == "broke":
        steps = _listed([str(run["step"]) for run in runs])
        return f"at {span} too (step{'s' if len(runs) > 1 else ''} {steps})"
    run = runs[-1]
    text = f"at {span} it stays finite for {run['steps']} steps"
    if kind == "calm":
        return f"{text}, but its loss keeps rising"
    if smaller:
        text += ", its loss not rising"
    return text


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def rate_text(spec: dict[str, Any], divisor: float, first: bool) -> str:
    """A control's rate: the spec's own wording for the first control, ``lr / 100`` for a
    smaller one."""
    if first:
        return str(spec.get("control_text") or "lr / 10")
    return f"lr / {format_number(divisor)}"


def place(trained: dict[str, Any], i: int) -> str:
    """Where the watched operation ``i`` is: its line, with its module's path when that is
    not the finding's (code of a module the objective imports, or the objective's own when
    the finding is in an imported one)."""
    spec, line = trained["spec"], trained["where"][i][0]
    files = trained.get("files") or []
    path = (files[i] if i < len(files) else "") or str(spec.get("path") or "")
    own = str(spec.get("file") or spec.get("path") or "")
    return f"line {line}" if path == own else f"{path}:{line}"


def symptom(got: dict[str, Any], how: str, whole: bool) -> str:
    if whole:
        return "diverges"
    return "nan-gradient" if how == "gradient" else "nan-value"


def describe(spec: dict[str, Any], got: dict[str, Any], control: dict[str, Any] | None,
             how: str, tried: list | None = None) -> str:  # fmt: skip
    """``training the program's slice (adam at lr 0.01, batches of 128, ...) reaches it at
    step 16: its value is not finite``, with the control and what was assumed."""
    what = {
        "value": "its value is the first to be non-finite",
        "gradient": "the gradient it passes back is the first to be non-finite",
    }.get(how, how)
    if spec.get("whole"):
        what = "the loss or the weights are no longer finite"
    draw = int(spec.get("draw") or 0)
    before = "draw 1 trains" if draw == 1 else f"draws 1 to {draw} train"
    start = (
        f" from draw {draw + 1} of its initial weights (its initializers draw them at random; "
        f"{before} finitely)"
        if draw
        else ""
    )
    text = (
        f"{run_text(spec)} reaches it at step {got['step']}{start}: {what} "
        f"(the loss was {format_number(got['first_loss'])} at step 0)"
    )
    runs = tried or ([(0.0, control)] if control else [])
    if runs:
        text += f"; {ladder(spec, runs)}"
    if spec.get("assumed"):
        text += "; assumed: " + "; ".join(spec["assumed"])
    return text


def run_text(spec: dict[str, Any]) -> str:
    """What was trained, how, and on what data."""
    opt = spec["optimizer"]
    batch, known = batch_size(spec)
    rows = (
        "every fed row"
        if batch is None
        else f"batches of {batch}" + ("" if known else " (assumed)")
    )
    momentum = f" (momentum {format_number(opt['momentum'])})" if opt.get("momentum") else ""
    if opt.get("schedule"):
        momentum += f", decayed by its {opt['schedule']['kind']}"
    return (
        f"training the program's slice ({opt['optimizer']} at lr "
        f"{format_number(opt.get('learning_rate') or 0.001)}{momentum}, {rows}, compiled as the "
        f"program runs) on {sources(spec)}"
    )


def sources(spec: dict[str, Any]) -> str:
    """Where the data came from: the program's NumPy code replayed, a known dataset's
    synthetic stand-in, a range, or an assumption."""
    parts = []
    labels = drawn_labels(spec)
    for name, d in spec["data"].items():
        feed = (d.get("feeds") or [{}])[0]
        stand_in = (feed.get("data") or {}).get("stand_in")
        if stand_in is not None:
            how = (
                f"a synthetic stand-in for {stand_in} (its shapes, range and classes; "
                "the real images are not read)"
            )
            how += ", one of its rows, repeated" if spec.get("steer") else ""
        elif feed.get("data") is not None:
            how = "one of its rows, repeated" if spec.get("steer") else "its data code replayed"
        elif (got := produced.producer(spec, name)) is not None:
            how = produced.described(got, spec.get("steer") or False)
        elif feed.get("range") is not None:
            lo, hi = (format_number(v) for v in feed["range"])
            how = {
                False: f"uniform draws in its fed range [{lo}, {hi}]",
                "low": f"the low end of its fed range [{lo}, {hi}] ({lo}), repeated",
                "high": f"the high end of its fed range [{lo}, {hi}] ({hi}), repeated",
            }.get(spec.get("steer") or False, f"a corner of its fed range [{lo}, {hi}], repeated")
        elif labels.get(name) == kinds.INDICES:
            depth = kinds.one_hot_depths(spec.get("loss"))[name]
            how = (
                f"one whole number in [0, {depth}), repeated"
                if spec.get("steer")
                else f"whole numbers drawn uniformly in [0, {depth})"
            ) + (
                f" (ids of an Embedding of {depth} rows: each a row the program can look up, "
                "paired with the other feeds at random)"
                if name in kinds.looked_up(spec.get("loss"))
                else f" (indices of a one_hot of depth {depth}: each a class the program can "
                "pick, paired with the other feeds at random)"
            )
        elif name in labels:
            how = (
                f"one-hot rows of {(d.get('shape') or [None, '?'])[1]} classes"
                if labels[name] == kinds.CLASSES
                else "0/1 labels"
            ) + " (read as the loss's labels; their values are not read from the code)"
        else:
            how = "uniform draws in [-1, 1] (its values are not read from the code)"
        parts.append(f"`{name}` = {how}")
    return "; ".join(parts) or "no data"


def traceable(spec: dict[str, Any]) -> bool:
    """Quick refusal of specs the script cannot run (no data, no weights)."""
    return bool(spec.get("weights")) and tf.executing_eagerly()
