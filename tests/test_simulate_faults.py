"""Simulation faults (issue 14): bad inputs are refused before the run; a run that diverges or
meets a singular mass matrix stops there, keeps what it computed and says when."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexman as fm
from flexman import Link, RigidBody, Robot
from flexman.model.errors import ModelError, SingularMatrixError
from flexman.simulate import Result, integrators

G = 9.81
ADAPTIVE = ["RK45", "Radau"]


def pendulum(n=1):
    """Uniform 1 m, 1 kg rods; gravity along base +x, so q = 0 hangs straight down."""
    rod = Link(a=1.0, body=RigidBody(1.0, [-0.5, 0, 0], [0, 1 / 12, 1 / 12]))
    return Robot(links=[rod] * n, gravity=[G, 0, 0])


def stiff_arm():
    """One flexible link: its second mode (about 1.2e4 rad/s here) makes RK4 at dt = 1e-3 blow up."""
    beam = fm.Beam(length=0.5, mass_per_length=2.0, EI=(2e4, 2e4), modes={"y": 2, "z": 0, "torsion": 0})
    return Robot(links=[Link(a=0.5, hub=RigidBody(0.5, [0, 0, 0], [1e-3, 1e-3, 1e-3]), beam=beam)], gravity=[0, -G, 0])


def quiet(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [str(w.message) for w in caught]


# ----- refused before the run ------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,pattern", [
    ({"dt": 0.5}, r"^dt: 0\.5 s is longer than t_final = 0\.1 s; use dt <= t_final"),
    ({"dt": 0.0}, r"^dt: expected a finite number > 0, got 0\.0"),
    ({"dt": np.nan}, r"^dt: expected a finite number > 0, got nan"),
    ({"dt": "1e-3"}, r"^dt: expected a number > 0, got str"),
    ({"q0": [np.nan]}, r"^q0\[0\] is nan; every entry must be a finite number"),
    ({"qd0": [np.inf]}, r"^qd0\[0\] is inf"),
    ({"q0": [0.1, 0.2]}, r"^q0: expected nq = 1 values per state \(last axis\), got shape \(2,\)"),
    ({"q0": [[0.1], [0.2]]}, r"^q0, qd0: expected one state of nq = 1"),
    ({"torque": np.nan}, r"^torque is nan"),
    ({"torque": np.array([[0.0], [np.nan]] * 6)[:11]}, r"^torque\[1, 0\] is nan"),
    ({"torque": lambda t, q, qd: [np.nan]}, r"^torque at t = 0 s \(torque argument plus controller output\)\[0\] is nan"),
    ({"controller": lambda t, q, qd: np.array([np.inf])}, r"^torque at t = 0 s .*is inf"),
    ({"method": "RK45", "rtol": 0.0}, r"^rtol: expected a finite number > 0, got 0\.0"),
    ({"method": "RK45", "atol": -1.0}, r"^atol: expected a finite number > 0"),
    ({"method": "euler"}, r"^method: unknown 'euler'"),
])
def test_bad_inputs_are_refused_before_the_run(kwargs, pattern):
    kwargs = {"dt": 0.01, **kwargs}
    with pytest.raises(ValueError, match=pattern):
        fm.simulate(pendulum(), 0.1, **kwargs)


def test_nan_gains_are_refused_when_the_controller_is_built():
    robot = fm.examples.load("flx_three_link")
    traj = fm.trajectory.rest_to_rest(np.zeros(3), np.ones(3), 1.0)
    with pytest.raises(ValueError, match=r"^kp\[1\] is nan"):
        fm.control.PID(robot, traj, kp=[1.0, np.nan, 1.0], ki=0.0, kd=1.0)


def test_singular_mass_matrix_at_the_start_names_the_coordinate():
    with pytest.raises(ModelError, match=r"^links\[0\]: the mass matrix at q = 0 is singular: coordinate q1"):
        fm.simulate(Robot(links=[Link(a=1.0)]), 0.1, dt=0.01)


# ----- diverged and failed runs keep their partial results --------------------------------------
def test_diverged_rk4_run_is_flagged_with_partial_results():
    robot = stiff_arm()
    q0 = np.zeros(robot.nq)
    q0[1] = 1e-3
    res, said = quiet(fm.simulate, robot, 0.5, dt=1e-3, q0=q0, method="rk4")
    assert res.diverged and 0.0 < res.t_diverged < 0.5
    assert len(res.t) < 501 and res.t[-1] == pytest.approx(res.t_diverged - 1e-3)
    for arr in (res.q, res.qd, res.tau, res.energy):
        assert len(arr) == len(res.t) and np.all(np.isfinite(arr))
    assert any("rk4 stopped at t = " in w and "result.diverged is True" in w for w in said)
    # the kept samples are the run's own: a stable step size agrees with them up to the fault
    fine = fm.simulate(robot, float(res.t[3]), dt=1e-3, method="rk4", q0=q0)
    np.testing.assert_array_equal(fine.q, res.q[:4])


def test_a_stable_run_is_not_flagged():
    res = fm.simulate(pendulum(), 0.2, dt=0.01, q0=[0.5])
    assert not res.diverged and res.t_diverged is None and res.t[-1] == 0.2


@pytest.mark.parametrize("method", ["rk4"] + ADAPTIVE)
def test_torque_turning_nan_mid_run_stops_there(method):
    res, said = quiet(fm.simulate, pendulum(), 1.0, dt=0.01, method=method, q0=[0.3],
                      torque=lambda t, q, qd: [np.nan if t > 0.3 else 0.0])
    # rk4 meets it in the step that starts at 0.3; an adaptive solver in the step whose trial
    # points pass 0.3 (it reports that step's start)
    assert res.diverged and 0.2 <= res.t_diverged <= 0.31
    assert np.all(np.isfinite(res.q)) and res.t[-1] <= res.t_diverged
    assert any("the applied torque is not finite" in w for w in said)


@pytest.mark.parametrize("method", ["rk4"] + ADAPTIVE)
def test_singular_mass_matrix_mid_run_keeps_what_was_computed(method, monkeypatch):
    robot = pendulum()
    exact = robot.forward_dynamics

    def failing(q, qd, tau, f_ext=None):
        if np.any(np.abs(np.asarray(q)) < 0.2):
            raise SingularMatrixError("forward_dynamics: the mass matrix is singular at this state")
        return exact(q, qd, tau)

    monkeypatch.setattr(robot, "forward_dynamics", failing)
    res, said = quiet(fm.simulate, robot, 2.0, dt=0.01, method=method, q0=[0.5], backend="numeric")
    assert res.diverged and 0.1 < res.t_diverged < 0.6
    assert len(res.t) > 10 and np.all(np.abs(res.q[:, 0]) >= 0.2 - 1e-9)
    assert any("SingularMatrixError" in w for w in said)


@pytest.mark.parametrize("method", ADAPTIVE)
def test_adaptive_solver_failure_keeps_samples(method):
    # a torque that grows without bound: the solver's step size collapses or the state overflows
    res, said = quiet(fm.simulate, pendulum(), 1.0, dt=0.01, method=method, q0=[0.3],
                      torque=lambda t, q, qd: [1e300 * (t > 0.5) * np.exp(1e3 * (t - 0.5))])
    assert res.diverged and 0.4 <= res.t_diverged < 1.0
    assert res.t[-1] <= res.t_diverged and np.all(np.isfinite(res.q))


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_hand_stepped_solvers_equal_solve_ivp(method):
    """The solver classes stepped here give solve_ivp's own numbers on the output grid (both on the
    interpreted model: LSODA turns a round-off difference of models into 4e-12)."""
    robot = pendulum(2)
    res = fm.simulate(robot, 0.5, dt=0.05, method=method, rtol=1e-9, atol=1e-11, q0=[0.4, -0.2], backend="numeric")

    numeric = robot.numeric()  # the recursions, as the run (a compiled model another test built is not used)

    def f(t, x):
        return np.concatenate([x[2:], numeric.forward_dynamics(x[:2], x[2:], np.zeros(2))])

    ref = solve_ivp(f, (0.0, 0.5), [0.4, -0.2, 0.0, 0.0], method=method, t_eval=res.t, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(res.q, ref.y[:2].T, rtol=0, atol=1e-12)
    assert res.stats["steps"] > 0 and not res.diverged


def test_integrator_reports_fault_time_directly():
    with np.errstate(over="ignore"):
        X, info = integrators.rk4(lambda t, x: x * 1e20, np.linspace(0, 1, 11), np.ones(1))
    assert not info["success"] and info["diverged"] and info["t_fault"] > 0.0
    assert np.all(np.isfinite(X)) and len(X) == int(round(info["t_fault"] / 0.1))


def test_diverged_flag_survives_save_and_load(tmp_path):
    robot = stiff_arm()
    q0 = np.zeros(robot.nq)
    q0[1] = 1e-3
    res, _ = quiet(fm.simulate, robot, 0.5, dt=1e-3, q0=q0, method="rk4")
    back = Result.load(res.save(tmp_path / "r.npz"))
    assert back.diverged and back.t_diverged == res.t_diverged


# ----- the energy-drift figure ------------------------------------------------------------------
def test_energy_drift_is_relative_to_the_energy_exchanged():
    # released from horizontal with gravity along base x: V(0) = 0 and T(0) = 0, so E = 0 throughout
    res = fm.simulate(pendulum(), 1.0, dt=1e-3, q0=[np.pi / 2])
    e = np.asarray(res.energy)
    assert abs(e[0]) < 1e-12 and np.max(np.abs(e)) < 1e-6   # |E| itself is no scale: all roundoff
    kinetic = res.robot.kinetic_energy(res.q, res.qd)
    assert kinetic.max() == pytest.approx(G * 0.5, rel=1e-3)   # m g l/2: the energy exchanged
    assert res.energy_drift() == pytest.approx(np.max(np.abs(e - e[0])) / kinetic.max(), rel=1e-12)
    assert res.energy_drift() < 1e-7
    still = fm.simulate(pendulum(), 0.1, dt=0.01)   # hanging at rest: nothing moves
    assert still.energy_drift() == 0.0
