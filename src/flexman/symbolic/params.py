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
* revolute beams: the non-zero entries of their constant tensors ``C0``, ``Ck``, ``Ckl``,
  ``Dk``, ``K``, ``Cd`` (symmetric entries share one name).

Kept numeric (listed in ``notes``): viscous and Coulomb friction (the algorithm branches on
them), sliding beams of prismatic joints.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from ..dynamics import dh
from ..dynamics.structure import build


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

    def tensor(self, name, arr, perm=None):
        """Object array of symbols for the non-zero entries; entries equal under the axis
        permutation ``perm`` (a symmetry) share one name."""
        arr = np.asarray(arr, dtype=float)
        out = np.zeros(arr.shape, dtype=object)
        out[...] = 0.0
        for idx in np.ndindex(arr.shape):
            key = idx
            if perm is not None:
                other = tuple(idx[p] for p in perm)
                if other < idx and np.isclose(arr[other], arr[idx], rtol=1e-12, atol=0):
                    key = other
            tag = "".join(str(k + 1) for k in key)
            out[idx] = self.sym(f"{name}_{tag}", arr[key])
        return out


def _obj_trans(x=0.0, y=0.0, z=0.0):
    out = np.eye(4).astype(object)
    out[0, 3], out[1, 3], out[2, 3] = x, y, z
    return out


def _dh_split(link, convention, i, P):
    """Like dynamics.dh.split with a and d as symbols."""
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


def symbolic_model(robot, tape):
    """(model with tracer constants, {name: value}, notes)."""
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
        if lk.beam is not None and not lk.beam.sliding:
            b = copy.copy(lk.beam)
            t = f"L{i + 1}"
            b.C0 = P.tensor(f"C0{t}", b.C0, perm=(1, 0))
            b.Ck = P.tensor(f"Ck{t}", b.Ck)
            b.Ckl = P.tensor(f"Ckl{t}", b.Ckl, perm=(1, 0, 3, 2))
            b.Dk = P.tensor(f"Dk{t}", b.Dk)
            b.K = P.tensor(f"K{t}", b.K, perm=(1, 0))
            b.Cd = P.tensor(f"Cd{t}", b.Cd, perm=(1, 0))
            lk.beam = b
        elif lk.beam is not None:
            notes.append(f"link {i + 1}: sliding beam constants kept numeric")
        links.append(lk)
    model.links = links
    model.gravity = np.array([P.sym(n, g) for n, g in zip(("gx", "gy", "gz"), robot.gravity)] + [None], dtype=object)[:-1]
    return model, P.values, notes
