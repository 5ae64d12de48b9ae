"""Curvature, deflection and surface strain along a flexible beam, from the coordinates q.

For the assumed-mode fields of a beam on a revolute link (deflection v along the link's y axis,
w along z, twist alpha about the beam axis x), the section frame turns along the beam at the
rate (001 eqs. 10, 15; curvatures and twist as in the section frame)

    kappa = (kappa_x, kappa_y, kappa_z) = (alpha', -w'', v''),

exactly in the curvature coordinates of 001 (the fields are defined from them), and to first
order in any displacement description. A fibre at offset (y, z) from the neutral axis of the
section stretches by ``strain = z kappa_y - y kappa_z`` (Euler-Bernoulli: plane sections stay
plane and normal to the axis), so a gauge on the surface at half the section height h/2 reads
``-(h/2) v''`` (on the +y face) or ``-(h/2) w''`` (on the +z face).

The functions take any batch of coordinates: a single q, a statics result's ``q`` or a
simulation's ``res.q`` (N, nq).
"""
from __future__ import annotations

import numpy as np

from ..dynamics.structure import numeric_model

__all__ = ["curvature", "deflection", "surface_strain"]


def _beam(robot, link, x):
    n = robot.n_joints
    try:
        link = int(link)
    except (TypeError, ValueError):
        raise ValueError(f"link: {link!r} is not a link index") from None
    if not -n <= link < n:
        raise ValueError(f"link: {link} out of range for {n} links")
    link %= n
    if not robot.links[link].is_flexible:
        raise ValueError(f"link: link {link} has no flexible beam (no modes), so it has no curvature")
    if robot.links[link].joint == "prismatic":
        raise ValueError(f"link: link {link} is a sliding beam (prismatic joint); curvature is available "
                         "for beams on revolute joints")
    beam = numeric_model(getattr(robot, "full", robot)).links[link].beam  # (mimic joints: the full robot's links)
    xs = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(xs)):
        raise ValueError("x: positions along the beam must be finite numbers")
    outside = xs[(xs < 0.0) | (xs > beam.length)]
    if outside.size:
        raise ValueError(f"x: {outside.ravel()[0]:g} m is outside link {link}'s beam; give distances from its "
                         f"root in [0, {beam.length:g}] m")
    return link, beam, xs


def _coordinates(robot, q, link):
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (robot.nq,):
        raise ValueError(f"q: expected {robot.nq} coordinates in the last axis, got shape {q.shape}")
    if getattr(robot, "mimic", None):  # mimic joints: the full robot's coordinates, q_full = G q + c
        G, c = robot.mimic_map()
        robot, q = robot.full, q @ G.T + c
    return q[..., numeric_model(robot).links[link].flex]


def curvature(robot, q, link, x):
    """Twist and bending curvatures (kappa_x, kappa_y, kappa_z) = (alpha', -w'', v'') (1/m) of
    ``link``'s beam at distances ``x`` (m) from its root: shape q.shape[:-1] + x.shape + (3,)."""
    link, beam, xs = _beam(robot, link, x)
    p = _coordinates(robot, q, link)
    _, dth, _ = beam.kinematics.fields(xs.ravel() / beam.length)  # (n, nx, 3)
    out = np.einsum("...k,kxa->...xa", p, dth)
    return out.reshape(p.shape[:-1] + xs.shape + (3,))


def deflection(robot, q, link, x, order=1):
    """Displacement (..., 3) of the neutral axis of ``link``'s beam at distances ``x`` from its
    root, in the link frame, against the undeformed beam: ``v`` along y and ``w`` along z
    (order=1), plus the second-order foreshortening and torsion coupling (order=2)."""
    if order not in (1, 2):
        raise ValueError(f"order: must be 1 or 2, got {order!r}")
    link, beam, xs = _beam(robot, link, x)
    p = _coordinates(robot, q, link)
    _, _, u = beam.kinematics.fields(xs.ravel() / beam.length)
    out = np.einsum("...k,kxa->...xa", p, u)
    if order == 2:
        second = np.stack([beam.kinematics.section(xi)[1] for xi in xs.ravel()], axis=2)  # (n, n, nx, 3)
        out = out + 0.5 * np.einsum("...k,...l,klxa->...xa", p, p, second)
    return out.reshape(p.shape[:-1] + xs.shape + (3,))


def surface_strain(kappa, height, face="y"):
    """Axial strain of the surface fibre at +height/2 along the link's ``face`` axis ('y' or 'z')
    for curvatures ``kappa`` (..., 3) from :func:`curvature`; the opposite face reads minus it."""
    kappa = np.asarray(kappa, dtype=float)
    if not (np.isfinite(height) and height > 0):
        raise ValueError(f"height: the section height must be a finite number > 0 (got {height})")
    if face == "y":
        return -0.5 * height * kappa[..., 2]
    if face == "z":
        return 0.5 * height * kappa[..., 1]
    raise ValueError(f"face: use 'y' or 'z' (the link axis normal to the gauge's face), got {face!r}")
