"""The robot description: links (DH data, joint type), rigid bodies, hubs, beams, payload.

This module holds validated data only; the algorithms live in :mod:`flexman.dynamics`.
Every number is SI. Frames follow docs/conventions.md: the link's own DH frame is the frame after
its DH transform ``A_i``; a flexible link's deflection transform ``E_i`` follows ``A_i``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numbers
from collections import OrderedDict

import numpy as np

from . import engine
from . import limits as lim
from . import tree
from .errors import ModelError
from .tracking import BUILT, EDITS, Tracked

JOINT_TYPES = ("revolute", "prismatic")
DH_CONVENTIONS = ("standard", "modified")
SHAPE_KINDS = ("clamped_free", "clamped_mass", "polynomial", "finite_elements")

# ----- field rules ----------------------------------------------------------------------------
# The lower bound of each signed field, stated once: (bound, strict) means value >= bound, or
# value > bound where strict. The data classes enforce them in __post_init__; the model-file
# reader (:mod:`flexman.model.serialize`) and the URDF reader check the same rules while reading,
# so that their messages name the field path or the URDF element.
LOWER_BOUNDS = {
    "body": {"mass": (0.0, False)},
    "beam": {"length": (0.0, True), "mass_per_length": (0.0, True), "EI": (0.0, False), "GJ": (0.0, False),
             "polar_inertia_per_length": (0.0, False), "damping": (0.0, False), "modes": (0, False)},
    "link": {"armature": (0.0, False), "viscous": (0.0, False), "coulomb": (0.0, False)},
}


def bounds(part: str) -> dict:
    """The lower bounds of a part's fields ('body', 'beam' or 'link'): {field: (bound, strict)}."""
    return LOWER_BOUNDS[part]


def bound_text(rule) -> str:
    """A rule (bound, strict) as text: '>= 0' or '> 0'."""
    bound, strict = rule
    return f"{'>' if strict else '>='} {bound:g}"


def meets_bound(value, rule) -> bool:
    """Whether ``value`` (a number or an array: every entry) meets the rule (bound, strict).
    NaN never does; finiteness is the caller's check."""
    bound, strict = rule
    return bool(np.all(value > bound if strict else value >= bound))


def _real(value, where: str) -> float:
    """A float from a number given in Python (not a bool, text or container); ModelError naming
    the field otherwise. Finiteness and signs are the caller's checks."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ModelError(f"{where}: must be a number (got {type(value).__name__})")
    try:
        return float(value)
    except OverflowError:  # an int beyond the float range
        raise ModelError(f"{where}: {str(value)[:12]}... is too large for a float") from None


def _floats(value, where: str, what: str) -> np.ndarray:
    """A float array from numbers given in Python; ModelError naming the field otherwise."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{where}: expected {what} (got {type(value).__name__})") from None
    if isinstance(value, (str, bytes)) or np.asarray(value).dtype.kind == "b":
        raise ModelError(f"{where}: expected {what} (got {type(value).__name__})")
    return arr


def _vec3(value, where: str) -> np.ndarray:
    arr = _floats(value, where, "3 numbers")
    if arr.shape != (3,):
        raise ModelError(f"{where}: expected 3 numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{where}: all entries must be finite numbers")
    return arr


def within(value, where: str, limit: float, unit: str = "") -> None:
    """Refuse a finite but absurd magnitude (README "Limits"): |value| <= limit."""
    worst = float(np.max(np.abs(value))) if np.size(value) else 0.0
    if worst > limit:
        raise ModelError(f"{where}: {worst:g} is beyond the supported magnitude {limit:g}{unit} "
                         "(README, Limits)")


def unit_vector(value, where: str) -> np.ndarray:
    """A finite non-zero 3-vector scaled to length 1; scaled by its largest entry first, so that
    [1e308, 0, 0] does not overflow to an infinite norm (and a zero axis)."""
    big = float(np.max(np.abs(value)))
    if not big > 1e-9:
        raise ModelError(f"{where}: must be a non-zero vector such as [0, 0, 1]")
    scaled = np.asarray(value, dtype=float) / big
    return scaled / np.linalg.norm(scaled)


def inertia_matrix(value, where: str, strict: bool = True) -> np.ndarray:
    """Accept [Ixx, Iyy, Izz, Ixy, Iyz, Ixz], a 3x3 matrix, or 3 principal values. ``strict=False``
    skips the physical checks (positive semi-definite, triangle inequality): for inertials read
    from a URDF as written, which real descriptions sometimes violate (the reader warns)."""
    arr = _floats(value, where, "[Ixx, Iyy, Izz, Ixy, Iyz, Ixz], a 3x3 matrix or 3 principal values")
    if arr.shape == (3,):
        mat = np.diag(arr)
    elif arr.shape == (6,):
        ixx, iyy, izz, ixy, iyz, ixz = arr
        mat = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    elif arr.shape == (3, 3):
        mat = arr
    else:
        raise ModelError(
            f"{where}: give [Ixx, Iyy, Izz, Ixy, Iyz, Ixz], a 3x3 matrix or 3 principal values"
        )
    if not np.all(np.isfinite(mat)):
        raise ModelError(f"{where}: all entries must be finite numbers")
    within(mat, where, lim.MAX_INERTIA, " kg m^2")
    if not np.allclose(mat, mat.T, atol=1e-12 * max(1.0, np.abs(mat).max())):
        raise ModelError(f"{where}: inertia matrix must be symmetric")
    if strict and (problem := inertia_problem(mat, where)):
        raise ModelError(problem)
    return mat


def inertia_problem(mat, where: str) -> str | None:
    """Why a finite symmetric inertia matrix is no real mass distribution (not positive
    semi-definite, or principal moments breaking the triangle inequality), or None."""
    eig = np.linalg.eigvalsh(mat)
    tol = 1e-9 * max(1e-12, np.abs(eig).max())
    if eig.min() < -tol:
        return f"{where}: inertia must be positive semi-definite (eigenvalues {eig})"
    a, b, c = eig
    if a + b < c - tol or a + c < b - tol or b + c < a - tol:
        return f"{where}: principal moments {eig} violate the triangle inequality (I1 + I2 >= I3)"
    return None


@dataclass
class RigidBody(Tracked):
    """Mass, centre of mass and inertia about the centre of mass, in a given frame."""

    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    strict: bool = field(default=True, repr=False, compare=False)  # False: see inertia_matrix

    def __post_init__(self):
        self.mass = _real(self.mass, "mass")
        rule = bounds("body")["mass"]
        if not np.isfinite(self.mass) or not meets_bound(self.mass, rule):
            raise ModelError(f"mass: must be a finite number {bound_text(rule)} (got {self.mass})")
        within(self.mass, "mass", lim.MAX_MASS, " kg")
        self.com = _vec3(self.com, "com")
        within(self.com, "com", lim.MAX_LENGTH, " m")
        self.inertia = inertia_matrix(self.inertia, "inertia", strict=self.strict)

    @property
    def is_empty(self) -> bool:
        return self.mass == 0.0 and not np.any(self.inertia)

    def pseudo_inertia(self) -> np.ndarray:
        """Second-moment matrix ``J = int h h^T dm`` (4x4) with homogeneous h: the rigid
        body's contribution to the 4x4 Lagrangian (Book; thesis eq. 2.28 without the 1/2)."""
        m, c, ic = self.mass, self.com, self.inertia
        second = 0.5 * np.trace(ic) * np.eye(3) - ic + m * np.outer(c, c)
        out = np.zeros((4, 4))
        out[:3, :3] = second
        out[:3, 3] = out[3, :3] = m * c
        out[3, 3] = m
        return out

    @classmethod
    def from_second_moments(cls, J, strict=True):
        """The rigid body whose second-moment matrix ``int h h^T dm`` (4x4) is J."""
        m = float(J[3, 3])
        c = np.asarray(J[:3, 3], float) / m if m > 0 else np.zeros(3)  # a massless body may still have inertia
        second = np.asarray(J[:3, :3], float) - m * np.outer(c, c)
        inertia = np.trace(second) * np.eye(3) - second
        if not strict and np.all(np.isfinite(inertia)) and inertia_problem(inertia, "") is None:
            strict = True  # implausible parts merged (through fixed joints) into a real body
        return cls(m, c, inertia, strict=strict)

    def spatial_inertia_origin(self):
        """(mass, first moment m*c, inertia about the frame origin) for Newton-Euler."""
        m, c = self.mass, self.com
        i_o = self.inertia + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        return m, m * c, i_o


@dataclass
class Beam(Tracked):
    """A uniform Euler-Bernoulli beam: the flexible part of a link.

    Revolute link: the beam lies along the link frame's x axis and bends along local y
    (``EI[0]``, ``modes['y']``) and local z (``EI[1]``, ``modes['z']``), twisting about x.
    Prismatic link: the beam slides along the joint axis (local z); its first transverse
    direction is local x (``EI[0]``, ``modes['y']``), the second local y (``EI[1]``,
    ``modes['z']``); ``length`` is the total length l0 of the translating beam, of which
    the joint variable is the part outside the hub.
    """

    length: float
    mass_per_length: float
    EI: tuple = (0.0, 0.0)
    GJ: float = 0.0
    polar_inertia_per_length: float = 0.0
    damping: float = 0.0
    shapes: str = "clamped_free"
    modes: dict = field(default_factory=lambda: {"y": 1, "z": 1, "torsion": 0})
    elements: int = 0
    stiffening: bool = True  # geometric stiffening (second-order axial shortening); False: first-order model

    def __post_init__(self):
        if not isinstance(self.stiffening, (bool, np.bool_)):
            raise ModelError(f"beam.stiffening: must be true or false (got {self.stiffening!r})")
        self.stiffening = bool(self.stiffening)
        self.length = _real(self.length, "beam.length")
        self.mass_per_length = _real(self.mass_per_length, "beam.mass_per_length")
        rules = bounds("beam")
        for name in ("length", "mass_per_length"):
            val = getattr(self, name)
            if not (np.isfinite(val) and meets_bound(val, rules[name])):
                raise ModelError(f"beam.{name}: must be {bound_text(rules[name])} (got {val})")
        if not lim.MIN_BEAM_LENGTH <= self.length <= lim.MAX_LENGTH:
            raise ModelError(f"beam.length: {self.length:g} m is outside the supported range "
                             f"[{lim.MIN_BEAM_LENGTH:g}, {lim.MAX_LENGTH:g}] m (README, Limits)")
        if not lim.MIN_MASS_PER_LENGTH <= self.mass_per_length <= lim.MAX_MASS_PER_LENGTH:
            raise ModelError(f"beam.mass_per_length: {self.mass_per_length:g} kg/m is outside the supported range "
                             f"[{lim.MIN_MASS_PER_LENGTH:g}, {lim.MAX_MASS_PER_LENGTH:g}] kg/m (README, Limits)")
        ei = _floats(self.EI, "beam.EI", "[EI_y, EI_z] or one number").reshape(-1)
        if ei.size == 1:
            ei = np.repeat(ei, 2)
        if ei.size != 2 or not np.all(np.isfinite(ei)) or not meets_bound(ei, rules["EI"]):
            raise ModelError(f"beam.EI: give two finite stiffnesses {bound_text(rules['EI'])} [EI_y, EI_z]")
        self.EI = (float(ei[0]), float(ei[1]))
        within(ei, "beam.EI", lim.MAX_STIFFNESS, " N m^2")
        largest = {"GJ": (lim.MAX_STIFFNESS, " N m^2"), "polar_inertia_per_length": (lim.MAX_POLAR_INERTIA, " kg m"),
                   "damping": (lim.MAX_DAMPING_RATIO, "")}
        for name, (limit, unit) in largest.items():
            val = _real(getattr(self, name), f"beam.{name}")
            if not np.isfinite(val) or not meets_bound(val, rules[name]):
                raise ModelError(f"beam.{name}: must be a finite number {bound_text(rules[name])} (got {val})")
            within(val, f"beam.{name}", limit, unit)
            setattr(self, name, val)
        if not isinstance(self.shapes, str) or self.shapes not in SHAPE_KINDS:
            raise ModelError(f"beam.shapes: unknown '{self.shapes}'; use one of {', '.join(SHAPE_KINDS)}")
        modes = {"y": 0, "z": 0, "torsion": 0}
        if self.modes is not None and not isinstance(self.modes, dict):
            raise ModelError(f"beam.modes: expected a mapping {{y: n, z: n, torsion: n}} (got {type(self.modes).__name__})")
        for key, val in dict(self.modes or {}).items():
            if key not in modes:
                raise ModelError(f"beam.modes: unknown key '{key}'; allowed: y, z, torsion")
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or not meets_bound(val, rules["modes"]):
                raise ModelError(f"beam.modes.{key}: must be an integer {bound_text(rules['modes'])} (got {val!r})")
            most = lim.MAX_POLYNOMIAL_MODES if self.shapes == "polynomial" else lim.MAX_MODES
            if self.shapes != "finite_elements" and val > most:
                why = " (polynomial shapes make M singular beyond that; use clamped_free)" if most < lim.MAX_MODES else ""
                raise ModelError(f"beam.modes.{key}: {val} modes; {self.shapes} beams support at most {most}{why}")
            modes[key] = int(val)
        self.modes = modes
        elements = _real(self.elements, "beam.elements")
        if not elements.is_integer():
            raise ModelError(f"beam.elements: must be a whole number (got {elements!r})")
        self.elements = int(elements)
        if self.shapes == "finite_elements":
            if self.elements < 1:
                raise ModelError("beam.elements: finite_elements needs elements >= 1")
            if self.elements > lim.MAX_ELEMENTS:
                raise ModelError(f"beam.elements: {self.elements} elements; at most {lim.MAX_ELEMENTS} are supported")
        for key, ei_val in (("y", self.EI[0]), ("z", self.EI[1])):
            if self.n_dofs(key) and ei_val <= 0:
                raise ModelError(
                    f"beam.EI: direction {key} has modes but zero stiffness; give EI: [EI_y, EI_z] or set modes.{key}: 0"
                )
        if self.n_dofs("torsion") and (self.GJ <= 0 or self.polar_inertia_per_length <= 0):
            raise ModelError("beam.GJ: torsion modes need GJ > 0 and polar_inertia_per_length > 0")

    def n_dofs(self, direction: str) -> int:
        """Number of coordinates in a direction ('y', 'z' or 'torsion')."""
        count = self.modes[direction]
        if self.shapes == "finite_elements" and count:
            # bending: deflection and slope at each free node; torsion: twist at each node
            return self.elements * (2 if direction != "torsion" else 1)
        return count

    @property
    def nf(self) -> int:
        return sum(self.n_dofs(k) for k in ("y", "z", "torsion"))


@dataclass
class Placement(Tracked):
    """A joint placed like a URDF joint instead of by a DH row.

    The link's own frame is reached from the previous link's frame by the fixed transform
    ``Trans(xyz) Rz(yaw) Ry(pitch) Rx(roll)`` (URDF's ``origin``) followed by the joint
    motion about (revolute) or along (prismatic) the unit vector ``axis`` of that frame.
    """

    xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rpy: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))

    def __post_init__(self):
        self.xyz = _vec3(self.xyz, "placement.xyz")
        within(self.xyz, "placement.xyz", lim.MAX_LENGTH, " m")
        self.rpy = _vec3(self.rpy, "placement.rpy")
        within(self.rpy, "placement.rpy", lim.MAX_ANGLE, " rad")
        self.axis = unit_vector(_vec3(self.axis, "placement.axis"), "placement.axis")


@dataclass
class Drive(Tracked):
    """The drive of a joint: a motor of rotor inertia ``rotor_inertia`` (kg m^2) turning
    ``gear_ratio`` times faster than the joint, with viscous and Coulomb friction on the motor
    side. Everything is seen from the joint (link side): the rotor's inertia ``B = n^2 J``, the
    motor's viscous friction ``n^2 b`` and its Coulomb friction ``|n| c``; a joint torque is the
    gearbox's output torque, ``n`` times the motor's.

    Rigid transmission (no ``stiffness``): the rotor adds ``B`` to the joint's armature and the
    frictions to the joint's (:meth:`reflected`).

    Elastic joint (``stiffness`` k in N m/rad, ``damping`` d in N m s/rad; Spong's reduced model):
    the motor is a coordinate of its own, ``theta = motor angle / n``, behind a torsional spring
    and damper; the spring pulls the link with ``k (theta - q) + d (theta_dot - q_dot)``, the
    joint torque and the motor's friction act on ``theta``, and the rotor's kinetic energy is
    ``B theta_dot^2 / 2`` (its coupling with the link's rotation left out) unless ``gyroscopic``
    (the complete model: the rotor, coaxial with the joint and carried by the preceding link, adds
    ``n J theta_dot (z . omega)``, omega the carrying link's angular velocity, z the joint axis;
    :mod:`flexman.dynamics.motors`). The link's own ``armature``, ``viscous`` and ``coulomb`` stay
    on the link side in both cases.

    ``torque_limit`` (N m, motor side; None: none): the most the motor delivers; the joint torque
    is saturated at ``|n| torque_limit`` (:attr:`joint_torque_limit`) wherever it is applied."""

    gear_ratio: float = 1.0
    rotor_inertia: float = 0.0
    viscous: float = 0.0
    coulomb: float = 0.0
    stiffness: float | None = None
    damping: float = 0.0
    torque_limit: float | None = None
    gyroscopic: bool = False

    def __post_init__(self):
        if not isinstance(self.gyroscopic, (bool, np.bool_)):
            raise ModelError(f"gyroscopic: must be true or false (got {self.gyroscopic!r})")
        self.gyroscopic = bool(self.gyroscopic)
        if self.gyroscopic and self.stiffness is None:
            raise ModelError("gyroscopic: the rotor's coupling is a term of the elastic joint's complete model; give "
                             "stiffness (N m/rad) too, or leave gyroscopic out for a rigid transmission")
        for key in ("gear_ratio", "rotor_inertia", "viscous", "coulomb", "damping") + (
                ("stiffness",) if self.stiffness is not None else ()):
            value = _real(getattr(self, key), key)
            if not np.isfinite(value):
                raise ModelError(f"{key}: must be a finite number")
            setattr(self, key, value)
        if not 0.0 < abs(self.gear_ratio) <= 1e5:
            raise ModelError(f"gear_ratio: must be a non-zero number of at most 1e5 in size (motor turns per "
                             f"joint turn; got {self.gear_ratio:g})")
        for key in ("rotor_inertia", "viscous", "coulomb", "damping"):
            if getattr(self, key) < 0.0:
                raise ModelError(f"{key}: must be >= 0 (got {getattr(self, key):g})")
        within(self.rotor_inertia * self.gear_ratio ** 2, "rotor_inertia (reflected: gear_ratio^2 x rotor_inertia)",
               lim.MAX_INERTIA, "")
        if self.torque_limit is not None:
            limit = _real(self.torque_limit, "torque_limit")
            if not (np.isfinite(limit) and limit > 0.0):
                raise ModelError(f"torque_limit: the motor's torque limit must be a number > 0 N m (got {limit:g}); "
                                 "leave torque_limit out for an unlimited drive")
            within(limit * abs(self.gear_ratio), "torque_limit (at the joint: |gear_ratio| x "
                   "torque_limit)", lim.MAX_FORCE, " N m")
            self.torque_limit = limit
        if self.stiffness is None:
            if self.damping:
                raise ModelError("damping: the damper of an elastic joint needs its spring; give stiffness (N m/rad) "
                                 "too, or leave damping out for a rigid transmission")
            return
        if not self.stiffness > 0.0:
            raise ModelError(f"stiffness: an elastic joint's spring must be > 0 N m/rad (got {self.stiffness:g}); "
                             "leave stiffness out for a rigid transmission")
        within(self.stiffness, "stiffness", lim.MAX_STIFFNESS, " N m/rad")
        within(self.damping, "damping", lim.MAX_FRICTION, " N m s/rad")
        if not self.rotor_inertia > 0.0:
            raise ModelError("rotor_inertia: an elastic joint's motor needs a rotor inertia > 0 kg m^2 (its "
                             "coordinate would move no mass); give the rotor's inertia")

    @property
    def elastic(self) -> bool:
        """Whether the drive is an elastic joint (a motor coordinate behind a spring)."""
        return self.stiffness is not None

    def reflected(self) -> tuple:
        """(armature, viscous, coulomb) of the motor seen from the joint: ``n^2 J, n^2 b, |n| c``."""
        n = self.gear_ratio
        return n * n * self.rotor_inertia, n * n * self.viscous, abs(n) * self.coulomb

    @property
    def joint_torque_limit(self) -> float:
        """The joint torque the drive can apply, ``|n| torque_limit`` N m (inf without a limit)."""
        return np.inf if self.torque_limit is None else abs(self.gear_ratio) * self.torque_limit

    def key(self) -> tuple:
        """Every field, for content keys and comparisons."""
        return (self.gear_ratio, self.rotor_inertia, self.viscous, self.coulomb, self.stiffness, self.damping,
                self.torque_limit, self.gyroscopic)


@dataclass
class Link(Tracked):
    """One DH row (or one URDF-style placement) with its joint, rigid body, optional hub
    and optional flexible beam.

    ``body`` is expressed in the link's own DH frame; on a flexible link it rides on the
    deflected distal frame (after E). ``hub`` is a rigid joint mass (thesis S transform)
    in the undeformed frame after A (it does not deflect).
    """

    joint: str = "revolute"
    a: float = 0.0
    alpha: float = 0.0
    d: float = 0.0
    theta: float = 0.0
    body: RigidBody = field(default_factory=RigidBody)
    hub: RigidBody | None = None
    beam: Beam | None = None
    armature: float = 0.0
    viscous: float = 0.0
    coulomb: float = 0.0
    limits: tuple | None = None
    name: str = ""
    placement: Placement | None = None
    parent: int | str | None = None  # None: the previous link (the base for the first); see model/tree.py
    drive: Drive | None = None  # a rigid transmission (rotor and motor friction seen at the joint) or an elastic joint
    joint_name: str = ""  # the joint's own name (a URDF joint's): names its coordinate; "" for q<i>

    @property
    def rigid_drive(self) -> bool:
        """Whether a drive's rotor and friction add to the joint's (a rigid transmission)."""
        return self.drive is not None and not self.drive.elastic

    @property
    def elastic_drive(self) -> bool:
        """Whether the joint is elastic (its drive has a motor coordinate of its own)."""
        return self.drive is not None and self.drive.elastic

    @property
    def joint_armature(self) -> float:
        """The armature the dynamics use: the link's own plus a rigid drive's reflected rotor inertia
        (an elastic joint's rotor is on its motor coordinate)."""
        return self.armature + (self.drive.reflected()[0] if self.rigid_drive else 0.0)

    @property
    def joint_viscous(self) -> float:
        return self.viscous + (self.drive.reflected()[1] if self.rigid_drive else 0.0)

    @property
    def joint_coulomb(self) -> float:
        return self.coulomb + (self.drive.reflected()[2] if self.rigid_drive else 0.0)

    def __post_init__(self):
        if self.drive is not None and not isinstance(self.drive, Drive):
            raise ModelError(f"drive: expected a Drive or None (got {type(self.drive).__name__})")
        if self.drive is not None and self.drive.gyroscopic and self.joint != "revolute":
            raise ModelError("drive.gyroscopic: the complete model's rotor turns about a revolute joint's axis; a "
                             "prismatic joint's motor is not coaxial with it, so leave gyroscopic out")
        for key, kind in (("body", RigidBody), ("hub", RigidBody), ("beam", Beam)):
            value = getattr(self, key)
            if not isinstance(value, kind) and not (key != "body" and value is None):
                raise ModelError(f"{key}: expected a {kind.__name__}{'' if key == 'body' else ' or None'} "
                                 f"(got {type(value).__name__})")
        if not isinstance(self.joint, str) or self.joint not in JOINT_TYPES:
            raise ModelError(f"joint: unknown type '{self.joint}'; use revolute or prismatic")
        for key in ("a", "alpha", "d", "theta", "armature", "viscous", "coulomb"):
            val = _real(getattr(self, key), key)
            if not np.isfinite(val):
                raise ModelError(f"{key}: must be a finite number")
            setattr(self, key, val)
        for key, rule in bounds("link").items():
            if not meets_bound(getattr(self, key), rule):
                raise ModelError(f"{key}: must be {bound_text(rule)}")
        largest = {"a": (lim.MAX_LENGTH, " m"), "d": (lim.MAX_LENGTH, " m"), "alpha": (lim.MAX_ANGLE, " rad"),
                  "theta": (lim.MAX_ANGLE, " rad"), "armature": (lim.MAX_INERTIA, ""),
                  "viscous": (lim.MAX_FRICTION, ""), "coulomb": (lim.MAX_FRICTION, "")}
        for key, (limit, unit) in largest.items():
            within(getattr(self, key), key, limit, unit)
        if self.limits is not None:
            if not isinstance(self.limits, (list, tuple, np.ndarray)) or np.ndim(self.limits) != 1 or len(self.limits) != 2:
                raise ModelError(f"limits: expected [lower, upper] (got {self.limits!r:.40})")
            lo, hi = (_real(v, "limits") for v in self.limits)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ModelError(f"limits: expected finite [lower, upper] with lower < upper (got {self.limits})")
            if self.joint == "revolute":
                within([lo, hi], "limits", lim.MAX_ANGLE, " rad")
            else:
                within([lo, hi], "limits", lim.MAX_LENGTH, " m")
            self.limits = (lo, hi)
        if not isinstance(self.joint_name, str):
            raise ModelError(f"joint_name: expected text (got {type(self.joint_name).__name__})")
        ref = self.parent
        if not (ref is None or isinstance(ref, str) or (isinstance(ref, numbers.Integral) and not isinstance(ref, bool))):
            raise ModelError(f"parent: expected a link name, a link index or 'base' (got {type(ref).__name__})")
        if self.placement is not None and any((self.a, self.alpha, self.d, self.theta)):
            raise ModelError("placement: give either DH values (a, alpha, d, theta) or a placement, not both")

    @property
    def is_flexible(self) -> bool:
        return self.beam is not None and self.beam.nf > 0


def _check_sliding_beam(link, where: str) -> None:
    """A translating beam's outside length is q + d: it must stay in [MIN_BEAM_LENGTH, length]
    over the joint range (at 0 the beam has no flexible part and its mass matrix is singular;
    near 0 its tip loads per unit length overflow)."""
    lo, hi = link.limits if link.limits is not None else (0.0, 0.0)
    shortest = lim.MIN_BEAM_LENGTH
    if not shortest <= link.d <= link.beam.length:
        raise ModelError(f"{where}.d: a flexible prismatic link needs {shortest:g} <= d <= beam.length = "
                         f"{link.beam.length:g} m (d is the beam's length outside its hub at q = 0; got {link.d:g})")
    if link.limits is not None and not (lo + link.d >= shortest and hi + link.d <= link.beam.length * (1 + 1e-12)):
        raise ModelError(f"{where}.limits: the beam's outside length q + d must stay in [{shortest:g}, "
                         f"{link.beam.length:g}] m; with d = {link.d:g} the limits must lie in "
                         f"[{shortest - link.d:g}, {link.beam.length - link.d:g}]")


#: derived constants dropped by ``Robot.clear_derived`` kept process-wide (least recently
#: dropped go first): (what, content key) -> value
RECENT_DROPPED = 8
_RECENT: OrderedDict = OrderedDict()


class CoordinateSlices:
    """``joint_index``, ``flex_index`` and ``motor_index`` of a model whose coordinates are its
    joints, then its flexible coordinates, then its motors (from ``n_joints``, ``nf``, ``nq``)."""

    @property
    def joint_index(self) -> slice:
        return slice(0, self.n_joints)

    @property
    def flex_index(self) -> slice:
        return slice(self.n_joints, self.n_joints + self.nf)

    @property
    def motor_index(self) -> slice:
        return slice(self.n_joints + self.nf, self.nq)


@dataclass
class Robot(Tracked, CoordinateSlices):
    """A manipulator: a serial chain or a tree of links (``Link.parent``, :mod:`.tree`), kept in
    depth-first order. The dynamics methods accept leading batch dimensions."""

    links: list
    name: str = "robot"
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    dh: str = "standard"
    payload: RigidBody | None = None
    frames: dict = field(default_factory=dict)  # named fixed frames: {name: (link, 4x4 transform)}, see resolve_frames
    end_effector: str | None = None  # the default end effector: a link's or a named frame's name; None: the last link

    def __repr__(self):
        """One line: name, joints, flexible links and coordinates; the data through the fields
        (``robot.links``) and ``fm.save``."""
        flexible = sum(1 for link in self.links if link.beam is not None)
        kind = "tree" if any(link.parent is not None for link in self.links) else "chain"
        return (f"<{type(self).__name__} {self.name!r}: {self.n_joints} joints ({kind}), {flexible} flexible link"
                f"{'' if flexible == 1 else 's'}, nq = {self.nq}>")

    __str__ = __repr__

    def __post_init__(self):
        if not isinstance(self.links, (list, tuple)) or not all(isinstance(link, Link) for link in self.links):
            raise ModelError("links: expected a list of Link objects")
        if not self.links:
            raise ModelError("links: a robot needs at least one link")
        if self.payload is not None and not isinstance(self.payload, RigidBody):
            raise ModelError(f"payload: expected a RigidBody or None (got {type(self.payload).__name__})")
        if not isinstance(self.dh, str) or self.dh not in DH_CONVENTIONS:
            raise ModelError(f"dh: unknown convention '{self.dh}'; use standard or modified")
        if len(self.links) > lim.MAX_LINKS:
            raise ModelError(f"links: {len(self.links)} links; at most {lim.MAX_LINKS} are supported (README, Limits)")
        frames = self.frames.items() if isinstance(self.frames, dict) else ()
        tree.check_names(self.links, [(n, v[0]) for n, v in frames if isinstance(v, (tuple, list)) and v])
        order = list(range(len(self.links)))
        if any(link.parent is not None for link in self.links):
            order, parents = tree.depth_first(self.links, tree.resolve(self.links))
            self.links = [self.links[i] for i in order]
            for link, parent in zip(self.links, tree.canonical(parents)):
                link.parent = parent
        self.frames = resolve_frames(self.frames, self.links, order)
        self.end_effector = check_end_effector(self.end_effector, self.links, self.frames)
        self.gravity = _vec3(self.gravity, "gravity")
        within(self.gravity, "gravity", lim.MAX_GRAVITY, " m/s^2")
        nq = len(self.links) + sum(link.beam.nf for link in self.links if link.beam is not None) + self.n_motors
        if nq > lim.MAX_NQ:
            raise ModelError(f"links: {nq} coordinates in all; at most {lim.MAX_NQ} are supported "
                             "(fewer modes or elements; README, Limits)")
        for i, link in enumerate(self.links):
            if link.beam is not None and link.joint == "prismatic" and link.beam.n_dofs("torsion"):
                raise ModelError(f"links[{i}].beam.modes.torsion: a sliding (prismatic) beam bends only; set torsion: 0")
            if link.beam is not None and link.joint == "prismatic" and link.placement is not None:
                raise ModelError(
                    f"links[{i}].beam: a flexible prismatic link needs DH placement (a sliding beam along z); "
                    "use a, alpha, d, theta for this link"
                )
            if link.beam is not None and link.joint == "prismatic" and self.dh == "standard":
                if link.a != 0.0 or link.alpha != 0.0:
                    raise ModelError(
                        f"links[{i}].beam: a flexible prismatic link needs a = 0 and alpha = 0 "
                        "(standard DH) so that the beam slides along its frame's z axis"
                    )
            if link.is_flexible and link.joint == "prismatic":
                _check_sliding_beam(link, f"links[{i}]")
        if not isinstance(self, MimicRobot):  # (a mimic robot checks once its mimic map is checked)
            self._check_coordinate_names()

    def _check_coordinate_names(self) -> None:
        """Coordinate names must be distinct (joint names are given, flexible ones made from them)."""
        names = self.coordinate_names
        self.__dict__.pop("flex_layout", None)  # (built again when asked: links may still be edited)
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise ModelError(f"links: the coordinate name '{twice}' is used twice (a joint_name equal to another "
                             "joint's or to a flexible coordinate's name); give each joint a name of its own")

    # ----- coordinates -------------------------------------------------------------
    @property
    def n_joints(self) -> int:
        return len(self.links)

    @property
    def joint_links(self) -> tuple:
        """The link of each joint coordinate, in order (every link; a robot with mimic joints: the
        independent ones), e.g. to tell revolute coordinates from prismatic ones."""
        return tuple(self.links)

    @property
    def parents(self) -> tuple:
        """Index of each link's parent link, -1 for the base (links in depth-first order)."""
        return tree.parent_indices(self.links)

    @property
    def is_serial(self) -> bool:
        return all(link.parent is None for link in self.links)

    @cached_property
    def flex_layout(self) -> list:
        """For each link, a list of (direction, count) in coordinate order."""
        out = []
        for link in self.links:
            entries = []
            if link.beam is not None:
                for key in ("y", "z", "torsion"):
                    n = link.beam.n_dofs(key)
                    if n:
                        entries.append((key, n))
            out.append(entries)
        return out

    @property
    def nf(self) -> int:
        return sum(n for entries in self.flex_layout for _, n in entries)

    @property
    def nq(self) -> int:
        return self.n_joints + self.nf + self.n_motors

    # ----- motor coordinates of elastic joints: after the flexible ones, in link order -----
    @property
    def motor_links(self) -> tuple:
        """Indices of the links whose joints are elastic (a drive with ``stiffness``), in order:
        each has a motor coordinate (link side, ``theta = motor angle / gear_ratio``)."""
        return tuple(i for i, link in enumerate(self.links) if link.elastic_drive)

    @property
    def n_motors(self) -> int:
        return len(self.motor_links)

    @property
    def torque_limits(self):
        """The drives' limits on the applied joint torques (n_joints,), N m at the joint
        (``|gear_ratio| x torque_limit``, inf for a joint whose drive gives none), or None when no
        drive has a limit. Every simulation loop and the FMU saturate the applied torque there."""
        limits = np.array([np.inf if lk.drive is None else lk.drive.joint_torque_limit for lk in self.joint_links])
        return limits if np.isfinite(limits).any() else None

    @property
    def actuated(self) -> tuple:
        """The coordinate each joint torque acts on, one per joint: the joint's own, or its motor
        coordinate for an elastic joint (the columns of the input matrix S)."""
        motor = {i: self.n_joints + self.nf + k for k, i in enumerate(self.motor_links)}
        return tuple(motor.get(i, i) for i in range(self.n_joints))

    def link_flex_slice(self, i: int) -> slice:
        start = self.n_joints + sum(n for ent in self.flex_layout[:i] for _, n in ent)
        return slice(start, start + sum(n for _, n in self.flex_layout[i]))

    @property
    def coordinate_names(self) -> list:
        """A name per coordinate: a joint's ``joint_name`` (a URDF robot's joint names) or
        ``q<k>``; a flexible link's coordinates ``ey<i>_<k>``, ``ez<i>_<k>``, ``t<i>_<k>`` (finite
        elements: ``wy``/``sy`` nodal deflections and slopes) after the link's index i, or, on a
        link whose joint is named, ``<link name>_ey<k>`` ... after the link's name."""
        names = [link.joint_name or f"q{k + 1}" for k, link in enumerate(self.joint_links)]
        for i, entries in enumerate(self.flex_layout):
            link = self.links[i]
            fem = link.beam is not None and link.beam.shapes == "finite_elements"
            prefix, at = (f"{link.name}_", "") if link.joint_name and link.name else ("", str(i + 1))
            for key, n in entries:
                tag = {"y": "y", "z": "z", "torsion": "t"}[key]
                for k in range(n):
                    if fem and key != "torsion":
                        kind = "w" if k % 2 == 0 else "s"  # nodal deflection / slope
                        names.append(f"{prefix}{kind}{tag}{at}{'_' if at else ''}{k // 2 + 2}")
                    elif fem:
                        names.append(f"{prefix}t{at}{'_' if at else ''}{k + 2}")
                    else:
                        names.append(f"{prefix}e{tag}{at}{'_' if at else ''}{k + 1}")
        return names + [f"{names[i]}_motor" for i in self.motor_links]

    @property
    def is_rigid(self) -> bool:
        return self.nf == 0

    def total_mass(self) -> float:
        m = sum(l.body.mass + (l.hub.mass if l.hub else 0.0) for l in self.links)
        m += sum(l.beam.length * l.beam.mass_per_length for l in self.links if l.beam is not None)
        return m + (self.payload.mass if self.payload else 0.0)

    # ----- derived constants: one cache, keyed by the content ------------------------
    def content_key(self) -> tuple:
        """A hashable key of everything the robot holds (links, bodies, hubs, beams, placements,
        payload, gravity, convention, name), read from the current values: a robot edited in
        place, even inside an array, gets a new key."""
        frames = tuple((k, i, _array_key(T)) for k, (i, T) in self.frames.items()) if self.frames else ()
        return (self.name, self.dh, _array_key(self.gravity), _body_key(self.payload),
                tuple(_link_key(link) for link in self.links), self.end_effector) + frames

    def derived(self, what: str, build):
        """``build(self)``, cached under ``what`` for the robot's current :meth:`content_key`:
        the constants that the algorithms derive from a robot (its numeric model, the rigid-arm
        recursion's constants...) are built once and rebuilt when the robot changes."""
        cache = self.__dict__.get("_derived")
        if cache is None:
            cache = self.__dict__["_derived"] = {}
        hit = cache.get(what)
        if hit is not None and hit[2] == EDITS[0]:  # no model object edited since the entry was checked
            return hit[1]
        key = self.content_key()
        if hit is not None and hit[0] == key:
            cache[what] = (key, hit[1], EDITS[0])
            return hit[1]
        try:
            found = _RECENT.get((what, key), _RECENT)
        except TypeError:  # an unhashable key part
            found = _RECENT
        value = build(self) if found is _RECENT else found
        cache[what] = (key, value, EDITS[0])
        return value

    def with_derived(self, what: str, value) -> "Robot":
        """A shallow copy of the robot (links shared) whose ``derived(what, ...)`` is ``value``
        as long as its content is unchanged: for callers that substitute a derived model."""
        import copy

        out = copy.copy(self)
        cache = dict(self.__dict__.get("_derived") or {})
        cache[what] = (self.content_key(), value, EDITS[0])
        out.__dict__["_derived"] = cache
        out.__dict__["backend"] = "numeric"  # the substitute is what counts, not a compiled model
        out.__dict__.pop("_fast", None)
        return out

    def with_end_effector(self, name) -> "Robot":
        """A shallow copy of the robot (links shared) whose default end effector is ``name`` (a
        link's or a named frame's name, e.g. a URDF's ``tool0``; None: the last link)."""
        import copy

        out = copy.copy(self)
        out.__dict__.pop("_derived", None)
        out.__dict__.pop("_fast", None)
        out.end_effector = check_end_effector(name, self.links, self.frames)
        return out

    def clear_derived(self, keep_recent: bool = False) -> None:
        """Drop every cached derived constant (they are rebuilt on demand). ``keep_recent``: keep
        them process-wide under their content key, the last :data:`RECENT_DROPPED` of them, so a
        loaded robot's first run reuses the model its load-time check built while a batch of
        loaded robots does not keep one model each (only for constants ``derived`` built: a
        substituted one, :meth:`with_derived`, must not reach other robots of that content)."""
        dropped = self.__dict__.pop("_derived", None) or {}
        self.__dict__.pop("_fast", None)
        if not keep_recent:
            return
        for what, (key, value, _) in dropped.items():
            try:
                _RECENT[(what, key)] = value
            except TypeError:  # an unhashable key part: nothing to keep
                continue
            _RECENT.move_to_end((what, key))
        while len(_RECENT) > RECENT_DROPPED:
            _RECENT.popitem(last=False)

    # ----- dynamics (delegated to the dynamics layer through the engine slots) -------
    @staticmethod
    def _dynamics():
        return engine.require("dynamics")

    # The four below run in the robot's compiled model when it has one (see _fast_model) and
    # their inputs are float64 arrays; else (complex or symbolic input, external wrenches) by
    # the numeric recursions. Both give the same numbers to round-off.
    def mass_matrix(self, q):
        fast = self._fast_model()
        if fast is not None and (real := _real_inputs(q)) is not None:
            return fast.mass_matrix(*real)
        return self._dynamics().mass_matrix(self, q)

    def bias_forces(self, q, qd):
        fast = self._fast_model()
        if fast is not None and (real := _real_inputs(q, qd)) is not None:
            return fast.bias_forces(*real)
        return self._dynamics().bias_forces(self, q, qd)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None):
        fast = self._fast_model()
        if fast is not None and f_ext is None and (real := _real_inputs(q, qd, qdd)) is not None:
            return fast.inverse_dynamics(*real)
        return self._dynamics().inverse_dynamics(self, q, qd, qdd, f_ext=f_ext)

    def forward_dynamics(self, q, qd, tau, f_ext=None):
        fast = self._fast_model()
        if fast is not None and f_ext is None and (real := _real_inputs(q, qd, tau)) is not None:
            return fast.forward_dynamics(*real)
        return self._dynamics().forward_dynamics(self, q, qd, tau, f_ext=f_ext)

    def numeric(self) -> "Robot":
        """The robot (a shallow copy sharing its links and derived constants) whose dynamics
        methods run the recursions only: what ``backend="numeric"`` simulates."""
        import copy

        if self.backend == "numeric":
            return self
        out = copy.copy(self)
        out.__dict__.pop("_fast", None)
        out.__dict__["backend"] = "numeric"  # a new object, same content: not an edit
        return out

    #: which code the dynamics methods run (``robot.backend = ...``; None: ``FLEXMAN_BACKEND``, read
    #: when the robot is checked after an edit, else "auto"): "auto" the compiled model when it is
    #: built already (this process or the disk cache), "compiled" builds it, "numeric" the
    #: recursions only
    backend = None

    def _fast_model(self):
        """The compiled model the dynamics methods use, or None. Valid while no model object was
        edited (:mod:`.tracking`): one comparison per call; after an edit anywhere, the content
        key says whether this robot changed, and the cache is asked again only if it did (or a
        model was built since)."""
        hit = self.__dict__.get("_fast")
        if hit is not None and hit[0] == EDITS[0]:
            return hit[4]
        return self._recheck_fast_model(hit)

    def _recheck_fast_model(self, hit):
        setting = _backend_setting()
        backend = self.backend or setting
        if backend not in ("auto", "compiled", "numeric"):
            raise ValueError(f"backend: unknown {backend!r}; use 'auto', 'compiled' or 'numeric'")
        key, model, built = None, None, BUILT[0]
        if backend != "numeric":
            key = self.content_key()
            if hit is not None and hit[2] == (key, backend) and (hit[4] is not None or hit[3] == built):
                model = hit[4]
            else:
                cache = engine.require("codegen").modelcache
                model = cache.compiled_model(self) if backend == "compiled" else cache.existing_model(self)
        self.__dict__["_fast"] = (EDITS[0], setting, (key, backend), built, model)
        return model

    def inverse_dynamics_derivatives(self, q, qd, qdd, backend=None):
        """Partials of the generalized forces: ``(dq, dqd, dqdd)``, each (..., nq, nq) with
        ``dq[i, j] = d tau_i / d q_j`` and ``dqdd = M``. ``backend``: see :meth:`compiled`;
        "numeric" differentiates the recursions by the complex step (exact to round-off)."""
        fast = self._partials_model(backend)
        if fast is not None:
            return fast.inverse_dynamics_derivatives(q, qd, qdd)
        return self._dynamics().inverse_dynamics_derivatives(self, q, qd, qdd)

    def forward_dynamics_derivatives(self, q, qd, tau, backend=None):
        """Partials of the accelerations: ``(dq, dqd, dtau)`` with ``dq[i, j] = d qdd_i / d q_j``
        (..., nq, nq) and ``dtau = M^-1 S`` (..., nq, n_joints); ``backend`` as above."""
        fast = self._partials_model(backend)
        if fast is not None:
            return fast.forward_dynamics_derivatives(q, qd, tau)
        return self._dynamics().forward_dynamics_derivatives(self, q, qd, tau)

    def compiled(self, derivatives=False):
        """The robot's compiled model (generated C with the numeric API of a robot; built on first
        use and cached on disk, shared by every robot of the same structure): the fast route for
        loops of your own (``fast = robot.compiled(); fast.inverse_dynamics(q, qd, qdd)`` costs
        about a microsecond). ``derivatives``: the variant that also evaluates the partial
        derivatives in C (a build of its own, several times the inverse dynamics' code)."""
        return engine.require("codegen").modelcache.compiled_model(self, derivatives=derivatives)

    def _partials_model(self, backend):
        """The compiled model with partial derivatives that ``backend`` asks for, or None (numeric):
        "compiled" builds it, "auto" (the default, or ``FLEXMAN_BACKEND``) uses it when it is built
        already (this process or the disk cache), "numeric" never."""
        if backend is None:
            import os

            backend = os.environ.get("FLEXMAN_BACKEND", "").strip().lower() or "auto"
        if backend not in ("auto", "compiled", "numeric"):
            raise ValueError(f"backend: unknown {backend!r}; use 'auto', 'compiled' or 'numeric'")
        if backend == "numeric":
            return None
        # not kept on the robot (a compiled model cannot be copied or pickled with it): the model
        # cache keeps the loaded library, found again by the robot's key
        cache = engine.require("codegen").modelcache
        return cache.compiled_model(self, derivatives=True) if backend == "compiled" else \
            cache.existing_model(self, derivatives=True)

    def kinetic_energy(self, q, qd):
        return self._dynamics().kinetic_energy(self, q, qd)

    def potential_energy(self, q):
        return self._dynamics().potential_energy(self, q)

    def frame(self, q, link=-1, order=1):
        return self._dynamics().frame(self, q, link, order=order)

    def jacobian(self, q, link=-1, point=None, order=1):
        return self._dynamics().jacobian(self, q, link=link, point=point, order=order)

    def natural_frequencies(self, q=None, qd=None):
        """Natural frequencies (rad/s, ascending) about q at rest, or with qd about a steady
        motion at constant joint rates (flexible coordinates only, gyroscopic terms included)."""
        return engine.require("natural_frequencies")(self, q, qd=qd)

    def _repr_html_(self):
        """Notebook view: coordinates, masses, the DH table, the beams and a picture of the arm."""
        return engine.require("robot_html")(self)


def check_end_effector(name, links, frames):
    """``name`` when it names a link or a frame of the robot (or is None: the last link); else
    one line listing the names that may be given."""
    if name is None:
        return None
    known = [link.name for link in links if link.name] + list(frames)
    if not isinstance(name, str) or name not in known:
        shown = repr(name) if isinstance(name, str) else type(name).__name__
        raise ModelError(f"end_effector: {shown[:60]} is no link or frame of the robot; give one of "
                         f"{', '.join(known) or '(no names: name a link or add a frame)'}")
    return name


def resolve_frames(frames, links, order) -> dict:
    """Named fixed frames (URDF fixed joints, tool frames) as {name: (link index, 4x4)}: each is
    fixed in a link's distal frame (index -1: the base) by a rigid transform. ``frames`` maps
    names to (link, transform), the link given by name, by its index in the list as written
    (``order`` maps new positions to written ones) or as 'base' / -1."""
    if not isinstance(frames, dict):
        raise ModelError(f"frames: expected a mapping {{name: (link, 4x4 transform)}} (got {type(frames).__name__})")
    written = {old: new for new, old in enumerate(order)}
    link_names = [link.name for link in links]
    out = {}
    for name, value in frames.items():
        where = f"frames.{name}"
        if not isinstance(name, str) or not name:
            raise ModelError(f"frames: frame names must be non-empty text (got {name!r})")
        if name in link_names:
            raise ModelError(f"{where}: a link has this name already; give the frame another name")
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise ModelError(f"{where}: expected (link, 4x4 transform)")
        ref, T = value
        if isinstance(ref, str):
            if ref == "base":
                i = -1
            elif ref in link_names:
                i = link_names.index(ref)
            else:
                raise ModelError(f"{where}: no link is named '{ref}'; give a link's name, its index or 'base'")
        elif isinstance(ref, numbers.Integral) and not isinstance(ref, bool) and -1 <= int(ref) < len(links):
            i = -1 if int(ref) < 0 else written[int(ref)]
        else:
            raise ModelError(f"{where}: the link must be a link's name, its index or 'base' (got {ref!r})")
        T = _floats(T, where, "a 4x4 transform")
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ModelError(f"{where}: expected a finite 4x4 transform")
        R = T[:3, :3]
        if not (np.allclose(R @ R.T, np.eye(3), atol=1e-9) and np.linalg.det(R) > 0 and np.allclose(T[3], [0, 0, 0, 1])):
            raise ModelError(f"{where}: the transform must be rigid (a rotation and a translation)")
        within(T[:3, 3], where, lim.MAX_LENGTH, " m")
        out[name] = (i, T)
    return out


def _backend_setting() -> str:
    import os

    return os.environ.get("FLEXMAN_BACKEND", "").strip().lower() or "auto"


def _real_inputs(*arrays):
    """The inputs as compiled code takes them (float64 arrays), or None where one is not real
    numbers (complex, symbolic, text...: the recursions take it, or say what is wrong)."""
    for a in arrays:
        if a.__class__ is not np.ndarray or a.dtype is not _FLOAT64:
            break
    else:
        return arrays  # the common case: no conversion
    out = []
    for a in arrays:
        if isinstance(a, (bool, np.bool_, str, bytes)):
            return None
        try:
            a = np.asarray(a)
        except (TypeError, ValueError):
            return None
        if a.dtype.kind not in "fiu":  # complex, object (symbols), booleans, text
            return None
        out.append(a.astype(np.float64, copy=False))
    return out


_FLOAT64 = np.dtype(np.float64)


# ----- content keys (Robot.content_key) ---------------------------------------------------------
def _array_key(a):
    return a.tobytes() if type(a) is np.ndarray else np.asarray(a, dtype=float).tobytes()


def _body_key(b):
    return None if b is None else (b.mass, _array_key(b.com), _array_key(b.inertia))


def _beam_key(b):
    if b is None:
        return None
    return (b.length, b.mass_per_length, tuple(b.EI), b.GJ, b.polar_inertia_per_length, b.damping, b.shapes,
            tuple(sorted(b.modes.items())), b.elements, b.stiffening)


def _link_key(l):
    pl = l.placement
    return (l.joint, l.a, l.alpha, l.d, l.theta, _body_key(l.body), _body_key(l.hub), _beam_key(l.beam),
            l.armature, l.viscous, l.coulomb, None if l.limits is None else tuple(l.limits), l.name,
            None if pl is None else (_array_key(pl.xyz), _array_key(pl.rpy), _array_key(pl.axis)), l.parent,
            None if l.drive is None else l.drive.key(), l.joint_name)


# ----- mimic joints ---------------------------------------------------------------------------
#: derived constants built from a robot's links one coordinate per link (the numeric model, the
#: rigid recursion's constants, generated code's parameters): a robot with mimic joints refuses them
PER_LINK_MODELS = ("numeric_model", "rigid_constants", "parameter_values")


@dataclass
class MimicRobot(Robot):
    """A rigid robot some of whose joints follow another (URDF ``<mimic>``):
    ``q_full = G q + c``. ``links`` are all the links (one per joint, as in :class:`Robot`);
    ``mimic`` maps a following link's name to (the name of the link it follows, multiplier,
    offset). Its coordinates are the independent joints only, in link order: ``nq``,
    ``n_joints`` and ``coordinate_names`` count them, and the numeric API
    (:mod:`flexman.dynamics.api`) reduces: ``M = G^T M_full G``, ``b = G^T b_full(G q + c, G qd)``,
    ``tau = G^T tau_full``, Jacobians ``J_full G``. ``robot.full`` is the robot with every joint
    a coordinate of its own. Flexible coordinates (beams on any link, the followers' included)
    stay coordinates one to one. The symbolic equations and generated code trace the full
    model at ``G q + c`` and reduce the same way (:mod:`flexman.symbolic.eom`)."""

    mimic: dict = field(default_factory=dict)

    def __post_init__(self):
        super().__post_init__()
        names = [link.name for link in self.links]
        if self.motor_links:
            raise ModelError(f"links[{self.motor_links[0]}].drive.stiffness: elastic joints are not supported on a "
                             "robot with mimic joints yet; leave stiffness out (a rigid transmission)")
        if not isinstance(self.mimic, dict):
            raise ModelError("mimic: expected {link name: (followed link name, multiplier, offset)}")
        for name, entry in self.mimic.items():
            if name not in names:
                raise ModelError(f"mimic: no link named '{name}'")
            if not isinstance(entry, (tuple, list)) or len(entry) != 3:
                raise ModelError(f"mimic.{name}: expected (followed link name, multiplier, offset)")
            source, multiplier, offset = entry
            if source == name:
                raise ModelError(f"mimic.{name}: a joint cannot follow itself")
            if source not in names:
                raise ModelError(f"mimic.{name}: follows '{source}', which is no link of the robot")
            if source in self.mimic:
                raise ModelError(f"mimic.{name}: follows '{source}', which follows another joint itself")
            for what, value, most in (("multiplier", multiplier, lim.MAX_MIMIC_MULTIPLIER),
                                      ("offset", offset, lim.MAX_ANGLE)):  # an angle (rad) or a length (m)
                v = _real(value, f"mimic.{name}.{what}")
                if not np.isfinite(v):
                    raise ModelError(f"mimic.{name}.{what}: must be a finite number")
                within(v, f"mimic.{name}.{what}", most)
        if len(self.mimic) >= len(self.links):
            raise ModelError("mimic: every joint follows another; at least one must be a coordinate")
        self._check_coordinate_names()

    @property
    def n_joints(self) -> int:
        return len(self.links) - len(self.mimic)

    @property
    def joint_links(self) -> tuple:
        return tuple(self.links[i] for i in self.independent)

    @property
    def independent(self) -> tuple:
        """Indices (into ``links``) of the links whose joints are coordinates, in order."""
        return tuple(i for i, link in enumerate(self.links) if link.name not in self.mimic)

    def mimic_map(self):
        """(G, c): ``q_full = G q + c`` (G: full nq x nq; the flexible coordinates map one to one),
        built once per content (:meth:`derived`)."""
        return self.derived("mimic_map", _build_mimic_map)

    @property
    def full(self) -> Robot:
        """The same links with every joint a coordinate of its own (the links are shared)."""
        return self.derived("full", _build_full)

    def content_key(self) -> tuple:
        return super().content_key() + (("mimic",) + tuple(
            (k, v[0], float(v[1]), float(v[2])) for k, v in sorted(self.mimic.items())),)

    def clear_derived(self, keep_recent: bool = False) -> None:
        """As :meth:`Robot.clear_derived`, but the full robot is never kept process-wide: it shares
        this robot's links, so another robot of the same content must not receive it (its links
        would follow this one's edits); its own derived constants are kept instead."""
        hit = (self.__dict__.get("_derived") or {}).pop("full", None)
        if hit is not None and keep_recent:
            hit[1].clear_derived(keep_recent=True)
        super().clear_derived(keep_recent)

    def derived(self, what: str, build):
        if what == "parameter_values":  # the physical parameters are the links': the full robot's
            return self.full.derived(what, build)
        if what in PER_LINK_MODELS:
            raise ModelError(mimic_refusal(self, "this computation (it takes one coordinate per link)"))
        return super().derived(what, build)


def _build_mimic_map(robot):
    names = [link.name for link in robot.links]
    column = {i: k for k, i in enumerate(robot.independent)}
    n, nf = len(robot.links), robot.nf
    G, c = np.zeros((n + nf, robot.n_joints + nf)), np.zeros(n + nf)
    G[n:, robot.n_joints:] = np.eye(nf)
    for i, name in enumerate(names):
        if name in robot.mimic:
            source, multiplier, offset = robot.mimic[name]
            G[i, column[names.index(source)]] = float(multiplier)
            c[i] = float(offset)
        else:
            G[i, column[i]] = 1.0
    G.flags.writeable = c.flags.writeable = False
    return G, c


def _build_full(robot):
    full = Robot(links=robot.links, name=robot.name, gravity=robot.gravity, dh=robot.dh, payload=robot.payload)
    full.frames, full.end_effector = robot.frames, robot.end_effector
    return full


def mimic_refusal(robot, what: str) -> str:
    """The one sentence refusing ``what`` for a robot with mimic joints."""
    names = ", ".join(sorted(robot.mimic))
    return (f"{what} is not supported for a robot with mimic joints ({names}) yet; its mass matrix, bias forces, "
            "inverse and forward dynamics, energies, frames, Jacobians and interpreted simulation are supported; "
            "use one of those instead.")
