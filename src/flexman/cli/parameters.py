"""The commands about a model's parameters, ``flexman sensitivity`` (derivatives with respect to
them), ``flexman excite`` (a motion to measure them on) and ``flexman identify`` (their values
from measurements); registered in :mod:`flexman.cli`."""
from __future__ import annotations

import numpy as np

from .common import UsageError, console, fmt, load_model, print_json, state_vector, subcommand, vector


def cmd_sensitivity(args) -> int:
    """Exact derivatives of frequencies, the mass matrix or inverse dynamics w.r.t. named parameters."""
    from ..analysis import sensitivity
    from ..analysis.motion_sensitivity import FIGURES
    robot = load_model(args.model)
    q, qd, qdd = (state_vector(robot, v, f"--{n}", kind) for v, n, kind in
                  ((args.q, "q", "position"), (args.qd, "qd", "rate"), (args.qdd, "qdd", "acceleration")))
    if args.of in FIGURES:
        from ..trajectory import from_spec

        spec = getattr(robot, "manoeuvre", None)
        if not spec:
            raise UsageError(f"--of {args.of}: model '{robot.name}' has no manoeuvre section (the joint motion "
                             "whose figure is differentiated); add one, e.g. manoeuvre: {type: rest_to_rest, "
                             "start: 0, end: 0.5, duration: 1.0}")
        if args.t_final is None:
            raise UsageError(f"--of {args.of}: give --t-final (s)")
        s = sensitivity(robot, args.of, args.wrt, prescribed=from_spec(spec, robot.n_joints, "manoeuvre"),
                        t_final=args.t_final, dt=args.dt or 1e-3)
        return _show(robot, args, s, q)
    if args.of == "mass_matrix" and (qd is not None or qdd is not None):
        raise ValueError("--qd/--qdd: only with --of inverse_dynamics or (--qd) frequencies; the mass matrix depends on q only")
    if args.of == "frequencies" and qdd is not None:
        raise ValueError("--qdd: only with --of inverse_dynamics (frequencies take --q and, about a steady motion, --qd)")
    s = sensitivity(robot, args.of, args.wrt, q=q, qd=qd, qdd=qdd)
    return _show(robot, args, s, q)


def _show(robot, args, s, q) -> int:
    if args.json:
        print_json({"model": robot.name, "of": args.of, "q": q, **s.to_dict()})
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: d({args.of})/d(parameter), exact")
    table.add_column("")
    table.add_column("value", justify="right")
    for name, v in zip(s.parameters, s.values):
        table.add_column(f"d/d{name}\n({name} = {fmt(v)})", justify="right")
    flat_v = np.asarray(s.value).reshape(-1)
    flat_d = s.derivative.reshape(len(s.parameters), -1)
    for r, label in enumerate(s.labels):
        table.add_row(label, fmt(flat_v[r]), *[fmt(flat_d[j, r]) for j in range(len(s.parameters))])
    console().print(table)
    return 0


def cmd_identify(args) -> int:
    """Identify parameters from a CSV of measured t, q, tau (and tip offsets for beam parameters)."""
    from .. import identify
    from ..analysis.measurements import read_measurements

    robot = load_model(args.model)
    data = read_measurements(args.data, robot)
    options = {"cutoff": args.cutoff}
    if args.order is not None:
        options["order"] = args.order
    if args.parameters:
        if data["tip"] is None:
            raise ValueError(f"{args.data}: beam parameters need measured tip offsets: add columns tip_x, tip_y, tip_z")
        options["tip"] = data["tip"]
    else:
        options.update(armature=args.armature, viscous=args.viscous, coulomb=args.coulomb, trim=args.trim)
        if args.validation:
            other = read_measurements(args.validation, robot)
            options["validation"] = (other["t"], other["q"], other["tau"])
    try:
        ident = identify(robot, data["t"], data["q"], data["tau"], parameters=args.parameters or None, **options)
    except ValueError as exc:
        raise ValueError(f"{args.data}: {exc}") from None
    if args.json:
        print_json({"model": robot.name, "data": str(args.data), **ident.to_dict()})
        return 0
    console().print(ident.table(), markup=False, highlight=False)
    return 0


# excitation limits: the key of fm.analysis.excitation_design's limits and the option that sets it
_LIMIT_OPTIONS = {"qdd": "--accel-limit", "qd": "--rate-limit", "tau": "--torque-limit", "q": "--position-limit"}


MAX_EXCITE_ROWS = 10_000_000  # rows of the excitation CSV (about 1 GB of text for six joints)


def cmd_excite(args) -> int:
    """An optimised Fourier excitation written as a CSV reference (t, q.., qd.., qdd..)."""
    from ..analysis.excitation_design import excitation
    from ..outputs import output_file

    robot = load_model(args.model)
    out = output_file(args.out, "--out", force=args.force, protect=(args.model,))
    if args.rate <= 0:
        raise UsageError("--rate: must be > 0 samples per second")
    if args.periods < 1:
        raise UsageError("--periods: must be at least 1")
    if not (np.isfinite(args.period) and args.period > 0):
        raise UsageError("--period: must be a finite number of seconds > 0")
    rows = args.rate * args.period * args.periods
    if not rows <= MAX_EXCITE_ROWS:
        raise UsageError(f"--period: {args.period:g} s x --periods {args.periods} at --rate {args.rate:g} makes "
                         f"{rows:.3g} rows, more than the limit of {MAX_EXCITE_ROWS:,}; shorten the period or lower "
                         "the rate")
    limits = {}
    if args.position_limit is not None:  # LOW HIGH once (every joint) or per joint
        pairs = vector(args.position_limit, (2, 2 * robot.n_joints), "--position-limit")
        if pairs.size not in (2, 2 * robot.n_joints):
            raise UsageError(f"--position-limit: give LOW HIGH once (every joint) or {robot.n_joints} pairs, one per "
                             f"joint (got {pairs.size} values)")
        limits["q"] = pairs.reshape(-1, 2).tolist() if pairs.size > 2 else pairs.tolist()
    for key, values in (("qd", args.rate_limit), ("qdd", args.accel_limit), ("tau", args.torque_limit)):
        if values is not None:
            arr = vector(values, (1, robot.n_joints), _LIMIT_OPTIONS[key])
            limits[key] = arr if arr.size == robot.n_joints else float(arr[0])
    try:
        traj = excitation(robot, args.period, args.harmonics, limits=limits, seed=args.seed,
                          **({"starts": args.starts} if args.starts else {}))
    except ValueError as exc:
        text = str(exc)
        names = [(f"limits.{k}", o) for k, o in sorted(_LIMIT_OPTIONS.items(), key=lambda kv: -len(kv[0]))]
        for name, option in names + [("period", "--period"), ("harmonics", "--harmonics"), ("seed", "--seed"),
                                     ("starts", "--starts")]:
            if text.startswith(f"{name}:"):
                text = option + text[len(name):]
                break
        raise ValueError(text) from None
    traj.to_csv(out, rate=args.rate, periods=args.periods)
    t, q, qd, qdd = traj.samples(max(args.rate, 20 * args.harmonics / args.period), 1)
    L = traj.limits
    peaks = {"q_low": q.min(axis=0), "q_high": q.max(axis=0), "qd": np.abs(qd).max(axis=0),
             "qdd": np.abs(qdd).max(axis=0)}
    if L["tau"] is not None:
        peaks["tau"] = np.abs(robot.inverse_dynamics(q, qd, qdd)).max(axis=0)
    summary = {"model": robot.name, "out": str(out), "period": traj.period, "harmonics": traj.harmonics,
               "condition": traj.condition, "random_condition": traj.random_condition,
               "limits": {k: v for k, v in L.items() if v is not None}, "peaks": peaks,
               "q0": traj.q0, "a": traj.a, "b": traj.b}
    if args.json:
        print_json(summary)
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: excitation, period {traj.period:g} s, {traj.harmonics} harmonics; "
                        f"regressor condition number {traj.condition:.3g} (random series, same limits: "
                        f"{traj.random_condition:.3g})")
    for col in ("joint", "q range", "limits", "|qd| max", "limit", "|qdd| max", "limit") + (
            ("|tau| max", "limit") if L["tau"] is not None else ()):
        table.add_column(col, justify="right")
    for j in range(robot.n_joints):
        row = [str(j + 1), f"[{q[:, j].min():.4g}, {q[:, j].max():.4g}]", f"[{L['q'][j, 0]:.4g}, {L['q'][j, 1]:.4g}]",
               f"{peaks['qd'][j]:.4g}", f"{L['qd'][j]:.4g}", f"{peaks['qdd'][j]:.4g}", f"{L['qdd'][j]:.4g}"]
        if L["tau"] is not None:
            row += [f"{peaks['tau'][j]:.4g}", f"{L['tau'][j]:.4g}"]
        table.add_row(*row)
    con = console()
    con.print(table)
    con.print(f"reference: {out} ({args.periods} period(s) at {args.rate:g} Hz: t, q, qd, qdd)")
    return 0


def register(sub) -> None:
    """Add both commands to the ``flexman`` parser (``subcommand``: cli._subcommand)."""
    p = subcommand(sub, "sensitivity", cmd_sensitivity,
                   "exact derivatives of frequencies, mass matrix or inverse dynamics w.r.t. named parameters")
    p.add_argument("--of", choices=("frequencies", "mass_matrix", "inverse_dynamics", "peak_tip_deflection",
                                    "final_tip_error"), default="frequencies",
                   help="the quantity (default frequencies); the two tip figures are of the model's manoeuvre "
                        "(joints prescribed) over --t-final")
    p.add_argument("--wrt", nargs="+", required=True, metavar="NAME",
                   help="parameter names, e.g. EI2 rhoA2 payload mass3 a2 (an unknown name lists the valid ones)")
    p.add_argument("--q", type=float, nargs="+", metavar="Q", help="configuration (joint or all coordinates)")
    p.add_argument("--qd", type=float, nargs="+", metavar="QD", help="rates (inverse_dynamics; frequencies: about the steady motion at these joint rates)")
    p.add_argument("--qdd", type=float, nargs="+", metavar="QDD", help="accelerations (inverse_dynamics)")
    p.add_argument("--t-final", type=float, metavar="T", help="duration of the manoeuvre (tip figures), s")
    p.add_argument("--dt", type=float, metavar="DT", help="RK4 step (tip figures), s (default 1e-3)")

    p = subcommand(sub, "excite", cmd_excite,
                   "an optimised Fourier excitation for identification, written as a CSV reference (rigid arms)")
    p.add_argument("--period", type=float, required=True, metavar="T", help="period of the series, s")
    p.add_argument("--harmonics", type=int, default=5, metavar="N", help="harmonics of the series (default 5)")
    p.add_argument("--out", required=True, metavar="CSV", help="the reference: t, q1.., qd1.., qdd1..")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--rate", type=float, default=1000.0, metavar="HZ", help="samples per second in --out (default 1000)")
    p.add_argument("--periods", type=int, default=1, metavar="N", help="periods written to --out (default 1)")
    p.add_argument("--position-limit", type=float, nargs="+", metavar="Q",
                   help="joint ranges: LOW HIGH for every joint, or one pair per joint (default: the model's joint "
                        "limits, else +-pi rad, +-0.5 m); keep the arm clear of its table and its own links")
    p.add_argument("--rate-limit", type=float, nargs="+", metavar="QD",
                   help="largest joint rates, one or one per joint (default 1 rad/s, 0.5 m/s)")
    p.add_argument("--accel-limit", type=float, nargs="+", metavar="QDD",
                   help="largest joint accelerations, one or one per joint (default 5 rad/s^2, 2 m/s^2)")
    p.add_argument("--torque-limit", type=float, nargs="+", metavar="TAU",
                   help="largest joint torques (forces), one or one per joint (default none)")
    p.add_argument("--starts", type=int, metavar="N", help="random series tried before optimising (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")

    p = subcommand(sub, "identify", cmd_identify, "identify base inertial (or beam) parameters from measured data")
    p.add_argument("data", metavar="DATA", help="CSV with header t, q1.., tau1.. (tip_x, tip_y, tip_z for beams)")
    p.add_argument("--cutoff", type=float, metavar="HZ",
                   help="low-pass cutoff (default: read from the spectra of q and tau, reported in the table)")
    p.add_argument("--order", type=int, metavar="N", help="Butterworth filter order (default 4, at most 10)")
    p.add_argument("--trim", type=int, metavar="N",
                   help="samples dropped at each end (default 5%% of them, at least two periods of the cutoff)")
    p.add_argument("--validation", metavar="CSV",
                   help="a separate record (same columns) the estimate must predict; default: a five-fold "
                        "held-out check on DATA")
    p.add_argument("--armature", action="store_true", help="also identify joint armature Ia<i>")
    p.add_argument("--viscous", action="store_true", help="also identify viscous friction Fv<i>")
    p.add_argument("--coulomb", action="store_true", help="also identify Coulomb friction Fc<i>")
    p.add_argument("--parameters", nargs="+", metavar="NAME",
                   help="beam parameters of flexible links to identify instead (e.g. EI2 rhoA2 zeta2)")
