"""Geometric stiffening of sliding beams (the flexible link of a prismatic joint, issue 12).

Oracles: the energy-Lagrangian point clouds (their second-order displacements written there
from -1/2 int |w'|^2, not from the recursion's tensors), the power balance of the stiffened
equations, the published frequencies of the rotating cantilever (a sliding beam whose hub sits
on the spin axis is that cantilever), and numeric == symbolic == compiled C.
"""
import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.oracles.energy_lagrangian import EnergyLagrangian
from flexman.literature.cases import ROTATING_FLAP, rotating_cantilever, rotating_frequencies


def rp_arm(stiffening=True, modes=None):
    """A revolute joint carrying a prismatic one whose flexible beam bends in both planes, a body
    and a payload at its tip, gravity oblique."""
    beam = Beam(length=1.4, mass_per_length=1.3, EI=[30.0, 40.0], modes=modes or {"y": 2, "z": 1},
                stiffening=stiffening)
    return Robot(
        links=[
            Link(joint="revolute", alpha=np.pi / 2, body=RigidBody(mass=1.0, inertia=[0.1, 0.1, 0.1])),
            Link(joint="prismatic", d=0.8, theta=0.3, beam=beam,
                 body=RigidBody(mass=0.3, com=[0.02, 0.01, 0.03], inertia=[0.01, 0.01, 0.01])),
        ],
        payload=RigidBody(mass=0.4, com=[0.05, 0.0, 0.01], inertia=[0.001, 0.002, 0.003]),
        gravity=[0.0, -3.0, -9.81], dh="standard")


def state(robot, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=robot.nq) * 0.3
    q[1] = 0.1  # extension 0.9 m
    q[robot.flex_index] *= 0.1  # tip slopes of a few tenths
    return q, rng.normal(size=robot.nq), rng.normal(size=robot.nq)


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def test_recursion_equals_the_energy_lagrangian_oracle():
    robot = rp_arm()
    q, qd, _ = state(robot, 1)
    oracle = EnergyLagrangian(robot)
    M = robot.mass_matrix(q)
    assert rel(oracle.mass_matrix(q), M) < 1e-12
    assert rel(oracle.gravity_elastic(q), robot.bias_forces(q, 0 * qd)) < 1e-12
    assert rel(oracle.bias_forces(q, qd), robot.bias_forces(q, qd)) < 1e-8
    assert abs(oracle.potential_energy(q).real / robot.potential_energy(q) - 1) < 1e-12
    # the check can fail: the first-order model is far from the stiffened one here
    assert rel(rp_arm(False).mass_matrix(q), M) > 1e-2


def test_power_balance_of_the_stiffened_sliding_beam():
    """d(T + V)/dt = qd . tau along (q, qd, qdd): the inverse dynamics are the Lagrange equations of
    the stiffened energies (Richardson-extrapolated central differences)."""
    robot = rp_arm()
    q, qd, qdd = state(robot, 3)
    tau = robot.inverse_dynamics(q, qd, qdd)

    def energy(h):
        qh = q + h * qd + h * h / 2 * qdd
        return robot.kinetic_energy(qh, qd + h * qdd) + robot.potential_energy(qh)

    def rate(h):
        return (energy(h) - energy(-h)) / (2 * h)

    assert abs((4 * rate(1e-4) - rate(2e-4)) / 3 - qd @ tau) < 1e-8 * abs(qd @ tau)
    assert abs(rp_arm(False).inverse_dynamics(q, qd, qdd) @ qd - qd @ tau) > 1e-4 * abs(qd @ tau)


def sliding_rotor(plane, stiffening=True, modes=5):
    """The rotating cantilever on a prismatic joint (flexman.literature.cases.rotating_cantilever)."""
    return rotating_cantilever(plane, modes, stiffening, joint="prismatic")


def spin(robot, omega):
    qd = np.zeros(robot.nq)
    qd[0] = omega
    return robot.natural_frequencies(np.zeros(robot.nq), qd=qd)


@pytest.mark.parametrize("omega", [2, 6, 12])
def test_spinning_sliding_beam_is_the_rotating_cantilever(omega):
    """Wright et al. 1982 Table 1 (flapwise), chordwise = sqrt(flap^2 - Omega^2); and the same
    frequencies as the revolute beam of the validation cases, to roundoff."""
    flap1, flap2 = ROTATING_FLAP[omega]
    flap = spin(sliding_rotor("flap"), omega)
    chord = spin(sliding_rotor("chord"), omega)
    assert np.all(np.abs(flap[:2] / [flap1, flap2] - 1) < 5e-3)
    assert np.all(np.abs(chord[:2] / np.sqrt(np.square([flap1, flap2]) - omega**2) - 1) < 5e-3)
    assert np.allclose(flap, rotating_frequencies("flap", float(omega)), rtol=1e-8)
    assert np.allclose(chord, rotating_frequencies("chord", float(omega)), rtol=1e-8)


def test_first_order_sliding_beam_whirls_above_its_first_frequency():
    assert abs(spin(sliding_rotor("chord", False, 3), 2.0)[0] - np.sqrt(3.5160**2 - 4)) < 4e-3
    assert spin(sliding_rotor("chord", False, 3), 4.0)[0] == 0.0  # unstable: no frequency
    assert spin(sliding_rotor("chord", True, 3), 4.0)[0] > 3.0


def test_numeric_equals_symbolic_for_a_stiffened_sliding_beam():
    robot = rp_arm()
    q, qd, _ = state(robot, 4)
    M, b = robot.mass_matrix(q), robot.bias_forces(q, qd)
    fast = fm.derive(robot, formulation="newton_euler", parameters="symbolic").compile("numpy")
    assert rel(fast.mass_matrix(q), M) < 1e-12
    assert rel(fast.bias_forces(q, qd), b) < 1e-12


@pytest.mark.slow
def test_compiled_c_equals_numeric_for_a_stiffened_sliding_beam():
    robot = rp_arm()
    q, qd, _ = state(robot, 5)
    fast = fm.derive(robot, formulation="book").compile("c")
    assert rel(fast.mass_matrix(q), robot.mass_matrix(q)) < 1e-12
    assert rel(fast.bias_forces(q, qd), robot.bias_forces(q, qd)) < 1e-12
