"""`flexman statics`: equilibrium under endpoint loads, a joint sweep and its plot."""
from __future__ import annotations

import math

import numpy as np

from .common import UsageError, console, fmt, load_model, print_json, subcommand, vector
from ..model.limits import MAX_STATICS_POINTS, check_run_size
from ..outputs import output_file

PLOT_TYPES = (".png", ".pdf", ".svg")


def plot_file(path):
    """The --plot file, checked before the sweep: a file name (not a folder) ending in a
    picture type, whose folder can be written; an existing file is replaced."""
    target = output_file(path, "--plot", force=True)
    if target.suffix.lower() not in PLOT_TYPES:
        raise UsageError(f"--plot: {target} has no picture type; end the name with {', '.join(PLOT_TYPES)}")
    return target

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
    revolute = np.array([link.joint == "revolute" for link in robot.joint_links])
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
    from ..analysis import statics

    robot = load_model(args.model)
    forces, wrenches, point, gauges, q, scale = _statics_setup(robot, args)
    order = args.order
    if args.sweep is None:
        if args.plot is not None:
            raise UsageError("--plot: the plot shows a sweep; add --sweep JOINT FROM TO")
        res = statics(robot, q, wrenches, point=point, order=order, gauges=gauges)
        rows = _statics_rows(res, forces)
        if args.json:
            print_json({"model": robot.name, "order": order, "q_r": q, "point": point,
                         "gauges": [{"link": l, "x": x} for l, x in res.gauges], "results": rows,
                         "newton_steps": res.newton_steps, "residual": float(np.max(res.residual))})
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
        if robot.nf and order:
            con.print(f"equilibrium: {res.newton_steps} Newton steps, unbalanced generalized force "
                      f"{np.max(res.residual):.3g} left on the flexible coordinates")
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
    nq = robot.nq  # three orders, each keeping torques, curvatures, endpoints and q_f per point and load
    check_run_size(args.steps * len(forces), 3 * (nq * nq + 4 * nq + 16), "points (steps x forces)", "--steps",
                   most=MAX_STATICS_POINTS)
    plot_path = None if args.plot is None else plot_file(args.plot)
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
    unit = "deg" if args.deg and robot.joint_links[joint].joint == "revolute" else (
        "rad" if robot.joint_links[joint].joint == "revolute" else "m")
    plot = None
    if args.plot:
        from ..viz import plot_statics

        plot = str(plot_statics(sweep, plot_path, joint_label=f"joint {joint} [{unit}]"))
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


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "statics", cmd_statics, "equilibrium under endpoint forces: torques, deflection, strain")
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
