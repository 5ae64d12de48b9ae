"""Book's recursive 4x4 Lagrangian: inverse dynamics of serial and tree-shaped arms with rigid and
flexible links.

Every mass point sits at ``r = W h`` with ``W`` a product of 4x4 transforms (DH ``A_i`` and the
small-deflection tip transforms ``D_i``, thesis eqs. 2.4-2.19 / 004 eqs. 2-4) and ``h`` its
homogeneous position in a link frame, affine in the link's flexible coordinates. Lagrange's
equations in d'Alembert form give, for every coordinate k (thesis eqs. 2.32-2.35),

    Q_k = sum_bodies int (dr/dq_k) . r_ddot dm + dV/dq_k,

and with ``dr/dq_k = (dW/dq_k) h + W dh/dq_k`` the integrals collapse to traces of 4x4 matrices:
``tr(dW/dq_k Phi_b)`` with ``Phi_b = int h r_ddot^T dm``. A forward recursion carries W, W_dot,
W_ddot (eqs. 2.13-2.19, gravity entering as the base acceleration) and a backward recursion
accumulates ``G = sum (frame -> body) Phi_b`` so every coordinate's force is one trace:
O(n) 4x4 products per evaluation, for any mix of rigid and flexible links. On a tree each link
starts from its parent's distal frame and the backward pass sums over its children (Book's
recursion is a tree recursion); links are in depth-first order, so parents come first.
"""
from __future__ import annotations

import numpy as np

from . import dh, motors, ops
from .beams import identity as _identity
from .ops import transpose as _T


def _col(x):
    return x[..., None, None]


def forward(model, q, qd, qdd, gravity=True, second_order=False):
    """Frames and their first and second time derivatives, link by link.

    ``second_order``: True or False for every beam's tip (kinematics), or None for the dynamics:
    second order exactly on the beams with geometric stiffening.

    Returns a list of dicts with the previous distal frame ``W0``, ``A1 = dA/dq``, the
    undeformed frame ``Wh`` (after A_i) and the distal frame ``W`` (after D_i), each with
    ``*d`` and ``*dd`` derivatives, and the link's flexible coordinates ``p, pd, pdd``.
    """
    q = ops.asarray(q)
    batch = q.shape[:-1]
    W = _identity(batch, q)
    Wd = ops.zeros_like_batch(batch, (4, 4), q)
    per_sample = isinstance(gravity, np.ndarray)  # gravity vectors (..., 3), one per sample
    Wdd = ops.zeros_like_batch(np.broadcast_shapes(batch, gravity.shape[:-1]) if per_sample else batch, (4, 4), q)
    if per_sample:
        Wdd[..., :3, 3] = -gravity
    elif gravity:
        Wdd[..., :3, 3] = -np.asarray(model.gravity)  # base acceleration -g (r_ddot - g for every point)
    base = W, Wd, Wdd
    out = []
    for i, lk in enumerate(model.links):
        W, Wd, Wdd = base if lk.parent < 0 else (out[lk.parent]["W"], out[lk.parent]["Wd"], out[lk.parent]["Wdd"])
        JN = dh.joint_motion(q[..., i] + lk.offset, lk.revolute, like=q) @ lk.N  # the one batched product
        PG = lk.P @ lk.gen  # constant: dA/dq = P G J N
        A = lk.P @ JN
        A1 = PG @ JN
        v, a = _col(qd[..., i]), _col(qdd[..., i])
        Wh = W @ A
        W_A1 = W @ A1
        Whd = Wd @ A + W_A1 * v
        Whdd = Wdd @ A + 2 * (Wd @ A1) * v + W_A1 * a
        if lk.revolute:  # d2A/dq2 = P G G J N (zero for a prismatic joint)
            Whdd = Whdd + (W @ ((PG @ lk.gen) @ JN)) * (v * v)
        rec = dict(W0=W, A=A, A1=A1, Wh=Wh, Whd=Whd, Whdd=Whdd)
        if lk.beam is not None:
            p, pd, pdd = lk.beam.local(q, qd, qdd, i, lk.flex, lk.offset)
            D, Dd, Ddd = lk.beam.tip(p, pd, pdd)
            if lk.beam.stiffening if second_order is None else second_order:  # second-order tip kinematics
                dD, dDd, dDdd = lk.beam.second_order_tip(p, pd, pdd)
                D, Dd, Ddd = D + dD, Dd + dDd, Ddd + dDdd
            W = Wh @ D
            Wd = Whd @ D + Wh @ Dd
            Wdd = Whdd @ D + 2 * (Whd @ Dd) + Wh @ Ddd
            rec.update(D=D, p=p, pd=pd, pdd=pdd)
        else:
            W, Wd, Wdd = Wh, Whd, Whdd
        rec.update(W=W, Wd=Wd, Wdd=Wdd)
        out.append(rec)
    return out


def inverse_dynamics(model, q, qd, qdd, gravity=True, elastic=True, friction=True):
    """Generalized forces (..., nq) that produce qdd at (q, qd); flexible rows are residuals.

    ``gravity`` may be an array (..., 3) and ``elastic`` an array (...,) of 0/1, per sample,
    so that M (no gravity, no elasticity) and b come out of one vectorized call."""
    q, qd, qdd = ops.asarray(q), ops.asarray(qd), ops.asarray(qdd)
    # Shapes broadcast as they meet, so positions shared by many samples (the columns of M) are
    # computed once; a sliding beam's field coefficients need equal shapes from the start.
    if any(lk.beam is not None and lk.beam.sliding for lk in model.links):
        q, qd, qdd = np.broadcast_arrays(q, qd, qdd)
    return backward(model, forward(model, q, qd, qdd, gravity, second_order=None), q, qd, qdd, elastic, friction)


def backward(model, recs, q, qd, qdd, elastic=True, friction=True):
    """The backward pass of :func:`inverse_dynamics` over the frames ``recs`` of :func:`forward`
    (at ``q``, ``qd``, ``qdd``), elastic joints' motors added (:mod:`.motors`)."""
    n = len(model.links)
    children = model.children
    cols = [None] * model.nq
    gyro = {}
    for m in motors.coupled(model):
        gyro.setdefault(m.carrier, []).append(m)
    G_hats = [None] * n
    for i in range(n - 1, -1, -1):
        lk, rec = model.links[i], recs[i]
        G = lk.body_tip @ _T(rec["Wdd"])
        for c in children[i]:  # what the children carry, moved onto link i's distal frame
            G = G + recs[c]["A"] @ G_hats[c]
        for m in gyro.get(i, ()):  # rotors link i carries (the complete elastic-joint model)
            G = G + motors.carrier_load(m, rec["W"][..., :3, :3], rec["Wd"][..., :3, :3], qd, qdd)
        G_hat = lk.body_base @ _T(rec["Whdd"])
        extra = 0
        if lk.beam is not None:
            beam, p = lk.beam, rec["p"]
            phi, q_local = beam.terms(rec["Wh"], rec["Whd"], rec["Whdd"], p, rec["pd"], rec["pdd"])
            # tr(Wh dD/dp_j G) = tr(dD/dp_j (G Wh)): one product per sample, then a sparse trace per mode
            q_loc = ops.trace_product(beam.tip_partials(p, beam.stiffening), (G @ rec["Wh"])[..., None, :, :]) + q_local
            if isinstance(elastic, np.ndarray):  # per-sample on/off (...,)
                q_loc = q_loc + elastic[..., None] * beam.elastic(p, rec["pd"])
            elif elastic:
                q_loc = q_loc + beam.elastic(p, rec["pd"])
            if beam.sliding:  # the first local coordinate is this joint's own
                extra, q_loc = q_loc[..., 0], q_loc[..., 1:]
            for k, idx in enumerate(range(lk.flex.start, lk.flex.stop)):
                cols[idx] = q_loc[..., k]
            G_hat = G_hat + phi + rec["D"] @ G
        else:
            G_hat = G_hat + G
        tau = ops.trace_product(rec["W0"] @ rec["A1"], G_hat) + extra
        tau = tau + lk.armature * qdd[..., i]
        if friction and lk.viscous:
            tau = tau + lk.viscous * qd[..., i]
        if friction and lk.coulomb and not ops.is_symbolic(qd):
            tau = tau + lk.coulomb * np.sign(qd[..., i])
        cols[i] = tau
        G_hats[i] = G_hat
    motors.add_forces(model, cols, q, qd, qdd, elastic, friction)
    for m in motors.coupled(model):
        W = recs[m.carrier]
        cols[m.index] = cols[m.index] + motors.motor_load(m, W["W"][..., :3, :3], W["Wdd"][..., :3, :3])
    return np.stack(np.broadcast_arrays(*cols), axis=-1)


def composite_applies(model) -> bool:
    """:func:`mass_matrix` handles every link but sliding beams (their shape moves with the joint)."""
    return not any(lk.beam is not None and lk.beam.sliding for lk in model.links)


def mass_and_bias(model, q, qd):
    """(M, b) sharing one forward pass: M by :func:`mass_matrix`, b the inverse dynamics at zero
    acceleration (gravity, elasticity, friction included)."""
    q, qd = np.broadcast_arrays(ops.asarray(q), ops.asarray(qd))
    qdd = np.zeros_like(qd)
    recs = forward(model, q, qd, qdd, True, second_order=None)
    return mass_matrix(model, q, recs), backward(model, recs, q, qd, qdd)


def composite_moments(model, recs, moments):
    """(Ct, Ch): per link, the second moments of everything beyond its tip on its distal frame
    W_i, and of everything from its undeformed frame Wh_i on (body on Wh, the beam's kinetic
    moments ``moments[i][0]``, ``D Ct D^T``), by one backward pass."""
    links, children = model.links, model.children
    n = len(links)
    Ct, Ch = [None] * n, [None] * n
    for i in range(n - 1, -1, -1):
        lk, rec = links[i], recs[i]
        C = lk.body_tip
        for c in children[i]:
            A = recs[c]["A"]
            C = C + A @ Ch[c] @ _T(A)
        Ct[i] = C
        Ch[i] = lk.body_base + (C if lk.beam is None else moments[i][0] + rec["D"] @ C @ _T(rec["D"]))
    return Ct, Ch


def mass_matrix(model, q, recs=None):
    """M(q) (..., nq, nq) by composite bodies in the 4x4 form, equal to the unit-acceleration
    columns of :func:`inverse_dynamics` (no gravity, elasticity or friction) at a fraction of
    their cost.

    A backward pass sums the second moments of everything beyond each cut: ``Ct[i]`` on link
    i's distal frame W_i, ``Ch[i]`` on its undeformed frame Wh_i (body on Wh, the beam's
    kinetic moments, ``D Ct D^T``). The columns of link l (its joint, then its modes) start
    from these instead of a pass over the distal links, ``G = sum_b X_b J_b (dW_b/dq_k)^T``
    (left side in the cut's frame, right side in the base frame):

    * joint l: ``Gh = Ch[l] (W0 A1)^T``;
    * mode k of l's beam: ``Gt = Ct[l] (Wh T_k)^T`` beyond the tip (``T_k = dD/dp_k``), and on
      the undeformed frame ``Gh = D Gt + N0k_k Wh^T``; rows of the same beam's modes j:
      ``tr(T_j Gt Wh) + tr(C_jk Wh^T Wh)``;

    then the rows of every proximal coordinate follow as in the inverse dynamics' backward
    pass (``G <- A G``, rows ``tr(T_j G Wh)``, ``Gh <- D G``, joint row ``tr(W0 A1 Gh)``), all
    columns of a link carried together. Only entries with the row proximal to (or on) the
    column are formed; M is filled symmetrically. ``recs``: :func:`forward`'s frames at ``q``
    (any velocities), when already computed."""
    if not composite_applies(model):
        raise ValueError("mass_matrix by composite bodies: sliding beams are not supported; use inverse_dynamics")
    q = ops.asarray(q)
    if recs is None:  # (only the positions of the frames are read)
        zero = np.zeros_like(q)
        recs = forward(model, q, zero, zero, gravity=False, second_order=None)
    n, links = len(model.links), model.links
    coords = [[i] + list(range(lk.flex.start, lk.flex.stop)) if lk.beam is not None else [i]
              for i, lk in enumerate(links)]
    moments = [None if lk.beam is None else lk.beam.inertia_moments(recs[i]["p"]) for i, lk in enumerate(links)]
    Ct, Ch = composite_moments(model, recs, moments)
    T = [None if lk.beam is None else lk.beam.tip_partials(recs[i]["p"], lk.beam.stiffening) for i, lk in enumerate(links)]
    WT = [None if lk.beam is None else recs[i]["Wh"][..., None, :, :] @ T[i] for i, lk in enumerate(links)]

    def mode_rows(i, G):
        """tr(Wh T_j G) of link i's modes j for columns G (..., c, 4, 4) on its tip frame: (..., m, c).
        With stiffening T_j is dense and depends on p: the trace of (Wh T_j) G, one per column;
        otherwise T_j is constant with 3 entries: only those entries of G Wh are formed."""
        if links[i].beam.stiffening:
            return ops.trace_product(WT[i][..., :, None, :, :], G[..., None, :, :, :])
        return ops.trace_product(T[i][..., :, None, :, :], (G @ recs[i]["Wh"][..., None, :, :])[..., None, :, :, :])

    M = np.zeros(q.shape[:-1] + (model.nq, model.nq), dtype=np.result_type(Ch[0], q))

    def put(rows, cols, value):  # value (..., len(rows), len(cols)), both triangles
        M[..., rows, cols] = value
        M[..., cols, rows] = value

    def climb(i, G, cols):
        """The rows of link i and its ancestors for columns ``cols``, G (..., c, 4, 4) on link i's
        distal frame: its modes' rows, then its joint's, then the same a link up."""
        while i >= 0:
            if links[i].beam is not None:
                put(np.array(coords[i][1:])[:, None], cols[None, :], mode_rows(i, G))
                Gh = recs[i]["D"][..., None, :, :] @ G
            else:
                Gh = G
            put(i, cols, ops.trace_product((recs[i]["W0"] @ recs[i]["A1"])[..., None, :, :], Gh))
            if links[i].parent >= 0:
                G = recs[i]["A"][..., None, :, :] @ Gh
            i = links[i].parent

    for l in range(n):
        lk, rec = links[l], recs[l]
        cols = np.array(coords[l])
        dWh = rec["W0"] @ rec["A1"]  # dWh/dq_l
        Gh = (Ch[l] @ _T(dWh))[..., None, :, :]  # the joint's column (..., 1, 4, 4)
        if lk.beam is not None:
            Wh = rec["Wh"]
            Nk = moments[l][1]
            Gt = Ct[l][..., None, :, :] @ _T(WT[l])  # (..., m, 4, 4)
            own = mode_rows(l, Gt) + ops.trace_product(lk.beam.Ckl, (_T(Wh) @ Wh)[..., None, None, :, :])
            a, b = np.triu_indices(len(cols) - 1)  # mode rows a on or before mode columns b
            put(cols[1:][a], cols[1:][b], own[..., a, b])
            Gm = rec["D"][..., None, :, :] @ Gt + Nk @ _T(Wh)[..., None, :, :]
            Gh = np.concatenate([Gh, Gm], axis=-3)
        put(l, cols, ops.trace_product(dWh[..., None, :, :], Gh))  # joint l's row
        if lk.parent >= 0:  # the rows of the links proximal to l (its ancestors)
            climb(lk.parent, recs[l]["A"][..., None, :, :] @ Gh, cols)
    for m in motors.coupled(model):  # a rotor's coupling with its carrier's coordinates
        climb(m.carrier, motors.inertia_column(m, recs[m.carrier]["W"][..., :3, :3])[..., None, :, :],
              np.array([m.index]))
    for i, lk in enumerate(links):  # (a traced armature is a symbol: added, not tested)
        M[..., i, i] = M[..., i, i] + lk.armature
    for m in model.motors:
        M[..., m.index, m.index] = M[..., m.index, m.index] + m.inertia
    return M


def kinetic_energy(model, q, qd):
    """T = 1/2 sum_b int |r_dot|^2 dm, evaluated directly from the frame velocities."""
    q, qd = np.broadcast_arrays(ops.asarray(q), ops.asarray(qd))
    recs = forward(model, q, qd, np.zeros_like(qd), gravity=False, second_order=None)
    total = 0
    for lk, rec in zip(model.links, recs):
        total = total + ops.trace_product(rec["Wd"] @ lk.body_tip, _T(rec["Wd"]))
        total = total + ops.trace_product(rec["Whd"] @ lk.body_base, _T(rec["Whd"]))
        if lk.beam is not None:
            total = total + lk.beam.kinetic(rec["Wh"], rec["Whd"], rec["p"], rec["pd"])
    for i, lk in enumerate(model.links):
        total = total + lk.armature * qd[..., i] ** 2
    for m in motors.coupled(model):  # the rotor's coupling with its carrier's rotation
        rec = recs[m.carrier]
        total = total + 2.0 * m.coupling * qd[..., m.index] * motors.carrier_rate(m, rec["W"][..., :3, :3],
                                                                                   rec["Wd"][..., :3, :3])
    return 0.5 * (total + motors.kinetic_energy(model, qd))


def potential_energy(model, q):
    """Gravity (V = -sum m g . r) plus strain energy 1/2 q_f^T K q_f."""
    q = ops.asarray(q)
    zero = np.zeros_like(q)
    grav = np.asarray(model.gravity)  # numbers, or symbols when parameters are symbolic
    if grav.dtype != object and q.dtype != object and not np.any(grav):
        # no gravity: the strain energy alone, without the recursion (a run's energy at every sample)
        total = np.zeros(q.shape[:-1])
        for i, lk in enumerate(model.links):
            if lk.beam is not None:
                total = total + lk.beam.strain(lk.beam.local(q, zero, zero, i, lk.flex, lk.offset)[0])
        return total + motors.potential_energy(model, q)
    recs = forward(model, q, zero, zero, gravity=False, second_order=None)
    g4 = np.zeros(4, dtype=grav.dtype)
    g4[:] = 0.0
    g4[:3] = grav
    total = 0
    for lk, rec in zip(model.links, recs):
        total = total - (rec["W"] @ lk.body_tip[:, 3]) @ g4 - (rec["Wh"] @ lk.body_base[:, 3]) @ g4
        if lk.beam is not None:
            total = total - (rec["Wh"] @ lk.beam.moment(rec["p"])[..., None])[..., 0] @ g4
            total = total + lk.beam.strain(rec["p"])
    return total + motors.potential_energy(model, q)


def frames(model, q, second_order=False):
    """Distal frames (deflection included) of every link, each (..., 4, 4)."""
    q = ops.asarray(q)
    zero = np.zeros_like(q)
    return [rec["W"] for rec in forward(model, q, zero, zero, gravity=False, second_order=second_order)]


def frame_derivatives(model, q, second_order=False):
    """(frames, dframes) with dframes[i][..., k, :, :] = dW_i/dq_k, via unit velocities."""
    q = ops.asarray(q)
    nq = q.shape[-1]
    qb = np.broadcast_to(q[..., None, :], q.shape[:-1] + (nq, nq))
    eye = np.broadcast_to(np.eye(nq), qb.shape)
    recs = forward(model, qb, eye, np.zeros(qb.shape), gravity=False, second_order=second_order)
    return [rec["W"][..., 0, :, :] for rec in recs], [rec["Wd"] for rec in recs]


def point_jacobian(model, q, link, point=None, second_order=False):
    """Geometric Jacobian (..., 6, nq) of a point of link `link` (in its distal frame), rows
    [linear; angular] in the base frame: columns from the frame derivatives dW/dq_k, the
    angular ones from skew(omega_k) = dR/dq_k R^T (Piedboeuf eq. 3 for rigid joints)."""
    Ws, dWs = frame_derivatives(model, q, second_order=second_order)
    W, dW = Ws[link], dWs[link]  # (..., 4, 4), (..., nq, 4, 4)
    h = np.zeros(4)
    h[3] = 1.0
    if point is not None:
        h[:3] = np.asarray(point, dtype=float)
    lin = dW @ h  # (..., nq, 4)
    Om = dW[..., :3, :3] @ _T(W[..., None, :3, :3])
    ang = 0.5 * np.stack(
        [Om[..., 2, 1] - Om[..., 1, 2], Om[..., 0, 2] - Om[..., 2, 0], Om[..., 1, 0] - Om[..., 0, 1]], axis=-1
    )
    return _T(np.concatenate([lin[..., :3], ang], axis=-1))
