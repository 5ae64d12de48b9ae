"""The rigid identification regressor: Y @ pi against the robot's inverse dynamics (Newton-Euler,
an independent path), against Pinocchio's joint-torque regressor, and the base parameters."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import random_rigid_robot

import flexman as fm
from flexman import Link, RigidBody, Robot
from flexman.analysis import rigid_regressor as rg


def _states(rng, n, k=7):
    return rng.uniform(-np.pi, np.pi, (k, n)), rng.uniform(-2, 2, (k, n)), rng.uniform(-3, 3, (k, n))


@pytest.mark.parametrize("seed,n,dh", [(s, n, dh) for s, n in enumerate([1, 2, 3, 4, 6, 7]) for dh in ("standard", "modified")])
def test_regressor_times_parameters_is_inverse_dynamics(seed, n, dh):
    rng = np.random.default_rng(300 + seed)
    robot = random_rigid_robot(rng, n, dh=dh, extras=True)  # hubs, payload, armature, friction
    q, qd, qdd = _states(rng, n)
    Y = fm.analysis.regressor(robot, q, qd, qdd, armature=True, viscous=True, coulomb=True)
    pi = rg.standard_parameters(robot, armature=True, viscous=True, coulomb=True)
    assert Y.shape == (7, n, 13 * n)
    tau = robot.inverse_dynamics(q, qd, qdd)  # recursive Newton-Euler for rigid arms
    np.testing.assert_allclose(Y @ pi, tau, rtol=0, atol=1e-11 * max(1.0, np.abs(tau).max()))
    # random parameters (not a physical body): pi -> J -> pi is the identity and Y is linear in pi
    p = rng.standard_normal(10)
    np.testing.assert_allclose(rg.from_pseudo_inertia(rg.pseudo_inertia(p)), p, atol=1e-15)


def test_regressor_is_linear_for_random_parameters():
    """Y @ pi equals inverse dynamics of a robot built from random physical parameters."""
    rng = np.random.default_rng(7)
    for _ in range(3):
        robot = random_rigid_robot(rng, 3, extras=False)
        q, qd, qdd = _states(rng, 3, 4)
        Y = fm.analysis.regressor(robot, q, qd, qdd)
        np.testing.assert_allclose(Y @ rg.standard_parameters(robot), robot.inverse_dynamics(q, qd, qdd),
                                   atol=1e-11 * 100)


def _pinocchio_columns(robot):
    """Per link, the 10x10 map L from our parameters (link's DH frame) to Pinocchio's (its joint
    frame, ``post`` before the DH frame): linear, so fitted exactly on 10 random bodies."""
    pin = pytest.importorskip("pinocchio")
    from test_rigid import _around_joint, _se3

    rng = np.random.default_rng(0)
    maps = []
    for link in robot.links:
        post = _se3(_around_joint(link, robot.dh)[1])
        X, Z = [], []
        for _ in range(10):
            m, c = rng.uniform(0.5, 2), rng.uniform(-1, 1, 3)
            A = rng.standard_normal((3, 3))
            body = pin.Inertia(m, c, A @ A.T + np.eye(3))
            X.append(body.toDynamicParameters())
            Z.append(body.se3Action(post).toDynamicParameters())
        maps.append(np.array(Z).T @ np.linalg.inv(np.array(X).T))
    from scipy.linalg import block_diag

    return block_diag(*maps)


@pytest.mark.parametrize("seed,n,dh", [(0, 2, "standard"), (1, 3, "modified"), (2, 6, "standard"), (3, 7, "modified")])
def test_regressor_equals_pinocchio(seed, n, dh):
    pin = pytest.importorskip("pinocchio")
    from test_rigid import pinocchio_model

    rng = np.random.default_rng(500 + seed)
    robot = random_rigid_robot(rng, n, dh=dh, extras=True)
    for link in robot.links:
        link.armature = link.viscous = link.coulomb = 0.0
    model = pinocchio_model(robot)
    data = model.createData()
    L = _pinocchio_columns(robot)
    for q, qd, qdd in zip(*_states(rng, n, 3)):
        ours = fm.analysis.regressor(robot, q, qd, qdd)
        ref = pin.computeJointTorqueRegressor(model, data, q, qd, qdd) @ L
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-10 * max(1.0, np.abs(ref).max()))


def _planar_2r(a2=0.5):
    """Planar 2R in modified DH (frames at the joints), gravity in the plane."""
    b1 = RigidBody(1.0, [0.2, 0.01, 0.0], [0.01, 0.02, 0.03])
    b2 = RigidBody(0.7, [0.2, 0.0, 0.02], [0.01, 0.02, 0.02])
    return Robot([Link(body=b1), Link(a=a2, body=b2)], gravity=[0, -9.81, 0], dh="modified")


def test_base_parameters_planar_2r():
    """The textbook result (Khalil & Dombre, base parameters of a planar 2R): the torques depend on
    ZZ1 + a2^2 m2, MX1 + a2 m2, MY1, ZZ2, MX2, MY2 only -- rank 6; m1 and all out-of-plane terms have
    no effect; m2 regroups with ZZ1 and MX1 (one of the three is dependent)."""
    a2 = 0.5
    robot = _planar_2r(a2)
    names = rg.parameter_names(robot)
    bp = rg.base_parameters(robot)
    assert bp.rank == 6
    assert set(bp.unidentifiable) == {"m1", "MZ1", "XX1", "XY1", "YY1", "XZ1", "YZ1",
                                      "MZ2", "XX2", "XY2", "YY2", "XZ2", "YZ2"}
    (dep, into), = bp.regrouped.items()
    assert {dep, *into} == {"ZZ1", "MX1", "m2"}
    rng = np.random.default_rng(1)
    q, qd, qdd = _states(rng, 2, 20)
    Y = fm.analysis.regressor(robot, q, qd, qdd)
    d = np.zeros(len(names))  # the null direction: m2 up by 1, ZZ1 down by a2^2, MX1 down by a2
    d[names.index("m2")], d[names.index("ZZ1")], d[names.index("MX1")] = 1.0, -a2 ** 2, -a2
    np.testing.assert_allclose(Y @ d, 0.0, atol=1e-12)
    beta = bp.project(rg.standard_parameters(robot))  # Y_base @ beta reproduces the torques
    np.testing.assert_allclose(Y[..., bp.independent] @ beta, robot.inverse_dynamics(q, qd, qdd), atol=1e-12)
    assert any(dep in b for b in bp.base_names)


def test_regressor_refuses_flexible_arms():
    robot = fm.examples.load("flx_three_link")
    with pytest.raises(ValueError, match="flexible links"):
        fm.analysis.regressor(robot, np.zeros(robot.nq), np.zeros(robot.nq), np.zeros(robot.nq))
