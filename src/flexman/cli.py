"""The ``flexman`` command.

Each subcommand is one ``cmd_<name>(args) -> int`` function plus one registration line in
:func:`build_parser`. Every command takes a model path or a bundled example name and
``--json`` for machine-readable output on stdout. User errors (bad model files, missing
files, bad option values) print one line ``flexman: error: <message>`` to stderr and exit 2.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .cli_common import UsageError, console, fmt, load_model, print_json, vector
from .model.errors import ModelError
from .outputs import output_file, output_folder, staged, write_text

SIM_METHODS = ("rk4", "RK45", "DOP853", "Radau", "BDF", "LSODA")
BACKENDS = ("auto", "compiled", "numeric")


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage dump) and exit 2."""

    def error(self, message):
        raise UsageError(message)


# ----- info -------------------------------------------------------------------------------------
def _info_data(robot) -> dict:
    links = []
    for i, link in enumerate(robot.links):
        beam = link.beam
        links.append({
            "index": i + 1, "name": link.name, "joint": link.joint,
            "a": link.a, "alpha": link.alpha, "d": link.d, "theta": link.theta,
            "mass": link.body.mass,
            "hub_mass": link.hub.mass if link.hub is not None else 0.0,
            "beam_mass": beam.length * beam.mass_per_length if beam is not None else 0.0,
            "flexible_coordinates": beam.nf if beam is not None else 0,
            "limits": list(link.limits) if link.limits is not None else None,
            "placement": None if link.placement is None else {
                "xyz": list(link.placement.xyz), "rpy": list(link.placement.rpy), "axis": list(link.placement.axis)},
        })
    return {
        "name": robot.name, "description": getattr(robot, "description", ""),
        "source": getattr(robot, "source", ""), "dh": robot.dh,
        "nq": robot.nq, "n_joints": robot.n_joints, "nf": robot.nf,
        "coordinate_names": list(robot.coordinate_names),
        "gravity": robot.gravity, "total_mass": robot.total_mass(),
        "payload_mass": robot.payload.mass if robot.payload is not None else 0.0,
        "links": links,
    }


def cmd_info(args) -> int:
    """Summary of a model: name, coordinates, masses and the DH table."""
    robot = load_model(args.model)
    data = _info_data(robot)
    if args.json:
        print_json(data)
        return 0
    from rich.table import Table

    con = console()
    con.print(f"[bold]{data['name']}[/bold]  ({robot.dh} DH, {robot.n_joints} joints, "
              f"{robot.nf} flexible coordinates, nq = {robot.nq})")
    if data["description"].strip():  # the file's own text: printed as is, never as markup
        con.print(data["description"].strip().splitlines()[0], markup=False, highlight=False)
    if data["source"]:
        source = data["source"] if isinstance(data["source"], str) else "; ".join(data["source"])
        con.print(f"source: {source}", markup=False, highlight=False)
    con.print("coordinates: " + ", ".join(data["coordinate_names"]))
    con.print(f"total mass: {data['total_mass']:.6g} kg (payload {data['payload_mass']:.6g} kg)")
    named = any(item["name"] for item in data["links"])
    table = Table(title=f"{robot.dh} DH table (m, deg, kg)")
    columns = ["#"] + (["name"] if named else []) + ["joint", "a", "alpha", "d", "theta",
                                                      "mass", "hub", "beam", "flex"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("name", "joint") else "right")
    for item in data["links"]:
        row = [str(item["index"])] + ([item["name"]] if named else [])
        row += [item["joint"], fmt(item["a"]), fmt(math.degrees(item["alpha"])), fmt(item["d"]),
                fmt(math.degrees(item["theta"])), fmt(item["mass"]), fmt(item["hub_mass"]),
                fmt(item["beam_mass"]), str(item["flexible_coordinates"])]
        table.add_row(*row)
    con.print(table)
    placed = [item for item in data["links"] if item["placement"] is not None]
    if placed:  # URDF-style links: their DH columns above are unused
        ptable = Table(title="placed joints (origin xyz in m, rpy in deg, axis)")
        for col in ("#", "xyz", "rpy", "axis"):
            ptable.add_column(col, justify="right")
        for item in placed:
            pl = item["placement"]
            ptable.add_row(str(item["index"]), " ".join(fmt(v) for v in pl["xyz"]),
                           " ".join(fmt(math.degrees(v)) for v in pl["rpy"]), " ".join(fmt(v) for v in pl["axis"]))
        con.print(ptable)
    return 0


# ----- examples ---------------------------------------------------------------------------------
def _examples():
    from . import bundled_examples

    module = bundled_examples()
    if module is None:
        raise UsageError("the bundled examples are not available in this installation")
    return module


def _example_description(module, name: str) -> str:
    """First line of an example's description (validating it on the way)."""
    try:
        robot = module.load(name)
    except ModelError as exc:  # a broken example should not hide the others
        return f"(invalid: {exc})"
    text = (getattr(robot, "description", "") or "").strip()
    return text.splitlines()[0] if text else ""


def cmd_examples(args) -> int:
    """List the bundled examples, print one, or copy one to a file (converting by extension)."""
    module = _examples()
    names = list(module.names())
    if args.name is None:
        if args.copy:
            raise UsageError("--copy needs an example NAME")
        rows = [(n, _example_description(module, n)) for n in names]
        if args.json:
            print_json([{"name": n, "description": d} for n, d in rows])
            return 0
        from rich.table import Table
        from rich.text import Text

        table = Table(title="bundled examples")
        table.add_column("name")
        table.add_column("description")
        for name, description in rows:
            table.add_row(name, Text(description))  # plain text, never markup
        console().print(table)
        return 0
    if args.name not in names:
        raise UsageError(f"unknown example '{args.name}'; bundled examples: {', '.join(names)}")
    src = Path(module.path(args.name))
    if args.copy is not None:
        dest = Path(args.copy) if str(args.copy).strip() else None
        if dest is not None and dest.is_dir():
            dest = dest / src.name
        if dest is not None and dest.exists() and not args.force:
            raise UsageError(f"{dest} exists; remove it or add --force")
        dest = output_file(dest, "--copy", force=args.force)
        if dest.suffix.lower() == src.suffix.lower():
            write_text(dest, src.read_text(encoding="utf-8"))  # keeps comments and citations as written
        else:
            from . import save

            save(module.load(args.name), dest)
        if args.json:
            print_json({"name": args.name, "copied_to": str(dest)})
        else:
            print(f"copied {args.name} to {dest}")
        return 0
    if args.json:
        print_json({"name": args.name, "path": str(src),
                     "description": _example_description(module, args.name)})
    else:
        sys.stdout.write(src.read_text(encoding="utf-8"))
    return 0


# ----- simulate ---------------------------------------------------------------------------------
def _total_energy(energy) -> np.ndarray:
    """Total energy per sample (the parts of each sample summed)."""
    e = np.asarray(energy, dtype=float)
    return e.sum(axis=tuple(range(1, e.ndim))) if e.ndim > 1 else e


def _controller(robot, source):
    """A controller from the model's `controller:` section or from a separate YAML file."""
    from .control import from_spec

    if source == "model":
        spec = getattr(robot, "controller", None)
        if not spec:
            raise UsageError(f"--controller: model '{robot.name}' has no controller section; give a YAML file")
    else:
        path = Path(source)
        if not path.is_file():
            raise UsageError(f"--controller: no such file '{source}'")
        from .model.parse import read

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
    q0 = vector(args.q0, (robot.n_joints, robot.nq), "--q0")
    if q0 is not None:
        kwargs["q0"] = np.concatenate([q0, np.zeros(robot.nq - q0.size)])  # flex coords at rest
    torque = vector(args.torque, (robot.n_joints,), "--torque")
    if torque is not None:
        kwargs["torque"] = torque
    if args.controller is not None:
        kwargs["controller"] = _controller(robot, args.controller)
    if args.prescribed:
        kwargs["prescribed"] = _manoeuvre(robot, kwargs)
    kwargs["backend"] = args.backend
    return kwargs


def _manoeuvre(robot, kwargs):
    """The joint motion of the model's `manoeuvre:` section (for --prescribed)."""
    from .trajectory import from_spec

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
    from .simulate import simulate
    from .simulate.backend import evaluator

    out = None if args.out is None else output_folder(args.out)  # a folder we cannot write fails now, not after the run
    evaluator(robot, args.backend)  # compiled (or loaded from the cache) before the clock starts

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
        "model": robot.name, "method": args.method, "t_final": float(np.asarray(res.t)[-1]),
        "samples": int(np.asarray(res.t).size), "wall_time_s": wall,
        "q_final": dict(zip(robot.coordinate_names, q_end.tolist())),
        "energy_initial": float(energy[0]), "energy_final": float(energy[-1]),
        "energy_drift_relative": res.energy_drift(), "files": files,
        "backend": res.stats.get("backend", "numeric"),
    }
    summary["diverged"] = diverged
    summary["t_diverged"] = res.t_diverged
    if "prescribed" in kwargs:
        summary["work"] = float(res.work[-1])  # of the joint torques the motion needed
    status = 1 if diverged else 0
    if diverged:
        print(f"flexman: warning: the run stopped at t = {res.t_diverged:.6g} s ({res.stats.get('message', '')}); "
              f"the results up to t = {summary['t_final']:.6g} s are kept; use a smaller --dt "
              "or a stiff method (--method Radau or BDF)", file=sys.stderr)
    if args.json:
        print_json(summary)
        return status
    con = console()
    con.print(f"[bold]{robot.name}[/bold]: simulated {summary['t_final']:.6g} s with {args.method} "
              f"({summary['samples']} samples, {wall:.3g} s wall time, {summary['backend']} model)")
    con.print("final q: " + ", ".join(f"{k}={v:.6g}" for k, v in summary["q_final"].items()))
    drift = "" if "torque" in kwargs or "controller" in kwargs else f" (unforced: max change {summary['energy_drift_relative']:.3g} of the energy exchanged)"
    if "prescribed" in kwargs:
        drift = f" (prescribed motion: the joint torques did {summary['work']:.6g} J of work)"
    con.print(f"energy: {summary['energy_initial']:.6g} -> {summary['energy_final']:.6g} J{drift}")
    for path in files:
        con.print(f"wrote {path}")
    return status


# ----- sweep ------------------------------------------------------------------------------------
def cmd_sweep(args) -> int:
    """Run a parameter sweep (Dask) from a YAML specification; one Parquet file of figures."""
    from .sweeps import SweepError, load_spec, plot, sweep

    robot = load_model(args.model)
    try:
        spec = load_spec(args.spec)
    except FileNotFoundError:
        raise UsageError(f"SPEC: no such file '{args.spec}'") from None
    out = args.out if args.out is not None else (spec.get("out") or str(Path(args.spec).with_suffix(".parquet")))
    output_file(out, "--out", force=True)  # resumed from when it exists; its folder must be writable
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be >= 1 (got {args.workers})")
    try:
        res = sweep(robot, spec["parameters"], run=spec.get("run"), scheduler=args.scheduler,
                    sampling=spec.get("sampling", "grid"), samples=spec.get("samples"), seed=spec.get("seed", 0),
                    figures=spec.get("figures", None) or ("peak_tip_deflection", "settling_time", "torque_peaks",
                                                           "lowest_frequency"),
                    out=out, n_workers=args.workers, settle_fraction=spec.get("settle_fraction", 0.02))
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    errors = [e for e in res.table.column("error").to_pylist() if e]
    files = [str(res.path)]
    if args.plot:
        figure, x, y = args.plot
        path = res.path.with_suffix(".png")
        try:
            plot(res.table, figure, x, y, path)
        except SweepError as exc:
            raise UsageError(f"--plot: {exc}") from None
        files.append(str(path))
    summary = {"model": robot.name, "points": len(res), "computed": res.computed, "reused": res.reused,
               "failed": len(errors), "columns": res.table.column_names, "files": files}
    if args.json:
        print_json(summary)
        return 0
    con = console()
    con.print(f"[bold]{robot.name}[/bold]: sweep of {len(res)} points ({res.computed} computed, {res.reused} "
              f"reused from an earlier run, {len(errors)} failed)", markup=True)
    if errors:
        con.print(f"first failure: {errors[0]}", markup=False)
    for path in files:
        con.print(f"wrote {path}", markup=False)
    return 0


# ----- report -----------------------------------------------------------------------------------
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
    if args.magnify is not None and not (math.isfinite(args.magnify) and args.magnify >= 0):
        raise UsageError(f"--magnify: must be a number >= 0 (got {args.magnify})")
    out = output_folder(args.out)  # before the run
    from .simulate import simulate
    from .viz.snapshot import plot_summary

    with np.errstate(all="ignore"), warnings.catch_warnings():  # divergence is reported below, once
        warnings.simplefilter("ignore", RuntimeWarning)
        res = simulate(robot, args.t_final, **kwargs)
    if res.diverged:
        print(f"flexman: warning: the run stopped at t = {res.t_diverged:.6g} s; the report shows the samples "
              "before it; use a smaller --dt or a stiff method (--method Radau or BDF)", file=sys.stderr)
    equations = None if args.equations == "none" else args.equations
    with staged() as staging:  # the files replace the old ones together, or none does
        res.report(staging.path(out / "report.html"), magnify=args.magnify, equations=equations,
                   note=_drive_note(kwargs))
        plot_summary(res, staging.path(out / "summary.png"))
        res.plot(staging.path(out / "result.png"))
        res.save(staging.path(out / "result.npz"))
    page = out / "report.html"
    files = [page, out / "summary.png", out / "result.png", out / "result.npz"]
    status = 1 if res.diverged else 0
    if args.json:
        print_json({"model": robot.name, "report": str(page.resolve()), "files": [str(f) for f in files],
                     "diverged": bool(res.diverged)})
        return status
    for path in files[1:]:
        print(f"wrote {path}")
    print(f"report: {page.resolve()}  (open it in a browser; it works offline)")
    return status


# ----- frequencies ------------------------------------------------------------------------------
def cmd_frequencies(args) -> int:
    """Natural frequencies of the linearized free system at q (rad/s and Hz)."""
    robot = load_model(args.model)
    q = vector(args.q, (robot.n_joints, robot.nq), "--q")
    if q is not None and q.size == robot.n_joints:
        q = np.concatenate([q, np.zeros(robot.nf)])
    qd = vector(args.qd, (robot.n_joints, robot.nq), "--qd")
    if qd is not None and qd.size == robot.n_joints:
        qd = np.concatenate([qd, np.zeros(robot.nf)])
    omega = np.atleast_1d(np.asarray(robot.natural_frequencies(q, qd=qd), dtype=float))
    rows = [{"mode": i + 1, "rad_per_s": float(w), "hz": float(w) / (2 * math.pi)} for i, w in enumerate(omega)]
    if args.json:
        print_json({"model": robot.name, "q": q, "qd": qd, "frequencies": rows})
        return 0
    con = console()
    if not rows:
        con.print(f"{robot.name}: no elastic modes (rigid robot)")
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: natural frequencies")
    for col in ("mode", "rad/s", "Hz"):
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(str(row["mode"]), fmt(row["rad_per_s"]), fmt(row["hz"]))
    con.print(table)
    return 0


# ----- statics -----------------------------------------------------------------------------------
def _statics_setup(robot, args):
    """(forces (F, 3), wrenches (F, 6), point, gauges, joint values) from the options, falling
    back on the model file's statics block (point, gauges, forces)."""
    block = getattr(robot, "statics", None) or {}
    forces = np.array(args.force if args.force else block.get("forces", [[0.0, 0.0, 0.0]]), dtype=float)
    moment = np.zeros(3) if args.moment is None else np.asarray(args.moment, dtype=float)
    wrenches = np.concatenate([forces, np.broadcast_to(moment, forces.shape)], axis=-1)
    point = args.point if args.point is not None else block.get("point")
    gauges = args.gauges if args.gauges is not None else block.get("gauges")
    scale = math.pi / 180.0 if args.deg else 1.0
    revolute = np.array([link.joint == "revolute" for link in robot.links])
    q = np.zeros(robot.n_joints)
    if args.q is not None:
        q = vector(args.q, (robot.n_joints,), "--q")
    q = np.where(revolute, q * scale, q)
    return forces, wrenches, point, gauges, q, np.where(revolute, scale, 1.0)


def _statics_rows(res, forces):
    rows = []
    for i, force in enumerate(forces):
        rows.append({"force": force, "q_f": res.q_f[i], "torques": res.torques[i], "position": res.position[i],
                     "deflection": res.deflection[i], "deflection_local": res.deflection_local[i],
                     "curvature": res.curvature[i]})
    return rows


def cmd_statics(args) -> int:
    """Equilibrium under gravity and endpoint forces: joint torques, deflection, gauge curvatures;
    with --sweep, against one joint's angle, with a plot in the layout of 001 Figs. 6-12."""
    from .analysis import statics

    robot = load_model(args.model)
    forces, wrenches, point, gauges, q, scale = _statics_setup(robot, args)
    order = args.order
    if args.sweep is None:
        res = statics(robot, q, wrenches, point=point, order=order, gauges=gauges)
        rows = _statics_rows(res, forces)
        if args.json:
            print_json({"model": robot.name, "order": order, "q_r": q, "point": point,
                         "gauges": [{"link": l, "x": x} for l, x in res.gauges], "results": rows})
            return 0
        from rich.table import Table

        table = Table(title=f"{robot.name}: statics, order {order}, q_r = {fmt(q)}")
        for col in ("force [N]", "torques", "endpoint [m]", "deflection [mm]", "curvature at gauges [1/m]"):
            table.add_column(col)
        for row in rows:
            table.add_row(fmt(row["force"]), fmt(row["torques"]), fmt(row["position"]),
                          fmt(1e3 * row["deflection"]), fmt(row["curvature"][:, 1:]) if len(res.gauges) else "-")
        con = console()
        con.print(table)
        if res.gauges:
            con.print("gauges: " + ", ".join(f"link {l} at {x:g} m" for l, x in res.gauges)
                      + "; curvature columns per gauge: (kappa_y, kappa_z) = (-w'', v'')")
        return 0
    joint, start, stop = args.sweep
    try:
        joint = int(joint)
    except ValueError:
        raise UsageError(f"--sweep: JOINT must be a joint index, got {joint!r}") from None
    if not 0 <= joint < robot.n_joints:
        raise UsageError(f"--sweep: joint {joint} out of range for {robot.n_joints} joints")
    try:
        start, stop = float(start), float(stop)
    except ValueError:
        raise UsageError("--sweep: FROM and TO must be numbers") from None
    if args.steps < 2:
        raise UsageError(f"--steps: must be >= 2 (got {args.steps})")
    values = np.linspace(start, stop, args.steps)
    qs = np.broadcast_to(q, (args.steps, robot.n_joints)).copy()
    qs[:, joint] = values * scale[joint]
    orders = (0, 1, 2) if order == 2 else (order,)
    sweep = {"angles": values, "forces": forces, "order": order, "orders": {}}
    for o in orders:
        res = statics(robot, qs[None], wrenches[:, None], point=point, order=o, gauges=gauges)
        sweep["orders"][o] = {"torque": res.torques[..., joint], "torques": res.torques,
                              "curvature": res.curvature[..., 2] if res.gauges else np.zeros(res.torques.shape[:2] + (0,)),
                              "endpoint": res.deflection_local[..., 1], "q_f": res.q_f}
    unit = "deg" if args.deg and robot.links[joint].joint == "revolute" else (
        "rad" if robot.links[joint].joint == "revolute" else "m")
    plot = None
    if args.plot:
        from .viz import plot_statics

        plot = str(plot_statics(sweep, args.plot, joint_label=f"joint {joint} [{unit}]"))
    main = sweep["orders"][order]
    if args.json:
        print_json({"model": robot.name, "order": order, "joint": joint, "values": values, "unit": unit,
                     "forces": forces, "point": point, "plot": plot,
                     "orders": {str(o): {k: v for k, v in d.items() if k != "torque"}
                                for o, d in sweep["orders"].items()}})
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: statics, order {order}, joint {joint} swept [{unit}]")
    table.add_column("force [N]")
    table.add_column(f"q{joint} [{unit}]", justify="right")
    table.add_column(f"torque {joint}", justify="right")
    table.add_column("endpoint deflection [mm]", justify="right")
    table.add_column("curvature at gauges, kappa_z [1/m]")
    for i, force in enumerate(forces):
        for a in range(args.steps):
            table.add_row(fmt(force) if a == 0 else "", fmt(values[a]), fmt(main["torque"][i, a]),
                          fmt(1e3 * main["endpoint"][i, a]), fmt(main["curvature"][i, a]))
    con = console()
    con.print(table)
    if plot:
        con.print(f"plot: {plot}")
    return 0


# ----- derive, codegen, analyze, closure ---------------------------------------------------------
FORMULATIONS = ("book", "newton_euler", "denoc", "lagrange")
OP_TARGETS = ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics")


def cmd_derive(args) -> int:
    """Derive the equations of motion: print them, compare formulations' operation counts, or
    (no MODEL, --compare) print our counts beside the documents' published ones."""
    if args.model is None:
        if not args.compare:
            raise UsageError("derive: give a MODEL (model file or bundled example name), "
                             "or --compare alone for the document tables")
        return _document_comparison(args)
    from .symbolic import derive

    robot = load_model(args.model)
    if args.compare:
        return _compare_formulations(robot, args)
    eom = derive(robot, formulation=args.formulation, parameters=args.parameters)
    if args.json:
        print_json({"model": robot.name, "formulation": args.formulation,
                     "op_count": {what: eom.op_count(what) for what in OP_TARGETS}, "text": eom.text()})
        return 0
    print(eom.latex() if args.latex else eom.text())
    return 0


def _compare_formulations(robot, args) -> int:
    """Operation counts of every formulation for one model, side by side."""
    from .literature.table_4_1 import TABLE_4_1
    from .symbolic import derive

    rows = []
    for form in FORMULATIONS:
        eom = derive(robot, formulation=form, parameters=args.parameters)
        counts = {what: eom.op_count(what) for what in OP_TARGETS}
        rows.append({"formulation": form, "notes": list(getattr(eom, "notes", [])), "counts": counts})
    if args.json:
        print_json({"model": robot.name, "parameters": args.parameters, "formulations": rows})
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: operations of the generated straight-line code (mul / add / div / fn)")
    table.add_column("formulation")
    for what in OP_TARGETS:
        table.add_column(what.replace("_", " "), justify="right")
    for row in rows:
        cells = [f"{c['mul']} / {c['add']} / {c['div']} / {c['fn']}" for c in row["counts"].values()]
        table.add_row(row["formulation"], *cells)
    con = console()
    con.print(table)
    (rigid_mul, rigid_add), (flexible_mul, flexible_add) = TABLE_4_1["rigid"], TABLE_4_1["one mode per plane"]
    con.print(f"References: 000 Table 4.1 (SYMFLX inverse dynamics, three-link arm): rigid {rigid_mul} mul / "
              f"{rigid_add} add, one mode per plane {flexible_mul} mul / {flexible_add} add; "
              "004 Table 2 (inertia matrix counts).")
    for row in rows:
        for note in row["notes"]:
            con.print(f"note ({row['formulation']}): {note}")
    return 0


def _paper_cell(row) -> str:
    """The paper's 'mul / add'."""
    return f"{row['paper_mul']} / {row['paper_add']}"


def _ours_cell(row) -> str:
    """Our 'mul / add', each marked '*' where it is at or below the paper's (ASCII-safe)."""
    return " / ".join(f"{row[f'ours_{x}']}{'*' if row[f'met_{x}'] else ' '}" for x in ("mul", "add"))


def _table_4_1_table(rows):
    """One line per arm of 000 Table 4.1: the paper's counts, ours, and the formulation used."""
    from rich.table import Table

    table = Table(title="000 Table 4.1: inverse dynamics of the thesis three-link arm (mul / add)")
    table.add_column("arm")
    for col in ("coordinates", "paper (SYMFLX)", "ours", "ours from"):
        table.add_column(col, justify="left" if col == "ours from" else "right")
    for row in rows:
        table.add_row(row["arm"], str(row["nq"]), _paper_cell(row), _ours_cell(row), row["ours_formulation"])
    return table


def _table_2_table(rows):
    """One line per arm: assumed modes (AM) and finite elements (FEM) side by side."""
    from rich.table import Table

    by_arm = {}
    for row in rows:
        by_arm.setdefault(row["arm"], {})[row["discretization"]] = row
    table = Table(title="004 Table 2: inertia matrix (mul / add)")
    table.add_column("arm")
    for col in ("coordinates AM / FEM", "paper AM", "ours AM", "paper FEM", "ours FEM", "ours from AM / FEM"):
        table.add_column(col, justify="left" if col.startswith("ours from") else "right")
    for name, pair in by_arm.items():
        am, fem = pair["assumed_modes"], pair["finite_elements"]
        table.add_row(name, f"{am['nq']} / {fem['nq']}", _paper_cell(am), _ours_cell(am), _paper_cell(fem),
                      _ours_cell(fem), " / ".join(f"{r['ours_formulation']} ({r['ours_dh']} DH)" for r in (am, fem)))
    return table


def _document_comparison(args) -> int:
    """Our operation counts beside 000 Table 4.1 and 004 Table 2 (numeric parameters, as there)."""
    from .literature import table2, table_4_1

    if args.parameters != "numeric":
        raise UsageError("--parameters: the document tables count numeric models; give a MODEL for symbolic ones")
    print("flexman: deriving the arms of 000 Table 4.1 and 004 Table 2 ...", file=sys.stderr)
    data = {"table_4_1": table_4_1.comparison(), "table_2": table2.comparison()}
    if args.json:
        print_json(data)
        return 0
    con = console()
    con.print(_table_4_1_table(data["table_4_1"]))
    con.print(f"Source: {table_4_1.SOURCE}; ours: bundled example {table_4_1.THESIS_ARM}, "
              "rigid = its beams without modes.")
    con.print(_table_2_table(data["table_2"]))
    con.print(f"Source: {table2.SOURCE} text.")
    con.print("Ours: the cheapest over both DH placements and the formulations that apply, numeric parameters. "
              "* = at or below the paper's count.")
    return 0


def cmd_codegen(args) -> int:
    """Write generated code (or a stand-alone RK4 simulator program) for a model."""
    from .symbolic import derive

    robot = load_model(args.model)
    out = output_file(args.out, "--out", force=args.force, protect=[args.model])  # before the derivation
    eom = derive(robot, formulation=args.formulation)
    if args.program:
        from .codegen.simulator import program

        path = program(eom, out)
    else:
        path = eom.export(args.lang, out)
    path = Path(path) if path is not None else out
    if args.json:
        print_json({"model": robot.name, "file": str(path)})
    else:
        print(f"wrote {path}")
    return 0


def cmd_analyze(args) -> int:
    """Structure of the generalized inertia matrix (003): zero, constant or which coordinates."""
    from .symbolic import derive

    robot = load_model(args.model)
    if not args.gim:
        raise UsageError("analyze: choose an analysis, e.g. --gim")
    eom = derive(robot, formulation=args.formulation)
    gim = eom.gim_structure()
    if args.json:
        print_json({"model": robot.name, "constant": gim.is_constant, "diagonal": gim.is_diagonal,
                     "entries": [[sorted(gim.depends_on(i, j)) if gim.depends_on(i, j) else None
                                  for j in range(robot.nq)] for i in range(robot.nq)]})
        return 0
    print(gim)
    return 0


def cmd_closure(args) -> int:
    """Closure (thesis sec. 3.3, Figs. 3.28-3.29): drive with the model's controller, feed the
    recorded motion back through the inverse dynamics and compare the two torque histories."""
    from .closure import closure_run

    robot = load_model(args.model)
    if not args.t_final > 0 or not math.isfinite(args.t_final):
        raise UsageError(f"--t-final: must be a finite number > 0 (got {args.t_final})")
    if args.dt is not None and not (args.dt > 0 and math.isfinite(args.dt)):
        raise UsageError(f"--dt: must be a finite number > 0 (got {args.dt})")
    out = None if args.out is None else output_folder(args.out)
    report = closure_run(robot, args.t_final, dt=1e-3 if args.dt is None else args.dt, out=out)
    if args.json:
        print_json(report)
        return 0 if report["passed"] else 1
    print(f"{robot.name}: max |tau_inverse - tau_applied| = {report['max_abs_difference']:.3e} "
          f"({report['max_relative_difference']:.3e} of the torque scale) over {report['samples']} samples")
    for f in report["files"]:
        print(f"wrote {f}")
    return 0 if report["passed"] else 1


# ----- validate ---------------------------------------------------------------------------------
def validation_cases() -> list:
    """The literature cases (``flexman.literature.cases.CASES``); tests replace this function."""
    try:
        from .literature.cases import CASES
    except ImportError as exc:
        raise UsageError(f"the validation cases are not available ({exc})") from None
    return list(CASES)


def cmd_validate(args) -> int:
    """Run the literature cases; a table of expected vs obtained; exit 1 if any fails."""
    cases = validation_cases()
    if args.case:
        names = [c.name for c in cases]
        cases = [c for c in cases if c.name == args.case]
        if not cases:
            raise UsageError(f"unknown case '{args.case}'; cases: {', '.join(names)}")
    from .literature.cases import run

    results = [run(case) for case in cases]
    failed = sum(not r["passed"] for r in results)
    if args.json:
        print_json({"cases": results, "passed": len(results) - failed, "failed": failed})
        return 1 if failed else 0
    from rich.table import Table

    table = Table(title="literature validation")
    for col in ("case", "source", "expected", "obtained", "tolerance", "pass"):
        table.add_column(col, no_wrap=col == "case")
    for case, r in zip(cases, results):
        unit = f" {case.unit}" if getattr(case, "unit", "") else ""
        tol = (f"{100 * r['tolerance']:g} %" if getattr(case, "relative", False)
               else fmt(r["tolerance"]) + unit)
        got = r["error"] if r["error"] else fmt(r["obtained"]) + unit
        expected = {"above": "> ", "below": "< "}.get(r["bound"], "") + fmt(r["expected"]) + unit
        if r["bound"] in ("above", "below"):
            tol = "-"
        table.add_row(r["name"], str(r["source"]), expected, got, tol,
                      "[green]yes[/green]" if r["passed"] else "[red]NO[/red]")
    con = console()
    con.print(table)
    con.print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


# ----- parser and entry point -------------------------------------------------------------------
def _subcommand(sub, name: str, func, help: str, model: bool = True, optional_model: bool = False):
    """Register a subcommand with the common MODEL and --json arguments."""
    parser = sub.add_parser(name, help=help, description=help)
    if model:
        parser.add_argument("model", metavar="MODEL", nargs="?" if optional_model else None,
                            help="model file (.yaml/.toml/.json) or bundled example name")
    parser.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    parser.set_defaults(func=func)
    return parser


def _simulation_arguments(p) -> None:
    """The options of a run, shared by `simulate` and `report`."""
    p.add_argument("--t-final", type=float, default=1.0, metavar="T", help="end time in s (default 1)")
    p.add_argument("--dt", type=float, help="output (and rk4) step in s")
    p.add_argument("--method", choices=SIM_METHODS, default="rk4", help="integrator (default rk4)")
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


def build_parser() -> argparse.ArgumentParser:
    from .version import __version__

    parser = _Parser(prog="flexman", description="Robot manipulators with rigid and flexible links.")
    parser.add_argument("--version", action="version", version=f"flexman {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _subcommand(sub, "info", cmd_info, "summary of a model: coordinates, masses, DH table")

    p = _subcommand(sub, "examples", cmd_examples, "list, print or copy the bundled examples", model=False)
    p.add_argument("name", nargs="?", metavar="NAME", help="an example to print or copy")
    p.add_argument("--copy", metavar="DEST", help="copy the example to a file (converted by extension) or folder")
    p.add_argument("--force", action="store_true", help="overwrite DEST")

    p = _subcommand(sub, "simulate", cmd_simulate, "simulate a model and write results and a plot")
    _simulation_arguments(p)
    p.add_argument("--out", metavar="DIR", help="folder for result.npz, result.csv and result.png")
    p.add_argument("--no-plot", action="store_true", help="do not write the plot")

    p = _subcommand(sub, "sweep", cmd_sweep, "simulate variants of a model on Dask; figures in one Parquet file")
    p.add_argument("spec", metavar="SPEC", help="sweep specification (YAML: parameters, sampling, samples, run, ...)")
    p.add_argument("--out", metavar="FILE", help="Parquet file (default: the spec's out, else SPEC with .parquet)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (default: a LocalCluster here)")
    p.add_argument("--workers", type=int, metavar="N", help="LocalCluster worker processes")
    p.add_argument("--plot", nargs=3, metavar=("FIGURE", "X", "Y"), help="plot a figure over two parameters (PNG)")

    p = _subcommand(sub, "report", cmd_report, "simulate a model and write an HTML report with a 3D animation")
    _simulation_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR", help="folder for report.html, summary.png, result.png and result.npz")
    p.add_argument("--magnify", type=float, metavar="K", help="draw deflections K times their size (default: automatic)")
    p.add_argument("--equations", choices=("auto",) + FORMULATIONS + ("none",), default="auto",
                   help="formulation of the equations shown (default auto: newton_euler for rigid arms, book for "
                        "flexible ones; none leaves them out)")

    p = _subcommand(sub, "frequencies", cmd_frequencies, "natural frequencies of the linearized system")
    p.add_argument("--q", type=float, nargs="+", metavar="Q", help="configuration (joint or all coordinates)")
    p.add_argument("--qd", type=float, nargs="+", metavar="QD",
                   help="constant joint rates: frequencies about that steady motion (joints held, gyroscopic terms in)")

    p = _subcommand(sub, "statics", cmd_statics, "equilibrium under endpoint forces: torques, deflection, strain")
    p.add_argument("--q", type=float, nargs="+", metavar="Q", help="joint positions (rad, m; see --deg)")
    p.add_argument("--force", type=float, nargs=3, action="append", metavar=("FX", "FY", "FZ"),
                   help="endpoint force in the base frame, N (repeat for several; default: the model's statics.forces)")
    p.add_argument("--moment", type=float, nargs=3, metavar=("MX", "MY", "MZ"), help="endpoint moment, N m")
    p.add_argument("--point", type=float, nargs=3, metavar=("X", "Y", "Z"),
                   help="where the force acts, in the last link's distal frame (default: the model's statics.point, "
                        "else the tip)")
    p.add_argument("--gauges", type=float, nargs="+", metavar="X",
                   help="gauge positions along the flexible link, m from its root (default: the model's statics.gauges)")
    p.add_argument("--order", type=int, choices=(0, 1, 2), default=2,
                   help="kinematics: 0 rigid, 1 first order, 2 second order (default; compared with 0 and 1)")
    p.add_argument("--sweep", nargs=3, metavar=("JOINT", "FROM", "TO"), help="sweep one joint over [FROM, TO]")
    p.add_argument("--steps", type=int, default=37, help="sweep points (default 37)")
    p.add_argument("--deg", action="store_true", help="revolute joint values (--q, --sweep) in degrees")
    p.add_argument("--plot", metavar="PATH", help="with --sweep: write the plot (PNG, PDF or SVG)")

    p = _subcommand(sub, "derive", cmd_derive, "derive the equations of motion (text, LaTeX, operation counts)",
                    optional_model=True)
    p.add_argument("--formulation", choices=FORMULATIONS, default="newton_euler")
    p.add_argument("--parameters", choices=("numeric", "symbolic"), default="numeric")
    p.add_argument("--compare", action="store_true",
                   help="operation counts of every formulation side by side; without MODEL, ours beside "
                        "000 Table 4.1 and 004 Table 2")
    p.add_argument("--latex", action="store_true", help="print LaTeX instead of text")

    p = _subcommand(sub, "codegen", cmd_codegen, "generate code for the equations of motion")
    p.add_argument("--lang", choices=("c", "fortran", "python", "matlab", "julia"), default="c")
    p.add_argument("--formulation", choices=FORMULATIONS, default="newton_euler")
    p.add_argument("--out", required=True, metavar="PATH", help="output file")
    p.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    p.add_argument("--program", action="store_true", help="a stand-alone C simulator (RK4) instead of functions")

    p = _subcommand(sub, "analyze", cmd_analyze, "structural analyses of the model")
    p.add_argument("--gim", action="store_true", help="which inertia-matrix entries are zero, constant or varying")
    p.add_argument("--formulation", choices=FORMULATIONS, default="denoc")

    p = _subcommand(sub, "closure", cmd_closure, "closure check: applied vs inverse-dynamics torques")
    p.add_argument("--t-final", type=float, default=1.0, metavar="T")
    p.add_argument("--dt", type=float)
    p.add_argument("--out", metavar="DIR", help="folder for the torque plot and data")

    from .cli_parameters import register

    register(sub, _subcommand)  # sensitivity, identify

    from .guided import register as register_new

    register_new(sub)  # new: guided input of a model file

    p = _subcommand(sub, "validate", cmd_validate, "run the literature validation cases", model=False)
    p.add_argument("--case", metavar="NAME", help="run only this case")

    from .cli_cache import register as register_cache

    register_cache(sub, _subcommand)  # cache: list, prune or clear the compiled models
    return parser


def main(argv=None) -> int:
    """Entry point of the ``flexman`` console script; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        with np.errstate(all="ignore"):  # overflow in a diverging run is reported once, as a result
            return args.func(args)
    except BrokenPipeError:  # e.g. `flexman info arm.yaml | head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ModelError, ValueError, OSError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, OSError) and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
        print(f"flexman: error: {message}", file=sys.stderr)
        if os.environ.get("FLEXMAN_DEBUG"):
            raise
        return 2
    except KeyboardInterrupt:
        print("flexman: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line, with a way to see the traceback
        if os.environ.get("FLEXMAN_DEBUG"):
            raise
        print(f"flexman: error: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
              "(set FLEXMAN_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
