"""Batched simulation: many initial states and parameter sets through one batched right-hand side
reproduce the runs made one by one."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import flexman as fm
from flexman.model.serialize import robot_from_dict, robot_to_dict

needs_cc = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


def three_link_variants():
    robot = fm.examples.load("flx_three_link")
    data = robot_to_dict(robot)
    others = []
    for scale in (0.8, 1.3):
        d = robot_to_dict(robot)
        for link in d["links"][1:]:
            link["beam"]["EI"] = [scale * e for e in link["beam"]["EI"]]
            link["beam"]["mass_per_length"] *= 1.0 / scale
        d["links"][0]["mass"] *= scale
        others.append(robot_from_dict(d))
    return robot_from_dict(data), others


def initial_states(robot, b):
    rng = np.random.default_rng(3)
    q0 = np.zeros((b, robot.nq))
    q0[:, :robot.n_joints] = 0.1 * rng.standard_normal((b, robot.n_joints))
    q0[:, robot.n_joints:] = 1e-3 * rng.standard_normal((b, robot.nq - robot.n_joints))
    return q0, 0.1 * rng.standard_normal((b, robot.nq))


@needs_cc
def test_batch_equals_one_by_one(compiled_backend):
    """Three runs (each its own initial state and parameter set: stiffness, beam mass, hub mass)
    under the model's PID controller, batched, against fm.simulate of each run: to 1e-10."""
    robot, others = three_link_variants()
    robots = [robot] + others
    q0, qd0 = initial_states(robot, 3)
    controller = fm.control.from_spec(robot, robot.controller)
    batch = fm.simulate_batch(robot, 0.2, dt=2e-3, q0=q0, qd0=qd0, robots=robots, controller=controller,
                              output_every=5)
    assert batch.stats["backend"] == "compiled" and batch.q.shape == (3, 21, robot.nq)
    assert not np.allclose(batch.params[0], batch.params[1])
    for k, r in enumerate(robots):
        one = fm.simulate(r, 0.2, dt=2e-3, q0=q0[k], qd0=qd0[k], controller=fm.control.from_spec(r, r.controller))
        for name in ("q", "qd", "tau"):
            want, got = getattr(one, name)[::5], getattr(batch, name)[k]
            assert np.abs(got - want).max() <= 1e-10 * max(np.abs(want).max(), 1.0), (k, name)


def test_batch_interpreted_matches_single_runs():
    """Without a compiler (numeric backend) the batch runs the interpreted model, batched."""
    robot = fm.examples.load("flx_flexible_pendulum")
    q0, qd0 = initial_states(robot, 4)
    batch = fm.simulate_batch(robot, 0.05, dt=1e-3, q0=q0, qd0=qd0, torque=[0.5], backend="numeric")
    assert batch.stats["backend"] == "numeric"  # (with "auto" the compiled model, when another test built it)
    for k in (0, 3):
        one = fm.simulate(robot, 0.05, dt=1e-3, q0=q0[k], qd0=qd0[k], torque=[0.5], backend="numeric")
        assert np.abs(batch.q[k] - one.q).max() <= 1e-10 * np.abs(one.q).max()


@needs_cc
def test_dopri5_meets_its_tolerance(compiled_backend):
    """Error-controlled Dormand-Prince against fine-step RK4 on a flexible pendulum batch."""
    robot = fm.examples.load("flx_flexible_pendulum")
    q0, qd0 = initial_states(robot, 5)
    ref = fm.simulate_batch(robot, 0.5, dt=2e-4, q0=q0, qd0=qd0, output_every=100)
    adaptive = fm.simulate_batch(robot, 0.5, dt=2e-2, q0=q0, qd0=qd0, method="dopri5", rtol=1e-9, atol=1e-11)
    assert adaptive.t.shape == ref.t.shape and np.allclose(adaptive.t, ref.t)
    assert np.abs(adaptive.q - ref.q).max() <= 1e-7 * np.abs(ref.q).max()
    assert adaptive.stats["rhs_evaluations"] < ref.stats["rhs_evaluations"]


def test_batch_input_errors():
    robot = fm.examples.load("flx_flexible_pendulum")
    with pytest.raises(ValueError, match=r"q0: expected nq = 3 values per state \(last axis\), got shape \(2, 4\)"):
        fm.simulate_batch(robot, 0.1, q0=np.zeros((2, 4)))
    with pytest.raises(ValueError, match="batch sizes differ"):
        fm.simulate_batch(robot, 0.1, q0=np.zeros((2, 3)), qd0=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="method: unknown 'euler'"):
        fm.simulate_batch(robot, 0.1, method="euler")
