"""The robot's own methods in a loop of the user's: ``robot.inverse_dynamics(q, qd, qdd)``,
``robot.mass_matrix(q)`` and ``robot.forward_dynamics(q, qd, tau)`` on one state, beside
Pinocchio's ``rnea``, ``crba`` and ``aba`` through its Python bindings, same process, same state,
on the UR5 (6 joints) and the xArm7 (7 joints) of example-robot-data. The robot's compiled model
is built first (``robot.compiled()``), so its methods run it; the recursions alone
(``robot.backend = "numeric"``) are printed beside them.

Run: .venv/bin/python bench/robot_api.py
"""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from derivatives import ARMS, per_call
from urdf_load import robots_dir


def main():
    import pinocchio as pin

    import flexman as fm

    folder = robots_dir()
    rng = np.random.default_rng(0)
    print(f"{'arm':<8} {'method':<18} {'flexman us':>11} {'pinocchio us':>13} {'ratio':>6} {'numeric us':>11} "
          f"{'max diff':>9}")
    for rel in ARMS:
        model = pin.buildModelFromUrdf(str(folder / rel))
        data = model.createData()
        robot = fm.load(folder / rel)
        for link in robot.links:  # Pinocchio's recursions leave out the URDF's joint friction
            link.viscous = link.coulomb = 0.0
        robot.compiled()
        numeric = copy.deepcopy(robot)
        numeric.backend = "numeric"
        n = robot.nq
        q, qd, qdd = (rng.uniform(-1, 1, n) for _ in range(3))
        tau = rng.uniform(-5, 5, n)

        def crba():
            M = pin.crba(model, data, q)
            return np.triu(M) + np.triu(M, 1).T

        rows = [("inverse_dynamics", lambda r: r.inverse_dynamics(q, qd, qdd), lambda: pin.rnea(model, data, q, qd, qdd),
                 lambda: pin.rnea(model, data, q, qd, qdd)),
                ("mass_matrix", lambda r: r.mass_matrix(q), lambda: pin.crba(model, data, q), crba),
                ("forward_dynamics", lambda r: r.forward_dynamics(q, qd, tau), lambda: pin.aba(model, data, q, qd, tau),
                 lambda: pin.aba(model, data, q, qd, tau))]
        for what, ours, theirs, value in rows:
            fast, peer = per_call(lambda: ours(robot)), per_call(theirs)
            slow = per_call(lambda: ours(numeric), seconds=0.5)
            diff = np.max(np.abs(ours(robot) - value()))
            print(f"{Path(rel).stem:<8} {what:<18} {fast:>11.2f} {peer:>13.2f} {fast / peer:>6.2f} {slow:>11.1f} "
                  f"{diff:>9.1e}")


if __name__ == "__main__":
    main()
