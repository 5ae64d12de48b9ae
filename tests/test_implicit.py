"""Stiff arms (issue 33): generalized-alpha in the compiled loop and the Python loop, the
closed-loop step check, and ``method="auto"``.

Oracles: RK4 at a step far below its stability limit (the reference runs), the literature's
definition of rho_inf (the spectral radius of the step map as h w -> infinity, Chung & Hulbert
1993; Jansen, Whiting & Hulbert 2000), second-order convergence (halving the step quarters the
error), and, for the step check, bisection on actual RK4 runs."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import flexman as fm
from flexman import trajectory as tr
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.simulate.integrators import generalized_alpha
from flexman.simulate.stability import StepWarning, rk4_step_limit


def showcase():
    robot = fm.examples.load("flx_three_link_lqr")
    return robot, fm.control.from_spec(robot, robot.controller)


def krb():
    robot = fm.examples.load("krb_spinup")
    return robot, tr.from_spec(robot.manoeuvre, robot.n_joints)


def _decay_per_step(w, h, rho):
    A = np.array([[0.0, 1.0], [-w * w, 0.0]])
    X, info = generalized_alpha(lambda t, x: A @ x, np.arange(201) * h, np.array([1.0, 0.0]), rho_inf=rho)
    assert info["success"]
    size = np.hypot(X[:, 0], X[:, 1] / w)  # the oscillator's amplitude
    return (size[200] / size[20]) ** (1.0 / 180.0)


@pytest.mark.parametrize("rho", [0.3, 0.5, 0.8, 1.0])
def test_rho_inf_is_the_spectral_radius_at_infinite_step(rho):
    """An undamped oscillator far above 1/h: each step scales its amplitude by a factor that
    tends to rho_inf as h w grows (the parameter's definition): within 0.01 at h w = 1e4, and
    closer there than at h w = 1e3."""
    near, far = _decay_per_step(1e6, 1e-3, rho), _decay_per_step(1e7, 1e-3, rho)
    assert far == pytest.approx(rho, abs=0.01)
    assert abs(far - rho) <= abs(near - rho) + 1e-12


def test_a_resolved_oscillation_is_kept_with_second_order_phase():
    """w h = 0.05: amplitude kept within 1e-5 per 100 steps for rho_inf = 1 (no damping), and the
    phase error of one period within (w h)^2 / 12 relative (second order)."""
    w, h = 1.0, 0.05
    A = np.array([[0.0, 1.0], [-w * w, 0.0]])
    n = int(round(2 * np.pi / w / h))
    X, _ = generalized_alpha(lambda t, x: A @ x, np.arange(n + 1) * h, np.array([1.0, 0.0]), rho_inf=1.0)
    energy = X[:, 0] ** 2 + X[:, 1] ** 2 / w**2
    assert np.abs(energy - 1.0).max() < 1e-5
    assert abs(X[-1, 0] - np.cos(w * n * h)) < 2 * (w * h) ** 2


def _error(robot, t_final, dt, ref, **run):
    res = fm.simulate(robot, t_final, dt=dt, method="generalized_alpha", progress=False, **run)
    assert res.stats["success"] and res.stats["method"] == "generalized_alpha"
    idx = np.rint(res.t / (ref.t[1] - ref.t[0])).astype(int)
    return np.abs(res.q - ref.q[idx]).max(), res


def test_second_order_on_the_showcase_compiled_equals_python():
    robot, law = showcase()
    ref = fm.simulate(robot, 0.6, dt=1e-4, method="rk4", controller=law, progress=False, backend="compiled")
    e1, coarse = _error(robot, 0.6, 4e-3, ref, controller=law, backend="compiled")
    e2, fine = _error(robot, 0.6, 2e-3, ref, controller=law, backend="compiled")
    assert coarse.stats["loop"] == "compiled"
    assert 3.0 < e1 / e2 < 5.0, (e1, e2)  # halving the step quarters the error
    assert e2 < 1e-4
    python = fm.simulate(robot, 0.6, dt=2e-3, method="generalized_alpha", controller=law, progress=False,
                         backend="compiled", loop="python")
    assert python.stats["loop"] == "python"
    np.testing.assert_allclose(python.q, fine.q, rtol=0, atol=1e-10)


def test_second_order_on_the_krb_spin_up_compiled_equals_python():
    robot, motion = krb()
    ref = fm.simulate(robot, 4.0, dt=5e-4, method="rk4", prescribed=motion, progress=False, backend="compiled")
    e1, coarse = _error(robot, 4.0, 0.04, ref, prescribed=motion, backend="compiled")
    e2, fine = _error(robot, 4.0, 0.02, ref, prescribed=motion, backend="compiled")
    assert coarse.stats["loop"] == "compiled"
    assert 3.0 < e1 / e2 < 5.0, (e1, e2)
    python = fm.simulate(robot, 4.0, dt=0.02, method="generalized_alpha", prescribed=motion, progress=False,
                         backend="compiled", loop="python")
    np.testing.assert_allclose(python.q, fine.q, rtol=0, atol=1e-10)


def _rates(robot, dt, t_final, **run):
    """The largest joint and deflection rate of an RK4 run at ``dt``; every mode is seeded (rates
    of 1e-4), so an unstable one grows within the run, not only after round-off has grown."""
    seed = 1e-4 * np.cos(np.arange(robot.nq))
    if "prescribed" in run:
        seed[robot.joint_index] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fm.simulate(robot, t_final, dt=dt, method="rk4", progress=False, backend="compiled", qd0=seed, **run)
    return np.inf if res.diverged else np.abs(res.qd).max()


def _blows_up(robot, dt, t_final, stable=None, **run):
    """Whether RK4 at ``dt`` grows without bound: its rates exceed ten times those of a run at
    a step known to be stable (``stable``; else an absolute 100 rad/s or m/s)."""
    bound = 100.0 if stable is None else 10.0 * _rates(robot, stable, t_final, **run) + 1e-3
    return _rates(robot, dt, t_final, **run) > bound


def _bisect(robot, lo, hi, t_final, **run):
    """The largest RK4 step that does not blow up, by bisection on actual runs."""
    stable = lo
    assert not _blows_up(robot, lo, t_final, stable, **run) and _blows_up(robot, hi, t_final, stable, **run)
    for _ in range(10):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if not _blows_up(robot, mid, t_final, stable, **run) else (lo, mid)
    return np.sqrt(lo * hi)


def _pid_arm():
    robot = fm.examples.load("flx_three_link")
    return robot, fm.control.from_spec(robot, robot.controller)


def _computed_torque_arm():
    robot = fm.examples.load("flx_three_link")
    move = tr.rest_to_rest(np.zeros(3), np.array([0.5, -0.4, 0.3]), 1.0)
    return robot, fm.control.ComputedTorque(robot, move, kp=4e4, kd=400.0)


@pytest.mark.parametrize("make, horizon", [(_pid_arm, 0.45), (_computed_torque_arm, 0.3), (showcase, 2.4)],
                         ids=["pid", "computed_torque", "decoupling_lqr"])
def test_named_step_is_within_1_5_of_the_true_limit_under_control(make, horizon):
    """Horizons before a law changes (the PID switches off at 0.5 s, the LQR loop on at 2.5 s)."""
    robot, law = make()
    probe = fm.simulate(robot, 0.01, dt=1e-3, controller=law, progress=False, backend="compiled")
    named = probe.stats["step_check"]["rk4_limit"]
    true = _bisect(robot, named / 4, min(named * 4, horizon / 4), horizon, controller=law)
    assert named / 1.5 <= true <= named * 1.5, (named, true)


def test_named_step_is_within_1_5_of_the_true_limit_for_prescribed_motion():
    from flexman.simulate.stability import largest_stable_step

    robot, motion = krb()
    named = largest_stable_step(robot, locked=True)
    true = _bisect(robot, named / 4, named * 4, 4.0, prescribed=motion)
    assert named / 1.5 <= true <= named * 1.5, (named, true)


def test_rk4_above_the_closed_loop_limit_is_warned_naming_the_controller():
    robot, law = _computed_torque_arm()
    h_plant = fm.simulate(robot, 0.01, dt=1e-4, progress=False, backend="compiled").stats["step_check"]["rk4_limit"]
    probe = fm.simulate(robot, 0.01, dt=1e-4, controller=law, progress=False, backend="compiled")
    h = probe.stats["step_check"]["rk4_limit"]
    assert h < h_plant / 1.5  # the gains, not the beams, set the limit
    dt = 0.5 * (h + min(h_plant, 2 * h))
    with pytest.warns(StepWarning, match=r"closed loop.*the controller's poles are faster than the plant's"):
        fm.simulate(robot, 0.02, dt=dt, method="rk4", controller=law, progress=False, backend="compiled")


def test_auto_runs_rk4_where_stable_and_generalized_alpha_where_not(capsys):
    """The thesis arm's PID loop allows RK4 up to about 6 ms: at 1 ms auto runs RK4, at 20 ms
    (where RK4 blows up) generalized-alpha, which follows the fine reference."""
    robot, law = _pid_arm()
    calm = fm.simulate(robot, 0.05, dt=1e-3, controller=law, progress=False)
    assert calm.stats["method"] == "rk4" and "stable" in calm.stats["method_reason"]
    assert _blows_up(robot, 0.02, 1.0, controller=law)
    stiff = fm.simulate(robot, 1.0, dt=0.02, controller=law, progress=False)
    assert stiff.stats["method"] == "generalized_alpha" and not stiff.diverged
    assert "method='auto': generalized-alpha" in capsys.readouterr().err
    ref = fm.simulate(robot, 1.0, dt=1e-4, method="rk4", controller=law, progress=False)
    assert np.abs(stiff.q[:, :3] - ref.q[::200, :3]).max() < 2e-2  # joints; the 450 rad/s modes are not resolved


def test_rk4_limit_of_the_imaginary_axis_and_the_real_axis():
    assert rk4_step_limit([1j]) == pytest.approx(2 * np.sqrt(2), rel=1e-9)
    assert rk4_step_limit([-1.0]) == pytest.approx(2.785293563405, rel=1e-9)
    assert rk4_step_limit([0.5, 0.0]) == np.inf  # an unstable or a zero eigenvalue sets no limit


@pytest.mark.parametrize("kwargs, message", [
    (dict(method="euler"), "method: unknown 'euler'"),
    (dict(method="generalized_alpha", rho_inf=1.5), r"rho_inf: must be a number in \[0, 1\]"),
    (dict(method="generalized_alpha", rho_inf=float("nan")), r"rho_inf: must be a number in \[0, 1\]"),
    (dict(method="generalized_alpha", rho_inf=True), r"rho_inf: must be a number in \[0, 1\]"),
    (dict(method="generalized_alpha", dt=0.0), "dt"),
    (dict(method="generalized_alpha", dt=float("nan")), "dt"),
])
def test_bad_input_is_one_line(kwargs, message):
    robot = fm.examples.load("dynaman_2r")
    with pytest.raises(ValueError, match=message) as info:
        fm.simulate(robot, 0.1, progress=False, **{"dt": 1e-3, **kwargs})
    assert "\n" not in str(info.value)


def test_cli_default_never_blows_up_and_says_what_ran(tmp_path, capsys):
    """The stiff link that blows up RK4 at 1 ms (test_outputs): the command's default runs it
    implicitly, exits 0 and names the method in --json and in one notice."""
    import json

    from flexman import cli

    beam = fm.Beam(length=0.5, mass_per_length=2.0, EI=(2e4, 2e4), modes={"y": 2, "z": 0, "torsion": 0})
    robot = fm.Robot(links=[fm.Link(a=0.5, hub=fm.RigidBody(0.5, [0, 0, 0], [1e-3, 1e-3, 1e-3]), beam=beam)],
                     name="stiff", gravity=[0, -9.81, 0])
    model = fm.save(robot, tmp_path / "stiff.yaml")
    status = cli.main(["simulate", str(model), "--t-final", "0.5", "--dt", "1e-3", "--q0", "0", "1e-3", "0", "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert status == 0 and not summary["diverged"] and summary["t_final"] == 0.5
    assert summary["method"] == "generalized_alpha" and summary["method_asked"] == "auto"
    assert sum("method='auto': generalized-alpha" in line for line in captured.err.splitlines()) == 1
