"""Reduced models: flexible coordinates far above every bandwidth replaced by their quasi-static
deflection (the static correction of modal truncation), ``fm.reduce(robot, above_hz=500)``.

Why: a short, stiff link has bending modes of kilohertz. Nothing in a controller or a sensor sees
them, but they set the step of an explicit integrator. Dropping them outright (truncation) loses
their static share of the deflection; slaving them keeps it.

The coordinates are split into q = [q_a, q_d]: q_a the joints, motors and kept flexible
coordinates, q_d the dropped flexible ones. With the inertia and rates of q_d neglected
(``qd_d = qdd_d = 0``, the zeroth order of a singular perturbation), the dropped rows of
``M(q) qdd + b(q, qd) = S tau`` become algebraic:

    active rows:   M_aa(q) qdd_a + b_a(q, qd) = (S tau)_a
    dropped rows:  M_da(q) qdd_a + b_d(q, qd) = (S tau)_d        (b_d holds K_dd q_d, gravity, inertial loads)

with ``q = (q_a, q_d)`` and ``qd = (qd_a, 0)``. They are solved together by a Newton-like
iteration on q_d with a constant matrix J = K_dd - M_da M_aa^-1 K_ad (elastic stiffness and
mass at rest; J = K_dd for modes that the elastic stiffness does not couple), warm-started from
the last solution: ``qdd_a`` from the active rows at the current q_d, then
``q_d <- q_d - J^-1 (M_da qdd_a + b_d - (S tau)_d)``. The residual depends on q_d mainly through
``K_dd q_d``, so each step shrinks the error by about the ratio of the other loads' stiffness
to the dropped modes' (1e-3 and less when the modes are far above the motion). The dropped
coordinates are outputs: frames, tip deflections and strains see them.

Which coordinates: those whose mode frequency is above ``above_hz``. A coordinate's frequency is
the Rayleigh quotient of its shape alone, ``sqrt(K_ii / Mt_ii)`` at q = 0: the other flexible
coordinates held, the joints free as the arm's own modes have them (``Mt`` is the flexible mass
with the joints eliminated). With the joints held instead, a ``clamped_mass`` shape would be an
exact mode of its beam clamped at the root with what it carries; but a light wrist behind a
stiff forearm turns with the beam's tip, and the kilohertz modes of a real arm are exactly those
(docs/stiff.md). Finite elements (nodal values, not modes) and sliding beams (their modes change
with the extension) are refused. Any coordinate list can be given by name instead
(``coordinates=[...]``).
"""
from __future__ import annotations

import copy

import numpy as np

from ..model import inputs
from ..model.robot import CoordinateSlices
from ..simulate.backend import mass_and_bias
from .frequencies import stiffness

TOL = 1e-10          # the iteration stops when q_d's update is below this fraction of q_d (norms)
ABS_FLOOR = 1e-15    # ... or below this absolute size (an undeflected arm)
ITERATIONS = 50


def _refuse_beams(robot):
    """One line for beams whose coordinates cannot be dropped (finite elements, sliding beams)."""
    for i, link in enumerate(robot.links):
        if link.beam is None or link.beam.nf == 0:
            continue
        if link.beam.shapes == "finite_elements":
            raise ValueError(f"links[{i}].beam: finite-element coordinates are nodal deflections and slopes, not "
                             "modes, so none can be dropped as a mode; use assumed modes (shapes: clamped_mass) "
                             "to reduce this model")
        if link.joint == "prismatic":
            raise ValueError(f"links[{i}].beam: a sliding beam's modes change with its extension, so no fixed set of "
                             "its coordinates can be dropped; reduction applies to revolute flexible links")


def mode_frequencies(robot) -> np.ndarray:
    """The frequency (rad/s) of every flexible coordinate of ``robot`` (nf,): ``sqrt(K_ii / Mt_ii)``
    at q = 0, the coordinate alone with the other flexible coordinates held and the joints (and
    motors) free, ``Mt = M_ff - M_fr M_rr^-1 M_rf`` (module docstring). One line for coordinates
    that are no modes (finite elements, sliding beams)."""
    if robot.nf == 0:
        raise ValueError(f"robot '{robot.name}' has no flexible coordinates, so there are no modes to drop")
    _refuse_beams(robot)
    q0 = np.zeros(robot.nq)
    M = np.asarray(robot.mass_matrix(q0), dtype=float)
    K = stiffness(robot, q0, gravity=False)
    F = list(range(robot.flex_index.start, robot.flex_index.stop))
    R = [k for k in range(robot.nq) if k not in F]  # joints and motors: free
    Mt = M[np.ix_(F, F)] - M[np.ix_(F, R)] @ np.linalg.solve(M[np.ix_(R, R)], M[np.ix_(R, F)])
    return np.sqrt(np.clip(np.diag(K)[F], 0.0, None) / np.diag(Mt))


def _cutoff(above_hz) -> float:
    try:
        value = float(above_hz)
    except (TypeError, ValueError):
        value = np.nan
    if isinstance(above_hz, bool) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"above_hz: expected a frequency in Hz, a finite number > 0 (got {above_hz!r:.40}); "
                         "e.g. fm.reduce(robot, above_hz=500)")
    return value


def reduce(robot, above_hz=None, coordinates=None, static=True) -> "Reduced":
    """The model of ``robot`` with the flexible coordinates whose mode frequency is above
    ``above_hz`` (Hz), or those named in ``coordinates``, slaved to their quasi-static deflection
    (module docstring). ``static=False``: dropped outright (plain modal truncation, q_d = 0), to
    measure what the static correction is worth. One line for a cutoff that is not a positive
    number or that drops nothing or every flexible coordinate."""
    if not (hasattr(robot, "nq") and hasattr(robot, "flex_index")) or getattr(robot, "is_reduced", False):
        raise ValueError(f"reduce: expected a Robot (got {type(robot).__name__}); reduce the full robot once")
    if (above_hz is None) == (coordinates is None):
        raise ValueError("reduce: give either above_hz (a cutoff in Hz) or coordinates (names of flexible "
                         "coordinates to drop), not both or neither")
    names = list(robot.coordinate_names)
    flex = list(range(robot.flex_index.start, robot.flex_index.stop))
    if above_hz is not None:
        cutoff = _cutoff(above_hz)
        w = mode_frequencies(robot) / (2 * np.pi)
        dropped = [k for k, f in zip(flex, w) if f > cutoff]
        if not dropped:
            raise ValueError(f"above_hz: no flexible coordinate of '{robot.name}' has a mode above {cutoff:g} Hz (the "
                             f"highest is {w.max():.4g} Hz), so nothing would be dropped; give a lower cutoff")
        if len(dropped) == len(flex):
            raise ValueError(f"above_hz: every flexible coordinate of '{robot.name}' has its mode above {cutoff:g} Hz "
                             f"(the lowest is {w.min():.4g} Hz), so no beam would vibrate; give a higher cutoff, or "
                             "use fm.analysis.quasi_static_along for the deflection of a rigid motion")
    else:
        _refuse_beams(robot)
        cutoff = None
        given = [coordinates] if isinstance(coordinates, str) else list(coordinates)
        dropped = []
        for name in given:
            if name not in names or names.index(name) not in flex:
                raise ValueError(f"coordinates: '{name!s:.40}' is no flexible coordinate of '{robot.name}'; use names "
                                 f"from {', '.join(names[k] for k in flex)}")
            dropped.append(names.index(name))
        if not dropped or len(set(dropped)) == len(flex):
            raise ValueError("coordinates: name at least one flexible coordinate to drop and keep at least one "
                             f"(the flexible coordinates are {', '.join(names[k] for k in flex)})")
    return Reduced(robot, sorted(set(dropped)), static, cutoff)


class Reduced(CoordinateSlices):
    """A robot with some flexible coordinates slaved to their quasi-static deflection (see
    :func:`reduce`). Its coordinates are the active ones (joints, kept flexible coordinates,
    motors, in the robot's order): ``nq``, ``coordinate_names``, ``forward_dynamics(q, qd, tau)``
    work on them; ``full_state`` gives the robot's full coordinates. ``fm.simulate`` runs it
    (the result holds the full coordinates and the full robot), ``fm.analysis.natural_frequencies``
    linearizes it. ``robot``: the full robot; ``dropped``: the dropped coordinates' indices."""

    is_reduced = True
    tol, floor, max_iterations = TOL, ABS_FLOOR, ITERATIONS  # the iteration's (the compiled loop's too)

    def __init__(self, robot, dropped, static=True, above_hz=None):
        self.robot, self.static, self.above_hz = robot, bool(static), above_hz
        self.dropped = tuple(int(k) for k in dropped)
        self.active = tuple(k for k in range(robot.nq) if k not in self.dropped)
        self.name = robot.name
        self.terms = None  # evaluates M and b: the robot's compiled model when built (found on first use)
        a, d = list(self.active), list(self.dropped)
        q0 = np.zeros(robot.nq)
        M = np.asarray(robot.mass_matrix(q0), dtype=float)
        K = stiffness(robot, q0, gravity=False)
        coupled = M[np.ix_(d, a)] @ np.linalg.solve(M[np.ix_(a, a)], K[np.ix_(a, d)])
        self.newton_matrix = np.linalg.inv(K[np.ix_(d, d)] - coupled)  # J^-1 of the iteration (module doc)
        S = np.zeros((robot.nq, robot.n_joints))
        S[list(robot.actuated), range(robot.n_joints)] = 1.0
        self._S = S
        self.warm_start = np.zeros(len(d))  # the last converged q_d, where the next solve starts
        self.iterations = 0  # iterations of the last solve (its largest over a batch)

    def __repr__(self):
        kind = "slaved quasi-statically" if self.static else "truncated"
        cut = f" above {self.above_hz:g} Hz" if self.above_hz is not None else ""
        return (f"<Reduced {self.name!r}: nq = {self.nq} of {self.robot.nq}; {len(self.dropped)} flexible coordinates"
                f"{cut} {kind} ({', '.join(self.dropped_names)})>")

    # ----- coordinates -----------------------------------------------------------------
    @property
    def nq(self) -> int:
        return len(self.active)

    @property
    def n_joints(self) -> int:
        return self.robot.n_joints

    @property
    def nf(self) -> int:
        return self.robot.nf - len(self.dropped)

    @property
    def n_motors(self) -> int:
        return self.robot.n_motors

    @property
    def actuated(self) -> tuple:
        return tuple(self.active.index(k) for k in self.robot.actuated)

    @property
    def coordinate_names(self) -> list:
        names = self.robot.coordinate_names
        return [names[k] for k in self.active]

    @property
    def dropped_names(self) -> list:
        names = self.robot.coordinate_names
        return [names[k] for k in self.dropped]

    @property
    def links(self):
        return self.robot.links

    def content_key(self) -> tuple:
        return self.robot.content_key() + (("reduced", self.dropped, self.static),)

    def derived(self, what, build):
        """``build(self)`` cached on the full robot for its content and this reduction."""
        return self.robot.derived(("reduced", self.dropped, self.static, what), lambda _: build(self))

    def using(self, model):
        """This reduction evaluating M and b with ``model`` (the robot's compiled model): a copy."""
        twin = copy.copy(self)
        twin.terms = model
        twin.warm_start = self.warm_start.copy()
        return twin

    def _terms(self):
        if self.terms is None:
            from ..control import model_terms

            self.terms = model_terms(self.robot)
        return self.terms

    # ----- the slaved solution ------------------------------------------------------------
    def _full(self, q_a, q_d):
        q = np.zeros(q_a.shape[:-1] + (self.robot.nq,))
        q[..., list(self.active)] = q_a
        q[..., list(self.dropped)] = q_d
        return q

    def solve(self, q, qd, tau=None, qdd=None):
        """(q_full, qd_full, qdd_a, tau) at the active state (q, qd), (..., nq) each: the dropped
        coordinates solved with the active accelerations, either under the joint torques ``tau``
        (an array, or a function ``tau(q_full, qd_full)`` evaluated at every iteration, e.g. a
        controller reading the deflections) or for given active accelerations ``qdd`` (then the
        last entry is the active generalized forces, M_aa qdd + b_a). Refused in one line when the
        iteration does not converge."""
        a, d = list(self.active), list(self.dropped)
        q_a = np.asarray(q, dtype=float)
        batch = q_a.shape[:-1]
        q_d = np.broadcast_to(self.warm_start if self.static else 0.0, batch + (len(d),)).copy()
        qd_full = self._full(np.broadcast_to(np.asarray(qd, dtype=float), q_a.shape), np.zeros(batch + (len(d),)))
        terms = self._terms()
        for k in range(1, self.max_iterations + 1):
            q_full = self._full(q_a, q_d)
            M, b = mass_and_bias(terms, q_full, qd_full)
            M, b = np.asarray(M, dtype=float), np.asarray(b, dtype=float)
            if qdd is None:
                load = np.asarray(tau(q_full, qd_full) if callable(tau) else tau, dtype=float)
                f = load @ self._S.T - b
                acc = np.linalg.solve(M[..., a, :][..., :, a], f[..., a, None])[..., 0]
                out = load
                residual = (M[..., d, :][..., :, a] @ acc[..., None])[..., 0] - f[..., d]
            else:
                acc = np.broadcast_to(np.asarray(qdd, dtype=float), q_a.shape)
                out = (M[..., a, :][..., :, a] @ acc[..., None])[..., 0] + b[..., a]
                residual = (M[..., d, :][..., :, a] @ acc[..., None])[..., 0] + b[..., d]
            if not self.static:
                self.iterations = k
                return q_full, qd_full, acc, out
            step = residual @ self.newton_matrix.T
            q_d = q_d - step
            size = np.linalg.norm(np.atleast_2d(step), axis=-1)
            if np.all(size <= self.tol * np.linalg.norm(np.atleast_2d(q_d), axis=-1) + self.floor):
                self.iterations = k
                if not batch:
                    self.warm_start[:] = q_d  # in place: the compiled loop holds this array
                return self._full(q_a, q_d), qd_full, acc, out
            if not np.all(np.isfinite(q_d)):
                break
        raise ValueError(self.not_converged())

    def not_converged(self) -> str:
        """The one line for an iteration of the dropped coordinates that does not converge."""
        return (f"reduced model '{self.name}': the quasi-static deflection of {', '.join(self.dropped_names)} did not "
                f"converge in {self.max_iterations} iterations; the loads reach the dropped modes' stiffness, so they are not "
                "far above the motion: raise the cutoff (above_hz)")

    def full_state(self, q, qd=None, tau=None):
        """(q_full, qd_full) of the robot at the active state: the dropped coordinates at their
        quasi-static deflection under the joint torques ``tau`` (None: at rest, the active
        accelerations zero), their rates zero."""
        q = np.asarray(inputs.state(self, q), dtype=float)
        qd = np.zeros_like(q) if qd is None else np.asarray(inputs.state(self, qd, "qd"), dtype=float)
        if tau is None:
            q_full, qd_full, _, _ = self.solve(q, qd, qdd=np.zeros_like(q))
        else:
            q_full, qd_full, _, _ = self.solve(q, qd, tau=inputs.joint_values(self, tau))
        return q_full, qd_full

    def forward_dynamics(self, q, qd, tau):
        """Active accelerations (..., nq) under the joint torques ``tau``."""
        q, qd = (np.asarray(inputs.state(self, v, n), dtype=float) for v, n in ((q, "q"), (qd, "qd")))
        return self.solve(q, qd, tau=np.asarray(inputs.joint_values(self, tau), dtype=float))[2]

    def inverse_dynamics(self, q, qd, qdd):
        """Active generalized forces (..., nq), M_aa qdd + b_a at the slaved deflection: the
        joint torques on the joint (or motor) rows, zero on the kept flexible rows where the
        state balances."""
        q, qd, qdd = (np.asarray(inputs.state(self, v, n), dtype=float) for v, n in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
        return self.solve(q, qd, qdd=qdd)[3]

    def linearize(self, q=None):
        """(M_r, K_r) of the reduced model at rest about the active configuration ``q`` (None: the
        robot's q = 0; joint values only: the rest at zero), the dropped coordinates eliminated
        from the full linearization (M, K): ``delta q_d = -K_dd^-1 (K_da delta q_a + M_da delta qdd_a)``,
        so ``M_r = M_aa - K_ad K_dd^-1 M_da`` and ``K_r = K_aa - K_ad K_dd^-1 K_da``; truncated:
        the active blocks."""
        if q is None:
            q_full = np.zeros(self.robot.nq)
        else:
            q = np.asarray(q, dtype=float)
            if q.shape == (self.n_joints,):
                q = np.concatenate([q, np.zeros(self.nq - self.n_joints)])
            q_full = self.full_state(q)[0]
        M = np.asarray(self.robot.mass_matrix(q_full), dtype=float)
        K = stiffness(self.robot, q_full)
        a, d = list(self.active), list(self.dropped)
        M_r, K_r = M[np.ix_(a, a)], K[np.ix_(a, a)]
        if self.static:
            X = np.linalg.solve(K[np.ix_(d, d)], np.concatenate([M[np.ix_(d, a)], K[np.ix_(d, a)]], axis=1))
            M_r = M_r - K[np.ix_(a, d)] @ X[:, :len(a)]
            K_r = K_r - K[np.ix_(a, d)] @ X[:, len(a):]
        return M_r, K_r

    def natural_frequencies(self, q=None, qd=None):
        """Natural frequencies (rad/s) of the reduced model at rest (see :meth:`linearize`)."""
        from .frequencies import natural_frequencies

        return natural_frequencies(self, q, qd=qd)
