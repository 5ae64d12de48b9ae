"""An independent planar reference for the small vibrations of chains of uniform Euler-Bernoulli
beams about a straight configuration: written here from the beam equation, sharing nothing with
flexman's models. Each link's transverse displacement is v(s) = a + b s + w(s), a and b the
displacement and slope its joint hands on (the previous link's tip, plus the joint angle when
that joint is free in this plane), w clamped at the link's root and spanned by either the
closed-form clamped-free modes (cos(bL) cosh(bL) = -1) or cubic Hermite finite elements; mass
rho int v v, stiffness EI int w'' w'' by Gauss-Legendre quadrature; frequencies from the
generalized eigenproblem. ``gravity`` adds the first-order potential of a beam hanging along
gravity from a pinned root (a single link): V = g rho (q^2 L^2 / 4 + q int w), the rigid
rotation of the deflected shape with no axial shortening (flexman's ``stiffening: false``)."""
from __future__ import annotations

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import brentq


def clamped_free_roots(n):
    """The first n roots b L of cos x cosh x = -1."""
    return [brentq(lambda x: np.cos(x) * np.cosh(x) + 1.0, (k + 0.5) * np.pi - 1.2, (k + 0.5) * np.pi + 1.2)
            if k else brentq(lambda x: np.cos(x) * np.cosh(x) + 1.0, 1.0, 2.5) for k in range(n)]


def _modes(L, n):
    """(values(s), curvatures(s), tip value, tip slope) of n clamped-free mode shapes."""
    betas = np.array(clamped_free_roots(n)) / L
    sig = (np.cosh(betas * L) + np.cos(betas * L)) / (np.sinh(betas * L) + np.sin(betas * L))

    def val(s):
        bs = np.outer(s, betas)
        return np.cosh(bs) - np.cos(bs) - sig * (np.sinh(bs) - np.sin(bs))

    def curv(s):
        bs = np.outer(s, betas)
        return betas ** 2 * (np.cosh(bs) + np.cos(bs) - sig * (np.sinh(bs) + np.sin(bs)))

    bL = betas * L
    slope = betas * (np.sinh(bL) + np.sin(bL) - sig * (np.cosh(bL) - np.cos(bL)))
    return val, curv, val(np.array([L]))[0], slope


def _elements(L, n):
    """The same for n Hermite elements clamped at s = 0 (dofs: w, w' at nodes 1..n)."""
    h = L / n

    def shapes(s, second):
        out = np.zeros((len(s), 2 * n))
        e = np.minimum((s / h).astype(int), n - 1)
        xi = s / h - e
        if second:
            N = np.stack([(-6 + 12 * xi) / h ** 2, (-4 + 6 * xi) / h, (6 - 12 * xi) / h ** 2, (-2 + 6 * xi) / h], 1)
        else:
            N = np.stack([1 - 3 * xi ** 2 + 2 * xi ** 3, h * (xi - 2 * xi ** 2 + xi ** 3), 3 * xi ** 2 - 2 * xi ** 3,
                          h * (-xi ** 2 + xi ** 3)], 1)
        for r, (ee, row) in enumerate(zip(e, N)):
            for j, dof in enumerate(range(2 * ee - 2, 2 * ee + 2)):
                if dof >= 0:
                    out[r, dof] = row[j]
        return out

    tip_w, tip_t = np.zeros(2 * n), np.zeros(2 * n)
    tip_w[-2], tip_t[-1] = 1.0, 1.0
    return (lambda s: shapes(s, False)), (lambda s: shapes(s, True)), tip_w, tip_t


def frequencies(links, free, root_inertia=0.0, gravity=0.0, modes=None, elements=None):
    """The elastic (and, under gravity, pendulum) natural frequencies (rad/s, ascending) of a planar chain of ``links`` = [(L, rho,
    EI)], joined end to end; ``free[i]``: joint i (at link i's root) turns in this plane freely
    (else locked, the slope continuous); ``root_inertia`` about the first joint. Each link's
    deflection on ``modes`` clamped-free modes or ``elements`` Hermite elements."""
    M, K = matrices(links, free, root_inertia, gravity, modes, elements)
    w2 = eigh(K, M, eigvals_only=True)
    rigid = 0 if gravity else sum(free)  # each free joint without gravity: a rigid motion at zero frequency
    return np.sqrt(w2[rigid:])


def matrices(links, free, root_inertia=0.0, gravity=0.0, modes=None, elements=None):
    """(M, K) of :func:`frequencies`' linear model: the free joints' angles first, then each
    link's deflection coordinates."""
    bases = [_modes(L, modes) if modes else _elements(L, elements) for L, _, _ in links]
    nq = sum(free)
    sizes = [len(b[2]) for b in bases]
    nx = nq + sum(sizes)
    M, K = np.zeros((nx, nx)), np.zeros((nx, nx))
    a, b = np.zeros(nx), np.zeros(nx)  # displacement and slope at the current root, as maps of x
    qi, off = 0, nq
    x, wts = np.polynomial.legendre.leggauss(64)
    for (L, rho, EI), basis, size, is_free in zip(links, bases, sizes, free):
        if is_free:
            b = b.copy()
            b[qi] += 1.0
            if qi == 0:
                M[0, 0] += root_inertia
            qi += 1
        cuts = np.linspace(0.0, L, (elements or 16) + 1)
        for lo, hi in zip(cuts[:-1], cuts[1:]):  # Gauss points per piece (exact for the elements)
            s = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
            wq = 0.5 * (hi - lo) * wts
            C = np.outer(np.ones_like(s), a) + np.outer(s, b)
            C[:, off:off + size] += basis[0](s)
            D = np.zeros((len(s), nx))
            D[:, off:off + size] = basis[1](s)
            M += rho * (C.T * wq) @ C
            K += EI * (D.T * wq) @ D
            if gravity:  # a single pinned link hanging along gravity: V = g rho (q^2 L^2 / 4 + q int w)
                wint = np.zeros(nx)
                wint[off:off + size] = wq @ basis[0](s)
                K += gravity * rho * (np.outer(b, wint) + np.outer(wint, b))
        if gravity:
            K += gravity * rho * L ** 2 / 2 * np.outer(b, b)
        tip = a + L * b
        tip[off:off + size] += basis[2]
        slope = b.copy()
        slope[off:off + size] += basis[3]
        a, b, off = tip, slope, off + size
    return M, K
