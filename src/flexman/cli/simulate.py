"""`flexman simulate` and `flexman report`: a run of a model, its files and its HTML report."""
from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .common import FORMULATIONS, UsageError, console, fmt, load_model, print_json, state_vector, subcommand, vector
from ..model.errors import ModelError
from ..outputs import output_folder, staged
from ..simulate import METHODS
from ..simulate.backend import BACKENDS


def _total_energy(energy) -> np.ndarray:
    """Total energy per sample (the parts of each sample summed)."""
    e = np.asarray(energy, dtype=float)
    return e.sum(axis=tuple(range(1, e.ndim))) if e.ndim > 1 else e


def _controller(robot, source):
    """A controller from the model's `controller:` section or from a separate YAML file."""
    from ..control import from_spec

    if source == "model":
        spec = getattr(robot, "controller", None)
        if not spec:
            raise UsageError(f"--controller: model '{robot.name}' has no controller section; give a YAML file")
    else:
        path = Path(source)
        if not path.is_file():
            raise UsageError(f"--controller: no such file '{source}'")
        from ..model.parse import read

        try:
            spec = read(path, "yaml")  # the model files' door: size, aliases, depth, duplicate keys
        except ModelError as exc:
            raise UsageError(f"--controller: {exc}") from None
        if isinstance(spec, dict) and "controller" in spec and "type" not in spec:
            spec = spec["controller"]
    return from_spec(robot, spec)


def _simulation_options(args, robot) -> dict:
    """simulate() keyword arguments from the options shared by `simulate` and `report`."""
    if not args.t_final > 0:
        raise UsageError(f"--t-final: must be > 0 (got {args.t_final})")
    kwargs = {"method": args.method}
    if getattr(args, "rho_inf", None) is not None:
        kwargs["rho_inf"] = args.rho_inf
    if args.dt is not None:
        if not args.dt > 0:
            raise UsageError(f"--dt: must be > 0 (got {args.dt})")
        kwargs["dt"] = args.dt
    for key in ("rtol", "atol"):
        value = getattr(args, key)
        if value is not None:
            if not value > 0:
                raise UsageError(f"--{key}: must be > 0 (got {value})")
            kwargs[key] = value
    q0 = state_vector(robot, args.q0, "--q0")
    if q0 is not None:
        kwargs["q0"] = q0
    torque = vector(args.torque, (robot.n_joints,), "--torque", "torque")
    if torque is not None:
        kwargs["torque"] = torque
    if args.controller is not None:
        kwargs["controller"] = _controller(robot, args.controller)
    if args.prescribed:
        kwargs["prescribed"] = _manoeuvre(robot, kwargs)
    kwargs["backend"] = args.backend
    if getattr(args, "ee_frame", None) is not None:
        from ..model.inputs import frame_name

        try:
            kwargs["ee_frame"] = frame_name(robot, args.ee_frame, "--ee-frame")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return kwargs


def _manoeuvre(robot, kwargs):
    """The joint motion of the model's `manoeuvre:` section (for --prescribed)."""
    from ..trajectory import from_spec

    for name in ("controller", "torque"):
        if name in kwargs:
            raise UsageError(f"--prescribed: the joints follow the model's manoeuvre; leave out --{name}")
    spec = getattr(robot, "manoeuvre", None)
    if not spec:
        raise UsageError(f"--prescribed: model '{robot.name}' has no manoeuvre section; add one, e.g. "
                         "manoeuvre: {type: spin_up, rate: 6.0, ramp_time: 15.0} (or rest_to_rest, spline)")
    return from_spec(spec, robot.n_joints, "manoeuvre")


def cmd_simulate(args) -> int:
    """Simulate a model, print a summary, and write results and a plot into --out."""
    robot = load_model(args.model)
    kwargs = _simulation_options(args, robot)
    from ..simulate import simulate
    from ..simulate.backend import evaluator, fixed_step_work
    from ..simulate.run import output_times

    out = None if args.out is None else output_folder(args.out)  # a folder we cannot write fails now, not after the run
    steps = len(output_times(args.t_final, kwargs.get("dt", 1e-3))) - 1  # the run's grid: a run too long is refused here
    # compiled (or loaded from the cache) before the clock starts, weighed as simulate() weighs it
    evaluator(robot, args.backend, work=fixed_step_work("rk4" if args.method == "auto" else args.method, steps))

    start = time.perf_counter()
    with np.errstate(all="ignore"), warnings.catch_warnings():  # divergence is reported below, once
        warnings.simplefilter("ignore", RuntimeWarning)
        res = simulate(robot, args.t_final, **kwargs)
    wall = time.perf_counter() - start
    diverged = bool(res.diverged)
    files = []
    if out is not None:
        names = ("result.npz", "result.csv") + (() if args.no_plot else ("result.png",))
        with staged() as staging:  # all three replace the old ones together, or none does (Ctrl-C)
            for name in names:
                target = staging.path(out / name)
                if name.endswith(".png"):
                    res.plot(target)
                else:
                    res.save(target)
        files = [str(out / name) for name in names]
    q_end = np.asarray(res.q)[-1]
    energy = _total_energy(res.energy)
    summary = {
        "model": robot.name, "method": res.stats.get("method", args.method), "method_asked": args.method,
        "method_reason": res.stats.get("method_reason"), "t_final": float(np.asarray(res.t)[-1]),
        "samples": int(np.asarray(res.t).size), "wall_time_s": wall,
        "q_final": dict(zip(robot.coordinate_names, q_end.tolist())),
        "energy_initial": float(energy[0]), "energy_final": float(energy[-1]),
        "energy_drift_relative": res.energy_drift(), "files": files,
        "backend": res.stats.get("backend", "numeric"), "loop": res.stats.get("loop", "python"),
        "loop_reason": res.stats.get("loop_reason"),
    }
    summary["diverged"] = diverged
    summary["t_diverged"] = res.t_diverged
    if "prescribed" in kwargs:
        summary["work"] = float(res.work[-1])  # of the joint torques the motion needed
    status = 1 if diverged else 0
    if diverged:
        print(f"flexman: warning: the run stopped at t = {res.t_diverged:.6g} s ({res.stats.get('message', '')}); "
              f"the results up to t = {summary['t_final']:.6g} s are kept; use a smaller --dt "
              "or --method auto / generalized_alpha", file=sys.stderr)
    if args.json:
        print_json(summary)
        return status
    drift = "" if "torque" in kwargs or "controller" in kwargs else f" (unforced: max change {summary['energy_drift_relative']:.3g} of the energy exchanged)"
    if "prescribed" in kwargs:
        drift = f" (prescribed motion: the joint torques did {summary['work']:.6g} J of work)"
    lines = [f"simulated {summary['t_final']:.6g} s with {summary['method']} ({summary['samples']} samples, {wall:.3g} s wall "
             f"time, {summary['backend']} model, {summary['loop']} loop)",
             "final q: " + ", ".join(f"{k}={v:.6g}" for k, v in summary["q_final"].items()),
             f"energy: {summary['energy_initial']:.6g} -> {summary['energy_final']:.6g} J{drift}"]
    lines += [f"wrote {path}" for path in files]
    if sys.stdout.isatty():  # styled on a terminal; plain text into a pipe or file (and no import of rich)
        from rich.markup import escape

        con = console()
        con.print(f"[bold]{escape(robot.name)}[/bold]: " + escape(lines[0]))
        for line in lines[1:]:
            con.print(escape(line))
    else:
        print(f"{robot.name}: " + "\n".join(lines))
    return status


def _drive_note(kwargs) -> str:
    """How the run was driven, in words, for the report's heading."""
    ctrl = kwargs.get("controller")
    if "prescribed" in kwargs:
        return f"Joints follow the model's manoeuvre ({kwargs['prescribed'].__class__.__name__}); integrator {kwargs['method']}."
    if ctrl is not None:
        return f"Driven by a {type(ctrl).__name__} controller; integrator {kwargs['method']}."
    if "torque" in kwargs:
        return f"Constant joint torques {fmt(kwargs['torque'])}; integrator {kwargs['method']}."
    return f"Free motion (no torque); integrator {kwargs['method']}."


def cmd_report(args) -> int:
    """Simulate a model and write report.html (model, frequencies, equations, plots, 3D
    animation; self-contained, works offline), summary.png (the arm at a few instants and the
    key curves), result.png (every time history) and result.npz into --out."""
    robot = load_model(args.model)
    kwargs = _simulation_options(args, robot)
    if args.magnify is not None and not args.magnify >= 0:  # finite: the parser refuses nan and inf
        raise UsageError(f"--magnify: must be a number >= 0 (got {args.magnify})")
    made = not os.path.exists(args.out)
    out = output_folder(args.out)  # before the run
    from ..simulate import simulate
    from ..viz.snapshot import plot_summary

    with np.errstate(all="ignore"), warnings.catch_warnings():  # divergence is reported below, once
        warnings.simplefilter("ignore", RuntimeWarning)
        res = simulate(robot, args.t_final, **kwargs)
    if res.diverged and not args.allow_diverged:
        from ..simulate.result import diverged_refusal

        if made:
            try:
                out.rmdir()  # the folder made for the report, when it is still empty
            except OSError:
                pass
        print(f"flexman: error: {diverged_refusal(res, '--allow-diverged')}", file=sys.stderr)
        return 1
    if res.diverged:
        print(f"flexman: warning: the run stopped at t = {res.t_diverged:.6g} s; the report shows the samples "
              "before it and says so at its top", file=sys.stderr)
    equations = None if args.equations == "none" else args.equations
    comparison, others = None, []
    if args.compare:
        from .showcase import path_errors, variants

        if "controller" not in kwargs:
            raise UsageError("--compare: needs --controller (the model's decoupling controller and its move)")
        runs = variants(robot, kwargs["controller"], kwargs, args.t_final)
        runs[0] = (runs[0][0], res, runs[0][2])  # the profile run is the one above
        pages = {name: ("report.html" if k == 0 else f"report-{name.lower()}.html") for k, (name, _, _) in enumerate(runs)}
        comparison = {"curves": path_errors(robot, runs), "pages": pages,
                      "motions": {name: (r.t, r.q) for name, r, _ in runs}}  # the 3D views side by side
        others = [(runs[k][1], out / pages[runs[k][0]], runs[k][0]) for k in range(1, len(runs))]
    with staged() as staging:  # the files replace the old ones together, or none does
        res.report(staging.path(out / "report.html"), magnify=args.magnify, equations=equations,
                   note=_drive_note(kwargs), comparison=comparison, allow_diverged=args.allow_diverged)
        for other, page, name in others:
            other.report(staging.path(page), magnify=args.magnify, equations=None, allow_diverged=True,
                         note=f"The same move, {name}: see report.html for the comparison.")
        plot_summary(res, staging.path(out / "summary.png"))
        res.plot(staging.path(out / "result.png"))
        res.save(staging.path(out / "result.npz"))
    page = out / "report.html"
    files = [page, out / "summary.png", out / "result.png", out / "result.npz"] + [p for _, p, _ in others]
    status = 1 if res.diverged else 0
    if args.json:
        print_json({"model": robot.name, "report": str(page.resolve()), "files": [str(f) for f in files],
                     "diverged": bool(res.diverged)})
        return status
    for path in files[1:]:
        print(f"wrote {path}")
    print(f"report: {page.resolve()}  (open it in a browser; it works offline)")
    return status


def simulation_arguments(p) -> None:
    """The options of a run, shared by `simulate` and `report`."""
    p.add_argument("--t-final", type=float, default=1.0, metavar="T", help="end time in s (default 1)")
    p.add_argument("--dt", type=float, help="output (and rk4) step in s")
    p.add_argument("--method", choices=("auto",) + tuple(METHODS), default="auto",
                   help="integrator (default auto: RK4 where the step check finds it stable, else generalized_alpha)")
    p.add_argument("--rho-inf", type=float, dest="rho_inf",
                   help="generalized_alpha's spectral radius at infinite step, in [0, 1] (default 0.8)")
    p.add_argument("--rtol", type=float, help="relative tolerance (adaptive methods)")
    p.add_argument("--atol", type=float, help="absolute tolerance (adaptive methods)")
    p.add_argument("--q0", type=float, nargs="+", metavar="Q", help="initial joint (or all) coordinates")
    p.add_argument("--torque", type=float, nargs="+", metavar="TAU", help="constant joint torques")
    p.add_argument("--controller", nargs="?", const="model", metavar="YAML",
                   help="joint controller: the model file's controller section (no value) or a YAML file")
    p.add_argument("--prescribed", action="store_true",
                   help="the joints follow the model file's manoeuvre exactly; the flexible coordinates respond "
                        "and the torques needed are recorded")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="auto (default: compiled C when a compiler is available, cached), compiled or numeric")
    p.add_argument("--ee-frame", dest="ee_frame", metavar="FRAME",
                   help="the end effector of the plots and report: a link or named frame (e.g. a URDF's tool0); "
                        "default the model's end_effector, else the last link")


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "simulate", cmd_simulate, "simulate a model and write results and a plot")
    simulation_arguments(p)
    p.add_argument("--out", metavar="DIR", help="folder for result.npz, result.csv and result.png")
    p.add_argument("--no-plot", action="store_true", help="do not write the plot")

    p = subcommand(sub, "report", cmd_report, "simulate a model and write an HTML report with a 3D animation")
    simulation_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR", help="folder for report.html, summary.png, result.png and result.npz")
    p.add_argument("--magnify", type=float, metavar="K", help="draw deflections K times their size (default: automatic)")
    p.add_argument("--allow-diverged", action="store_true", dest="allow_diverged",
                   help="write the report of a run that diverged (it says so at its top); by default none is written")
    p.add_argument("--compare", action="store_true",
                   help="with --controller: the same move also input-shaped and optimally planned (fm.plan), side by side")
    p.add_argument("--equations", choices=("auto",) + FORMULATIONS + ("none",), default="auto",
                   help="formulation of the equations shown (default auto: newton_euler for rigid arms, book for "
                        "flexible ones; none leaves them out)")
