"""Rigid-arm evaluation speed on the Puma 560: flexman (the Robot methods a user calls, on
rnea/crba) beside Pinocchio.

Run: .venv/bin/python bench/rigid.py   (or: make bench)
Times inverse dynamics, the mass matrix and forward dynamics for one state and for a batch
of 10,000 states (flexman: one batched call; Pinocchio: a Python loop of single calls),
checks that both agree on the batch, and prints per-state times and their ratios.
"""
from __future__ import annotations

import time

import numpy as np

from flexman import Link, RigidBody, Robot

BATCH = 10_000


def puma560():
    """The bundled Puma 560 example; else the same table (Armstrong 1986 via Corke 1996)."""
    try:
        import flexman as fm

        return fm.examples.load("puma560")
    except Exception:  # examples not available in this checkout
        pass
    # standard DH: a, alpha, d; mass, com, principal inertias about the com (see
    # examples/data/puma560.yaml for the two physically forced deviations from the table)
    table = [
        (0.0, np.pi / 2, 0.0, 0.0, [0, 0, 0], [0.175, 0.35, 0.175]),
        (0.4318, 0.0, 0.0, 17.4, [-0.3638, 0.006, 0.2275], [0.13, 0.524, 0.539]),
        (0.0203, -np.pi / 2, 0.15005, 4.8, [-0.0203, -0.0141, 0.070], [0.066, 0.066, 0.0125]),
        (0.0, np.pi / 2, 0.4318, 0.82, [0, 0.019, 0], [1.8e-3, 1.3e-3, 1.8e-3]),
        (0.0, -np.pi / 2, 0.0, 0.34, [0, 0, 0], [0.3e-3, 0.4e-3, 0.3e-3]),
        (0.0, 0.0, 0.0, 0.09, [0, 0, 0.032], [0.15e-3, 0.15e-3, 0.04e-3]),
    ]
    links = [Link(a=a, alpha=al, d=d, body=RigidBody(mass=m, com=c, inertia=i)) for a, al, d, m, c, i in table]
    return Robot(links=links, name="puma560")


def pinocchio_model(robot):
    """Pinocchio model of a rigid flexman robot, built from the DH formulas."""
    import pinocchio as pin

    from flexman.dynamics.dh import rot_x as rx, rot_z as rz, trans as tr

    def se3(T):
        return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())

    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(robot.gravity, float), np.zeros(3))
    parent, post_prev = 0, np.eye(4)
    for i, link in enumerate(robot.links):
        if robot.dh == "standard":
            pre, post = rz(link.theta), tr(z=link.d) @ tr(x=link.a) @ rx(link.alpha)
        else:
            pre, post = rx(link.alpha) @ tr(x=link.a) @ rz(link.theta), tr(z=link.d)
        joint = pin.JointModelRZ() if link.joint == "revolute" else pin.JointModelPZ()
        parent = model.addJoint(parent, joint, se3(post_prev @ pre), f"j{i + 1}")
        for body in [link.body] + ([link.hub] if link.hub is not None else []):
            model.appendBodyToJoint(parent, pin.Inertia(body.mass, body.com.copy(), body.inertia.copy()), se3(post))
        if i == robot.n_joints - 1 and robot.payload is not None:
            p = robot.payload
            model.appendBodyToJoint(parent, pin.Inertia(p.mass, p.com.copy(), p.inertia.copy()), se3(post))
        model.armature[i] = link.armature
        post_prev = post
    return model


def best_of(fn, repeat=5, number=1):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def main():
    robot = puma560()
    n = robot.n_joints
    rng = np.random.default_rng(0)
    Q, QD, QDD, TAU = (rng.uniform(-2, 2, (BATCH, n)) for _ in range(4))
    q, qd, qdd, tau = Q[0], QD[0], QDD[0], TAU[0]

    ours = {
        "inverse dynamics": (lambda: robot.inverse_dynamics(q, qd, qdd),
                             lambda: robot.inverse_dynamics(Q, QD, QDD)),
        "mass matrix": (lambda: robot.mass_matrix(q), lambda: robot.mass_matrix(Q)),
        "forward dynamics": (lambda: robot.forward_dynamics(q, qd, tau),
                             lambda: robot.forward_dynamics(Q, QD, TAU)),
    }
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    theirs, errors = {}, {}
    if pin is not None:
        model = pinocchio_model(robot)
        data = model.createData()
        calls = {
            "inverse dynamics": (lambda k: pin.rnea(model, data, Q[k], QD[k], QDD[k])),
            "mass matrix": (lambda k: pin.crba(model, data, Q[k])),
            "forward dynamics": (lambda k: pin.aba(model, data, Q[k], QD[k], TAU[k])),
        }
        for name, call in calls.items():
            theirs[name] = (lambda call=call: call(0), lambda call=call: [call(k) for k in range(BATCH)])
            ref = np.array([np.array(call(k)) for k in range(BATCH)])
            got = ours[name][1]()
            errors[name] = np.abs(got - ref).max() / np.abs(ref).max()

    print(f"{robot.name}: {n} joints, batch of {BATCH} states; times per state, best of 5")
    head = f"{'':18} {'flexman 1':>11} {'pin 1':>9} {'ratio':>7} | {'flexman batch':>14} {'pin loop':>10} {'ratio':>7} | {'max rel diff':>12}"
    print(head)
    print("-" * len(head))
    for name, (one, many) in ours.items():
        t1 = best_of(one, number=20)
        tb = best_of(many, repeat=3) / BATCH
        row = f"{name:18} {t1 * 1e6:9.1f}us "
        if name in theirs:
            p1 = best_of(theirs[name][0], number=200)
            pb = best_of(theirs[name][1], repeat=3) / BATCH
            row += f"{p1 * 1e6:7.2f}us {t1 / p1:7.1f} | {tb * 1e6:12.3f}us {pb * 1e6:8.3f}us {tb / pb:7.2f} | {errors[name]:12.1e}"
        else:
            row += f"{'-':>9} {'-':>7} | {tb * 1e6:12.3f}us {'-':>10} {'-':>7} |"
        print(row)
    print("ratio = flexman time / Pinocchio time (below 1: flexman faster)")


if __name__ == "__main__":
    main()
