"""The numeric API behind ``Robot``: every function accepts leading batch dimensions.

Default formulations:

* rigid arms: recursive Newton-Euler (:mod:`.rnea`) for inverse dynamics and bias forces, the
  composite-body (DeNOC) mass matrix (:mod:`.crba`);
* flexible arms: the recursive 4x4 Lagrangian (Book; :mod:`.lagrange4`), revolute or prismatic,
  assumed modes or finite elements. Its mass matrix: for one state, the same recursion with unit
  accelerations (no velocity, no gravity) in one vectorized call; for several states, composite
  bodies in the 4x4 form (``lagrange4.mass_matrix``), fewer operations per state.

Both are recursive (cost linear in the number of links per evaluation) and both are checked
against each other, against Pinocchio and against the energy-based Lagrangian in the tests.

External wrenches: ``f_ext`` is a list of ``(link, point, wrench)`` with ``point`` in that
link's distal frame and ``wrench = [fx, fy, fz, mx, my, mz]`` in the base frame; they enter
as ``J^T w`` (Piedboeuf, ``Q = J^T f``).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ..model import inputs, limits
from ..model.checks import require_invertible
from ..model.errors import SingularMatrixError
from . import crba, derivatives, rnea
from . import lagrange4 as l4
from .structure import numeric_model


def _in_chunks(robot, fn, *arrays, composite=False):
    """``fn(*arrays)`` over the arrays' common batch, evaluated a chunk of states at a time so
    that the recursions' intermediates stay near ``limits.BATCH_BYTES`` however large the
    batch (1e5 mass matrices of a 7-coordinate arm: tens of MB, not GB). ``fn`` returns an
    array or a tuple of arrays with the batch in front; symbolic arrays go through whole.
    ``composite``: ``fn`` builds its flexible mass matrices by composite bodies where they
    apply (``_flexible_mass_and_bias``), which keeps far less alive per state."""
    if any(a.dtype == object for a in arrays):
        return fn(*arrays)
    batch = np.broadcast_shapes(*(a.shape[:-1] for a in arrays))
    n = math.prod(batch)
    if n <= 1:  # (a single state: no chunking to size, nothing to look up on the hot path)
        return fn(*arrays)
    composite = composite and not robot.is_rigid and l4.composite_applies(numeric_model(robot))
    size = limits.chunk_states(robot.nq, robot.n_joints, composite)
    if n <= size:
        return fn(*arrays)
    flat = [np.broadcast_to(a, batch + a.shape[-1:]).reshape((n,) + a.shape[-1:]) for a in arrays]
    outs = None
    for start in range(0, n, size):
        part = fn(*[f[start:start + size] for f in flat])
        parts = part if isinstance(part, tuple) else (part,)
        if outs is None:
            outs = [np.empty((n,) + np.shape(p)[1:], dtype=np.result_type(p)) for p in parts]
        for out, p in zip(outs, parts):
            out[start:start + size] = p
    outs = [out.reshape(batch + out.shape[1:]) for out in outs]
    return tuple(outs) if isinstance(part, tuple) else outs[0]


# ----- mimic joints: the full model's answers reduced by q_full = G q + c ---------------------
def _mimic(robot):
    """(G, c, the full robot) for a robot with mimic joints (model.robot.MimicRobot), else None."""
    if not getattr(robot, "mimic", None):
        return None
    G, c = robot.mimic_map()
    return G, c, robot.full


def _expand(G, c, q=None, qd=None):
    """q_full = G q + c (``qd``: the rates, G qd)."""
    if q is not None:
        return q @ G.T + c
    return qd @ G.T


def _reduce_vector(G, v):
    """G^T v for v (..., n_full)."""
    return v @ G


def _reduce_matrix(G, M):
    """G^T M G for M (..., n_full, n_full)."""
    return np.swapaxes(G, 0, 1) @ M @ G


def _wrench_forces(robot, q, f_ext):
    if f_ext is None or (isinstance(f_ext, (list, tuple)) and not f_ext):
        return 0.0
    if not isinstance(f_ext, (list, tuple)):
        raise ValueError("f_ext: expected a list of (link, point, wrench) entries")
    total = 0.0
    m = _mimic(robot)  # with mimic joints: (J_full G)^T w, J_full at G q + c
    on, q_on = (robot, q) if m is None else (m[2], _expand(m[0], m[1], q))
    for k, entry in enumerate(f_ext):
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise ValueError(f"f_ext[{k}]: expected (link, point, wrench), got {entry!r:.60}")
        link, point, wrench = entry
        wrench = inputs.vector(wrench, 6, f"f_ext[{k}] wrench [fx, fy, fz, mx, my, mz]")
        # the kinematics of the dynamics: second order on the beams with geometric stiffening
        i, pt = _on_link(robot, link, inputs.point(point))
        if i < 0:  # a frame on the base: the wrench does no work
            continue
        J = _in_chunks(on, lambda q: l4.point_jacobian(numeric_model(on), q, i, pt, second_order=None), q_on)
        if m is not None:
            J = J @ m[0]
        total = total + (np.swapaxes(J, -1, -2) @ wrench[..., None])[..., 0]
    return total


def inverse_dynamics(robot, q, qd, qdd, f_ext=None):
    """Generalized forces [tau; residuals] = M qdd + b - J^T w."""
    q, qd, qdd = inputs.states(robot, q=q, qd=qd, qdd=qdd)
    if (m := _mimic(robot)) is not None:
        G, c, full = m
        return _reduce_vector(G, inverse_dynamics(full, _expand(G, c, q), _expand(G, c, qd=qd),
                                                  _expand(G, c, qd=qdd), f_ext=f_ext))

    def one_chunk(q, qd, qdd):
        if robot.is_rigid:
            out = rnea.inverse_dynamics(robot, q, qd, qdd)
        else:
            out = l4.inverse_dynamics(numeric_model(robot), q, qd, qdd)
        return out - _wrench_forces(robot, q, f_ext)

    return _in_chunks(robot, one_chunk, q, qd, qdd)


def mass_matrix(robot, q):
    """M(q) (..., nq, nq): composite rigid bodies for rigid arms (crba), their 4x4 analogue for
    flexible ones (lagrange4.mass_matrix)."""
    q = inputs.state(robot, q)
    if (m := _mimic(robot)) is not None:
        G, c, full = m
        return _reduce_matrix(G, mass_matrix(full, _expand(G, c, q)))
    if robot.is_rigid:
        return _in_chunks(robot, lambda q: crba.mass_matrix(robot, q), q)
    return _in_chunks(robot, lambda q: _flexible_mass_and_bias(robot, q, None)[0], q, composite=True)


def bias_forces(robot, q, qd):
    """b(q, qd): Coriolis/centrifugal, gravity, elastic K q_f, damping and joint friction."""
    q, qd = inputs.states(robot, q=q, qd=qd)
    if (m := _mimic(robot)) is not None:
        G, c, full = m
        return _reduce_vector(G, bias_forces(full, _expand(G, c, q), _expand(G, c, qd=qd)))
    if robot.is_rigid:
        return _in_chunks(robot, lambda q, qd: rnea.inverse_dynamics(robot, q, qd, None), q, qd)
    return _in_chunks(robot, lambda q, qd: l4.inverse_dynamics(
        numeric_model(robot), q, qd, np.zeros(np.broadcast_shapes(q.shape, qd.shape))), q, qd)


def mass_matrix_and_bias(robot, q, qd):
    """(M, b) together; for flexible arms from one forward pass of the 4x4 recursion (see
    ``_flexible_mass_and_bias``)."""
    q, qd = inputs.states(robot, q=q, qd=qd)
    if (m := _mimic(robot)) is not None:
        G, c, full = m
        M, b = mass_matrix_and_bias(full, _expand(G, c, q), _expand(G, c, qd=qd))
        return _reduce_matrix(G, M), _reduce_vector(G, b)
    if robot.is_rigid:
        return _in_chunks(robot, lambda q, qd: (crba.mass_matrix(robot, q), rnea.inverse_dynamics(robot, q, qd, None)), q, qd)
    return _in_chunks(robot, lambda q, qd: _flexible_mass_and_bias(robot, q, qd), q, qd, composite=True)


def _flexible_mass_and_bias(robot, q, qd):
    """(M, b) of a flexible arm. For several states, M by composite bodies
    (``lagrange4.mass_matrix``: fewest operations per state) and b by the recursion, sharing
    one forward pass. For one state (or with sliding beams), one vectorized recursion over nq
    samples with unit accelerations (the columns of M) and with ``qd`` one more with the actual
    velocities, gravity and elasticity (b): fewest NumPy calls. b is None without ``qd``."""
    model = numeric_model(robot)
    if l4.composite_applies(model) and q.size > q.shape[-1]:
        return (l4.mass_matrix(model, q), None) if qd is None else l4.mass_and_bias(model, q, qd)
    if qd is not None:
        q, qd = np.broadcast_arrays(q, qd)
    nq = q.shape[-1]
    n = nq + (qd is not None)
    batch = q.shape[:-1]
    qb = q[..., None, :]  # positions are shared by the n samples: computed once, broadcast
    qdb = np.zeros(batch + (n, nq), dtype=float if qd is None else qd.dtype)
    qddb = np.zeros(batch + (n, nq))
    qddb[..., :nq, :] = np.eye(nq)
    grav, elastic = np.zeros((n, 3)), np.zeros(n)
    if qd is not None:
        qdb[..., nq, :] = qd
        grav[nq], elastic[nq] = robot.gravity, 1.0
    out = l4.inverse_dynamics(model, qb, qdb, qddb, gravity=grav, elastic=elastic)
    return np.swapaxes(out[..., :nq, :], -1, -2), (None if qd is None else out[..., nq, :])


def selection(robot):
    """S (nq x n_joints): joint torques act on the joint coordinates only."""
    S = np.zeros((robot.nq, robot.n_joints))
    S[np.arange(robot.n_joints), np.arange(robot.n_joints)] = 1.0
    return S


def generalized_force(robot, tau):
    """S tau for tau (..., n_joints)."""
    tau = inputs.joint_values(robot, tau)
    out = np.zeros(tau.shape[:-1] + (robot.nq,), dtype=np.result_type(tau, float))
    out[..., : robot.n_joints] = tau
    return out


def forward_dynamics(robot, q, qd, tau, f_ext=None):
    """qdd solving M qdd = S tau - b + J^T w (tau has one entry per joint)."""
    require_invertible(robot)  # a robot loaded with a massless chain: its one sentence
    q, qd, tau = inputs.states(robot, q=q, qd=qd, tau=tau)

    def one_chunk(q, qd, tau):
        M, b = mass_matrix_and_bias(robot, q, qd)
        rhs = generalized_force(robot, tau) - b + _wrench_forces(robot, q, f_ext)
        rhs = np.broadcast_to(rhs, np.broadcast_shapes(rhs.shape, M.shape[:-1]))
        M = np.broadcast_to(M, rhs.shape[:-1] + M.shape[-2:])
        try:
            return np.linalg.solve(M, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            raise SingularMatrixError("forward_dynamics: the mass matrix is singular at this state (a joint that "
                                      "moves no mass?); flexman.model.checks.mass_matrix_problem(robot, q) names it") from None

    return _in_chunks(robot, one_chunk, q, qd, tau, composite=f_ext is None)  # (wrenches: Jacobians per state)


def kinetic_energy(robot, q, qd):
    q, qd = inputs.states(robot, q=q, qd=qd)
    if (m := _mimic(robot)) is not None:
        G, c, full = m
        return kinetic_energy(full, _expand(G, c, q), _expand(G, c, qd=qd))
    return _in_chunks(robot, lambda q, qd: l4.kinetic_energy(numeric_model(robot), q, qd), q, qd)


def potential_energy(robot, q):
    if (m := _mimic(robot)) is not None:
        G, c, full = m
        return potential_energy(full, _expand(G, c, inputs.state(robot, q)))
    return _in_chunks(robot, lambda q: l4.potential_energy(numeric_model(robot), q), inputs.state(robot, q))


def _order(order):
    if isinstance(order, bool) or order not in (1, 2):
        raise ValueError(f"order: must be 1 or 2 (got {order!r})")
    return order


def _on_link(robot, link, point):
    """(link index, the point in that link's distal frame) for a link (number or name) or a named
    frame, the point given in that frame (None: its origin)."""
    i, T = inputs.link_frame(robot, link)
    if T is None:
        return i, point
    return i, T[:3, 3] + (T[:3, :3] @ point if point is not None else 0.0)


def frame(robot, q, link=-1, order=1):
    """Distal frame (..., 4, 4) of a link in the base frame, deflection included
    (order=2 adds foreshortening, as in :func:`jacobian`); ``link`` may also be a link's name or
    a named fixed frame (``robot.frames``, e.g. a URDF's ``tool0``)."""
    (i, T), order = inputs.link_frame(robot, link), _order(order)
    q = inputs.state(robot, q)
    if i < 0:  # fixed on the base
        return np.broadcast_to(T, q.shape[:-1] + (4, 4)).copy()
    if (m := _mimic(robot)) is not None:  # the full robot's frame at G q + c
        G, c, robot = m
        q = _expand(G, c, q)
    W = _in_chunks(robot, lambda q: l4.frames(numeric_model(robot), q, second_order=(order == 2))[i], q)
    return W if T is None else W @ T


def jacobian(robot, q, link=-1, point=None, order=1):
    """Geometric Jacobian (..., 6, nq) of a point of a link (in its distal frame; ``link`` a number,
    a link's name or a named frame, the point then in that frame), rows
    [linear velocity; angular velocity] in the base frame, flexible columns included.

    order=1: deflections linear in q_f (the first-order dynamics model).
    order=2: adds the foreshortening of each beam (its tip moves back along the axis by
    1/2 int (w')^2 dx), so the Jacobian is exact to first order in the deflection (Piedboeuf,
    001 sec. 2-3: second-order kinematics).
    """
    order = _order(order)
    q = inputs.state(robot, q)
    i, point = _on_link(robot, link, inputs.point(point))
    if i < 0:  # fixed on the base
        return np.zeros(q.shape[:-1] + (6, robot.nq))
    if (m := _mimic(robot)) is not None:  # J_full G
        G, c, full = m
        return jacobian(full, _expand(G, c, q), i, point, order=order) @ G
    return _in_chunks(robot, lambda q: l4.point_jacobian(numeric_model(robot), q, i, point, second_order=(order == 2)), q)


def inverse_dynamics_derivatives(robot, q, qd, qdd):
    """(d tau/d q, d tau/d qd, M): see :mod:`.derivatives`."""
    return derivatives.inverse_dynamics_derivatives(robot, q, qd, qdd, inverse_dynamics, mass_matrix)


def forward_dynamics_derivatives(robot, q, qd, tau):
    """(d qdd/d q, d qdd/d qd, d qdd/d tau): see :mod:`.derivatives`."""
    return derivatives.forward_dynamics_derivatives(robot, q, qd, tau, sys.modules[__name__])
