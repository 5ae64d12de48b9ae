"""Radau IIA in the compiled loop (issue 33, ``method="radau5"``): a stiffly accurate implicit
Runge-Kutta method with step-size control, one C call per run.

Oracles: SciPy's ``Radau`` (the same method, Hairer & Wanner's RADAU5, on the same right-hand
side through the Python loop), RK4 at a step far below its stability limit, the closed form of a
pendulum's motion computed by SciPy's DOP853 at tight tolerances (the samples before a fault),
and the tolerance itself (the error falls as rtol tightens)."""
from __future__ import annotations

import ctypes
import warnings

import numpy as np
import pytest

import flexman as fm
from flexman.codegen import loop as cloop
from flexman.codegen.loop_radau import COUNTS
from flexman.simulate import compiled_loop as cl

P = ctypes.POINTER(ctypes.c_double)


@pytest.fixture(scope="module")
def pid_arm():
    """The thesis arm under its PID: 450 rad/s beam modes, RK4 unstable above about 6 ms."""
    robot = fm.examples.load("flx_three_link")
    robot.compiled(derivatives=True)  # Newton's Jacobian from the partial derivatives
    law = fm.control.from_spec(robot, robot.controller)
    ref = fm.simulate(robot, 0.3, dt=5e-5, method="rk4", controller=law, progress=False, backend="compiled")
    return robot, law, ref


def _radau(robot, law, rtol, **run):
    return fm.simulate(robot, 0.3, dt=1e-3, method="radau5", controller=law, progress=False, backend="compiled",
                       rtol=rtol, atol=1e-2 * rtol, **run)


def test_stiff_arm_equals_fine_rk4_and_error_falls_with_rtol(pid_arm):
    robot, law, ref = pid_arm
    errors, steps = [], []
    for rtol in (1e-4, 1e-6, 1e-8):
        res = _radau(robot, law, rtol)
        steps.append(res.stats["steps"])
        assert res.stats["loop"] == "compiled" and res.stats["method"] == "radau5" and res.stats["success"]
        assert res.stats["jacobian"] == "analytic"
        np.testing.assert_allclose(res.t, ref.t[::20], rtol=0, atol=1e-15)  # the outputs land on the grid
        errors.append(np.abs(res.q - ref.q[::20]).max())
    assert errors[0] < 1e-5 and errors[2] < 1e-9, errors  # within the tolerance asked (relative to |q| ~ 0.1)
    assert errors[0] > 10 * errors[1] > 100 * errors[2], errors
    # at the loose tolerance the mean step is above RK4's stability limit of this loop
    probe = fm.simulate(robot, 0.01, dt=1e-3, controller=law, progress=False, backend="compiled")
    assert steps[0] * probe.stats["step_check"]["rk4_limit"] < 0.3, steps
    assert steps[0] < steps[1] < steps[2]


def test_equals_scipys_radau_on_the_same_right_hand_side(pid_arm):
    """The same method and step-size control as SciPy's Radau: its run through the Python loop takes
    the same steps and agrees to round-off (far below the tolerance)."""
    robot, law, _ = pid_arm
    for rtol in (1e-5, 1e-8):
        ours = _radau(robot, law, rtol)
        scipy = fm.simulate(robot, 0.3, dt=1e-3, method="Radau", controller=law, progress=False, backend="compiled",
                            rtol=rtol, atol=1e-2 * rtol)
        assert ours.stats["steps"] == scipy.stats["steps"]
        assert np.abs(ours.q - scipy.q).max() < 1e-3 * rtol
        assert np.abs(ours.tau - scipy.tau).max() < 1e-3 * rtol * max(1.0, np.abs(scipy.tau).max())


def test_stats_count_the_work(monkeypatch):
    robot = fm.examples.load("flx_three_link_lqr")
    law = fm.control.from_spec(robot, robot.controller)
    monkeypatch.setattr(cl, "partials_model", lambda model: None)  # no partials: forward differences
    res = fm.simulate(robot, 0.2, dt=1e-3, method="radau5", controller=law, progress=False, backend="compiled",
                      rtol=1e-6, atol=1e-8)
    s = res.stats
    assert s["jacobian"] == "finite differences"
    assert s["steps"] >= 1 and s["newton_iterations"] >= s["steps"] and s["lu_decompositions"] >= 1
    # per Newton iteration three stages; per Jacobian nx (forward differences); per step its end; per
    # sample not at a step's end its torque; the start and the first step's probe
    nx = 2 * robot.nq
    assert s["rhs_evaluations"] >= 3 * s["newton_iterations"] + nx * s["jacobians"] + s["steps"] + 2
    assert not res.diverged and res.t[-1] == 0.2


def test_prescribed_motion_equals_fine_rk4():
    robot = fm.examples.load("krb_spinup")
    motion = fm.trajectory.from_spec(robot.manoeuvre, robot.n_joints)
    ref = fm.simulate(robot, 2.0, dt=5e-4, method="rk4", prescribed=motion, progress=False, backend="compiled")
    res = fm.simulate(robot, 2.0, dt=0.02, method="radau5", prescribed=motion, progress=False, backend="compiled",
                      rtol=1e-8, atol=1e-10)
    assert res.stats["loop"] == "compiled" and res.stats["success"]
    assert np.abs(res.q - ref.q[::40]).max() < 1e-7 * max(1.0, np.abs(ref.q[:, 2:]).max())


# ----- a fault mid-run: a pendulum whose mass matrix is singular below |q| = 0.2 -------------------
_M = ctypes.CFUNCTYPE(None, ctypes.c_long, P, P)
_B = ctypes.CFUNCTYPE(None, ctypes.c_long, P, P, P)


@_M
def _mass(n, q, M):
    M[0] = 1.0 if abs(q[0]) >= 0.2 else 0.0


@_B
def _bias(n, q, qd, b):
    b[0] = 9.81 * np.sin(q[0])


def test_a_fault_mid_run_keeps_the_samples_before_it():
    from scipy.integrate import solve_ivp

    lib = cloop.library()
    plant = cloop.Plant(nq=1, nj=1, mass_matrix=ctypes.cast(_mass, ctypes.c_void_p),
                        bias_forces=ctypes.cast(_bias, ctypes.c_void_p), has_p=0)
    control = cloop.Control(kind=0, off_at=np.inf, lqr_at=np.inf)
    t = np.linspace(0.0, 2.0, 201)
    x0 = np.array([0.5, 0.0])
    X, TAU = np.full((201, 2), np.nan), np.full((201, 1), np.nan)
    n_out, t_fault, counts = ctypes.c_long(0), ctypes.c_double(np.nan), np.zeros(len(COUNTS), dtype=np.int_)
    status = lib.fm_radau_run(ctypes.byref(plant), ctypes.byref(control), 0, t.ctypes.data_as(P), 201,
                              x0.ctypes.data_as(P), 2, 1, 1e-8, 1e-10, np.inf, X.ctypes.data_as(P),
                              TAU.ctypes.data_as(P), ctypes.byref(n_out), ctypes.byref(t_fault),
                              counts.ctypes.data_as(ctypes.POINTER(ctypes.c_long)))
    k = n_out.value
    exact = solve_ivp(lambda _, x: [x[1], -9.81 * np.sin(x[0])], (0, 2), x0, method="DOP853", rtol=1e-12,
                      atol=1e-12, dense_output=True)
    assert status == 1  # FM_SINGULAR
    # the pendulum reaches |q| = 0.2 at t = 0.377 s: the fault is met in the step that crosses it
    assert 0.3 < t_fault.value < 0.377 and k >= 30 and t[k - 1] <= t_fault.value
    assert np.all(np.abs(X[:k, 0]) >= 0.2) and np.all(np.isnan(X[k:]))
    np.testing.assert_allclose(X[:k], exact.sol(t[:k]).T, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(TAU[:k], 0.0)  # no torque applied
    assert counts[0] >= 1


# ----- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    (dict(method="radau"), "method: unknown 'radau'"),
    (dict(rtol=0.0), "rtol: expected a finite number > 0"),
    (dict(rtol=-1e-6), "rtol: expected a finite number > 0"),
    (dict(atol=float("nan")), "atol: expected a finite number > 0"),
    (dict(rtol=1e-15), r"rtol: 1e-15 is below round-off for radau5"),
    (dict(controller=lambda t, q, qd: -q), r"method: 'radau5' runs in the compiled loop only.*method='Radau'"),
])
def test_bad_input_is_one_line(kwargs, message):
    robot = fm.examples.load("dynaman_2r")
    with pytest.raises(ValueError, match=message) as info:
        fm.simulate(robot, 0.1, dt=1e-3, progress=False, backend="compiled", **{"method": "radau5", **kwargs})
    assert "\n" not in str(info.value)


def test_python_loop_is_refused_in_one_line():
    robot = fm.examples.load("dynaman_2r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"runs in the compiled loop only, and this run cannot \(loop='python' was asked for\)"):
            fm.simulate(robot, 0.1, method="radau5", progress=False, loop="python")


# ----- batches -----------------------------------------------------------------------------------
@pytest.mark.parametrize("method, dt", [("generalized_alpha", 0.02), ("radau5", 0.01)])
def test_batch_implicit_equals_single_runs(pid_arm, method, dt):
    """Three runs, each its own start state and parameters (stiffness, beam mass, hub mass), as one
    C call over the batch against fm.simulate of each: to 1e-10 (the same arithmetic per run)."""
    from test_batch import initial_states, three_link_variants

    robot, others = three_link_variants()
    robots = [robot] + others
    q0, qd0 = initial_states(robot, 3)
    law = fm.control.from_spec(robot, robot.controller)
    batch = fm.simulate_batch(robot, 0.4, dt=dt, q0=q0, qd0=qd0, robots=robots, controller=law, method=method,
                              rtol=1e-7, atol=1e-9, output_every=2)
    assert batch.stats["loop"] == "compiled" and batch.stats["method"] == method and batch.stats["success"]
    for k, r in enumerate(robots):
        one = fm.simulate(r, 0.4, dt=dt, q0=q0[k], qd0=qd0[k], controller=fm.control.from_spec(r, r.controller),
                          method=method, rtol=1e-7, atol=1e-9, progress=False)
        assert one.stats["loop"] == "compiled"
        if method == "radau5":
            assert batch.stats["steps_per_run"][k] == one.stats["steps"]
        for name in ("q", "qd", "tau"):
            want, got = getattr(one, name)[::2], getattr(batch, name)[k]
            assert np.abs(got - want).max() <= 1e-10 * max(np.abs(want).max(), 1.0), (k, name)


def test_batch_auto_goes_implicit_where_rk4_is_unstable(pid_arm):
    robot, law, ref = pid_arm
    q0 = np.zeros((2, robot.nq))
    q0[1, 0] = 0.05
    calm = fm.simulate_batch(robot, 0.05, dt=1e-3, q0=q0, controller=law, method="auto")
    assert calm.stats["method"] == "rk4" and "stable" in calm.stats["method_reason"]
    # (25 ms: another step than test_implicit's, whose once-per-process notice it reads)
    stiff = fm.simulate_batch(robot, 0.3, dt=0.025, q0=q0, controller=law, method="auto")
    assert stiff.stats["method"] == "generalized_alpha" and stiff.stats["success"]
    assert np.abs(stiff.q[0, :, :3] - ref.q[::500, :3]).max() < 2e-2  # joints; the beam modes are not resolved


def test_batch_implicit_needs_the_compiled_loop():
    robot = fm.examples.load("dynaman_2r")
    with pytest.raises(ValueError, match=r"method: 'radau5' in simulate_batch runs in the compiled loop only") as info:
        fm.simulate_batch(robot, 0.1, method="radau5", torque=lambda t, q, qd: 0 * q, backend="compiled")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"rtol: expected a finite number > 0"):
        fm.simulate_batch(robot, 0.1, method="radau5", rtol=0.0)
