"""Rigid-arm dynamics (the Robot methods on rnea and crba) against Pinocchio and against themselves.

Pinocchio is the independent oracle: its model is built here straight from the DH formulas
(not from flexman.dynamics.dh), one RZ/PZ joint per link, the link's bodies attached
through the constant transform that follows the joint.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import random_rigid_robot

from flexman.dynamics import crba, rnea
from flexman.dynamics.structure import numeric_model

pin = pytest.importorskip("pinocchio")

RTOL = 1e-9


# ----- the oracle ------------------------------------------------------------------------------


def _rx(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _rz(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _tr(x=0.0, z=0.0):
    out = np.eye(4)
    out[0, 3], out[2, 3] = x, z
    return out


def _around_joint(link, dh):
    """(pre, post) with A(q) = pre @ [Rz(q) or Tz(q)] @ post, from the DH formulas."""
    if dh == "standard":  # Rz(theta) Tz(d) Tx(a) Rx(alpha)
        return _rz(link.theta), _tr(z=link.d) @ _tr(x=link.a) @ _rx(link.alpha)
    return _rx(link.alpha) @ _tr(x=link.a) @ _rz(link.theta), _tr(z=link.d)  # modified


def _se3(T):
    return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())


def _inertia(body):
    return pin.Inertia(body.mass, body.com.copy(), body.inertia.copy())


def pinocchio_model(robot, jacobian_point=None):
    """Pinocchio model of a rigid flexman robot (same q, same bodies, armature included)."""
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(robot.gravity, float), np.zeros(3))
    parent, post_prev = 0, np.eye(4)
    for i, link in enumerate(robot.links):
        pre, post = _around_joint(link, robot.dh)
        joint = pin.JointModelRZ() if link.joint == "revolute" else pin.JointModelPZ()
        jid = model.addJoint(parent, joint, _se3(post_prev @ pre), f"j{i + 1}")
        model.appendBodyToJoint(jid, _inertia(link.body), _se3(post))
        if link.hub is not None:
            model.appendBodyToJoint(jid, _inertia(link.hub), _se3(post))
        if i == robot.n_joints - 1 and robot.payload is not None:
            model.appendBodyToJoint(jid, _inertia(robot.payload), _se3(post))
        model.armature[i] = link.armature
        parent, post_prev = jid, post
    point = np.zeros(3) if jacobian_point is None else np.asarray(jacobian_point, float)
    model.addFrame(pin.Frame("tool", parent, _se3(post_prev @ _translation(point)), pin.FrameType.OP_FRAME))
    return model


def _translation(p):
    out = np.eye(4)
    out[:3, 3] = p
    return out


def assert_close(ours, ref, rtol=RTOL):
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    scale = max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(ours, ref, rtol=0, atol=rtol * scale)


def _state(rng, n, k=None):
    shape = (n,) if k is None else (k, n)
    return rng.uniform(-np.pi, np.pi, shape), rng.uniform(-2, 2, shape), rng.uniform(-3, 3, shape)


CASES = [(seed, n, dh) for seed, n in enumerate([1, 2, 3, 4, 5, 6, 7, 3, 6, 7, 2, 5])
         for dh in ("standard", "modified")]


# ----- against Pinocchio ---------------------------------------------------------------------------


@pytest.mark.parametrize("extras", [False, True])
@pytest.mark.parametrize("seed,n,dh", CASES)
def test_against_pinocchio(seed, n, dh, extras):
    rng = np.random.default_rng(1000 + seed)
    robot = random_rigid_robot(rng, n, dh=dh, extras=extras)
    if extras:  # Pinocchio has no joint friction; it is checked separately
        for link in robot.links:
            link.viscous = link.coulomb = 0.0
    model = pinocchio_model(robot)
    data = model.createData()
    for _ in range(3):
        q, qd, qdd = _state(rng, n)
        tau = rng.uniform(-5, 5, n)
        assert_close(robot.mass_matrix(q), pin.crba(model, data, q))
        assert_close(robot.inverse_dynamics(q, qd, qdd), pin.rnea(model, data, q, qd, qdd))
        assert_close(robot.bias_forces(q, qd), pin.nonLinearEffects(model, data, q, qd))
        assert_close(robot.bias_forces(q, np.zeros(n)), pin.computeGeneralizedGravity(model, data, q))
        assert_close(robot.forward_dynamics(q, qd, tau), pin.aba(model, data, q, qd, tau))
        if not extras:  # Pinocchio's kinetic energy leaves out armature
            assert_close(robot.kinetic_energy(q, qd), pin.computeKineticEnergy(model, data, q, qd))
        pin.computePotentialEnergy(model, data, q)
        assert_close(robot.potential_energy(q), data.potential_energy)


@pytest.mark.parametrize("seed,n,dh", CASES[::2] + CASES[1::4])
def test_jacobian_against_pinocchio(seed, n, dh):
    rng = np.random.default_rng(2000 + seed)
    robot = random_rigid_robot(rng, n, dh=dh)
    point = rng.uniform(-0.3, 0.3, 3)
    model = pinocchio_model(robot, jacobian_point=point)
    data = model.createData()
    fid = model.getFrameId("tool")
    q = rng.uniform(-np.pi, np.pi, n)
    ref = pin.computeFrameJacobian(model, data, q, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    assert_close(robot.jacobian(q, point=point), np.reshape(ref, (6, n)))
    # and the frame itself
    pin.framesForwardKinematics(model, data, q)
    T = robot.frame(q)
    ref_T = data.oMf[fid].homogeneous @ _translation(-point)
    assert_close(T, ref_T)


# ----- self-consistency -------------------------------------------------------------------------


@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_batched_equals_per_sample(dh):
    rng = np.random.default_rng(7)
    robot = random_rigid_robot(rng, 5, dh=dh, extras=True)
    q, qd, qdd = _state(rng, 5, k=8)
    tau = rng.uniform(-5, 5, (8, 5))
    batched = {
        "M": robot.mass_matrix(q),
        "id": robot.inverse_dynamics(q, qd, qdd),
        "b": robot.bias_forces(q, qd),
        "fd": robot.forward_dynamics(q, qd, tau),
        "T": robot.kinetic_energy(q, qd),
        "V": robot.potential_energy(q),
        "J": robot.jacobian(q, link=2, point=[0.1, 0.2, 0.3]),
    }
    assert batched["M"].shape == (8, 5, 5) and batched["J"].shape == (8, 6, 5)
    for s in range(8):
        single = {
            "M": robot.mass_matrix(q[s]),
            "id": robot.inverse_dynamics(q[s], qd[s], qdd[s]),
            "b": robot.bias_forces(q[s], qd[s]),
            "fd": robot.forward_dynamics(q[s], qd[s], tau[s]),
            "T": robot.kinetic_energy(q[s], qd[s]),
            "V": robot.potential_energy(q[s]),
            "J": robot.jacobian(q[s], link=2, point=[0.1, 0.2, 0.3]),
        }
        for key, val in single.items():
            np.testing.assert_allclose(batched[key][s], val, rtol=1e-13, atol=1e-12, err_msg=key)
    # two batch dimensions and broadcasting of a single qd against many q
    q2 = q.reshape(2, 4, 5)
    assert crba.mass_matrix(robot, q2).shape == (2, 4, 5, 5)
    np.testing.assert_allclose(rnea.inverse_dynamics(robot, q2, qd[0], qdd[0])[1, 2],
                               rnea.inverse_dynamics(robot, q[6], qd[0], qdd[0]), rtol=1e-13)


@pytest.mark.parametrize("seed", range(10))
def test_mass_matrix_spd_and_closure(seed):
    rng = np.random.default_rng(300 + seed)
    n = 1 + seed % 7
    robot = random_rigid_robot(rng, n, dh=("standard", "modified")[seed % 2], extras=True)
    q, qd, _ = _state(rng, n, k=5)
    tau = rng.uniform(-10, 10, (5, n))
    M = crba.mass_matrix(robot, q)
    np.testing.assert_array_equal(M, np.swapaxes(M, -1, -2))
    assert np.all(np.linalg.eigvalsh(M) > 0)
    qdd = robot.forward_dynamics(q, qd, tau)
    assert_close(rnea.inverse_dynamics(robot, q, qd, qdd), tau)
    # M from the composite bodies equals M from Newton-Euler with unit accelerations
    cols = [rnea.inverse_dynamics(robot, q, None, np.eye(n)[j], gravity=False, friction=False) for j in range(n)]
    assert_close(M, np.stack(cols, axis=-1))


def test_friction_and_armature():
    rng = np.random.default_rng(11)
    robot = random_rigid_robot(rng, 4, extras=True)
    q, qd, qdd = _state(rng, 4)
    visc = np.array([l.viscous for l in robot.links])
    coul = np.array([l.coulomb for l in robot.links])
    arm = np.array([l.armature for l in robot.links])
    no_fric = rnea.inverse_dynamics(robot, q, qd, qdd, friction=False)
    assert_close(rnea.inverse_dynamics(robot, q, qd, qdd), no_fric + visc * qd + coul * np.sign(qd))
    friction = robot.bias_forces(q, qd) - rnea.inverse_dynamics(robot, q, qd, None, friction=False)
    assert_close(friction, visc * qd + coul * np.sign(qd))
    M0 = crba.mass_matrix(robot, q, armature=False)
    assert_close(crba.mass_matrix(robot, q), M0 + np.diag(arm))


@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_potential_energy_gradient_is_gravity_force(dh):
    rng = np.random.default_rng(21)
    robot = random_rigid_robot(rng, 6, dh=dh, extras=True)
    q = rng.uniform(-np.pi, np.pi, 6)
    h = 1e-6
    grad = np.array([(robot.potential_energy(q + h * e) - robot.potential_energy(q - h * e)) / (2 * h)
                     for e in np.eye(6)])
    np.testing.assert_allclose(grad, robot.bias_forces(q, np.zeros(6)), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_jacobian_finite_differences(dh):
    rng = np.random.default_rng(31)
    robot = random_rigid_robot(rng, 6, dh=dh)
    q = rng.uniform(-np.pi, np.pi, 6)
    point = np.array([0.2, -0.1, 0.3])
    for link in (1, 3, -1):
        J = robot.jacobian(q, link=link, point=point)
        h = 1e-6
        for j in range(6):
            Tp = robot.frame(q + h * np.eye(6)[j], link)
            Tm = robot.frame(q - h * np.eye(6)[j], link)
            dp = ((Tp[:3, :3] - Tm[:3, :3]) @ point + Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
            dR = (Tp[:3, :3] - Tm[:3, :3]) / (2 * h)
            R = robot.frame(q, link)[:3, :3]
            W = dR @ R.T  # skew matrix of the angular velocity per unit qd_j
            omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
            np.testing.assert_allclose(J[:3, j], dp, atol=1e-8)
            np.testing.assert_allclose(J[3:, j], omega, atol=1e-8)


def test_energy_rate_equals_power():
    """d/dt (T + V) = qd . (tau - friction) along a short trajectory (no forcing closure)."""
    rng = np.random.default_rng(41)
    robot = random_rigid_robot(rng, 4, extras=True)
    q, qd, qdd = _state(rng, 4)
    tau = rnea.inverse_dynamics(robot, q, qd, qdd, friction=False)
    h = 1e-6
    E = lambda t: (robot.kinetic_energy(q + t * qd + 0.5 * t * t * qdd, qd + t * qdd)
                   + robot.potential_energy(q + t * qd + 0.5 * t * t * qdd))
    np.testing.assert_allclose((E(h) - E(-h)) / (2 * h), qd @ tau, rtol=1e-6, atol=1e-7)


# ----- symbolic path -------------------------------------------------------------------------------


@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_symbolic_matches_numeric(dh):
    se = pytest.importorskip("symengine")
    rng = np.random.default_rng(51)
    robot = random_rigid_robot(rng, 3, dh=dh, extras=True)
    q_s = np.array(se.symbols("q1:4"), dtype=object)
    qd_s = np.array(se.symbols("qd1:4"), dtype=object)
    qdd_s = np.array(se.symbols("qdd1:4"), dtype=object)
    tau_s = rnea.inverse_dynamics(robot, q_s, qd_s, qdd_s)
    M_s = crba.mass_matrix(robot, q_s)
    assert tau_s.shape == (3,) and tau_s.dtype == object and M_s.shape == (3, 3)
    q, qd, qdd = _state(rng, 3)
    qd = np.abs(qd) + 0.1  # Coulomb friction: keep away from sign(0)
    subs = dict(zip(list(q_s) + list(qd_s) + list(qdd_s), list(q) + list(qd) + list(qdd)))
    tau_num = np.array([float(se.sympify(e).subs(subs)) for e in tau_s])
    M_num = np.array([[float(se.sympify(e).subs(subs)) for e in row] for row in M_s])
    np.testing.assert_allclose(tau_num, rnea.inverse_dynamics(robot, q, qd, qdd), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(M_num, crba.mass_matrix(robot, q), rtol=1e-10, atol=1e-10)
    J_s = robot.jacobian(q_s, point=[0.1, 0.0, 0.2])
    J_num = np.array([[float(se.sympify(e).subs(subs)) for e in row] for row in J_s])
    np.testing.assert_allclose(J_num, robot.jacobian(q, point=[0.1, 0.0, 0.2]), atol=1e-10)


def test_symbolic_traces_no_zero_terms():
    """Right-angle DH twists leave no 0*x or 6e-17*x terms in the symbolic result."""
    se = pytest.importorskip("symengine")
    from flexman import Link, RigidBody, Robot

    body = RigidBody(mass=1.0, com=[0.1, 0, 0], inertia=[0.01, 0.02, 0.02])
    robot = Robot(links=[Link(a=0.3, alpha=np.pi / 2, body=body), Link(a=0.2, body=body)])
    q = np.array(se.symbols("q1:3"), dtype=object)
    M = crba.mass_matrix(robot, q)
    for e in M.ravel():
        text = str(se.expand(se.sympify(e)))
        assert "e-1" not in text, text


def test_rejects_flexible_robot():
    from flexman import Beam, Link, Robot

    robot = Robot(links=[Link(a=0.5, beam=Beam(length=0.5, mass_per_length=1.0, EI=(10.0, 10.0)))])
    with pytest.raises(ValueError):
        crba.mass_matrix(robot, np.zeros(robot.n_joints))


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_the_4x4_lagrangian(seed):
    """Newton-Euler / composite bodies == Book's 4x4 recursion (lagrange4) on rigid arms."""
    from flexman.dynamics import lagrange4

    rng = np.random.default_rng(600 + seed)
    robot = random_rigid_robot(rng, 1 + seed, dh=("standard", "modified")[seed % 2], extras=True)
    q, qd, qdd = _state(rng, robot.n_joints, k=4)
    qd = np.abs(qd) + 0.1
    point = [0.1, 0.2, 0.3]
    model = numeric_model(robot)
    n = robot.n_joints
    unit = np.broadcast_to(np.eye(n), q.shape[:-1] + (n, n))
    qb = np.broadcast_to(q[..., None, :], unit.shape)
    M_book = np.swapaxes(lagrange4.inverse_dynamics(model, qb, 0 * unit, unit, gravity=False, friction=False), -1, -2)
    assert_close(crba.mass_matrix(robot, q), M_book)
    assert_close(rnea.inverse_dynamics(robot, q, qd, qdd), lagrange4.inverse_dynamics(model, q, qd, qdd))
    T_composite = 0.5 * np.einsum("...i,...ij,...j->...", qd, crba.mass_matrix(robot, q), qd)
    assert_close(T_composite, lagrange4.kinetic_energy(model, q, qd))
    # The potential energy (4x4 recursion) differentiates to Newton-Euler's gravity torques, and the
    # Jacobian to the velocities of finite differences of the frames: independent routes.
    h, eye = 1e-6, np.eye(n)
    dV = np.stack([(robot.potential_energy(q + h * eye[k]) - robot.potential_energy(q - h * eye[k])) / (2 * h)
                   for k in range(n)], axis=-1)
    gravity = rnea.inverse_dynamics(robot, q, 0 * q, 0 * q) - rnea.inverse_dynamics(robot, q, 0 * q, 0 * q, gravity=False)
    np.testing.assert_allclose(dV, gravity, rtol=1e-6, atol=1e-7 * (1 + np.abs(gravity).max()))
    J = robot.jacobian(q, point=point)
    tip = lambda qq: robot.frame(qq, link=n - 1) @ np.append(point, 1.0)  # noqa: E731
    R = lambda qq: robot.frame(qq, link=n - 1)[..., :3, :3]  # noqa: E731
    for k in range(n):
        v = (tip(q + h * eye[k]) - tip(q - h * eye[k]))[..., :3] / (2 * h)
        W = ((R(q + h * eye[k]) - R(q - h * eye[k])) / (2 * h)) @ np.swapaxes(R(q), -1, -2)
        w = np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)
        np.testing.assert_allclose(J[..., :3, k], v, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(J[..., 3:, k], w, rtol=1e-6, atol=1e-7)
