"""Second-order kinematics of a flexible beam on a revolute link (001 sec. 2.3, re-derived).

Why: a Jacobian exact to first order in the deflection, and the static equilibrium under an
endpoint load, need the positions of the tip and of the beam's mass to *second* order in the
flexible coordinates (foreshortening, the second-order part of the tip rotation, the
torsion-bending coupling). The dynamics of the documents keep only first-order kinematics.

Derivation. A section at arc length x along the beam axis e carries the frame R(x) with
``R' = R skew(kappa)`` (kappa: twist and bending curvatures in the section frame) and the
inextensible neutral axis gives ``r' = R e``. Following 001, the assumed-mode fields define the
curvatures: ``kappa = theta'`` with ``theta(x) = sum_k p_k theta_k(x)``, where

* a bending shape phi toward the transverse axis t has ``theta_k = phi' (e x t)`` and first-order
  displacement ``u_k = phi t``;
* a torsion shape phi has ``theta_k = phi e`` and ``u_k = 0``.

Integrating ``R' = R skew(theta')`` order by order (``R = I + R1 + R2``, ``R1' = skew(theta')``,
``R2' = R1 skew(theta')``) and using ``skew(a) skew(b) = b a^T - (a.b) I``:

    R  = I + skew(theta) + 1/2 skew(theta)^2 + 1/2 skew(c),      c(x) = int_0^x theta x theta' dxi,
    r  = x e + u + int_0^x (R - I - skew(theta)) e dxi.

So with ``p`` the beam's coordinates the second-order parts are ``1/2 sum_kl p_k p_l (.)_kl`` with

    R_kl(x) = Q_kl(x) + 1/2 skew(int_0^x s_kl),            Q_kl = sym(skew(theta_k) skew(theta_l)),
    r_kl(x) = int_0^x Q_kl e + 1/2 (int_0^x (x - xi) s_kl) x e,  s_kl = theta_k x theta_l' + theta_l x theta_k'.

For planar bending these reduce to the foreshortening ``-int phi_k' phi_l'`` along the axis and the
``1 - v'^2/2`` of the rotation; the transverse parts reproduce the torsion-bending coupling
``v - int int w'' alpha`` and ``w + int int v'' alpha`` of 001 eq. 18. The beam's first moment
(what gravity sees) gets ``m_kl = mu int_0^L r_kl dx = mu [int (L - x) Q_kl e + 1/2 (int (L - xi)^2/2 s_kl) x e]``.
"""
from __future__ import annotations

import numpy as np

from .ops import skew

GAUSS_POINTS = 24  # per sub-interval: exact for polynomials of degree 47


def _breakpoints(sets):
    """Points of [0, 1] where a shape set is only piecewise smooth (element edges), and a
    panel grid fine enough for oscillatory eigenfunctions."""
    pts = {0.0, 1.0}
    for ss in sets.values():
        elements = getattr(ss, "elements", 0)
        pts.update(np.arange(1, elements) / elements if elements else ())
        beta = getattr(ss, "beta", None)
        if beta is not None and len(beta):
            panels = 1 + int(np.max(beta) // 10)
            pts.update(np.arange(1, panels) / panels)
    return np.array(sorted(pts))


def rule(sets, a, b):
    """Gauss rule (nodes, weights) on [a, b] (in eta = x / L) split at the sets' breakpoints."""
    x, w = np.polynomial.legendre.leggauss(GAUSS_POINTS)
    edges = _breakpoints(sets)
    edges = np.unique(np.concatenate([[a, b], edges[(edges > a) & (edges < b)]]))
    lo, hi = edges[:-1, None], edges[1:, None]
    nodes = (lo + 0.5 * (x + 1.0) * (hi - lo)).ravel()
    weights = (0.5 * w * (hi - lo)).ravel()
    return nodes, weights


class BeamKinematics:
    """The first- and second-order fields of one revolute beam, in its link frame's axes.

    ``sets``: direction ('y', 'z', 'torsion') -> shape set, in coordinate order; ``L``: length;
    ``axes``: (axis, t1, t2) indices of the beam axis and of the 'y' and 'z' bending directions.
    """

    def __init__(self, sets, L, axes):
        self.sets, self.L = sets, float(L)
        self.ax, self.t1, self.t2 = axes
        self.e = np.eye(3)[self.ax]
        self.n = sum(ss.n for ss in sets.values())

    def fields(self, eta):
        """(theta_k, theta_k', u_k), each (n, len(eta), 3), at stations x = eta L."""
        eta = np.atleast_1d(np.asarray(eta, dtype=float))
        L, I3 = self.L, np.eye(3)
        th, dth, u = [], [], []
        for direction, ss in self.sets.items():
            s = np.asarray(ss.scale, float)[:, None]
            f0, f1, f2 = (ss(eta, d) * L ** (s - d) for d in (0, 1, 2))
            if direction == "torsion":
                th.append(f0[..., None] * self.e)
                dth.append(f1[..., None] * self.e)
                u.append(np.zeros(f0.shape + (3,)))
            else:
                t = I3[self.t1 if direction == "y" else self.t2]
                normal = np.cross(self.e, t)  # the bending slope rotates the section about e x t
                th.append(f1[..., None] * normal)
                dth.append(f2[..., None] * normal)
                u.append(f0[..., None] * t)
        cat = lambda parts: np.concatenate(parts, axis=0) if parts else np.zeros((0, eta.size, 3))
        return cat(th), cat(dth), cat(u)

    def rotation_products(self, th):
        """Q_kl = sym(skew(theta_k) skew(theta_l)) at each station: (n, n, nx, 3, 3)."""
        outer = np.einsum("kqa,lqb->klqab", th, th)
        dot = np.einsum("kqa,lqa->klq", th, th)
        return 0.5 * (outer + np.swapaxes(outer, -1, -2)) - dot[..., None, None] * np.eye(3)

    def rotation_products_on_axis(self, th):
        """Q_kl e (n, n, nx, 3): ``rotation_products(th) @ e`` without the (n, n, nx, 3, 3) tensor
        (e is a coordinate axis, so this is its column ``ax``: the same numbers, a third of the work)."""
        ax = self.ax
        dot = np.einsum("kqa,lqa->klq", th, th)
        out = 0.5 * (np.einsum("kqa,lq->klqa", th, th[:, :, ax]) + np.einsum("kq,lqa->klqa", th[:, :, ax], th))
        out[..., ax] -= dot
        return out

    def slope_products(self, th, dth):
        """s_kl = theta_k x theta_l' + theta_l x theta_k' at each station: (n, n, nx, 3)."""
        c = np.cross(th[:, None], dth[None, :])
        return c + np.swapaxes(c, 0, 1)

    def section(self, x):
        """Second-order parts at one station x (m from the root): (R_kl (n, n, 3, 3), r_kl (n, n, 3))
        with R(x) = I + sum p_k skew(theta_k) + 1/2 sum p_k p_l R_kl, r likewise."""
        X = float(x) / self.L
        n = self.n
        if X == 0.0 or n == 0:
            return np.zeros((n, n, 3, 3)), np.zeros((n, n, 3))
        eta, w = rule(self.sets, 0.0, X)
        th, dth, _ = self.fields(eta)
        wx = w * self.L
        xs = eta * self.L
        Qe = self.rotation_products_on_axis(th)  # (n, n, q, 3)
        s = self.slope_products(th, dth)
        th_end, _, _ = self.fields([X])
        R = self.rotation_products(th_end)[:, :, 0] + 0.5 * skew(np.einsum("klqa,q->kla", s, wx))
        r = np.einsum("klqa,q->kla", Qe, wx) + 0.5 * np.cross(np.einsum("klqa,q->kla", s, wx * (x - xs)), self.e)
        return R, r

    def first_moment(self, mu):
        """m_kl (n, n, 3): second-order part of the beam's first moment int r dm."""
        n = self.n
        if n == 0:
            return np.zeros((0, 0, 3))
        eta, w = rule(self.sets, 0.0, 1.0)
        th, dth, _ = self.fields(eta)
        wx, rest = w * self.L, self.L * (1.0 - eta)
        Qe = self.rotation_products_on_axis(th)
        s = self.slope_products(th, dth)
        m = np.einsum("klqa,q->kla", Qe, wx * rest) + 0.5 * np.cross(np.einsum("klqa,q->kla", s, wx * rest**2 / 2), self.e)
        return mu * m

    def tip_tensor(self, tip):
        """D_kl (n, n, 4, 4): second derivatives of the tip transform D(p) (the deflection
        transform about the tip point ``tip`` of the link frame, as the first-order D_k)."""
        R, r = self.section(self.L)
        out = np.zeros(R.shape[:2] + (4, 4))
        out[..., :3, :3] = R
        out[..., :3, 3] = r - R @ np.asarray(tip, float)
        return out
