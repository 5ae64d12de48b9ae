"""Parameter sweeps on Dask: many simulations of variants of one robot, resumable, in one Parquet file.

A sweep varies fields of the model-file data (paths like ``links.1.beam.EI`` or, by the link's or
its joint's name, ``links.forearm_link.beam.EI``, ``payload.mass``,
``controller.kp``, ``controller.trajectory.points.1.0``: model parameters, controller gains and
the manoeuvre alike), builds each variant with the model-file validation, simulates it and keeps
a few figures per point:

* ``peak_tip_deflection`` (m): largest distance of the tip (the robot's end effector, or the link
  or named frame ``run.frame``, e.g. a URDF's ``tool0``) from its place on the undeformed arm;
* ``settling_time`` (s): last time the tip is farther from where it comes to rest (the final
  joint angles with the beams in static equilibrium: the sag under gravity) than
  ``settle_fraction`` of its largest excursion from there;
* ``torque_peak_<joint>`` (N m or N): largest applied |torque| per joint;
* ``lowest_frequency`` (Hz): lowest flexible natural frequency at the initial state, joints locked
  (``natural_frequencies(robot, q, joints="locked")``: no rigid-body or free-joint mode).

Points are drawn as a full grid (lists of values), a Latin hypercube or Monte Carlo samples
(ranges ``{min: .., max: ..}``). The points run as tasks on a ``dask.distributed`` cluster: a
LocalCluster on this machine unless ``scheduler`` gives the address of a running scheduler.
Dask reruns the tasks of a worker that dies on another worker; each finished point is written at
once to ``<out>.parts/`` (atomic rename), so a sweep stopped by a crash or Ctrl-C resumes where
it stopped: finished points are read back, not recomputed. The end result is one Parquet file
with a column per parameter and per figure (and ``error`` for a point whose model or run failed).
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

from .model.limits import MAX_SWEEP_POINTS, SWEEP_POINT_SECONDS, check_run_size
from .outputs import staged, write_text
from .extras import require

SAMPLINGS = ("grid", "latin_hypercube", "monte_carlo")
FIGURES = ("peak_tip_deflection", "settling_time", "torque_peaks", "lowest_frequency")
RUN_KEYS = ("t_final", "dt", "method", "controller", "torque", "q0", "rtol", "atol", "backend", "time_limit", "frame")
NOT_SIMULATE_KEYS = ("controller", "t_final", "time_limit", "frame")  # run keys read here, not passed to simulate


class SweepError(ValueError):
    """A sweep specification that cannot run (the message names the field)."""


class PointTimeLimit(Exception):
    """A point that ran past ``run.time_limit``: recorded as failed with this reason."""


# ----- points ------------------------------------------------------------------------------------
def points(parameters, sampling="grid", samples=None, seed=0) -> list:
    """[{path: value}] of the sweep: every combination (grid) or ``samples`` draws."""
    if not isinstance(parameters, dict) or not parameters:
        raise SweepError("parameters: give a mapping {path: [values] or {min: .., max: ..}}")
    if sampling not in SAMPLINGS:
        raise SweepError(f"sampling: unknown '{sampling}'; use one of {', '.join(SAMPLINGS)}")
    names = list(parameters)
    specs = [_axis(name, parameters[name]) for name in names]
    if sampling == "grid":
        for name, spec in zip(names, specs):
            if spec[0] != "values":
                raise SweepError(f"parameters.{name}: a grid needs a list of values (ranges are for "
                                 "latin_hypercube and monte_carlo)")
        _size(math.prod(len(s[1]) for s in specs), len(names), "parameters (the grid: the product of the list lengths)")
        return [dict(zip(names, combo)) for combo in itertools.product(*(s[1] for s in specs))]
    if isinstance(samples, bool) or not isinstance(samples, (int, float)) or not samples >= 1 or (
            samples < float("inf") and int(samples) != samples):
        raise SweepError(f"samples: a whole number >= 1 for {sampling} (got {samples!r})")
    n = _size(samples, len(names), "samples")
    if sampling == "latin_hypercube":
        from scipy.stats import qmc

        unit = qmc.LatinHypercube(d=len(names), seed=seed).random(n)
    else:
        unit = np.random.default_rng(seed).random((n, len(names)))
    out = []
    for row in unit:
        point = {}
        for name, spec, u in zip(names, specs, row):
            if spec[0] == "range":
                point[name] = float(spec[1] + u * (spec[2] - spec[1]))
            else:
                point[name] = spec[1][min(int(u * len(spec[1])), len(spec[1]) - 1)]
        out.append(point)
    return out


def _size(count, n_parameters, option) -> int:
    """The number of points, refused before anything is allocated past MAX_SWEEP_POINTS."""
    try:
        return check_run_size(count, 2 * n_parameters + 8, "points", option, most=MAX_SWEEP_POINTS,
                              hint="split the sweep or sample it (latin_hypercube) with fewer points")
    except ValueError as exc:
        raise SweepError(str(exc)) from None


def _axis(name, spec):
    if isinstance(spec, dict):
        unknown = set(spec) - {"min", "max"}
        if unknown or not {"min", "max"} <= set(spec):
            raise SweepError(f"parameters.{name}: a range is {{min: .., max: ..}}")
        lo, hi = (_number(spec[k], f"parameters.{name}.{k}") for k in ("min", "max"))
        if not hi >= lo:
            raise SweepError(f"parameters.{name}: max must be >= min")
        return ("range", lo, hi)
    if isinstance(spec, (list, tuple)) and spec:
        return ("values", [_plain(v, f"parameters.{name}") for v in spec])
    raise SweepError(f"parameters.{name}: give a non-empty list of values or {{min: .., max: ..}}")


def _number(v, where):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise SweepError(f"{where}: expected a finite number, got {v!r}")
    return float(v)


def _plain(v, where):
    if isinstance(v, (list, tuple)):
        return [_number(x, where) for x in v]
    return _number(v, where)


# ----- one point -------------------------------------------------------------------------------
def apply(data, path, value):
    """Set ``path`` (dot-separated keys and list indices) in the model data ``data`` (in place).
    A scalar given for a list field sets every entry (e.g. ``controller.kp``, ``beam.EI``)."""
    keys = path.split(".")
    node = data
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        where = ".".join(keys[:depth + 1])
        if isinstance(node, list):
            key = _list_key(node, key, path, where)
        elif isinstance(node, dict):
            if key not in node and not last:
                raise SweepError(f"parameters.{path}: the model has no '{where}'")
        else:
            raise SweepError(f"parameters.{path}: '{'.'.join(keys[:depth])}' is a value, not a section")
        if last:
            old = node[key] if (isinstance(node, list) or key in node) else None
            node[key] = [value] * len(old) if isinstance(old, list) and not isinstance(value, list) else value
        else:
            node = node[key]
    return data


def _list_key(node, key, path, where) -> int:
    """The index in a list of the model data: a number, or, in a list of named items (the links),
    an item's name or its joint's name (``links.forearm_link``, ``links.elbow_joint``)."""
    if key.isdigit() and int(key) < len(node):
        return int(key)
    named = [item for item in node if isinstance(item, dict) and ("name" in item or "joint_name" in item)]
    if named and not key.isdigit():
        for i, item in enumerate(node):
            if isinstance(item, dict) and key in (item.get("name"), item.get("joint_name")):
                return i
        known = [n for item in named for n in (item.get("name"), item.get("joint_name")) if n]
        raise SweepError(f"parameters.{path}: no item of '{where.rsplit('.', 1)[0]}' is named '{key}'; give an index "
                         f"from 0 to {len(node) - 1} or one of {', '.join(known)}")
    raise SweepError(f"parameters.{path}: '{where}' is not an index of a list of {len(node)}")


def _point_robot(model_data, point):
    """The robot of one variant: the model's data with the point's values applied."""
    from .model.serialize import robot_from_dict

    data = copy.deepcopy(model_data)
    for path, value in point.items():
        apply(data, path, value)
    return robot_from_dict(data)


def _decide_backend(model_data, pts, todo, run):
    """``run`` for the workers after weighing one build against the whole sweep (backend "auto"):
    the compiled model is built here once, before the workers start (they find it in the disk
    cache: every variant of the same structure runs on that library); when the sweep is too short
    to pay for it, the workers run interpreted, said once here rather than once per point."""
    from .simulate.backend import default_backend, evaluator, fixed_step_work

    backend = str(run.get("backend") or default_backend()).lower()
    if backend != "auto" or not todo:
        return run
    try:
        robot = _point_robot(model_data, pts[todo[0]])
    except Exception:  # the point's own run reports it
        return run
    steps = int(np.ceil(float(run.get("t_final", 1.0)) / float(run.get("dt", 1e-3))))
    work = fixed_step_work(run.get("method", "rk4"), steps)
    model = evaluator(robot, "auto", work=None if work is None else work * len(todo))
    return run if model is not robot else {**run, "backend": "numeric"}


def run_point(model_data, point, run, figures=FIGURES, settle_fraction=0.02):
    """Simulate one variant and return its row {parameter paths..., figures..., error}."""
    row = {name: (json.dumps(v) if isinstance(v, list) else v) for name, v in point.items()}
    start = time.perf_counter()
    try:
        robot = _point_robot(model_data, point)
        row.update(_figures(robot, run, figures, settle_fraction))
        row["error"] = ""
    except Exception as exc:  # a point that fails is a result too: the table says why
        row["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
    row["wall_time_s"] = time.perf_counter() - start
    return row


def _figures(robot, run, figures, settle_fraction):
    from .analysis.tip import tip_offset
    from .simulate import simulate
    from .simulate.compiled_loop import LoopUnavailable

    kwargs = {k: v for k, v in run.items() if k in RUN_KEYS and k not in NOT_SIMULATE_KEYS}
    if run.get("controller"):
        from .control import from_spec

        spec = robot.controller if run["controller"] == "model" else run["controller"]
        if not spec:
            raise SweepError("run.controller: the model has no controller section")
        kwargs["controller"] = from_spec(robot, spec)
    if "q0" in kwargs:
        q0 = np.zeros(robot.nq)
        given = np.asarray(kwargs["q0"], dtype=float)
        q0[:given.size] = given
        kwargs["q0"] = q0
    t_final, limit = float(run.get("t_final", 1.0)), float(run.get("time_limit", SWEEP_POINT_SECONDS))
    with warnings.catch_warnings():  # a diverged run is this point's error, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        try:  # the compiled loop (C) when the run allows it: fast, and bounded by the run-size limits
            res = simulate(robot, t_final, progress=False, loop="compiled", **kwargs)
            took = float(res.stats.get("wall_time", 0.0))  # the run, not the model's build
            if took > limit:  # one C call cannot stop early: the limit is enforced when it returns
                raise PointTimeLimit(f"run.time_limit: the point ran past {limit:g} s of wall time (the compiled run "
                                     f"took {took:.3g} s in one call); raise run.time_limit, shorten t_final or use a "
                                     "larger dt")
        except LoopUnavailable:
            timed = {**kwargs, "torque": _within_time(kwargs.get("torque"), limit, robot.n_joints)}
            res = simulate(robot, t_final, progress=False, **timed)  # the Python loop, which checks the clock
    out = {}
    if res.diverged or not (np.all(np.isfinite(res.q)) and np.all(np.isfinite(res.qd))):
        why = " ".join(str(res.stats.get("message", "") or "non-finite state").split())
        raise FloatingPointError(f"the run diverged at t = {res.t_diverged or res.t[-1]:g} s ({why}); its figures "
                                 "would be those of a partial run: use a smaller dt or a stiff method")
    if "peak_tip_deflection" in figures or "settling_time" in figures:
        offsets = tip_offset(robot, res.q, link=run.get("frame"))
        dist = np.linalg.norm(offsets, axis=-1)
        peak = float(dist.max())
        if "peak_tip_deflection" in figures:
            out["peak_tip_deflection"] = peak
        if "settling_time" in figures:
            out["settling_time"] = settling_time(robot, res, offsets, settle_fraction, run.get("frame"))
    if "torque_peaks" in figures:
        for name, k in zip(res.joint_names, range(res.tau.shape[1])):
            out[f"torque_peak_{name}"] = float(np.abs(res.tau[:, k]).max())
    if "lowest_frequency" in figures:  # the flexible modes, joints locked: no rigid-body or free-joint mode
        from .analysis.frequencies import natural_frequencies

        w = np.asarray(natural_frequencies(robot, res.q[0], joints="locked"), dtype=float) if robot.nf else np.zeros(0)
        w = w[w > 1e-9]
        out["lowest_frequency"] = float(w.min() / (2 * np.pi)) if w.size else float("nan")
    return out


def settling_time(robot, res, offsets, settle_fraction, frame=None):
    """The last time the tip (``frame``: None for the robot's end effector) is farther than
    ``settle_fraction`` of the largest excursion from where it comes to rest: the tip offset of
    the final joint angles with the beams in their static equilibrium (the sag under gravity and
    the final torques), not zero."""
    from .analysis.quasi_static import quasi_static_deflection
    from .analysis.tip import tip_offset

    rest = np.zeros(3)
    if robot.nf:
        q_end = np.array(res.q[-1], dtype=float)
        try:
            q_end[robot.flex_index] = quasi_static_deflection(robot, q_end[robot.joint_index])
            rest = tip_offset(robot, q_end, link=frame)
        except ValueError:  # no static equilibrium found (a beam that buckles): the last sample
            rest = offsets[-1]
    dev = np.linalg.norm(offsets - rest, axis=-1)
    biggest = float(dev.max())
    above = np.flatnonzero(dev > settle_fraction * biggest) if biggest > 0 else []
    return float(res.t[above[-1]]) if len(above) else 0.0


def _within_time(torque, limit, n_joints):
    """The run's constant torque (or none) as a function that stops the run once the point has
    used ``limit`` seconds of wall time: the integrators call it at every evaluation."""
    if torque is not None and np.ndim(torque) > 1:
        raise SweepError("run.torque: a sweep takes constant joint torques (one value per joint)")
    value = np.broadcast_to(np.zeros(n_joints) if torque is None else np.asarray(torque, dtype=float),
                            (n_joints,)).copy()
    deadline = time.perf_counter() + limit

    def torque_within_time(t, q, qd):
        if time.perf_counter() > deadline:
            raise PointTimeLimit(f"run.time_limit: the point ran past {limit:g} s of wall time (the run had "
                                 f"reached t = {t:g} s); raise run.time_limit, shorten t_final or use a larger dt")
        return value

    return torque_within_time


# ----- the sweep ---------------------------------------------------------------------------------
class SweepResult:
    """The finished sweep: ``path`` of the Parquet file, ``table`` (pyarrow), ``computed`` (points
    run in this call) and ``reused`` (points read back from an earlier, interrupted call)."""

    def __init__(self, path, table, computed, reused):
        self.path, self.table, self.computed, self.reused = Path(path), table, computed, reused

    def column(self, name) -> np.ndarray:
        return np.asarray(self.table.column(name).to_pylist())

    def __len__(self):
        return self.table.num_rows

    def plot(self, figure, x=None, y=None, path=None):
        """``figure`` over the parameters: over ``x`` alone (a curve; the default for a sweep of
        one parameter), or over ``x`` and ``y`` (filled contours where the points allow, the points
        coloured by value); returns the matplotlib figure."""
        params = [c for c in self.table.column_names if c != "point" and c not in FIGURES and c != "error"
                  and not c.startswith(("torque_peak_", "error"))]
        x = x if x is not None else (params[0] if params else None)
        return plot(self.table, figure, x, y, path)

    def to_pandas(self):
        """The sweep's table as a pandas DataFrame, one row per point (pandas is optional:
        ``pip install 'flexman[pandas]'``)."""
        from .extras import require

        require("pandas", "SweepResult.to_pandas")
        return self.table.to_pandas()

    def __repr__(self):
        return f"<SweepResult {len(self)} points -> {self.path} ({self.computed} computed, {self.reused} reused)>"


def sweep(robot, parameters, run=None, scheduler=None, sampling="grid", samples=None, seed=0,
          figures=FIGURES, out="sweep.parquet", n_workers=None, progress=None, settle_fraction=0.02):
    """Run a sweep over ``parameters`` of ``robot`` (see the module docstring) and return a
    :class:`SweepResult`. ``run``: simulation settings {t_final, dt, method, controller ("model"
    or a controller spec), torque, q0, rtol, atol, backend, time_limit (wall seconds per point)}.
    ``scheduler``: None (a LocalCluster of ``n_workers`` processes), a scheduler address
    ("tcp://host:8786") or a ``distributed.Client``."""
    from .model.serialize import robot_to_dict

    if scheduler is None:  # a local cluster's workers import the calling script again
        check_main_guard()
    run = dict(run or {})
    unknown = set(run) - set(RUN_KEYS)
    if unknown:
        raise SweepError(f"run: unknown field(s) {', '.join(sorted(unknown))}; use {', '.join(RUN_KEYS)}")
    if "time_limit" in run:
        limit = run["time_limit"]
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit < float("inf"):
            raise SweepError(f"run.time_limit: seconds of wall time per point, a number > 0 (got {limit!r:.40})")
    bad = set(figures) - set(FIGURES)
    if bad:
        raise SweepError(f"figures: unknown {', '.join(sorted(bad))}; use {', '.join(FIGURES)}")
    from .simulate.run import output_size, run_floats

    try:  # the run's size, checked once here rather than failing in every point
        output_size(run.get("t_final", 1.0), run.get("dt", 1e-3), run_floats(robot))
    except ValueError as exc:
        raise SweepError(f"run.{exc}") from None
    if run.get("frame") is not None:
        from .model.inputs import frame_name

        try:
            run["frame"] = frame_name(robot, str(run["frame"]), "run.frame")
        except ValueError as exc:
            raise SweepError(str(exc)) from None
    data = robot_to_dict(robot)
    pts = points(parameters, sampling, samples, seed)
    for name in parameters:  # a wrong path fails here, once, not in every task
        apply(copy.deepcopy(data), name, pts[0][name])
    out = Path(out)
    parts = Path(str(out) + ".parts")
    ident = hashlib.sha256(json.dumps([data, pts, run, list(figures), settle_fraction], sort_keys=True,
                                      default=str).encode()).hexdigest()[:16]
    parts.mkdir(parents=True, exist_ok=True)
    stamp = parts / "sweep.json"
    if stamp.exists():
        try:
            same = json.loads(stamp.read_text()).get("id") == ident
        except ValueError:
            same = False
        if not same:
            raise SweepError(f"out: {parts} holds the parts of another sweep; remove it or choose another out")
    else:
        write_text(stamp, json.dumps({"id": ident, "points": len(pts)}))  # a torn stamp would block the resume
    done = {int(p.stem.split("_")[1]) for p in parts.glob("point_*.json")}
    todo = [k for k in range(len(pts)) if k not in done]
    if todo:
        run = _decide_backend(data, pts, todo, run)
        _run_tasks(data, pts, todo, run, tuple(figures), settle_fraction, parts, scheduler, n_workers, progress)
    table = _collect(pts, parts, out)
    return SweepResult(out, table, len(todo), len(pts) - len(todo))


def check_main_guard() -> None:
    """Refuse a sweep started from a script's top level outside ``if __name__ == "__main__":``.
    The local cluster's worker processes are started by importing the script again (the spawn
    start method); unguarded, each would start the sweep again and fail with a traceback of its
    own. The line of the script that led here is looked up in the script's syntax tree."""
    import ast
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is getattr(main, "__dict__", None)
                                     and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None or not path:  # an interactive session, python -c, a notebook: nothing is re-imported
        return
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return
    line = frame.f_lineno
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and "__name__" in ast.dump(node.test) and "'__main__'" in ast.dump(node.test)
                and node.lineno <= line <= node.end_lineno):
            return
    raise SweepError(f"fm.sweep: {Path(path).name} line {line} starts a sweep outside `if __name__ == \"__main__\":`; "
                     "its worker processes import the script again and would each start it too: put the sweep "
                     "under that guard")


def _write_part(parts, k, row):
    write_text(parts / f"point_{k}.json", json.dumps(row))  # whole or not at all, signals included


def _run_tasks(data, pts, todo, run, figures, settle_fraction, parts, scheduler, n_workers, progress):
    require("distributed", "fm.sweep")
    from distributed import Client, LocalCluster, as_completed

    own = None
    if scheduler is None:
        own = LocalCluster(n_workers=n_workers or min(4, os.cpu_count() or 1), threads_per_worker=1,
                           processes=True, dashboard_address=":0")
        client = Client(own)
    elif isinstance(scheduler, str):
        client = Client(scheduler)
    else:
        client = scheduler
    bar = _bar(progress, len(todo))
    try:
        tag = f"{os.getpid()}-{time.time_ns()}"  # model data is small: it travels with each task
        futures = {client.submit(run_point, data, pts[k], run, figures, settle_fraction,
                                 key=f"flexman-point-{k}-{tag}", pure=False): k for k in todo}
        for fut in as_completed(futures):
            k = futures[fut]
            try:
                row = fut.result()
            except Exception as exc:  # the task itself failed (e.g. its worker died too often)
                row = {**{n: (json.dumps(v) if isinstance(v, list) else v) for n, v in pts[k].items()},
                       "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]}
            _write_part(parts, k, row)
            bar.advance()
    finally:
        bar.close()
        if own is not None:
            client.close()
            own.close()
        elif isinstance(scheduler, str):
            client.close()


class _bar:
    def __init__(self, enabled, total):
        import sys

        if enabled is None:
            enabled = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
        self.progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                     console=Console(stderr=True), transient=True)
            self.task = self.progress.add_task("sweep", total=total)
            self.progress.start()

    def advance(self):
        if self.progress is not None:
            self.progress.advance(self.task)

    def close(self):
        if self.progress is not None:
            self.progress.stop()


def _collect(pts, parts, out):
    """All parts as one table (point order), written to ``out`` (temporary name, then renamed)."""
    pa = require("pyarrow", "fm.sweep")
    import pyarrow.parquet as pq

    rows = []
    for k in range(len(pts)):
        row = json.loads((parts / f"point_{k}.json").read_text())
        rows.append({"point": k, **row})
    columns = list(dict.fromkeys(c for row in rows for c in row))
    arrays = {}
    for c in columns:
        values = [row.get(c) for row in rows]
        if c == "point":
            arrays[c] = pa.array(values, pa.int64())
        elif all(v is None or isinstance(v, str) for v in values):
            arrays[c] = pa.array([v if v is not None else "" for v in values], pa.string())
        else:
            arrays[c] = pa.array([float("nan") if v is None else float(v) for v in values], pa.float64())
    table = pa.table(arrays)
    out.parent.mkdir(parents=True, exist_ok=True)
    with staged() as files:  # no temporary file left by an error or a signal
        pq.write_table(table, files.path(out))
    return table


def read(path):
    """The table of a finished sweep (pyarrow)."""
    require("pyarrow", "reading a sweep table")
    import pyarrow.parquet as pq

    return pq.read_table(path)


def plot(table, figure, x, y=None, path=None):
    """``figure`` (a column) over the parameter column ``x`` (a curve when ``y`` is None) or over
    ``x`` and ``y`` (contours and points); returns the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = table.column_names
    for name, what in ((figure, "figure"), (x, "x")) + (((y, "y"),) if y is not None else ()):
        if name not in names:
            raise SweepError(f"{what}: no column '{name}' in the sweep; columns: {', '.join(names)}")
    fig = Figure(figsize=(6, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    if y is None:
        cols = [np.asarray(table.column(c).to_pylist(), dtype=float) for c in (x, figure)]
        ok = np.all([np.isfinite(c) for c in cols], axis=0)
        X, Z = (c[ok] for c in cols)
        order = np.argsort(X)
        ax.plot(X[order], Z[order], "o-")
        ax.set_xlabel(x)
        ax.set_ylabel(figure)
        ax.set_title(f"{figure} ({len(Z)} points)")
    else:
        cols = [np.asarray(table.column(c).to_pylist(), dtype=float) for c in (x, y, figure)]
        ok = np.all([np.isfinite(c) for c in cols], axis=0)
        X, Y, Z = (c[ok] for c in cols)
        try:
            if len(np.unique(X)) > 1 and len(np.unique(Y)) > 1 and len(X) >= 4:
                cs = ax.tricontourf(X, Y, Z, levels=12, cmap="viridis")
                fig.colorbar(cs, ax=ax, label=figure)
        except (ValueError, RuntimeError):  # degenerate triangulation: the points alone
            pass
        sc = ax.scatter(X, Y, c=Z, cmap="viridis", edgecolors="k", linewidths=0.5)
        if not ax.collections[:-1]:
            fig.colorbar(sc, ax=ax, label=figure)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{figure} ({len(Z)} points)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def load_spec(path) -> dict:
    """A sweep specification file (YAML): parameters, sampling, samples, seed, run, figures, out."""
    from .model.errors import ModelError
    from .model.parse import read

    if not Path(path).is_file():
        raise FileNotFoundError(path)
    try:
        spec = read(path, "yaml")  # the model files' door: size, aliases, depth, duplicate keys
    except ModelError as exc:
        raise SweepError(str(exc)) from None
    if not isinstance(spec, dict):
        raise SweepError(f"{path}: expected a mapping with 'parameters' (and run, sampling, samples, ...)")
    allowed = {"parameters", "sampling", "samples", "seed", "run", "figures", "out", "settle_fraction"}
    unknown = set(spec) - allowed
    if unknown:
        raise SweepError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}")
    if "parameters" not in spec:
        raise SweepError(f"{path}: parameters: missing (a mapping of model paths to values or ranges)")
    return spec
