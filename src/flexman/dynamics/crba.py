"""Rigid-arm mass matrix by composite bodies (DeNOC form), and the quantities built on it.

Saha et al. (003, eqs. 7-11) write the generalized inertia matrix with the twist
propagation matrices A_ij and joint-motion propagation vectors p_i of the DeNOC matrices:

    M_ij = p_i^T  M~_i  A_ij  p_j      (i >= j),                      (eq. 7)
    M~_i = M_i + A_{i+1,i}^T M~_{i+1} A_{i+1,i},   M~_n = M_n,         (eqs. 8-9)

M~_i being the 6x6 mass matrix of the composite body i..n about the origin of body i, with
blocks (inertia about that origin, m~ [d~ x], m~), eqs. 10-11. Here M~_i is kept as its
three blocks (m~, first moment h~ = m~ d~, inertia I~) in joint frame B_i
(:mod:`.rnea`), M~_i p_i is the wrench that a unit joint-i motion needs, and multiplying it
by A_ij^T (force and moment carried back link by link) and p_j^T (projection on joint j's
axis) gives column i of M. Batched and array-generic like :mod:`.rnea`.
"""
from __future__ import annotations

import numpy as np

from . import ops
from .rnea import (
    _Z,
    _add,
    _neg,
    _components,
    _Joint,
    _mul,
    _output,
    _sub,
    constants,
    cross,
    friction_components,
    inverse_dynamics,
    joint_and_link_frames,
    link_frames,
    vadd,
    vscale,
)

__all__ = [
    "mass_matrix", "bias_forces", "inverse_dynamics", "forward_dynamics", "kinetic_energy",
    "potential_energy", "jacobian", "link_frames",
]


def _rotate_inertia(jt, I):
    """R I R^T for a joint's rotation R and a symmetric 3x3 I given as rows of components."""
    RI_cols = [jt.up((I[0][c], I[1][c], I[2][c])) for c in range(3)]  # columns of R I
    # (R I)^T = I R^T; its columns are the rows of R I
    rows_RI = [tuple(RI_cols[c][r] for c in range(3)) for r in range(3)]
    cols = [jt.up(rows_RI[r]) for r in range(3)]  # columns of R (I R^T)
    return [[cols[c][r] for c in range(3)] for r in range(3)]


def _shift_composite(jt, m, h, I):
    """Composite body (m, h, I) of B_{i+1} seen from B_i: A_{i+1,i}^T M~ A_{i+1,i} (eq. 8)."""
    p = jt.p
    g = jt.up(h)  # first moment, rotated
    h_new = vadd(g, vscale(m, p))
    I_rot = _rotate_inertia(jt, I)
    # parallel-axis terms: m (|p|^2 1 - p p^T) + 2 (p.g) 1 - p g^T - g p^T
    pp = _add(_add(_mul(p[0], p[0]), _mul(p[1], p[1])), _mul(p[2], p[2]))
    pg = _add(_add(_mul(p[0], g[0]), _mul(p[1], g[1])), _mul(p[2], g[2]))
    diag = _add(_mul(m, pp), _add(pg, pg))
    out = [[None] * 3 for _ in range(3)]
    for r in range(3):
        for c in range(r, 3):
            e = _neg_sum(_mul(m, _mul(p[r], p[c])), _mul(p[r], g[c]), _mul(g[r], p[c]))
            if r == c:
                e = _add(e, diag)
            out[r][c] = out[c][r] = _add(I_rot[r][c], e)
    return m, h_new, out


def _neg_sum(*terms):
    out = _Z
    for t in terms:
        out = _sub(out, t)
    return out


def mass_matrix(robot, q, armature=True):
    """M(q) (..., n, n) by composite rigid bodies (003 eqs. 7-11), plus joint armature."""
    k = constants(robot)
    n = k.n
    q_c = _components(q, n)
    joints = [_Joint(k, i, q_c[i]) for i in range(n)]
    M = {}
    m, h, I = _Z, (_Z, _Z, _Z), [[_Z] * 3 for _ in range(3)]
    for i in range(n - 1, -1, -1):
        if i + 1 < n:
            m, h, I = _shift_composite(joints[i + 1], m, h, I)
        # add link i's own body (constant in B_i)
        m = _add(m, k.mass[i])
        h = vadd(h, k.h[i])
        I = [[_add(I[r][c], k.I[i][r][c]) for c in range(3)] for r in range(3)]
        # wrench M~_i p_i for a unit motion of joint i (force f, moment n about B_i's origin)
        if k.revolute[i]:
            f, nm = (_neg(h[1]), h[0], _Z), (I[0][2], I[1][2], I[2][2])
        else:
            f, nm = (_Z, _Z, m), (h[1], _neg(h[0]), _Z)
        M[i, i] = _add(nm[2] if k.revolute[i] else f[2], k.armature[i] if armature else _Z)
        # carry it back to joints j < i (A_ij^T) and project on their axes (p_j^T)
        for j in range(i - 1, -1, -1):
            jt = joints[j + 1]
            f_up = jt.up(f)
            nm = vadd(jt.up(nm), cross(jt.p, f_up))
            f = f_up
            M[i, j] = nm[2] if k.revolute[j] else f[2]
    q = ops.asarray(q)
    out = ops.zeros_like_batch(q.shape[:-1], (n, n), q)
    for (i, j), val in M.items():
        out[..., i, j] = val
        out[..., j, i] = val
    return out


def bias_forces(robot, q, qd):
    """b(q, qd): Coriolis/centrifugal, gravity and joint friction (inverse dynamics at qdd = 0)."""
    return inverse_dynamics(robot, q, qd, None)


def gravity_forces(robot, q):
    """Gravity part of b: inverse dynamics at rest."""
    return inverse_dynamics(robot, q, None, None, friction=False)


def forward_dynamics(robot, q, qd, tau):
    """qdd solving M(q) qdd = tau - b(q, qd) (numeric only; batched LAPACK solve)."""
    q, qd, tau = (np.asarray(x, dtype=float) for x in (q, qd, tau))
    M = mass_matrix(robot, q)
    rhs = tau - bias_forces(robot, q, qd)
    batch = np.broadcast_shapes(M.shape[:-2], rhs.shape[:-1])
    M = np.broadcast_to(M, batch + M.shape[-2:])
    rhs = np.broadcast_to(rhs, batch + rhs.shape[-1:])
    return np.linalg.solve(M, rhs[..., None])[..., 0]


def kinetic_energy(robot, q, qd):
    """0.5 qd^T M qd, with M qd from one Newton-Euler pass (qdd := qd, no velocity, no gravity)."""
    Mqd = inverse_dynamics(robot, q, None, qd, gravity=False, friction=False)
    return 0.5 * (ops.asarray(qd) * Mqd).sum(axis=-1)


def potential_energy(robot, q):
    """Gravitational potential -sum_i m_i g . p_com,i (base frame), zero at the base origin."""
    k = constants(robot)
    joint_frames, _ = joint_and_link_frames(robot, q)
    g = k.gravity
    total = 0
    for i, B in enumerate(joint_frames):
        # m p_com in the base frame = R_B h + m o_B
        mp = (B[..., :3, :3] @ k.h_array[i]) + k.mass[i] * B[..., :3, 3]
        total = total - (mp * g).sum(axis=-1)
    return total


def jacobian(robot, q, link=-1, point=None):
    """Geometric Jacobian (..., 6, n) of a point fixed in a link's frame, in the base frame.

    Rows [linear; angular]; column j is a_j x (r - o_j) over a_j for a revolute joint and
    a_j over 0 for a prismatic one (Piedboeuf 001 eq. 3), a_j and o_j being joint j's axis
    and a point on it. Columns of joints after the link are zero.
    """
    k = constants(robot)
    n = k.n
    link = link % n
    q = ops.asarray(q)
    joint_frames, frames = joint_and_link_frames(robot, q)
    T = frames[link]
    r = T[..., :3, 3]
    if point is not None:
        r = r + T[..., :3, :3] @ np.asarray(point, dtype=float)
    J = ops.zeros_like_batch(q.shape[:-1], (6, n), q)
    for j in range(link + 1):
        B = joint_frames[j]
        axis, origin = B[..., :3, 2], B[..., :3, 3]
        if k.revolute[j]:
            d = r - origin
            lin = cross(tuple(axis[..., c] for c in range(3)), tuple(d[..., c] for c in range(3)))
            for c in range(3):
                J[..., c, j] = lin[c]
                J[..., 3 + c, j] = axis[..., c]
        else:
            for c in range(3):
                J[..., c, j] = axis[..., c]
    return J


def friction_forces(robot, qd):
    """Joint friction viscous * qd + coulomb * sign(qd), (..., n)."""
    k = constants(robot)
    return _output(friction_components(k, _components(qd, k.n)), (qd,), k.n)


__all__ += ["gravity_forces", "friction_forces"]
