"""A sampled controller on a stiff plant (issue 33's stiff arms under issue 36's sampled control):
the torque is held over a sample, so RK4 between the samples is bounded by the plant's own
highest mode. ``method="auto"`` (the default) divides the output step so that every RK4 step is
within that limit and keeps the outputs on the asked grid; RK4 insisted on at an unstable step
is warned before the run, with the hint that applies to sampled runs; a Kalman filter's
prediction takes as many RK4 steps per sample as the same limit needs. Checked on one link
behind a stiff elastic joint (its two-inertia mode about 8,700 rad/s: RK4 needs 0.33 ms)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import flexman as fm
from flexman.control import PID, Sampled
from flexman.model.errors import FlexmanRuntimeWarning
from flexman.simulate.stability import StepWarning, rk4_substeps

S = fm.sensors
MOVE = fm.trajectory.rest_to_rest([0.0], [0.5], 0.3)


@pytest.fixture(scope="module")
def robot():
    body = fm.RigidBody(mass=2.0, com=[-0.2, 0.0, 0.0], inertia=[0.01, 0.02, 0.03])
    drive = fm.Drive(gear_ratio=50.0, rotor_inertia=4e-5, stiffness=5e6, damping=1.0)
    return fm.Robot(links=[fm.Link(a=0.5, body=body, armature=0.005, drive=drive)], name="stiff_elastic_link")


def pid(robot):
    return Sampled(PID(robot, MOVE, kp=200.0, ki=0.0, kd=20.0), 1000.0)


def test_auto_divides_the_step_between_samples_and_keeps_the_outputs(robot):
    M = robot.mass_matrix(np.zeros(2))  # link and motor inertia (no coupling in the reduced elastic model)
    w = np.sqrt(5e6 * (1.0 / M[0, 0] + 1.0 / M[1, 1]))  # the two-inertia mode (closed form)
    n = rk4_substeps(robot, 1e-3)
    assert n == int(np.ceil(1e-3 / (0.9 * 2.0 * np.sqrt(2.0) / w))) == 4  # RK4's limit 2 sqrt(2) / w, 10 % margin
    res = fm.simulate(robot, 0.4, dt=1e-3, controller=pid(robot), backend="numeric", progress=False)
    assert not res.diverged and res.stats["substeps"] == n and len(res.t) == 401
    np.testing.assert_array_equal(res.t, fm.simulate(robot, 0.4, dt=1e-3, backend="numeric", progress=False).t)
    fine = fm.simulate(robot, 0.4, dt=1e-3 / n, method="rk4", controller=pid(robot), backend="numeric", progress=False)
    assert fine.stats["substeps"] == 1 and not fine.diverged
    assert np.abs(fine.q[::n] - res.q).max() < 1e-9 * np.abs(res.q).max()  # the same RK4 steps (times to round-off)
    assert abs(res.q[-1, 0] - 0.5) < 0.02  # the link follows the move


def test_compiled_loop_takes_the_same_substeps(robot):
    a = fm.simulate(robot, 0.2, dt=1e-3, controller=pid(robot), backend="compiled", progress=False)
    b = fm.simulate(robot, 0.2, dt=1e-3, controller=pid(robot), backend="compiled", loop="python", progress=False)
    assert a.stats["loop"] == "compiled" and b.stats["loop"] == "python" and a.stats["substeps"] > 1
    assert np.abs(a.q - b.q).max() < 1e-10 * np.abs(b.q).max()


def test_rk4_insisted_on_is_warned_before_the_run_with_the_sampled_hint(robot):
    with pytest.warns(StepWarning, match=r"use dt <= .* s or method='auto' \(RK4 steps within the limit between "):
        with pytest.warns(FlexmanRuntimeWarning, match=r"or method='auto' \(RK4 steps within the plant's stability limit"):
            res = fm.simulate(robot, 0.05, dt=1e-3, method="rk4", controller=pid(robot), backend="numeric",
                              progress=False)
    assert res.diverged


def test_the_filter_predicts_with_stable_steps(robot):
    sensors = [S.encoder(robot, 0, noise=1e-4), S.encoder(robot, 0, side="motor", noise=1e-4, name="motor")]
    kf = fm.control.kalman(robot, sensors, 1000.0)
    assert kf.steps == rk4_substeps(robot, 1e-3) > 1
    assert fm.control.kalman(robot, sensors, 1000.0, steps=3).steps == 3
    with pytest.raises(ValueError, match=r"^steps: the prediction's RK4 steps per sample must be a whole number >= 1 "
                                         r"\(got 0\)$"):
        fm.control.kalman(robot, sensors, 1000.0, steps=0)


@pytest.mark.parametrize("backend", ["numeric", "compiled"])
@pytest.mark.parametrize("kd, unstable", [(5.0, False), (60.0, True)])
def test_the_sampled_loops_growth_is_the_zero_order_hold_closed_form(kd, unstable, backend):
    """One rigid link without gravity under PD sampled at 100 Hz: the loop's growth per sample is
    the spectral radius of the double integrator held over T with u = -kp q - kd qd, in closed
    form (Phi = [[1, T], [0, 1]], Gamma = [T^2 / 2J, T / J]); a loop that amplifies an error more
    than a thousandfold over the run is warned before it, in one line, and its run does swing."""
    body = fm.RigidBody(mass=1.0, com=[-0.25, 0.0, 0.0], inertia=[0.01, 0.01, 0.01])
    link = fm.Robot(links=[fm.Link(a=0.5, body=body)], name="one_link", gravity=[0.0, 0.0, 0.0])
    J, T, kp = float(link.mass_matrix(np.zeros(1))[0, 0]), 0.01, 100.0
    closed = np.array([[1.0, T], [0.0, 1.0]]) - np.outer([T * T / (2 * J), T / J], [kp, kd])
    radius = np.abs(np.linalg.eigvals(closed)).max()
    law = Sampled(PID(link, fm.trajectory.rest_to_rest([0.0], [0.0], 1.0), kp=kp, ki=0.0, kd=kd), 100.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fm.simulate(link, 1.0, dt=0.01, q0=[0.1], controller=law, backend=backend, progress=False)
    assert res.stats["loop"] == ("compiled" if backend == "compiled" else "python")
    assert abs(res.stats["loop_growth"] - radius) < 1e-6 * radius and (radius > 1.0) == unstable
    said = [str(w.message) for w in caught if "sampled loop" in str(w.message)]
    if unstable:
        assert said == [f"controller: the sampled loop at 100 Hz is unstable about the start state: linearized there, "
                        f"an error grows {res.stats['loop_growth']:.4g} times per sample, beyond 1000 times over the "
                        f"run; raise the rate or lower the gains (docs/lab.md)"]
        assert res.diverged or np.abs(res.q[-1, 0]) > 10.0
    else:
        assert said == [] and np.abs(res.q[-1, 0]) < 0.01
