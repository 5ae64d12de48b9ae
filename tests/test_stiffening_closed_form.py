"""Geometric stiffening against closed forms (issue 12): Rayleigh's quotient with the clamped-free
mode shape, written here from its textbook formula, not from flexman's shapes.

With one assumed mode the stiffened model's frequency IS the Rayleigh quotient of that mode, so
these checks hold to roundoff, not to a discretization error:
- spinning beam (Southwell): flap^2 = beta^4 + k Omega^2, chord^2 = beta^4 + (k - 1) Omega^2,
  k = int (1 - x^2)/2 phi'^2 / int phi^2 (L = EI = rhoA = 1);
- hanging beam (the thesis pendulum at rest, joint held): omega^2 = omega0^2 (1 + gamma I / beta^4),
  gamma = rhoA g L^3 / EI, I = int (1 - x) phi'^2 / int phi^2.
"""
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from flexman import examples
from flexman.analysis.frequencies import natural_frequencies
from flexman.literature.cases import _example, first_order_speed_limit, rotating_frequencies

BETA1 = brentq(lambda b: np.cos(b) * np.cosh(b) + 1.0, 1.5, 2.5)  # clamped-free: cos b cosh b = -1
SIGMA1 = (np.cosh(BETA1) + np.cos(BETA1)) / (np.sinh(BETA1) + np.sin(BETA1))


def phi(x):
    b = BETA1
    return np.cosh(b * x) - np.cos(b * x) - SIGMA1 * (np.sinh(b * x) - np.sin(b * x))


def dphi(x):
    b = BETA1
    return b * (np.sinh(b * x) + np.sin(b * x) - SIGMA1 * (np.cosh(b * x) - np.cos(b * x)))


def ratio(weight):
    """int weight(x) phi'^2 / int phi^2 over the unit beam."""
    top = quad(lambda x: weight(x) * dphi(x) ** 2, 0.0, 1.0, epsabs=1e-13, epsrel=1e-13)[0]
    return top / quad(lambda x: phi(x) ** 2, 0.0, 1.0, epsabs=1e-13, epsrel=1e-13)[0]


SOUTHWELL1 = ratio(lambda x: (1.0 - x * x) / 2.0)  # centrifugal tension of the unit spinning beam


def test_southwell_coefficient_is_the_known_value():
    assert abs(SOUTHWELL1 - 1.1933) < 1e-4  # first flapwise mode of the uniform cantilever


@pytest.mark.parametrize("spin", [0.0, 1.0, 5.0, 12.0, 30.0])
def test_one_mode_spinning_beam_is_the_southwell_formula(spin):
    flap = rotating_frequencies("flap", spin, modes=1)[0]
    chord = rotating_frequencies("chord", spin, modes=1)[0]
    assert abs(flap**2 / (BETA1**4 + SOUTHWELL1 * spin**2) - 1) < 1e-10
    assert abs(chord**2 / (BETA1**4 + (SOUTHWELL1 - 1) * spin**2) - 1) < 1e-10


def test_first_order_model_has_no_centrifugal_term():
    """Without stiffening the flap frequency ignores the spin and the chordwise one softens by Omega^2."""
    flap = rotating_frequencies("flap", 2.0, modes=1, stiffening=False)[0]
    chord = rotating_frequencies("chord", 2.0, modes=1, stiffening=False)[0]
    assert abs(flap / BETA1**2 - 1) < 1e-10
    assert abs(chord**2 / (BETA1**4 - 4.0) - 1) < 1e-10


def test_speed_limit_of_the_first_order_model():
    """The chordwise error of the first-order model, from the Southwell formulas:
    (1 - r^2) / (1 + (k - 1) r^2) = (1 - e)^2 at r = Omega / omega1; about r = 0.13 for e = 1 %."""
    for error in (0.01, 0.05):
        a = (1 - error) ** 2
        r = np.sqrt((1 - a) / (1 + a * (SOUTHWELL1 - 1)))
        assert abs(first_order_speed_limit(error, modes=1) / r - 1) < 1e-6
        assert abs(first_order_speed_limit(error) / r - 1) < 2e-3  # 5 modes: the same to 0.2 %


def test_hanging_thesis_pendulum_is_stiffened_by_its_weight():
    """Mackay's 4 m pendulum hangs at q = 0 (gravity along +x0): its weight tensions the tube and
    raises both bending frequencies (joint held) by the Rayleigh factor, 0.74 %."""
    first = examples.load("flx_flexible_pendulum")
    beam = first.links[0].beam
    gamma = beam.mass_per_length * 9.81 * beam.length**3 / beam.EI[0]
    factor = 1.0 + gamma * ratio(lambda x: 1.0 - x) / BETA1**4
    q = np.zeros(first.nq)
    w0 = natural_frequencies(first, q, joints="locked")
    w = natural_frequencies(_example("flx_flexible_pendulum", stiffening=True), q, joints="locked")
    assert np.allclose(w0, BETA1**2 * np.sqrt(beam.EI[0] / (beam.mass_per_length * beam.length**4)), rtol=1e-9)
    assert np.allclose(np.square(w / w0), factor, rtol=1e-9)
    assert factor - 1 > 7e-3  # the check can fail: the stiffening is well above roundoff
