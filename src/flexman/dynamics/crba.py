"""Rigid-arm mass matrix by composite bodies (DeNOC form).

Saha et al. (003, eqs. 7-11) write the generalized inertia matrix with the twist
propagation matrices A_ij and joint-motion propagation vectors p_i of the DeNOC matrices:

    M_ij = p_i^T  M~_i  A_ij  p_j      (i >= j),                      (eq. 7)
    M~_i = M_i + A_{i+1,i}^T M~_{i+1} A_{i+1,i},   M~_n = M_n,         (eqs. 8-9)

M~_i being the 6x6 mass matrix of the composite body i..n about the origin of body i, with
blocks (inertia about that origin, m~ [d~ x], m~), eqs. 10-11. Here M~_i is kept as its
three blocks (m~, first moment h~ = m~ d~, inertia I~) in joint frame B_i
(:mod:`.vec3`), M~_i p_i is the wrench that a unit joint-i motion needs, and multiplying it
by A_ij^T (force and moment carried back link by link) and p_j^T (projection on joint j's
axis) gives column i of M. Batched and array-generic like :mod:`.rnea`.
"""
from __future__ import annotations

from . import ops
from .vec3 import ZERO, Joint, add, components, constants, cross, mul, neg, sub, vadd, vscale


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
    pp = add(add(mul(p[0], p[0]), mul(p[1], p[1])), mul(p[2], p[2]))
    pg = add(add(mul(p[0], g[0]), mul(p[1], g[1])), mul(p[2], g[2]))
    diag = add(mul(m, pp), add(pg, pg))
    out = [[None] * 3 for _ in range(3)]
    for r in range(3):
        for c in range(r, 3):
            e = _neg_sum(mul(m, mul(p[r], p[c])), mul(p[r], g[c]), mul(g[r], p[c]))
            if r == c:
                e = add(e, diag)
            out[r][c] = out[c][r] = add(I_rot[r][c], e)
    return m, h_new, out


def _neg_sum(*terms):
    out = ZERO
    for t in terms:
        out = sub(out, t)
    return out


def mass_matrix(robot, q, armature=True):
    """M(q) (..., n, n) by composite rigid bodies (003 eqs. 7-11), plus joint armature."""
    k = constants(robot)
    n = k.n
    q_c = components(q, n)
    joints = [Joint(k, i, q_c[i]) for i in range(n)]
    M = {}
    composite = [None] * n
    for i in range(n - 1, -1, -1):
        # the composite bodies of link i's children, seen from B_i, summed
        m, h, I = ZERO, (ZERO, ZERO, ZERO), [[ZERO] * 3 for _ in range(3)]
        for first, c in enumerate(k.children[i]):
            mc, hc, Ic = _shift_composite(joints[c], *composite[c])
            if first == 0:  # (a serial arm's only child: taken as it is)
                m, h, I = mc, hc, Ic
            else:
                m, h = add(m, mc), vadd(h, hc)
                I = [[add(I[r][c2], Ic[r][c2]) for c2 in range(3)] for r in range(3)]
        # add link i's own body (constant in B_i)
        m = add(m, k.mass[i])
        h = vadd(h, k.h[i])
        I = [[add(I[r][c], k.I[i][r][c]) for c in range(3)] for r in range(3)]
        composite[i] = m, h, I
        # wrench M~_i p_i for a unit motion of joint i (force f, moment n about B_i's origin)
        if k.revolute[i]:
            f, nm = (neg(h[1]), h[0], ZERO), (I[0][2], I[1][2], I[2][2])
        else:
            f, nm = (ZERO, ZERO, m), (h[1], neg(h[0]), ZERO)
        M[i, i] = add(nm[2] if k.revolute[i] else f[2], k.armature[i] if armature else ZERO)
        # carry it back to the joints j that move link i (A_ij^T) and project on their axes (p_j^T)
        c, j = i, k.parent[i]
        while j >= 0:
            jt = joints[c]
            f_up = jt.up(f)
            nm = vadd(jt.up(nm), cross(jt.p, f_up))
            f = f_up
            M[i, j] = nm[2] if k.revolute[j] else f[2]
            c, j = j, k.parent[j]
    q = ops.asarray(q)
    out = ops.zeros_like_batch(q.shape[:-1], (n, n), q)
    for (i, j), val in M.items():
        out[..., i, j] = val
        out[..., j, i] = val
    return out
