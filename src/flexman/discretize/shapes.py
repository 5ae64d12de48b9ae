"""Shape functions of a uniform clamped beam, their mass and stiffness integrals and the
natural frequencies of the discretized beam (:func:`beam_frequencies`).

Every shape set works in ``eta = x / L`` on [0, 1]: coordinate k has the physical shape
``phi_k(x) = L**scale[k] * psi_k(x / L)``. Bending families: clamped-free and clamped-mass
eigenfunctions (004 eqs. 9-11), polynomials ``eta**(k+1)`` (001 eq. 44) and Hermite cubic
finite elements (004 eq. 14). Torsion families: sine modes, tip-inertia modes, ``eta**k``
and linear finite elements.
"""
from __future__ import annotations

import functools

import numpy as np

from .frequency_roots import check_loads, clamped_mass_roots, torsion_roots

__all__ = [
    "ShapeSet",
    "shape_set",
    "stiffness_matrix",
    "mass_matrix",
    "tip_mass_matrix",
    "KINDS",
    "DIRECTIONS",
    "integral",
    "beam_frequencies",
]

KINDS = ("clamped_free", "clamped_mass", "polynomial", "finite_elements")
DIRECTIONS = ("bending", "torsion")
_FEM_POINTS = 6  # Gauss points per element: exact to degree 11 (products of cubics, times eta)


ROUNDOFF = 1e-13  # a quadrature sum below this fraction of its summands' magnitudes is 0


def integral(spec: str, *arrays) -> np.ndarray:
    """``np.einsum(spec, *arrays)`` over quadrature points, with roundoff zeros made exact: a
    sum below ROUNDOFF times the sum of its terms' magnitudes is 0 in exact arithmetic (the
    cross integral of two orthogonal modes, say). Exact zeros keep terms out of the
    symbolic equations that would otherwise carry 1e-16 coefficients."""
    value = np.einsum(spec, *arrays)
    bound = np.einsum(spec, *[np.abs(a) for a in arrays])
    return np.where(np.abs(value) <= ROUNDOFF * bound, 0.0, value)


def _gauss(points: int, panels: int = 1):
    """Composite Gauss-Legendre rule on [0, 1]: `panels` equal panels of `points` nodes."""
    x, w = np.polynomial.legendre.leggauss(points)
    edges = np.arange(panels)[:, None] / panels
    nodes = (edges + 0.5 * (x + 1.0) / panels).ravel()
    return nodes, np.tile(0.5 * w / panels, panels)


def _oscillatory_rule(beta_max: float):
    """Rule for products of modes with wavenumbers up to beta_max (frequency up to 2 beta_max):
    32 Gauss points per panel, one panel per 10 units of beta (error far below 1e-14). Cached
    (shape sets are rebuilt at every step of a beta-ODE simulation); read-only arrays."""
    return _panels_rule(1 + int(beta_max // 10))


@functools.lru_cache(maxsize=None)
def _panels_rule(panels: int):
    nodes, weights = _gauss(32, panels)
    nodes.flags.writeable = weights.flags.writeable = False
    return nodes, weights


class ShapeSet:
    """Shape functions of one direction ('bending' or 'torsion') of a beam, in eta = x/L in [0, 1].

    ``n``: number of coordinates; ``scale``: integer exponents s_k with phi_k(x) = L**s_k psi_k(x/L);
    ``beta``: eigenvalues of eigenfunction families (None otherwise).
    """

    kind: str = ""
    direction: str = ""
    beta = None

    def __init__(self, n: int):
        self.n = int(n)
        self.scale = np.zeros(self.n, dtype=int)

    def __call__(self, eta, deriv: int = 0) -> np.ndarray:
        """(n, len(eta)) values of d^deriv psi_k / d eta^deriv (deriv in 0..3)."""
        if deriv not in (0, 1, 2, 3):
            raise ValueError(f"deriv must be 0, 1, 2 or 3 (got {deriv})")
        eta = np.atleast_1d(np.asarray(eta, dtype=float))
        return self._eval(eta.ravel(), deriv)

    def _eval(self, eta, deriv):  # pragma: no cover - abstract
        raise NotImplementedError

    def quadrature(self):
        """(eta_nodes, weights) on [0, 1], exact for products of two shapes or their derivatives."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(kind={self.kind!r}, direction={self.direction!r}, n={self.n})"


class BendingModes(ShapeSet):
    """Clamped-free or clamped-mass bending eigenfunctions (004 eq. 9), int psi**2 = 1, psi(1) > 0.

    Evaluated in the basis {cos(b eta), sin(b eta), exp(-b eta), exp(b (eta - 1))}, whose
    entries stay O(1) on [0, 1]: the usual cosh/sinh form cancels catastrophically for b > ~20.
    """

    direction = "bending"

    def __init__(self, n, M=0.0, J=0.0, D=0.0, beta=None):
        """``beta``: the eigenvalues, when the caller already has them (roots of the frequency
        equation at these loads, e.g. kept there by integrating 004 eq. 40); else they are found."""
        super().__init__(n)
        check_loads(M, J, D)
        self.M, self.J, self.D = float(M), float(J), float(D)
        self.kind = "clamped_free" if M == J == D == 0.0 else "clamped_mass"
        if beta is not None:
            self.beta = np.array(beta, dtype=float).reshape(n)
        else:
            self.beta = clamped_mass_roots(n, M, J, D) if n else np.zeros(0)
        self._nodes, self._weights = _oscillatory_rule(self.beta.max() if n else 0.0)
        self.coef = np.array([self._coefficients(b) for b in self.beta]).reshape(self.n, 4)

    @staticmethod
    def _basis(b, eta, deriv):
        """(4, len(eta)): the deriv-th eta-derivative of the four basis functions."""
        ph = deriv * np.pi / 2
        return b**deriv * np.array(
            [np.cos(b * eta + ph), np.sin(b * eta + ph),
             (-1) ** deriv * np.exp(-b * eta), np.exp(b * (eta - 1.0))]
        )

    def _coefficients(self, b):
        """Basis coefficients of the mode with eigenvalue b, clamped at 0, tip conditions at 1."""
        # two clamped-root solutions: u3 = exp(-b eta) - cos + sin, u4 = exp(b(eta-1)) - e^-b (cos + sin)
        e = np.exp(-b)
        U = np.array([[-1.0, 1.0, 1.0, 0.0], [-e, -e, 0.0, 1.0]])  # rows: u3, u4 in the basis
        tip = [U @ self._basis(b, np.array([1.0]), k)[:, 0] for k in range(4)]  # psi^(k)(1) of u3, u4
        b4 = b**4
        moment = (tip[2] - b4 * (self.D * tip[0] + self.J * tip[1])) / b**2
        shear = (tip[3] + b4 * (self.M * tip[0] + self.D * tip[1])) / b**3
        A = np.array([moment / np.linalg.norm(moment), shear / np.linalg.norm(shear)])
        z = np.linalg.svd(A)[2][-1]  # null vector of the (singular at a root) 2x2 system
        coef = z @ U
        vals = coef @ self._basis(b, self._nodes, 0)
        coef /= np.sqrt(np.sum(self._weights * vals**2))
        tip_value = coef @ self._basis(b, np.array([1.0]), 0)[:, 0]
        return -coef if tip_value < 0 else coef

    def _eval(self, eta, deriv):
        out = np.empty((self.n, eta.size))
        for k, b in enumerate(self.beta):
            out[k] = self.coef[k] @ self._basis(b, eta, deriv)
        return out

    def quadrature(self):
        return self._nodes.copy(), self._weights.copy()


class TorsionModes(ShapeSet):
    """Torsion eigenfunctions sin(b_k eta), normalized int psi**2 = 1 (J = 0: b_k = (2k-1) pi/2)."""

    direction = "torsion"

    def __init__(self, n, J=0.0):
        super().__init__(n)
        self.J = float(J)
        self.kind = "clamped_free" if J == 0.0 else "clamped_mass"
        self.beta = torsion_roots(n, J) if n else np.zeros(0)
        b = self.beta
        self.amp = 1.0 / np.sqrt(0.5 - np.sin(2 * b) / (4 * b)) if n else np.zeros(0)
        self._nodes, self._weights = _oscillatory_rule(b.max() if n else 0.0)

    def _eval(self, eta, deriv):
        b = self.beta[:, None]
        return self.amp[:, None] * b**deriv * np.sin(b * eta + deriv * np.pi / 2)

    def quadrature(self):
        return self._nodes.copy(), self._weights.copy()


class PolynomialShapes(ShapeSet):
    """Monomials eta**p, p = first, first+1, ... (bending: eta**2, eta**3, ... per 001 eq. 44)."""

    kind = "polynomial"

    def __init__(self, n, direction):
        super().__init__(n)
        self.direction = direction
        self.powers = np.arange(n) + (2 if direction == "bending" else 1)

    def _eval(self, eta, deriv):
        p = self.powers[:, None].astype(float)
        factor = np.ones_like(p)
        for i in range(deriv):
            factor = factor * (p - i)
        expo = np.maximum(p - deriv, 0.0)
        return factor * eta[None, :] ** expo

    def quadrature(self):
        return _gauss(self.n + 4)  # exact to degree 2n + 7 >= products of two shapes (2n + 2)


class HermiteElements(ShapeSet):
    """Hermite cubic beam elements (004 eq. 14), clamped at eta = 0.

    Coordinates node by node for nodes 2..E+1: (deflection, slope dv/dx). Deflection shapes are
    dimensionless (scale 0); a slope coordinate is a physical slope, so its shape in eta is the
    Hermite rotation function divided by L (scale 1).
    """

    kind = "finite_elements"
    direction = "bending"

    def __init__(self, elements):
        if elements < 1:
            raise ValueError("finite_elements needs elements >= 1")
        super().__init__(2 * elements)
        self.elements = int(elements)
        self.scale[1::2] = 1

    @staticmethod
    def _local(xi, deriv):
        """(4, len(xi)) Hermite functions N1..N4 on xi in [0, 1] and their xi-derivatives
        (N2, N4 are the rotation functions divided by the element length)."""
        polys = [
            np.polynomial.Polynomial([1, 0, -3, 2]),
            np.polynomial.Polynomial([0, 1, -2, 1]),
            np.polynomial.Polynomial([0, 0, 3, -2]),
            np.polynomial.Polynomial([0, 0, -1, 1]),
        ]
        return np.array([p.deriv(deriv)(xi) if deriv else p(xi) for p in polys])

    def _eval(self, eta, deriv):
        E = self.elements
        h = 1.0 / E
        elem = np.clip(np.floor(eta * E).astype(int), 0, E - 1)
        xi = eta * E - elem
        local = self._local(xi, deriv) / h**deriv
        local[1] *= h
        local[3] *= h
        out = np.zeros((self.n, eta.size))
        cols = np.arange(eta.size)
        for j, (node_offset, dof) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            node = elem + node_offset  # 0-based node index; node 0 is clamped
            keep = node > 0
            out[2 * (node[keep] - 1) + dof, cols[keep]] = local[j, keep]
        return out

    def quadrature(self):
        return _gauss(_FEM_POINTS, self.elements)


class LinearElements(ShapeSet):
    """Linear (hat) torsion elements, clamped at eta = 0: twist at nodes 2..E+1."""

    kind = "finite_elements"
    direction = "torsion"

    def __init__(self, elements):
        if elements < 1:
            raise ValueError("finite_elements needs elements >= 1")
        super().__init__(elements)
        self.elements = int(elements)

    def _eval(self, eta, deriv):
        E = self.elements
        elem = np.clip(np.floor(eta * E).astype(int), 0, E - 1)
        xi = eta * E - elem
        if deriv == 0:
            left, right = 1.0 - xi, xi
        elif deriv == 1:
            left, right = -E * np.ones_like(xi), E * np.ones_like(xi)
        else:
            left = right = np.zeros_like(xi)
        out = np.zeros((self.n, eta.size))
        cols = np.arange(eta.size)
        for node, val in ((elem, left), (elem + 1, right)):
            keep = node > 0
            out[node[keep] - 1, cols[keep]] = val[keep]
        return out

    def quadrature(self):
        return _gauss(_FEM_POINTS, self.elements)


def shape_set(kind, direction, n, elements=0, M=0.0, J=0.0, D=0.0) -> ShapeSet:
    """The shape set of one direction of a beam (see :func:`build_shape_set`), shared by every
    beam with the same arguments: the sets are read-only after construction, and finding the
    roots and normalizing the modes is most of a small arm's model build, paid once per process.
    """
    try:
        key = (kind, direction, int(n), int(elements), float(M), float(J), float(D))
    except (TypeError, ValueError):
        return build_shape_set(kind, direction, n, elements, M, J, D)
    return _shared_shape_set(*key)


@functools.lru_cache(maxsize=256)
def _shared_shape_set(kind, direction, n, elements, M, J, D) -> ShapeSet:
    return build_shape_set(kind, direction, n, elements, M, J, D)


def build_shape_set(kind, direction, n, elements=0, M=0.0, J=0.0, D=0.0) -> ShapeSet:
    """Build the shape set of one direction of a beam.

    kind: 'clamped_free' | 'clamped_mass' | 'polynomial' | 'finite_elements'; direction:
    'bending' | 'torsion'; n: number of modes (finite elements use `elements`). M, J, D are the
    tip loads of 004 eq. (11) (M_L/(mu L), J_L/(mu L**3), M_DL/(mu L**2)) for clamped-mass
    bending; for clamped-mass torsion J is the tip polar inertia over the beam's, J_L/(j L).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown shape kind '{kind}'; use one of {', '.join(KINDS)}")
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction '{direction}'; use bending or torsion")
    if kind == "finite_elements":
        return HermiteElements(elements) if direction == "bending" else LinearElements(elements)
    if n < 0:
        raise ValueError(f"number of modes must be >= 0 (got {n})")
    if kind == "polynomial":
        return PolynomialShapes(n, direction)
    if direction == "torsion":
        ss = TorsionModes(n, J if kind == "clamped_mass" else 0.0)
    elif kind == "clamped_free":
        ss = BendingModes(n)
    else:
        ss = BendingModes(n, M, J, D)
    ss.kind = kind
    return ss


def _gram(shapes: ShapeSet, deriv: int) -> np.ndarray:
    """int_0^1 psi_k^(deriv) psi_l^(deriv) d eta by the set's exact quadrature."""
    eta, w = shapes.quadrature()
    v = shapes(eta, deriv)
    G = integral("kq,q,lq->kl", v, w, v)
    return 0.5 * (G + G.T)


def _scaled(shapes: ShapeSet, G: np.ndarray, L: float, offset: int) -> np.ndarray:
    s = np.asarray(shapes.scale, dtype=float)
    return G * float(L) ** (s[:, None] + s[None, :] + offset)


def stiffness_matrix(shapes: ShapeSet, stiffness: float, L: float, direction=None) -> np.ndarray:
    """Elastic stiffness: bending EI int phi'' phi'' dx; torsion GJ int phi' phi' dx."""
    direction = direction or shapes.direction
    if direction == "bending":
        return stiffness * _scaled(shapes, _gram(shapes, 2), L, -3)
    if direction == "torsion":
        return stiffness * _scaled(shapes, _gram(shapes, 1), L, -1)
    raise ValueError(f"unknown direction '{direction}'; use bending or torsion")


def mass_matrix(shapes: ShapeSet, mu: float, L: float) -> np.ndarray:
    """Consistent mass mu int phi_k phi_l dx (for torsion pass the polar inertia per length j)."""
    return mu * _scaled(shapes, _gram(shapes, 0), L, 1)


def tip_mass_matrix(shapes: ShapeSet, L: float, M_L=0.0, J_L=0.0, M_DL=0.0) -> np.ndarray:
    """Mass terms of a rigid tip body on a bending shape set (kinetic energy
    1/2 M_L w_t**2 + M_DL w_t w'_t + 1/2 J_L w'_t**2 at x = L)."""
    s = np.asarray(shapes.scale, dtype=float)
    w = shapes(1.0, 0)[:, 0] * float(L) ** s
    dw = shapes(1.0, 1)[:, 0] * float(L) ** (s - 1)
    return M_L * np.outer(w, w) + J_L * np.outer(dw, dw) + M_DL * (np.outer(w, dw) + np.outer(dw, w))


def beam_frequencies(kind: str, n_or_elements: int, EI, mu, L, M=0.0, J=0.0, D=0.0) -> np.ndarray:
    """Bending natural frequencies (rad/s) of a discretized clamped beam with a tip body.

    Solves K v = omega**2 Mass v with the consistent mass matrix of the shapes plus the
    tip body's terms (M_L = M mu L, J_L = J mu L**3, M_DL = D mu L**2).
    """
    from scipy.linalg import eigh

    if kind == "finite_elements":
        ss = shape_set(kind, "bending", 0, elements=n_or_elements)
    else:
        ss = shape_set(kind, "bending", n_or_elements, M=M, J=J, D=D)
    K = stiffness_matrix(ss, EI, L, "bending")
    Mm = mass_matrix(ss, mu, L) + tip_mass_matrix(ss, L, M * mu * L, J * mu * L**3, D * mu * L**2)
    w2 = eigh(K, Mm, eigvals_only=True)
    return np.sqrt(np.clip(np.sort(w2), 0.0, None))
