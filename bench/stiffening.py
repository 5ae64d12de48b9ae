"""What geometric stiffening costs: operation counts, derivation time and evaluation time of the
bundled flexible arms with ``beam.stiffening`` false (the first-order model) and true.

Run: .venv/bin/python bench/stiffening.py [NAME ...]

For each arm, both models go through the derivation the model cache runs before compiling
(``fm.derive(robot, "newton_euler", parameters="symbolic", external=False)`` and the four
generated programs: mass matrix, bias forces, inverse and forward dynamics); the columns are its
CPU seconds, the multiplications + additions of the inverse dynamics and of the mass matrix,
Book's 4x4 recursion's inverse dynamics op count (``fm.derive(robot, "book")``, the count of the
thesis's tables), and one numeric (interpreted) inverse-dynamics call. Ratios: stiffened / first
order, measured in the same run.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from rigid import best_of  # noqa: E402  (bench/rigid.py)
from scaling import chain  # noqa: E402  (bench/scaling.py)

import flexman as fm  # noqa: E402
from flexman.codegen import WHATS  # noqa: E402
from flexman.model.serialize import robot_from_dict, robot_to_dict  # noqa: E402


def variant(name, stiffening):
    """The bundled example ``name`` (or ``chain<n>``: bench/scaling.py's chain of n flexible links)
    with every beam's ``stiffening`` set."""
    robot = chain(int(name[5:])) if name.startswith("chain") else fm.examples.load(name)
    data = robot_to_dict(robot)
    for link in data["links"]:
        if link.get("beam"):
            link["beam"]["stiffening"] = stiffening
    return robot_from_dict(data)


def flexible_examples():
    out = []
    for name in fm.examples.names():
        robot = fm.examples.load(name)
        if any(link.beam is not None and link.beam.nf for link in robot.links):
            out.append(name)
    return out


def ops(count):
    return count["mul"] + count["add"] + count["div"] + count["fn"]


def measure(robot):
    t0 = time.process_time()
    eom = fm.derive(robot, formulation="newton_euler", parameters="symbolic", external=False)
    for what in WHATS:
        eom.program(what)
    t_derive = time.process_time() - t0
    book = fm.derive(robot, formulation="book")
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(size=robot.nq) * 0.1 for _ in range(3))
    t_id = best_of(lambda: robot.inverse_dynamics(q, qd, qdd), number=20)
    return (t_derive, ops(eom.op_count("inverse_dynamics")), ops(eom.op_count("mass_matrix")),
            ops(eom.op_count("forward_dynamics")), ops(book.op_count("inverse_dynamics")), t_id)


def main(names):
    head = (f"{'model':22s} {'nq':>3s} {'stiff':>5s} {'derive CPU':>10s} {'ID ops':>7s} {'M ops':>7s} {'FD ops':>7s} "
            f"{'book ID ops':>11s} {'numeric ID':>10s}")
    print(head)
    for name in names:
        rows = []
        for stiffening in (False, True):
            robot = variant(name, stiffening)
            rows.append(measure(robot))
            t_derive, n_id, n_m, n_fd, n_book, t_id = rows[-1]
            print(f"{name:22s} {robot.nq:3d} {str(stiffening).lower():>5s} {t_derive:9.2f}s {n_id:7d} {n_m:7d} {n_fd:7d} "
                  f"{n_book:11d} {t_id * 1e6:8.0f}us", flush=True)
        ratio = [b / a if a else float("nan") for a, b in zip(rows[0], rows[1])]
        print(f"{'':22s} {'':3s} {'ratio':>5s} {ratio[0]:9.2f}x {ratio[1]:6.2f}x {ratio[2]:6.2f}x {ratio[3]:6.2f}x "
              f"{ratio[4]:10.2f}x {ratio[5]:8.2f}x", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or flexible_examples() + ["chain2", "chain4"])
