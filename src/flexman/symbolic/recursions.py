"""Run the numeric dynamics algorithms on tracers: one tape holds M, b, the inverse and the
forward dynamics of a robot, so shared intermediates (sines, frames) are computed once.

Formulations:

* ``book``: Book's recursive 4x4 Lagrangian (:mod:`flexman.dynamics.lagrange4`), any arm;
  M column by column from unit accelerations, only the lower triangle kept (M is symmetric);
* ``newton_euler`` / ``denoc``: the rigid-arm recursions of ``dynamics.rnea`` / ``dynamics.crba``
  when they are available (flexible arms, or when they are missing, fall back to ``book``);
* ``lagrange``: energy-based, see :mod:`.christoffel`.

The forward dynamics is M, b and an LDL^T solve written out as straight-line code.
"""
from __future__ import annotations

import importlib

import numpy as np

from ..dynamics import lagrange4 as l4
from .tracer import Tape, div, mul


def coordinate_inputs(tape: Tape, nq: int, n_joints: int) -> dict:
    """Object arrays of input tracers: q, qd, qdd (nq each) and tau (n_joints)."""
    mk = lambda prefix, n: np.array(tape.inputs([f"{prefix}{k + 1}" for k in range(n)]) + [None], dtype=object)[:-1]
    return {"q": mk("q", nq), "qd": mk("qd", nq), "qdd": mk("qdd", nq), "tau": mk("tau", n_joints)}


def symmetric_from_columns(cols):
    """M from traced columns cols[j] = M[:, j], keeping the lower triangle only."""
    nq = cols.shape[0]
    M = np.empty((nq, nq), dtype=object)
    for i in range(nq):
        for j in range(i + 1):
            M[i, j] = M[j, i] = cols[j][i]
    return M


def in_link1_frame(model, q):
    """q with q1 = 0, where the mass matrix does not depend on q1: moving joint 1 moves the
    whole arm rigidly, which leaves the kinetic energy unchanged, unless link 1 is a sliding
    beam (its shape changes with q1; q is returned as it is). Tracing M at q1 = 0 keeps
    sin q1 and cos q1 out of every entry."""
    if model.links[0].beam is not None and model.links[0].beam.sliding:
        return q
    q = q.copy()
    q[0] = 0.0
    return q


def book_terms(model, x, need=("M", "b", "tau"), truncate=None, composite=False):
    """(M, b, inverse dynamics) by the 4x4 recursion on tracer inputs x (None where not needed).
    ``truncate=k``: M keeps only its terms of degree <= k in the flexible coordinates.
    ``composite``: M by composite bodies (``lagrange4.mass_matrix``) where it applies, instead
    of Book's unit-acceleration columns (the published algorithm, kept for its op counts)."""
    q, qd, qdd = x["q"], x["qd"], x["qdd"]
    nq = q.shape[-1]
    M = b = tau = None
    if "tau" in need:
        tau = l4.inverse_dynamics(model, q, qd, qdd)
    if "M" in need:
        qm = in_link1_frame(model, q)
        if truncate is not None:  # graded inputs (see .graded): q_f of degree 1, the rest degree 0
            from .graded import seed

            flexible = np.arange(nq) >= model.n_joints
            flexible[[m.index for m in model.motors]] = False  # (motor coordinates are not deflections)
            qm = seed(qm, flexible, truncate)
        if composite and truncate is None and l4.composite_applies(model):
            M = l4.mass_matrix(model, qm)
        else:
            qb = np.broadcast_to(qm[None, :], (nq, nq))
            cols = l4.inverse_dynamics(model, qb, np.zeros((nq, nq)), np.eye(nq), gravity=False, elastic=False,
                                       friction=False)
            M = symmetric_from_columns(cols)
        if truncate is not None:
            from .graded import total

            M = total(M)
    if "b" in need:
        b = l4.inverse_dynamics(model, q, qd, np.zeros(nq))
    return M, b, tau


def _module(name):
    try:
        return importlib.import_module(f"flexman.dynamics.{name}")
    except ImportError:
        return None


def rigid_terms(robot, x, formulation, notes, need=("M", "b", "tau")):
    """Newton-Euler (and composite-body M for DeNOC) on a rigid arm, if the modules exist."""
    rnea = _module("rnea")
    if rnea is None or not hasattr(rnea, "inverse_dynamics"):
        notes.append(f"{formulation}: dynamics.rnea is not available; traced Book's 4x4 recursion instead")
        return None
    q, qd, qdd = x["q"], x["qd"], x["qdd"]
    nq = q.shape[-1]
    coulomb = any(lk.joint_coulomb for lk in robot.links)  # drives included

    def rne(q_, qd_, qdd_, gravity=True, friction=True):
        out = rnea.inverse_dynamics(robot, q_, qd_, qdd_, gravity=gravity, friction=friction and not coulomb)
        if friction and coulomb:  # viscous only: the sign of a traced qd is unknown
            out = out + np.array([lk.joint_viscous for lk in robot.links]) * qd_
        return out

    M = b = tau = None
    if "tau" in need:
        tau = rne(q, qd, qdd)
    if "b" in need:
        b = rne(q, qd, None)
    if "M" in need:
        crba = _module("crba") if formulation == "denoc" else None
        if crba is not None and hasattr(crba, "mass_matrix"):
            M = np.asarray(crba.mass_matrix(robot, q), dtype=object)
            notes.append("denoc: M by composite bodies (dynamics.crba), b by Newton-Euler")
        else:
            if formulation == "denoc":
                notes.append("denoc: dynamics.crba is not available; M from Newton-Euler with unit accelerations")
            qb = np.broadcast_to(q[None, :], (nq, nq))
            M = symmetric_from_columns(rne(qb, None, np.eye(nq), gravity=False, friction=False))
    return M, b, tau


def ldlt_solve(M, rhs):
    """x = M^-1 rhs for symmetric positive definite M by LDL^T, written out on scalars.

    Zero entries of M stay zero through the factorization wherever the fill-in allows, and
    multiplications by them vanish at creation, so sparse (e.g. decoupled) M cost less.
    """
    n = len(rhs)
    L = [[0.0] * n for _ in range(n)]
    D, Dinv = [0.0] * n, [0.0] * n
    for j in range(n):
        # E[j][k] = L[j][k] D[k], reused for column j
        E = [mul(L[j][k], D[k]) for k in range(j)]
        d = M[j, j]
        for k in range(j):
            d = d - mul(L[j][k], E[k])
        if isinstance(d, float) and d == 0.0:
            raise ValueError(f"mass matrix is singular: pivot {j + 1} of its LDL^T factorization is identically 0")
        D[j], Dinv[j] = d, div(1.0, d)
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s = s - mul(L[i][k], E[k])
            L[i][j] = mul(s, Dinv[j])
    y = list(rhs)
    for i in range(n):
        for k in range(i):
            y[i] = y[i] - mul(L[i][k], y[k])
    x = [mul(y[i], Dinv[i]) for i in range(n)]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            x[i] = x[i] - mul(L[k][i], x[k])
    return np.array(x + [None], dtype=object)[:-1]


def external_forces(model, q, w):
    """Generalized forces sum_i J_i^T w_i of wrenches w (n_links, 6: force, moment; base frame)
    applied at the distal frame origin of each link (Piedboeuf, Q = J^T f)."""
    out = 0.0
    for i in range(w.shape[0]):
        out = out + np.swapaxes(l4.point_jacobian(model, q, i), -1, -2) @ w[i]
    return out


def forward_terms(M, b, tau, actuated):
    """qdd = M^-1 (S tau - b); ``actuated``: the coordinate of each joint torque (``robot.actuated``)."""
    acting = {c: j for j, c in enumerate(actuated)}
    rhs = [(tau[acting[i]] if i in acting else 0.0) - b[i] for i in range(len(b))]
    return ldlt_solve(M, rhs)
