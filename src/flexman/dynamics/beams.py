"""Flexible beams as bodies of the 4x4 recursion: their point maps, tip transforms and forces.

A beam body lives in the undeformed link frame ``Wh`` (after the DH transform). It exposes,
for its local coordinates ``p``:

* ``tip(p, pd, pdd)``: the tip transform D and its time derivatives (004 eq. 2 at the tip);
* ``tip_partials(p)``: dD/dp_j, used to pass distal forces back through the deflection;
* ``terms(rec)``: ``Phi_b = int h r_ddot^T dm`` and the beam's own generalized forces
  ``int (Wh dh/dp_j) . r_ddot dm``;
* ``elastic(p, pd)``: strain-energy gradient and damping; ``kinetic``/``moment``/``strain``
  for energies.

``RevoluteBeam``: fixed length, point map affine in the modal coordinates with constant
tensors (thesis eqs. 2.25-2.31). ``SlidingBeam``: the translating beam of a prismatic joint
(004 sec. 2, eq. 19): material fixed along the axis, the part outside the hub (length = joint
variable d) deflects with shapes stretched to the current length, the part inside moves
rigidly; its local coordinates are (d, modal coordinates).
"""
from __future__ import annotations

import functools

import numpy as np

from ..discretize.shapes import integral
from . import beam_tensors as bt
from . import ops
from .ops import skew
from .ops import transpose as _T
from .second_order import BeamKinematics


def modal_sum(c, T):
    """sum_k c[..., k] T[..., k, :, :] (einsum on numbers, broadcasting on symbols)."""
    if c.dtype != object and T.dtype != object:
        return np.einsum("...k,...kab->...ab", c, T)
    return (c[..., :, None, None] * T).sum(axis=-3)


def contract(c, T):
    """sum_l c[..., l] T[l, k, :, :] -> (..., k, 4, 4) for a constant 4-index T."""
    if c.dtype != object and T.dtype != object:
        return np.einsum("...l,lkab->...kab", c, T)
    return (c[..., :, None, None, None] * T).sum(axis=-4)


def contract2(c, T):
    """sum_k c[..., k] T[j, k, :, :] -> (..., j, 4, 4)."""
    if c.dtype != object and T.dtype != object:
        return np.einsum("...k,jkab->...jab", c, T)
    return (c[..., None, :, None, None] * T).sum(-3)


def symmetric_form(c, T):
    """sum_kl c[..., k] c[..., l] T[k, l, :, :] for a constant T symmetric in (k, l): on traced
    values each pair k < l once (n (n + 1) / 2 products instead of n^2)."""
    if c.dtype != object and T.dtype != object:
        return np.einsum("...k,...l,klab->...ab", c, c, T)
    col = lambda k: c[..., k:k + 1, None]  # (..., 1, 1)
    out = 0
    for k in range(c.shape[-1]):
        out = out + (col(k) * col(k)) * T[k, k]
        for l in range(k + 1, c.shape[-1]):
            out = out + (2 * (col(k) * col(l))) * T[k, l]
    return out


def identity(batch, like):
    out = ops.zeros_like_batch(batch, (4, 4), like)
    for k in range(4):
        out[..., k, k] = 1
    return out


def _scalar_field(x):
    """x[..., 0] of a 1-d object array is a bare element; keep it an array for broadcasting."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (int, float, complex, np.number)):  # complex: complex-step derivatives stay complex
        return np.asarray(x)
    out = np.empty((), dtype=object)
    out[()] = x
    return out


def _first(a):
    """(a[..., 0], a[..., 1:]) with the first always an array."""
    return _scalar_field(a[..., 0]), a[..., 1:]


def _matvec(A, v):
    return (A @ v[..., None])[..., 0]


class RevoluteBeam:
    """Constant-tensor beam: h = h0 + sum_k p_k Phi_k, D = I + sum_k p_k D_k.

    With ``stiffening`` the points also move by the second-order part h2 = 1/2 sum p_k p_l r_kl
    (the axial shortening of the bent beam, :mod:`.second_order`) and the tip transform gains
    1/2 sum p_k p_l D_kl. The kinetic energy keeps h2 where it meets the rigid motion,
    T_s = int r0_dot . r2_dot dm (r0 = Wh h0, r2 = Wh h2), the consistent second-order theory
    whose Lagrange equations give the stiffness of the axial loads (centrifugal, inertial,
    gravity); distal bodies ride on the exact quadratic tip transform.
    """

    sliding = False
    stiffening = False
    Fkl = None  # (n, n, 4, 4) int h0 r_kl^T dm, set by from_link when stiffening

    def __init__(self, C0, Ck, Ckl, Dk, K, Cd, Mb, directions, shapes, length):
        self.C0, self.Ck, self.Ckl, self.Dk = C0, Ck, Ckl, Dk
        self.K, self.Cd, self.Mb = K, Cd, Mb
        self.directions, self.shapes, self.length = directions, shapes, length
        self.n = len(directions)

    @classmethod
    def from_link(cls, link, convention, loads) -> "RevoluteBeam":
        """The beam of a revolute flexible link (DH ``convention`` of the robot), its constant
        tensors by Gauss quadrature (:mod:`.beam_tensors`); ``loads``: nondimensional tip loads
        for clamped-mass shapes (direction -> (M, J, D))."""
        beam = link.beam
        L, axes = beam.length, bt.AXES[link.joint]
        ax, t1, t2 = axes
        root, tip = bt.revolute_ends(link, convention)
        sets = bt.shape_sets(beam, loads)
        Ck, Ckl = bt.point_map_tensors(sets, beam, root, axes)
        Dk = bt.tip_deflection_tensors(sets, L, tip, axes)
        K, Mb = bt.beam_matrices(sets, L, beam.EI, beam.mass_per_length, beam.GJ, beam.polar_inertia_per_length)
        Cd = bt.modal_damping(K, Mb, beam.damping)
        Ck, Ckl, Dk = (bt.exact_zeros(t) for t in (Ck, Ckl, Dk))
        out = cls(bt.rod_second_moments(link, convention), Ck, Ckl, Dk, K, Cd, Mb, bt.directions(sets), sets, L)
        out.S = bt.shortening_matrix(sets, L)
        out.axis = ax
        out.kinematics = BeamKinematics(sets, L, axes)  # second order, on demand
        out.tip_point, out.root, out.mu = tip, root, beam.mass_per_length
        if beam.stiffening and out.n:
            out.stiffening = True
            out.Fkl = bt.exact_zeros(bt.shortening_moment_tensor(out.kinematics, root, ax, out.mu))
            out.Dkl = bt.exact_zeros(out.Dkl)
        out.transverse = {"y": t1, "z": t2}  # the bending axes (drawing the centre line)
        return out

    def local(self, q, qd, qdd, joint, flex, offset):
        return q[..., flex], qd[..., flex], qdd[..., flex]

    def tip(self, p, pd, pdd):
        batch = p.shape[:-1]
        return identity(batch, p) + modal_sum(p, self.Dk), modal_sum(pd, self.Dk), modal_sum(pdd, self.Dk)

    def tip_partials(self, p, second_order=False):
        """dD/dp_j (..., n, 4, 4); with second_order the quadratic tip transform's D_j + sum_l p_l D_jl."""
        first = np.broadcast_to(self.Dk, p.shape[:-1] + self.Dk.shape)
        return first + contract(p, self.Dkl) if second_order else first

    def shortening_moments(self, p):
        """F = int h0 h2^T dm (h2 the second-order displacement of the beam's points) and its
        partials Fp[..., j] = dF/dp_j (F is quadratic: F = 1/2 sum_j p_j Fp_j)."""
        Fp = contract(p, self.Fkl)
        return 0.5 * modal_sum(p, Fp), Fp

    def centreline(self, p, eta):
        """Points of the deflected centre line at stations ``eta`` (0 root, 1 tip): (..., G, 4)
        homogeneous, in the undeformed link frame (torsion turns sections, not the line)."""
        eta = np.asarray(eta, dtype=float)
        pts = np.zeros(p.shape[:-1] + (len(eta), 4))
        pts[..., :3] = self.root
        pts[..., self.axis] += eta * self.length
        pts[..., 3] = 1.0
        pos = 0
        for direction, ss in self.shapes.items():
            a, pos = p[..., pos:pos + ss.n], pos + ss.n
            if direction != "torsion":
                phi = ss(eta) * (self.length ** np.asarray(ss.scale, float))[:, None]
                pts[..., self.transverse[direction]] += a @ phi
        return pts

    def shortening(self, p, pd):
        """Axial tip shift -1/2 p^T S p and its rate (foreshortening; kinematics only)."""
        Sp = p @ self.S
        return -0.5 * (Sp * p).sum(-1), -(Sp * pd).sum(-1)

    @functools.cached_property
    def Dkl(self):
        """Second derivatives d2D/dp_k dp_l (n, n, 4, 4) of the tip transform: second-order
        kinematics (:mod:`.second_order`; foreshortening, rotation to second order, torsion
        coupling). Built on first use: only the second-order kinematics reads it."""
        return self.kinematics.tip_tensor(self.tip_point)

    @functools.cached_property
    def mkl(self):
        """Second derivatives (n, n, 4) of the beam's first moment int h dm (second-order kinematics)."""
        m = self.kinematics.first_moment(self.mu)
        return np.concatenate([m, np.zeros(m.shape[:2] + (1,))], axis=-1)

    def second_order_tip(self, p, pd, pdd):
        """The second-order parts of (D, D_dot, D_ddot): 1/2 p^T Dkl p and its time derivatives."""
        Dp = contract(p, self.Dkl)  # sum_l p_l D_lk
        return 0.5 * modal_sum(p, Dp), modal_sum(pd, Dp), symmetric_form(pd, self.Dkl) + modal_sum(pdd, Dp)

    def moments(self, p):
        """N = int h h^T and N0k = int h Phi_k^T at the current deflection."""
        Ck, Ckl = self.Ck, self.Ckl
        Cp = contract(p, Ckl)  # sum_l p_l C_lk
        N = self.C0 + modal_sum(p, Ck + _T(Ck)) + modal_sum(p, Cp)
        return N, Ck + Cp

    def inertia_moments(self, p):
        """The moments the kinetic energy sees: N and N0k of :meth:`moments`, with stiffening
        N + F + F^T and N0k + dF/dp_k (T_s = int r0_dot . r2_dot dm changes only these)."""
        N, Nk = self.moments(p)
        if self.stiffening:
            F, Fp = self.shortening_moments(p)
            N, Nk = N + F + _T(F), Nk + Fp
        return N, Nk

    def terms(self, Wh, Whd, Whdd, p, pd, pdd):
        """(Phi = int h r_ddot^T dm, the beam's own generalized forces tr(Wh int h_j r_ddot^T dm)).

        With stiffening, T_s = int r0_dot . r2_dot dm only changes the beam's moments: N gains
        F + F^T and its partials N0k gain dF/dp_k (F = int h0 h2^T dm), so the stiffened beam
        costs the same matrix products as the first-order one (docs/stiffening.md, "Cost")."""
        N, Nk = self.inertia_moments(p)
        extra = 0
        if self.stiffening:  # Lagrange terms of T_s: int (dr0/dq).r2_ddot + (dr2/dq).r0_ddot
            extra = symmetric_form(pd, self.Fkl)  # d2F/dt2 beyond sum pdd_k dF/dp_k
        phi = N @ _T(Whdd) + 2 * (modal_sum(pd, Nk) @ _T(Whd)) + (modal_sum(pdd, Nk) + extra) @ _T(Wh)
        Cd = contract2(pd, self.Ckl)  # sum_k pd_k C_jk, indexed by j
        Cdd = contract2(pdd, self.Ckl)
        X = _T(Nk) @ _T(Whdd)[..., None, :, :] + 2 * (Cd @ _T(Whd)[..., None, :, :]) + Cdd @ _T(Wh)[..., None, :, :]
        return phi, ops.trace_product(Wh[..., None, :, :], X)

    def elastic(self, p, pd):
        return p @ self.K.T + pd @ self.Cd.T

    def kinetic(self, Wh, Whd, p, pd):
        """2 T of the beam: int |r_dot|^2 dm (with 2 T_s = 2 int r0_dot . r2_dot dm when stiffening)."""
        N, Nk = self.inertia_moments(p)
        S = modal_sum(pd, contract2(pd, self.Ckl))
        return (
            ops.trace_product(Whd @ N, _T(Whd))
            + 2 * ops.trace_product(Whd @ modal_sum(pd, Nk), _T(Wh))
            + ops.trace_product(Wh @ S, _T(Wh))
        )

    def moment(self, p):
        """int h dm (4-vector, last entry the mass) in the link frame (with the shortening when stiffening)."""
        N, _ = self.moments(p)
        if self.stiffening:
            return N[..., :, 3] + self.shortening_moments(p)[0][..., 3, :]
        return N[..., :, 3]

    def strain(self, p):
        return 0.5 * ((p @ self.K) * p).sum(-1)


def _pairs(c, T):
    """sum_l c[..., l] T[..., l, k, :, :] -> (..., k, 4, 4) for a batch-dependent 4-index T."""
    if c.dtype != object and T.dtype != object:
        return np.einsum("...l,...lkab->...kab", c, T)
    return (c[..., :, None, None, None] * T).sum(axis=-4)


def _quadratic_form(T0, T1, T2, p, pd, pdd):
    """X = 1/2 xi^T T(d) xi, its time derivatives and partials for a sliding beam's local
    coordinates p = (d, xi): T0, T1, T2 = T(d) and its first two d-derivatives (..., n, n, 4, 4).
    Returns (X, X_dot, X_ddot, dX/dp (..., 1 + n, 4, 4))."""
    (_, xi), (v, xid), (a, xidd) = _first(p), _first(pd), _first(pdd)
    P0, P1 = _pairs(xi, T0), _pairs(xi, T1)  # sum_l xi_l T_lk, and of T'
    X = 0.5 * modal_sum(xi, P0)
    Xd_d = 0.5 * modal_sum(xi, P1)  # dX/dd
    Xp = np.concatenate([Xd_d[..., None, :, :], P0], axis=-3)
    vv = _scalar_field(v * v)
    Xdot = v[..., None, None] * Xd_d + modal_sum(xid, P0)
    Xddot = (a[..., None, None] * Xd_d + 2 * v[..., None, None] * modal_sum(xid, P1)
             + 0.5 * vv[..., None, None] * modal_sum(xi, _pairs(xi, T2))
             + modal_sum(xidd, P0) + modal_sum(xid, _pairs(xid, T0)))
    return X, Xdot, Xddot, Xp


class SlidingBeam:
    """Translating beam of a prismatic joint. Local coordinates: (d, xi_1..xi_n).

    In the link frame (z along the joint axis, tip at the origin) a material point keeps its
    axial coordinate z in [-l0, 0]; the outside part z in [-d, 0] deflects by
    ``sum_k xi_k d^s_k psi_k(1 + z/d) e_k``, the inside part is rigid.

    Second order (kinematics, and the dynamics with ``stiffening``): the outside part also moves
    by h2 = 1/2 sum xi_k xi_l d^(s_k + s_l - 1) r_kl(1 + z/d), the shortening of the bent part
    towards the hub (r_kl of the unit-length beam, :mod:`.second_order`), and the tip transform
    gains 1/2 sum xi_k xi_l (d^(s_k + s_l - 2) R_kl + d^(s_k + s_l - 1) r_kl(1)). As for the
    revolute beam, the kinetic energy keeps T_s = int r0_dot . r2_dot dm, whose Lagrange terms
    carry the stiffness of the axial loads; F = int h0 h2^T dm = 1/2 sum xi_k xi_l
    (d^(s_k + s_l + 1) FA_kl + d^(s_k + s_l) FB_kl) with constant FA (axial) and FB (mass) parts.
    """

    sliding = True
    stiffening = False  # set by from_beam from Beam.stiffening
    FA = FB = None  # (n, n, 4, 4) shortening moments, set by from_beam when stiffening

    def __init__(self, sets, directions, axis, mu, l0, EI, damping_ratio, ref_length):
        ax, t1, t2 = axis
        self.axes = axis
        self.n = len(directions)
        self.directions = directions
        self.shapes = sets
        self.mu, self.l0 = mu, l0
        self.length = l0
        self.s = np.concatenate([np.asarray(ss.scale, float) for ss in sets.values()])
        self.eta, self.w = bt.common_rule(list(sets.values()))
        one = np.array([1.0])
        psi1 = np.concatenate([ss(one)[:, 0] for ss in sets.values()])
        dpsi1 = np.concatenate([ss(one, deriv=1)[:, 0] for ss in sets.values()])
        self.E = np.zeros((self.n, 4))
        self.Dd = np.zeros((self.n, 4, 4))  # displacement part of D_k at unit length
        self.Dr = np.zeros((self.n, 4, 4))  # rotation part of D_k at unit length
        for k, direction in enumerate(directions):
            t = t1 if direction == "y" else t2
            self.E[k, t] = 1.0
            self.Dd[k, t, 3] = psi1[k]
            self.Dr[k, :3, :3] = skew(bt.bend_rotation(ax, t, dpsi1[k]))
        self.ax = ax
        self.axis = ax
        self._precompute_moments(sets, ax)
        # stiffness at unit length, scaled at run time: K_kl(d) = Kbar_kl d^(s_k + s_l - 3)
        self.Kbar, Mb = bt.beam_matrices(sets, 1.0, EI, mu)
        self.kexp = self.s[:, None] + self.s[None, :] - 3
        self.K = self.Kbar * ref_length ** self.kexp
        self.Mb = Mb * ref_length ** (self.s[:, None] + self.s[None, :] + 1)
        self.Cd = bt.modal_damping(self.K, self.Mb, damping_ratio)  # at the reference length

    @classmethod
    def from_beam(cls, beam, sets, offset) -> "SlidingBeam":
        """The translating beam of the Beam data ``beam`` with the given shape sets (direction
        -> set) and DH offset (the outside length at q = 0)."""
        out = cls(sets, bt.directions(sets), bt.AXES["prismatic"], beam.mass_per_length, beam.length, beam.EI,
                  beam.damping, offset)
        if beam.stiffening and out.n:
            out.stiffening = True
            out.FA, out.FB = out.shortening_tensors()
        return out

    def local(self, q, qd, qdd, joint, flex, offset):
        cat = lambda a, j: np.concatenate([a[..., j : j + 1], a[..., flex]], axis=-1)
        p = cat(q, joint)
        p[..., 0] = p[..., 0] + offset
        return p, cat(qd, joint), cat(qdd, joint)

    # ----- tip transform -------------------------------------------------------------
    def _Dk(self, d, order=0):
        """D_k(d) and its d-derivatives, (..., n, 4, 4)."""
        s = self.s
        dd = d[..., None, None, None]
        sc = s[:, None, None]
        if order == 0:
            return dd**sc * self.Dd + dd ** (sc - 1) * self.Dr
        if order == 1:
            return sc * dd ** (sc - 1) * self.Dd + (sc - 1) * dd ** (sc - 2) * self.Dr
        return sc * (sc - 1) * dd ** (sc - 2) * self.Dd + (sc - 1) * (sc - 2) * dd ** (sc - 3) * self.Dr

    def tip(self, p, pd, pdd):
        (d, xi) = _first(p)
        (v, xid) = _first(pd)
        (a, xidd) = _first(pdd)
        D0, D1, D2 = self._Dk(d, 0), self._Dk(d, 1), self._Dk(d, 2)
        D = identity(p.shape[:-1], p) + modal_sum(xi, D0)
        Dd = modal_sum(xid, D0) + modal_sum(xi, D1) * v[..., None, None]
        Ddd = (
            modal_sum(xidd, D0)
            + modal_sum(xi, D1) * a[..., None, None]
            + 2 * modal_sum(xid, D1) * v[..., None, None]
            + modal_sum(xi, D2) * _scalar_field(v * v)[..., None, None]
        )
        return D, Dd, Ddd

    @functools.cached_property
    def Sbar(self):
        """Shortening matrix at unit length (built on first use: only second-order kinematics
        reads it)."""
        return bt.shortening_matrix(self.shapes, 1.0)

    # ----- second order ------------------------------------------------------------------
    @functools.cached_property
    def _unit_kinematics(self):
        return BeamKinematics(self.shapes, 1.0, self.axes)

    @functools.cached_property
    def _second_exponents(self):
        """s_k + s_l - 1: the power of d of the second-order displacements (n, n, 1, 1)."""
        return (self.s[:, None] + self.s[None, :] - 1.0)[:, :, None, None]

    @functools.cached_property
    def _tip_second(self):
        """(rotation part R_kl, displacement part r_kl) of the unit beam's tip tensor, (n, n, 4, 4)."""
        R, r = self._unit_kinematics.section(1.0)
        DR, Dr = np.zeros(R.shape[:2] + (4, 4)), np.zeros(R.shape[:2] + (4, 4))
        DR[..., :3, :3], Dr[..., :3, 3] = R, r
        return bt.exact_zeros(DR), bt.exact_zeros(Dr)

    def _tip_tensors(self, d):
        """D_kl(d) = d^(e - 1) R_kl + d^e r_kl (e = s_k + s_l - 1) and its first two d-derivatives."""
        DR, Dr = self._tip_second
        e = self._second_exponents
        dd = d[..., None, None, None, None]
        return (dd ** (e - 1) * DR + dd**e * Dr,
                (e - 1) * dd ** (e - 2) * DR + e * dd ** (e - 1) * Dr,
                (e - 1) * (e - 2) * dd ** (e - 3) * DR + e * (e - 1) * dd ** (e - 2) * Dr)

    def second_order_tip(self, p, pd, pdd):
        """Second-order parts of (D, D_dot, D_ddot): 1/2 xi^T D_kl(d) xi (foreshortening of the tip,
        rotation to second order) and its time derivatives."""
        X, Xd, Xdd, _ = _quadratic_form(*self._tip_tensors(_first(p)[0]), p, pd, pdd)
        return X, Xd, Xdd

    def shortening_tensors(self):
        """(FA_kl, FB_kl) (n, n, 4, 4): int_0^1 (eta - 1) e_ax r_kl(eta)^T and int_0^1 e_4 r_kl(eta)^T,
        times rhoA, over the outside part of the unit beam (geometric stiffening)."""
        return bt.sliding_shortening_tensors(self._unit_kinematics, self.ax, self.mu)

    def shortening_moments(self, p, pd, pdd):
        """F = int h0 h2^T dm of the outside part, its time derivatives, and dF/dp (..., 1 + n, 4, 4)."""
        e = self._second_exponents
        dd = _first(p)[0][..., None, None, None, None]
        T0 = dd ** (e + 2) * self.FA + dd ** (e + 1) * self.FB
        T1 = (e + 2) * dd ** (e + 1) * self.FA + (e + 1) * dd**e * self.FB
        T2 = (e + 2) * (e + 1) * dd**e * self.FA + (e + 1) * e * dd ** (e - 1) * self.FB
        return _quadratic_form(T0, T1, T2, p, pd, pdd)

    def shortening(self, p, pd):
        """Axial tip shift -1/2 xi^T S(d) xi and its rate (foreshortening; kinematics only)."""
        (d, xi), (v, xid) = _first(p), _first(pd)
        expo = self.s[:, None] + self.s[None, :] - 1
        S = self.Sbar * d[..., None, None] ** expo
        Sx = (S @ xi[..., None])[..., 0]
        dSx = ((S * expo / d[..., None, None]) @ xi[..., None])[..., 0]
        return -0.5 * (Sx * xi).sum(-1), -(Sx * xid).sum(-1) - 0.5 * (dSx * xi).sum(-1) * v

    def centreline(self, p, eta):
        """The inner end (z = -l0, inside the hub) and the outside part at stations ``eta``
        (0 at the hub, 1 at the tip) of the deflected centre line: (..., 1 + G, 4)
        homogeneous, in the undeformed link frame."""
        eta = np.asarray(eta, dtype=float)
        (d, xi) = _first(p)
        psi = np.concatenate([ss(eta) for ss in self.shapes.values()])  # (n, G)
        amp = xi * d[..., None] ** self.s
        pts = np.zeros(p.shape[:-1] + (1 + len(eta), 4))
        pts[..., 0, self.ax] = -self.l0
        pts[..., 1:, self.ax] = d[..., None] * (eta - 1.0)
        pts[..., 1:, :] += np.einsum("...k,kg,ka->...ga", amp, psi, self.E)
        pts[..., 3] = 1.0
        return pts

    def tip_partials(self, p, second_order=False):
        """dD/dp_j for p = (d, xi) (..., 1 + n, 4, 4); with second_order those of the quadratic tip."""
        (d, xi) = _first(p)
        first = modal_sum(xi, self._Dk(d, 1))[..., None, :, :]
        out = np.concatenate([first, self._Dk(d, 0)], axis=-3)
        if second_order:
            zero = 0 * p
            out = out + _quadratic_form(*self._tip_tensors(d), p, zero, zero)[3]
        return out

    # ----- moments ---------------------------------------------------------------------
    # The transverse fields of the outside part are combinations of three families per shape,
    # psi_k, g1_k = s psi + (1 - eta) psi' (= d/dd at fixed material) and g2_k (= d2/dd2),
    # each scaled by a power of d: the integrals are constants times powers of d, computed once.
    def _precompute_moments(self, sets, ax):
        mu, l0 = self.mu, self.l0
        eta, w = self.eta, self.w
        psi = np.concatenate([ss(eta) for ss in sets.values()])
        dpsi = np.concatenate([ss(eta, deriv=1) for ss in sets.values()])
        ddpsi = np.concatenate([ss(eta, deriv=2) for ss in sets.values()])
        s = self.s[:, None]
        g1 = s * psi + (1 - eta) * dpsi
        g1p = (s - 1) * dpsi + (1 - eta) * ddpsi
        g2 = (s - 1) * g1 + (1 - eta) * g1p
        F = np.concatenate([psi, g1, g2])  # (3n, G)
        self.e = np.concatenate([self.s, self.s - 1, self.s - 2])  # power of d of each field
        E = np.concatenate([self.E] * 3)  # direction of each field (3n, 4)
        e_ax, e_4 = np.eye(4)[ax], np.eye(4)[3]
        self.Aax = mu * integral("mq,q->m", F, (eta - 1) * w)[:, None, None] * np.einsum("a,mb->mab", e_ax, E)
        self.A4 = mu * integral("mq,q->m", F, w)[:, None, None] * np.einsum("a,mb->mab", e_4, E)
        P = integral("mq,q,nq->mn", F, w, F)  # int F_m F_n deta; the direction outer product places it
        self.Bc = mu * P[:, :, None, None] * np.einsum("ma,nb->mnab", E, E)
        self.Bexp = self.e[:, None] + self.e[None, :] + 1
        C0 = np.zeros((4, 4))  # the whole beam, material fixed along the axis: z in [-l0, 0]
        C0[ax, ax] = mu * l0**3 / 3
        C0[ax, 3] = C0[3, ax] = -mu * l0**2 / 2
        C0[3, 3] = mu * l0
        self.C0 = C0

    def _moment_tensors(self, d):
        """A_m = int h0 field_m^T dm (..., 3n, 4, 4) and B_mn = int field_m field_n^T dm."""
        dcol = d[..., None]
        A = (dcol ** (self.e + 2))[..., :, None, None] * self.Aax + (dcol ** (self.e + 1))[..., :, None, None] * self.A4
        B = d[..., None, None] ** self.Bexp  # the powers of d; the constant factors stay in Bc
        return A, B

    @staticmethod
    def _S1(A, b):
        return modal_sum(b, A)

    def _S2(self, B, a, b):
        """sum_mn a_m b_n B_mn: coefficients times the constant tensors Bc in one product.

        On floats one matrix product; on tracers and graded polynomials (object arrays) the same
        sums over the nonzero entries of Bc only (each mode bends in one direction, so most of Bc
        is zero): the products by zero and sums of zero that the tracers drop at creation are not
        formed at all, which makes the same program in a fraction of the time."""
        coef = a[..., :, None] * b[..., None, :] * B
        nn = coef.shape[-1] * coef.shape[-2]
        flat = coef.reshape(coef.shape[:-2] + (nn,))
        Bc = self.Bc.reshape(nn, 16)
        if flat.dtype != object:
            return (flat @ Bc).reshape(coef.shape[:-2] + (4, 4))
        out = np.zeros(flat.shape[:-1] + (16,), dtype=object)
        zero = np.vectorize(lambda x: isinstance(x, (int, float, np.number)) and x == 0, otypes=[bool])(Bc)
        for k in range(16):
            rows = np.flatnonzero(~zero[:, k])  # entries that are not the number 0 (symbols may be)
            if rows.size:
                out[..., k] = (flat[..., rows] * Bc[rows, k]).sum(axis=-1)
        return out.reshape(coef.shape[:-2] + (4, 4))

    def _coefficients(self, p, pd, pdd):
        """Field coefficients of h, h_dot, h_ddot and of the partials dh/dp_j (..., m, 3n)."""
        (d, xi), (v, xid), (a, xidd) = _first(p), _first(pd), _first(pdd)
        zero = 0 * xi
        vv = _scalar_field(v * v)
        c_h = np.concatenate([xi, zero, zero], axis=-1)
        c_hd = np.concatenate([xid, xi * v[..., None], zero], axis=-1)
        c_hdd = np.concatenate([xidd, xi * a[..., None] + 2 * xid * v[..., None], xi * vv[..., None]], axis=-1)
        n = self.n
        eye = np.broadcast_to(np.eye(n), xi.shape[:-1] + (n, n))
        u_xi = np.concatenate([eye, 0 * eye, 0 * eye], axis=-1)
        u_d = np.concatenate([zero, xi, zero], axis=-1)[..., None, :]
        return d, c_h, c_hd, c_hdd, np.concatenate([u_d, u_xi], axis=-2)

    def terms(self, Wh, Whd, Whdd, p, pd, pdd):
        d, c_h, c_hd, c_hdd, U = self._coefficients(p, pd, pdd)
        A, B = self._moment_tensors(d)  # B: powers of d multiplying Bc
        S1h = self._S1(A, c_h)
        N = self.C0 + S1h + _T(S1h) + self._S2(B, c_h, c_h)
        Nd = self._S1(A, c_hd) + self._S2(B, c_h, c_hd)
        Ndd = self._S1(A, c_hdd) + self._S2(B, c_h, c_hdd)
        # own forces: tr(Wh int h_j r_ddot^T) with int h_j h^T = S1(u_j)^T + S2(u_j, c_h), ...
        Bx = B[..., None, :, :]
        Ux = U
        Hh = _T(modal_sum(Ux, A[..., None, :, :, :])) + self._S2(Bx, Ux, c_h[..., None, :])
        Hd = self._S2(Bx, Ux, c_hd[..., None, :])
        Hdd = self._S2(Bx, Ux, c_hdd[..., None, :])
        if self.stiffening:  # T_s = int r0_dot . r2_dot dm only changes the moments (RevoluteBeam.terms)
            F, Fd, Fdd, Fp = self.shortening_moments(p, pd, pdd)
            N, Nd, Ndd, Hh = N + F + _T(F), Nd + Fd, Ndd + Fdd, Hh + _T(Fp)
        phi = N @ _T(Whdd) + 2 * (Nd @ _T(Whd)) + Ndd @ _T(Wh)
        X = Hh @ _T(Whdd)[..., None, :, :] + 2 * (Hd @ _T(Whd)[..., None, :, :]) + Hdd @ _T(Wh)[..., None, :, :]
        return phi, ops.trace_product(Wh[..., None, :, :], X)

    def elastic(self, p, pd):
        (d, xi) = _first(p)
        K = self.Kbar * d[..., None, None] ** self.kexp
        f_xi = (K @ xi[..., None])[..., 0] + pd[..., 1:] @ self.Cd.T
        dK = K * self.kexp / d[..., None, None]
        f_d = 0.5 * (xi * (dK @ xi[..., None])[..., 0]).sum(-1)
        return np.concatenate([f_d[..., None], f_xi], axis=-1)

    def kinetic(self, Wh, Whd, p, pd):
        """2 T of the beam: int |r_dot|^2 dm."""
        d, c_h, c_hd, _, _ = self._coefficients(p, pd, np.zeros_like(pd))
        A, B = self._moment_tensors(d)  # B: powers of d multiplying Bc
        S1h = self._S1(A, c_h)
        N = self.C0 + S1h + _T(S1h) + self._S2(B, c_h, c_h)
        Nd = self._S1(A, c_hd) + self._S2(B, c_h, c_hd)
        S = self._S2(B, c_hd, c_hd)
        if self.stiffening:  # 2 T_s = 2 int r0_dot . r2_dot dm
            F, Fd, _, _ = self.shortening_moments(p, pd, 0 * pd)
            N, Nd = N + F + _T(F), Nd + Fd
        return (
            ops.trace_product(Whd @ N, _T(Whd))
            + 2 * ops.trace_product(Whd @ Nd, _T(Wh))
            + ops.trace_product(Wh @ S, _T(Wh))
        )

    def moment(self, p):
        """int h dm (4-vector, last entry the mass) in the link frame (with the shortening when stiffening)."""
        zero = np.zeros_like(p)
        d, c_h, _, _, _ = self._coefficients(p, zero, zero)
        A, _ = self._moment_tensors(d)
        out = self.C0[:, 3] + self._S1(A, c_h)[..., 3, :]
        if self.stiffening:
            out = out + self.shortening_moments(p, zero, zero)[0][..., 3, :]
        return out

    def strain(self, p):
        (d, xi) = _first(p)
        K = self.Kbar * d[..., None, None] ** self.kexp
        return 0.5 * (xi * (K @ xi[..., None])[..., 0]).sum(-1)

