"""The mass matrix by composite bodies (``lagrange4.mass_matrix``) against Book's unit-acceleration
columns of the inverse dynamics, the published algorithm it replaces in batches and in generated
code: numerically, through the Robot methods (batches use composites, a single state the
columns), and as traced programs (``derive(..., "newton_euler")`` falls back to the 4x4
recursion with composite M, ``derive(..., "book")`` keeps the columns)."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.dynamics import lagrange4 as l4
from flexman.dynamics.structure import build
from flexman.model.serialize import robot_from_dict, robot_to_dict

EXAMPLES = ["flx_flexible_pendulum", "flx_joint_mass", "flx_three_link", "krb_spinup", "piedboeuf_one_link",
            "ur5_like_flexible", "puma560", "stanford_arm", "dynaman_rp"]


def with_stiffening(robot, stiffening):
    data = robot_to_dict(robot)
    for link in data["links"]:
        if link.get("beam"):
            link["beam"]["stiffening"] = stiffening
    return robot_from_dict(data)


def chain(n, armature=0.0):
    """Flexible links alternating alpha = 90 deg / 0, bending in both planes, hubs and armature."""
    links = []
    for i in range(n):
        beam = Beam(length=0.5, mass_per_length=2.0, EI=[2000.0, 1500.0], modes={"y": 2, "z": 2, "torsion": 0})
        links.append(Link(a=0.5, alpha=np.pi / 2 if i % 2 == 0 else 0.0, armature=armature,
                          body=RigidBody(0.2, [0.01, 0.02, 0], [1e-3, 2e-3, 3e-3]), beam=beam))
    return Robot(links=links, gravity=[0, 0, -9.81])


def robots():
    out = [(name, fm.examples.load(name)) for name in EXAMPLES]
    out.append(("chain3", chain(3, armature=0.05)))
    return [(f"{name}-{'stiff' if s else 'first'}", with_stiffening(r, s)) for name, r in out for s in (False, True)]


def columns(model, q):
    """M from unit accelerations: the inverse dynamics without gravity, elasticity and friction."""
    nq = q.shape[-1]
    batch = q.shape[:-1]
    qb = np.broadcast_to(q[..., None, :], batch + (nq, nq))
    cols = l4.inverse_dynamics(model, qb, np.zeros(qb.shape), np.broadcast_to(np.eye(nq), qb.shape),
                               gravity=False, elastic=False, friction=False)
    return np.swapaxes(cols, -1, -2)


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("name,robot", robots(), ids=[n for n, _ in robots()])
def test_composite_equals_columns(name, robot):
    model = build(robot)
    assert l4.composite_applies(model)
    q = np.random.default_rng(3).normal(size=(5, robot.nq)) * 0.4
    M = l4.mass_matrix(model, q)
    assert rel(M, columns(model, q)) < 1e-13
    assert np.array_equal(M, np.swapaxes(M, -1, -2))  # filled symmetrically
    q[:, robot.n_joints:] *= 0.01  # deflections within the second-order theory: M positive definite
    assert np.all(np.linalg.eigvalsh(l4.mass_matrix(model, q)) > 0)


@pytest.mark.parametrize("stiffening", [False, True])
def test_mass_and_bias_share_one_pass(stiffening):
    robot = with_stiffening(fm.examples.load("flx_three_link"), stiffening)
    model = build(robot)
    rng = np.random.default_rng(4)
    q, qd = rng.normal(size=(2, 6, robot.nq))
    M, b = l4.mass_and_bias(model, q, qd)
    assert rel(M, columns(model, q)) < 1e-13
    assert rel(b, l4.inverse_dynamics(model, q, qd, np.zeros_like(qd))) < 1e-14


def test_robot_batches_equal_single_states():
    """A batch goes through composites, a single state through the columns: the same numbers."""
    robot = chain(3, armature=0.05)
    rng = np.random.default_rng(5)
    q, qd = rng.normal(size=(2, 4, robot.nq)) * 0.3
    q[:, robot.n_joints:] *= 0.01  # small deflections: a well-conditioned M
    tau = rng.normal(size=(4, robot.n_joints))
    M = robot.mass_matrix(q)
    qdd = robot.forward_dynamics(q, qd, tau)
    for k in range(4):
        assert rel(M[k], robot.mass_matrix(q[k])) < 1e-13
        assert rel(qdd[k], robot.forward_dynamics(q[k], qd[k], tau[k])) < 1e-12


def test_sliding_beams_keep_the_columns():
    robot = fm.examples.load("theodore_rrp")
    model = build(robot)
    assert not l4.composite_applies(model)
    with pytest.raises(ValueError, match="sliding beams"):
        l4.mass_matrix(model, np.zeros(robot.nq))
    q = np.random.default_rng(6).normal(size=(3, robot.nq)) * 0.1
    q[:, 2] = 0.5  # the sliding link's extension
    M = robot.mass_matrix(q)
    assert rel(M[1], robot.mass_matrix(q[1])) < 1e-13


@pytest.mark.parametrize("stiffening", [False, True])
def test_traced_composite_equals_traced_columns(stiffening):
    """Generated code (numpy backend) of both algorithms, with symbolic parameters."""
    robot = with_stiffening(chain(2, armature=0.05), stiffening)
    composite = fm.derive(robot, formulation="newton_euler", parameters="symbolic").compile("numpy")
    book = fm.derive(robot, formulation="book", parameters="symbolic").compile("numpy")
    q = np.random.default_rng(7).normal(size=(4, robot.nq)) * 0.4
    assert rel(composite.mass_matrix(q), book.mass_matrix(q)) < 1e-12
    assert rel(composite.mass_matrix(q), robot.mass_matrix(q)) < 1e-12


def test_symmetric_form_on_object_arrays():
    """sum_kl c_k c_l T_kl with each pair once (the branch traced values take, here on Python
    floats in object arrays) == einsum on numbers; the stiffening tensors it is used on are
    symmetric in (k, l)."""
    from flexman.dynamics.beams import symmetric_form

    rng = np.random.default_rng(8)
    T = rng.normal(size=(4, 4, 4, 4))
    T = T + np.swapaxes(T, 0, 1)
    c = rng.normal(size=(3, 4))
    expected = np.einsum("...k,...l,klab->...ab", c, c, T)
    assert np.allclose(symmetric_form(c, T), expected, rtol=1e-14)
    as_objects = symmetric_form(c.astype(object), T.astype(object))
    assert as_objects.dtype == object
    assert np.allclose(as_objects.astype(float), expected, rtol=1e-13)
    model = build(with_stiffening(fm.examples.load("piedboeuf_one_link"), True))
    beam = model.links[0].beam
    for tensor in (beam.Fkl, beam.Dkl):
        assert np.array_equal(tensor, np.swapaxes(tensor, 0, 1))
