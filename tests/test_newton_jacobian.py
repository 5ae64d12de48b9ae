"""Newton's Jacobian of the implicit method from the partial derivatives (issue 33): the compiled
loop's analytic df/dx of the closed loop (no law, PID, computed torque with a saturated joint, the
decoupling law before and after its LQR loop switches on) and of prescribed motion equals central
differences of the same C right-hand side; runs with it equal the Python loop and, for the
decoupling law, the runs that differentiate by forward differences."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import flexman as fm
from flexman.simulate import compiled_loop as cl

P = ctypes.POINTER(ctypes.c_double)


def _rhs(loop, prescribed, t, x, nx):
    f = loop.lib.fm_prescribed_rhs if prescribed else loop.lib.fm_closed_loop_rhs
    work = np.zeros(loop.lib.fm_work_size(loop.model.nq, loop.model.n_joints))
    dx, tau = np.zeros(nx), np.zeros(loop.model.n_joints)
    assert f(ctypes.byref(loop.plant), ctypes.byref(loop.control), t, x.ctypes.data_as(P), dx.ctypes.data_as(P),
             tau.ctypes.data_as(P), work.ctypes.data_as(P)) == 0
    return dx


def _jacobians(loop, prescribed, t, x):
    nx = x.size
    J = np.zeros((nx, nx))
    status = loop.lib.fm_loop_jacobian(ctypes.byref(loop.plant), ctypes.byref(loop.control), int(prescribed), t,
                                       x.ctypes.data_as(P), nx, 1, J.ctypes.data_as(P))
    central = np.zeros((nx, nx))
    for j in range(nx):
        h = 1e-6 * max(1.0, abs(x[j]))
        e = np.zeros(nx)
        e[j] = h
        central[:, j] = (_rhs(loop, prescribed, t, x + e, nx) - _rhs(loop, prescribed, t, x - e, nx)) / (2 * h)
    return status, J, central


def _laws(robot, traj):
    """(name, law, whether its Jacobian is analytic)."""
    return [("none", None, True),
            ("pid", fm.control.PID(robot, traj, kp=80.0, kd=15.0, ki=4.0), True),
            ("computed torque, one joint saturated", fm.control.ComputedTorque(
                robot, traj, kp=100.0, kd=20.0, tau_max=[1e-3] + [1e3] * (robot.n_joints - 1)), True),
            ("decoupling", fm.control.Decoupling(robot, traj, gp=100.0, gv=20.0) if not robot.is_rigid else None, True)]


@pytest.mark.parametrize("name", ["ur5_like", "flx_three_link"])
def test_closed_loop_jacobian_equals_central_differences(name):
    robot = fm.examples.load(name)
    model = robot.compiled()
    robot.compiled(derivatives=True)
    traj = fm.trajectory.rest_to_rest(np.zeros(robot.n_joints), 0.5 * np.ones(robot.n_joints), 1.0)
    rng = np.random.default_rng(1)
    for label, law, analytic in _laws(robot, traj):
        if label == "decoupling" and law is None:
            continue
        bound = law.using(model) if law is not None else None
        loop, why = cl.plan(model, "generalized_alpha", robot.n_joints, controller=bound, t_grid=np.linspace(0, 1, 3))
        assert why == "compiled"
        nx = 2 * robot.nq + (law.n_states if law is not None else 0)
        x = rng.uniform(-0.4, 0.4, nx)
        x[robot.flex_index] *= 0.01
        status, J, central = _jacobians(loop, False, 0.37, x)
        assert status == 0, label
        assert np.abs(J - central).max() <= 1e-6 * max(1.0, np.abs(central).max()), label


def test_prescribed_jacobian_equals_central_differences():
    robot = fm.examples.load("flx_three_link")
    model = robot.compiled()
    robot.compiled(derivatives=True)
    traj = fm.trajectory.rest_to_rest(np.zeros(robot.n_joints), 0.8 * np.ones(robot.n_joints), 1.0)
    loop, why = cl.plan(model, "generalized_alpha", robot.n_joints, prescribed=traj, t_grid=np.linspace(0, 1, 3))
    nx = 2 * robot.nf + 1
    x = np.random.default_rng(2).uniform(-0.01, 0.01, nx)
    status, J, central = _jacobians(loop, True, 0.41, x)
    assert status == 0
    assert np.abs(J - central).max() <= 1e-6 * max(1.0, np.abs(central).max())


def test_runs_with_the_analytic_jacobian_equal_the_python_loop():
    robot = fm.examples.load("flx_three_link")
    robot.compiled(derivatives=True)
    traj = fm.trajectory.rest_to_rest(np.zeros(robot.n_joints), 0.5 * np.ones(robot.n_joints), 1.0)
    law = fm.control.ComputedTorque(robot, traj, kp=100.0, kd=20.0)
    runs = [fm.simulate(robot, 0.6, dt=2e-3, method="generalized_alpha", controller=law, progress=False,
                        backend="compiled", loop=loop) for loop in ("compiled", "python")]
    assert runs[0].stats["jacobian"] == "analytic"
    assert runs[0].stats["rhs_evaluations"] == 1 + 300 + runs[0].stats["newton_iterations"]
    assert np.abs(runs[0].q - runs[1].q).max() <= 1e-10


def _showcase():
    """flx_three_link_lqr with its own decoupling + LQR law (lqr_at 2.5 s), bound to the compiled model."""
    robot = fm.examples.load("flx_three_link_lqr")
    model = robot.compiled()
    robot.compiled(derivatives=True)
    return robot, model, fm.control.from_spec(robot, robot.controller)


@pytest.mark.parametrize("t", [1.3, 2.7])  # the PD law on the move, then the LQR loop
def test_decoupling_jacobian_equals_central_differences(t):
    robot, model, law = _showcase()
    assert law.lqr_at == 2.5
    loop, why = cl.plan(model, "generalized_alpha", robot.n_joints, controller=law.using(model),
                        t_grid=np.linspace(0, 3, 3))
    assert why == "compiled"
    x = np.random.default_rng(3).uniform(-0.5, 0.5, 2 * robot.nq)
    x[robot.flex_index] *= 0.01
    x[robot.nq + robot.n_joints:] *= 0.1  # the flexible rates
    status, J, central = _jacobians(loop, False, t, x)
    assert status == 0
    assert np.abs(J - central).max() <= 1e-6 * max(1.0, np.abs(central).max())


@pytest.mark.parametrize("method", ["generalized_alpha", "radau5"])
def test_decoupling_runs_with_the_analytic_jacobian_equal_forward_differences(method, monkeypatch):
    robot, model, law = _showcase()
    law.lqr_at = 0.15  # both phases in a short run
    kw = dict(dt=1e-3, method=method, controller=law, progress=False, backend="compiled", rtol=1e-8, atol=1e-10)
    analytic = fm.simulate(robot, 0.3, **kw)
    monkeypatch.setattr(cl, "partials_model", lambda model: None)  # Newton's Jacobian by forward differences
    fd = fm.simulate(robot, 0.3, **kw)
    assert analytic.stats["jacobian"] == "analytic"
    assert fd.stats["jacobian"] == "finite differences"
    assert not analytic.diverged and analytic.t[-1] == fd.t[-1] == 0.3
    # generalized-alpha: Newton to its tolerance on the same steps; radau5: the error control's
    tol = 1e-9 if method == "generalized_alpha" else 1e-7
    assert np.abs(analytic.q - fd.q).max() <= tol * max(1.0, np.abs(fd.q).max())
