"""Partial derivatives of the dynamics per call: flexman's compiled model beside Pinocchio's
analytic derivatives (``computeABADerivatives``, ``computeRNEADerivatives``), same process,
same states, on the UR5 (6 joints) and the xArm7 (7 joints) of example-robot-data.

Run: .venv/bin/python bench/derivatives.py
Prints microseconds per call for one state (flexman through its CPython extension), per state
of a batch of 1,000 (flexman: one call; Pinocchio: a Python loop), the ratios, and the largest
difference between the two (they must agree to round-off: the URDFs' joint friction is removed,
Pinocchio's recursions leave it out).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from urdf_load import robots_dir  # (bench/urdf_load.py: where example-robot-data keeps its robots)

ARMS = ("ur_description/urdf/ur5_robot.urdf", "xarm_description/urdf/xarm7.urdf")
BATCH = 1000


def per_call(fn, seconds=0.3):
    """Median of five runs of as many calls as fit in ``seconds``, in microseconds per call."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds / 5:
        fn()
        n += 1
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n)
    return 1e6 * float(np.median(runs))


def main():
    import pinocchio as pin

    import flexman as fm

    folder = robots_dir()
    rng = np.random.default_rng(0)
    print(f"{'arm':<8} {'what':<22} {'flexman us':>11} {'pinocchio us':>13} {'ratio':>6} {'max diff':>9}")
    for rel in ARMS:
        model = pin.buildModelFromUrdf(str(folder / rel))
        data = model.createData()
        robot = fm.load(folder / rel)
        for link in robot.links:
            link.viscous = link.coulomb = 0.0
        fast = robot.compiled(derivatives=True)
        n = robot.nq
        q, qd, qdd = (rng.uniform(-1, 1, n) for _ in range(3))
        tau = rng.uniform(-5, 5, n)
        Q, QD, T = (rng.uniform(-1, 1, (BATCH, n)) for _ in range(3))
        name = Path(rel).stem

        def pin_aba():
            pin.computeABADerivatives(model, data, q, qd, tau)

        def pin_rnea():
            pin.computeRNEADerivatives(model, data, q, qd, qdd)

        def pin_aba_batch():
            for i in range(BATCH):
                pin.computeABADerivatives(model, data, Q[i], QD[i], T[i])

        mine = fast.forward_dynamics_derivatives(q, qd, tau)
        pin_aba()
        diff = max(np.abs(mine.dq - data.ddq_dq).max(), np.abs(mine.dqd - data.ddq_dv).max())
        rows = [("forward (ABA) partials", per_call(lambda: fast.forward_dynamics_derivatives(q, qd, tau)), per_call(pin_aba)),
                ("inverse (RNEA) partials", per_call(lambda: fast.inverse_dynamics_derivatives(q, qd, qdd)), per_call(pin_rnea)),
                (f"forward, batch {BATCH}", per_call(lambda: fast.forward_dynamics_derivatives(Q, QD, T), 1.0) / BATCH,
                 per_call(pin_aba_batch, 1.0) / BATCH)]
        for what, mine_us, theirs in rows:
            print(f"{name:<8} {what:<22} {mine_us:11.2f} {theirs:13.2f} {mine_us / theirs:6.2f} {diff:9.1e}")


if __name__ == "__main__":
    main()
