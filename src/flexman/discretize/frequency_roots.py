"""Frequency equations of uniform clamped beams: their roots and the exact natural frequencies.

Nondimensional bending eigenvalue: ``beta**4 = mu * omega**2 * L**4 / EI``. Tip loads follow
004 eq. (11): ``M = M_L / (mu L)``, ``J = J_L / (mu L**3)`` (inertia about the beam end),
``D = M_DL / (mu L**2)`` (first moment of the tip body about the beam end, along the beam).

Boundary conditions at the tip (re-derived from Hamilton's principle with the tip kinetic
energy ``1/2 M_L w_t**2 + M_DL w_t w'_t + 1/2 J_L w'_t**2``), in ``eta = x / L``:

    psi'''(1) = -beta**4 (M psi(1) + D psi'(1))      (shear force accelerates the tip body)
    psi''(1)  =  beta**4 (D psi(1) + J psi'(1))      (bending moment turns it)

With ``psi = c + nu s``, ``c = cos - cosh``, ``s = sin - sinh`` (clamped root), the 2x2
determinant of these two conditions equals ``2 beta**5 f`` with ``f`` of 004 eq. (11)/(38)
(checked symbolically), and the shear condition gives 004's ``nu`` (eq. 10).
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "clamped_free_roots",
    "clamped_mass_roots",
    "torsion_roots",
    "frequency_equation",
    "frequency_equation_partials",
    "beta_rate",
    "check_loads",
    "exact_frequencies",
]


def bracketed_root(g, a, b):
    """The root of g between a and b (where g changes sign), by bisection down to adjacent
    floating-point numbers (about 60 evaluations of g). Exact to the last digit, and no import
    of scipy.optimize, which costs more than loading a model and running a short simulation."""
    fa, fb = float(g(a)), float(g(b))
    if fa == 0.0 or fb == 0.0:
        return a if fa == 0.0 else b
    if (fa < 0.0) == (fb < 0.0):
        raise ValueError(f"no sign change of the frequency equation between {a!r} and {b!r}")
    while True:
        m = 0.5 * (a + b)
        if not a < m < b:
            return a if abs(fa) <= abs(fb) else b
        fm = float(g(m))
        if fm == 0.0:
            return m
        if (fm < 0.0) == (fa < 0.0):
            a, fa = m, fm
        else:
            b, fb = m, fm


def _hyperbolic(beta, scaled):
    """(cosh, sinh, 1), optionally all multiplied by 2 exp(-beta) so nothing overflows."""
    beta = np.asarray(beta, dtype=float)
    if not scaled:
        return np.cosh(beta), np.sinh(beta), np.ones_like(beta)
    e2 = np.exp(-2.0 * beta)
    return 1.0 + e2, 1.0 - e2, 2.0 * np.exp(-beta)


def frequency_equation(beta, M=0.0, J=0.0, D=0.0, scaled=False):
    """Clamped-mass frequency function f(beta, M, J, D) of 004 eq. (38); roots are the beta_i.

    ``scaled=True`` returns ``2 exp(-beta) f`` (same roots and signs, no overflow for large beta).
    """
    ch, sh, one = _hyperbolic(beta, scaled)
    b = np.asarray(beta, dtype=float)
    co, si = np.cos(b), np.sin(b)
    return (
        (one + ch * co)
        - M * b * (ch * si - sh * co)
        - J * b**3 * (ch * si + sh * co)
        + (M * J - D**2) * b**4 * (one - ch * co)
        - 2.0 * D * b**2 * sh * si
    )


def frequency_equation_partials(beta, M=0.0, J=0.0, D=0.0, scaled=False):
    """Partial derivatives (df/dbeta, df/dM, df/dJ, df/dD) of 004 eqs. (41)-(44).

    ``scaled=True`` multiplies all four by ``2 exp(-beta)`` (ratios unchanged).
    """
    ch, sh, one = _hyperbolic(beta, scaled)
    b = np.asarray(beta, dtype=float)
    co, si = np.cos(b), np.sin(b)
    g = D**2 - M * J
    f_beta = (
        sh * co * (1.0 + M - b**2 * (2.0 * D + 3.0 * J) + b**4 * g)
        - ch * si * (1.0 + M + b**2 * (2.0 * D + 3.0 * J) + b**4 * g)
        - 2.0 * b**3 * ch * co * (J - 2.0 * g)
        - 2.0 * b * sh * si * (M + 2.0 * D)
        - 4.0 * b**3 * g * one
    )
    f_M = b * (sh * co - ch * si + b**3 * J * (one - ch * co))
    f_J = -(b**3) * (sh * co + ch * si - b * M * (one - ch * co))
    f_D = -2.0 * b**2 * (sh * si + b**2 * D * (one - ch * co))
    return f_beta, f_M, f_J, f_D


def beta_rate(beta, M, J, D, dM=0.0, dJ=0.0, dD=0.0):
    """d beta / dt of a root that follows time-varying tip loads (004 eq. 40)."""
    f_b, f_M, f_J, f_D = frequency_equation_partials(beta, M, J, D, scaled=True)
    return -(f_M * dM + f_J * dJ + f_D * dD) / f_b


def check_loads(M, J, D):
    """Refuse nondimensional tip loads that are not a physical body (M, J >= 0, M J >= D**2)."""
    if M < 0 or J < 0 or M * J - D**2 < -1e-12 * max(1.0, M * J):
        raise ValueError(
            f"tip loads must satisfy M >= 0, J >= 0 and M*J >= D**2 (got M={M}, J={J}, D={D})"
        )


def _clamped_free_scaled(b: float) -> float:
    """``frequency_equation(b, scaled=True)`` of the clamped-free beam for one float, with the
    math module (the bisection calls it about 60 times per root; NumPy's per-call overhead
    made that most of a small arm's model build)."""
    e2 = math.exp(-2.0 * b)
    return 2.0 * math.exp(-b) + (1.0 + e2) * math.cos(b)


def clamped_free_roots(n: int) -> np.ndarray:
    """First n roots of cos(b) cosh(b) + 1 = 0; root k lies in ((k-1) pi, k pi)."""
    return np.array(_clamped_free_roots(int(n)))


@functools.lru_cache(maxsize=None)
def _clamped_free_roots(n: int) -> tuple:
    return tuple(bracketed_root(_clamped_free_scaled, (k - 1) * np.pi, k * np.pi) for k in range(1, n + 1))


def clamped_mass_roots(n: int, M=0.0, J=0.0, D=0.0) -> np.ndarray:
    """First n positive roots of the clamped-mass frequency equation (004 eq. 11).

    Sign changes of the scaled residual are bracketed on a fine grid, then refined by bisection.
    """
    check_loads(M, J, D)
    if M == 0.0 and J == 0.0 and D == 0.0:
        return clamped_free_roots(n)
    g = lambda b: frequency_equation(b, M, J, D, scaled=True)  # noqa: E731
    if not all(np.isfinite([M, J, D])):
        raise ValueError(f"tip loads must be finite (got M={M}, J={J}, D={D})")
    step = 0.005
    hi = (n + 2) * np.pi
    for _ in range(8):  # root k lies below (k + 1) pi for finite loads; a few widenings at most
        grid = np.arange(1e-9, hi, step)
        val = g(grid)
        idx = np.flatnonzero(np.sign(val[:-1]) * np.sign(val[1:]) <= 0)
        if len(idx) >= n:
            break
        hi *= 1.5
    else:
        raise ValueError(f"found only {len(idx)} of {n} roots of the frequency equation below beta = {hi:g} "
                         f"(tip loads M={M}, J={J}, D={D})")
    return np.array(
        [bracketed_root(g, grid[i], grid[i + 1]) for i in idx[:n]]
    )


def torsion_roots(n: int, J=0.0) -> np.ndarray:
    """First n roots of cos(b) = J b sin(b) (clamped root, tip polar inertia J = J_L / (j L)).

    From GJ theta'(L) = J_L omega**2 theta(L) with theta = sin(b x / L), omega**2 = GJ b**2 / (j L**2).
    Root k lies in ((k-1) pi, (k-1/2) pi]; J = 0 gives (2k-1) pi / 2.
    """
    if J < 0:
        raise ValueError(f"torsion tip inertia ratio must be >= 0 (got {J})")
    k = np.arange(1, n + 1)
    if J == 0.0:
        return (2 * k - 1) * np.pi / 2
    g = lambda b: np.cos(b) - J * b * np.sin(b)  # noqa: E731
    return np.array([bracketed_root(g, (i - 1) * np.pi, (i - 0.5) * np.pi) for i in k])


def exact_frequencies(n: int, EI, mu, L, M=0.0, J=0.0, D=0.0) -> np.ndarray:
    """Exact bending natural frequencies (rad/s): beta_k**2 sqrt(EI / (mu L**4))."""
    return clamped_mass_roots(n, M, J, D) ** 2 * np.sqrt(EI / (mu * L**4))
