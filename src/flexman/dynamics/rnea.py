"""Recursive Newton-Euler inverse dynamics of rigid arms, in joint frames with 3-vectors.

Written once for float arrays with leading batch dimensions (``q`` of shape ``(..., n)``)
and for object arrays of symbols (symengine, or flexman's tracer scalars), on the component
algebra, per-robot constants and joint frames ``B_i`` of :mod:`.vec3`.

The recursion is the classical one (DYNAMAN, 002: velocities and accelerations outward,
forces and moments inward; Luh-Walker-Paul form): gravity enters as the base acceleration
``-g``, each link's body is (mass m, first moment h = m c, inertia I_o about the origin).
"""
from __future__ import annotations

from .vec3 import (
    ZERO,
    Joint,
    add,
    clean,
    components,
    constants,
    cross,
    friction_components,
    matvec,
    mul,
    output,
    sub,
    vadd,
    vscale,
)


# ----- the recursion -------------------------------------------------------------------------


def inverse_dynamics(robot, q, qd, qdd, gravity=True, friction=True):
    """Joint forces tau = M(q) qdd + b(q, qd) by recursive Newton-Euler.

    ``qd`` or ``qdd`` may be None (zero). ``gravity=False`` drops the base acceleration;
    ``friction=False`` drops joint friction (armature * qdd is always included, it is
    part of M). Returns an array (..., n), object dtype for symbolic inputs.
    """
    k = constants(robot)
    n = k.n
    q_c, qd_c, qdd_c = components(q, n), components(qd, n), components(qdd, n)
    joints = [Joint(k, i, q_c[i]) for i in range(n)]

    # forward: angular velocity w, angular acceleration wd, acceleration a of B_i's origin, each
    # link from its parent's (the base: at rest, accelerating by -g)
    base = ((ZERO, ZERO, ZERO), (ZERO, ZERO, ZERO), clean(-k.gravity) if gravity else (ZERO, ZERO, ZERO))
    frames = []
    for i, jt in enumerate(joints):
        w, wd, a = frames[k.parent[i]] if k.parent[i] >= 0 else base
        p = jt.p
        a = vadd(a, vadd(cross(wd, p), cross(w, cross(w, p))))
        w, wd, a = jt.down(w), jt.down(wd), jt.down(a)
        v, vd = qd_c[i], qdd_c[i]
        if jt.revolute:
            wd = (add(wd[0], mul(w[1], v)), sub(wd[1], mul(w[0], v)), add(wd[2], vd))
            w = (w[0], w[1], add(w[2], v))
        else:
            two_v = add(v, v)
            a = (add(a[0], mul(w[1], two_v)), sub(a[1], mul(w[0], two_v)), add(a[2], vd))
        frames.append((w, wd, a))

    # backward: force f and moment n (about B_i's origin) that link i's parent exerts on link i,
    # its children's carried over in order
    fn = [None] * n
    tau = [ZERO] * n
    for i in range(n - 1, -1, -1):
        w, wd, a = frames[i]
        m, h, I = k.mass[i], k.h[i], k.I[i]
        F = vadd(vadd(vscale(m, a), cross(wd, h)), cross(w, cross(w, h)))
        Nm = vadd(vadd(matvec(I, wd), cross(w, matvec(I, w))), cross(h, a))
        for c in k.children[i]:
            nxt, (f_next, n_next) = joints[c], fn[c]
            f_up = nxt.up(f_next)
            F = vadd(F, f_up)
            Nm = vadd(vadd(Nm, nxt.up(n_next)), cross(nxt.p, f_up))
        fn[i] = F, Nm
        t = Nm[2] if k.revolute[i] else F[2]
        tau[i] = add(t, mul(k.armature[i], qdd_c[i]))
    if friction:
        tau = [add(t, f) for t, f in zip(tau, friction_components(k, qd_c))]
    return output(tau, (q, qd, qdd), n)
