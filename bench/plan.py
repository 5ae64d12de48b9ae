"""Time of ``fm.plan`` on the showcase move, and how it grows with knots and modes (docs/motion.md).

Run: .venv/bin/python bench/plan.py [--knots 20 40 60 80] [--modes 1 2] [--objective effort]

The showcase arm (``flx_three_link_lqr``: 3 joints, 2 flexible 4 m links with one clamped-free
mode per bending plane, stiffened), (0, 0, 0) -> (0.5, 0.3, -0.4) rad in 2.5 s. Printed per
run: the wall time of the whole call (derivation, CasADi functions, NLP construction, IPOPT),
IPOPT's own time and iterations, and the end-effector's largest distance from the goal after
the move with the joints following the plan exactly (``fm.simulate(prescribed=)``, RK4 at
2 ms: independent of the collocation grid). ``--modes k`` gives each beam k modes per plane.
"""
from __future__ import annotations

import argparse
import copy
import time

import numpy as np

import flexman as fm

START, GOAL, T = [0.0, 0.0, 0.0], [0.5, 0.3, -0.4], 2.5


def arm(modes):
    robot = fm.examples.load("flx_three_link_lqr")
    if modes == 1:
        return robot
    robot = copy.deepcopy(robot)
    for link in robot.links[1:]:
        link.beam = fm.Beam(length=link.beam.length, mass_per_length=link.beam.mass_per_length, EI=link.beam.EI,
                            shapes=link.beam.shapes, modes={"y": modes, "z": modes, "torsion": 0})
    return fm.Robot(links=robot.links, gravity=robot.gravity, dh=robot.dh, name=f"{robot.name}_{modes}modes")


def residual_mm(robot, plan):
    res = fm.simulate(robot, T + 1.5, dt=2e-3, prescribed=plan.trajectory)
    q = np.zeros(robot.nq)
    q[robot.joint_index] = GOAL
    tip = robot.frame(res.q)[:, :3, 3]
    return 1e3 * np.linalg.norm(tip[res.t >= T] - robot.frame(q)[:3, 3], axis=1).max()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--knots", type=int, nargs="+", default=[60])
    ap.add_argument("--modes", type=int, nargs="+", default=[1])
    ap.add_argument("--objective", default="effort")
    args = ap.parse_args()
    print(f"{'modes':>5} {'nq':>4} {'knots':>5} {'wall (s)':>9} {'ipopt (s)':>9} {'iter':>5} {'residual (mm)':>14}")
    for modes in args.modes:
        robot = arm(modes)
        for knots in args.knots:
            start = time.perf_counter()
            plan = fm.plan(robot, START, GOAL, duration=T, objective=args.objective, knots=knots)
            wall = time.perf_counter() - start
            rep = plan.report
            print(f"{modes:>5} {robot.nq:>4} {knots:>5} {wall:>9.2f} {rep['seconds']:>9.2f} {rep['iterations']:>5} "
                  f"{residual_mm(robot, plan):>14.4g}", flush=True)


if __name__ == "__main__":
    main()
