"""Real URDFs: time from the file to the first forward dynamics, interpreted (no compiled model),
beside Pinocchio's (buildModelFromUrdf + aba) measured in the same run.

Run: .venv/bin/python bench/urdf_load.py
Reads arms and hands of the example-robot-data package (test extra). Per robot: fm.load(path) and
one robot.forward_dynamics(q, qd, tau) on fresh objects (the robot's numeric model is built in
that first call), best of 3; module imports are done once beforehand and not counted. A URDF
flexman refuses is listed with its one-line reason. ``joints``: the coordinates; ``mimic``: joints
following another (URDF <mimic>, not coordinates: the Panda's second finger).
"""
from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

import flexman as fm

ROBOTS = ["xarm_description/urdf/xarm7.urdf", "z1_description/urdf/z1.urdf",
          "ur_description/urdf/ur5_gripper.urdf", "kinova_description/robots/kinova.urdf",
          "allegro_hand_description/urdf/allegro_right_hand.urdf", "panda_description/urdf/panda.urdf",
          "pr2_description/urdf/pr2.urdf"]


def robots_dir():
    for entry in sys.path:
        folder = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if folder.is_dir():
            return folder
    raise SystemExit("example-robot-data is not installed (pip install example-robot-data)")


def first_forward(path):
    robot = fm.load(path)
    rng = np.random.default_rng(0)
    q, qd, tau = rng.uniform(-1, 1, robot.nq), rng.uniform(-1, 1, robot.nq), rng.uniform(-1, 1, robot.n_joints)
    return robot, robot.forward_dynamics(q, qd, tau)


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    import pinocchio as pin

    root = robots_dir()
    warnings.simplefilter("ignore")  # meshes ignored, implausible inertials kept: noticed once each
    first_forward(root / ROBOTS[0])  # imports and first-use setup, not counted
    print(f"{'robot':<58} {'joints':>6} {'mimic':>5} {'flexman':>10} {'pinocchio':>10} {'ratio':>7}")
    for rel in ROBOTS:
        path = root / rel
        try:
            robot, _ = first_forward(path)
        except fm.ModelError as exc:
            print(f"{rel:<58} refused: {str(exc).split(': ', 1)[-1][:90]}")
            continue
        ours = best(lambda: first_forward(path))

        def theirs():
            model = pin.buildModelFromUrdf(str(path))
            data = model.createData()
            pin.aba(model, data, pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv))

        ref = best(theirs)
        print(f"{rel:<58} {robot.n_joints:>6} {len(getattr(robot, 'mimic', {})):>5} {ours * 1e3:>8.1f}ms {ref * 1e3:>8.2f}ms {ours / ref:>7.0f}")
    print("flexman: fm.load + first robot.forward_dynamics, interpreted; target for a 7-joint arm: < 1 s")


if __name__ == "__main__":
    main()
