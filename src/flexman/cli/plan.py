"""`flexman plan`: an optimal rest-to-rest move, compared by simulation with a smooth profile
and (``--shaper``) its input-shaped version; writes the trajectory, the comparison and a plot."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .common import UsageError, fmt, load_model, print_json, subcommand, to_plain, vector

OBJECTIVES = ("effort", "time", "deflection", "tip_path")
SHAPERS = ("zv", "zvd", "ei")
PROFILES = ("quintic", "sinusoidal", "cubic")
SETTLE = 1.5  # seconds simulated after each move to measure the residual vibration


def _settings(robot, args):
    """Targets, duration, objective, limits, knots and shaper: the options, else the model
    file's ``plan:`` section."""
    block = getattr(robot, "plan_settings", None) or {}
    n = robot.n_joints
    goal = vector(args.to, (n,), "--to") if args.to is not None else block.get("goal")
    if goal is None:
        raise UsageError("--to: give the goal's joint values (or a plan: goal in the model file)")
    start = vector(args.start, (n,), "--from") if args.start is not None else block.get("start", np.zeros(n))
    if args.min_time and args.duration is not None:
        raise UsageError("--duration and --min-time: give one or the other")
    duration = None if args.min_time else (args.duration if args.duration is not None else block.get("duration"))
    limits = {}
    for key, opt in (("torque", "torque_limit"), ("rate", "rate_limit")):
        value = getattr(args, opt)
        value = vector(value, (1, n), f"--{opt.replace('_', '-')}") if value is not None else block.get(opt)
        if value is not None:
            limits[key] = value
    objective = args.objective or block.get("objective")
    shaper = args.shaper or block.get("shaper")
    knots = args.knots if args.knots is not None else block.get("knots", 60)
    return (np.asarray(start, dtype=float), np.asarray(goal, dtype=float), duration, limits, objective, knots,
            shaper)


def _measure(robot, name, traj, t_move, baseline, shift, goal_tip, dt):
    """Simulate ``traj`` with the joints following it exactly; the end-effector's distance
    from the rigid arm along ``baseline`` (started ``shift`` s later) during the move and from
    the goal after it."""
    from ..analysis.tip import tip_offset
    from ..simulate import simulate

    res = simulate(robot, traj.t_end + SETTLE, dt=dt, prescribed=traj)
    error = np.linalg.norm(tip_offset(robot, res.q, joints=baseline(res.t - shift)[0]), axis=1)
    tip = robot.frame(res.q)[:, :3, 3]
    after = res.t >= traj.t_end
    moving = (res.t >= t_move[0]) & (res.t <= t_move[1])
    return {"name": name, "t": res.t, "error": error, "tau": res.tau,
            "path_error_mm": 1e3 * float(error[moving].max()),
            "residual_mm": 1e3 * float(np.linalg.norm(tip[after] - goal_tip, axis=1).max()),
            "move_end_s": float(traj.t_end), "peak_torque": np.abs(res.tau).max(axis=0)}


def _plot(runs, plan, path):
    # A bare Figure renders with Agg and leaves pyplot's global state (and backend) alone.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 9))
    axes = fig.subplots(3, 1, sharex=True)
    for run in runs:
        axes[0].semilogy(run["t"], np.maximum(run["error"] * 1e3, 1e-4), label=run["name"])
    axes[0].set_ylabel("end-effector error (mm)")
    axes[0].set_title("distance from the rigid arm's path (the goal after the move)")
    axes[0].legend()
    q, _, _ = plan.trajectory(plan.t)
    axes[1].plot(plan.t, q)
    axes[1].set_ylabel("planned joints")
    axes[2].plot(plan.t, plan.torques)
    axes[2].set_ylabel("planned torques")
    axes[2].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def cmd_plan(args) -> int:
    """Plan, compare by simulation, and write plan.csv, plan.npz, comparison.json and plan.png."""
    from ..outputs import output_folder, staged
    from ..planning import plan as make_plan
    from ..trajectory import rest_to_rest

    robot = load_model(args.model)
    start, goal, duration, limits, objective, knots, shaper = _settings(robot, args)
    if args.dt is not None and not (math.isfinite(args.dt) and args.dt > 0):
        raise UsageError(f"--dt: must be a number > 0 (got {args.dt})")
    out_path = Path(args.out)
    if out_path.exists() and not out_path.is_dir():
        raise UsageError(f"--out: {out_path} is a file; give a folder")
    if not args.time_limit > 0:
        raise UsageError(f"--time-limit: must be a number of seconds > 0 (got {args.time_limit})")
    if args.max_iter < 1:
        raise UsageError(f"--max-iter: must be a whole number >= 1 (got {args.max_iter})")
    result = make_plan(robot, start, goal, duration=duration, limits=limits or None, objective=objective,
                       knots=int(knots), max_iter=args.max_iter, time_limit=args.time_limit)
    window = result.window
    move_T = window[1] - window[0]
    baseline = rest_to_rest(start, goal, move_T, args.profile)  # holds its ends outside [0, move_T]
    q_goal = np.zeros(robot.nq)
    q_goal[robot.joint_index] = goal
    goal_tip = robot.frame(q_goal)[:3, 3]
    dt = args.dt or 2e-3
    runs = [_measure(robot, f"{args.profile} profile", baseline, (0.0, move_T), baseline, 0.0, goal_tip, dt)]
    if shaper:
        from ..control import shaper as make_shaper

        shaped = make_shaper(robot, baseline, kind=shaper.upper())(baseline)
        runs.append(_measure(robot, f"{shaper.upper()}-shaped", shaped, (0.0, move_T), baseline, 0.0, goal_tip, dt))
    pre = window[0]
    runs.append(_measure(robot, "optimal plan", result.trajectory, window, baseline, pre, goal_tip, dt))
    runs[-1]["t"] = runs[-1]["t"] - pre  # on the move's clock, like the others

    summary = {"model": robot.name, "from": start, "to": goal, "objective": result.weights,
               "plan": {k: v for k, v in result.report.items()}, "window_s": list(window),
               "limits": limits, "comparison": [{k: v for k, v in r.items() if k not in ("t", "error", "tau")}
                                                for r in runs]}
    out = output_folder(out_path)  # only now: nothing is written when planning fails
    t = np.linspace(0.0, result.duration, max(201, 10 * len(result.t)))
    q, qd, qdd = result.state(t)
    tau = result.torque(t)
    names = robot.coordinate_names
    header = ",".join(["t"] + names + [f"qd_{n}" for n in names] + [f"qdd_{n}" for n in names]
                      + [f"tau{i + 1}" for i in range(robot.n_joints)])
    with staged() as files:
        np.savetxt(files.path(out / "plan.csv"), np.column_stack([t, q, qd, qdd, tau]), delimiter=",",
                   header=header, comments="")
        np.savez(files.path(out / "plan.npz"), t=t, q=q, qd=qd, qdd=qdd, tau=tau, knots_t=result.t,
                 knots_q=result.q, knots_tau=result.torques, coordinate_names=np.array(names))
        files.write_text(out / "comparison.json", json.dumps(to_plain(summary), indent=2))
        _plot(runs, result, files.path(out / "plan.png"))
    written = [str(out / n) for n in ("plan.csv", "plan.npz", "comparison.json", "plan.png")]
    if args.json:
        print_json({**summary, "files": written})
        return 0
    rep = result.report
    print(f"{robot.name}: {rep['status']} after {rep['iterations']} iterations in {rep['seconds']:.3g} s, "
          f"constraint violation {rep['constraint_violation']:.2g}; move {move_T:.4g} s"
          + (f" (horizon {result.duration:.4g} s with pre- and post-actuation)" if pre else ""))
    dense = rep.get("dense") or {}
    for kind in ("torque", "rate"):
        if dense.get(f"{kind}_ratio") is not None:
            print(f"{kind} limits checked at {dense['points_per_interval']} points per interval"
                  + (" and on the simulated move" if kind == "torque" else "")
                  + f": peak {fmt(dense[f'{kind}_peak'])} = {fmt(100 * dense[f'{kind}_ratio'])} % of the limits"
                  + (f" ({dense['resolves']} re-solve{'s' if dense['resolves'] > 1 else ''} with the bounds backed off)" if dense["resolves"] else ""))
    print(f"{'move':<22} {'path error (mm)':>16} {'residual (mm)':>14}  peak torque")
    for r in runs:
        print(f"{r['name']:<22} {r['path_error_mm']:>16.4g} {r['residual_mm']:>14.4g}  {fmt(r['peak_torque'])}")
    for path in written:
        print(f"wrote {path}")
    return 0


def register(sub) -> None:
    """Add `flexman plan` to the parser."""
    from ..planning import TIME_LIMIT

    p = subcommand(sub, "plan", cmd_plan, "plan an optimal rest-to-rest move (CasADi + IPOPT) and compare it")
    p.add_argument("--to", type=float, nargs="+", metavar="Q", help="goal joint values (rad or m)")
    p.add_argument("--from", dest="start", type=float, nargs="+", metavar="Q", help="start joint values (default 0)")
    p.add_argument("--duration", type=float, metavar="T", help="move duration in s")
    p.add_argument("--min-time", action="store_true", help="the shortest move within the torque and rate limits")
    p.add_argument("--objective", choices=OBJECTIVES, help="what to minimise (default effort; time with --min-time)")
    p.add_argument("--shaper", type=str.lower, choices=SHAPERS, help="also compare the input-shaped profile")
    p.add_argument("--profile", choices=PROFILES, default="quintic", help="the smooth profile compared (default quintic)")
    p.add_argument("--torque-limit", type=float, nargs="+", metavar="TAU", help="joint torque limits (one or one per joint)")
    p.add_argument("--rate-limit", type=float, nargs="+", metavar="QD", help="joint rate limits (one or one per joint)")
    p.add_argument("--knots", type=int, help="collocation intervals (default 60)")
    p.add_argument("--max-iter", type=int, default=500, help="IPOPT iterations per solve (default 500)")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT, metavar="S",
                   help=f"seconds for all of IPOPT's solves (default {TIME_LIMIT:g})")
    p.add_argument("--dt", type=float, help="step of the checking simulations in s (default 2e-3)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for plan.csv, plan.npz, comparison.json, plan.png")
