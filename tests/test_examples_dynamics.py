"""Every bundled example: closure (thesis sec. 3.3), M symmetric positive definite, and
energy conserved without forcing (DOP853, rtol 1e-11: drift below 1e-8 of the kinetic scale)."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexman as fm
from flexman.model import Robot

NAMES = fm.examples.names()


def _state(robot, rng):
    q = rng.normal(size=robot.nq) * 0.3
    q[robot.flex_index] *= 0.05
    for i, link in enumerate(robot.links):
        if link.joint == "prismatic":
            lo, hi = link.limits if link.limits else (0.0, 0.0)
            q[i] = 0.5 * (lo + hi) if link.limits else 0.0
    qd = rng.normal(size=robot.nq) * 0.3
    qd[robot.flex_index] *= 0.1
    return q, qd


@pytest.mark.parametrize("name", NAMES)
def test_closure_and_mass_matrix(name):
    robot = fm.examples.load(name)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, qd = _state(robot, rng)
        tau = rng.normal(size=robot.n_joints)
        qdd = robot.forward_dynamics(q, qd, tau)
        gen = robot.inverse_dynamics(q, qd, qdd)
        expected = np.concatenate([tau, np.zeros(robot.nf)])
        assert np.abs(gen - expected).max() < 1e-9 * max(1.0, np.abs(robot.bias_forces(q, qd)).max())
        M = robot.mass_matrix(q)
        assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max()
        assert np.linalg.eigvalsh(M).min() > 0


def _undamped(robot):
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
        if link.beam is not None:
            link.beam.damping = 0.0
    return Robot(links=robot.links, name=robot.name, gravity=robot.gravity, dh=robot.dh, payload=robot.payload)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_energy_is_conserved_without_forcing(name):
    robot = _undamped(fm.examples.load(name))
    q0, qd0 = _state(robot, np.random.default_rng(2))
    w = robot.natural_frequencies(q0)
    t_end = min(0.5, 20 * 2 * np.pi / max(w.max(), 1.0))  # about twenty periods of the fastest mode
    n = robot.nq
    zero = np.zeros(robot.n_joints)
    rhs = lambda t, x: np.concatenate([x[n:], robot.forward_dynamics(x[:n], x[n:], zero)])
    # An ill-conditioned M (monomial shapes x^2..x^6 of 001: cond ~1e8) puts roundoff of
    # cond * 1e-16 into the accelerations; DOP853's error estimate cannot go below it.
    cond = np.linalg.cond(robot.mass_matrix(q0))
    tight = cond < 1e7
    sol = solve_ivp(rhs, (0, t_end), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-11 if tight else 1e-9,
                    atol=1e-12 if tight else 1e-11, t_eval=np.linspace(0, t_end, 21))
    assert sol.success
    q, qd = sol.y[:n].T, sol.y[n:].T
    T = robot.kinetic_energy(q, qd)
    E = T + robot.potential_energy(q)
    assert np.abs(E - E[0]).max() < max(1e-8, 2e-16 * cond) * T.max()  # and the energy to the same roundoff
