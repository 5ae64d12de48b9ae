"""Numeric constants of a robot, computed once: DH splits, body second moments, beam tensors.

Every body is described by where its mass points sit in a frame of the chain:

* a rigid body (link body, hub, payload) by its 4x4 second-moment matrix ``J = int h h^T dm``;
* a flexible beam by an affine point map ``h(s) = h0(s) + sum_k p_k Phi_k(s)`` in the
  undeformed link frame, whose second moments are the constant tensors
  ``C0 = int h0 h0^T``, ``C_k = int h0 Phi_k^T``, ``C_kl = int Phi_k Phi_l^T``
  (Book's C_i, C_ij, C_ikj; thesis eqs. 2.29-2.31, without the factor 1/2), and its tip by the
  deflection transform ``D(p) = I + sum_k p_k D_k`` (004 eq. 2 / thesis eq. 2.6, placed at the tip).

Torsion is carried by the cross-sections: a section of polar mass moment j per length rotating
by a small angle moves its points by ``theta * (0, -z, y)``, which adds ``j/2`` terms to the
same tensors, so no special case remains in the recursion.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dh
from ..discretize.shapes import integral
from .beams import RevoluteBeam, SlidingBeam, common_rule
from .second_order import BeamKinematics

# beam axis and transverse directions (index into x, y, z of the link frame)
AXES = {"revolute": (0, 1, 2), "prismatic": (2, 0, 1)}


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


@dataclass
class LinkModel:
    revolute: bool
    P: np.ndarray
    N: np.ndarray
    offset: float
    gen: np.ndarray
    body_tip: np.ndarray  # (4,4) second moments of bodies on the distal (deflected) frame
    body_base: np.ndarray  # (4,4) second moments of bodies on the undeformed frame (hub)
    beam: object  # RevoluteBeam | SlidingBeam | None
    flex: slice
    armature: float
    viscous: float
    coulomb: float


@dataclass
class Model:
    links: list
    nq: int
    n_joints: int
    gravity: np.ndarray


def _shape_sets(beam, loads):
    from ..discretize import shape_set

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


def _beam_model(link, convention, loads) -> RevoluteBeam:
    """Assemble the constant tensors of a revolute flexible link by Gauss quadrature."""
    beam = link.beam
    L, mu, jp = beam.length, beam.mass_per_length, beam.polar_inertia_per_length
    ax, t1, t2 = AXES[link.joint]
    start = -L if dh.link_convention(link, convention) == "standard" else 0.0
    root = np.zeros(3)
    root[ax] = start
    tip = root.copy()
    tip[ax] += L
    sets = _shape_sets(beam, loads)

    dirs = [direction for direction, ss in sets.items() for _ in range(ss.n)]
    n = len(dirs)
    eta, w = common_rule(list(sets.values()))
    s = eta * L
    wt = w * L
    vals = {k: ss(eta) * (L ** np.asarray(ss.scale, float))[:, None] for k, ss in sets.items()}
    tipv = {k: ss(np.array([1.0]))[:, 0] * L ** np.asarray(ss.scale, float) for k, ss in sets.items()}
    tipd = {
        k: ss(np.array([1.0]), deriv=1)[:, 0] * L ** (np.asarray(ss.scale, float) - 1)
        for k, ss in sets.items()
    }
    phi = np.concatenate([vals[k] for k in sets])  # (n, nquad) physical shapes along s

    # point map: h0(s) = root + s e_ax (homogeneous); Phi_k(s) = phi_k(s) e_dir
    h0 = np.zeros((len(s), 4))
    h0[:, :3] = root
    h0[:, ax] += s
    h0[:, 3] = 1.0
    vec = np.zeros((n, 4))
    for k, direction in enumerate(dirs):
        if direction == "y":
            vec[k, t1] = 1.0
        elif direction == "z":
            vec[k, t2] = 1.0
    C0 = rod_second_moments(link, convention)
    Ck = mu * integral("q,qa,kq,kb->kab", wt, h0, phi, vec)
    Ckl = mu * integral("q,kq,lq,ka,lb->klab", wt, phi, phi, vec, vec)
    tors = np.array([d == "torsion" for d in dirs])
    int_phi = integral("kq,q->k", phi, wt)
    int_phiphi = integral("kq,q,lq->kl", phi, wt, phi)
    for k in np.flatnonzero(tors):
        Ck[k, t1, t2] += 0.5 * jp * int_phi[k]
        Ck[k, t2, t1] -= 0.5 * jp * int_phi[k]
        for l in np.flatnonzero(tors):
            Ckl[k, l, t1, t1] += 0.5 * jp * int_phiphi[k, l]
            Ckl[k, l, t2, t2] += 0.5 * jp * int_phiphi[k, l]

    # tip deflection transform, 004 eq. (2): E = I + [[skew(rot), disp], [0, 0]], then moved to the tip
    tip_disp = np.concatenate([tipv[k] for k in sets])
    tip_slope = np.concatenate([tipd[k] for k in sets])
    Dk = np.zeros((n, 4, 4))
    to_tip, from_tip = np.eye(4), np.eye(4)
    to_tip[:3, 3] = tip
    from_tip[:3, 3] = -tip
    for k, direction in enumerate(dirs):
        rot = np.zeros(3)
        disp = np.zeros(3)
        if direction == "y":  # deflection along t1, slope rotates about t2
            disp[t1] = tip_disp[k]
            rot = _bend_rotation(ax, t1, tip_slope[k])
        elif direction == "z":
            disp[t2] = tip_disp[k]
            rot = _bend_rotation(ax, t2, tip_slope[k])
        else:
            rot[ax] = tip_disp[k]
        Ek = np.zeros((4, 4))
        Ek[:3, :3] = skew(rot)
        Ek[:3, 3] = disp
        Dk[k] = to_tip @ Ek @ from_tip

    # stiffness and the beam's own mass matrix, block-diagonal by direction
    from ..discretize import mass_matrix as shapes_mass, stiffness_matrix

    K = np.zeros((n, n))
    Mb = np.zeros((n, n))
    pos = 0
    for direction, ss in sets.items():
        sl = slice(pos, pos + ss.n)
        if direction == "torsion":
            K[sl, sl] = stiffness_matrix(ss, beam.GJ, L, "torsion")
            Mb[sl, sl] = shapes_mass(ss, jp, L)
        else:
            ei = beam.EI[0] if direction == "y" else beam.EI[1]
            K[sl, sl] = stiffness_matrix(ss, ei, L, "bending")
            Mb[sl, sl] = shapes_mass(ss, mu, L)
        pos += ss.n
    Cd = modal_damping(K, Mb, beam.damping)
    Ck, Ckl, Dk = (_exact_zeros(t) for t in (Ck, Ckl, Dk))
    beam_model = RevoluteBeam(C0, Ck, Ckl, Dk, K, Cd, Mb, dirs, sets, L)
    beam_model.S = shortening_matrix(sets, L)
    beam_model.axis = ax
    beam_model.kinematics = BeamKinematics(sets, L, (ax, t1, t2))  # second order, on demand
    beam_model.tip_point, beam_model.root, beam_model.mu = tip, root, mu
    if beam.stiffening and n:
        beam_model.stiffening = True
        beam_model.Fkl = _exact_zeros(shortening_moment_tensor(beam_model.kinematics, root, ax, mu))
        beam_model.Dkl = _exact_zeros(beam_model.Dkl)
    beam_model.transverse = {"y": t1, "z": t2}  # the bending axes (drawing the centre line)
    return beam_model


def _exact_zeros(T, rel=1e-13):
    """Quadrature leaves ~1e-17 where an integral vanishes (orthogonal modes, other planes):
    make those exact zeros so traced equations carry no spurious terms."""
    T = np.array(T, dtype=float)
    T[np.abs(T) < rel * max(np.abs(T).max(), 1e-300)] = 0.0
    return T


def shortening_moment_tensor(kinematics, root, ax, mu):
    """F_kl = int h0 r_kl^T dm (n, n, 4, 4): the undeformed points h0 = (root + x e_ax, 1) against the
    second-order displacements r_kl(x) of :class:`.second_order.BeamKinematics` (geometric stiffening).

    With r_kl(x) = int_0^x Q_kl e + 1/2 (int_0^x (x - xi) s_kl) x e, exchanging the order of
    integration turns the moments int w(x) r_kl(x) dx (w = 1 and w = x) into single integrals over
    xi with the weights int_xi^L w and int_xi^L w (x - xi): one pass over the quadrature nodes."""
    from .second_order import rule

    L, n = kinematics.L, kinematics.n
    out = np.zeros((n, n, 4, 4))
    if n == 0:
        return out
    eta, w = rule(kinematics.sets, 0.0, 1.0)
    xi, wx = eta * L, w * L
    th, dth, _ = kinematics.fields(eta)
    Qe = kinematics._Q(th) @ kinematics.e  # (n, n, q, 3)
    sk = kinematics._s(th, dth)  # (n, n, q, 3)
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
    from scipy.linalg import block_diag

    return block_diag(*blocks)


def rod_second_moments(link, convention):
    """``int h0 h0^T dm`` of the undeformed beam of a revolute link (a uniform rod whose
    cross-sections carry the polar mass moment j per length, split on the two transverse axes)."""
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


def _bend_rotation(ax, t, slope):
    """Small rotation of the tip section when the beam (along axis ax) bends toward t with a
    given slope: the tangent e_ax + slope e_t is e_ax rotated by slope about e_ax x e_t."""
    e_ax, e_t = np.eye(3)[ax], np.eye(3)[t]
    return slope * np.cross(e_ax, e_t)


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


def second_moments_at_rest(robot, i):
    """Second moments (4x4) of everything beyond the tip of link i, in link i's distal
    frame, with every joint at zero and no deflection."""
    total = np.zeros((4, 4))
    T = np.eye(4)  # link i's distal frame -> current frame
    for j in range(i, len(robot.links)):
        link = robot.links[j]
        if j > i:
            P, N, offset = dh.split(link, robot.dh)
            J = dh.joint_motion(np.array(offset), link.joint == "revolute")
            T = T @ P @ J @ N
            if link.hub is not None:
                total += T @ link.hub.pseudo_inertia() @ T.T
            if link.beam is not None:
                total += T @ rod_second_moments(link, robot.dh) @ T.T
        total += T @ link.body.pseudo_inertia() @ T.T
    if robot.payload is not None:
        total += T @ robot.payload.pseudo_inertia() @ T.T
    return total


def _distal_loads(robot, i):
    """Nondimensional tip loads (M, J, D) of 004 eq. (11) for link i's beam at q = 0:
    everything the link carries beyond its tip (its own body, distal links, payload)."""
    link = robot.links[i]
    beam = link.beam
    mu = beam.mass_per_length
    L = link.d if link.joint == "prismatic" else beam.length  # length outside the hub at q = 0
    ax, t1, t2 = AXES[robot.links[i].joint]
    J4 = second_moments_at_rest(robot, i)  # in link i's distal DH frame
    if dh.link_convention(link, robot.dh) == "modified" and link.joint == "revolute":  # that frame sits at the joint: move to the tip
        shift = np.eye(4)
        shift[ax, 3] = -beam.length
        J4 = shift @ J4 @ shift.T
    m_l = J4[3, 3]
    d_l = J4[ax, 3]
    out = {}
    for direction, t in (("y", t1), ("z", t2)):
        j_l = J4[ax, ax] + J4[t, t]  # moment of inertia about the bending axis through the tip
        m_n, j_n, d_n = m_l / (mu * L), j_l / (mu * L**3), d_l / (mu * L**2)
        tiny = 1e-12 * max(1.0, m_n, j_n)  # round-off of the frame shift, not a load
        m_n, j_n = max(m_n, 0.0), max(j_n, 0.0)
        d_n = 0.0 if abs(d_n) < tiny else d_n
        out[direction] = (m_n, j_n, d_n)
    other = [k for k in (0, 1, 2) if k != ax]
    out["torsion"] = (0.0, (J4[other[0], other[0]] + J4[other[1], other[1]]) / (beam.polar_inertia_per_length * L) if beam.polar_inertia_per_length else 0.0, 0.0)
    return out


def sliding_beam(beam, sets, offset) -> SlidingBeam:
    """The translating-beam model of the Beam data ``beam`` with the given shape sets
    (direction -> set) and DH offset (the outside length at q = 0)."""
    dirs = [k for k, ss in sets.items() for _ in range(ss.n)]
    model = SlidingBeam(sets, dirs, AXES["prismatic"], beam.mass_per_length, beam.length, beam.EI, beam.damping,
                        offset)
    if beam.stiffening and model.n:
        model.stiffening = True
        model.FA, model.FB = model.shortening_tensors()
    return model


def build(robot) -> Model:
    """Constants for the recursive algorithms."""
    links = []
    for i, link in enumerate(robot.links):
        P, N, offset = dh.split(link, robot.dh)
        gen = dh.GEN_REVOLUTE if link.joint == "revolute" else dh.GEN_PRISMATIC
        body_tip = link.body.pseudo_inertia()
        body_base = np.zeros((4, 4))
        if link.hub is not None:
            if link.is_flexible:
                body_base = link.hub.pseudo_inertia()
            else:
                body_tip = body_tip + link.hub.pseudo_inertia()
        if i == len(robot.links) - 1 and robot.payload is not None:
            body_tip = body_tip + robot.payload.pseudo_inertia()
        beam = None
        if link.beam is not None:
            loads = _distal_loads(robot, i) if link.beam.shapes == "clamped_mass" else {}
            if link.is_flexible and link.joint == "prismatic":
                beam = sliding_beam(link.beam, _shape_sets(link.beam, loads), offset)
            elif link.is_flexible:
                beam = _beam_model(link, robot.dh, loads)
            else:  # a beam with no modes is a rigid rod on the undeformed frame
                body_base = body_base + rod_second_moments(link, robot.dh)
        links.append(
            LinkModel(
                revolute=link.joint == "revolute",
                P=P,
                N=N,
                offset=offset,
                gen=gen,
                body_tip=body_tip,
                body_base=body_base,
                beam=beam,
                flex=robot.link_flex_slice(i),
                armature=link.armature,
                viscous=link.viscous,
                coulomb=link.coulomb,
            )
        )
    return Model(links=links, nq=robot.nq, n_joints=robot.n_joints, gravity=robot.gravity)
