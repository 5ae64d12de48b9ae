"""One input normalisation for every public numeric function (issue 14): lists, ints, column
vectors and batches give the same numbers as float arrays; anything else is a one-line
ValueError naming the argument and nq."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.model import inputs

FLEX = fm.examples.load("flx_three_link")          # nq = 7, 3 joints
RIGID = fm.examples.load("flx_double_pendulum")    # nq = 2


def first_joints(x, nq, nj):
    """The first nj entries of each state of x, in x's own layout (column vectors stay columns)."""
    x = np.asarray(x)
    return x[:nj] if x.shape == (nq, 1) else x[..., :nj].tolist()


def calls(robot):
    """(name, function of one state tuple, number of state arguments) of every public method."""
    nq, nj = robot.nq, robot.n_joints
    return [
        ("mass_matrix", lambda q, qd, x: robot.mass_matrix(q)),
        ("bias_forces", lambda q, qd, x: robot.bias_forces(q, qd)),
        ("inverse_dynamics", lambda q, qd, x: robot.inverse_dynamics(q, qd, x)),
        ("forward_dynamics", lambda q, qd, x: robot.forward_dynamics(q, qd, first_joints(x, nq, nj))),
        ("kinetic_energy", lambda q, qd, x: robot.kinetic_energy(q, qd)),
        ("potential_energy", lambda q, qd, x: robot.potential_energy(q)),
        ("frame", lambda q, qd, x: robot.frame(q, 1)),
        ("jacobian", lambda q, qd, x: robot.jacobian(q, link=-1, point=[0.01, 0, 0], order=2)),
    ]


def sample(robot, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    return tuple(0.2 * rng.standard_normal(batch + (robot.nq,)) for _ in range(3))


@pytest.mark.parametrize("robot", [FLEX, RIGID], ids=["flexible", "rigid"])
def test_lists_ints_columns_and_batches_agree(robot):
    q, qd, x = sample(robot)
    qb, qdb, xb = sample(robot, 1, (4,))
    for name, f in calls(robot):
        ref = f(q, qd, x)
        assert np.asarray(ref).dtype == np.float64, name
        np.testing.assert_array_equal(f(q.tolist(), tuple(qd), list(x)), ref, err_msg=name)
        np.testing.assert_array_equal(f(q[:, None], qd[:, None], x[:, None]), ref, err_msg=name)
        batch = f(qb, qdb, xb)
        for k in range(4):
            np.testing.assert_allclose(batch[k], f(qb[k], qdb[k], xb[k]), rtol=1e-12, atol=1e-12, err_msg=name)
        if name in ("mass_matrix", "potential_energy", "frame", "jacobian"):
            continue  # q only
        # one state against a batch broadcasts
        np.testing.assert_allclose(f(q, qdb, xb)[2], f(q, qdb[2], xb[2]), rtol=1e-12, atol=1e-12, err_msg=name)
    ints = robot.mass_matrix([0] * robot.nq)
    np.testing.assert_array_equal(ints, robot.mass_matrix(np.zeros(robot.nq)))


def test_scalar_is_one_state_of_a_one_coordinate_arm():
    robot = fm.examples.load("flx_rigid_pendulum")
    assert robot.nq == 1
    np.testing.assert_array_equal(robot.mass_matrix(0.3), robot.mass_matrix([0.3]))
    assert robot.mass_matrix([[0.1], [0.2]]).shape == (2, 1, 1)   # (n, 1) with nq = 1: a batch
    assert robot.forward_dynamics(0.3, 0.0, 1.0).shape == (1,)


@pytest.mark.parametrize("name", [n for n, _ in calls(FLEX)])
@pytest.mark.parametrize("bad,pattern", [
    (np.zeros(8), r"expected nq = 7 values per state \(last axis\), got shape \(8,\)"),
    (np.zeros((2, 6)), r"expected nq = 7 values per state \(last axis\), got shape \(2, 6\)"),
    (0.5, r"expected nq = 7 values per state, got a single number"),
    ("0 0 0 0 0 0 0", r"expected numbers \(a list or array\), got str"),
    (None, r"expected numbers \(a list or array\), got NoneType"),
    ({"q1": 0}, r"expected numbers \(a list or array\), got dict"),
    ([True] * 7, r"expected numbers, got booleans"),
    ([[0] * 7, [0] * 6], r"rectangular array"),
    (["a"] * 7, r"expected numbers, got text"),
])
def test_bad_q_is_one_line_naming_nq(name, bad, pattern):
    f = dict(calls(FLEX))[name]
    q, qd, x = sample(FLEX)
    with pytest.raises(ValueError, match=r"^q: .*" + pattern) as info:
        f(bad, qd, x)
    assert "\n" not in str(info.value)


def test_bad_velocities_accelerations_and_torques_are_named():
    q, qd, x = sample(FLEX)
    with pytest.raises(ValueError, match=r"^qd: expected nq = 7"):
        FLEX.bias_forces(q, qd[:5])
    with pytest.raises(ValueError, match=r"^qdd: expected nq = 7"):
        FLEX.inverse_dynamics(q, qd, x[:3])
    with pytest.raises(ValueError, match=r"^tau: expected n_joints = 3 values per state \(last axis\), got shape \(7,\)"):
        FLEX.forward_dynamics(q, qd, x)
    with pytest.raises(ValueError, match=r"^batch shapes do not match: q \(3, 7\), qd \(2, 7\), tau \(3,\)"):
        FLEX.forward_dynamics(np.zeros((3, 7)), np.zeros((2, 7)), np.zeros(3))


@pytest.mark.parametrize("call,pattern", [
    (lambda q: FLEX.frame(q, 3), r"^link: 3 out of range for 3 links \(use -3 to 2\)"),
    (lambda q: FLEX.frame(q, 1.0), r"^link: expected a link number from -3 to 2, got 1\.0"),
    (lambda q: FLEX.jacobian(q, link="tip"), r"^link: expected a link number"),
    (lambda q: FLEX.jacobian(q, link=True), r"^link: expected a link number"),
    (lambda q: FLEX.jacobian(q, point=[1, 2]), r"^point: expected 3 numbers \[x, y, z\], got shape \(2,\)"),
    (lambda q: FLEX.jacobian(q, order=3), r"^order: must be 1 or 2 \(got 3\)"),
    (lambda q: FLEX.frame(q, order=0), r"^order: must be 1 or 2"),
    (lambda q: FLEX.inverse_dynamics(q, q, q, f_ext=[(0, None)]), r"^f_ext\[0\]: expected \(link, point, wrench\)"),
    (lambda q: FLEX.inverse_dynamics(q, q, q, f_ext=[(0, None, [1, 2, 3])]),
     r"^f_ext\[0\] wrench \[fx, fy, fz, mx, my, mz\]: expected 6 values"),
    (lambda q: FLEX.inverse_dynamics(q, q, q, f_ext=[(9, None, np.zeros(6))]), r"^link: 9 out of range"),
    (lambda q: FLEX.inverse_dynamics(q, q, q, f_ext="wind"), r"^f_ext: expected a list"),
    (lambda q: FLEX.natural_frequencies(np.zeros((2, 7))), r"^q: expected one configuration of nq = 7"),
    (lambda q: FLEX.natural_frequencies(np.zeros(6)), r"^q: expected nq = 7"),
])
def test_bad_links_points_orders_and_wrenches(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(np.zeros(7))


def test_complex_and_symbolic_inputs_are_kept():
    q = np.zeros(7, dtype=complex)
    q[3] = 1e-30j
    assert FLEX.potential_energy(q).dtype == complex  # complex-step derivatives still work
    import symengine

    qs = np.array(symengine.symbols("a b c d e f g"), dtype=object)
    assert inputs.state(FLEX, qs).dtype == object
    assert inputs.state(FLEX, list(symengine.symbols("a b c d e f g"))).dtype == object


def test_compiled_numpy_model_uses_the_same_rules():
    robot = fm.examples.load("flx_double_pendulum")
    fast = fm.derive(robot).compile("numpy")
    q = [0.1, 0.2]
    np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), rtol=1e-12)
    np.testing.assert_allclose(fast.mass_matrix(np.array(q)[:, None]), robot.mass_matrix(q), rtol=1e-12)
    with pytest.raises(ValueError, match=r"^q: expected nq = 2 values per state \(last axis\), got shape \(3,\)"):
        fast.mass_matrix([0, 0, 0])
    with pytest.raises(ValueError, match=r"^tau: expected n_joints = 2"):
        fast.forward_dynamics(q, q, [1.0])


def test_singular_mass_matrix_in_forward_dynamics_is_a_value_error():
    robot = fm.Robot(links=[fm.Link(a=1.0), fm.Link(a=1.0, body=fm.RigidBody(1.0, [0, 0, 0], [0.1, 0.1, 0.1]))])
    # link 2's body sits on joint 2's axis with inertia: link 1's joint carries it at distance 1 m,
    # so M is regular at q = 0; a zero-mass arm is not
    empty = fm.Robot(links=[fm.Link(a=1.0)])
    with pytest.raises(ValueError, match=r"^forward_dynamics: the mass matrix is singular at this state"):
        empty.forward_dynamics([0.0], [0.0], [1.0])
    assert np.all(np.isfinite(robot.forward_dynamics([0, 0], [0, 0], [1, 1])))
