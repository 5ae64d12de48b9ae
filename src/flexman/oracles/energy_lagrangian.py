"""Energy-based Lagrangian dynamics (004 Appendix, Algorithms 1-3), used as an oracle.

Independent of the recursive algorithms (and of their sums over a tree's children): every beam is a cloud of Gauss points (each
cross-section four points carrying its polar mass moment), every rigid body a second-moment
matrix on its frame; positions come from an explicit product of transforms along each link's
path from the base. Then

* M(q) = sum_points m J^T J + sum_rigid tr(dW/dq_k J dW/dq_l^T)   (Algorithm 1),
* h(q, qd) from Christoffel symbols of M                          (Algorithm 2),
* c(q) = dV/dq with V gravity + strain energy                      (Algorithm 3).

Geometric stiffening (beams with ``stiffening``): each beam point also moves by its second-order
displacement r2 (the shortening of the bent beam), and the tip transform is quadratic. The
kinetic energy is the consistent second-order one, T = 1/2 |v1|^2 + v0 . v2 per point (v0 the
point's velocity with this beam undeformed, v1 to first order, v2 of r2), so M gains
J0^T J2 + J2^T J0; gravity acts on r1 + r2.

Jacobians use complex-step differentiation (exact to rounding); the Christoffel symbols use
Richardson-extrapolated central differences of M. Slow, small arms only: it is a check.

Its constants come from the model data, not from the recursive algorithms' model
(``dynamics.structure.build``, ``dh.split``): its own joint transforms (DH products and placed
joints by Rodrigues' formula), its own beam integrals (stiffness EI int phi'' phi'', torsion
GJ int phi' phi', modal damping from them), rigid rods as point clouds like the beams. Shared
with the model are what defines the coordinates: the shape functions (``shape_sets``; clamped-mass
shapes from the distal loads), the coordinate layout (``robot.link_flex_slice``), the
stiffened beams' second-order fields and a sliding beam's length-dependent strain energy.
"""
from __future__ import annotations

import numpy as np

from ..dynamics.beam_tensors import common_rule, shape_sets

STEP = 1e-30  # complex step
AXES = {"revolute": (0, 1, 2), "prismatic": (2, 0, 1)}  # beam axis, transverse y, transverse z (link frame)


def _rot(axis, angle):
    """Rotation by ``angle`` (complex-step safe) about the unit vector ``axis`` (Rodrigues)."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    S = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    out = np.eye(4, dtype=complex)
    out[:3, :3] = np.eye(3) + np.sin(angle) * S + (1 - np.cos(angle)) * (S @ S)
    return out


def _move(x=0.0, y=0.0, z=0.0):
    out = np.eye(4, dtype=complex)
    out[:3, 3] = x, y, z
    return out


def _joint_transform(link, convention, q):
    """The link's transform from its parent's distal frame at joint value q: standard DH
    Rz(theta) Tz(d) Tx(a) Rx(alpha), modified DH Rx(alpha) Tx(a) Rz(theta) Tz(d) (q added to theta
    or d), or a placed joint T(xyz) Rz(yaw) Ry(pitch) Rx(roll) then the motion about/along its axis."""
    ex, ez = (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)
    revolute = link.joint == "revolute"
    pl = link.placement
    if pl is not None:
        roll, pitch, yaw = pl.rpy
        base = _move(*pl.xyz) @ _rot(ez, yaw) @ _rot((0.0, 1.0, 0.0), pitch) @ _rot(ex, roll)
        axis = np.asarray(pl.axis, float) / np.linalg.norm(pl.axis)
        return base @ (_rot(axis, q) if revolute else _move(*(axis * q)))
    theta, d = (link.theta + q, link.d) if revolute else (link.theta, link.d + q)
    if convention == "standard":
        return _rot(ez, theta) @ _move(z=d) @ _move(x=link.a) @ _rot(ex, link.alpha)
    return _rot(ex, link.alpha) @ _move(x=link.a) @ _rot(ez, theta) @ _move(z=d)


def _beam_start(link, convention):
    """A revolute beam's root along its axis: -L on a standard-DH link (the distal frame sits at
    its tip), 0 on a modified-DH or placed one."""
    return -link.beam.length if (link.placement is None and convention == "standard") else 0.0


class _BeamData:
    """A beam's constants, computed here from its data: shapes, stiffness, modal damping."""

    def __init__(self, link, sets):
        beam = link.beam
        self.shapes, L = sets, beam.length
        blocks_k, blocks_m = [], []
        for direction, ss in sets.items():
            eta, w = ss.quadrature()
            eta, w = np.asarray(eta, float), np.asarray(w, float) * L
            scale = L ** np.asarray(ss.scale, float)
            if direction == "torsion":
                d1 = ss(eta, deriv=1) * (scale / L)[:, None]
                blocks_k.append(beam.GJ * (d1 * w) @ d1.T)
                phi = ss(eta) * scale[:, None]
                blocks_m.append(beam.polar_inertia_per_length * (phi * w) @ phi.T)
            else:
                EI = beam.EI[0] if direction == "y" else beam.EI[1]
                d2 = ss(eta, deriv=2) * (scale / L ** 2)[:, None]
                blocks_k.append(EI * (d2 * w) @ d2.T)
                phi = ss(eta) * scale[:, None]
                blocks_m.append(beam.mass_per_length * (phi * w) @ phi.T)
        n = sum(b.shape[0] for b in blocks_k)
        self.K, Mb = np.zeros((n, n)), np.zeros((n, n))
        pos = 0
        for bk, bm in zip(blocks_k, blocks_m):
            k = bk.shape[0]
            self.K[pos:pos + k, pos:pos + k], Mb[pos:pos + k, pos:pos + k] = bk, bm
            pos += k
        self.Cd = np.zeros((n, n))
        if beam.damping and n:  # the same damping ratio on every mode of the clamped beam
            from scipy.linalg import eigh

            w2, vec = eigh(self.K, Mb)
            mv = Mb @ vec
            self.Cd = mv @ np.diag(2.0 * beam.damping * np.sqrt(np.clip(w2, 0.0, None))) @ mv.T
        self.sliding = False
        self._link = link

    @property
    def kinematics(self):
        from ..dynamics.beams import BeamKinematics

        if "_kin" not in self.__dict__:
            self._kin = BeamKinematics(self.shapes, self._link.beam.length, AXES[self._link.joint])
        return self._kin


class _LinkData:
    """Per link: its beam (or None), the slice of its flexible coordinates, its joint friction."""

    def __init__(self, beam, flex, link):
        self.beam, self.flex, self.viscous, self.coulomb = beam, flex, link.viscous, link.coulomb
        self.offset = link.theta if link.joint == "revolute" and link.placement is None else (
            link.d if link.placement is None else 0.0)


def _constants(robot):
    """Per link a _LinkData built from the robot's data (see the module docstring)."""
    out = []
    for i, link in enumerate(robot.links):
        beam = None
        if link.beam is not None:
            loads = {}
            if link.beam.shapes == "clamped_mass":
                from ..dynamics.structure import distal_loads

                loads = distal_loads(robot, i)
            sets = shape_sets(link.beam, loads) if link.is_flexible else {}
            if link.is_flexible and link.joint == "prismatic":
                from ..dynamics.beams import SlidingBeam

                beam = SlidingBeam.from_beam(link.beam, sets, link.d if link.placement is None else 0.0)
            else:
                beam = _BeamData(link, sets)
        out.append(_LinkData(beam, robot.link_flex_slice(i), link))
    return out


def _deflection_transform(tip, rot, disp):
    E = np.eye(4, dtype=complex)
    E[:3, :3] += np.array([[0, -rot[2], rot[1]], [rot[2], 0, -rot[0]], [-rot[1], rot[0], 0]])
    E[:3, 3] += disp
    to_tip, from_tip = np.eye(4), np.eye(4)
    to_tip[:3, 3] = tip
    from_tip[:3, 3] = -tip
    return to_tip @ E @ from_tip


class EnergyLagrangian:
    """Point-cloud model of a robot: M, Christoffel terms and gravity from energies."""

    def __init__(self, robot, n_gauss=24):
        self.robot = robot
        self.links = _constants(robot)
        self.n_gauss = n_gauss

    # ----- kinematics ---------------------------------------------------------------
    def _clouds(self, q):
        """Mass points (weights, positions) and rigid (J, W) pairs at configuration q."""
        robot = self.robot
        parents = robot.parents
        distal = []  # each link's distal frame: a tree's links start from their parent's
        weights, points, rigid = [], [], []
        self._second = []  # (weights, undeformed points, second-order displacements) of stiffened beams
        for i, (link, lk) in enumerate(zip(robot.links, self.links)):
            W = distal[parents[i]] if parents[i] >= 0 else np.eye(4, dtype=complex)
            Wh = W @ _joint_transform(link, robot.dh, q[i])
            if link.hub is not None:
                rigid.append((link.hub.pseudo_inertia(), Wh))
            Wt = Wh
            if lk.beam is not None and lk.beam.sliding:
                Wt, w, pts = self._sliding(link, lk.beam, q[i] + lk.offset, q[lk.flex], Wh)
                weights.append(w)
                points.append(pts)
            elif lk.beam is not None:  # flexible, or a rigid rod (no coordinates): a cloud of points
                Wt, w, pts = self._beam(link, lk.beam, q[lk.flex], Wh)
                weights.append(w)
                points.append(pts)
            rigid.append((link.body.pseudo_inertia(), Wt))
            distal.append(Wt)
        if robot.payload is not None:  # on the last link's distal frame
            rigid.append((robot.payload.pseudo_inertia(), distal[-1]))
        w = np.concatenate(weights) if weights else np.zeros(0)
        pts = np.concatenate(points) if points else np.zeros((0, 3), dtype=complex)
        return w, pts, rigid

    def _beam(self, link, bm, p, Wh):
        beam = link.beam
        L, mu, jp = beam.length, beam.mass_per_length, beam.polar_inertia_per_length
        ax, t1, t2 = AXES[link.joint]
        eta, wq = np.polynomial.legendre.leggauss(self.n_gauss)
        eta = 0.5 * (eta + 1.0)
        wq = 0.5 * wq
        if beam.shapes == "finite_elements" and bm.shapes:  # per-element rule: shapes are piecewise cubics
            eta, wq = common_rule(list(bm.shapes.values()))
        s = eta * L
        disp = np.zeros((len(s), 3), dtype=complex)
        twist = np.zeros(len(s), dtype=complex)
        tip_disp = np.zeros(3, dtype=complex)
        tip_rot = np.zeros(3, dtype=complex)
        pos = 0
        for direction, ss in bm.shapes.items():
            scale = L ** np.asarray(ss.scale, float)
            phi = ss(eta) * scale[:, None]
            phi_tip = ss(np.array([1.0]))[:, 0] * scale
            slope_tip = ss(np.array([1.0]), deriv=1)[:, 0] * scale / L
            a = p[pos : pos + ss.n]
            pos += ss.n
            if direction == "torsion":
                twist = twist + a @ phi
                tip_rot[ax] += a @ phi_tip
            else:
                t = t1 if direction == "y" else t2
                disp[:, t] += a @ phi
                tip_disp[t] += a @ phi_tip
                tip_rot += (a @ slope_tip) * np.cross(np.eye(3)[ax], np.eye(3)[t])
        root = np.zeros(3)
        root[ax] = _beam_start(link, self.robot.dh)
        centre = root + np.outer(s, np.eye(3)[ax]) + disp
        rho = np.sqrt(jp / mu)
        pts, wts = [], []
        for sign, t, other in ((1, t1, t2), (-1, t1, t2), (1, t2, t1), (-1, t2, t1)):
            off = np.zeros((len(s), 3), dtype=complex)
            off[:, t] = sign * rho
            # small rotation theta about the beam axis: offset e_t -> e_t + theta (e_ax x e_t)
            off += (sign * rho * twist)[:, None] * np.cross(np.eye(3)[ax], np.eye(3)[t])
            pts.append(centre + off)
            wts.append(0.25 * mu * L * wq)
        pts = np.concatenate(pts)
        hom = np.concatenate([pts, np.ones((len(pts), 1))], axis=1)
        world = (Wh @ hom.T).T[:, :3]
        tip = root + L * np.eye(3)[ax]
        D = _deflection_transform(tip, tip_rot, tip_disp)
        if beam.stiffening and bm.shapes:
            r_kl, D_kl = self._second_order_fields(bm, s.real, tip)
            r2 = 0.5 * np.einsum("k,l,xkla->xa", p, p, r_kl)
            rest = np.concatenate([root + np.outer(s, np.eye(3)[ax]), np.ones((len(s), 1))], axis=1)
            # the four section points share the centre line's shortening: one point of their weight
            self._second.append((mu * L * wq, (Wh @ rest.T).T[:, :3], (Wh[:3, :3] @ r2.T).T))
            D = D + 0.5 * np.einsum("k,l,klab->ab", p, p, D_kl)
        Wt = Wh @ D
        return Wt, np.concatenate(wts), world

    def _second_order_fields(self, bm, stations, tip):
        """r_kl at the stations (nx, n, n, 3) and the tip tensor D_kl of a revolute beam; they do not
        depend on the configuration, so they are computed once per beam."""
        cache = self.__dict__.setdefault("_fields", {})
        key = id(bm)
        if key not in cache:
            kin = bm.kinematics
            cache[key] = (np.array([kin.section(x)[1] for x in stations]), kin.tip_tensor(tip))
        return cache[key]

    def _sliding(self, link, bm, d, xi, Wh):
        """Translating beam: material labelled by its fixed axial coordinate z in [-l0, 0]."""
        beam = link.beam
        mu, l0 = beam.mass_per_length, beam.length
        ax, t1, t2 = AXES["prismatic"]
        dr = float(np.real(d))
        eta, wq = common_rule(list(bm.shapes.values()))
        z_out = dr * (eta - 1.0)  # material labels of the outside quadrature points
        g2, w2 = np.polynomial.legendre.leggauss(2)
        z_in = -l0 + (l0 - dr) * 0.5 * (g2 + 1.0)
        eta_now = (d + z_out) / d  # where those material points sit on the current outside length
        disp = np.zeros((len(z_out), 3), dtype=complex)
        tip_disp = np.zeros(3, dtype=complex)
        tip_rot = np.zeros(3, dtype=complex)
        pos = 0
        for direction, ss in bm.shapes.items():
            t = t1 if direction == "y" else t2
            sc = np.asarray(ss.scale, float)
            a = xi[pos : pos + ss.n]
            pos += ss.n
            psi = ss(eta_now.real) + 1j * eta_now.imag * ss(eta_now.real, deriv=1)  # complex-step safe
            disp[:, t] += (a * d**sc) @ psi
            one = np.array([1.0])
            tip_disp[t] += (a * d**sc) @ ss(one)[:, 0]
            tip_rot += ((a * d ** (sc - 1)) @ ss(one, deriv=1)[:, 0]) * np.cross(np.eye(3)[ax], np.eye(3)[t])
        out = disp.copy()
        out[:, ax] += z_out
        inside = np.zeros((2, 3), dtype=complex)
        inside[:, ax] = z_in
        pts = np.concatenate([out, inside])
        wts = np.concatenate([mu * dr * wq, mu * (l0 - dr) * 0.5 * w2])
        hom = np.concatenate([pts, np.ones((len(pts), 1))], axis=1)
        world = (Wh @ hom.T).T[:, :3]
        D = _deflection_transform(np.zeros(3), tip_rot, tip_disp)
        if beam.stiffening and len(xi):
            shift, D2 = self._sliding_second_order(bm, d, xi, eta_now, ax, (t1, t2))
            rest = np.zeros((len(z_out), 4))
            rest[:, ax], rest[:, 3] = z_out, 1.0
            axial = np.zeros((len(z_out), 3), dtype=complex)
            axial[:, ax] = shift
            self._second.append((mu * dr * wq, (Wh @ rest.T).T[:, :3], (Wh[:3, :3] @ axial.T).T))
            D = D + D2
        Wt = Wh @ D
        return Wt, wts, world

    def _sliding_second_order(self, bm, d, xi, eta_now, ax, transverse):
        """Second order of a sliding beam bending in its two transverse planes (no torsion), from
        the slopes theta = w' of the outside part (length d): the axial shift of the material points
        now at eta_now, -1/2 int_0^x |w'|^2, and the second-order tip transform (rotation
        1/2 (skew(theta)^2 + skew(int theta x theta')), tip shift along the axis). Complex-step safe
        in d, xi and eta_now (the upper limit's imaginary part enters through the integrand)."""
        eta_g, w_g = np.polynomial.legendre.leggauss(self.n_gauss)
        e_ax = np.eye(3)[ax]

        def slopes(eta, deriv=1):
            """w^(deriv) in x of each bending plane at stations eta (real): (2, len(eta)) complex."""
            out = np.zeros((2, len(eta)), dtype=complex)
            pos = 0
            for direction, ss in bm.shapes.items():
                k = 0 if direction == "y" else 1
                sc = np.asarray(ss.scale, float)
                a = xi[pos : pos + ss.n]
                pos += ss.n
                out[k] += (a * d ** (sc - deriv)) @ ss(eta, deriv=deriv)
            return out

        def shortening(upper):
            """-1/2 int_0^upper |w'|^2 dx (x = eta d)."""
            lo, hi = 0.0, float(np.real(upper))
            nodes = lo + 0.5 * (eta_g + 1.0) * (hi - lo)
            g = (slopes(nodes) ** 2).sum(0)
            end = (slopes(np.array([hi])) ** 2).sum()
            return -0.5 * d * (0.5 * (hi - lo) * (w_g @ g) + 1j * np.imag(upper) * end)

        shift = np.array([shortening(u) for u in eta_now])
        nodes = 0.5 * (eta_g + 1.0)
        th, dth = slopes(nodes, 1), slopes(nodes, 2)
        n_y, n_z = (np.cross(e_ax, np.eye(3)[t]) for t in transverse)
        twist = 0.5 * d * (w_g @ (th[0] * dth[1] - th[1] * dth[0])) * np.cross(n_y, n_z)
        tip = slopes(np.array([1.0]))[:, 0]
        theta = tip[0] * n_y + tip[1] * n_z
        S = np.array([[0, -theta[2], theta[1]], [theta[2], 0, -theta[0]], [-theta[1], theta[0], 0]])
        C = np.array([[0, -twist[2], twist[1]], [twist[2], 0, -twist[0]], [-twist[1], twist[0], 0]])
        D2 = np.zeros((4, 4), dtype=complex)
        D2[:3, :3] = 0.5 * (S @ S + C)
        D2[:3, 3] = shortening(1.0) * e_ax
        return shift, D2

    def _second_order(self):
        """(weights, undeformed points, second-order displacements) of the last cloud, stacked."""
        if not self._second:
            return np.zeros(0), np.zeros((0, 3), dtype=complex), np.zeros((0, 3), dtype=complex)
        w, p0, p2 = zip(*self._second)
        return np.concatenate(w), np.concatenate(p0), np.concatenate(p2)

    def _kin_derivatives(self, q):
        """Point Jacobians (npts, 3, nq) and rigid-frame derivatives by complex step; and the
        Jacobians (J0, J2) of the stiffened beams' undeformed points and second-order displacements."""
        nq = len(q)
        w, pts0, rigid0 = self._clouds(q.astype(complex))
        w2 = self._second_order()[0]
        Jp = np.zeros((len(w), 3, nq))
        J0, J2 = np.zeros((len(w2), 3, nq)), np.zeros((len(w2), 3, nq))
        dW = [np.zeros((nq, 4, 4)) for _ in rigid0]
        for k in range(nq):
            qc = q.astype(complex)
            qc[k] += 1j * STEP
            _, pts, rigid = self._clouds(qc)
            _, p0, p2 = self._second_order()
            Jp[:, :, k] = pts.imag / STEP
            J0[:, :, k], J2[:, :, k] = p0.imag / STEP, p2.imag / STEP
            for b, (_, Wb) in enumerate(rigid):
                dW[b][k] = Wb.imag / STEP
        return w, Jp, [Jm for Jm, _ in rigid0], dW, (w2, J0, J2)

    # ----- Algorithms 1-3 ------------------------------------------------------------
    def mass_matrix(self, q):
        q = np.asarray(q, dtype=float)
        w, Jp, Js, dW, (w2, J0, J2) = self._kin_derivatives(q)
        M = np.einsum("p,pak,pal->kl", w, Jp, Jp)
        cross = np.einsum("p,pak,pal->kl", w2, J0, J2)  # T_s = sum w v0 . v2
        M += cross + cross.T
        for Jm, d in zip(Js, dW):
            M += np.einsum("kab,bc,lac->kl", d, Jm, d)
        for i, link in enumerate(self.robot.links):
            M[i, i] += link.armature
        return M

    def potential_energy(self, q):
        w, pts, rigid = self._clouds(np.asarray(q))
        g = self.robot.gravity
        V = -np.sum(w * (pts @ g))
        w2, _, p2 = self._second_order()
        V = V - np.sum(w2 * (p2 @ g))
        g4 = np.append(g, 0.0)
        for Jm, Wb in rigid:
            V = V - g4 @ (Wb @ Jm[:, 3])
        q = np.asarray(q)
        for i, lk in enumerate(self.links):
            if lk.beam is not None and lk.beam.sliding:
                V = V + lk.beam.strain(np.concatenate([[q[i] + lk.offset], q[lk.flex]]))
            elif lk.beam is not None:
                p = q[lk.flex]
                V = V + 0.5 * p @ lk.beam.K @ p
        return V

    def gravity_elastic(self, q):
        """dV/dq by complex step."""
        q = np.asarray(q, dtype=float)
        out = np.zeros(len(q))
        for k in range(len(q)):
            qc = q.astype(complex)
            qc[k] += 1j * STEP
            out[k] = self.potential_energy(qc).imag / STEP
        return out

    def mass_matrix_derivatives(self, q, h=1e-3):
        """dM/dq_k (nq, nq, nq) by Richardson-extrapolated central differences."""
        q = np.asarray(q, dtype=float)
        out = np.zeros((len(q),) * 3)
        for k in range(len(q)):
            def central(step):
                e = np.zeros(len(q))
                e[k] = step
                return (self.mass_matrix(q + e) - self.mass_matrix(q - e)) / (2 * step)

            out[k] = (4 * central(h / 2) - central(h)) / 3
        return out

    def bias_forces(self, q, qd):
        """h + c + K q_f + damping (Algorithms 2-3)."""
        qd = np.asarray(qd, dtype=float)
        dM = self.mass_matrix_derivatives(q)  # dM[k, i, j] = dM_ij / dq_k
        coriolis = np.einsum("kij,j,k->i", dM, qd, qd) - 0.5 * np.einsum("ijk,j,k->i", dM, qd, qd)
        out = coriolis + self.gravity_elastic(q)
        for i, lk in enumerate(self.links):
            if lk.beam is not None:
                out[lk.flex] += lk.beam.Cd @ qd[lk.flex]
            out[i] += lk.viscous * qd[i] + lk.coulomb * np.sign(qd[i])
        return out

    def inverse_dynamics(self, q, qd, qdd):
        return self.mass_matrix(q) @ np.asarray(qdd, float) + self.bias_forces(q, qd)

