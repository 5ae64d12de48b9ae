"""Flexible-arm dynamics: Book's 4x4 recursion against the energy-based Lagrangian (004
Appendix, Algorithms 1-3), closure (thesis sec. 3.3), energy conservation, rigid limits."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from flexman import Beam, Link, RigidBody, Robot
from flexman.dynamics.structure import numeric_model
from flexman.oracles.energy_lagrangian import EnergyLagrangian

SHAPES = ["clamped_free", "polynomial", "finite_elements", "clamped_mass"]


def random_body(rng, scale=0.3):
    principal = np.sort(rng.uniform(0.2, 1.0, 3) * 1e-2)
    principal[2] = min(principal[2], principal[0] + principal[1])
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return RigidBody(rng.uniform(0.1, 1.0), rng.uniform(-scale, scale, 3), q @ np.diag(principal) @ q.T)


def random_beam(rng, prismatic, shapes):
    modes = {"y": int(rng.integers(1, 3)), "z": int(rng.integers(0, 2)), "torsion": 0}
    elements = int(rng.integers(1, 3)) if shapes == "finite_elements" else 0
    torsion = not prismatic and rng.random() < 0.5
    if torsion:
        modes["torsion"] = 1
    return Beam(
        length=rng.uniform(1.0, 1.5) if prismatic else rng.uniform(0.4, 1.0),
        mass_per_length=rng.uniform(0.5, 2.0),
        EI=list(rng.uniform(20.0, 80.0, 2)),
        GJ=rng.uniform(10.0, 30.0) if torsion else 0.0,
        polar_inertia_per_length=rng.uniform(1e-3, 1e-2) if torsion else 0.0,
        damping=rng.choice([0.0, 0.02]),
        shapes=shapes,
        modes=modes,
        elements=elements,
    )


def random_flexible_robot(rng, n_links, dh="standard", shapes=None, allow_prismatic=True):
    links = []
    for i in range(n_links):
        prismatic = allow_prismatic and i > 0 and rng.random() < 0.35
        shape = shapes or SHAPES[rng.integers(len(SHAPES))]
        flexible = rng.random() < 0.75 or i == n_links - 1
        beam = random_beam(rng, prismatic, shape) if flexible else None
        if prismatic:
            links.append(
                Link(
                    joint="prismatic",
                    d=0.6,
                    theta=rng.uniform(-1, 1),
                    a=0.0 if (beam is not None and dh == "standard") else rng.uniform(0, 0.3),
                    alpha=0.0 if (beam is not None and dh == "standard") else rng.uniform(-1, 1),
                    body=random_body(rng, 0.05),
                    beam=beam,
                )
            )
        else:
            a = beam.length if beam is not None else rng.uniform(0.2, 0.6)
            hub = random_body(rng, 0.05) if rng.random() < 0.5 else None
            links.append(
                Link(a=a, alpha=rng.uniform(-1.5, 1.5), d=rng.uniform(0, 0.2), body=random_body(rng, 0.1), hub=hub, beam=beam)
            )
    payload = random_body(rng, 0.05) if rng.random() < 0.7 else None
    return Robot(links=links, dh=dh, payload=payload, gravity=[0.0, -3.0, -9.81])


def random_state(rng, robot, scale=0.05):
    q = rng.normal(size=robot.nq)
    q[robot.flex_index] *= scale
    for i, link in enumerate(robot.links):
        if link.joint == "prismatic":
            q[i] = rng.uniform(-0.2, 0.2)  # joint value around the offset d = 0.6
    return q, rng.normal(size=robot.nq), rng.normal(size=robot.nq)


def rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_book_recursion_equals_energy_lagrangian(seed):
    """004 Algorithms 1-3 (energy/Christoffel) vs Book's recursion: M and b to 1e-9."""
    rng = np.random.default_rng(seed)
    robot = random_flexible_robot(rng, int(rng.integers(1, 4)), dh=["standard", "modified"][seed % 2])
    oracle = EnergyLagrangian(robot)
    q, qd, _ = random_state(rng, robot)
    assert rel(robot.mass_matrix(q), oracle.mass_matrix(q)) < 1e-9
    assert rel(robot.bias_forces(q, qd), oracle.bias_forces(q, qd)) < 1e-8
    assert abs(robot.potential_energy(q) - oracle.potential_energy(q).real) < 1e-9 * (1 + abs(robot.potential_energy(q)))


def test_the_energy_oracle_builds_its_own_constants(monkeypatch):
    """The oracle does not use the model it checks: with the model builder and the DH split made
    to fail, it still builds and evaluates (its transforms and beam integrals are its own)."""
    from flexman.dynamics import dh, structure

    rng = np.random.default_rng(3)
    robot = random_flexible_robot(rng, 2, dh="standard")
    while any(link.beam is not None and link.beam.shapes == "clamped_mass" for link in robot.links):
        robot = random_flexible_robot(rng, 2, dh="standard")  # (those shapes come from the model's loads)
    q, qd, _ = random_state(rng, robot)
    M, b = robot.mass_matrix(q), robot.bias_forces(q, qd)

    def refused(*args, **kwargs):
        raise AssertionError("the oracle used the model's builder")

    monkeypatch.setattr(structure, "build", refused)
    monkeypatch.setattr(dh, "split", refused)
    oracle = EnergyLagrangian(robot)
    assert rel(oracle.mass_matrix(q), M) < 1e-9 and rel(oracle.bias_forces(q, qd), b) < 1e-8


@pytest.mark.parametrize("seed", range(8))
def test_closure_and_mass_matrix_properties(seed):
    """Thesis sec. 3.3 closure: ID(q, qd, FD(q, qd, tau)) = [tau; 0]; M symmetric positive definite."""
    rng = np.random.default_rng(100 + seed)
    robot = random_flexible_robot(rng, int(rng.integers(1, 4)), dh=["standard", "modified"][seed % 2])
    q, qd, _ = random_state(rng, robot)
    tau = rng.normal(size=robot.n_joints)
    qdd = robot.forward_dynamics(q, qd, tau)
    gen = robot.inverse_dynamics(q, qd, qdd)
    expected = np.concatenate([tau, np.zeros(robot.nf)])
    assert np.abs(gen - expected).max() < 1e-9 * max(1.0, np.abs(tau).max())
    M = robot.mass_matrix(q)
    assert np.abs(M - M.T).max() < 1e-12 * np.abs(M).max()
    assert np.linalg.eigvalsh(M).min() > 0


def test_batched_calls_equal_per_sample_calls():
    rng = np.random.default_rng(7)
    robot = random_flexible_robot(rng, 3)
    states = [random_state(rng, robot) for _ in range(5)]
    Q, QD, QDD = (np.array(x) for x in zip(*states))
    M, b, tau = robot.mass_matrix(Q), robot.bias_forces(Q, QD), robot.inverse_dynamics(Q, QD, QDD)
    T, V = robot.kinetic_energy(Q, QD), robot.potential_energy(Q)
    for k, (q, qd, qdd) in enumerate(states):
        assert np.allclose(M[k], robot.mass_matrix(q), rtol=0, atol=1e-13)
        assert np.allclose(b[k], robot.bias_forces(q, qd), rtol=0, atol=1e-12)
        assert np.allclose(tau[k], robot.inverse_dynamics(q, qd, qdd), rtol=0, atol=1e-12)
        assert np.isclose(T[k], robot.kinetic_energy(q, qd), rtol=1e-14)
        assert np.isclose(V[k], robot.potential_energy(q), rtol=1e-14)


def _thin_rod(beam, convention, joint="revolute"):
    m, L = beam.mass_per_length * beam.length, beam.length
    com = [-L / 2, 0, 0] if convention == "standard" else [L / 2, 0, 0]
    return RigidBody(m, com, [0.0, m * L**2 / 12, m * L**2 / 12])


@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_undeformed_flexible_arm_equals_rigid_arm_of_thin_rods(dh):
    """Issue 3: at q_f = 0, qd_f = 0 the joint-space M and b equal the rigid arm's (1e-10)."""
    rng = np.random.default_rng(11)
    flex = random_flexible_robot(rng, 3, dh=dh, allow_prismatic=False)
    for link in flex.links:
        if link.beam is not None:
            link.beam.polar_inertia_per_length = 0.0  # thin rods
            link.beam.modes["torsion"] = 0
    flex = Robot(links=flex.links, dh=dh, payload=flex.payload, gravity=flex.gravity)
    rigid_links = []
    for link in flex.links:
        body = link.body
        extra = [link.hub] if link.hub is not None else []
        if link.beam is not None:
            extra.append(_thin_rod(link.beam, dh))
        rigid_links.append(Link(a=link.a, alpha=link.alpha, d=link.d, theta=link.theta, body=_combine([body] + extra)))
    rigid = Robot(links=rigid_links, dh=dh, payload=flex.payload, gravity=flex.gravity)
    nj = flex.n_joints
    for _ in range(3):
        q, qd, _ = random_state(rng, rigid)
        qf = np.concatenate([q, np.zeros(flex.nf)])
        qdf = np.concatenate([qd, np.zeros(flex.nf)])
        assert rel(flex.mass_matrix(qf)[:nj, :nj], rigid.mass_matrix(q)) < 1e-10
        assert rel(flex.bias_forces(qf, qdf)[:nj], rigid.bias_forces(q, qd)) < 1e-10


def _combine(bodies):
    """One rigid body with the same mass, centre of mass and inertia as several."""
    J = sum(b.pseudo_inertia() for b in bodies)
    m = J[3, 3]
    c = J[:3, 3] / m
    second = J[:3, :3] - m * np.outer(c, c)
    inertia = np.trace(second) * np.eye(3) - second
    return RigidBody(m, c, inertia)


def test_energy_is_conserved_without_forcing():
    """Energy constant to 1e-8 of the kinetic scale (DOP853, rtol 1e-11), random flexible arm."""
    rng = np.random.default_rng(3)
    robot = random_flexible_robot(rng, 2)
    for link in robot.links:
        if link.beam is not None:
            link.beam.damping = 0.0
    robot = Robot(links=robot.links, dh=robot.dh, payload=robot.payload, gravity=robot.gravity)
    q0, qd0, _ = random_state(rng, robot)
    qd0[robot.flex_index] *= 0.2
    n = robot.nq
    zero = np.zeros(robot.n_joints)

    def rhs(t, x):
        return np.concatenate([x[n:], robot.forward_dynamics(x[:n], x[n:], zero)])

    sol = solve_ivp(rhs, (0.0, 0.3), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-11, atol=1e-12, t_eval=np.linspace(0, 0.3, 31))
    q, qd = sol.y[:n].T, sol.y[n:].T
    E = robot.kinetic_energy(q, qd) + robot.potential_energy(q)
    scale = robot.kinetic_energy(q, qd).max()
    assert np.abs(E - E[0]).max() < 1e-8 * scale


def test_jacobian_columns_are_derivatives_of_the_tip_point():
    rng = np.random.default_rng(5)
    robot = random_flexible_robot(rng, 3)
    q, _, _ = random_state(rng, robot)
    point = np.array([0.05, -0.02, 0.03])
    J = robot.jacobian(q, link=-1, point=point)
    h = 1e-6
    for k in range(robot.nq):
        e = np.zeros(robot.nq)
        e[k] = h
        pos = lambda x: (robot.frame(x, -1) @ np.append(point, 1.0))[:3]
        fd = (pos(q + e) - pos(q - e)) / (2 * h)
        assert np.allclose(J[:3, k], fd, atol=1e-7)


def test_beam_without_modes_is_a_rigid_rod_in_every_formulation():
    """A beam with no modes is a thin rigid rod: Newton-Euler (rigid path) == Book's recursion."""
    from flexman.dynamics import lagrange4

    rod = lambda: Beam(length=0.8, mass_per_length=2.0, EI=[0.0, 0.0], modes={"y": 0, "z": 0})
    robot = Robot(links=[Link(a=0.8, alpha=0.4, beam=rod()), Link(a=0.8, beam=rod())])
    assert robot.is_rigid
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.normal(size=(3, 2))
    assert rel(robot.inverse_dynamics(q, qd, qdd), lagrange4.inverse_dynamics(numeric_model(robot), q, qd, qdd)) < 1e-13
    M = robot.mass_matrix(q)
    m, L = 1.6, 0.8
    assert np.isclose(M[1, 1], m * L**2 / 3)  # thin rod about its end
