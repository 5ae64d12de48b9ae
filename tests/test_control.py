"""Tests of fm.trajectory and fm.control.

Sources: 004 (Theodore & Ghosal) sec. 3 eqs. 29-37 (decoupling control + LQR) and sec. 5
(smooth sinusoidal rest-to-rest profile); 000 (Mackay) sec. 3.1 (clamped cubic-spline
commands, independent PID joint controllers) and sec. 3.3.5 (controllers switched off
mid-move, after which the free arm conserves energy).
"""
import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.control import PID, ComputedTorque, Decoupling, lqr_gain
from flexman.trajectory import rest_to_rest, spline


def rod(length=1.0, mass=1.0):
    i = mass * length**2 / 12.0
    return Link(joint="revolute", a=length,
                body=RigidBody(mass=mass, com=[-length / 2, 0, 0], inertia=[0, i, i]))


def planar_arm():
    """Rigid 2-link arm in a vertical plane (gravity along base -y)."""
    return Robot(links=[rod(), rod()], gravity=[0, -9.81, 0])


def flexible_arm(modes=1):
    """One flexible link with a tip mass, gravity-free (the setting of 004 sec. 4-5)."""
    beam = Beam(length=1.0, mass_per_length=1.0, EI=[100.0, 100.0], modes={"y": modes, "z": 0})
    return Robot(links=[Link(joint="revolute", a=1.0, body=RigidBody(mass=0.1), beam=beam)],
                 gravity=[0, 0, 0])


def central_difference(traj, t, h=1e-5):
    (qp, qdp, _), (qm, qdm, _) = traj(t + h), traj(t - h)
    return (qp - qm) / (2 * h), (qdp - qdm) / (2 * h)


# ----- trajectories ---------------------------------------------------------------
@pytest.mark.parametrize("profile", ["sinusoidal", "quintic", "cubic"])
def test_rest_to_rest_ends_and_derivatives(profile):
    q0, qf, T = np.array([0.0, 0.3]), np.array([np.pi, 1.0]), 0.5
    traj = rest_to_rest(q0, qf, T, profile=profile)
    q, qd, qdd = traj(np.array([0.0, T]))
    np.testing.assert_allclose(q, [q0, qf], atol=1e-14)
    np.testing.assert_allclose(qd, 0.0, atol=1e-12)
    if profile != "cubic":
        np.testing.assert_allclose(qdd, 0.0, atol=1e-10)
    # holds the end points outside [0, T]
    q, qd, qdd = traj(np.array([-1.0, T + 1.0]))
    np.testing.assert_allclose(q, [q0, qf])
    assert not np.any(qd) and not np.any(qdd)
    # batched shapes and derivatives against finite differences
    t = np.linspace(0.01, T - 0.01, 7)
    q, qd, qdd = traj(t)
    assert q.shape == qd.shape == qdd.shape == (7, 2)
    assert traj(0.2)[0].shape == (2,)
    fd_q, fd_qd = central_difference(traj, t)
    np.testing.assert_allclose(qd, fd_q, atol=1e-7)
    np.testing.assert_allclose(qdd, fd_qd, atol=1e-5)


def test_sinusoidal_profile_formula():
    """004 sec. 5: q0 + (qf - q0) (t/T - sin(2 pi t/T) / (2 pi))."""
    traj = rest_to_rest([1.0], [3.0], 2.0)
    t = np.linspace(0, 2, 11)
    expected = 1.0 + 2.0 * (t / 2 - np.sin(np.pi * t) / (2 * np.pi))
    np.testing.assert_allclose(traj(t)[0][:, 0], expected, atol=1e-14)
    np.testing.assert_allclose(traj(1.0)[1], [2.0])  # peak velocity 2 (qf - q0) / T


def test_spline_through_via_points():
    times = [0.0, 0.4, 1.0, 1.5]
    points = [[0.0, 1.0], [0.5, 0.8], [0.2, -0.3], [1.0, 0.0]]
    traj = spline(times, points)
    q, qd, _ = traj(np.array(times))
    np.testing.assert_allclose(q, points, atol=1e-14)
    np.testing.assert_allclose(qd[[0, -1]], 0.0, atol=1e-13)  # clamped: rest at both ends
    t = np.array([0.05, 0.2, 0.33, 0.61, 0.9, 1.12, 1.45])  # away from the knots
    fd_q, fd_qd = central_difference(traj, t)
    np.testing.assert_allclose(traj(t)[1], fd_q, atol=1e-7)
    np.testing.assert_allclose(traj(t)[2], fd_qd, atol=1e-5)
    # second derivative continuous across the interior knots (a cubic spline)
    for tk in times[1:-1]:
        np.testing.assert_allclose(traj(tk - 1e-9)[2], traj(tk + 1e-9)[2], atol=1e-6)
    np.testing.assert_allclose(traj(5.0)[0], points[-1])
    with pytest.raises(ValueError):
        spline([0.0, 0.0], [0.0, 1.0])


# ----- PID -------------------------------------------------------------------------
def test_pid_reaches_target():
    """Independent PID joints (000 sec. 3.1); the integral removes the gravity offset."""
    arm = planar_arm()
    target = np.array([1.0, -0.5])
    pid = PID(arm, rest_to_rest([0, 0], target, 1.0), kp=400, ki=1000, kd=60)
    assert pid.n_states == 2
    res = fm.simulate(arm, 4.0, dt=1e-2, method="DOP853", rtol=1e-8, atol=1e-10, controller=pid)
    assert np.max(np.abs(res.q[-1] - target)) < 1e-3
    assert np.max(np.abs(res.qd[-1])) < 1e-3
    # the integral state balances gravity at rest: ki z = gravity torque
    gravity = arm.bias_forces(res.q[-1], np.zeros(2))
    np.testing.assert_allclose(res.tau[-1], gravity, rtol=1e-2, atol=1e-2)


def test_pid_state_integrated_same_by_rk4_and_adaptive():
    arm = planar_arm()
    pid = PID(arm, rest_to_rest([0, 0], [0.5, 0.5], 0.5), kp=100, ki=50, kd=20)
    a = fm.simulate(arm, 0.6, dt=1e-3, controller=pid)
    b = fm.simulate(arm, 0.6, dt=1e-2, method="DOP853", rtol=1e-10, atol=1e-12, controller=pid)
    np.testing.assert_allclose(a.q[::10], b.q, atol=1e-8)
    np.testing.assert_allclose(a.controller_state[::10], b.controller_state, atol=1e-8)


def test_pid_off_at_then_energy_conserved():
    """000 sec. 3.3.5: controllers switched off mid-move; the free arm then conserves energy."""
    arm = planar_arm()
    pid = PID(arm, rest_to_rest([0, 0], [1.0, 1.0], 1.0), kp=100, ki=10, kd=20, off_at=0.5)
    res = fm.simulate(arm, 1.5, dt=1e-3, controller=pid)
    after = res.t > 0.5
    assert not np.any(res.tau[after]) and np.any(res.tau[~after])
    e = res.energy[after]
    # RK4 at 1 ms on a fast free fall (up to 12 rad/s): measured 1.4e-8 of the kinetic scale
    assert np.ptp(e) / np.max(arm.kinetic_energy(res.q, res.qd)) < 1e-7


# ----- computed torque and decoupling ----------------------------------------------
def test_computed_torque_tracks_exactly():
    """With an exact model, computed torque makes the joint error obey e'' + kd e' + kp e = 0:
    starting on the trajectory, the error stays at integration accuracy."""
    arm = planar_arm()
    traj = rest_to_rest([0, 0], [1.2, -0.8], 1.0)
    ct = ComputedTorque(arm, traj, kp=100, kd=20)
    res = fm.simulate(arm, 1.5, dt=1e-2, method="DOP853", rtol=1e-11, atol=1e-12, controller=ct)
    q_d, qd_d, _ = traj(res.t)
    assert np.max(np.abs(res.q - q_d)) < 1e-6
    assert np.max(np.abs(res.qd - qd_d)) < 1e-6
    # the torque is the inverse dynamics of the reference
    np.testing.assert_allclose(res.tau, arm.inverse_dynamics(*traj(res.t)), atol=1e-5)


def test_decoupling_equals_computed_torque_on_rigid_arm():
    arm = planar_arm()
    traj = rest_to_rest([0, 0], [1.2, -0.8], 1.0)
    ct = ComputedTorque(arm, traj, kp=[100, 80], kd=[20, 18])
    dec = Decoupling(arm, traj, gp=[100, 80], gv=[20, 18])
    rng = np.random.default_rng(0)
    for t in (0.0, 0.3, 0.9, 2.0):
        q, qd = rng.normal(size=2), rng.normal(size=2)
        np.testing.assert_allclose(dec(t, q, qd), ct(t, q, qd), rtol=1e-12, atol=1e-12)
    a = fm.simulate(arm, 0.5, dt=1e-3, q0=[0.1, 0], controller=ct)
    b = fm.simulate(arm, 0.5, dt=1e-3, q0=[0.1, 0], controller=dec)
    np.testing.assert_allclose(a.q, b.q, atol=1e-12)


def test_decoupling_makes_joints_double_integrators():
    """004 eq. (35): under the law (31) the joint accelerations equal u, whatever q_f."""
    robot = flexible_arm(modes=2)
    dec = Decoupling(robot, rest_to_rest([0.0], [1.0], 0.5), gp=400, gv=40)
    rng = np.random.default_rng(1)
    for t in (0.1, 0.25, 0.4):
        q, qd = 0.1 * rng.normal(size=3), rng.normal(size=3)
        qdd = robot.forward_dynamics(q, qd, dec(t, q, qd))
        np.testing.assert_allclose(qdd[:1], dec.command(t, q, qd), rtol=1e-9, atol=1e-9)


def test_lqr_linearization_matches_closed_loop():
    """(A, B) of 004 eqs. (35)-(36) at the final configuration equal finite differences of
    the nonlinear closed loop driven by the decoupling law."""
    robot = flexible_arm(modes=2)
    dec = Decoupling(robot, rest_to_rest([0.0], [1.0], 0.5), gp=400, gv=40, lqr_at=0.5)
    q_star = np.array([1.0, 0.0, 0.0])

    def f(x, u):
        q, qd = x[:3], x[3:]
        M_eq, b_eq = dec.decoupled_terms(q, qd)
        return np.concatenate([qd, robot.forward_dynamics(q, qd, M_eq @ u + b_eq)])

    x0, u0, h = np.concatenate([q_star, np.zeros(3)]), np.zeros(1), 1e-6
    A = np.column_stack([(f(x0 + h * e, u0) - f(x0 - h * e, u0)) / (2 * h) for e in np.eye(6)])
    B = (f(x0, u0 + h) - f(x0, u0 - h))[:, None] / (2 * h)
    np.testing.assert_allclose(dec.A, A, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dec.B, B, rtol=1e-6, atol=1e-6)
    assert np.all(np.linalg.eigvals(dec.A - dec.B @ dec.G_lqr).real < 0)


def test_lqr_damps_vibration_after_move():
    """004 sec. 3/5: the decoupling law leaves the flexible mode oscillating after the move;
    switching to the LQR loop at the end of the move damps it."""
    robot = flexible_arm(modes=1)
    traj = rest_to_rest([0.0], [1.0], 0.5)
    weights = (np.diag([1e4, 1e6, 1.0, 1e2]), 1.0)
    runs = {}
    for lqr_at in (None, 0.5):
        dec = Decoupling(robot, traj, gp=400, gv=40, lqr_at=lqr_at, lqr_weights=weights)
        runs[lqr_at] = fm.simulate(robot, 1.5, dt=1e-2, method="DOP853", rtol=1e-8, atol=1e-10,
                                   controller=dec)
    late = runs[None].t > 1.0
    free, damped = (np.max(np.abs(runs[k].q[late, 1])) for k in (None, 0.5))
    assert free > 1e-3
    assert damped < 0.05 * free
    assert abs(runs[0.5].q[-1, 0] - 1.0) < 1e-2


def test_lqr_gain_double_integrator():
    """Known LQR solution for x'' = u with Q = I, R = 1: G = [1, sqrt(3)]."""
    A = np.array([[0.0, 1.0], [0.0, 0.0]])
    B = np.array([[0.0], [1.0]])
    np.testing.assert_allclose(lqr_gain(A, B), [[1.0, np.sqrt(3.0)]], atol=1e-10)


def test_controller_input_checks():
    arm = planar_arm()
    with pytest.raises(ValueError, match="traj"):
        PID(arm, rest_to_rest([0.0], [1.0], 1.0), 1, 1, 1)
    with pytest.raises(ValueError, match="kp"):
        ComputedTorque(arm, rest_to_rest([0, 0], [1, 1], 1.0), kp=[1, 2, 3], kd=1)
