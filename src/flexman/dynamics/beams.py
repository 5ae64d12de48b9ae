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

import numpy as np

from . import ops


def _T(x):
    return np.swapaxes(x, -1, -2)


def lincomb(c, T):
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


def identity(batch, like):
    out = ops.zeros_like_batch(batch, (4, 4), like)
    for k in range(4):
        out[..., k, k] = 1
    return out


def _scalar_field(x):
    """x[..., 0] of a 1-d object array is a bare element; keep it an array for broadcasting."""
    if isinstance(x, np.ndarray):
        return x
    out = np.empty((), dtype=float if isinstance(x, (int, float)) else object)
    out[()] = x
    return out


def _first(a):
    """(a[..., 0], a[..., 1:]) with the first always an array."""
    return _scalar_field(a[..., 0]), a[..., 1:]


def _matvec(A, v):
    return (A @ v[..., None])[..., 0]


class RevoluteBeam:
    """Constant-tensor beam: h = h0 + sum_k p_k Phi_k, D = I + sum_k p_k D_k."""

    sliding = False

    def __init__(self, C0, Ck, Ckl, Dk, K, Cd, Mb, directions, shapes, length):
        self.C0, self.Ck, self.Ckl, self.Dk = C0, Ck, Ckl, Dk
        self.K, self.Cd, self.Mb = K, Cd, Mb
        self.directions, self.shapes, self.length = directions, shapes, length
        self.n = len(directions)

    def local(self, q, qd, qdd, joint, flex, offset):
        return q[..., flex], qd[..., flex], qdd[..., flex]

    def tip(self, p, pd, pdd):
        batch = p.shape[:-1]
        return identity(batch, p) + lincomb(p, self.Dk), lincomb(pd, self.Dk), lincomb(pdd, self.Dk)

    def tip_partials(self, p):
        return np.broadcast_to(self.Dk, p.shape[:-1] + self.Dk.shape)

    def shortening(self, p, pd):
        """Axial tip shift -1/2 p^T S p and its rate (foreshortening; kinematics only)."""
        Sp = p @ self.S
        return -0.5 * (Sp * p).sum(-1), -(Sp * pd).sum(-1)

    def moments(self, p):
        """N = int h h^T and N0k = int h Phi_k^T at the current deflection."""
        Ck, Ckl = self.Ck, self.Ckl
        Cp = contract(p, Ckl)  # sum_l p_l C_lk
        N = self.C0 + lincomb(p, Ck + _T(Ck)) + lincomb(p, Cp)
        return N, Ck + Cp

    def terms(self, Wh, Whd, Whdd, p, pd, pdd):
        N, N0k = self.moments(p)
        phi = N @ _T(Whdd) + 2 * (lincomb(pd, N0k) @ _T(Whd)) + lincomb(pdd, N0k) @ _T(Wh)
        Cd = contract2(pd, self.Ckl)  # sum_k pd_k C_jk, indexed by j
        Cdd = contract2(pdd, self.Ckl)
        X = _T(N0k) @ _T(Whdd)[..., None, :, :] + 2 * (Cd @ _T(Whd)[..., None, :, :]) + Cdd @ _T(Wh)[..., None, :, :]
        return phi, ops.trace_product(Wh[..., None, :, :], X)

    def elastic(self, p, pd):
        return p @ self.K.T + pd @ self.Cd.T

    def kinetic(self, Wh, Whd, p, pd):
        """2 T of the beam: int |r_dot|^2 dm."""
        N, N0k = self.moments(p)
        Nd = lincomb(pd, N0k)
        S = lincomb(pd, contract2(pd, self.Ckl))
        return (
            ops.trace_product(Whd @ N, _T(Whd))
            + 2 * ops.trace_product(Whd @ Nd, _T(Wh))
            + ops.trace_product(Wh @ S, _T(Wh))
        )

    def moment(self, p):
        """int h dm (4-vector, last entry the mass) in the link frame."""
        N, _ = self.moments(p)
        return N[..., :, 3]

    def strain(self, p):
        return 0.5 * ((p @ self.K) * p).sum(-1)


class SlidingBeam:
    """Translating beam of a prismatic joint. Local coordinates: (d, xi_1..xi_n).

    In the link frame (z along the joint axis, tip at the origin) a material point keeps its
    axial coordinate z in [-l0, 0]; the outside part z in [-d, 0] deflects by
    ``sum_k xi_k d^s_k psi_k(1 + z/d) e_k``, the inside part is rigid.
    """

    sliding = True

    def __init__(self, sets, directions, axis, mu, l0, EI, damping_ratio, ref_length):
        from ..discretize import mass_matrix as shapes_mass
        from ..discretize import stiffness_matrix

        ax, t1, t2 = axis
        self.n = len(directions)
        self.directions = directions
        self.shapes = sets
        self.mu, self.l0 = mu, l0
        self.length = l0
        self.s = np.concatenate([np.asarray(ss.scale, float) for ss in sets.values()])
        first = next(iter(sets.values()))
        eta, w = first.quadrature()
        self.eta, self.w = np.asarray(eta, float), np.asarray(w, float)
        self.psi = np.concatenate([ss(self.eta) for ss in sets.values()])
        self.dpsi = np.concatenate([ss(self.eta, deriv=1) for ss in sets.values()])
        self.ddpsi = np.concatenate([ss(self.eta, deriv=2) for ss in sets.values()])
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
            rot = dpsi1[k] * np.cross(np.eye(3)[ax], np.eye(3)[t])
            self.Dr[k, :3, :3] = [[0, -rot[2], rot[1]], [rot[2], 0, -rot[0]], [-rot[1], rot[0], 0]]
        self.ax = ax
        self.axis = ax
        # stiffness at unit length, scaled at run time: K_kl(d) = Kbar_kl d^(s_k + s_l - 3)
        self.Kbar = np.zeros((self.n, self.n))
        Mb = np.zeros((self.n, self.n))
        pos = 0
        for direction, ss in sets.items():
            sl = slice(pos, pos + ss.n)
            self.Kbar[sl, sl] = stiffness_matrix(ss, EI[0] if direction == "y" else EI[1], 1.0, "bending")
            Mb[sl, sl] = shapes_mass(ss, mu, 1.0)
            pos += ss.n
        self.kexp = self.s[:, None] + self.s[None, :] - 3
        self.K = self.Kbar * ref_length ** self.kexp
        self.Mb = Mb * ref_length ** (self.s[:, None] + self.s[None, :] + 1)
        from .structure import modal_damping

        self.Cd = modal_damping(self.K, self.Mb, damping_ratio)  # at the reference length

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
        D = identity(p.shape[:-1], p) + lincomb(xi, D0)
        Dd = lincomb(xid, D0) + lincomb(xi, D1) * v[..., None, None]
        Ddd = (
            lincomb(xidd, D0)
            + lincomb(xi, D1) * a[..., None, None]
            + 2 * lincomb(xid, D1) * v[..., None, None]
            + lincomb(xi, D2) * _scalar_field(v * v)[..., None, None]
        )
        return D, Dd, Ddd

    def shortening(self, p, pd):
        """Axial tip shift -1/2 xi^T S(d) xi and its rate (foreshortening; kinematics only)."""
        (d, xi), (v, xid) = _first(p), _first(pd)
        expo = self.s[:, None] + self.s[None, :] - 1
        S = self.Sbar * d[..., None, None] ** expo
        Sx = (S @ xi[..., None])[..., 0]
        dSx = ((S * expo / d[..., None, None]) @ xi[..., None])[..., 0]
        return -0.5 * (Sx * xi).sum(-1), -(Sx * xid).sum(-1) - 0.5 * (dSx * xi).sum(-1) * v

    def tip_partials(self, p):
        (d, xi) = _first(p)
        first = lincomb(xi, self._Dk(d, 1))[..., None, :, :]
        return np.concatenate([first, self._Dk(d, 0)], axis=-3)

    # ----- points --------------------------------------------------------------------
    def _fields(self, d):
        """phi, dphi/dd, d2phi/dd2 at the Gauss points (n, G) for the current length."""
        s = self.s[:, None]
        eta, psi, dpsi, ddpsi = self.eta, self.psi, self.dpsi, self.ddpsi
        dd = d[..., None, None]
        g = s * psi + (1 - eta) * dpsi
        gp = (s - 1) * dpsi + (1 - eta) * ddpsi
        phi = dd**s * psi
        phid = dd ** (s - 1) * g
        phidd = dd ** (s - 2) * ((s - 1) * g + (1 - eta) * gp)
        return phi, phid, phidd

    def _points(self, p, pd, pdd):
        """Per Gauss point: h, h_dot, h_ddot (..., G, 4), partials dh/dp_j (..., G, m, 4), weights."""
        (d, xi) = _first(p)
        (v, xid) = _first(pd)
        (a, xidd) = _first(pdd)
        phi, phid, phidd = self._fields(d)
        E = self.E[:, None, :]  # (n, 1, 4)

        def field(c, f):  # sum_k c_k f_k(g) e_k -> (..., G, 4)
            return (c[..., :, None, None] * f[..., :, :, None] * E).sum(axis=-3)

        z = d[..., None] * (self.eta - 1.0)
        h = field(xi, phi)
        h = h + 0 * z[..., None]  # broadcast to batch
        h[..., self.ax] = h[..., self.ax] + z
        h[..., 3] = h[..., 3] + 1
        hd = field(xi, phid) * v[..., None, None] + field(xid, phi)
        hdd = (
            field(xi, phid) * a[..., None, None]
            + field(xidd, phi)
            + field(xi, phidd) * _scalar_field(v * v)[..., None, None]
            + 2 * field(xid, phid) * v[..., None, None]
        )
        dh_dd = field(xi, phid)[..., :, None, :]  # (..., G, 1, 4)
        dh_dxi = np.swapaxes(phi[..., :, :, None] * E, -3, -2)  # (..., G, n, 4)
        partials = np.concatenate([dh_dd + 0 * dh_dxi[..., :1, :], dh_dxi + 0 * dh_dd], axis=-2)
        wts = self.mu * d[..., None] * self.w
        return h, hd, hdd, partials, wts

    def _inside(self, d):
        """int h h^T dm of the part inside the hub, z in [-l0, -d]."""
        mu, l0 = self.mu, self.l0
        out = ops.zeros_like_batch(np.shape(d), (4, 4), ops.asarray(d))
        out[..., self.ax, self.ax] = mu * (l0**3 - d**3) / 3
        out[..., self.ax, 3] = out[..., 3, self.ax] = mu * (d**2 - l0**2) / 2
        out[..., 3, 3] = mu * (l0 - d)
        return out

    def terms(self, Wh, Whd, Whdd, p, pd, pdd):
        h, hd, hdd, partials, wts = self._points(p, pd, pdd)
        Wx = lambda A, v: _matvec(A[..., None, :, :], v)
        rdd = Wx(Whdd, h) + 2 * Wx(Whd, hd) + Wx(Wh, hdd)  # (..., G, 4)
        wr = wts[..., None] * rdd
        phi = _T(h) @ wr + self._inside(_scalar_field(p[..., 0])) @ _T(Whdd)
        # own forces: sum_g w (Wh dh/dp_j) . r_ddot
        dirs = _matvec(Wh[..., None, None, :, :], partials)  # (..., G, m, 4)
        q_local = (dirs * wr[..., :, None, :]).sum(axis=(-3, -1))
        return phi, q_local

    def elastic(self, p, pd):
        (d, xi) = _first(p)
        K = self.Kbar * d[..., None, None] ** self.kexp
        f_xi = (K @ xi[..., None])[..., 0] + pd[..., 1:] @ self.Cd.T
        dK = K * self.kexp / d[..., None, None]
        f_d = 0.5 * (xi * (dK @ xi[..., None])[..., 0]).sum(-1)
        return np.concatenate([f_d[..., None], f_xi], axis=-1)

    def kinetic(self, Wh, Whd, p, pd):
        zero = np.zeros_like(pd)
        h, hd, _, _, wts = self._points(p, pd, zero)
        rd = _matvec(Whd[..., None, :, :], h) + _matvec(Wh[..., None, :, :], hd)
        return (wts * (rd * rd).sum(-1)).sum(-1) + ops.trace_product(Whd @ self._inside(_scalar_field(p[..., 0])), _T(Whd))

    def moment(self, p):
        zero = np.zeros_like(p)
        h, _, _, _, wts = self._points(p, zero, zero)
        return (wts[..., None] * h).sum(-2) + self._inside(_scalar_field(p[..., 0]))[..., :, 3]

    def strain(self, p):
        (d, xi) = _first(p)
        K = self.Kbar * d[..., None, None] ** self.kexp
        return 0.5 * (xi * (K @ xi[..., None])[..., 0]).sum(-1)
