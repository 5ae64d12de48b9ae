"""Kane, Ryan & Banerjee's spin-up (the bundled ``krb_spinup``): flexman with and without geometric
stiffening against Exudyn's geometrically exact beam, in the same run.

Run: .venv/bin/python bench/krb_spinup.py [--t-final 20] [--elements 8 16 32] [--out docs/krb_spinup.png]

The hub angle is prescribed (6 rad/s reached in 15 s); the quantity is the beam's tip deflection
in the rotating frame (perpendicular to the hub's axis direction). Prints each run's peak
deflection and its time, the ratio of each peak to the finest Exudyn mesh's, and the wall time of
each run (flexman: compiled model, RK4 and generalized-alpha at 10 ms; Exudyn: its
generalized-alpha at 2 ms, as in the tests). Writes the plot of the three curves (flexman stiffened, flexman first order until it
leaves the axes, Exudyn's finest mesh). Needs the test extra (``exudyn``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import exudyn_reference as exudyn  # noqa: E402  (tests/exudyn_reference.py)

import flexman as fm  # noqa: E402
from flexman.model.serialize import robot_from_dict, robot_to_dict  # noqa: E402


def krb(stiffening):
    data = robot_to_dict(fm.examples.load("krb_spinup"))
    data["links"][0]["beam"]["stiffening"] = stiffening
    return robot_from_dict(data)


def run_flexman(stiffening, t_final, method="rk4"):
    robot = krb(stiffening)
    traj = fm.trajectory.from_spec(robot.manoeuvre, robot.n_joints)
    fm.simulate(robot, 0.1, dt=1e-2, prescribed=traj, progress=False, backend="compiled")  # compile outside the timing
    t0 = time.perf_counter()
    res = fm.simulate(robot, t_final, dt=1e-2, prescribed=traj, progress=False, backend="compiled", method=method)
    wall = time.perf_counter() - t0
    T = robot.frame(res.q, 0)
    phi = res.q[:, 0]
    return res.t, -np.sin(phi) * T[:, 0, 3] + np.cos(phi) * T[:, 1, 3], wall


def run_exudyn(n_elements, t_final):
    traj = fm.trajectory.spin_up(6.0, 15.0)
    t0 = time.perf_counter()
    t, _, v = exudyn.spin_up(lambda t: traj(t)[0][0], t_final, n_elements=n_elements, dt=2e-3)
    return t, v, time.perf_counter() - t0


def peak(t, v):
    i = np.argmax(np.abs(v))
    return v[i], t[i]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-final", type=float, default=20.0)
    parser.add_argument("--elements", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "krb_spinup.png"))
    args = parser.parse_args()

    curves = {}
    for n in args.elements:
        curves[f"Exudyn, {n} elements"] = run_exudyn(n, args.t_final)
    curves["flexman, stiffened"] = run_flexman(True, args.t_final)
    curves["flexman, gen.-alpha"] = run_flexman(True, args.t_final, "generalized_alpha")
    curves["flexman, first order"] = run_flexman(False, args.t_final)
    ref_name = f"Exudyn, {max(args.elements)} elements"
    ref_peak, _ = peak(*curves[ref_name][:2])
    print(f"{'run':26s} {'peak deflection':>16s} {'at':>8s} {'/ ' + ref_name:>26s} {'wall':>8s} "
          f"{'wall / ' + ref_name:>28s}")
    ref_wall = curves[ref_name][2]
    for name, (t, v, wall) in curves.items():
        value, when = peak(t, v)
        if abs(value) > 10.0:  # past the beam's length: no peak, a divergence
            at = t[np.flatnonzero(np.abs(v) > 10.0)[0]]
            print(f"{name:26s} {'diverges':>16s} {'':8s} {'|v| > L = 10 m from ' + f'{at:.2f} s':>26s} {wall:7.2f}s "
                  f"{wall / ref_wall:28.3f}")
            continue
        print(f"{name:26s} {value:14.5f} m {when:7.3f}s {value / ref_peak:26.5f} {wall:8.4f}s {wall / ref_wall:28.4f}")
    t_ref, v_ref, _ = curves[ref_name]
    when = t_ref[np.argmax(np.abs(v_ref))]
    for name in ("flexman, stiffened", "flexman, gen.-alpha", "flexman, first order"):
        t, v, _ = curves[name]
        value = np.interp(when, t, v)
        print(f"{name} at {when:.3f} s (the reference's peak): {value:.5f} m = {value / ref_peak:.3f} x the reference")

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    t, v, _ = curves[ref_name]
    ax.plot(t, v, color="0.6", lw=5, label=f"{ref_name} (geometrically exact)")
    t, v, _ = curves["flexman, stiffened"]
    ax.plot(t, v, color="C0", lw=1.5, label="flexman, geometric stiffening")
    t, v, _ = curves["flexman, first order"]
    shown = np.arange(len(t)) <= (np.flatnonzero(np.abs(v) > 2.0)[0] if np.any(np.abs(v) > 2.0) else len(t))
    ax.plot(t[shown], v[shown], color="C3", lw=1.5, ls="--", label="flexman, first order (diverges)")
    ax.axvline(15.0, color="0.8", lw=0.8)
    ax.set_ylim(-2.0, 0.5)
    ax.set_xlim(0.0, args.t_final)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("tip deflection in the rotating frame (m)")
    ax.set_title("Spin-up of a 10 m beam to 6 rad/s in 15 s (Kane, Ryan & Banerjee 1987)", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {os.path.normpath(args.out)}")


if __name__ == "__main__":
    main()
