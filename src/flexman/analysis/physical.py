"""Named physical parameters of a robot: what sensitivities and identification refer to.

Names carry the 1-based link number (``EI2`` is link 2's beam):

* DH lengths ``a<i>``, ``d<i>`` (a URDF-style placement: ``px<i> py<i> pz<i>``);
* the link's rigid body ``mass<i>``, centre of mass ``cx<i> cy<i> cz<i>`` (m, link frame) and
  inertia about the centre of mass ``Ixx<i> Iyy<i> Izz<i> Ixy<i> Iyz<i> Ixz<i>``;
* the same for a hub (``hub_mass<i>``, ``hub_cx<i>``, ``hub_Ixx<i>`` ...) and the payload on the
  last link (``payload`` is its mass; ``payload_cx``, ``payload_Ixx`` ...; a robot without one
  has a payload of 0 kg, so the effect of adding one is a derivative too);
* armature ``Ia<i>``; gravity ``gx gy gz``;
* a beam's ``rhoA<i>`` (mass per length), ``lb<i>`` (length), ``EIy<i>``, ``EIz<i>``, ``EI<i>``
  (both bending stiffnesses changed together by the same amount), ``GJ<i>``, ``Jp<i>`` (polar
  mass moment per length) and ``zeta<i>`` (modal damping ratio).

A product of inertia is one parameter (``Ixy`` moves both symmetric entries). Only the names
that exist on the robot are valid (a rigid link has no ``EI``); :func:`check` refuses the rest
in one line that lists the valid ones.
"""
from __future__ import annotations

import copy
import re

import numpy as np

BODY = ("mass", "cx", "cy", "cz", "Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz")
BEAM = {"rhoA": "mass_per_length", "lb": "length", "EIy": None, "EIz": None, "EI": None, "GJ": "GJ",
        "Jp": "polar_inertia_per_length", "zeta": "damping"}
_INERTIA = {"Ixx": (0, 0), "Iyy": (1, 1), "Izz": (2, 2), "Ixy": (0, 1), "Iyz": (1, 2), "Ixz": (0, 2)}


def names(robot) -> list:
    """Every physical parameter name of ``robot``, in a stable order."""
    out = []
    for i, link in enumerate(robot.links):
        k = i + 1
        out += [f"p{c}{k}" for c in "xyz"] if link.placement is not None else [f"a{k}", f"d{k}"]
        out += [f"{n}{k}" for n in BODY]
        if link.hub is not None:
            out += [f"hub_{n}{k}" for n in BODY]
        out.append(f"Ia{k}")
        if link.is_flexible:
            out += [f"{n}{k}" for n in BEAM]
    out += ["payload"] + [f"payload_{n}" for n in BODY[1:]]  # a robot without one: a payload of 0 kg
    return out + ["gx", "gy", "gz"]


def check(robot, wanted) -> list:
    """``wanted`` as a list of valid names; a ValueError of one line listing the valid ones."""
    if isinstance(wanted, str):
        wanted = [wanted]
    valid = names(robot)
    bad = [w for w in wanted if w not in valid]
    if bad or not wanted:
        what = f"unknown parameter {', '.join(map(repr, bad))}" if bad else "no parameters given"
        raise ValueError(f"{what} for {robot.name}; valid: {' '.join(valid)}")
    return list(wanted)


_SPLIT = re.compile(r"^(hub_|payload_?)?([A-Za-z]+?)(\d*)$")


def split(name):
    """(owner, field, link index or None): owner 'link', 'hub', 'payload', 'beam', 'robot'."""
    m = _SPLIT.match(name)
    prefix, field, num = m.group(1), m.group(2), m.group(3)
    if name == "payload":
        return "payload", "mass", None
    if prefix == "payload_":
        return "payload", field, None
    link = int(num) - 1 if num else None
    if prefix == "hub_":
        return "hub", field, link
    if field in BEAM:
        return "beam", field, link
    if field in ("gx", "gy", "gz"):
        return "robot", field, None
    return "link", field, link


def _body_get(body, field):
    if field == "mass":
        return body.mass
    if field in ("cx", "cy", "cz"):
        return body.com["xyz".index(field[1])]
    return body.inertia[_INERTIA[field]]


def _body_set(body, field, value):
    if field == "mass":
        body.mass = value
    elif field in ("cx", "cy", "cz"):
        com = body.com.copy()
        com["xyz".index(field[1])] = value
        body.com = com
    else:
        r, c = _INERTIA[field]
        inertia = body.inertia.copy()
        inertia[r, c] = inertia[c, r] = value
        body.inertia = inertia


def value(robot, name) -> float:
    """The current value of one named parameter (``EI<i>``: the mean of EIy and EIz)."""
    owner, field, i = split(name)
    if owner == "robot":
        return float(robot.gravity["xyz".index(field[1])])
    if owner == "payload":
        return float(_body_get(robot.payload, field)) if robot.payload is not None else 0.0
    link = robot.links[i]
    if owner == "hub":
        return float(_body_get(link.hub, field))
    if owner == "beam":
        if field in ("EIy", "EIz", "EI"):
            return float({"EIy": link.beam.EI[0], "EIz": link.beam.EI[1]}.get(field, np.mean(link.beam.EI)))
        return float(getattr(link.beam, BEAM[field]))
    if field == "Ia":
        return link.armature
    if field in ("a", "d"):
        return getattr(link, field)
    if field in ("px", "py", "pz"):
        return float(link.placement.xyz["xyz".index(field[1])])
    return float(_body_get(link.body, field))


def with_values(robot, changes: dict):
    """A copy of ``robot`` with the named parameters set (``EI<i>`` shifts EIy and EIz by the
    same amount so that their mean is the value, after any EIy<i>, EIz<i> given with it). The values are not re-validated: a derivative may be taken at a point where,
    say, an inertia is not physical (the caller chooses the values)."""
    out = copy.deepcopy(robot)
    out.clear_derived()  # rebuilt for the new content on demand
    out.__dict__.pop("flex_layout", None)
    both_last = sorted(changes.items(), key=lambda kv: split(kv[0])[1] == "EI")  # EI<i> sets the mean of the two
    for name, v in both_last:
        owner, field, i = split(name)
        v = float(v)
        if owner == "robot":
            gravity = out.gravity.copy()
            gravity["xyz".index(field[1])] = v
            out.gravity = gravity
        elif owner == "payload":
            if out.payload is None:
                from ..model import RigidBody

                out.payload = RigidBody()
            _body_set(out.payload, field, v)
        elif owner == "hub":
            _body_set(out.links[i].hub, field, v)
        elif owner == "beam":
            beam = out.links[i].beam
            if field in ("EIy", "EIz"):
                ei = list(beam.EI)
                ei[0 if field == "EIy" else 1] = v
                beam.EI = tuple(ei)
            elif field == "EI":
                shift = v - float(np.mean(beam.EI))
                beam.EI = (beam.EI[0] + shift, beam.EI[1] + shift)
            else:
                setattr(beam, BEAM[field], v)
        elif field == "Ia":
            out.links[i].armature = v
        elif field in ("a", "d"):
            setattr(out.links[i], field, v)
        elif field in ("px", "py", "pz"):
            pl = out.links[i].placement
            xyz = pl.xyz.copy()
            xyz["xyz".index(field[1])] = v
            pl.xyz = xyz
        else:
            _body_set(out.links[i].body, field, v)
    return out
