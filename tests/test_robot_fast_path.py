"""The robot's dynamics methods at compiled speed: with a compiled model built, ``robot.mass_matrix``
``bias_forces``, ``inverse_dynamics`` and ``forward_dynamics`` run it (issue 33), on every kind of
robot of tests/backends.py; edits of the robot (attributes, lists, dicts) are seen at once; in-place
array edits are refused; complex input, external wrenches and ``backend="numeric"`` take the
recursions. (Speed: bench/robot_api.py, against Pinocchio's rnea.)"""
import copy
import pickle

import numpy as np
import pytest

import flexman as fm
from backends import ROBOTS, states


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fast_path")
    return {name: build(tmp) for name, build in ROBOTS.items()}


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b)))


def _numeric(robot):
    out = copy.deepcopy(robot)
    out.backend = "numeric"
    return out


def _all_four(robot, q, qd, tau):
    qdd = robot.forward_dynamics(q, qd, tau)
    return (robot.mass_matrix(q), robot.bias_forces(q, qd), qdd, robot.inverse_dynamics(q, qd, qdd))


@pytest.mark.parametrize("name", list(ROBOTS))
def test_methods_run_the_compiled_model_and_equal_the_recursions(robots, name):
    robot = copy.deepcopy(robots[name])
    assert robot.backend is None
    robot.compiled()
    assert robot._fast_model() is not None, "a built model is used by the methods"
    reference = _numeric(robot)
    assert reference._fast_model() is None
    for q, qd, tau in states(robot, 2, seed=4):
        for fast, slow in zip(_all_four(robot, q, qd, tau), _all_four(reference, q, qd, tau)):
            assert _rel(fast, slow) < 1e-10
    batch = states(robot, 3, seed=5)
    Q, QD, TAU = (np.array([s[k] for s in batch]) for k in range(3))
    assert _rel(robot.forward_dynamics(Q, QD, TAU), reference.forward_dynamics(Q, QD, TAU)) < 1e-10


def test_edits_are_seen_at_once(robots):
    robot = copy.deepcopy(robots["flexible_serial"])
    robot.compiled()
    q, qd, tau = states(robot, 1, seed=6)[0]
    before = robot.forward_dynamics(q, qd, tau)
    robot.links[1].body.mass *= 1.5  # an attribute
    robot.gravity = [0.0, 0.0, -1.62]  # a new array
    robot.links[2].beam.modes["y"] = robot.links[2].beam.modes["y"]  # a dict entry (same value: same model)
    after = robot.forward_dynamics(q, qd, tau)
    assert _rel(after, before) > 1e-3
    assert _rel(after, _numeric(robot).forward_dynamics(q, qd, tau)) < 1e-10
    robot.links[0].viscous = 0.7  # a further edit: the same structure's model with new parameters
    assert _rel(robot.inverse_dynamics(q, qd, after), _numeric(robot).inverse_dynamics(q, qd, after)) < 1e-10


def test_arrays_of_a_robot_are_read_only_and_a_new_array_is_an_edit(robots):
    robot = copy.deepcopy(robots["rigid_serial"])
    with pytest.raises(ValueError, match="read-only"):
        robot.links[0].body.com[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        robot.gravity[2] = 0.0
    mine = np.array([0.0, 0.0, -3.7])
    robot.gravity = mine
    mine[2] = 0.0  # the caller's array stays theirs: the robot holds a copy
    assert robot.gravity[2] == -3.7
    for clone in (copy.deepcopy(robot), pickle.loads(pickle.dumps(robot))):
        assert not clone.links[0].body.com.flags.writeable and clone.content_key() == robot.content_key()


def test_complex_input_wrenches_and_the_numeric_backend_take_the_recursions(robots, monkeypatch):
    robot = copy.deepcopy(robots["rigid_serial"])
    robot.compiled()
    q, qd, _ = states(robot, 1, seed=7)[0]
    qdd = np.ones(robot.nq)
    h = 1e-30  # the complex step through the methods: d tau / d q_0 exactly
    step = np.imag(robot.inverse_dynamics(q + 1j * h * np.eye(robot.nq)[0], qd, qdd)) / h
    assert _rel(step, robot.inverse_dynamics_derivatives(q, qd, qdd, backend="compiled").dq[:, 0]) < 1e-10
    force = np.array([0.0, 0.0, 5.0])  # a force at the tip: tau = ID - J^T f (J: the tip point's Jacobian)
    with_force = robot.inverse_dynamics(q, qd, qdd, f_ext=[(-1, [0.1, 0.0, 0.0], np.r_[force, 0, 0, 0])])
    J = robot.jacobian(q, -1, point=[0.1, 0.0, 0.0])[:3]
    assert _rel(with_force, robot.inverse_dynamics(q, qd, qdd) - J.T @ force) < 1e-12
    robot.backend = "numeric"
    assert robot._fast_model() is None
    robot.backend = None
    monkeypatch.setenv("FLEXMAN_BACKEND", "numeric")  # read when the robot is checked again (after an edit)
    robot.links[0].viscous = 0.0
    assert robot._fast_model() is None
    robot.backend = "fast"
    with pytest.raises(ValueError, match="backend: unknown 'fast'"):
        robot.mass_matrix(q)


def test_a_robot_with_its_fast_model_stays_copyable_and_saveable(robots, tmp_path):
    robot = copy.deepcopy(robots["flexible_serial"])
    robot.compiled()
    q, qd, tau = states(robot, 1)[0]
    robot.forward_dynamics(q, qd, tau)
    assert "_fast" in robot.__dict__
    assert copy.deepcopy(robot).nq == robot.nq and pickle.loads(pickle.dumps(robot)).nq == robot.nq
    back = fm.load(fm.save(robot, tmp_path / "arm.yaml"))
    assert back.content_key()[1:] == robot.content_key()[1:]
