"""3-vector algebra on components, and the per-robot constants and joint kinematics shared by
the rigid-arm recursions (:mod:`.rnea`, :mod:`.crba`).

A 3-vector is a tuple of three components, each a number, an array of the batch shape or a
symbolic scalar. Constant factors 0 and +-1 are dropped when an operation is formed, so that
symbolic traces carry no ``0*x`` or ``1.0*x`` terms.

Joint frames. Both DH conventions split ``A_i = P_i J(q_i) N_i`` (:mod:`.dh`). The frame
``B_i = T_{i-1} P_i J(q_i)`` has its z axis on joint i's axis and its origin on that axis
(standard DH: z_{i-1}; modified DH: z_i), and ``B_i = B_{i-1} C_i J(q_i)`` with the
constant ``C_i = N_{i-1} P_i`` (on a tree: ``N`` of link i's parent, the identity for the base). Link i's bodies (given in frame i = B_i N_i) are moved into
B_i once (:func:`constants`), so the recursions are the same for both conventions and both
joint types.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import RigidBody, tree
from . import dh, ops
from .beam_tensors import rod_second_moments

# ----- 3-vector algebra on components (numbers, arrays or symbols) ------------------------


# A structural zero is the int 0 object itself (constants are cleaned by _num so that exact
# 0 and +-1 are ints): testing identity is cheap enough for the single-state numeric path.
ZERO, ONE = 0, 1


def num(x):
    """A constant as a Python number, exact 0 and +-1 as ints."""
    x = float(x)
    return int(x) if x in (0.0, 1.0, -1.0) else x


def mul(a, b):
    if a is ZERO or b is ZERO:
        return ZERO
    if a is ONE:
        return b
    if b is ONE:
        return a
    return a * b


def add(a, b):
    if a is ZERO:
        return b
    if b is ZERO:
        return a
    return a + b


def sub(a, b):
    if b is ZERO:
        return a
    if a is ZERO:
        return -b
    return a - b


def neg(a):
    return ZERO if a is ZERO else -a


def vadd(u, v):
    return (add(u[0], v[0]), add(u[1], v[1]), add(u[2], v[2]))


def vscale(k, v):
    return (mul(k, v[0]), mul(k, v[1]), mul(k, v[2]))


def cross(u, v):
    return (
        sub(mul(u[1], v[2]), mul(u[2], v[1])),
        sub(mul(u[2], v[0]), mul(u[0], v[2])),
        sub(mul(u[0], v[1]), mul(u[1], v[0])),
    )


def dot(u, v):
    return add(add(mul(u[0], v[0]), mul(u[1], v[1])), mul(u[2], v[2]))


def weighted_sum(coeffs, terms):
    """sum_k coeffs[k] * terms[k] for cleaned constant coefficients, skipping 0 and folding +-1."""
    out = ZERO
    for k, t in zip(coeffs, terms):
        if k is ZERO or t is ZERO:
            continue
        if k is ONE:
            out = add(out, t)
        elif k == -1:
            out = sub(out, t)
        else:
            out = add(out, k * t)
    return out


def matvec(A, v):
    """A v for a 3x3 matrix A whose entries are constants (numbers)."""
    return tuple(weighted_sum(row, v) for row in A)


# ----- per-robot constants of the rigid-arm recursions ---------------------------------------


def snap(x, tol=1e-14):
    """Round DH round-off (cos(pi/2) = 6e-17) to exact 0 and +-1 so it vanishes symbolically."""
    x = np.array(x, dtype=float)
    for target in (0.0, 1.0, -1.0):
        x[np.abs(x - target) < tol] = target
    return x


def body_in(body, R, p):
    """(m, h, I_o) of a rigid body moved by rotation R and offset p: about the new origin."""
    m = body.mass
    c = R @ body.com + p
    i_o = R @ body.inertia @ R.T + m * (c @ c * np.eye(3) - np.outer(c, c))
    return m, m * c, i_o


def clean(x):
    """Nested tuples of Python numbers (exact 0 and +-1 as ints) from an array."""
    x = np.asarray(x, dtype=float)
    return num(x) if x.ndim == 0 else tuple(clean(row) for row in x)


@dataclass
class Constants:
    """What the recursions need from a robot, computed once (see :func:`constants`).

    Vectors and matrices are nested tuples of cleaned numbers (:func:`clean`) for the
    component algebra; ``gravity`` stays an array.
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
    gravity: np.ndarray
    armature: tuple
    viscous: tuple
    coulomb: tuple
    parent: tuple = ()  # per link: the parent's index, -1 for the base (depth-first order)
    children: tuple = ()  # per link: its children's indices, in order


def constants(robot) -> Constants:
    """Per-robot constants of the rigid-arm recursions, built once per robot content
    (``robot.derived``: editing a link's parameters rebuilds them)."""
    return robot.derived("rigid_constants", build_constants)


def build_constants(robot) -> Constants:
    """The constants of :func:`constants`, computed."""
    if robot.nf:
        raise ValueError("rigid-arm dynamics (rnea/crba) need a robot without flexible coordinates")
    n = robot.n_joints
    parents = robot.parents
    revolute, offset, Rc, pc, mass, h, inertia, Ns = [], [], [], [], [], [], [], []
    for i, link in enumerate(robot.links):
        P, N, off = dh.split(link, robot.dh)
        N_prev = np.eye(4) if parents[i] < 0 else Ns[parents[i]]  # C_i = N_parent P_i
        C = snap(N_prev @ P)
        revolute.append(link.joint == "revolute")
        offset.append(num(off))
        Rc.append(C[:3, :3])
        pc.append(C[:3, 3])
        R_N, p_N = N[:3, :3], N[:3, 3]
        bodies = [link.body] + ([link.hub] if link.hub is not None else [])
        if link.beam is not None:  # a beam without modes is a rigid rod
            bodies.append(RigidBody.from_second_moments(rod_second_moments(link, robot.dh)))
        if i == n - 1 and robot.payload is not None:
            bodies.append(robot.payload)
        m_i, h_i, I_i = 0.0, np.zeros(3), np.zeros((3, 3))
        for b in bodies:
            m, hb, ib = body_in(b, R_N, p_N)
            m_i, h_i, I_i = m_i + m, h_i + hb, I_i + ib
        mass.append(m_i)
        h.append(snap(h_i, 1e-15))
        inertia.append(snap(0.5 * (I_i + I_i.T), 1e-15))
        Ns.append(N)
    return Constants(
        n=n, revolute=tuple(revolute), offset=tuple(offset),
        Rc=tuple(clean(R) for R in Rc), RcT=tuple(clean(R.T) for R in Rc),
        pc=tuple(clean(p) for p in pc), mass=clean(mass), h=tuple(clean(v) for v in h),
        I=tuple(clean(I) for I in inertia),
        gravity=np.array(robot.gravity, dtype=float),
        armature=clean([l.joint_armature for l in robot.links]),  # drives included
        viscous=clean([l.joint_viscous for l in robot.links]),
        coulomb=clean([l.joint_coulomb for l in robot.links]),
        parent=tuple(parents),
        children=tuple(tuple(c) for c in tree.children_of(parents)),
    )


# ----- joint kinematics and inputs on components ---------------------------------------------


class Joint:
    """Rotation R_i = Rc Rz(q) (revolute) or Rc (prismatic) and origin p_i of B_i in B_{i-1}."""

    def __init__(self, k: Constants, i: int, qi):
        self.Rc, self.RcT, self.revolute = k.Rc[i], k.RcT[i], k.revolute[i]
        qe = add(qi, k.offset[i])
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
        return (add(mul(c, u[0]), mul(s, u[1])), sub(mul(c, u[1]), mul(s, u[0])), u[2])

    def up(self, v):
        """R_i v: a vector of B_i expressed in B_{i-1}."""
        if self.revolute:
            c, s = self.c, self.s
            v = (sub(mul(c, v[0]), mul(s, v[1])), add(mul(s, v[0]), mul(c, v[1])), v[2])
        return matvec(self.Rc, v)


def components(x, n):
    """Joint-indexed components of a (..., n) input; None stands for zeros."""
    if x is None:
        return [ZERO] * n
    x = ops.asarray(x)
    if x.shape[-1:] != (n,):
        raise ValueError(f"expected a last dimension of {n} joint values, got shape {x.shape}")
    if x.ndim == 1:  # scalars (np.float64 or the symbols themselves), not 0-d arrays
        return [x[i] for i in range(n)]
    return [x[..., i] for i in range(n)]


def output(columns, inputs, n):
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
    if np.iscomplexobj(x):  # complex-step derivatives: sign is flat, its derivative 0 (not z / |z|)
        return np.sign(np.real(x))
    return np.sign(x)


def friction_components(k: Constants, qd_c):
    """Joint friction viscous*qd + coulomb*sign(qd), per joint."""
    out = []
    for i, v in enumerate(qd_c):
        f = mul(k.viscous[i], v)
        if k.coulomb[i] is not ZERO and v is not ZERO:
            f = add(f, mul(k.coulomb[i], sign(v)))
        out.append(f)
    return out
