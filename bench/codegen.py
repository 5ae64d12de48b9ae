"""Operation counts of the traced equations vs the thesis (000 Table 4.1), and speed of the
compiled C model vs Pinocchio on a Puma-like arm.

Run: python bench/codegen.py   (Pinocchio part skipped when `import pinocchio` fails)

Table 4.1 arm (000 sec. 3.3.5): link 1 of zero length about Z0, links 2 and 3 the "standard"
4 m tube (Table 3.1: 10.955 kg, EI = 2e11 * 1.476e-7 N m^2), rigid or with one bending mode in
each plane (3 + 2 x 2 = 7 coordinates). SYMFLX: rigid 445 mul / 213 add, flexible 2659 / 1313
(unused Z### removed). The thesis ignores the joint-mass transform S; so do we (no hubs).
"""
from __future__ import annotations

import time

import numpy as np

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot

TUBE = dict(length=4.0, mass_per_length=10.955 / 4.0, EI=[2.0e11 * 1.476e-7] * 2)


def thesis_arm(flexible: bool) -> Robot:
    """Rigid: each tube as a rigid body (uniform rod: mass m, centre at -L/2, m L^2/12)."""
    m, L = 10.955, 4.0
    rod = RigidBody(m, [-L / 2, 0, 0], [1e-4, m * L**2 / 12, m * L**2 / 12])
    tip = RigidBody(0.0, [0, 0, 0], [0, 0, 0])
    link = lambda: (Link(a=L, body=tip, beam=Beam(**TUBE, modes={"y": 1, "z": 1, "torsion": 0})) if flexible
                    else Link(a=L, body=rod))
    return Robot(
        name="thesis_3link_" + ("flexible" if flexible else "rigid"),
        links=[Link(a=0.0, alpha=np.pi / 2, body=RigidBody(1.0, [0, 0, 0], [0.25, 0.25, 0.5])), link(), link()],
        gravity=[0, 0, -9.81])


def puma() -> Robot:
    """Puma 560 kinematics (standard DH, Corke); masses/inertias after Armstrong, with the
    zero first-link mass replaced by a plausible 5 kg (see DESIGN.md notes from the field) and
    link 3's Izz raised from 0.0125 to 0.021 kg m^2: the published triple violates the
    triangle inequality (0.066 + 0.0125 < 0.086), which flexman's validation rejects."""
    a = [0, 0.4318, 0.0203, 0, 0, 0]
    d = [0, 0, 0.15005, 0.4318, 0, 0]
    alpha = [np.pi / 2, 0, -np.pi / 2, np.pi / 2, -np.pi / 2, 0]
    m = [5.0, 17.4, 4.8, 0.82, 0.34, 0.09]
    com = [[0, 0, 0], [-0.3638, 0.006, 0.2275], [-0.0203, -0.0141, 0.070], [0, 0.019, 0], [0, 0, 0], [0, 0, 0.032]]
    inertia = [[0.35, 0.35, 0.35], [0.13, 0.524, 0.539], [0.066, 0.086, 0.0210], [1.8e-3, 1.3e-3, 1.8e-3],
               [0.3e-3, 0.4e-3, 0.3e-3], [0.15e-3, 0.15e-3, 0.04e-3]]
    links = [Link(a=a[i], d=d[i], alpha=alpha[i], body=RigidBody(m[i], com[i], inertia[i])) for i in range(6)]
    return Robot(links=links, name="puma560", gravity=[0, 0, -9.81])


def table(rows, head):
    w = [max(len(str(r[k])) for r in rows + [head]) for k in range(len(head))]
    fmt = "  ".join("{:>%d}" % x for x in w)
    print(fmt.format(*head))
    for r in rows:
        print(fmt.format(*r))


def op_counts():
    print("== inverse dynamics operation counts vs 000 Table 4.1 ==")
    rows = []
    for flexible, target in ((False, (445, 213)), (True, (2659, 1313))):
        robot = thesis_arm(flexible)
        forms = ["book", "newton_euler", "lagrange"] if not flexible else ["book"]
        for form in forms:
            t = time.perf_counter()
            eom = fm.derive(robot, formulation=form)
            dt = time.perf_counter() - t
            c = eom.op_count("inverse_dynamics")
            rows.append((robot.name, robot.nq, form, c["mul"], c["add"], c["div"], c["fn"], f"{target[0]}/{target[1]}",
                         "yes" if c["mul"] <= target[0] and c["add"] <= target[1] else "no", f"{dt:.2f}"))
    table(rows, ("arm", "nq", "formulation", "mul", "add", "div", "fn", "SYMFLX", "<=", "derive s"))
    for flexible in (False, True):
        robot = thesis_arm(flexible)
        print(f"\n-- passes, book formulation, {robot.name} --")
        eom = fm.derive(robot, formulation="book")
        for what in ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"):
            steps = eom.passes(what)
            print(f"{what}: " + "; ".join(f"{name} {c['mul']}*/{c['add']}+" for name, c in steps))


def pinocchio_model(robot):
    import pinocchio as pin
    from flexman.dynamics import dh

    model = pin.Model()
    parent, N_prev = 0, np.eye(4)
    for i, link in enumerate(robot.links):
        P, N, _ = dh.split(link, robot.dh)
        place = N_prev @ P
        jid = model.addJoint(parent, pin.JointModelRZ(), pin.SE3(place[:3, :3], place[:3, 3]), f"j{i + 1}")
        R, p = N[:3, :3], N[:3, 3]
        b = link.body
        model.appendBodyToJoint(jid, pin.Inertia(b.mass, R @ b.com + p, R @ b.inertia @ R.T), pin.SE3.Identity())
        parent, N_prev = jid, N
    model.gravity.linear = np.asarray(robot.gravity, float)
    return model


def timing(n_batch=100_000):
    robot = puma()
    eom = fm.derive(robot, formulation="newton_euler")
    print(f"\n== {robot.name}: op counts (newton_euler) ==")
    for what in ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"):
        print(f"{what}: {eom.op_count(what)}")
    fast = eom.compile("c")
    rng = np.random.default_rng(0)
    Q, QD, QDD = rng.uniform(-np.pi, np.pi, (3, n_batch, 6))
    q, qd, qdd = Q[0], QD[0], QDD[0]
    ref = robot.inverse_dynamics(q, qd, qdd)
    assert np.allclose(fast.inverse_dynamics(q, qd, qdd), ref, rtol=1e-10, atol=1e-10)

    def per_call(f, reps=20000):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        return (time.perf_counter() - t) / reps

    print("\n== timing (seconds) ==")
    rows = []
    t1 = per_call(lambda: fast.inverse_dynamics(q, qd, qdd))
    t = time.perf_counter(); fast.inverse_dynamics(Q, QD, QDD); tb = time.perf_counter() - t
    rows.append(("flexman C, ID", f"{t1:.2e}", f"{tb:.3f}", f"{tb / n_batch:.2e}"))
    t1m = per_call(lambda: fast.mass_matrix(q))
    t = time.perf_counter(); fast.mass_matrix(Q); tbm = time.perf_counter() - t
    rows.append(("flexman C, M", f"{t1m:.2e}", f"{tbm:.3f}", f"{tbm / n_batch:.2e}"))
    t = time.perf_counter(); fast.forward_dynamics(Q, QD, QDD); tbf = time.perf_counter() - t
    rows.append(("flexman C, FD", f"{per_call(lambda: fast.forward_dynamics(q, qd, qdd)):.2e}", f"{tbf:.3f}", f"{tbf / n_batch:.2e}"))
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio not importable: skipped")
        table(rows, ("", "single call", f"batch {n_batch}", "per state"))
        return
    model = pinocchio_model(robot)
    data = model.createData()
    tau_pin = pin.rnea(model, data, q, qd, qdd)
    M_pin = pin.crba(model, data, q)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    print("check vs Pinocchio: ID", np.abs(tau_pin - ref).max(), " M", np.abs(M_pin - robot.mass_matrix(q)).max())
    tp = per_call(lambda: pin.rnea(model, data, q, qd, qdd))
    reps = 20000
    t = time.perf_counter()
    for k in range(reps):
        pin.rnea(model, data, Q[k], QD[k], QDD[k])
    tpb = (time.perf_counter() - t) / reps * n_batch
    rows.append(("Pinocchio rnea (Python loop)", f"{tp:.2e}", f"{tpb:.3f} (est.)", f"{tpb / n_batch:.2e}"))
    tpm = per_call(lambda: pin.crba(model, data, q))
    rows.append(("Pinocchio crba (Python loop)", f"{tpm:.2e}", f"{tpm * n_batch:.3f} (est.)", f"{tpm:.2e}"))
    table(rows, ("", "single call", f"batch {n_batch}", "per state"))
    print("single calls include the Python/ctypes (resp. Python/pybind) call overhead; "
          "batch times are dominated by the generated code itself.")


if __name__ == "__main__":
    op_counts()
    timing()
