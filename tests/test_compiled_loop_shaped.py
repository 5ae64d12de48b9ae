"""Input-shaped trajectories in the compiled loop: a shaped reference (the base trajectory's
time-shifted, scaled copies summed, impulses passed as data) runs in C and equals the Python loop
to 1e-10, under decoupling + LQR, PID and prescribed motion; what C cannot evaluate (a shaped
Python function) keeps the Python loop and says why."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import flexman as fm
from flexman import trajectory as tr
from flexman.control import PID, Decoupling, Shaper
from flexman.model.serialize import robot_from_dict, robot_to_dict
from test_compiled_loop import both_loops as compiled_and_python
from test_compiled_loop import same

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


def both_loops(robot, t_final, dt=1e-3, **kwargs):
    """The run in both loops, neither diverged, equal to 1e-10 in every recorded series."""
    a, b = compiled_and_python(robot, t_final, dt=dt, **kwargs)
    assert len(a.t) == len(b.t) and a.diverged == b.diverged and not a.diverged
    for name in ("q", "qd", "tau", "controller_state", "energy"):
        same(getattr(a, name), getattr(b, name))
    return a, b


@pytest.fixture(scope="module")
def arm():
    return fm.examples.load("flx_three_link_lqr")  # the showcase arm and its decoupling + LQR controller


def test_shaped_move_under_decoupling_and_lqr(compiled_backend, arm):
    """The showcase's controller (its gains and LQR weights) on a ZVD-shaped version of a shorter move."""
    spec = arm.controller
    move = tr.rest_to_rest(spec["trajectory"]["start"], spec["trajectory"]["end"], 0.5)
    shaped = fm.control.shaper(arm, [0.0, 0.0, 0.0], "ZVD", modes=2)(move)
    assert len(shaped.impulses[0]) >= 3 and shaped.t_end > 1.0  # the lowest mode, about 1 Hz
    ctrl = Decoupling(arm, shaped, gp=spec["gp"], gv=spec["gv"], lqr_at=shaped.t_end, lqr_weights=spec["lqr_weights"])
    a, _ = both_loops(arm, 2.0, dt=2e-3, controller=ctrl)
    same(a.q[-1, :3], spec["trajectory"]["end"], 0.02)  # it arrived


@pytest.mark.parametrize("base", [
    tr.spline([0.0, 0.1, 0.2], [[0.0, 0.0, 0.0], [0.1, 0.2, -0.1], [0.15, 0.1, 0.05]]),
    tr.spin_up([1.0, 0.5, -0.5], 0.15),
    tr.rest_to_rest([0.0, 0.1, 0.0], [0.2, -0.1, 0.1], 0.2, profile="quintic"),
], ids=["spline", "spin-up", "quintic"])
def test_each_shaped_base_under_pid(compiled_backend, arm, base):
    shaped = Shaper.design("EI", [40.0, 95.0], [0.02, 0.05])(base)  # 9 impulses over two modes
    both_loops(arm, 0.3, controller=PID(arm, shaped, kp=[2000, 2000, 500], ki=200, kd=800))


def test_shaped_prescribed_motion(compiled_backend):
    data = robot_to_dict(fm.examples.load("krb_spinup"))
    data["links"][0]["beam"]["stiffening"] = True
    robot = robot_from_dict(data)
    move = tr.rest_to_rest([0.0], [1.0], 1.0)
    shaped = fm.control.shaper(robot, [0.0], "ZV")(move)
    a, b = both_loops(robot, 2.0, dt=5e-3, prescribed=shaped)
    same(a.work, b.work)
    assert np.max(np.abs(a.q[:, 1:])) > 1e-5  # the beam bent


def test_what_c_cannot_evaluate_keeps_the_python_loop(compiled_backend, arm):
    own = tr.Trajectory(0.0, 0.1, lambda t: (np.zeros(t.shape + (3,)),) * 3, 3)
    for traj in (Shaper.design("ZV", 50.0)(own), Shaper.design("ZV", 50.0)(Shaper.design("ZV", 80.0)(tr.spin_up([1.0, 0.5, -0.5], 0.1)))):
        res = fm.simulate(arm, 0.01, controller=PID(arm, traj, kp=100.0, ki=0.0, kd=10.0), progress=False,
                          backend="compiled")
        assert res.stats["loop"] == "python" and "reference trajectory" in res.stats["loop_reason"]


def test_fourier_reference_in_the_compiled_loop(compiled_backend, arm):
    """The identification excitation (a FourierSeries, periodic for ever) as a PID reference, plain
    and shaped: evaluated in C, equal to the Python loop."""
    rng = np.random.default_rng(3)
    series = tr.FourierSeries(0.2, [0.0, 0.1, -0.1], 0.3 * rng.standard_normal((3, 9)), 0.3 * rng.standard_normal((3, 9)))
    for traj in (series, Shaper.design("ZV", 60.0)(series)):
        a, _ = both_loops(arm, 0.5, controller=PID(arm, traj, kp=[2000, 2000, 500], ki=200, kd=800))
        assert np.ptp(a.q[:, 0]) > 1e-3
