"""Time-dependent clamped-mass eigenvalues of a sliding (prismatic) beam (004 sec. 4.2).

A beam that slides through its joint hub has a free length l(t); its tip loads in 004 eq. (11),
``M = m_p / (mu l)``, ``J = J_p / (mu l**3)``, ``D = s_p / (mu l**2)`` (payload mass, inertia
about the bending axis through the beam end, first moment along the beam), change with l,
and so do the roots beta_i of the frequency equation f(beta, M, J, D) = 0 (eq. 38). Rather than
re-solving (38) at every step, 004 differentiates it in time (eqs. 39-40):
``d beta_i/dt = -(f_M dM/dt + f_J dJ/dt + f_D dD/dt) / f_beta``, with
``dM/dt = -M l'/l``, ``dJ/dt = -3 J l'/l``, ``dD/dt = -2 D l'/l``.
With J = D = 0 this is 004 eqs. (45)-(47), where (47) must read ``1 + m_p/(rho A l)``:
f_beta at J = D = 0 is ``(1 + M)(sinh cos - cosh sin) - 2 M beta sinh sin`` (the printed
m_p**2 is a typo).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ..discretize import beta_rate, clamped_mass_roots
from ..discretize.shapes import BendingModes, ShapeSet, _oscillatory_rule

__all__ = ["BetaTrajectory", "beta_ode", "link_beta_ode"]


@dataclass
class BetaTrajectory:
    """t (N,), length l(t) (N,), tip loads M, J, D (N,) and the eigenvalues beta (N, n)."""

    t: np.ndarray
    length: np.ndarray
    M: np.ndarray
    J: np.ndarray
    D: np.ndarray
    beta: np.ndarray

    def frequencies(self, EI, mass_per_length):
        """Natural frequencies (rad/s) of the clamped beam with its tip body: beta**2 sqrt(EI/(mu l**4))."""
        return self.beta**2 * np.sqrt(EI / (mass_per_length * self.length[:, None] ** 4))

    def shapes(self, k) -> ShapeSet:
        """The clamped-mass mode shapes (004 eq. 9, in eta = x / l) at output time k, built from
        the integrated beta (no root finding)."""
        ss = BendingModes.__new__(BendingModes)
        ShapeSet.__init__(ss, self.beta.shape[1])
        ss.M, ss.J, ss.D = float(self.M[k]), float(self.J[k]), float(self.D[k])
        ss.kind = "clamped_mass"
        ss.beta = np.array(self.beta[k], dtype=float)
        ss._nodes, ss._weights = _oscillatory_rule(ss.beta.max())
        ss.coef = np.array([ss._coefficients(b) for b in ss.beta]).reshape(ss.n, 4)
        return ss


def _loads(l, mu, m_p, J_p, s_p):
    return m_p / (mu * l), J_p / (mu * l**3), s_p / (mu * l**2)


def beta_ode(length, times, n=2, mass_per_length=1.0, payload_mass=0.0, payload_inertia=0.0,
             payload_first_moment=0.0, rtol=1e-12, atol=1e-12):
    """Integrate 004 eq. (40) for the first n roots along a prescribed free length.

    ``length(t) -> (l, dl/dt)``; ``times``: output times (the first is the initial time, where
    beta is found from the frequency equation). Returns a :class:`BetaTrajectory`.
    """
    times = np.asarray(times, dtype=float)
    mu, m_p, J_p, s_p = float(mass_per_length), float(payload_mass), float(payload_inertia), float(payload_first_moment)

    def rhs(t, beta):
        l, dl = (float(v) for v in length(t))
        M, J, D = _loads(l, mu, m_p, J_p, s_p)
        rate = dl / l
        return beta_rate(beta, M, J, D, dM=-M * rate, dJ=-3.0 * J * rate, dD=-2.0 * D * rate)

    l0 = float(length(times[0])[0])
    beta0 = clamped_mass_roots(n, *_loads(l0, mu, m_p, J_p, s_p))
    sol = solve_ivp(rhs, (times[0], times[-1]), beta0, method="DOP853", t_eval=times, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"beta_ode: integration failed: {sol.message}")
    l = np.array([float(length(t)[0]) for t in times])
    M, J, D = _loads(l, mu, m_p, J_p, s_p)
    return BetaTrajectory(t=times, length=l, M=M, J=J, D=D, beta=sol.y.T)


def link_beta_ode(robot, link, traj, times, direction="y", **kwargs):
    """:func:`beta_ode` for a robot's prismatic flexible link along a joint trajectory.

    The free length is ``d + q`` (DH offset plus joint variable); the tip loads are those the
    model uses for its clamped-mass shapes at q = 0 (everything beyond the tip: distal links,
    payload), scaled with the length. ``traj(t) -> (q, qd, qdd)`` of all joints.
    """
    from ..dynamics.structure import _distal_loads

    lk = robot.links[link]
    if lk.joint != "prismatic" or lk.beam is None:
        raise ValueError(f"link_beta_ode: link {link} is not a flexible prismatic link")
    mu, L0 = lk.beam.mass_per_length, lk.d
    M0, J0, D0 = _distal_loads(robot, link)[direction]
    n = lk.beam.modes[direction]

    def length(t):
        q, qd, _ = traj(t)
        return lk.d + q[link], qd[link]

    return beta_ode(length, times, n=n, mass_per_length=mu, payload_mass=M0 * mu * L0,
                    payload_inertia=J0 * mu * L0**3, payload_first_moment=D0 * mu * L0**2, **kwargs)
