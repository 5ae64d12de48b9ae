"""Recursive Newton-Euler inverse dynamics of rigid arms, in link frames with 3-vectors.

Written once for float arrays with leading batch dimensions (``q`` of shape ``(..., n)``)
and for object arrays of symbols (symengine, or flexman's tracer scalars). A 3-vector is a
tuple of three components, each an array of the batch shape or a symbolic scalar; constant
factors 0 and +-1 are dropped when an operation is formed, so that symbolic traces carry
no ``0*x`` or ``1.0*x`` terms (DESIGN.md, notes from the field).

Joint frames. Both DH conventions split ``A_i = P_i J(q_i) N_i`` (:mod:`.dh`). The frame
``B_i = T_{i-1} P_i J(q_i)`` has its z axis on joint i's axis and its origin on that axis
(standard DH: z_{i-1}; modified DH: z_i), and ``B_i = B_{i-1} C_i J(q_i)`` with the
constant ``C_i = N_{i-1} P_i``. Link i's bodies (given in frame i = B_i N_i) are moved into
B_i once, so the recursion below is the same for both conventions and both joint types.

The recursion is the classical one (DYNAMAN, 002: velocities and accelerations outward,
forces and moments inward; Luh-Walker-Paul form): gravity enters as the base acceleration
``-g``, each link's body is (mass m, first moment h = m c, inertia I_o about the origin).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dh, ops

# ----- 3-vector algebra on components (numbers, arrays or symbols) ------------------------


# A structural zero is the int 0 object itself (constants are cleaned by _num so that exact
# 0 and +-1 are ints): testing identity is cheap enough for the single-state numeric path.
_Z, _ONE = 0, 1


def _num(x):
    """A constant as a Python number, exact 0 and +-1 as ints."""
    x = float(x)
    return int(x) if x in (0.0, 1.0, -1.0) else x


def _mul(a, b):
    if a is _Z or b is _Z:
        return _Z
    if a is _ONE:
        return b
    if b is _ONE:
        return a
    return a * b


def _add(a, b):
    if a is _Z:
        return b
    if b is _Z:
        return a
    return a + b


def _sub(a, b):
    if b is _Z:
        return a
    if a is _Z:
        return -b
    return a - b


def _neg(a):
    return _Z if a is _Z else -a


def vadd(u, v):
    return (_add(u[0], v[0]), _add(u[1], v[1]), _add(u[2], v[2]))


def vscale(k, v):
    return (_mul(k, v[0]), _mul(k, v[1]), _mul(k, v[2]))


def cross(u, v):
    return (
        _sub(_mul(u[1], v[2]), _mul(u[2], v[1])),
        _sub(_mul(u[2], v[0]), _mul(u[0], v[2])),
        _sub(_mul(u[0], v[1]), _mul(u[1], v[0])),
    )


def dot(u, v):
    return _add(_add(_mul(u[0], v[0]), _mul(u[1], v[1])), _mul(u[2], v[2]))


def lincomb(coeffs, terms):
    """sum_k coeffs[k] * terms[k] for cleaned constant coefficients, skipping 0 and folding +-1."""
    out = _Z
    for k, t in zip(coeffs, terms):
        if k is _Z or t is _Z:
            continue
        if k is _ONE:
            out = _add(out, t)
        elif k == -1:
            out = _sub(out, t)
        else:
            out = _add(out, k * t)
    return out


def matvec(A, v):
    """A v for a 3x3 matrix A whose entries are constants (numbers)."""
    return tuple(lincomb(row, v) for row in A)


# ----- per-robot constants -------------------------------------------------------------------


def _snap(x, tol=1e-14):
    """Round DH round-off (cos(pi/2) = 6e-17) to exact 0 and +-1 so it vanishes symbolically."""
    x = np.array(x, dtype=float)
    for target in (0.0, 1.0, -1.0):
        x[np.abs(x - target) < tol] = target
    return x


def _body_in(body, R, p):
    """(m, h, I_o) of a rigid body moved by rotation R and offset p: about the new origin."""
    m = body.mass
    c = R @ body.com + p
    i_o = R @ body.inertia @ R.T + m * (c @ c * np.eye(3) - np.outer(c, c))
    return m, m * c, i_o


def _clean(x):
    """Nested tuples of Python numbers (exact 0 and +-1 as ints) from an array."""
    x = np.asarray(x, dtype=float)
    return _num(x) if x.ndim == 0 else tuple(_clean(row) for row in x)


@dataclass
class Constants:
    """What the recursions need from a robot, computed once (see :func:`constants`).

    Vectors and matrices are nested tuples of cleaned numbers (:func:`_clean`) for the
    component algebra; ``P``, ``N``, ``h_array`` and ``gravity`` stay arrays for ``@``.
    """

    n: int
    revolute: tuple  # per joint
    offset: tuple  # theta (revolute) or d (prismatic) added to q
    Rc: tuple  # rotation of C_i = N_{i-1} P_i (rows), snapped
    RcT: tuple  # its transpose (rows)
    pc: tuple  # translation of C_i
    mass: tuple  # link i's bodies (body, hub, payload on the last) in joint frame B_i
    h: tuple  # first moments m c in B_i
    I: tuple  # inertias about B_i's origin (rows)
    h_array: list
    P: list  # DH parts, for frames and Jacobians
    N: list
    gravity: np.ndarray
    armature: tuple
    viscous: tuple
    coulomb: tuple


def constants(robot) -> Constants:
    """Per-robot constants, cached on the robot instance (``robot.__dict__``).

    The cache is keyed by the link data, so editing a link's parameters invalidates it.
    """
    key = _fingerprint(robot)
    cached = robot.__dict__.get("_rnea_const")
    if cached is not None and cached[0] == key:
        return cached[1]
    if robot.nf:
        raise ValueError("rigid-arm dynamics (rnea/crba) need a robot without flexible coordinates")
    n = robot.n_joints
    revolute, offset, Rc, pc, mass, h, inertia, Ps, Ns = [], [], [], [], [], [], [], [], []
    N_prev = np.eye(4)
    for i, link in enumerate(robot.links):
        P, N, off = dh.split(link, robot.dh)
        C = _snap(N_prev @ P)
        revolute.append(link.joint == "revolute")
        offset.append(_num(off))
        Rc.append(C[:3, :3])
        pc.append(C[:3, 3])
        R_N, p_N = N[:3, :3], N[:3, 3]
        bodies = [link.body] + ([link.hub] if link.hub is not None else [])
        if link.beam is not None:  # a beam without modes is a rigid rod
            from ..model import RigidBody
            from .structure import rod_second_moments

            bodies.append(RigidBody.from_second_moments(rod_second_moments(link, robot.dh)))
        if i == n - 1 and robot.payload is not None:
            bodies.append(robot.payload)
        m_i, h_i, I_i = 0.0, np.zeros(3), np.zeros((3, 3))
        for b in bodies:
            m, hb, ib = _body_in(b, R_N, p_N)
            m_i, h_i, I_i = m_i + m, h_i + hb, I_i + ib
        mass.append(m_i)
        h.append(_snap(h_i, 1e-15))
        inertia.append(_snap(0.5 * (I_i + I_i.T), 1e-15))
        Ps.append(P)
        Ns.append(N)
        N_prev = N
    consts = Constants(
        n=n, revolute=tuple(revolute), offset=tuple(offset),
        Rc=tuple(_clean(R) for R in Rc), RcT=tuple(_clean(R.T) for R in Rc),
        pc=tuple(_clean(p) for p in pc), mass=_clean(mass), h=tuple(_clean(v) for v in h),
        I=tuple(_clean(I) for I in inertia), h_array=h, P=Ps, N=Ns,
        gravity=np.array(robot.gravity, dtype=float),
        armature=_clean([l.armature for l in robot.links]),
        viscous=_clean([l.viscous for l in robot.links]),
        coulomb=_clean([l.coulomb for l in robot.links]),
    )
    robot.__dict__["_rnea_const"] = (key, consts)
    return consts


def _fingerprint(robot):
    def body(b):
        return None if b is None else (b.mass, tuple(b.com), tuple(np.ravel(b.inertia)))

    links = tuple(
        (l.joint, l.a, l.alpha, l.d, l.theta, body(l.body), body(l.hub), l.armature, l.viscous,
         l.coulomb, None if l.placement is None else (tuple(l.placement.xyz), tuple(l.placement.rpy),
                                                      tuple(l.placement.axis)),
         None if l.beam is None else (l.beam.length, l.beam.mass_per_length, l.beam.polar_inertia_per_length))
        for l in robot.links
    )
    return (robot.dh, tuple(robot.gravity), body(robot.payload), links)


# ----- joint kinematics on components ----------------------------------------------------------


class _Joint:
    """Rotation R_i = Rc Rz(q) (revolute) or Rc (prismatic) and origin p_i of B_i in B_{i-1}."""

    def __init__(self, k: Constants, i: int, qi):
        self.Rc, self.RcT, self.revolute = k.Rc[i], k.RcT[i], k.revolute[i]
        qe = _add(qi, k.offset[i])
        if self.revolute:
            self.c, self.s = ops.cos(qe), ops.sin(qe)
            self.p = k.pc[i]
        else:
            self.p = vadd(k.pc[i], vscale(qe, self.RcT[2]))

    def down(self, v):
        """R_i^T v: a vector of B_{i-1} expressed in B_i."""
        u = matvec(self.RcT, v)
        if not self.revolute:
            return u
        c, s = self.c, self.s
        return (_add(_mul(c, u[0]), _mul(s, u[1])), _sub(_mul(c, u[1]), _mul(s, u[0])), u[2])

    def up(self, v):
        """R_i v: a vector of B_i expressed in B_{i-1}."""
        if self.revolute:
            c, s = self.c, self.s
            v = (_sub(_mul(c, v[0]), _mul(s, v[1])), _add(_mul(s, v[0]), _mul(c, v[1])), v[2])
        return matvec(self.Rc, v)


def _components(x, n):
    """Joint-indexed components of a (..., n) input; None stands for zeros."""
    if x is None:
        return [_Z] * n
    x = ops.asarray(x)
    if x.shape[-1:] != (n,):
        raise ValueError(f"expected a last dimension of {n} joint values, got shape {x.shape}")
    if x.ndim == 1:  # scalars (np.float64 or the symbols themselves), not 0-d arrays
        return [x[i] for i in range(n)]
    return [x[..., i] for i in range(n)]


def _output(columns, inputs, n):
    """Stack per-joint components into an array (..., n) of the inputs' batch shape and dtype."""
    arrays = [ops.asarray(a) for a in inputs if a is not None]
    batch = np.broadcast_shapes(*(a.shape[:-1] for a in arrays))
    if any(a.dtype == object for a in arrays):
        like = np.empty(0, dtype=object)
    else:
        like = np.empty(0, dtype=np.result_type(*arrays))
    out = ops.zeros_like_batch(batch, (n,), like)
    for i, col in enumerate(columns):
        out[..., i] = col
    return out


def sign(x):
    """sign(x) for numbers, arrays and symbols (Coulomb friction)."""
    if ops.is_symbolic(x):
        import symengine

        arr = np.asarray(x, dtype=object)
        out = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(arr.shape):
            el = arr[idx]
            out[idx] = el.sign() if hasattr(el, "sign") else symengine.sign(el)
        return out if arr.shape else out[()]
    return np.sign(x)


def friction_components(k: Constants, qd_c):
    """Joint friction viscous*qd + coulomb*sign(qd), per joint."""
    out = []
    for i, v in enumerate(qd_c):
        f = _mul(k.viscous[i], v)
        if k.coulomb[i] is not _Z and v is not _Z:
            f = _add(f, _mul(k.coulomb[i], sign(v)))
        out.append(f)
    return out


# ----- the recursion -------------------------------------------------------------------------


def inverse_dynamics(robot, q, qd, qdd, gravity=True, friction=True):
    """Joint forces tau = M(q) qdd + b(q, qd) by recursive Newton-Euler.

    ``qd`` or ``qdd`` may be None (zero). ``gravity=False`` drops the base acceleration;
    ``friction=False`` drops joint friction (armature * qdd is always included, it is
    part of M). Returns an array (..., n), object dtype for symbolic inputs.
    """
    k = constants(robot)
    n = k.n
    q_c, qd_c, qdd_c = _components(q, n), _components(qd, n), _components(qdd, n)
    joints = [_Joint(k, i, q_c[i]) for i in range(n)]

    # forward: angular velocity w, angular acceleration wd, acceleration a of B_i's origin
    w = wd = (_Z, _Z, _Z)
    a = _clean(-k.gravity) if gravity else (_Z, _Z, _Z)
    frames = []
    for i, jt in enumerate(joints):
        p = jt.p
        a = vadd(a, vadd(cross(wd, p), cross(w, cross(w, p))))
        w, wd, a = jt.down(w), jt.down(wd), jt.down(a)
        v, vd = qd_c[i], qdd_c[i]
        if jt.revolute:
            wd = (_add(wd[0], _mul(w[1], v)), _sub(wd[1], _mul(w[0], v)), _add(wd[2], vd))
            w = (w[0], w[1], _add(w[2], v))
        else:
            two_v = _add(v, v)
            a = (_add(a[0], _mul(w[1], two_v)), _sub(a[1], _mul(w[0], two_v)), _add(a[2], vd))
        frames.append((w, wd, a))

    # backward: force f and moment n (about B_i's origin) that link i-1 exerts on link i
    f_next = n_next = (_Z, _Z, _Z)
    tau = [_Z] * n
    for i in range(n - 1, -1, -1):
        w, wd, a = frames[i]
        m, h, I = k.mass[i], k.h[i], k.I[i]
        F = vadd(vadd(vscale(m, a), cross(wd, h)), cross(w, cross(w, h)))
        Nm = vadd(vadd(matvec(I, wd), cross(w, matvec(I, w))), cross(h, a))
        if i + 1 < n:
            nxt = joints[i + 1]
            f_up = nxt.up(f_next)
            F = vadd(F, f_up)
            Nm = vadd(vadd(Nm, nxt.up(n_next)), cross(nxt.p, f_up))
        f_next, n_next = F, Nm
        t = Nm[2] if k.revolute[i] else F[2]
        tau[i] = _add(t, _mul(k.armature[i], qdd_c[i]))
    if friction:
        tau = [_add(t, f) for t, f in zip(tau, friction_components(k, qd_c))]
    return _output(tau, (q, qd, qdd), n)


# ----- frames --------------------------------------------------------------------------------


def joint_and_link_frames(robot, q):
    """Base -> B_i (joint i's frame: z on its axis) and base -> frame i (after A_i), (..., 4, 4)."""
    k = constants(robot)
    q = ops.asarray(q)
    batch = q.shape[:-1]
    T = ops.zeros_like_batch(batch, (4, 4), q)
    for j in range(4):
        T[..., j, j] = 1
    joint_frames, link_frames_ = [], []
    for i in range(k.n):
        qi = q[..., i] if k.offset[i] == 0 else q[..., i] + k.offset[i]
        B = (T @ k.P[i]) @ dh.joint_motion(qi, k.revolute[i], like=q)
        T = B @ k.N[i]
        joint_frames.append(B)
        link_frames_.append(T)
    return joint_frames, link_frames_


def link_frames(robot, q):
    """List of base -> frame-i transforms T_i = A_1 ... A_i, each (..., 4, 4)."""
    return joint_and_link_frames(robot, q)[1]
