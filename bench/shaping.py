"""Input shaping on the showcase arm (``flx_three_link_lqr``) and the robustness curve of docs/motion.md.

Run: .venv/bin/python bench/shaping.py [--kinds ZV ZVD EI] [--profiles sinusoidal quintic]
                                       [--plot docs/shaping-robustness.png]

The showcase move, (0, 0, 0) -> (0.5, 0.3, -0.4) rad in 2.5 s, is prescribed to the joints
(``fm.simulate(..., prescribed=...)``: they follow it exactly) as given and shaped over the arm's
locked-joint modes, designed over the configurations the move passes through. Printed per run:
the shaper's delay, the end-effector's largest distance from the rigid arm's (the same joint
angles, flexible coordinates zero) during the move and after the (shaped) move ends, over
3 s (RK4 at 2 ms, compiled model). Also the ZV shaper designed at the start pose only.
With ``--controller``: the same commands as the reference of the model file's decoupling law
with its LQR loop switched on when the (shaped) command ends; the end-effector's largest
distance from the commanded rigid arm from the end of the move, 0.2 s and 1 s after it.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import flexman as fm
from flexman import trajectory as tr

WINDOW = 3.0  # s observed after the move


def end_effector_error(robot, traj):
    """(largest EE distance from the rigid arm's during the move, the same after it) in mm."""
    res = fm.simulate(robot, traj.t_end + WINDOW, dt=2e-3, prescribed=traj, progress=False)
    rigid = res.q.copy()
    rigid[:, robot.flex_index] = 0.0
    err = np.linalg.norm(robot.frame(res.q, -1)[..., :3, 3] - robot.frame(rigid, -1)[..., :3, 3], axis=-1)
    after = res.t >= traj.t_end
    return 1e3 * err[~after].max(), 1e3 * err[after].max()


def controlled_error(robot, traj):
    """Under the model file's decoupling + LQR law (LQR from the end of ``traj``): the largest EE
    distance from the commanded rigid arm from the end of the move, 0.2 s and 1 s after it (mm)."""
    spec = robot.controller
    law = fm.control.Decoupling(robot, traj, spec["gp"], spec["gv"], lqr_at=traj.t_end,
                                lqr_weights=spec["lqr_weights"])
    res = fm.simulate(robot, traj.t_end + 2.0, dt=2e-3, controller=law, progress=False)
    rigid = np.zeros_like(res.q)
    rigid[:, robot.joint_index] = traj(res.t)[0]
    err = np.linalg.norm(robot.frame(res.q, -1)[..., :3, 3] - robot.frame(rigid, -1)[..., :3, 3], axis=-1)
    return [1e3 * err[res.t >= traj.t_end + s].max() for s in (0.0, 0.2, 1.0)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", nargs="+", default=["ZV", "ZVD", "EI"])
    ap.add_argument("--profiles", nargs="+", default=["sinusoidal", "quintic"])
    ap.add_argument("--controller", action="store_true", help="also under the decoupling + LQR law")
    ap.add_argument("--plot", default=None, help="write the robustness curves (ZV, ZVD, EI) to this PNG")
    args = ap.parse_args()
    if args.plot:
        fm.viz.plot_robustness(fm.control.robustness(damping=0.0, tolerance=0.05), args.plot, tolerance=0.05,
                               title="Residual vibration against frequency error (undamped mode)")
        print(f"wrote {args.plot}")
    robot = fm.examples.load("flx_three_link_lqr")
    print(f"{'profile':11s} {'shaper':22s} {'delay s':>8s} {'during mm':>10s} {'after mm':>9s} {'wall s':>7s}")
    for profile in args.profiles:
        move = tr.rest_to_rest([0.0, 0.0, 0.0], [0.5, 0.3, -0.4], 2.5, profile)
        runs = [("none", None)]
        runs += [(f"{k} over the move", fm.control.shaper(robot, move, k)) for k in args.kinds]
        runs.append(("ZV at the start pose", fm.control.shaper(robot, [0.0, 0.0, 0.0], "ZV")))
        for label, sh in runs:
            t0 = time.perf_counter()
            during, after = end_effector_error(robot, move if sh is None else sh(move))
            delay = 0.0 if sh is None else sh.duration
            print(f"{profile:11s} {label:22s} {delay:8.3f} {during:10.1f} {after:9.2f} {time.perf_counter() - t0:7.1f}",
                  flush=True)
        if args.controller:
            for label, sh in runs[:-1]:
                traj = move if sh is None else sh(move)
                at_end, later, settled = controlled_error(robot, traj)
                print(f"{profile:11s} {label:22s} under control: after {at_end:.2f} mm, from 0.2 s {later:.2f} mm, "
                      f"from 1 s {settled:.2f} mm", flush=True)
        sh = fm.control.shaper(robot, move, "ZV")
        print(f"  locked-joint modes over the move [Hz]: "
              + ", ".join(f"{lo / 2 / np.pi:.4f}-{hi / 2 / np.pi:.4f}" for lo, hi in sh.ranges))


if __name__ == "__main__":
    main()
