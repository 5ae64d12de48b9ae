"""Beam discretizations: shape functions, modal integrals and frequency equations.

Literature: 004 = Theodore & Ghosal 1995 (eqs. 9-11 clamped-mass modes, eq. 14 Hermite
elements, Table 1 clamped-free frequencies with the link-2 data of Table 3, eqs. 38-44 the
frequency equation and its partials); 001 = Piedboeuf 1993 eq. (44) polynomial shapes.
Independent oracles are computed here with mpmath at high precision.
"""
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexman.discretize import (
    beam_frequencies,
    beta_rate,
    clamped_free_roots,
    clamped_mass_roots,
    exact_frequencies,
    frequency_equation,
    frequency_equation_partials,
    mass_matrix,
    shape_set,
    stiffness_matrix,
    tip_mass_matrix,
    torsion_roots,
)

# 004 Table 3, link 2: EI = 1165.4916 N m^2, 0.331 kg over 1.0 m
EI, MU, L = 1165.4916, 0.331, 1.0

# 004 Table 1 (printed as Hz, the values are rad/s; see INDEX.md)
TABLE1_FEM = {
    1: [209.63, 2065.4],
    2: [208.73, 1318.6, 4459.7, 12944.0],
    3: [208.64, 1311.8, 3706.7, 8347.3, 15709.0, 31318.0],
}
TABLE1_EXACT = [208.64, 1307.5, 3661.1, 7174.2, 11860.0, 17716.0]


# ----- 004 Table 1 ---------------------------------------------------------------------------
@pytest.mark.parametrize("elements", [1, 2, 3])
def test_table1_finite_elements(elements):
    """004 Table 1, columns N = 1, 2, 3 (Hermite cubic elements, consistent mass). The 3-element
    mode 1 is 208.66 with consistent mass; the table's 208.64 is rounding (INDEX.md): 2e-4."""
    got = beam_frequencies("finite_elements", elements, EI, MU, L)
    np.testing.assert_allclose(got, TABLE1_FEM[elements], rtol=2e-4)


def test_table1_exact():
    """004 Table 1, exact column: beta_k**2 sqrt(EI / (mu L**4))."""
    np.testing.assert_allclose(exact_frequencies(6, EI, MU, L), TABLE1_EXACT, rtol=1e-4)
    # clamped-free eigenfunctions are exact: Rayleigh-Ritz reproduces the exact values
    np.testing.assert_allclose(
        beam_frequencies("clamped_free", 6, EI, MU, L), exact_frequencies(6, EI, MU, L), rtol=1e-12
    )


def test_fem_converges_from_above():
    """Finite elements overestimate the frequencies (004 sec. 4.1) and decrease monotonically."""
    exact = exact_frequencies(4, EI, MU, L)
    prev = None
    for elements in range(2, 21):
        got = beam_frequencies("finite_elements", elements, EI, MU, L)[:4]
        assert np.all(got >= exact * (1 - 1e-12))
        if prev is not None:
            assert np.all(got <= prev)
        prev = got
    np.testing.assert_allclose(prev, exact, rtol=2e-4)


def test_polynomials_converge():
    """Polynomial shapes eta**2, eta**3, ... (001 eq. 44): upper bounds that converge."""
    exact = exact_frequencies(3, EI, MU, L)
    got = beam_frequencies("polynomial", 8, EI, MU, L)[:3]
    assert np.all(got >= exact * (1 - 1e-12))
    np.testing.assert_allclose(got, exact, rtol=1e-5)


# ----- roots -----------------------------------------------------------------------------------
def test_clamped_free_roots_vs_mpmath():
    """cos b cosh b = -1 solved independently at 40 digits (secant from the asymptote)."""
    n = 30
    roots = clamped_free_roots(n)
    with mp.workdps(40):
        for k in range(1, n + 1):
            start = (2 * k - 1) * mp.pi / 2
            ref = mp.findroot(lambda b: mp.cos(b) + 1 / mp.cosh(b), start)
            assert abs(roots[k - 1] - float(ref)) <= 2e-15 * float(ref)
    # asymptote (2k-1) pi/2, error ~ 2 exp(-b)
    k = np.arange(1, n + 1)
    asym = (2 * k - 1) * np.pi / 2
    assert np.all(np.abs(roots - asym) <= 2.1 * np.exp(-asym) + 1e-14 * asym)
    np.testing.assert_allclose(roots[:3], [1.8751040687, 4.6940911330, 7.8547574382], rtol=1e-10)


def _bvp_matrix(b, M, J, D):
    """4x4 boundary-condition matrix of psi = a cos + c cosh + s sin + t sinh (in b eta):
    clamped at eta = 0; at eta = 1 psi'' = b^4 (D psi + J psi'), psi''' = -b^4 (M psi + D psi')."""
    def d(k, eta):  # k-th derivative of (cos, cosh, sin, sinh) at eta
        x = b * eta
        c, ch, s, sh = mp.cos(x), mp.cosh(x), mp.sin(x), mp.sinh(x)
        table = [(c, ch, s, sh), (-s, sh, c, ch), (-c, ch, -s, sh), (s, sh, -c, ch)]
        return [b**k * v for v in table[k]]

    p0, p1, p2, p3 = (d(k, 1) for k in range(4))
    rows = [d(0, 0), d(1, 0)]
    rows.append([p2[i] - b**4 * (D * p0[i] + J * p1[i]) for i in range(4)])
    rows.append([p3[i] + b**4 * (M * p0[i] + D * p1[i]) for i in range(4)])
    return mp.matrix(rows)


@pytest.mark.parametrize("M,J,D", [(0.5, 0.0, 0.0), (0.25, 0.02, 0.05), (2.0, 0.3, 0.4), (10.0, 1.0, 0.0)])
def test_clamped_mass_roots_vs_boundary_value_problem(M, J, D):
    """Roots of 004 eq. (11) vs the 4x4 determinant of the clamped-mass BVP, scanned and
    refined in mpmath (independent of the closed form and of its order of roots)."""
    n = 5
    roots = clamped_mass_roots(n, M, J, D)
    with mp.workdps(30):
        det = lambda b: mp.det(_bvp_matrix(mp.mpf(b), M, J, D)) * mp.exp(-b)  # noqa: E731
        grid = np.linspace(0.01, roots[-1] + 1.0, 800)
        vals = [det(x) for x in grid]
        ref = []
        for i in range(len(grid) - 1):
            if mp.sign(vals[i]) != mp.sign(vals[i + 1]):
                ref.append(float(mp.findroot(det, (grid[i], grid[i + 1]), solver="anderson")))
    np.testing.assert_allclose(roots, ref[:n], rtol=1e-12)


def test_clamped_mass_without_loads_is_clamped_free():
    """M = J = D = 0 reduces 004 eqs. (9)-(11) to the clamped-free case."""
    np.testing.assert_array_equal(clamped_mass_roots(8), clamped_free_roots(8))
    a = shape_set("clamped_mass", "bending", 6)
    b = shape_set("clamped_free", "bending", 6)
    eta = np.linspace(0, 1, 11)
    for k in range(4):
        np.testing.assert_allclose(a(eta, k), b(eta, k), atol=1e-12)


def test_torsion_roots():
    """tan b = 1 / (J b), re-derived from GJ theta'(L) = J_L omega^2 theta(L)."""
    np.testing.assert_allclose(torsion_roots(4), (2 * np.arange(1, 5) - 1) * np.pi / 2)
    b = torsion_roots(6, 0.3)
    np.testing.assert_allclose(np.tan(b) * 0.3 * b, 1.0, rtol=1e-12)
    assert np.all(np.diff(b) > 0) and b[0] < np.pi / 2


# ----- 004 eqs. 38-44 -------------------------------------------------------------------------
@pytest.mark.parametrize("beta", [0.7, 1.9, 4.3, 8.0])
@pytest.mark.parametrize("M,J,D", [(0.0, 0.0, 0.0), (0.4, 0.05, 0.1), (3.0, 0.2, -0.5)])
def test_frequency_equation_partials_vs_finite_differences(beta, M, J, D):
    """004 eqs. (41)-(44) against central differences of eq. (38)."""
    got = frequency_equation_partials(beta, M, J, D)
    h = 1e-6
    f = frequency_equation
    fd = [
        (f(beta + h, M, J, D) - f(beta - h, M, J, D)) / (2 * h),
        (f(beta, M + h, J, D) - f(beta, M - h, J, D)) / (2 * h),
        (f(beta, M, J + h, D) - f(beta, M, J - h, D)) / (2 * h),
        (f(beta, M, J, D + h) - f(beta, M, J, D - h)) / (2 * h),
    ]
    scale = max(1.0, *map(abs, fd))
    np.testing.assert_allclose(got, fd, atol=1e-7 * scale)
    # the overflow-safe scaled forms are the same times 2 exp(-beta)
    np.testing.assert_allclose(
        frequency_equation_partials(beta, M, J, D, scaled=True), np.array(got) * 2 * np.exp(-beta),
        rtol=1e-12, atol=1e-300,
    )
    assert np.isclose(f(beta, M, J, D, scaled=True), f(beta, M, J, D) * 2 * np.exp(-beta))


def test_beta_rate_follows_the_roots():
    """004 eq. (40): d beta / dt from the partials equals the change of the recomputed roots."""
    M, J, D = 0.6, 0.08, 0.1
    dM, dJ, dD = 1.0, -0.3, 0.2
    h = 1e-6
    plus = clamped_mass_roots(4, M + h * dM, J + h * dJ, D + h * dD)
    minus = clamped_mass_roots(4, M - h * dM, J - h * dJ, D - h * dD)
    rate = beta_rate(clamped_mass_roots(4, M, J, D), M, J, D, dM, dJ, dD)
    np.testing.assert_allclose(rate, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-8)


def test_prismatic_link_beta_ode():
    """004 eqs. (45)-(47): link 3 of Table 3 (0.4303 kg over 1.3 m, payload 0.0828 kg) extends
    from 0.3 m to 1.0 m; M = m_p / (mu l) varies, J = D = 0. Eq. (47) prints m_p**2 in its first
    term; re-deriving from eqs. (41), (44) gives m_p, used here. Integrating eq. (45) from the
    roots at l = 0.3 m reproduces the roots recomputed at 1.0 m."""
    from scipy.integrate import solve_ivp

    mp_, mu = 0.0828, 0.4303 / 1.3
    l_of_t = lambda t: 0.3 + 0.7 * t  # noqa: E731  (l_dot = 0.7 m/s over 1 s)

    def f1_over_f2(beta, l):
        sh, ch, sn, cs = np.sinh(beta), np.cosh(beta), np.sin(beta), np.cos(beta)
        f1 = mp_ / (mu * l**2) * beta * (sh * cs - ch * sn)
        f2 = (1 + mp_ / (mu * l)) * (sh * cs - ch * sn) - 2 * mp_ / (mu * l) * beta * sh * sn
        return f1 / f2

    def rhs(t, beta):
        l = l_of_t(t)
        return beta_rate(beta, mp_ / (mu * l), 0.0, 0.0, dM=-mp_ / (mu * l**2) * 0.7)

    beta0 = clamped_mass_roots(3, mp_ / (mu * 0.3))
    np.testing.assert_allclose(rhs(0.0, beta0), f1_over_f2(beta0, 0.3) * 0.7, rtol=1e-12)
    sol = solve_ivp(rhs, (0.0, 1.0), beta0, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(sol.y[:, -1], clamped_mass_roots(3, mp_ / (mu * 1.0)), rtol=1e-8)


# ----- shapes ----------------------------------------------------------------------------------
def test_clamped_free_modes_orthonormal():
    """Quadrature exactness: Mass = mu L I and K = diag(beta^4) EI / L^3 for many modes."""
    n, mu, ei, length = 30, 2.5, 7.0, 1.7
    ss = shape_set("clamped_free", "bending", n)
    np.testing.assert_allclose(mass_matrix(ss, mu, length), mu * length * np.eye(n), atol=1e-13 * mu * length)
    K = stiffness_matrix(ss, ei, length, "bending")
    ref = np.diag(ss.beta**4) * ei / length**3
    assert np.abs(K - ref).max() <= 1e-13 * ref.max()


def test_high_modes_stable_vs_mpmath():
    """Mode 40 (beta ~ 124) evaluated stably: compare with 004 eq. (9) at 110 digits, normalized by
    the clamped-free tip value |psi(1)| = 2 of a unit-norm mode."""
    ss = shape_set("clamped_free", "bending", 40)
    eta = np.array([0.0, 0.013, 0.3, 0.77, 0.999, 1.0])
    with mp.workdps(110):  # cosh(124) ~ 1e53 cancels: keep 50+ digits
        b = mp.findroot(lambda x: mp.cos(x) + 1 / mp.cosh(x), 79 * mp.pi / 2)
        nu = (mp.sin(b) - mp.sinh(b)) / (mp.cos(b) + mp.cosh(b))
        def psi(x, k):  # k-th eta-derivative of cos - cosh + nu (sin - sinh), at b x
            y = b * x
            trig = [mp.cos(y), -mp.sin(y), -mp.cos(y), mp.sin(y)][k]
            hyp = [mp.cosh(y), mp.sinh(y)][k % 2]
            trig_s = [mp.sin(y), mp.cos(y), -mp.sin(y), -mp.cos(y)][k]
            hyp_s = [mp.sinh(y), mp.cosh(y)][k % 2]
            return b**k * (trig - hyp + nu * (trig_s - hyp_s))

        tip = psi(mp.mpf(1), 0)
        for k in range(4):
            ref = [float(2 * psi(mp.mpf(x), k) / tip) for x in eta]
            np.testing.assert_allclose(ss(eta, k)[-1], ref, rtol=1e-12, atol=1e-12 * float(b) ** k)
    # unit-norm clamped-free modes have tip value 2 (sign chosen positive)
    np.testing.assert_allclose(ss(1.0)[:, 0], 2.0, rtol=1e-12)


@pytest.mark.parametrize("M,J,D", [(0.5, 0.0, 0.0), (0.3, 0.05, 0.1), (4.0, 0.5, -1.0)])
def test_clamped_mass_modes(M, J, D):
    """004 eq. (9) modes satisfy the clamped and tip boundary conditions, are orthogonal in the
    mass-augmented inner product, and K = diag(beta^4) times that product."""
    n = 6
    ss = shape_set("clamped_mass", "bending", n, M=M, J=J, D=D)
    b4 = ss.beta**4
    v = [ss(np.array([0.0, 1.0]), k) for k in range(4)]
    assert np.abs(v[0][:, 0]).max() < 1e-12 and np.abs(v[1][:, 0]).max() < 1e-10
    np.testing.assert_allclose(v[2][:, 1], b4 * (D * v[0][:, 1] + J * v[1][:, 1]), atol=1e-9 * b4.max())
    np.testing.assert_allclose(v[3][:, 1], -b4 * (M * v[0][:, 1] + D * v[1][:, 1]), atol=1e-9 * b4.max())
    Maug = mass_matrix(ss, 1.0, 1.0) + tip_mass_matrix(ss, 1.0, M, J, D)
    np.testing.assert_allclose(Maug - np.diag(np.diag(Maug)), 0.0, atol=1e-11)
    K = stiffness_matrix(ss, 1.0, 1.0, "bending")
    np.testing.assert_allclose(K, np.diag(b4 * np.diag(Maug)), atol=1e-11 * b4.max())
    np.testing.assert_allclose(np.diag(mass_matrix(ss, 1.0, 1.0)), 1.0, rtol=1e-13)


@pytest.mark.parametrize("M,J,D", [(0.5, 0.0, 0.0), (0.25, 0.02, 0.05), (2.0, 0.3, 0.4)])
def test_assumed_modes_with_tip_mass_converge(M, J, D):
    """With a tip body, polynomial shapes and finite elements (plus the tip's mass terms)
    converge to the exact clamped-mass frequencies from above."""
    exact = exact_frequencies(3, EI, MU, L, M, J, D)
    poly = beam_frequencies("polynomial", 9, EI, MU, L, M, J, D)[:3]
    fem = beam_frequencies("finite_elements", 30, EI, MU, L, M, J, D)[:3]
    modes = beam_frequencies("clamped_mass", 3, EI, MU, L, M, J, D)
    for got in (poly, fem):
        assert np.all(got >= exact * (1 - 1e-8))  # 9 monomials: mass matrix cond ~1e12
        np.testing.assert_allclose(got, exact, rtol=1e-5)
    np.testing.assert_allclose(modes, exact, rtol=1e-10)
    # a tip body lowers every frequency
    assert np.all(exact < exact_frequencies(3, EI, MU, L))


def test_hermite_element_matrices():
    """One Hermite element (004 eq. 14) reproduces the textbook element matrices on its free
    node (w, dw/dx): K = EI/l^3 [[12, -6l], [-6l, 4l^2]], M = mu l/420 [[156, -22l], [-22l, 4l^2]]."""
    ei, mu, length = 3.0, 1.3, 0.7
    ss = shape_set("finite_elements", "bending", 0, elements=1)
    np.testing.assert_array_equal(ss.scale, [0, 1])
    K = stiffness_matrix(ss, ei, length, "bending")
    Mm = mass_matrix(ss, mu, length)
    l = length
    np.testing.assert_allclose(K, ei / l**3 * np.array([[12, -6 * l], [-6 * l, 4 * l * l]]), rtol=1e-13)
    np.testing.assert_allclose(Mm, mu * l / 420 * np.array([[156, -22 * l], [-22 * l, 4 * l * l]]), rtol=1e-13)


@settings(max_examples=25, deadline=None)
@given(elements=st.integers(1, 6), length=st.floats(0.1, 5.0))
def test_hermite_nodal_interpolation(elements, length):
    """Deflection dof j is 1 at its node; a slope dof is a physical slope: d phi/dx = 1 there."""
    ss = shape_set("finite_elements", "bending", 0, elements=elements)
    nodes = np.arange(1, elements + 1) / elements
    s = ss.scale
    w = ss(nodes) * (length ** s)[:, None]
    dw = ss(nodes, 1) * (length ** (s - 1.0))[:, None]
    np.testing.assert_allclose(w[0::2], np.eye(elements), atol=1e-12 * max(1.0, length))
    np.testing.assert_allclose(w[1::2], 0.0, atol=1e-12 * max(1.0, length))
    np.testing.assert_allclose(dw[1::2], np.eye(elements), atol=1e-12)
    np.testing.assert_allclose(dw[0::2], 0.0, atol=1e-12 / min(1.0, length))


@pytest.mark.parametrize(
    "kind,direction,kw",
    [
        ("clamped_free", "bending", {"n": 5}),
        ("clamped_mass", "bending", {"n": 4, "M": 0.3, "J": 0.05, "D": 0.1}),
        ("polynomial", "bending", {"n": 5}),
        ("finite_elements", "bending", {"n": 0, "elements": 3}),
        ("clamped_free", "torsion", {"n": 4}),
        ("clamped_mass", "torsion", {"n": 4, "J": 0.4}),
        ("polynomial", "torsion", {"n": 4}),
        ("finite_elements", "torsion", {"n": 0, "elements": 4}),
    ],
)
def test_derivatives_and_quadrature(kind, direction, kw):
    """deriv=k+1 matches a central difference of deriv=k (inside elements); shapes vanish at
    the clamp; the set's quadrature integrates products exactly (vs a much finer rule)."""
    ss = shape_set(kind, direction, **kw)
    eta = np.array([0.07, 0.31, 0.45, 0.62, 0.91])  # no element nodes for 3 or 4 elements
    h = 1e-6
    top = 3 if direction == "bending" else 1
    for k in range(top):
        fd = (ss(eta + h, k) - ss(eta - h, k)) / (2 * h)
        np.testing.assert_allclose(ss(eta, k + 1), fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    assert np.abs(ss(0.0)).max() < 1e-12
    x, w = np.polynomial.legendre.leggauss(50)
    panels = 24  # multiple of 3 and 4: element boundaries are panel edges
    fine = (np.arange(panels)[:, None] / panels + 0.5 * (x + 1) / panels).ravel()
    fw = np.tile(0.5 * w / panels, panels)
    q, qw = ss.quadrature()
    assert abs(qw.sum() - 1.0) < 1e-14 and q.min() >= 0 and q.max() <= 1
    for k in range(top + 1):
        a = (ss(q, k) * qw) @ ss(q, k).T
        b = (ss(fine, k) * fw) @ ss(fine, k).T
        assert np.abs(a - b).max() <= 1e-13 * max(1.0, np.abs(b).max())


def test_torsion_frequencies():
    """Torsion: sine modes are exact (omega = (2k-1) pi/2 sqrt(GJ/(j L^2))); with a tip polar
    inertia J_L the roots of tan b = 1/(J b) are the limit of linear finite elements."""
    gj, j, length = 40.0, 0.02, 0.8
    ss = shape_set("clamped_free", "torsion", 4)
    K = stiffness_matrix(ss, gj, length, "torsion")
    Mm = mass_matrix(ss, j, length)
    np.testing.assert_allclose(Mm, j * length * np.eye(4), atol=1e-15)
    w = np.sqrt(np.diag(K) / np.diag(Mm))
    np.testing.assert_allclose(w, torsion_roots(4) * np.sqrt(gj / (j * length**2)), rtol=1e-12)
    from scipy.linalg import eigh

    Jr = 0.5  # J_L / (j L)
    exact = torsion_roots(3, Jr) * np.sqrt(gj / (j * length**2))
    for kind, n, tol in (("finite_elements", 200, 1e-4), ("polynomial", 10, 1e-7), ("clamped_mass", 3, 1e-12)):
        s = shape_set(kind, "torsion", n, elements=n, J=Jr)
        tipv = s(1.0)[:, 0] * length ** s.scale
        Mm = mass_matrix(s, j, length) + Jr * j * length * np.outer(tipv, tipv)
        got = np.sqrt(eigh(stiffness_matrix(s, gj, length, "torsion"), Mm, eigvals_only=True))[:3]
        assert np.all(got >= exact * (1 - 1e-10))
        np.testing.assert_allclose(got, exact, rtol=tol)


def test_polynomial_shapes():
    """001 eq. (44): bending shapes x^(i+1), i = 1..n; torsion eta^k."""
    eta = np.array([0.5, 1.0])
    np.testing.assert_allclose(shape_set("polynomial", "bending", 3)(eta), [eta**2, eta**3, eta**4])
    np.testing.assert_allclose(shape_set("polynomial", "torsion", 2)(eta, 1), [np.ones(2), 2 * eta])


def test_bad_arguments():
    with pytest.raises(ValueError):
        shape_set("splines", "bending", 2)
    with pytest.raises(ValueError):
        shape_set("clamped_free", "axial", 2)
    with pytest.raises(ValueError):
        shape_set("finite_elements", "bending", 0, elements=0)
    with pytest.raises(ValueError):
        clamped_mass_roots(2, M=0.1, J=0.01, D=0.5)  # M J < D^2: not a rigid body
    with pytest.raises(ValueError):
        shape_set("clamped_free", "bending", 2)(np.array([0.5]), deriv=4)


def test_orthogonal_mode_integrals_are_exact_zeros():
    # clamped-free modes are orthogonal in mass and stiffness: their cross integrals are 0 in
    # exact arithmetic; quadrature leaves ~1e-16, which `integral` makes an exact 0 (so that
    # the symbolic equations carry no 1e-16 coefficients) while the diagonal stays exact.
    from flexman.discretize import integral

    ss = shape_set("clamped_free", "bending", 3)
    M, K = mass_matrix(ss, 1.0, 1.0), stiffness_matrix(ss, 1.0, 1.0)
    off = ~np.eye(3, dtype=bool)
    assert np.all(M[off] == 0.0) and np.all(K[off] == 0.0)
    assert np.allclose(np.diag(M), 1.0, rtol=1e-12)  # int psi^2 = 1 (normalized)
    # a real small integral is kept: int eta^40 on [0, 1] = 1/41 by Gauss points
    eta, w = np.polynomial.legendre.leggauss(30)
    eta, w = 0.5 * (eta + 1), 0.5 * w
    assert integral("q,q->", eta**40, w) == pytest.approx(1 / 41, rel=1e-12)
    assert integral("q,q->", np.sin(2 * np.pi * eta) * 1e-3, w) == 0.0  # odd about 1/2: exactly 0
