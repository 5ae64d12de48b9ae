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

:func:`simulate_with_beta` goes one step further, as 004 proposes: the beta_i become extra
states integrated together with the equations of motion of the arm, and at every evaluation
of the right-hand side the sliding link's clamped-mass shapes are rebuilt from the current
beta (no root finding) and the current length. This is 004's model, and it is *not* an
energy-conserving one: within each evaluation the shapes are frozen, so the kinetic energy
misses the terms of d psi/dt (the shapes change with l through beta and M, J, D, but only
the change of l at fixed shapes, the stretch of the SlidingBeam, is in the kinetic energy).
The modal coordinates are kept as they are across shape updates: they are the amplitudes of
whatever shapes are current. The accelerations are Lagrange's for L(q, qd; p) with the shape
parameters p = (beta, M, J, D) held at their current values, so in free, undamped motion the
energy E = T + V evaluated with the current shapes changes at exactly the rate
``dE/dt = sum_j dE/dp_j (q, qd fixed) * dp_j/dt`` (torques and damping add their power):
zero while l is constant, about 0.2 % of E over a 0.3 s free slide of the theodore_rrp boom
from 0.3 to 0.68 m (tests/test_beta_coupled.py checks this rate).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..discretize import beta_rate, clamped_mass_roots
from ..discretize.shapes import BendingModes
from ..simulate.run import integrate, prepare
from ..simulate.result import Result

__all__ = ["BetaTrajectory", "BetaResult", "GivenRootModes", "SlidingLinkShapes", "beta_ode", "link_beta_ode",
           "clamped_mass_shapes", "simulate_with_beta"]


class GivenRootModes(BendingModes):
    """Clamped-mass bending eigenfunctions (004 eqs. 9-10) for given eigenvalues beta.

    Same evaluation, normalization (int psi**2 d eta = 1) and sign (psi(1) > 0) as
    ``shape_set('clamped_mass', 'bending', n, M=, J=, D=)``, but the roots are taken as given
    instead of being found from the frequency equation: the caller keeps them on the roots
    (e.g. by integrating 004 eq. 40).
    """

    def __init__(self, beta, M=0.0, J=0.0, D=0.0):
        beta = np.atleast_1d(np.asarray(beta, dtype=float))
        super().__init__(beta.size, M, J, D, beta=beta)


def clamped_mass_shapes(beta, M=0.0, J=0.0, D=0.0) -> GivenRootModes:
    """The clamped-mass bending shape set for roots ``beta`` of the frequency equation at the
    tip loads (M, J, D) (004 eq. 11), built without root finding."""
    return GivenRootModes(beta, M, J, D)


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
        return _frequencies(self.beta, EI, mass_per_length, self.length[:, None])

    def shapes(self, k) -> GivenRootModes:
        """The clamped-mass mode shapes (004 eq. 9, in eta = x / l) at output time k, built from
        the integrated beta (no root finding)."""
        return clamped_mass_shapes(self.beta[k], self.M[k], self.J[k], self.D[k])


def _loads(l, mu, m_p, J_p, s_p):
    """Nondimensional tip loads (M, J, D) of 004 eq. 11 at free length l."""
    return m_p / (mu * l), J_p / (mu * l**3), s_p / (mu * l**2)


def _beta_rate(beta, M, J, D, rate):
    """004 eq. (40) with the loads of a tip body on a beam of changing length, rate = l'/l:
    dM/dt = -M rate, dJ/dt = -3 J rate, dD/dt = -2 D rate."""
    return beta_rate(beta, M, J, D, dM=-M * rate, dJ=-3.0 * J * rate, dD=-2.0 * D * rate)


def _frequencies(beta, EI, mu, l):
    """Clamped-mass beam frequencies (rad/s): beta**2 sqrt(EI/(mu l**4))."""
    return beta**2 * np.sqrt(EI / (mu * l**4))


def _tip_bodies(robot, link):
    """direction -> (mass, inertia about the bending axis, first moment) of the body beyond
    the tip of a prismatic link (the one the model uses at q = 0; constant along a move)."""
    from ..dynamics.structure import distal_loads

    mu, L0 = robot.links[link].beam.mass_per_length, robot.links[link].d  # the length distal_loads scales by
    loads = distal_loads(robot, link)
    return {d: (M0 * mu * L0, J0 * mu * L0**3, D0 * mu * L0**2) for d in ("y", "z") for M0, J0, D0 in [loads[d]]}


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
        return _beta_rate(beta, *_loads(l, mu, m_p, J_p, s_p), dl / l)

    l0 = float(length(times[0])[0])
    beta0 = clamped_mass_roots(n, *_loads(l0, mu, m_p, J_p, s_p))
    from scipy.integrate import solve_ivp  # here: importing flexman.analysis must not cost a short run's time

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
    lk = robot.links[link]
    if lk.joint != "prismatic" or lk.beam is None:
        raise ValueError(f"link_beta_ode: link {link} is not a flexible prismatic link")
    m, j, s = _tip_bodies(robot, link)[direction]

    def length(t):
        q, qd, _ = traj(t)
        return lk.d + q[link], qd[link]

    return beta_ode(length, times, n=lk.beam.modes[direction], mass_per_length=lk.beam.mass_per_length,
                    payload_mass=m, payload_inertia=j, payload_first_moment=s, **kwargs)


# ----- 004 sec. 4.2: beta integrated with the equations of motion ---------------------------
class SlidingLinkShapes:
    """The clamped-mass shapes of one sliding (prismatic) flexible link as functions of its
    free length l = q_link + offset and of its eigenvalues beta.

    The body beyond the tip (the link's own body, distal links, payload) is the one the model
    uses at q = 0 (:func:`~flexman.dynamics.structure.distal_loads`); its mass, inertia about
    the bending axis and first moment are constant, so ``M = m/(mu l)``, ``J = J/(mu l**3)``,
    ``D = s/(mu l**2)``. ``beta`` is ordered as the link's flexible coordinates (the y modes,
    then the z modes).
    """

    def __init__(self, robot, link):
        lk = robot.links[link]
        if lk.joint != "prismatic" or not lk.is_flexible or lk.beam.shapes != "clamped_mass":
            raise ValueError(f"link {link}: not a flexible prismatic link with clamped_mass shapes")
        bm = lk.beam
        self.robot, self.link, self.beam = robot, link, bm
        from ..dynamics.structure import numeric_model

        self.base = numeric_model(robot)
        self.offset = float(self.base.links[link].offset)
        self.mu = bm.mass_per_length
        self.directions = [d for d in ("y", "z") if bm.modes[d]]
        self.counts = [bm.modes[d] for d in self.directions]
        bodies = _tip_bodies(robot, link)
        self.tip = {d: bodies[d] for d in self.directions}  # (mass, inertia about the bending axis, first moment)
        self.EI = {"y": bm.EI[0], "z": bm.EI[1]}
        self.n = sum(self.counts)

    def _slices(self):
        start = 0
        for d, n in zip(self.directions, self.counts):
            yield d, slice(start, start + n)
            start += n

    def length(self, q):
        l = self.offset + float(q[self.link])
        if not l > 0.0:
            raise ValueError(f"simulate_with_beta: the free length of link {self.link} is {l:g} m (must be > 0)")
        return l

    def loads(self, l):
        """direction -> (M, J, D) at free length l."""
        return {d: _loads(l, self.mu, *body) for d, body in self.tip.items()}

    def initial_beta(self, l):
        loads = self.loads(l)
        return np.concatenate([clamped_mass_roots(n, *loads[d]) for d, n in zip(self.directions, self.counts)])

    def beta_rate(self, beta, l, ldot):
        """004 eq. (40) with dM/dt = -M l'/l, dJ/dt = -3 J l'/l, dD/dt = -2 D l'/l."""
        out = np.empty_like(beta)
        loads = self.loads(l)
        for d, sl in self._slices():
            out[sl] = _beta_rate(beta[sl], *loads[d], ldot / l)
        return out

    def frequencies(self, beta, l):
        """Clamped-mass beam frequencies (rad/s) beta**2 sqrt(EI/(mu l**4)), per mode."""
        ei = np.concatenate([np.full(n, self.EI[d]) for d, n in zip(self.directions, self.counts)])
        return _frequencies(beta, ei, self.mu, l)

    def shapes(self, beta, l):
        """direction -> clamped-mass shape set built from beta at the loads of length l."""
        loads = self.loads(l)
        return {d: clamped_mass_shapes(beta[sl], *loads[d]) for d, sl in self._slices()}

    def robot_with(self, beta, l):
        """A copy of the robot whose sliding link uses the shapes of (beta, l); its other links,
        and everything else of the model, are shared with the original."""
        return self.robot_with_sets(self.shapes(beta, l))

    def robot_with_sets(self, sets):
        """A copy of the robot whose sliding link uses the given shape sets (direction -> set)."""
        from ..dynamics.beams import SlidingBeam

        beam = SlidingBeam.from_beam(self.beam, sets, self.offset)
        links = list(self.base.links)
        links[self.link] = dataclasses.replace(links[self.link], beam=beam)
        return self.robot.with_derived("numeric_model", dataclasses.replace(self.base, links=links))


@dataclass
class BetaResult(Result):
    """A :class:`~flexman.simulate.Result` with the sliding link's eigenvalues along the run.

    ``beta`` (N, n_modes): the integrated roots, in the order of the link's flexible
    coordinates (y modes, then z); ``length`` (N,): its free length; ``frequencies``
    (N, n_modes): clamped-mass beam frequencies beta**2 sqrt(EI/(mu l**4)) in rad/s;
    ``energy``: T + V evaluated with the shapes current at each sample (not conserved even
    without forcing: see :func:`simulate_with_beta`).
    """

    link: int = -1
    beta: np.ndarray = None
    length: np.ndarray = None
    frequencies: np.ndarray = None
    sliding: SlidingLinkShapes = None

    def shapes(self, k):
        """direction -> the clamped-mass shape set used at output sample k."""
        return self.sliding.shapes(self.beta[k], self.length[k])

    def robot_at(self, k):
        """The robot with the shapes of output sample k (for frames, Jacobians, energies)."""
        return self.sliding.robot_with(self.beta[k], self.length[k])


def _find_sliding_link(robot):
    found = [i for i, lk in enumerate(robot.links)
             if lk.joint == "prismatic" and lk.is_flexible and lk.beam.shapes == "clamped_mass"]
    if len(found) != 1:
        raise ValueError("simulate_with_beta: give link= (found "
                         f"{len(found)} flexible prismatic links with clamped_mass shapes)")
    return found[0]


def simulate_with_beta(robot, t_final, link=None, dt=1e-3, method="rk4", controller=None, torque=None,
                       q0=None, qd0=None, rtol=1e-8, atol=1e-10, max_step=np.inf) -> BetaResult:
    """Simulate an arm whose sliding clamped-mass link keeps the mode shapes of its current
    length (004 sec. 4.2): the eigenvalues beta_i are integrated with eq. (40) together with
    the equations of motion.

    State ``[q, qd, z, beta]`` (z: controller states). At every right-hand-side evaluation the
    link's shapes are built from the current beta and the tip loads M, J, D of the current
    length l = q[link] + d (no root finding), and the arm's forward dynamics use them; beta(0)
    solves the frequency equation at l(0). The modal coordinates are amplitudes of the current
    shapes and stay continuous when the shapes change.

    Frozen shapes, as in 004: d psi/dt is not in the kinetic energy, so E = T + V is not
    conserved in free motion while the link slides (it is when l is constant); the module
    notes give its rate. Arguments as :func:`flexman.simulate` (``method``: 'rk4' at ``dt``
    or a ``solve_ivp`` method; ``controller``: callable or object with states; it sees only
    (t, q, qd[, z]) and keeps whatever model it was built with). ``link``: index of the sliding
    link (found automatically when there is exactly one). Returns a :class:`BetaResult`.
    """
    method, q0, qd0, t_grid, applied, (n_z, z0, ctrl_torque, ctrl_deriv) = prepare(
        robot, t_final, dt, method, q0, qd0, torque, controller)
    link = _find_sliding_link(robot) if link is None else int(link) % robot.n_joints
    sliding = SlidingLinkShapes(robot, link)
    nq, nj, nb = robot.nq, robot.n_joints, sliding.n
    iz, ib = slice(2 * nq, 2 * nq + n_z), slice(2 * nq + n_z, 2 * nq + n_z + nb)

    def total_torque(t, x):
        q, qd = x[:nq], x[nq:2 * nq]
        return applied(t, q, qd) + np.asarray(ctrl_torque(t, q, qd, x[iz]), dtype=float)

    def rates(t, x, tau):
        q, qd, beta = x[:nq], x[nq:2 * nq], x[ib]
        l = sliding.length(q)
        z_rate = ctrl_deriv(t, q, qd, x[iz]) if n_z else x[iz]
        return (sliding.robot_with(beta, l).forward_dynamics(q, qd, tau),
                np.concatenate([z_rate, sliding.beta_rate(beta, l, float(qd[link]))]))

    x0 = np.concatenate([q0, qd0, z0, sliding.initial_beta(sliding.length(q0))])
    t_out, X, taus, stats = integrate("simulate_with_beta", rates, total_torque, x0, t_grid, nq, nj, method, rtol,
                                      atol, max_step)
    q, qd, beta = X[:, :nq], X[:, nq:2 * nq], X[:, ib]
    length = sliding.offset + q[:, link]
    energy = np.array([float(r.kinetic_energy(qk, qdk) + r.potential_energy(qk))
                       for qk, qdk, r in ((q[k], qd[k], sliding.robot_with(beta[k], length[k]))
                                          for k in range(len(t_out)))])
    freqs = np.array([sliding.frequencies(b, l) for b, l in zip(beta, length)]).reshape(len(t_out), nb)
    return BetaResult(t=np.asarray(t_out), q=q, qd=qd, tau=taus, energy=energy, robot=robot, method=method,
                      stats=stats, controller_state=X[:, iz], controller=controller, link=link, beta=beta,
                      length=length, frequencies=freqs, sliding=sliding)
