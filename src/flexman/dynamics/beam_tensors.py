"""The constant tensors of flexible beams, shared by the beam bodies of :mod:`.beams`.

A beam is described by where its mass points sit in its undeformed link frame: the affine point
map ``h(s) = h0(s) + sum_k p_k Phi_k(s)``, whose second moments are the constant tensors
``C0 = int h0 h0^T``, ``C_k = int h0 Phi_k^T``, ``C_kl = int Phi_k Phi_l^T`` (Book's C_i, C_ij,
C_ikj; thesis eqs. 2.29-2.31, without the factor 1/2), and its tip by the deflection transform
``D(p) = I + sum_k p_k D_k`` (004 eq. 2 / thesis eq. 2.6, placed at the tip).

Torsion is carried by the cross-sections: a section of polar mass moment j per length rotating
by a small angle moves its points by ``theta * (0, -z, y)``, which adds ``j/2`` terms to the
same tensors, so no special case remains in the recursion.

Here: the shape sets of a beam, the quadrature rule, exact zeros, the rod's second moments, the
point-map and tip-deflection tensors, stiffness and mass matrices, modal damping and the
second-order (shortening) tensors.
"""
from __future__ import annotations

import numpy as np

from ..discretize import mass_matrix as shapes_mass
from ..discretize import shape_set, stiffness_matrix
from ..discretize.shapes import integral
from . import dh
from .ops import skew
from .second_order import rule

# beam axis and transverse directions (index into x, y, z of the link frame)
AXES = {"revolute": (0, 1, 2), "prismatic": (2, 0, 1)}


def shape_sets(beam, loads) -> dict:
    """direction ('y', 'z', 'torsion') -> shape set of the Beam data ``beam``, in coordinate
    order; ``loads``: direction -> nondimensional tip loads (M, J, D) for clamped-mass shapes."""
    out = {}
    for direction in ("y", "z", "torsion"):
        if not beam.modes[direction]:
            continue
        kind = "torsion" if direction == "torsion" else "bending"
        m_, j_, d_ = loads.get(direction, (0.0, 0.0, 0.0))
        out[direction] = shape_set(
            beam.shapes, kind, beam.modes[direction], elements=beam.elements, M=m_, J=j_, D=d_
        )
    return out


def directions(sets) -> list:
    """The direction of every coordinate of the shape sets, in order."""
    return [direction for direction, ss in sets.items() for _ in range(ss.n)]


def common_rule(sets):
    """A quadrature on [0, 1] exact for products of any two shapes of the given sets: the
    finest rule offered (the sets of one beam share kind and element count)."""
    rules = [ss.quadrature() for ss in sets]
    eta, w = max(rules, key=lambda rule: len(rule[0]))
    return np.asarray(eta, float), np.asarray(w, float)


def exact_zeros(T, rel=1e-13):
    """Quadrature leaves ~1e-17 where an integral vanishes (orthogonal modes, other planes):
    make those exact zeros so traced equations carry no spurious terms."""
    T = np.array(T, dtype=float)
    T[np.abs(T) < rel * max(np.abs(T).max(), 1e-300)] = 0.0
    return T


def rod_second_moments(link, convention):
    """``int h0 h0^T dm`` of the undeformed beam of a link (a uniform rod whose cross-sections
    carry the polar mass moment j per length, split on the two transverse axes)."""
    beam = link.beam
    L, mu, jp = beam.length, beam.mass_per_length, beam.polar_inertia_per_length
    ax, t1, t2 = AXES[link.joint]
    # standard DH and prismatic: the beam ends at the frame origin; modified DH: it starts there
    convention = dh.link_convention(link, convention)
    start = -L if (convention == "standard" or link.joint == "prismatic") else 0.0
    eta, w = np.polynomial.legendre.leggauss(2)  # exact for the quadratic integrand
    s = start + 0.5 * L * (eta + 1.0)
    h0 = np.zeros((2, 4))
    h0[:, ax] = s
    h0[:, 3] = 1.0
    C0 = mu * 0.5 * L * np.einsum("q,qa,qb->ab", w, h0, h0)
    C0[t1, t1] += 0.5 * jp * L
    C0[t2, t2] += 0.5 * jp * L
    return C0


def revolute_ends(link, convention):
    """(root, tip) of a revolute link's beam in its undeformed frame (standard DH: the beam
    ends at the frame origin; modified DH: it starts there)."""
    L = link.beam.length
    ax = AXES[link.joint][0]
    root = np.zeros(3)
    root[ax] = -L if dh.link_convention(link, convention) == "standard" else 0.0
    tip = root.copy()
    tip[ax] += L
    return root, tip


def scaled_shapes(sets, L, eta, deriv=0):
    """The physical shapes (n, len(eta)) (d/ds)^deriv phi_k(s) at s = eta L."""
    return np.concatenate([ss(np.asarray(eta, float), deriv=deriv) * (L ** (np.asarray(ss.scale, float) - deriv))[:, None]
                           for ss in sets.values()])


def point_map_tensors(sets, beam, root, axes):
    """(C_k (n, 4, 4), C_kl (n, n, 4, 4)) of a revolute beam by Gauss quadrature: the undeformed
    points h0(s) = root + s e_ax against the modal displacements Phi_k(s) = phi_k(s) e_dir
    (torsion: the sections' polar moment j/2 on the transverse axes)."""
    L, mu, jp = beam.length, beam.mass_per_length, beam.polar_inertia_per_length
    ax, t1, t2 = axes
    dirs = directions(sets)
    eta, w = common_rule(list(sets.values()))
    s, wt = eta * L, w * L
    phi = scaled_shapes(sets, L, eta)  # (n, nquad) physical shapes along s
    h0 = np.zeros((len(s), 4))
    h0[:, :3] = root
    h0[:, ax] += s
    h0[:, 3] = 1.0
    vec = np.zeros((len(dirs), 4))
    for k, direction in enumerate(dirs):
        if direction != "torsion":
            vec[k, t1 if direction == "y" else t2] = 1.0
    Ck = mu * integral("q,qa,kq,kb->kab", wt, h0, phi, vec)
    Ckl = mu * integral("q,kq,lq,ka,lb->klab", wt, phi, phi, vec, vec)
    tors = np.flatnonzero([d == "torsion" for d in dirs])
    int_phi = integral("kq,q->k", phi, wt)
    int_phiphi = integral("kq,q,lq->kl", phi, wt, phi)
    for k in tors:
        Ck[k, t1, t2] += 0.5 * jp * int_phi[k]
        Ck[k, t2, t1] -= 0.5 * jp * int_phi[k]
        for l in tors:
            Ckl[k, l, t1, t1] += 0.5 * jp * int_phiphi[k, l]
            Ckl[k, l, t2, t2] += 0.5 * jp * int_phiphi[k, l]
    return Ck, Ckl


def bend_rotation(ax, t, slope):
    """Small rotation of a section when the beam (along axis ax) bends toward t with a given
    slope (a number or an array (..., 1)): the tangent e_ax + slope e_t is e_ax rotated by slope
    about e_ax x e_t."""
    e_ax, e_t = np.eye(3)[ax], np.eye(3)[t]
    return slope * np.cross(e_ax, e_t)


def section_motion(sets, L, axes, eta):
    """(disp, rot), each (n, len(eta), 3): per unit modal coordinate, the displacement of the
    centre line and the small rotation of the cross-section at stations ``eta`` (0 root, 1 tip)
    in the link frame. Bending along t moves the section along t and turns it by the slope
    about e_ax x t; torsion turns it about e_ax. A point fixed to the section at offset r from
    its centre moves by disp + rot x r (first order)."""
    ax, t1, t2 = axes
    eta = np.atleast_1d(np.asarray(eta, float))
    value, slope = scaled_shapes(sets, L, eta), scaled_shapes(sets, L, eta, deriv=1)
    dirs = directions(sets)
    disp, rot = np.zeros((len(dirs), len(eta), 3)), np.zeros((len(dirs), len(eta), 3))
    for k, direction in enumerate(dirs):
        if direction == "torsion":
            rot[k, :, ax] = value[k]
        else:  # deflection along t, the slope rotates the section about e_ax x t
            t = t1 if direction == "y" else t2
            disp[k, :, t] = value[k]
            rot[k] = bend_rotation(ax, t, slope[k][:, None])
    return disp, rot


def tip_deflection_tensors(sets, L, tip, axes):
    """D_k (n, 4, 4): the tip deflection transform of 004 eq. (2), E = I + [[skew(rot), disp],
    [0, 0]] per unit coordinate (:func:`section_motion` at the tip), moved to the tip point
    ``tip`` of the link frame."""
    disp, rot = section_motion(sets, L, axes, [1.0])
    to_tip, from_tip = np.eye(4), np.eye(4)
    to_tip[:3, 3], from_tip[:3, 3] = tip, -tip
    Dk = np.zeros((len(disp), 4, 4))
    for k in range(len(disp)):
        Ek = np.zeros((4, 4))
        Ek[:3, :3] = skew(rot[k, 0])
        Ek[:3, 3] = disp[k, 0]
        Dk[k] = to_tip @ Ek @ from_tip
    return Dk


def beam_matrices(sets, L, EI, mu, GJ=0.0, polar=0.0):
    """(K, Mb): stiffness and the beam's own mass matrix at length L, block-diagonal by
    direction (bending: EI = (EI_y, EI_z) and mass per length mu; torsion: GJ and the polar
    inertia per length)."""
    n = sum(ss.n for ss in sets.values())
    K, Mb = np.zeros((n, n)), np.zeros((n, n))
    pos = 0
    for direction, ss in sets.items():
        sl = slice(pos, pos + ss.n)
        if direction == "torsion":
            K[sl, sl] = stiffness_matrix(ss, GJ, L, "torsion")
            Mb[sl, sl] = shapes_mass(ss, polar, L)
        else:
            K[sl, sl] = stiffness_matrix(ss, EI[0] if direction == "y" else EI[1], L, "bending")
            Mb[sl, sl] = shapes_mass(ss, mu, L)
        pos += ss.n
    return K, Mb


def modal_damping(K, Mb, ratio):
    """Damping matrix with the same ratio on every mode of the clamped beam (K, Mb)."""
    n = K.shape[0]
    if ratio == 0.0 or n == 0:
        return np.zeros((n, n))
    from scipy.linalg import eigh

    w2, vec = eigh(K, Mb)  # vec^T Mb vec = I
    omega = np.sqrt(np.clip(w2, 0.0, None))
    mv = Mb @ vec
    return mv @ np.diag(2.0 * ratio * omega) @ mv.T


def shortening_matrix(sets, L):
    """S_kl = int phi_k' phi_l' dx over the beam (same bending direction only): the tip moves
    back along the axis by 1/2 q^T S q (foreshortening, second-order kinematics, 001)."""
    blocks = []
    for direction, ss in sets.items():
        if direction == "torsion":
            blocks.append(np.zeros((ss.n, ss.n)))
            continue
        eta, w = ss.quadrature()
        d = ss(np.asarray(eta), deriv=1)
        sc = np.asarray(ss.scale, float)
        blocks.append(integral("kq,q,lq->kl", d, w, d) * L ** (sc[:, None] + sc[None, :] - 1))
    size = sum(b.shape[0] for b in blocks)
    S, pos = np.zeros((size, size)), 0
    for b in blocks:  # block-diagonal (NumPy here: importing scipy.linalg costs more than a short run)
        S[pos:pos + len(b), pos:pos + len(b)] = b
        pos += len(b)
    return S


def shortening_moment_tensor(kinematics, root, ax, mu):
    """F_kl = int h0 r_kl^T dm (n, n, 4, 4): the undeformed points h0 = (root + x e_ax, 1) against the
    second-order displacements r_kl(x) of :class:`.second_order.BeamKinematics` (geometric stiffening).

    With r_kl(x) = int_0^x Q_kl e + 1/2 (int_0^x (x - xi) s_kl) x e, exchanging the order of
    integration turns the moments int w(x) r_kl(x) dx (w = 1 and w = x) into single integrals over
    xi with the weights int_xi^L w and int_xi^L w (x - xi): one pass over the quadrature nodes."""
    L, n = kinematics.L, kinematics.n
    out = np.zeros((n, n, 4, 4))
    if n == 0:
        return out
    eta, w = rule(kinematics.sets, 0.0, 1.0)
    xi, wx = eta * L, w * L
    th, dth, _ = kinematics.fields(eta)
    Qe = kinematics.rotation_products_on_axis(th)  # (n, n, q, 3)
    sk = kinematics.slope_products(th, dth)  # (n, n, q, 3)
    moments = []
    for W, V in (((L - xi), (L - xi) ** 2 / 2),  # w = 1
                 ((L**2 - xi**2) / 2, L**3 / 3 - xi * L**2 / 2 + xi**3 / 6)):  # w = x
        r = np.einsum("klqa,q->kla", Qe, wx * W) + 0.5 * np.cross(np.einsum("klqa,q->kla", sk, wx * V), kinematics.e)
        moments.append(mu * r)
    I1, Ix = moments  # int r_kl dm, int x r_kl dm
    for a in range(3):
        out[:, :, a, :3] = root[a] * I1 + (Ix if a == ax else 0.0)
    out[:, :, 3, :3] = I1
    return out


def sliding_shortening_tensors(kinematics, ax, mu):
    """(FA_kl, FB_kl) (n, n, 4, 4) of a sliding beam: int_0^1 (eta - 1) e_ax r_kl(eta)^T and
    int_0^1 e_4 r_kl(eta)^T, times rhoA, over the outside part of the unit beam (``kinematics``:
    the unit beam's :class:`.second_order.BeamKinematics`; geometric stiffening)."""
    n = kinematics.n
    eta, w = rule(kinematics.sets, 0.0, 1.0)
    FA, FB = np.zeros((n, n, 4, 4)), np.zeros((n, n, 4, 4))
    for x, wx in zip(eta, w):
        _, r = kinematics.section(x)
        FA[..., ax, :3] += (mu * wx * (x - 1.0)) * r
        FB[..., 3, :3] += (mu * wx) * r
    return exact_zeros(FA), exact_zeros(FB)
