"""Graded scalars (flexman.symbolic.graded) and the truncated mass matrix of derive(truncate=k):
exact to order k in the flexible coordinates, checked against a complex-step Taylor expansion.
(M has degree up to 2 per flexible link in q_f: 4 for the two-link arms of 004 Table 2.)"""
import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.dynamics import ops
from flexman.symbolic.graded import Graded, seed, total
from flexman.symbolic.program import run_program
from flexman.symbolic.tracer import Tape


def G(*c):
    return Graded(c)


# ----- graded arithmetic ------------------------------------------------------------------
def test_arithmetic_is_truncated_convolution():
    a, b = G(1.0, 2.0, 3.0), G(2.0, 0.5, -1.0)
    assert (a + b).c == (3.0, 2.5, 2.0)
    assert (a - b).c == (-1.0, 1.5, 4.0)
    assert (-a).c == (-1.0, -2.0, -3.0)
    assert (a * b).c == (2.0, 4.5, 6.0)  # 1*2; 1*.5 + 2*2; 1*-1 + 2*.5 + 3*2 (degree 3, 4 dropped)
    assert (2.0 + a).c == (3.0, 2.0, 3.0) and (a - 1).c == (0.0, 2.0, 3.0) and (1 - a).c == (0.0, -2.0, -3.0)
    assert (3 * a).c == (3.0, 6.0, 9.0) and (a * 3).c == (3.0, 6.0, 9.0)
    assert (a / 2.0).c == (0.5, 1.0, 1.5) and (a / G(2.0, 0.0, 0.0)).c == (0.5, 1.0, 1.5)
    assert (4.0 / G(2.0, 0.0, 0.0)).c == (2.0, 0.0, 0.0)
    assert (a ** 2).c == (a * a).c and (G(2.0, 0.0, 0.0) ** -1.5).c == (2.0 ** -1.5, 0.0, 0.0)
    assert G(0.5, 0.0).sin().c == (np.sin(0.5), 0.0) and G(0.5, 0.0).cos().c == (np.cos(0.5), 0.0)
    assert a.total() == 6.0


def test_only_degree_zero_values_divide_or_enter_sin_cos():
    a = G(1.0, 2.0)
    for f in (lambda: 1.0 / a, lambda: G(1.0, 0.0) / a, a.sin, a.cos, lambda: a ** 0.5, lambda: a ** -1):
        with pytest.raises(ValueError, match="flexible coordinates|degree-0"):
            f()
    with pytest.raises(TypeError):
        bool(a)
    with pytest.raises(ValueError, match="orders"):
        a + G(1.0, 0.0, 0.0)


def test_graded_values_in_object_arrays():
    x = np.empty(2, dtype=object)
    x[0], x[1] = G(1.0, 2.0), G(3.0, 0.0)
    A = np.array([[1.0, 2.0], [0.0, 1.0]])
    y = A @ x
    assert y[0].c == (7.0, 2.0) and y[1].c == (3.0, 0.0)
    z = x * np.array([2.0, 1.0]) + 1.0 - x
    assert z[0].c == (2.0, 2.0) and z[1].c == (1.0, 0.0)
    s = ops.sin(np.array([x[1], 0.0], dtype=object))
    assert s[0].c == (np.sin(3.0), 0.0) and s[1] == 0.0
    assert x.shape == (2,) and np.asarray(x, dtype=object).shape == (2,)


def test_seed_and_total_on_tracers():
    tape = Tape()
    q = np.array(tape.inputs(["q1", "q2"]) + [None], dtype=object)[:-1]
    g = seed(q, [False, True], 1)
    assert g[0].c[1] == 0.0 and g[1].c[0] == 0.0 and g[1].c[1] is q[1]
    v = total(np.array([g[0] * g[1], 2.0], dtype=object))
    assert v[1] == 2.0 and tape.ops[v[0].idx][0] == "mul"
    assert seed(q, [False, True], 0)[1].c == (0.0,)  # order 0: q_f = 0


# ----- the truncated mass matrix ----------------------------------------------------------
def _beam(rng, shapes, length, stiffening=False):
    return Beam(length, rng.uniform(0.5, 2.0), list(rng.uniform(20.0, 80.0, 2)), shapes=shapes,
                modes={"y": int(rng.integers(1, 3)), "z": int(rng.integers(0, 2)), "torsion": 0},
                elements=int(rng.integers(1, 3)) if shapes == "finite_elements" else 0, stiffening=stiffening)


def _body(rng):
    return RigidBody(rng.uniform(0.1, 1.0), rng.uniform(-0.05, 0.05, 3), np.diag(rng.uniform(4e-3, 6e-3, 3)))


def random_arm(seed_, shapes, prismatic, stiffening=False):
    """Two flexible revolute links, then (if prismatic) a sliding flexible boom."""
    rng = np.random.default_rng(seed_)
    links = []
    for i in range(2):
        a = rng.uniform(0.4, 1.0)
        links.append(Link("revolute", a=a, alpha=rng.uniform(-1.5, 1.5), d=rng.uniform(0, 0.2),
                          hub=_body(rng), beam=_beam(rng, shapes, a, stiffening)))
    if prismatic:
        links.append(Link("prismatic", d=0.6, theta=rng.uniform(-1, 1), body=_body(rng),
                          beam=_beam(rng, shapes, rng.uniform(1.0, 1.5))))
    return Robot(links, name=f"graded_{seed_}", gravity=np.zeros(3))


def _state(robot, rng):
    q = rng.normal(size=robot.nq) * 0.05
    for i, lk in enumerate(robot.links):
        q[i] = rng.uniform(0.1, 0.4) if lk.joint == "prismatic" else rng.uniform(-np.pi, np.pi)
    return q


def first_order(robot, q, h=1e-30):
    """M(q_r, 0) + sum_k dM/dq_fk (q_r, 0) q_fk, the derivatives by complex step."""
    q0 = np.array(q, float)
    q0[robot.flex_index] = 0.0
    out = robot.mass_matrix(q0)
    for k in range(robot.n_joints, robot.nq):
        qc = q0.astype(complex)
        qc[k] += 1j * h
        out = out + robot.mass_matrix(qc).imag / h * q[k]
    return out


ARMS = [(s, shapes, p, False) for s, (shapes, p) in enumerate(
    [("clamped_free", False), ("finite_elements", False), ("clamped_mass", True), ("finite_elements", True)])]
ARMS.append(pytest.param(4, "clamped_free", False, True, marks=pytest.mark.slow))


@pytest.mark.parametrize("seed_,shapes,prismatic,stiffening", ARMS)
def test_truncated_mass_matrix_is_the_taylor_polynomial(seed_, shapes, prismatic, stiffening):
    robot = random_arm(seed_, shapes, prismatic, stiffening)
    rng = np.random.default_rng(10 + seed_)
    # each first-order deflection transform D adds up to 2 degrees, a quadratic one (stiffening) 4
    top = sum((4 if stiffening else 2) for lk in robot.links if lk.is_flexible)
    below = 2 if stiffening else top - 1  # first order: the top degree is reached; stiffened: beyond 2
    progs = {k: fm.derive(robot, formulation="book", truncate=k).program("mass_matrix") for k in (0, 1, below, top)}
    for _ in range(2):
        q = _state(robot, rng)
        q0 = q.copy()
        q0[robot.flex_index] = 0.0
        exact, lin = robot.mass_matrix(q), first_order(robot, q)
        assert np.abs(run_program(progs[0], q)["M"] - robot.mass_matrix(q0)).max() < 1e-10
        assert np.abs(run_program(progs[1], q)["M"] - lin).max() < 1e-8
        assert np.abs(run_program(progs[top], q)["M"] - exact).max() < 1e-12 * max(1.0, np.abs(exact).max())
        assert np.abs(run_program(progs[below], q)["M"] - exact).max() > 1e-9  # degrees up to top are there
        assert np.abs(exact - lin).max() > 1e-6  # the check would notice a missing truncation


def test_truncate_changes_only_the_mass_matrix():
    robot = random_arm(1, "finite_elements", False)
    plain, trunc = fm.derive(robot, formulation="book"), fm.derive(robot, formulation="book", truncate=1)
    for what in ("inverse_dynamics", "bias_forces", "forward_dynamics"):
        assert plain.op_count(what) == trunc.op_count(what)
    assert any(n.startswith("truncate=1") for n in trunc.notes) and not any("truncate" in n for n in plain.notes)
    with pytest.raises(ValueError, match="truncate"):
        fm.derive(robot, formulation="lagrange", truncate=1)
