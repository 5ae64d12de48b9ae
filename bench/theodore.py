"""Theodore & Ghosal's closed-loop RRP run (004 sec. 5), assumed modes vs finite elements.

Run: .venv/bin/python bench/theodore.py [--numeric]
1 s gravity-free move: joint 1 0 -> 180 deg, joint 2 0 -> 90 deg, link 3 extended 0.3 -> 1.0 m
(q3 0 -> 0.7 m), sinusoidal rest-to-rest profiles over 0.5 s, model-based decoupling law
(eqs. 31-33) with the LQR loop (eq. 37) switched in at 0.5 s. Prints the wall time beside the
paper's CPU times on an IRIS-4D (1533.34 s AM, 2036.89 s FEM), the FEM/AM ratio, the joint
error and the end-effector position error (distance from the rigid desired pose, q_f = 0)
during the move and at t = 1 s (paper: about 8 mm during the move, below 0.1 mm after), and
the quasi-static end-effector error of the same move (``fm.analysis.quasi_static_along``: the
deflection the move's inertial loads cause without vibration; the response oscillates about
it). With Table 3's data and our geometry (Fig. 3 is illegible) that alone is about 19 mm.

The plant and the controller use the generated C model (``fm.derive(...).compile("c")``,
cached after the first build) unless ``--numeric`` is given (the recursive numeric model,
about 100 times slower per evaluation). Integrator: DOP853. The flexible modes reach 1e4 rad/s
(AM) and 1e5 rad/s (FEM) and, undamped, keep ringing, so every accurate integrator must
resolve them: Radau took 3-4 times longer here (the paper used a PECE Adams code).
"""
import argparse
import time

import numpy as np

import flexman as fm
from flexman.analysis import quasi_static_along
from flexman.control import Decoupling
from flexman.trajectory import rest_to_rest

PAPER_CPU = {"theodore_rrp": 1533.34, "theodore_rrp_fem": 2036.89}  # 004 sec. 5, IRIS-4D
GP, GV = 400.0, 40.0  # joint loop: critically damped at 20 rad/s (the paper gives no gains)


def lqr_weights(robot):
    """State weights on (e, q_f, e', qd_f) and input weight of the LQR loop (chosen here)."""
    n, nf = robot.n_joints, robot.nf
    Q = np.concatenate([np.full(n, 1e5), np.full(nf, 1e6), np.full(n, 1e2), np.full(nf, 1.0)])
    return Q, 1e-3


def move():
    return rest_to_rest([0.0, 0.0, 0.0], [np.pi, np.pi / 2, 0.7], 0.5)


def end_effector_error(robot, traj, t, q):
    """|p(q) - p(q_d, q_f = 0)| of the tip frame of the last link (m)."""
    return np.linalg.norm(fm.analysis.tip_offset(robot, q, traj(t)[0]), axis=-1)


def run(name, compiled=True, t_final=1.0, dt=2e-3, method="DOP853", rtol=1e-7, atol=1e-10, lqr_at=0.5):
    """Simulate the sec. 5 run; returns a dict of the measured numbers and the result."""
    robot = fm.examples.load(name)
    plant = robot
    if compiled:
        plant = fm.derive(robot).compile("c")
    traj = move()
    ctl = Decoupling(plant, traj, GP, GV, lqr_at=lqr_at, lqr_weights=lqr_weights(robot))
    start = time.perf_counter()
    res = fm.simulate(plant, t_final, dt=dt, method=method, rtol=rtol, atol=atol, controller=ctl,
                      progress=False)
    wall = time.perf_counter() - start
    ee = end_effector_error(robot, traj, res.t, res.q)
    joint = np.abs(res.q[:, robot.joint_index] - traj(res.t)[0]).max(axis=0)
    during = res.t <= 0.5
    qs = quasi_static_along(robot, traj, res.t[during])  # the deflection without vibration
    ee_qs = end_effector_error(robot, traj, res.t[during], qs)
    return {"ee_quasi_static": ee_qs.max(), "name": name, "wall": wall, "rhs": res.stats["rhs_evaluations"], "ee_max_move": ee[during].max(),
            "ee_end": ee[-1], "joint_err_max": joint, "ee": ee, "result": res}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numeric", action="store_true", help="use the recursive numeric model")
    args = parser.parse_args()
    out = {}
    print(f"{'model':18s} {'nq':>3s} {'wall [s]':>9s} {'paper CPU [s]':>13s} {'rhs':>6s} "
          f"{'EE max 0-0.5 s [mm]':>19s} {'quasi-static':>12s} {'EE at 1 s [mm]':>14s}  joint error max 0-1 s [rad, rad, m]")
    for name in PAPER_CPU:
        r = out[name] = run(name, compiled=not args.numeric)
        print(f"{name:18s} {r['result'].q.shape[1]:3d} {r['wall']:9.2f} {PAPER_CPU[name]:13.2f} {r['rhs']:6d} "
              f"{1e3 * r['ee_max_move']:19.3f} {1e3 * r['ee_quasi_static']:12.3f} {1e3 * r['ee_end']:14.5f}  {np.array2string(r['joint_err_max'], formatter={'float_kind': lambda v: f'{v:.1e}'})}")
    am, fem = out["theodore_rrp"], out["theodore_rrp_fem"]
    print(f"FEM/AM wall-time ratio: {fem['wall'] / am['wall']:.2f} "
          f"(paper: {PAPER_CPU['theodore_rrp_fem'] / PAPER_CPU['theodore_rrp']:.2f})")


if __name__ == "__main__":
    main()
