"""Flexible-arm evaluation speed: flx_three_link (7 coordinates) and its 11-coordinate variant.

Run: .venv/bin/python bench/flexible.py
Prints per-call and batched times of forward and inverse dynamics and a 1 s RK4 simulation
at 1 ms, beside the thesis's FLX figure (403 ms per inverse-dynamics call, 000 Table 4.2).
"""
import time

import numpy as np

import flexman as fm
from rigid import best_of  # bench/rigid.py, beside this file

FLX_ID_SECONDS = 0.403  # 000 Table 4.2: FLX, one inverse-dynamics evaluation
SYMFLX_ID_SECONDS = 0.078  # 000 Table 4.2: SYMFLX-generated code, one inverse-dynamics evaluation


def two_modes_per_plane(robot):
    links = []
    for link in robot.links:
        if link.beam is not None and link.beam.nf:
            link.beam.modes = {"y": 2, "z": 2, "torsion": 0}
        links.append(link)
    return fm.Robot(links=links, name=robot.name + "_2modes", gravity=robot.gravity, dh=robot.dh, payload=robot.payload)


def main():
    base = fm.examples.load("flx_three_link")
    rng = np.random.default_rng(0)
    rows = []
    for robot in (base, two_modes_per_plane(fm.examples.load("flx_three_link"))):
        n, nj = robot.nq, robot.n_joints
        q, qd = rng.normal(size=n) * 0.1, rng.normal(size=n) * 0.1
        tau = rng.normal(size=nj)
        qdd = robot.forward_dynamics(q, qd, tau)
        t_fd = best_of(lambda: robot.forward_dynamics(q, qd, tau), number=20)
        t_id = best_of(lambda: robot.inverse_dynamics(q, qd, qdd), number=20)
        Q, QD = rng.normal(size=(10000, n)) * 0.1, rng.normal(size=(10000, n)) * 0.1
        T = rng.normal(size=(10000, nj))
        t_fd_b = best_of(lambda: robot.forward_dynamics(Q, QD, T), repeat=2) / 10000
        t0 = time.perf_counter()
        res = fm.simulate(robot, 1.0, dt=1e-3, method="rk4", progress=False)
        t_sim = time.perf_counter() - t0
        rows.append((robot.name, n, t_fd, t_id, t_fd_b, t_sim, len(res.t)))
    print("numeric (Book's recursion, NumPy):")
    print(f"{'model':24s} {'nq':>3s} {'FD 1 call':>11s} {'ID 1 call':>11s} {'FD batch/state':>15s} {'FD evals/s':>11s} {'1 s RK4':>9s}  ID vs FLX (403 ms)")
    for name, n, t_fd, t_id, t_fd_b, t_sim, _ in rows:
        print(f"{name:24s} {n:3d} {t_fd * 1e6:9.1f}us {t_id * 1e6:9.1f}us {t_fd_b * 1e6:13.2f}us {1 / t_fd_b:11.0f} {t_sim:8.2f}s  {FLX_ID_SECONDS / t_id:8.0f}x faster")
    compiled()


def compiled():
    """The same arms through fm.derive(...).compile('c')."""
    rng = np.random.default_rng(1)
    print("\ncompiled C (fm.derive(robot, 'book').compile('c')):")
    print(f"{'model':24s} {'nq':>3s} {'derive+compile':>15s} {'FD 1 call':>11s} {'ID 1 call':>11s} {'FD batch/state':>15s} {'FD evals/s':>11s} {'1 s RK4':>9s}  ID vs SYMFLX (78 ms)")
    for robot in (fm.examples.load("flx_three_link"), two_modes_per_plane(fm.examples.load("flx_three_link"))):
        n, nj = robot.nq, robot.n_joints
        t0 = time.perf_counter()
        fast = fm.derive(robot, formulation="book").compile("c")
        t_build = time.perf_counter() - t0
        q, qd = rng.normal(size=n) * 0.1, rng.normal(size=n) * 0.1
        tau = rng.normal(size=nj)
        qdd = fast.forward_dynamics(q, qd, tau)
        t_fd = best_of(lambda: fast.forward_dynamics(q, qd, tau), number=2000)
        t_id = best_of(lambda: fast.inverse_dynamics(q, qd, qdd), number=2000)
        Q, QD, T = rng.normal(size=(100000, n)) * 0.1, rng.normal(size=(100000, n)) * 0.1, rng.normal(size=(100000, nj))
        t_b = best_of(lambda: fast.forward_dynamics(Q, QD, T), repeat=3) / 100000
        t0 = time.perf_counter()
        fm.simulate(fast, 1.0, dt=1e-3, method="rk4", progress=False)
        t_sim = time.perf_counter() - t0
        print(f"{robot.name:24s} {n:3d} {t_build:14.2f}s {t_fd * 1e6:9.2f}us {t_id * 1e6:9.2f}us {t_b * 1e6:13.3f}us {1 / t_b:11.0f} {t_sim:8.3f}s  {SYMFLX_ID_SECONDS / t_id:8.0f}x faster")


if __name__ == "__main__":
    main()
