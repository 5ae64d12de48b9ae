"""Robot parameters as named tracer inputs (``parameters="symbolic"``).

:func:`symbolic_model` returns a copy of :func:`flexman.dynamics.structure.build`'s model
whose constants are object arrays holding tracer inputs, plus the parameter values, so the
same algorithms produce equations in the parameters. Only non-zero parameters become
symbols (zeros keep the structure sparse, as in SYMORO's treatment of zero parameters).

* DH: ``a<i>``, ``d<i>`` (for a prismatic joint ``d<i>`` is its offset); alpha and theta stay
  numeric (they are usually 0 or +-pi/2 and fold into the structure);
* rigid bodies on the distal frame: the standard parameters about the frame origin
  ``XX<i> XY<i> XZ<i> YY<i> YZ<i> ZZ<i> MX<i> MY<i> MZ<i> m<i>`` (hub on a flexible link:
  suffix ``h``, i.e. ``XXh<i>``...);
* gravity ``gx gy gz``; armature ``Ia<i>``;
* revolute beams: their physical properties ``rhoA<i>`` (mass per length), ``lb<i>``
  (length), ``EIy<i>`` / ``EIz<i>``, ``GJ<i>``, ``Jp<i>`` (polar mass moment per length) and
  ``zeta<i>`` (modal damping ratio). Every entry of the constant tensors C0, Ck, Ckl, Dk, K,
  Cd is a number times a monomial in them (dimensional analysis with the shape functions
  phi_k(x) = L**s_k psi_k(x / L) held fixed): e.g. Ckl = rhoA L**(1 + s_k + s_l) x int psi_k
  psi_l, K = EI L**(s_k + s_l - 3) x int psi_k'' psi_l'', Cd ~ zeta sqrt(rhoA EI). The
  dimensionless shapes stay numeric (004 sec. 4.4 specifies mode shapes numerically too):
  clamped-free, polynomial and finite-element shapes do not depend on the parameters, so the
  equations are exact for any values; clamped-mass shapes are those of the nominal loads.

* sliding beams of prismatic joints: the same names (``lb<i>`` is the total length l0);
  their moment constants are rhoA times numbers (their powers of the extension d are traced).

Kept numeric (listed in ``notes``): viscous and Coulomb friction (the algorithm branches on
them).
"""
from __future__ import annotations

import copy

import numpy as np

from ..dynamics import dh
from ..dynamics.structure import build
from .tracer import sqrt


class Params:
    """Collects named parameter inputs and their numeric values."""

    def __init__(self, tape):
        self.tape, self.values = tape, {}

    def sym(self, name, value):
        value = float(value)
        if value == 0.0:
            return 0.0
        self.values[name] = value
        return self.tape.input(name)


def _obj_trans(x=0.0, y=0.0, z=0.0):
    out = np.eye(4).astype(object)
    out[0, 3], out[1, 3], out[2, 3] = x, y, z
    return out


def _dh_split(link, convention, i, P):
    """Like dynamics.dh.split with a and d (or a placement's xyz) as symbols."""
    if link.placement is not None:
        rot, N = dh.placement_parts(link.placement)
        xyz = [P.sym(f"{c}{i + 1}", v) for c, v in zip(("px", "py", "pz"), link.placement.xyz)]
        return _obj_trans(*xyz) @ dh._snap(rot).astype(object), dh._snap(N).astype(object), 0.0
    a = P.sym(f"a{i + 1}", link.a)
    d = P.sym(f"d{i + 1}", link.d)
    rx, rz = dh.rot_x(link.alpha), dh.rot_z(link.theta)
    eye = np.eye(4).astype(object)
    if convention == "standard":
        if link.joint == "revolute":
            return eye, _obj_trans(z=d) @ _obj_trans(x=a) @ rx, link.theta
        return rz.astype(object), _obj_trans(x=a) @ rx, d
    pre = rx @ _obj_trans(x=a)
    if link.joint == "revolute":
        return pre, _obj_trans(z=d), link.theta
    return pre @ rz, eye, d


def _body(J4, suffix, i, P):
    """Pseudo-inertia (4x4 object) from the standard parameters about the frame origin."""
    S, mc, m = J4[:3, :3], J4[:3, 3], J4[3, 3]
    Io = np.trace(S) * np.eye(3) - S
    tag = f"{suffix}{i + 1}"
    I = np.empty((3, 3), dtype=object)
    for (r, c), nm in zip([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)], ["XX", "XY", "XZ", "YY", "YZ", "ZZ"]):
        I[r, c] = I[c, r] = P.sym(nm + tag, Io[r, c])
    out = np.zeros((4, 4), dtype=object)
    half_trace = 0.5 * (I[0, 0] + I[1, 1] + I[2, 2])
    out[:3, :3] = -I
    for k in range(3):
        out[k, k] = half_trace - I[k, k]
        out[k, 3] = out[3, k] = P.sym(f"M{'XYZ'[k]}{tag}", mc[k])
    out[3, 3] = P.sym(f"m{tag}", m)
    return out


def _beam_exponents(beam, link, second_order=False):
    """Per tensor, a function of the entry index giving {property: power} (see the module
    docstring). Bending coordinates scale with their shape exponent s_k; torsion angles too.
    ``second_order``: the second-order tip tensor Dkl also without stiffening (for kinematics
    that read it: the frame sensors)."""
    from ..dynamics.structure import AXES

    _, t1, t2 = AXES[link.joint]
    s = np.concatenate([np.asarray(ss.scale, int) for ss in beam.shapes.values()])
    tors = [d == "torsion" for d in beam.directions]
    ei = {"y": "EIy", "z": "EIz", "torsion": "GJ"}
    L = "lb"

    def pos(a):  # 1 for a spatial component (a length), 0 for the homogeneous one
        return int(a < 3)

    def c0(a, b):
        if a == b and a in (t1, t2):
            return {"Jp": 1, L: 1}
        return {"rhoA": 1, L: 1 + pos(a) + pos(b)}

    def ck(k, a, b):
        return {"Jp": 1, L: 1 + s[k]} if tors[k] else {"rhoA": 1, L: 1 + pos(a) + s[k]}

    def ckl(k, l, a, b):
        return {"Jp" if tors[k] else "rhoA": 1, L: 1 + s[k] + s[l]}

    def dk(k, a, b):
        rotation = s[k] - (0 if tors[k] else 1)  # a bending slope is a deflection over a length
        return {L: rotation + (1 if b == 3 else 0)}

    def stiff(k, l):
        return {ei[beam.directions[k]]: 1, L: s[k] + s[l] + (-1 if tors[k] else -3)}

    def damp(k, l):
        inertia = "Jp" if tors[k] else "rhoA"
        return {"zeta": 1, inertia: 0.5, ei[beam.directions[k]]: 0.5, L: s[k] + s[l] + (0 if tors[k] else -1)}

    rules = {"C0": c0, "Ck": ck, "Ckl": ckl, "Dk": dk, "K": stiff, "Cd": damp}
    if beam.stiffening or second_order:  # second-order fields r_kl ~ L theta_k theta_l, theta ~ L**(s_k - 1)
        e = [s[k] - (0 if tors[k] else 1) for k in range(len(s))]
        if beam.stiffening:
            rules["Fkl"] = lambda k, l, a, b: {"rhoA": 1, L: 2 + pos(a) + e[k] + e[l]}
        rules["Dkl"] = lambda k, l, a, b: {L: e[k] + e[l] + (1 if b == 3 else 0)}
    return rules


def _sliding_exponents(beam):
    """{attribute: rule(index) -> {property: power}} for a SlidingBeam (see SlidingBeam)."""
    ei = {"y": "EIy", "z": "EIz"}
    nf = beam.n

    def direction(m):  # fields come in three families of n (psi, g1, g2)
        return beam.directions[m % nf]

    def c0(a, b):
        return {"rhoA": 1, "lb": int(a < 3) + int(b < 3) + 1}

    def stiff(k, l):
        return {ei[direction(k)]: 1}

    def damp(k, l):
        return {"zeta": 1, "rhoA": 0.5, ei[direction(k)]: 0.5}

    mass = lambda *idx: {"rhoA": 1}
    rules = {"C0": c0, "Aax": mass, "A4": mass, "Bc": mass, "Kbar": stiff, "K": stiff, "Cd": damp}
    if beam.stiffening:
        rules.update(FA=mass, FB=mass)  # shortening moments: rhoA times numbers (powers of d traced)
    return rules


def _symbolic_beam(beam, link, i, P, exponents):
    """Copy of a beam (revolute or sliding) whose tensors are numbers times monomials in its named
    physical properties."""
    lb = link.beam
    values = {stem: _beam_value(lb, stem) for stem in BEAM_STEMS}
    memo = {}

    def monomial(powers):
        key = tuple(sorted(powers.items()))
        if key not in memo:
            term, value, under_root = 1.0, 1.0, 1.0
            for name, n in powers.items():
                if n == 0:
                    continue
                value *= values[name] ** n
                sym = P.sym(f"{name}{i + 1}", values[name])
                if n == int(n):
                    term = term * sym ** int(n)
                else:  # half powers (damping): one square root of their product
                    under_root = under_root * sym ** int(2 * n)
            memo[key] = (term * sqrt(under_root), value)
        return memo[key]

    out = copy.copy(beam)
    for name, rule in exponents.items():
        arr = np.asarray(getattr(beam, name), dtype=float)
        sym = np.zeros(arr.shape, dtype=object)
        sym[...] = 0.0
        for idx in zip(*np.nonzero(arr)):
            term, value = monomial(rule(*idx))
            sym[idx] = (arr[idx] / value) * term
        setattr(out, name, sym)
    return out


def _links_robot(robot):
    """The robot with one coordinate per link: ``robot.full`` for a robot with mimic joints."""
    return robot.full if getattr(robot, "mimic", None) else robot


def symbolic_model(robot, tape, second_order=False):
    """(model with tracer constants, {name: value}, notes). A robot with mimic joints: those of
    its full robot (the parameters are the links'). ``second_order``: the revolute beams' second-order
    tip tensors in the parameters too (second-order kinematics: the frame sensors)."""
    robot = _links_robot(robot)
    model = copy.copy(build(robot))
    P = Params(tape)
    notes = []
    links = []
    for i, (link, lk) in enumerate(zip(robot.links, model.links)):
        lk = copy.copy(lk)
        lk.P, lk.N, lk.offset = _dh_split(link, robot.dh, i, P)
        lk.body_tip = _body(lk.body_tip, "", i, P) if np.any(lk.body_tip) else lk.body_tip
        lk.body_base = _body(lk.body_base, "h", i, P) if np.any(lk.body_base) else lk.body_base
        lk.armature = P.sym(f"Ia{i + 1}", lk.armature)
        if lk.viscous or lk.coulomb:
            notes.append(f"link {i + 1}: joint friction kept numeric")
        if lk.beam is not None:
            rules = (_sliding_exponents(lk.beam) if lk.beam.sliding
                     else _beam_exponents(lk.beam, link, second_order))
            lk.beam = _symbolic_beam(lk.beam, link, i, P, rules)
        links.append(lk)
    model.links = links
    model.gravity = np.array([P.sym(n, g) for n, g in zip(("gx", "gy", "gz"), robot.gravity)] + [None], dtype=object)[:-1]
    return model, P.values, notes


BEAM_STEMS = {"rhoA": "mass_per_length", "lb": "length", "EIy": ("EI", 0), "EIz": ("EI", 1), "GJ": "GJ",
              "Jp": "polar_inertia_per_length", "zeta": "damping"}  # beam parameter name -> property
_beam_names: dict = {}  # beam structure key -> its parameter stems in the order they are derived


def _zero_flags(x):
    """The model-file data with every number replaced by whether it is non-zero."""
    if isinstance(x, dict):
        return {k: _zero_flags(v) for k, v in x.items() if k != "name"}
    if isinstance(x, (list, tuple)):
        return [_zero_flags(v) for v in x]
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x != 0
    return x


def _beam_keys(robot):
    """Per link, the key of its beam's parameter names: everything its tensors' pattern depends
    on (the DH convention, the link's structure and which of its values are zero; every tensor
    entry is a number fixed by the shapes times a monomial in the values), or None without a
    flexible beam. None for the whole robot with clamped-mass shapes (they follow from loads)."""
    import json

    from ..model.serialize import link_items

    links = link_items(robot)  # one item per link, floating bases as their six links
    if any((link.get("beam") or {}).get("shapes") == "clamped_mass" for link in links):
        return None
    return [json.dumps([robot.dh, _zero_flags(data)], sort_keys=True) if link.is_flexible else None
            for link, data in zip(robot.links, links)]


def _beam_value(beam, stem):
    prop = BEAM_STEMS[stem]
    return getattr(beam, prop[0])[prop[1]] if isinstance(prop, tuple) else getattr(beam, prop)


def parameter_values(robot) -> dict:
    """{name: value} of ``robot``'s parameters in the order ``parameters="symbolic"`` derives
    them: the input vector ``p`` of a compiled symbolic-parameter model for this robot. Two
    robots with the same names (and the same structure: see ``codegen.modelcache``) share one
    compiled model; only this vector differs.

    Fast for the many robots of a sweep: the beams' names are remembered per beam structure
    (:func:`_beam_keys`), so after the first robot of a structure only the joints and bodies
    are built (the beam tensors, most of the cost, are not). Equal to
    ``symbolic_model(robot, Tape())[1]`` (tested)."""
    from .tracer import Tape

    robot = _links_robot(robot)
    keys = _beam_keys(robot)
    if keys is None or any(k is not None and k not in _beam_names for k in keys):
        values = symbolic_model(robot, Tape())[1]
        if keys is not None:
            if len(_beam_names) > 10_000:
                _beam_names.clear()
            for i, key in enumerate(keys):
                if key is not None:
                    suffix = str(i + 1)
                    _beam_names[key] = [n[:-len(suffix)] for n in values
                                        if n.endswith(suffix) and n[:-len(suffix)] in BEAM_STEMS]
        return values
    P = Params(Tape())
    model = build(robot, beams=False)
    for i, (link, lk) in enumerate(zip(robot.links, model.links)):  # the order of symbolic_model
        _dh_split(link, robot.dh, i, P)
        if np.any(lk.body_tip):
            _body(lk.body_tip, "", i, P)
        if np.any(lk.body_base):
            _body(lk.body_base, "h", i, P)
        P.sym(f"Ia{i + 1}", lk.armature)
        for stem in _beam_names.get(keys[i], ()) if keys[i] is not None else ():
            P.sym(f"{stem}{i + 1}", _beam_value(link.beam, stem))
    for name, g in zip(("gx", "gy", "gz"), robot.gravity):
        P.sym(name, g)
    return P.values
