"""Statics of a flexible arm under gravity and an endpoint wrench (001 sec. 3.4, re-derived).

For joint positions ``q_r`` held by the motors, the flexible coordinates settle where the total
potential is stationary,

    Pi(q) = 1/2 q_f^T K q_f  -  g . (sum of first moments int r dm)  -  f . r_P(q),

plus the work of an endpoint moment m, which enters through its generalized force J_R^T m
(``Q = J^T f``, 001 eq. 29). The joint torques that hold the arm are ``tau = dPi/dq_r`` there.
The kinematics r(q) has one of three orders (001 sec. 4.2):

* order 0: the rigid model, q_f = 0 (torques of the undeformed arm);
* order 1: deflections enter linearly per link (the kinematics of the dynamics model of
  000/004, ``robot.frame(q)``): the equilibrium of ``robot.inverse_dynamics`` at rest;
* order 2: second-order kinematics (:mod:`flexman.dynamics.second_order`: foreshortening of the
  tip and of every mass element, rotations to second order, ``robot.frame(q, order=2)``); for a
  one-link arm this is exactly the linear system of 001 eqs. 39-42, including the load-dependent
  stiffness terms the first-order model misses.

The equilibrium ``dPi/dq_f = 0`` is solved by Newton's method with the exact tangent stiffness
``d2Pi/dq_f2``: every quantity is carried as a second-order *jet* (value, gradient, Hessian in q)
through the chain of link transforms. For one link Pi is quadratic in q_f and one step is exact.
An equilibrium whose tangent stiffness is not positive definite cannot be reached by loading
the arm from rest (the beam buckles): that is reported as a :class:`BucklingError`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..dynamics import dh
from ..dynamics.ops import skew
from ..dynamics.structure import numeric_model
from ..model import inputs
from ..model.gauges import beam_length, check_gauges
from ..model.limits import MAX_FORCE, MAX_LENGTH

__all__ = ["statics", "StaticsResult", "BucklingError", "ORDERS"]

ORDERS = (0, 1, 2)
MAX_ITERATIONS = 50
RTOL = 1e-9  # Newton stops when the update is below this fraction of the deflection (the
#             next update, quadratic in this one, would be at roundoff)
ATOL = 1e-15


class BucklingError(ValueError):
    """The arm has no stable equilibrium under the load (the tangent stiffness of the flexible
    coordinates is not positive definite): a compressive load beyond the buckling load."""


# ----- second-order jets ----------------------------------------------------------------------
class Jet:
    """A matrix-valued function of q with its gradient and Hessian at one point:
    ``v`` (B, a, b), ``d`` (B, n, a, b), ``h`` (B, n, n, a, b)."""

    def __init__(self, v, d, h):
        self.v, self.d, self.h = v, d, h

    @classmethod
    def constant(cls, v, n):
        v = np.asarray(v, dtype=float)
        B = v.shape[0]
        return cls(v, np.zeros((B, n) + v.shape[1:]), np.zeros((B, n, n) + v.shape[1:]))

    def __matmul__(self, other):
        if not isinstance(other, Jet):  # a constant on the right
            return Jet(self.v @ other, self.d @ other, self.h @ other)
        Av, Ad, Ah = self.v, self.d, self.h
        Bv, Bd, Bh = other.v, other.d, other.h
        cross = Ad[:, :, None] @ Bd[:, None, :]
        return Jet(
            Av @ Bv,
            Ad @ Bv[:, None] + Av[:, None] @ Bd,
            Ah @ Bv[:, None, None] + Av[:, None, None] @ Bh + cross + np.swapaxes(cross, 1, 2),
        )

    def __add__(self, other):
        return Jet(self.v + other.v, self.d + other.d, self.h + other.h)


def _joint_jet(lk, qi, i, n):
    """A(q_i) of a link with dA/dq_i and d2A/dq_i2 at the joint's own index."""
    JN = dh.joint_motion(qi + lk.offset, lk.revolute) @ lk.N
    PG = lk.P @ lk.gen
    out = Jet.constant(lk.P @ JN, n)
    out.d[:, i] = PG @ JN
    if lk.revolute:
        out.h[:, i, i] = (PG @ lk.gen) @ JN
    return out


def _beam_jets(beam, p, flex, n, order):
    """Jets of the tip transform D(p) and of the beam's first moment int h dm (4-vector, as a
    column) in the link frame, to the given order in the beam's coordinates p (B, nb)."""
    B, nb = p.shape
    Dk = beam.Dk
    mk = np.asarray(beam.Ck)[:, 3, :]  # first-order first moments int Phi_k dm
    D = Jet.constant(np.broadcast_to(np.eye(4), (B, 4, 4)).copy(), n)
    M = Jet.constant(np.broadcast_to(beam.C0[:, 3:4], (B, 4, 1)).copy(), n)
    D.v = D.v + np.einsum("bk,kxy->bxy", p, Dk)
    M.v = M.v + np.einsum("bk,kx->bx", p, mk)[..., None]
    D.d[:, flex] = np.broadcast_to(Dk, (B,) + Dk.shape)
    M.d[:, flex] = np.broadcast_to(mk[..., None], (B, nb, 4, 1))
    if order == 2:
        Dkl, mkl = beam.Dkl, beam.mkl
        D.v = D.v + 0.5 * np.einsum("bk,bl,klxy->bxy", p, p, Dkl)
        M.v = M.v + 0.5 * np.einsum("bk,bl,klx->bx", p, p, mkl)[..., None]
        D.d[:, flex] += np.einsum("bl,klxy->bkxy", p, Dkl)
        M.d[:, flex] += np.einsum("bl,klx->bkx", p, mkl)[..., None]
        D.h[:, flex, flex] = Dkl
        M.h[:, flex, flex] = mkl[..., None]
    return D, M


def _section_jet(beam, x, p, flex, n, order):
    """Jet of the transform of the beam section at arc length x (its frame in the link frame)."""
    B, nb = p.shape
    kin = beam.kinematics
    th, _, u = kin.fields([x / beam.length])
    th, u = th[:, 0], u[:, 0]  # (nb, 3)
    Rk = np.zeros((nb, 4, 4))
    Rk[:, :3, :3] = skew(th)
    Rk[:, :3, 3] = u
    base = np.eye(4)
    base[:3, 3] = beam.root + x * kin.e
    S = Jet.constant(np.broadcast_to(base, (B, 4, 4)).copy(), n)
    S.v = S.v + np.einsum("bk,kxy->bxy", p, Rk)
    S.d[:, flex] = np.broadcast_to(Rk, (B,) + Rk.shape)
    if order == 2:
        R2, r2 = kin.section(x)
        Skl = np.zeros((nb, nb, 4, 4))
        Skl[..., :3, :3], Skl[..., :3, 3] = R2, r2
        S.v = S.v + 0.5 * np.einsum("bk,bl,klxy->bxy", p, p, Skl)
        S.d[:, flex] += np.einsum("bl,klxy->bkxy", p, Skl)
        S.h[:, flex, flex] = Skl
    return S


def _vee(M):
    """Axial vector of the antisymmetric part of (..., 3, 3)."""
    return 0.5 * np.stack([M[..., 2, 1] - M[..., 1, 2], M[..., 0, 2] - M[..., 2, 0], M[..., 1, 0] - M[..., 0, 1]], -1)


def potential_derivatives(robot, q, wrench, point, order):
    """Gradient (B, nq) and tangent (B, nq, nq) of Pi at q (B, nq) (the moment's generalized force
    included), and the jet of the loaded point's frame (its value: the endpoint transform)."""
    model = numeric_model(robot)
    B, n = q.shape
    kinetic_order = 2 if order == 2 else 1
    g4 = np.append(np.asarray(model.gravity, float), 0.0)
    base = Jet.constant(np.broadcast_to(np.eye(4), (B, 4, 4)).copy(), n)
    first = Jet.constant(np.zeros((B, 4, 1)), n)  # sum of first moments, base frame
    grad = np.zeros((B, n))
    hess = np.zeros((B, n, n))
    at, T, arc = point  # the loaded link, the frame on it, or an arc length along its beam
    X = None
    distal = []  # each link's distal frame: a tree's links start from their parent's
    for i, lk in enumerate(model.links):
        W = distal[lk.parent] if lk.parent >= 0 else base
        Wh = W @ _joint_jet(lk, q[:, i], i, n)
        first = first + Wh @ lk.body_base[:, 3:4]
        if lk.beam is not None:
            p = q[:, lk.flex]
            D, M = _beam_jets(lk.beam, p, lk.flex, n, kinetic_order)
            first = first + Wh @ M
            W = Wh @ D
            K = lk.beam.K
            grad[:, lk.flex] += p @ K.T
            hess[:, lk.flex, lk.flex] += K
            if i == at and arc is not None:
                X = Wh @ _section_jet(lk.beam, arc, p, lk.flex, n, kinetic_order)
        else:
            W = Wh
        first = first + W @ lk.body_tip[:, 3:4]
        distal.append(W)
    if X is None:
        X = distal[at] @ T
    grad -= np.einsum("x,bkx->bk", g4, first.d[..., 0])
    hess -= np.einsum("x,bklx->bkl", g4, first.h[..., 0])
    f, m = wrench[:, :3], wrench[:, 3:]
    grad -= np.einsum("bx,bkx->bk", f, X.d[..., :3, 3])
    hess -= np.einsum("bx,bklx->bkl", f, X.h[..., :3, 3])
    if np.any(m):  # Q_k = m . omega_k with skew(omega_k) = dR/dq_k R^T
        R, dR, hR = X.v[:, :3, :3], X.d[:, :, :3, :3], X.h[:, :, :, :3, :3]
        Rt = np.swapaxes(R, -1, -2)[:, None]
        omega = _vee(dR @ Rt)
        d_omega = _vee(hR @ Rt[:, None] + dR[:, :, None] @ np.swapaxes(dR, -1, -2)[:, None])
        grad -= np.einsum("bx,bkx->bk", m, omega)
        hess -= np.einsum("bx,bklx->bkl", m, d_omega)
    return grad, hess, X


# ----- the public function --------------------------------------------------------------------
@dataclass
class StaticsResult:
    """Equilibrium of the arm under the load, batched over the leading shape of the inputs.

    q: all coordinates (..., nq); q_f: flexible coordinates (..., nf); torques: joint torques or
    forces that hold the arm (..., n_joints); position: the loaded point (..., 3) and
    orientation: its frame's rotation (..., 3, 3) in the base frame, as the kinematics of this
    order gives them; deflection: position minus that of the undeformed arm (..., 3) and
    deflection_local: the same in the frame of the undeformed arm at the loaded point (for one
    link in a plane: component 1 is the deflection normal to the arm, 001's frame R1);
    gauges: (link, x) of each requested gauge; curvature: (..., n_gauges, 3) twist and bending
    curvatures (kappa_x, kappa_y, kappa_z) there (see :func:`flexman.analysis.curvature`);
    stiffness: the tangent stiffness d2Pi/dq_f2 at the equilibrium (..., nf, nf)."""

    order: int
    q: np.ndarray
    q_f: np.ndarray
    torques: np.ndarray
    position: np.ndarray
    orientation: np.ndarray
    deflection: np.ndarray
    deflection_local: np.ndarray
    gauges: list = field(default_factory=list)
    curvature: np.ndarray = None
    stiffness: np.ndarray = None
    newton_steps: int = 0          # Newton steps taken (the stop rule: update below RTOL of the deflection)
    residual: np.ndarray = None    # the unbalanced generalized force left on the flexible coordinates (...)


def _check_order(order):
    if isinstance(order, bool) or order not in ORDERS:
        raise ValueError(f"order: must be 0 (rigid model), 1 (first-order kinematics) or 2 "
                         f"(second-order kinematics), got {order!r}")
    return int(order)


def _check_q_r(robot, q_r):
    try:
        q_r = np.asarray(q_r, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"q_r: expected {robot.n_joints} joint values (numbers)") from None
    if q_r.ndim == 0 and robot.n_joints == 1:
        q_r = q_r[None]
    if q_r.shape[-1:] != (robot.n_joints,):
        raise ValueError(f"q_r: expected {robot.n_joints} joint value(s) in the last axis "
                         f"({', '.join(robot.coordinate_names[:robot.n_joints])}), got shape {q_r.shape}")
    if not np.all(np.isfinite(q_r)):
        raise ValueError("q_r: joint values must be finite numbers")
    return q_r


def _check_wrench(wrench):
    if wrench is None:
        return np.zeros(6)
    try:
        w = np.asarray(wrench, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("wrench: expected 6 numbers [fx, fy, fz, mx, my, mz] (N, N m, base frame)") from None
    if w.shape[-1:] != (6,):
        raise ValueError(f"wrench: expected 6 numbers [fx, fy, fz, mx, my, mz] (N, N m, base frame) in the "
                         f"last axis, got shape {w.shape}; for a force alone pad with three zero moments")
    if not np.all(np.isfinite(w)):
        raise ValueError("wrench: all loads must be finite numbers (got nan or inf)")
    worst = float(np.abs(w).max()) if w.size else 0.0
    if worst > MAX_FORCE:
        raise ValueError(f"wrench: a load of {worst:g} N (N m) is beyond the supported magnitude {MAX_FORCE:g} "
                         "(README, Limits)")
    return w


def _check_point(robot, point, link=-1):
    """(link index, 4x4 frame on it, arc length or None) of the loaded point: on ``link`` (a number,
    a link's name or a named frame, whose transform then places the point), None (the distal frame
    origin), a 3-vector in that frame, or an arc length along the link's beam (float)."""
    last, T = inputs.link_frame(robot, link)
    if last < 0:
        raise ValueError(f"link: {link!r} is fixed to the base; a wrench there does no work on the arm")
    framed = T is not None
    T = np.eye(4) if T is None else np.array(T, dtype=float)
    if point is None:
        return last, T, None
    arr = np.asarray(point, dtype=float) if not isinstance(point, str) else None
    if arr is None or arr.shape not in ((), (3,)):
        raise ValueError("point: give [x, y, z] in the last link's distal frame (m), or a distance "
                         "along the last link's beam from its root (m)")
    if not np.all(np.isfinite(arr)):
        raise ValueError("point: must be finite numbers")
    if arr.shape == (3,):
        if float(np.abs(arr).max()) > MAX_LENGTH:
            raise ValueError(f"point: {float(np.abs(arr).max()):g} m from the link's frame is beyond the supported "
                             f"magnitude {MAX_LENGTH:g} m (README, Limits); give a point on the arm")
        offset = np.eye(4)
        offset[:3, 3] = arr
        return last, T @ offset, None
    if framed:
        raise ValueError("point: a distance along a beam applies to a link, not to a named frame")
    L = beam_length(robot, last)
    if L is None:
        raise ValueError(f"point: a distance along the link needs a flexible last link (link {last} has no "
                         "beam); give [x, y, z] in its distal frame instead")
    x = float(arr)
    if not 0.0 <= x <= L:
        raise ValueError(f"point: {x:g} m is outside link {last}'s beam; give a distance from its root "
                         f"in [0, {L:g}] m")
    return last, T, x


def _check_beams(robot, order):
    for i, link in enumerate(robot.links):
        if link.is_flexible and link.joint == "prismatic":
            raise ValueError(f"statics: link {i} is a sliding beam (prismatic joint); statics supports "
                             "flexible links on revolute joints")


def _describe_sample(q_r, wrench, b):
    return f"q_r = {np.array2string(q_r[b], precision=4)}, wrench = {np.array2string(wrench[b], precision=4)}"


def _solve(robot, q, wrench, point, order):
    """Newton on dPi/dq_f = 0 for every sample; returns (q, grad, hess, X, steps) at the equilibrium."""
    F = robot.flex_index
    for steps in range(MAX_ITERATIONS):
        grad, hess, X = potential_derivatives(robot, q, wrench, point, order)
        if order == 0 or robot.nf == 0:
            return q, grad, hess, X, steps
        Hff = hess[:, F][:, :, F]
        try:
            step = -np.linalg.solve(Hff, grad[:, F, None])[..., 0]
        except np.linalg.LinAlgError:
            bad = [b for b in range(len(Hff)) if np.linalg.matrix_rank(Hff[b]) < Hff.shape[-1]]
            raise BucklingError(_buckling_message(robot, q, wrench, Hff, bad[0] if bad else 0)) from None
        q[:, F] += step
        size = np.abs(step).max(axis=-1)
        if np.all(size <= RTOL * np.abs(q[:, F]).max(axis=-1) + ATOL):
            return (q,) + potential_derivatives(robot, q, wrench, point, order) + (steps + 1,)
    worst = int(np.argmax(size))
    raise BucklingError(
        f"statics: no equilibrium found in {MAX_ITERATIONS} Newton steps at "
        f"{_describe_sample(q[:, robot.joint_index], wrench, worst)} (last update {size[worst]:.3g}); "
        "the load is beyond what the flexible links can hold (buckling)")


def _buckling_message(robot, q, wrench, Hff, b):
    lam = np.linalg.eigvalsh(0.5 * (Hff[b] + Hff[b].T)).min()
    return (f"statics: buckling: the flexible links have no stable equilibrium at "
            f"{_describe_sample(q[:, robot.joint_index], wrench, b)} (smallest tangent stiffness "
            f"eigenvalue {lam:.3g}); a compressive load beyond the buckling load of the second-order model")


def statics(robot, q_r, wrench=None, point=None, order=2, gauges=None, link=None):
    """Static equilibrium of ``robot`` held at joint positions ``q_r`` under gravity and an endpoint
    wrench: the flexible coordinates, the joint torques that hold it, where the loaded point is,
    and the beam curvatures at the gauges.

    q_r: (..., n_joints) joint positions (rad or m). wrench: (..., 6) ``[fx, fy, fz, mx, my, mz]``
    in the base frame (N, N m), constant in direction (dead load); None: gravity only. q_r and
    wrench broadcast against each other (e.g. angles (N, 1, n_joints) x forces (M, 6)).
    point: where the wrench acts on the link: None (the origin of its distal frame, the tip),
    [x, y, z] in that frame (a tool point), or a distance along its beam from the root (m).
    link: the loaded link (a number, a link's name, or a named frame such as a URDF's ``tool0``, the
    point then given in that frame; default the robot's end effector, ``robot.end_effector``, else
    the last link); on a tree, any branch.
    order: 0 rigid, 1 first-order or 2 second-order kinematics (see the module docstring).
    gauges: strain-gauge positions (see :func:`flexman.model.gauges.check_gauges`). Returns a :class:`StaticsResult`.
    Raises ValueError for bad input and :class:`BucklingError` when no stable equilibrium exists.
    """
    from .strain import curvature

    order = _check_order(order)
    link = inputs.end_effector(robot, link)
    q_r = _check_q_r(robot, q_r)
    if getattr(robot, "mimic", None):
        return _mimic_statics(robot, q_r, wrench, point, order, gauges, link)
    wrench = _check_wrench(wrench)
    point = _check_point(robot, point, link)
    sites = check_gauges(robot, gauges)
    _check_beams(robot, order)
    shape = np.broadcast_shapes(q_r.shape[:-1], wrench.shape[:-1])
    qr = np.broadcast_to(q_r, shape + q_r.shape[-1:]).reshape(-1, robot.n_joints)
    w = np.broadcast_to(wrench, shape + (6,)).reshape(-1, 6).copy()
    q = np.zeros((len(qr), robot.nq))
    q[:, robot.joint_index] = qr
    q, grad, hess, X, steps = _solve(robot, q, w, point, order)
    F = robot.flex_index
    Hff = hess[:, F][:, :, F]
    if robot.nf and order:
        lam = np.linalg.eigvalsh(0.5 * (Hff + np.swapaxes(Hff, -1, -2)))[:, 0]
        scale = np.abs(np.diagonal(Hff, axis1=-2, axis2=-1)).max(axis=-1)
        unstable = np.flatnonzero(lam <= 1e-12 * scale)
        if unstable.size:
            raise BucklingError(_buckling_message(robot, q, w, Hff, int(unstable[0])))
    rigid = q.copy()
    rigid[:, F] = 0.0
    _, _, X0 = potential_derivatives(robot, rigid, np.zeros_like(w), point, order)
    kappa = np.zeros((len(q), len(sites), 3))
    for j, (link, x) in enumerate(sites):
        kappa[:, j] = curvature(robot, q, link, x)
    tau = grad[:, robot.joint_index]
    unflat = lambda a: a.reshape(shape + a.shape[1:])
    return StaticsResult(
        order=order, q=unflat(q), q_f=unflat(q[:, F]), torques=unflat(tau),
        position=unflat(X.v[:, :3, 3]), orientation=unflat(X.v[:, :3, :3]),
        deflection=unflat(X.v[:, :3, 3] - X0.v[:, :3, 3]),
        deflection_local=unflat(np.einsum("bxy,bx->by", X0.v[:, :3, :3], X.v[:, :3, 3] - X0.v[:, :3, 3])),
        gauges=sites,
        curvature=unflat(kappa), stiffness=unflat(Hff), newton_steps=steps,
        residual=unflat(np.abs(grad[:, F]).max(axis=-1) if robot.nf else np.zeros(len(q))))


def _mimic_statics(robot, q_r, wrench, point, order, gauges, link):
    """Statics of a robot with mimic joints: the full robot held at ``G q_r + c`` (its joints), the
    holding torques reduced by ``G^T`` (the followers' reach the joints they follow), q reduced."""
    import dataclasses

    G, c = robot.mimic_map()
    n_full, n = len(robot.links), robot.n_joints
    res = statics(robot.full, q_r @ G[:n_full, :n].T + c[:n_full], wrench, point, order, gauges, link)
    q = np.concatenate([np.broadcast_to(q_r, res.q_f.shape[:-1] + (n,)), res.q_f], axis=-1)
    return dataclasses.replace(res, q=q, torques=res.torques @ G[:n_full, :n])
