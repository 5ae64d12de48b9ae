"""`flexman frequencies`: natural frequencies of the linearized system."""
from __future__ import annotations

import math

import numpy as np

from .common import UsageError, console, fmt, load_model, print_json, state_vector, subcommand

def cmd_frequencies(args) -> int:
    """Natural frequencies of the linearized free system at q (rad/s and Hz)."""
    robot = load_model(args.model)
    q = state_vector(robot, args.q, "--q")
    if args.convergence:
        return _convergence(robot, q, args)
    if args.plot or args.modes:
        raise UsageError("--plot/--modes: only with --convergence")
    qd = state_vector(robot, args.qd, "--qd", "rate")
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
    _notice(robot, q)
    return 0


def _notice(robot, q=None) -> None:
    """The once-per-model convergence notice at the pose given, on stderr as one line."""
    import sys
    import warnings

    from ..analysis.modal_convergence import ConvergenceNotice, convergence_notice

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceNotice)
        text = convergence_notice(robot, q)
    if text:
        print(f"flexman: notice: {text}", file=sys.stderr)


def _convergence(robot, q, args) -> int:
    """The table (and plot) of the lowest frequencies as the modes per beam grow."""
    from ..analysis.modal_convergence import DEFAULT_MODES, convergence

    if args.qd is not None:
        raise UsageError("--qd: not with --convergence (the study is of the arm at rest)")
    study = convergence(robot, q, modes=tuple(args.modes) if args.modes else DEFAULT_MODES)
    if args.plot:
        from ..outputs import output_file

        path = output_file(args.plot, "--plot", force=True)
        study.plot(path)
    if args.json:
        print_json(study.to_dict())
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: lowest natural frequencies (rad/s) as the modes per beam grow; "
                        "change against the converged reference")
    table.add_column("per beam", justify="right")
    for kind, rows in (("free", study.free), ("locked", study.locked)):
        for i in range(rows.shape[1]):
            table.add_column(f"joints {kind} {i + 1}", justify="right")
    for c, f, df, l, dl in zip(study.counts, study.free, study.free_change, study.locked, study.locked_change):
        cells = [f"{fmt(v)} ({100 * d:+.1f} %)" if np.isfinite(v) else "-"
                 for v, d in list(zip(f, df)) + list(zip(l, dl))]
        table.add_row(str(c), *cells)
    ref = [study.reference_row(kind, rows.shape[1]) for kind, rows in (("free", study.free), ("locked", study.locked))]
    table.add_row("reference", *[fmt(v) if np.isfinite(v) else "-" for v in np.concatenate(ref)])
    con = console()
    con.print(table)
    own = ", ".join(f"{b}: {n}" for b, n in study.own_counts.items())
    con.print(f"reference: {study.reference_method}")
    con.print(f"the model's own ({own}) is {100 * study.model_error:.1f} % from the reference; "
              f"{study.enough} per beam come within {100 * study.tolerance:.0f} %")
    if args.plot:
        con.print(f"plot: {path}")
    return 0


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "frequencies", cmd_frequencies, "natural frequencies of the linearized system")
    p.add_argument("--q", type=float, nargs="+", metavar="Q", help="configuration (joint or all coordinates)")
    p.add_argument("--qd", type=float, nargs="+", metavar="QD",
                   help="constant joint rates: frequencies about that steady motion (joints held, gyroscopic terms in)")
    p.add_argument("--convergence", action="store_true",
                   help="the lowest frequencies (joints free and locked) as every beam gets 1, 2, 3, 5 modes "
                        "(or elements), with the change against a converged finite-element reference")
    p.add_argument("--modes", type=int, nargs="+", metavar="N", help="the counts per beam of --convergence")
    p.add_argument("--plot", metavar="PNG", help="with --convergence: save the plot there")
