"""Prescribed joint motion: fm.simulate(robot, t, prescribed=traj), the spin-up trajectory,
the model file's manoeuvre and `flexman simulate --prescribed`.

Invariants checked (no copied outputs): the joints follow the prescription exactly; the
recorded torques fed through forward dynamics give back the prescribed joint accelerations
(closure); the work of those torques equals the change of total energy of an undamped arm;
for a rigid arm the torques are the inverse dynamics of the motion.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import flexman as fm
from flexman import cli
from flexman.model import ModelError


@pytest.fixture(scope="module")
def three_link():
    return fm.examples.load("flx_three_link")


@pytest.fixture(scope="module")
def pendulum():
    return fm.examples.load("flx_flexible_pendulum")


def test_joints_follow_and_closure(three_link):
    """3 joints, 4 modes: q_r(t) is the prescription at every sample, and the recorded torques
    through forward dynamics reproduce the prescribed joint accelerations."""
    robot = three_link
    traj = fm.trajectory.rest_to_rest([0.0, 0.0, 0.0], [0.8, -0.5, 0.6], 0.6)
    res = fm.simulate(robot, 0.8, dt=2e-3, prescribed=traj)
    nj = robot.n_joints
    q_r, qd_r, qdd_r = traj(res.t)
    assert np.array_equal(res.q[:, :nj], q_r) and np.array_equal(res.qd[:, :nj], qd_r)
    assert np.max(np.abs(res.q[:, nj:])) > 1e-5  # the links did deflect
    qdd = robot.forward_dynamics(res.q, res.qd, res.tau)
    scale = np.max(np.abs(qdd_r))
    assert np.max(np.abs(qdd[:, :nj] - qdd_r)) < 1e-9 * scale
    # ... and the flexible accelerations are those the integrator followed: d(qd_f)/dt
    qd_f = res.qd[:, nj:]
    central = (qd_f[2:] - qd_f[:-2]) / (res.t[2:] - res.t[:-2])[:, None]
    assert np.max(np.abs(central - qdd[1:-1, nj:])) < 2e-3 * np.max(np.abs(qdd[:, nj:]))


def test_energy_balance(pendulum):
    """Undamped flexible pendulum under gravity swung through 1 rad: E(t) - E(0) = W(t), the
    work of the joint torque the motion needs, to the integrator's tolerance."""
    traj = fm.trajectory.rest_to_rest(0.0, 1.0, 1.0)
    res = fm.simulate(pendulum, 1.5, dt=1e-2, method="DOP853", rtol=1e-11, atol=1e-13, prescribed=traj)
    change = res.energy - res.energy[0]
    scale = np.max(np.abs(res.work))
    assert scale > 10.0  # J: the motion does real work against gravity
    assert np.max(np.abs(change - res.work)) < 1e-9 * scale
    # the sampled power tau . qd_r integrates to the same work (trapezoid, loose)
    power = np.sum(res.tau * res.qd[:, :1], axis=1)
    trapezoid = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(res.t))])
    assert np.max(np.abs(trapezoid - res.work)) < 2e-3 * scale


def test_rigid_arm_torques_are_inverse_dynamics():
    """No flexible coordinate: the torques are exactly the inverse dynamics of the motion."""
    robot = fm.examples.load("puma560")
    traj = fm.trajectory.spline([0.0, 0.5, 1.0], np.linspace(0.0, 0.6, 18).reshape(3, 6))
    res = fm.simulate(robot, 1.0, dt=0.05, prescribed=traj)
    q, qd, qdd = traj(res.t)
    assert np.allclose(res.tau, robot.inverse_dynamics(q, qd, qdd), rtol=1e-12, atol=1e-10)


def test_rk4_and_adaptive_agree(pendulum):
    traj = fm.trajectory.rest_to_rest(0.0, 1.0, 0.5)
    a = fm.simulate(pendulum, 0.6, dt=1e-3, prescribed=traj)
    b = fm.simulate(pendulum, 0.6, dt=1e-3, method="DOP853", rtol=1e-10, atol=1e-12, prescribed=traj)
    assert np.max(np.abs(a.q - b.q)) < 1e-7 * np.max(np.abs(b.q[:, 1:]))  # RK4 at 1 ms: (h omega)^4 ~ 3e-7
    assert np.max(np.abs(a.tau - b.tau)) < 1e-7 * np.max(np.abs(b.tau))


def test_initial_flexible_state(pendulum):
    """q0/qd0 set the flexible coordinates; joint entries must match the prescription."""
    traj = fm.trajectory.rest_to_rest(0.2, 0.2, 1.0)  # held still at 0.2 rad
    res = fm.simulate(pendulum, 0.3, dt=1e-3, prescribed=traj, q0=[0.2, 0.01, 0.0])
    assert res.q[0, 1] == 0.01 and np.max(np.abs(res.q[:, 1])) >= 0.01  # it vibrates about the static state
    with pytest.raises(ValueError, match=r"^q0: its joint entries .* differ from the prescribed motion"):
        fm.simulate(pendulum, 0.3, prescribed=traj, q0=[0.5, 0.0, 0.0])


# ----- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("traj, message", [
    (lambda t: (np.zeros(2), np.zeros(2), np.zeros(2)), r"^prescribed: q at t = 0 s has shape \(2,\); expected n_joints = 1"),
    (lambda t: (0.0, 0.0), r"^prescribed: traj\(t\) must return \(q, qd, qdd\)"),
    (lambda t: 1.0, r"^prescribed: traj\(t\) must return \(q, qd, qdd\).*a single number"),
    (lambda t: (0.0, np.nan if t > 0.1 else 0.0, 0.0), r"^prescribed: qd\[0\] at t = 0.102 s is nan; every entry must be a finite number"),
    (lambda t: ("a", 0.0, 0.0), r"^prescribed q: expected numbers \(a list or array\), got str"),
    ("spin", r"^prescribed: expected a function traj\(t\)"),
])
def test_bad_prescribed(pendulum, traj, message):
    with pytest.raises(ValueError, match=message):
        fm.simulate(pendulum, 0.2, dt=2e-3, prescribed=traj)


def test_prescribed_with_controller_or_torque(pendulum):
    traj = fm.trajectory.spin_up(1.0, 1.0)
    for extra in ({"torque": 1.0}, {"controller": lambda t, q, qd: np.zeros(1)}):
        with pytest.raises(ValueError, match="not used with prescribed motion"):
            fm.simulate(pendulum, 0.1, prescribed=traj, **extra)


# ----- spin-up ---------------------------------------------------------------------------------
def test_spin_up_profile():
    """Kane, Ryan & Banerjee's hub angle: Ws Ts / 2 at t = Ts, then Ws (t - Ts/2); rates and
    accelerations are the derivatives of the angle (central differences)."""
    Ws, Ts = 6.0, 15.0
    traj = fm.trajectory.spin_up(Ws, Ts)
    c = (Ts / (2 * np.pi)) ** 2
    t = np.array([-1.0, 0.0, 3.0, 7.5, Ts, 20.0])
    q, qd, qdd = traj(t)
    assert np.allclose(q[:, 0], [0.0, 0.0, (Ws / Ts) * (4.5 + c * (np.cos(2 * np.pi * 3 / Ts) - 1)),
                                 (Ws / Ts) * (7.5**2 / 2 - 2 * c), Ws * Ts / 2, Ws * (20 - Ts / 2)], rtol=1e-14)
    assert np.allclose(qd[[0, 1, 3, 4, 5], 0], [0, 0, Ws / 2, Ws, Ws]) and np.allclose(qdd[[0, 1, 4, 5], 0], 0.0)
    assert qdd[3, 0] == pytest.approx(2 * Ws / Ts)  # peak acceleration at mid-ramp
    h = 1e-5
    for tk in (2.0, 9.0, 14.99, 17.0):
        assert abs((traj(tk + h)[0] - traj(tk - h)[0])[0] / (2 * h) - traj(tk)[1][0]) < 1e-7
        assert abs((traj(tk + h)[1] - traj(tk - h)[1])[0] / (2 * h) - traj(tk)[2][0]) < 1e-7
    two = fm.trajectory.spin_up([1.0, -2.0], 2.0, q_start=[0.5, 0.0])
    assert np.allclose(two(3.0)[0], [0.5 + 2.0, -4.0])


def test_krb_example_and_manoeuvre():
    """The bundled KRB model carries its manoeuvre; save/load keeps it; a short run follows it."""
    robot = fm.examples.load("krb_spinup")
    assert robot.manoeuvre == {"type": "spin_up", "rate": 6.0, "ramp_time": 15.0}
    traj = fm.trajectory.from_spec(robot.manoeuvre, robot.n_joints)
    res = fm.simulate(robot, 1.0, dt=5e-3, prescribed=traj)
    assert np.allclose(res.q[:, 0], traj(res.t)[0][:, 0])
    assert np.max(np.abs(res.energy - res.energy[0] - res.work)) < 1e-9 * np.max(np.abs(res.work))


def test_manoeuvre_round_trip(tmp_path):
    robot = fm.examples.load("krb_spinup")
    path = fm.save(robot, tmp_path / "krb.yaml")
    assert fm.load(path).manoeuvre == robot.manoeuvre


@pytest.mark.parametrize("manoeuvre, message", [
    ({"type": "spin", "rate": 1.0}, r"^manoeuvre.type: unknown 'spin'; use one of spin_up, rest_to_rest, spline"),
    ({"type": "spin_up", "rate": 1.0}, r"^manoeuvre.ramp_time: required field missing"),
    ({"type": "spin_up", "rate": [1.0, 2.0], "ramp_time": 1.0}, r"^manoeuvre.rate: expected 1 values \(one per joint\)"),
    ({"type": "spin_up", "rate": 1.0, "ramp_time": -1.0}, r"^manoeuvre.ramp_time: must be > 0"),
    ({"type": "rest_to_rest", "start": 0, "end": 1, "duration": 1, "profil": "x"}, r"^manoeuvre.profil: unknown field"),
    ({"type": "spline", "times": [0, 0], "points": [0, 1]}, r"^manoeuvre.times: expected at least 2 strictly increasing"),
    ("spin_up", r"^manoeuvre: expected a mapping"),
])
def test_bad_manoeuvre(manoeuvre, message):
    data = fm.model.serialize.robot_to_dict(fm.examples.load("krb_spinup"))
    data["manoeuvre"] = manoeuvre
    with pytest.raises(ModelError, match=message):
        fm.model.serialize.robot_from_dict(data)


# ----- command line ----------------------------------------------------------------------------
def test_cli_prescribed(capsys):
    assert cli.main(["simulate", "krb_spinup", "--prescribed", "--t-final", "1", "--dt", "0.005", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["energy_final"] - out["energy_initial"] - out["work"]) < 1e-9 * abs(out["work"])
    assert out["q_final"]["q1"] == pytest.approx(fm.trajectory.spin_up(6.0, 15.0)(1.0)[0][0], rel=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["simulate", "flx_three_link", "--prescribed"], "--prescribed: model 'flx_three_link' has no manoeuvre section"),
    (["simulate", "krb_spinup", "--prescribed", "--torque", "1"], "--prescribed: the joints follow the model's manoeuvre; leave out --torque"),
])
def test_cli_prescribed_errors(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_rigid_arm_on_its_prescription_equals_the_stepped_run(monkeypatch):
    """A rigid arm has no state to integrate under prescribed motion: the run evaluates the
    prescription and its inverse dynamics in one batch (the work by RK4's own quadrature, Simpson's
    rule) and equals the RK4 run it replaces to round-off."""
    from flexman.simulate import prescribed as P

    robot = fm.examples.load("puma560")
    traj = fm.trajectory.rest_to_rest([0.0] * 6, [0.5, -0.3, 0.4, 0.2, -0.1, 0.3], 1.0)
    direct = fm.simulate(robot, 1.2, dt=5e-3, prescribed=traj, backend="numeric", progress=False)
    monkeypatch.setattr(P, "_rigid_run", lambda *args: None)
    stepped = fm.simulate(robot, 1.2, dt=5e-3, prescribed=traj, backend="numeric", progress=False)
    assert direct.stats["rhs_evaluations"] == 0 < stepped.stats["rhs_evaluations"]
    for name in ("t", "q", "qd", "tau", "work", "energy"):
        a, b = np.asarray(getattr(direct, name)), np.asarray(getattr(stepped, name))
        assert a.shape == b.shape and np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max()), name
    assert direct.work[-1] != 0.0 and set(direct.stats) == set(stepped.stats)
