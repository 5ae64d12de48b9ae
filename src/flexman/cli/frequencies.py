"""`flexman frequencies`: natural frequencies of the linearized system."""
from __future__ import annotations

import math

import numpy as np

from .common import console, fmt, load_model, print_json, subcommand, vector

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


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "frequencies", cmd_frequencies, "natural frequencies of the linearized system")
    p.add_argument("--q", type=float, nargs="+", metavar="Q", help="configuration (joint or all coordinates)")
    p.add_argument("--qd", type=float, nargs="+", metavar="QD",
                   help="constant joint rates: frequencies about that steady motion (joints held, gyroscopic terms in)")
