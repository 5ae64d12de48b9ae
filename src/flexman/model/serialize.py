"""Plain data <-> :class:`~flexman.model.robot.Robot`: the model-file schema (docs/conventions.md).

``robot_from_dict`` builds a validated robot from the parsed data of a model file (any format,
see :mod:`flexman.model.io`); ``robot_to_dict`` writes a robot back as such data. The field
tables (``TOP_FIELDS``, ``LINK_FIELDS``, ...) list what each mapping may hold.

Every problem raises :class:`ModelError` with one line that names the field path
(``links[1].mass: ...``, see :func:`join`) and says what to write instead (:func:`check_fields`
for unknown fields, :func:`describe_value` for what was found). The sign rules of the fields
are the data classes' (:data:`flexman.model.robot.LOWER_BOUNDS`); names are checked to be plain
identifiers.
"""
from __future__ import annotations

import copy
import difflib
import math
import re

import numpy as np

from . import engine, names
from .checks import check_model
from .errors import ModelError
from .gauges import check_gauges
from .parse import EXPONENT_NUMBER, plain_copy
from .sensors import sensor_to_dict, sensors_from_list
from .robot import (DH_CONVENTIONS, JOINT_TYPES, SHAPE_KINDS, Beam, Drive, Link, Placement, RigidBody, Robot,
                    bound_text, MimicRobot, bounds, inertia_matrix, meets_bound)
from . import floating as fl
from . import limits as lim

__all__ = ["robot_from_dict", "robot_to_dict", "check_fields", "join", "describe_value", "TOP_FIELDS",
           "STATICS_FIELDS", "LINK_FIELDS", "PLACEMENT_FIELDS", "DH_FIELDS", "BODY_FIELDS", "HUB_FIELDS",
           "BEAM_FIELDS", "MODE_FIELDS"]

TOP_FIELDS = ("name", "description", "source", "gravity", "dh", "links", "payload", "controller", "manoeuvre",
              "statics", "frames", "plan", "end_effector", "sensors", "visuals")
FRAME_FIELDS = ("link", "xyz", "rpy")
VISUAL_SHAPES = {"mesh": 0, "box": 3, "cylinder": 2, "sphere": 1}  # shape -> sizes it takes (a mesh: a file)
VISUAL_FIELDS = ("link", "name", "xyz", "rpy", "scale", "rgba") + tuple(VISUAL_SHAPES)
PLAN_FIELDS = ("start", "goal", "duration", "objective", "knots", "torque_limit", "rate_limit", "shaper")
PLAN_OBJECTIVES = ("effort", "time", "deflection", "tip_path", "smooth")
PLAN_SHAPERS = ("zv", "zvd", "ei")
STATICS_FIELDS = ("point", "gauges", "forces")
LINK_FIELDS = ("name", "joint", "a", "alpha", "d", "theta", "mass", "com", "inertia", "hub", "beam",
               "armature", "viscous", "coulomb", "limits", "placement", "parent", "mimic", "drive", "joint_name")
DRIVE_FIELDS = ("gear_ratio", "rotor_inertia", "viscous", "coulomb", "stiffness", "damping", "torque_limit",
                "gyroscopic")
DRIVE_KEYS = ("gear_ratio", "rotor_inertia", "viscous", "coulomb", "stiffness", "damping", "torque_limit")
MIMIC_FIELDS = ("joint", "multiplier", "offset")
PLACEMENT_FIELDS = ("xyz", "rpy", "axis")
DH_FIELDS = ("a", "alpha", "d", "theta")
BODY_FIELDS = ("mass", "com", "inertia")
HUB_FIELDS = ("mass", "inertia", "offset")
BEAM_FIELDS = ("length", "mass_per_length", "EI", "GJ", "polar_inertia_per_length", "damping",
               "shapes", "modes", "elements", "stiffening")
MODE_FIELDS = ("y", "z", "torsion")

INERTIA_HINT = "give [Ixx, Iyy, Izz, Ixy, Iyz, Ixz], a 3x3 matrix or 3 principal values"
ANGLE_HINT = "a number in radians, {deg: 90} or \"90 deg\""

_ANGLE_TEXT = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(deg|degrees|rad|radians)")


# ----- small validators: each names its field path in the error ----------------------------
def join(path: str, key) -> str:
    """The field path of ``key`` below ``path``: ``links[1]``, ``links[1].mass``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def describe_value(value) -> str:
    """A short phrase for what was found, used in 'got ...'."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, float):
        return repr(value)
    return repr(value)[:40]


def check_fields(data, where: str, allowed, what: str = "mapping") -> dict:
    """``data`` must be a mapping whose keys are all in ``allowed``."""
    if not isinstance(data, dict):
        name = where or "model file"
        raise ModelError(f"{name}: expected a {what} with fields {', '.join(allowed)} (got {describe_value(data)})")
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            if key == "com" and "offset" in allowed:
                close = ["offset"]  # a hub's centre of mass is called offset
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ModelError(
                f"{join(where, str(key))}: unknown field{hint}; allowed fields: {', '.join(allowed)}"
            )
    return data


def _number(value, where: str, *, rule=None, what="a finite number") -> float:
    """A finite float, optionally meeting a lower bound ``rule`` = (bound, strict), see
    :data:`~flexman.model.robot.LOWER_BOUNDS`. Booleans and text are refused."""
    bound = f" {bound_text(rule)}" if rule is not None else ""
    if isinstance(value, str) and EXPONENT_NUMBER.fullmatch(value.strip()):  # as the YAML reader does
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{where}: must be {what}{bound} (got {describe_value(value)})")
    value = float(value)
    bad = not math.isfinite(value) or (rule is not None and not meets_bound(value, rule))
    if bad:
        raise ModelError(f"{where}: must be {what}{bound} (got {value!r})")
    return value


def _angle(value, where: str) -> float:
    """Radians from a number (radians), ``{deg: x}`` or the text ``"x deg"`` / ``"x rad"``."""
    if isinstance(value, dict):
        if set(value) != {"deg"}:
            raise ModelError(f"{where}: an angle mapping must be {{deg: <number>}} (got fields {', '.join(map(str, value))})")
        return math.radians(_number(value["deg"], join(where, "deg")))
    if isinstance(value, str):
        match = _ANGLE_TEXT.fullmatch(value.strip())
        if match:
            number = float(match[1])
            return math.radians(number) if match[2].startswith("deg") else number
    return _number(value, where, what=f"an angle ({ANGLE_HINT})")


def _count(value, where: str, minimum: int = 0) -> int:
    """A whole number >= minimum (an integral float such as 2.0 is accepted)."""
    ok = not isinstance(value, bool) and (
        isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    )
    if not ok or value < minimum:
        raise ModelError(f"{where}: must be a whole number >= {minimum} (got {describe_value(value)})")
    return int(value)


def _numbers(value, where: str, n: int, hint: str, **kw) -> list:
    """A list of exactly ``n`` numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ModelError(f"{where}: expected {n} numbers, {hint} (got {describe_value(value)})")
    return [_number(v, join(where, i), **kw) for i, v in enumerate(value)]


def _vec3(value, where: str) -> np.ndarray:
    return np.array(_numbers(value, where, 3, "[x, y, z]"))


def _inertia(value, where: str) -> np.ndarray:
    if isinstance(value, (list, tuple)) and len(value) == 3 and all(isinstance(r, (list, tuple)) for r in value):
        rows = [_numbers(r, join(where, i), 3, "one row of the 3x3 matrix") for i, r in enumerate(value)]
        arr = np.array(rows)
    elif isinstance(value, (list, tuple)) and len(value) in (3, 6):
        arr = np.array([_number(v, join(where, i)) for i, v in enumerate(value)])
    else:
        raise ModelError(f"{where}: {INERTIA_HINT} (got {describe_value(value)})")
    return inertia_matrix(arr, where)


def _choice(value, where: str, choices, what: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ModelError(f"{where}: unknown {what} {value!r}; use one of {', '.join(choices)}")
    return value


def _identifier(value, where: str) -> str:
    return names.identifier(value, where)


def _text(value, where: str, allow_list: bool = False):
    if isinstance(value, str):
        return value
    if allow_list and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    kind = "text or a list of texts" if allow_list else "text"
    raise ModelError(f"{where}: must be {kind} (got {describe_value(value)})")


def _plain(value, where: str):
    """Plain data only (mappings with text keys, lists, text, numbers, booleans, null)."""
    if isinstance(value, dict):
        for key, val in value.items():
            if not isinstance(key, str):
                raise ModelError(f"{where}: keys must be text (got {describe_value(key)})")
            _plain(val, join(where, key))
    elif isinstance(value, list):
        for i, val in enumerate(value):
            _plain(val, join(where, i))
    elif isinstance(value, float) and not math.isfinite(value):
        raise ModelError(f"{where}: must be a finite number (got {value!r})")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise ModelError(f"{where}: must be plain data: text, number, list or mapping (got {describe_value(value)})")
    return value


def _build(cls, where: str, **kwargs):
    """Construct a data class; prefix its own ModelError ('mass: ...') with the path."""
    try:
        return cls(**kwargs)
    except ModelError as exc:
        raise ModelError(f"{where}.{exc}" if where else str(exc)) from None


# ----- dict -> Robot ---------------------------------------------------------------------------
def _body(data, where: str, fields=BODY_FIELDS) -> RigidBody:
    check_fields(data, where, fields)
    com_key = "offset" if "offset" in fields else "com"
    mass = _number(data.get("mass", 0.0), join(where, "mass"), rule=bounds("body")["mass"])
    com = _vec3(data.get(com_key, [0.0, 0.0, 0.0]), join(where, com_key))
    inertia = _inertia(data.get("inertia", [0.0, 0.0, 0.0]), join(where, "inertia"))
    return _build(RigidBody, where, mass=mass, com=com, inertia=inertia)


def _beam(data, where: str) -> Beam:
    check_fields(data, where, BEAM_FIELDS)
    rules = bounds("beam")
    for key in ("length", "mass_per_length"):
        if key not in data:
            raise ModelError(f"{join(where, key)}: required field missing (a number {bound_text(rules[key])})")
    kw = {key: _number(data[key], join(where, key), rule=rules[key]) for key in ("length", "mass_per_length")}
    ei = data.get("EI", [0.0, 0.0])
    if isinstance(ei, (list, tuple)):
        kw["EI"] = tuple(_numbers(ei, join(where, "EI"), 2, "[EI_y, EI_z]", rule=rules["EI"]))
    else:
        kw["EI"] = (_number(ei, join(where, "EI"), rule=rules["EI"]),) * 2
    for key in ("GJ", "polar_inertia_per_length", "damping"):
        if key in data:
            kw[key] = _number(data[key], join(where, key), rule=rules[key])
    if "shapes" in data:
        kw["shapes"] = _choice(data["shapes"], join(where, "shapes"), SHAPE_KINDS, "shape kind")
    if "modes" in data:
        modes = check_fields(data["modes"], join(where, "modes"), MODE_FIELDS)
        fewest = int(rules["modes"][0])
        kw["modes"] = {k: _count(v, join(join(where, "modes"), k), fewest) for k, v in modes.items()}
    if "elements" in data:
        kw["elements"] = _count(data["elements"], join(where, "elements"), 1)
    if "stiffening" in data:
        if not isinstance(data["stiffening"], bool):
            raise ModelError(f"{join(where, 'stiffening')}: must be true or false (got {data['stiffening']!r})")
        kw["stiffening"] = data["stiffening"]
    # Beam's messages already start with "beam."; prefix only the link part of the path.
    link_path = where.rsplit(".beam", 1)[0]
    return _build(Beam, link_path, **kw)


def _placement(data, where: str) -> Placement:
    """``{xyz: [x, y, z], rpy: [roll, pitch, yaw], axis: [ax, ay, az]}`` (URDF joint origin and axis)."""
    check_fields(data, where, PLACEMENT_FIELDS)
    xyz = _vec3(data.get("xyz", [0.0, 0.0, 0.0]), join(where, "xyz"))
    rpy = data.get("rpy", [0.0, 0.0, 0.0])
    if not isinstance(rpy, (list, tuple)) or len(rpy) != 3:
        raise ModelError(f"{join(where, 'rpy')}: expected 3 angles [roll, pitch, yaw] (got {describe_value(rpy)})")
    rpy = [_angle(v, join(join(where, "rpy"), i)) for i, v in enumerate(rpy)]
    axis = _vec3(data.get("axis", [0.0, 0.0, 1.0]), join(where, "axis"))
    if not np.linalg.norm(axis) > 1e-9:
        raise ModelError(f"{join(where, 'axis')}: must be a non-zero vector such as [0, 0, 1]")
    return Placement(xyz, rpy, axis)


def _parent(value, where: str):
    """A link's parent: 'base', another link's name, or its index in the list (0 is the first)."""
    if isinstance(value, str):
        return value if value == "base" else _identifier(value, where)
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise ModelError(f"{where}: give the parent link's name, its index in links (0 is the first) or 'base' "
                         f"(got {describe_value(value)})")
    return value


def _link(data, where: str) -> Link:
    check_fields(data, where, LINK_FIELDS)
    joint = _choice(data.get("joint", "revolute"), join(where, "joint"), JOINT_TYPES, "joint type")
    kw = {"joint": joint}
    if "name" in data:
        kw["name"] = _identifier(data["name"], join(where, "name"))
    if "joint_name" in data:  # names the joint's coordinate (a URDF robot's joint names)
        kw["joint_name"] = _identifier(data["joint_name"], join(where, "joint_name"))
    if "parent" in data:
        kw["parent"] = _parent(data["parent"], join(where, "parent"))
    if "placement" in data:
        given = [k for k in DH_FIELDS if k in data]
        if given:
            raise ModelError(f"{join(where, given[0])}: a link with a placement takes no DH values; "
                             "remove a, alpha, d, theta or the placement")
        kw["placement"] = _placement(data["placement"], join(where, "placement"))
    for key in ("a", "d"):
        kw[key] = _number(data.get(key, 0.0), join(where, key))
    for key in ("alpha", "theta"):
        kw[key] = _angle(data.get(key, 0.0), join(where, key))
    for key in ("armature", "viscous", "coulomb"):
        kw[key] = _number(data.get(key, 0.0), join(where, key), rule=bounds("link")[key])
    kw["body"] = _body({k: data[k] for k in BODY_FIELDS if k in data}, where)
    if "hub" in data:
        kw["hub"] = _body(data["hub"], join(where, "hub"), HUB_FIELDS)
    if "beam" in data:
        kw["beam"] = _beam(data["beam"], join(where, "beam"))
    if "drive" in data:
        kw["drive"] = _drive(data["drive"], join(where, "drive"))
    if "limits" in data:
        lpath = join(where, "limits")
        value = data["limits"]
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise ModelError(f"{lpath}: expected [lower, upper] (got {describe_value(value)})")
        conv = _angle if joint == "revolute" else _number
        lo, hi = (conv(v, join(lpath, i)) for i, v in enumerate(value))
        if not lo < hi:
            raise ModelError(f"{lpath}: lower limit must be below upper limit (got [{lo:g}, {hi:g}])")
        kw["limits"] = (lo, hi)
    return _build(Link, where, **kw)


def _drive(data, where: str) -> Drive:
    """A link's ``drive:`` mapping: a rigid transmission, or with ``stiffness`` an elastic joint
    (``gyroscopic``: its complete model); ``torque_limit`` in N m at the motor."""
    check_fields(data, where, DRIVE_FIELDS)
    kw = {key: _number(data[key], join(where, key)) for key in DRIVE_KEYS if key in data}
    if "gyroscopic" in data:
        if not isinstance(data["gyroscopic"], bool):
            raise ModelError(f"{join(where, 'gyroscopic')}: must be true or false (got {data['gyroscopic']!r:.40})")
        kw["gyroscopic"] = data["gyroscopic"]
    return _build(Drive, where, **kw)


def robot_from_dict(data, check_mass: bool = True) -> Robot:
    """Build a validated :class:`Robot` from plain data (a parsed model file).

    Besides the data-class fields, the robot gets ``controller`` (a plain dict or None),
    ``manoeuvre`` (a plain dict or None: a joint motion for ``simulate --prescribed``, checked
    here by building it through the engine slot `check_manoeuvre`: :func:`flexman.trajectory.from_spec`),
    ``description`` (text) and ``source`` (text or a list of citations) as attributes.
    """
    try:
        robot = _robot_from_dict(plain_copy(data))
        if check_mass:  # False: every field check, not the whole-robot one (a robot still being entered)
            check_model(robot)
        return robot
    except ModelError as exc:
        raise ModelError(" ".join(str(exc).split())) from None  # always one line


def _robot_from_dict(data) -> Robot:
    check_fields(data, "", TOP_FIELDS)
    if "links" not in data:
        raise ModelError("links: required field missing (a list of links, one per joint)")
    links = data["links"]
    if not isinstance(links, list) or not links:
        raise ModelError(f"links: must be a non-empty list of links (got {describe_value(links)})")
    parsed = [_floating_link(item, join("links", i), i) if isinstance(item, dict) and item.get("joint") == "floating"
              else [_link(item, join("links", i))] for i, item in enumerate(links)]
    mimic = _mimic(links, parsed)
    new_index = list(np.cumsum([0] + [len(p) for p in parsed])[1:] - 1)  # written index -> new (a floating link: its body)
    kw = {"links": [_shifted(link, new_index) for part in parsed for link in part]}
    if "name" in data:
        kw["name"] = _identifier(data["name"], "name")
    if "gravity" in data:
        kw["gravity"] = _vec3(data["gravity"], "gravity")
    if "dh" in data:
        kw["dh"] = _choice(data["dh"], "dh", DH_CONVENTIONS, "DH convention")
    if "payload" in data:
        kw["payload"] = _body(data["payload"], "payload")
    if "frames" in data:
        kw["frames"] = {name: (new_index[ref] if isinstance(ref, int) and ref >= 0 and ref < len(new_index) else ref, T)
                        for name, (ref, T) in _frames(data["frames"]).items()}
    if data.get("end_effector") is not None:  # a link's or a frame's name (checked by the robot)
        kw["end_effector"] = _identifier(data["end_effector"], "end_effector")
    robot = _build(MimicRobot, "", mimic=mimic, **kw) if mimic else _build(Robot, "", **kw)
    if data.get("visuals") is not None:
        robot.visuals = _visuals(data["visuals"], robot.links)
    robot.controller = None
    if data.get("controller") is not None:
        if not isinstance(data["controller"], dict):
            raise ModelError(f"controller: must be a mapping (got {describe_value(data['controller'])})")
        robot.controller = copy.deepcopy(_plain(data["controller"], "controller"))
    robot.manoeuvre = None
    if data.get("manoeuvre") is not None:
        spec = copy.deepcopy(_plain(data["manoeuvre"], "manoeuvre"))
        try:
            engine.require("check_manoeuvre")(spec, robot.n_joints, "manoeuvre")
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        robot.manoeuvre = spec
    robot.statics = _statics(data["statics"], robot) if data.get("statics") is not None else None
    robot.plan_settings = _plan_settings(data["plan"], robot) if data.get("plan") is not None else None
    robot.sensors = sensors_from_list(data["sensors"], robot) if data.get("sensors") is not None else []
    robot.description = _text(data.get("description", ""), "description")
    robot.source = _text(data.get("source", ""), "source", allow_list=True)
    return robot


def _floating_link(data, where: str, i: int) -> list:
    """The six links of a ``joint: floating`` link (:mod:`.floating`): a free root body."""
    check_fields(data, where, fl.FIELDS)
    if "parent" in data and data["parent"] not in ("base", -1) or "parent" not in data and i > 0:
        raise ModelError(f"{join(where, 'joint')}: a floating joint joins a root link to the base only; "
                         "give it parent: base (or make the joint revolute or prismatic)")
    if "name" not in data:
        raise ModelError(f"{join(where, 'name')}: a floating link needs a name (its six coordinates are named after it)")
    name = _identifier(data["name"], join(where, "name"))
    named = data.get("named", False)
    if not isinstance(named, bool):
        raise ModelError(f"{join(where, 'named')}: must be true or false (got {describe_value(named)})")
    links = fl.floating_links(_body({k: data[k] for k in BODY_FIELDS if k in data}, where), name, named)
    links[0].parent = "base" if i > 0 else None
    if "beam" in data:
        links[-1].beam = _beam(data["beam"], join(where, "beam"))
    return links


def _shifted(link: Link, new_index) -> Link:
    """A link whose parent index (as written) is moved to its place once floating links are six."""
    if isinstance(link.parent, int) and not isinstance(link.parent, bool) and 0 <= link.parent < len(new_index):
        link.parent = int(new_index[link.parent])
    return link


def _mimic(items, parsed) -> dict:
    """{following link: (followed link, multiplier, offset)} from the links' ``mimic`` fields:
    ``{joint: <the followed link's name or index>, multiplier: m, offset: o}`` (q = m q_joint + o)."""
    link_names = [part[-1].name for part in parsed]
    out = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "mimic" not in item:
            continue
        where = join(join("links", i), "mimic")
        spec = check_fields(item["mimic"], where, MIMIC_FIELDS)
        if "joint" not in spec:
            raise ModelError(f"{join(where, 'joint')}: required field missing (the name or index of the link whose "
                             "joint this one follows)")
        ref, at = spec["joint"], join(where, "joint")
        if isinstance(ref, str) and ref in link_names and link_names.count(ref) == 1:
            k = link_names.index(ref)
        elif isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(items):
            k = ref
        elif isinstance(ref, str):
            raise ModelError(f"{at}: no link is named '{names.printable(ref, 80)}'; give the name or index of the link whose "
                             "joint this one follows")
        else:
            raise ModelError(f"{at}: {describe_value(ref)} is neither a link's name nor its index (0 to "
                             f"{len(items) - 1}); give the name or index of the link whose joint this one follows")
        if k == i:
            raise ModelError(f"{at}: a joint cannot follow itself; name the link whose joint it follows")
        if "mimic" in (items[k] if isinstance(items[k], dict) else {}):
            raise ModelError(f"{at}: links[{k}] follows another joint itself; follow the joint it follows instead")
        if items[k].get("joint") == "floating":
            raise ModelError(f"{at}: links[{k}] is floating (six coordinates); follow a revolute or prismatic joint")
        for j, what in ((i, "the following link"), (k, "the followed link")):
            if not link_names[j] or link_names.count(link_names[j]) != 1:
                raise ModelError(f"{where}: {what} (links[{j}]) needs a name of its own; add name: to it")
        out[link_names[i]] = (link_names[k], _number(spec.get("multiplier", 1.0), join(where, "multiplier")),
                         _number(spec.get("offset", 0.0), join(where, "offset")))
    return out


def _frames(data) -> dict:
    """Named fixed frames: ``{name: {link: <name, index or base>, xyz: [...], rpy: [...]}}``."""
    if not isinstance(data, dict):
        raise ModelError(f"frames: expected a mapping {{name: {{link, xyz, rpy}}}} (got {describe_value(data)})")
    out = {}
    for name, item in data.items():
        where = join("frames", name)
        _identifier(name, where)
        check_fields(item, where, FRAME_FIELDS)
        if "link" not in item:
            raise ModelError(f"{join(where, 'link')}: required field missing (the link the frame is fixed to, or base)")
        out[name] = (_parent(item["link"], join(where, "link")), _pose(item, where))
    return out


def _visuals(data, links) -> list:
    """The visual geometry (``visuals:``, what a URDF's ``<visual>`` elements give): a list of
    ``{link: <name or base>, mesh: <file> | box: [x, y, z] | cylinder: [radius, length] |
    sphere: [radius], xyz, rpy, scale, rgba, name}``. Only described here: a mesh file is read when
    a report or picture draws it (a relative path: from the model file's folder, see ``io.load``)."""
    from .visuals import Visual

    if not isinstance(data, list):
        raise ModelError(f"visuals: expected a list of {{link, mesh | box | cylinder | sphere, xyz, rpy}} "
                         f"(got {describe_value(data)})")
    if len(data) > lim.MAX_VISUALS:
        raise ModelError(f"visuals: {len(data)} entries; at most {lim.MAX_VISUALS} are supported (README, Limits)")
    names = [link.name for link in links]
    out = []
    for k, item in enumerate(data):
        where = join("visuals", k)
        check_fields(item, where, VISUAL_FIELDS)
        ref = _parent(item.get("link", "base"), join(where, "link"))
        if isinstance(ref, str) and ref != "base" and ref not in names:
            raise ModelError(f"{join(where, 'link')}: no link named '{ref}'; give a link's name or base")
        if isinstance(ref, int) and ref >= len(links):
            raise ModelError(f"{join(where, 'link')}: no link {ref}; the robot has {len(links)}")
        index = -1 if ref in ("base", -1) else names.index(ref) if isinstance(ref, str) else ref
        shapes = [key for key in VISUAL_SHAPES if key in item]
        if len(shapes) != 1:
            raise ModelError(f"{where}: give exactly one of {', '.join(VISUAL_SHAPES)} (got {', '.join(shapes) or 'none'})")
        kind = shapes[0]
        kw = {"link": index, "origin": _pose(item, where), "kind": kind, "name": _text(item.get("name", ""), join(where, "name"))[:200]}
        if kind == "mesh":
            path = _text(item["mesh"], join(where, "mesh"))
            if not path.strip() or len(path) > 4096 or "\0" in path:
                raise ModelError(f"{join(where, 'mesh')}: must be the path of a mesh file (STL, OBJ, DAE)")
            scale = _positive_numbers(item.get("scale", [1.0, 1.0, 1.0]), 3, join(where, "scale"))
            kw.update(path=path, scale=scale)
        else:
            kw["size"] = _positive_numbers(item[kind], VISUAL_SHAPES[kind], join(where, kind))
        if item.get("rgba") is not None:
            rgba = item["rgba"]
            if not isinstance(rgba, list) or len(rgba) != 4:
                raise ModelError(f"{join(where, 'rgba')}: expected 4 numbers [red, green, blue, alpha] in [0, 1]")
            kw["rgba"] = tuple(_number(v, join(join(where, "rgba"), i), rule=(0.0, False)) for i, v in enumerate(rgba))
            if max(kw["rgba"]) > 1.0:
                raise ModelError(f"{join(where, 'rgba')}: expected 4 numbers [red, green, blue, alpha] in [0, 1]")
        out.append(Visual(**kw))
    return out


def _positive_numbers(value, n: int, where: str) -> tuple:
    if not isinstance(value, list) or len(value) != n:
        raise ModelError(f"{where}: expected {n} number{'s' if n > 1 else ''} > 0 (got {describe_value(value)})")
    return tuple(_number(v, join(where, i), rule=(0.0, True)) for i, v in enumerate(value))


def visuals_to_list(robot, base_dir=None) -> list:
    """``visuals:`` data of a robot's visuals; mesh paths relative to ``base_dir`` where they can be."""
    import os

    names = [link.name for link in robot.links]
    out = []
    for vis in getattr(robot, "visuals", None) or []:
        item = {"link": "base" if vis.link < 0 else (names[vis.link] or vis.link)}
        if vis.name:
            item["name"] = vis.name
        if vis.kind == "mesh":
            path = vis.path
            if base_dir is not None and os.path.isabs(path):
                try:
                    inside = os.path.relpath(path, base_dir)
                except ValueError:  # another drive
                    inside = os.pardir
                if not inside.startswith(os.pardir):  # a mesh beside the file moves with it; others stay absolute
                    path = inside
            item["mesh"] = path
            if tuple(vis.scale) != (1.0, 1.0, 1.0):
                item["scale"] = _floats(vis.scale)
        else:
            item[vis.kind] = _floats(vis.size)
        item.update(_pose_dict(vis.origin))
        if vis.rgba is not None:
            item["rgba"] = _floats(vis.rgba)
        out.append(item)
    return out


def _pose(item, where: str) -> np.ndarray:
    """The 4x4 transform of a mapping's ``xyz`` (m) and ``rpy`` (angles; both default 0)."""
    from .rotations import rpy_matrix

    T = np.array(rpy_matrix([_angle(v, join(join(where, "rpy"), i)) for i, v in
                             enumerate(_numbers_or_angles(item.get("rpy", [0.0, 0.0, 0.0]), join(where, "rpy")))]))
    T[:3, 3] = _vec3(item.get("xyz", [0.0, 0.0, 0.0]), join(where, "xyz"))
    return T


def _pose_dict(T) -> dict:
    """``{xyz, rpy}`` of a 4x4 transform: what :func:`_pose` reads."""
    from .rotations import matrix_rpy

    return {"xyz": _floats(T[:3, 3]), "rpy": _floats(matrix_rpy(T[:3, :3]))}


def _numbers_or_angles(value, where: str) -> list:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise ModelError(f"{where}: expected 3 angles [roll, pitch, yaw] (got {describe_value(value)})")
    return list(value)


def _statics(data, robot) -> dict:
    """The optional load case of ``flexman statics``: where the endpoint force acts (a point in
    the last link's distal frame), strain-gauge positions (one list per link, m from the beam
    root) and the endpoint forces [fx, fy, fz] (N, base frame) of a family of curves."""
    check_fields(data, "statics", STATICS_FIELDS)
    out = {}
    if "point" in data:
        out["point"] = [float(v) for v in _vec3(data["point"], "statics.point")]
    if "gauges" in data:
        gauges = data["gauges"]
        if not isinstance(gauges, list) or len(gauges) > robot.n_joints or not all(isinstance(g, list) for g in gauges):
            raise ModelError(f"statics.gauges: expected one list of positions per link (at most {robot.n_joints}), "
                             f"got {describe_value(gauges)}")
        out["gauges"] = [[_number(x, join(join("statics.gauges", i), j), rule=(0.0, False)) for j, x in enumerate(g)]
                         for i, g in enumerate(gauges)]
        try:
            check_gauges(robot, out["gauges"])
        except ValueError as exc:
            raise ModelError(f"statics.{exc}") from None
    if "forces" in data:
        forces = data["forces"]
        if not isinstance(forces, list) or not forces:
            raise ModelError(f"statics.forces: expected a list of forces [fx, fy, fz] (got {describe_value(forces)})")
        out["forces"] = [[float(v) for v in _vec3(f, join("statics.forces", i))] for i, f in enumerate(forces)]
    return out


def _plan_settings(data, robot) -> dict:
    """The optional defaults of ``flexman plan`` (and of the showcase's optimal move): joint targets,
    duration (s), objective (a name or {name: weight}), collocation knots, torque and rate limits
    (one positive value per joint) and the input shaper to compare with."""
    check_fields(data, "plan", PLAN_FIELDS)
    n, out = robot.n_joints, {}
    for key in ("start", "goal"):
        if key in data:
            out[key] = _numbers(data[key], f"plan.{key}", n, "one per joint")
    for key in ("torque_limit", "rate_limit"):
        if key in data:
            out[key] = _numbers(data[key], f"plan.{key}", n, "one per joint, each > 0", rule=(0.0, True))
    if "duration" in data:
        out["duration"] = _number(data["duration"], "plan.duration", rule=(0.0, True))
    if "knots" in data:
        k = data["knots"]
        if isinstance(k, bool) or not isinstance(k, int) or not 4 <= k <= 1000:
            raise ModelError(f"plan.knots: expected a whole number of collocation intervals in [4, 1000] (got {describe_value(k)})")
        out["knots"] = k
    if "objective" in data:
        obj = data["objective"]
        if isinstance(obj, dict):
            out["objective"] = {_choice(k, "plan.objective", PLAN_OBJECTIVES, "objective"):
                                _number(v, f"plan.objective.{k}", rule=(0.0, False)) for k, v in obj.items()}
        else:
            out["objective"] = _choice(obj, "plan.objective", PLAN_OBJECTIVES, "objective")
    if "shaper" in data:
        out["shaper"] = _choice(str(data["shaper"]).lower() if isinstance(data["shaper"], str) else data["shaper"],
                                "plan.shaper", PLAN_SHAPERS, "shaper")
    return out


# ----- Robot -> dict ---------------------------------------------------------------------------
def _floats(arr) -> list:
    return [float(x) for x in np.asarray(arr, dtype=float).reshape(-1)]


def _inertia6(mat) -> list:
    m = np.asarray(mat, dtype=float)
    return [float(m[0, 0]), float(m[1, 1]), float(m[2, 2]), float(m[0, 1]), float(m[1, 2]), float(m[0, 2])]


def _body_dict(body: RigidBody, com_key: str = "com") -> dict:
    return {"mass": float(body.mass), com_key: _floats(body.com), "inertia": _inertia6(body.inertia)}


def _beam_dict(beam: Beam) -> dict:
    out = {
        "length": float(beam.length),
        "mass_per_length": float(beam.mass_per_length),
        "EI": [float(beam.EI[0]), float(beam.EI[1])],
        "GJ": float(beam.GJ),
        "polar_inertia_per_length": float(beam.polar_inertia_per_length),
        "damping": float(beam.damping),
        "shapes": beam.shapes,
        "modes": {k: int(beam.modes[k]) for k in MODE_FIELDS},
    }
    if beam.elements or beam.shapes == "finite_elements":
        out["elements"] = int(beam.elements)
    if not beam.stiffening:
        out["stiffening"] = False
    return out


def _link_ref(names, i):
    """How a file names link i (a parent, a frame's link): 'base' for -1, else its name where that
    is unique, else its index; indices (-1 for the base) where a link is named 'base'."""
    if i < 0:
        return -1 if "base" in names else "base"
    return names[i] if names[i] and names[i] != "base" and names.count(names[i]) == 1 else i


def _write_floating(robot, items) -> tuple:
    """(the link items with each floating base (:func:`floating.floating_starts`) written as one
    ``joint: floating`` link, {old index: new index} for references by index (parents, frames))."""
    starts = fl.floating_starts(robot)
    if not starts:
        return items, {}
    names = [link.name for link in robot.links]
    old_to_new, out = {}, []
    for i, item in enumerate(items):
        if any(s <= i < s + 5 for s in starts):
            continue
        old_to_new[i] = len(out)
        if i - 5 in starts:
            item = {"name": item["name"], **({"parent": _link_ref(names, -1)} if i > 5 else {}), "joint": "floating",
                    **{k: item[k] for k in ("mass", "com", "inertia", "beam") if k in item},
                    **({"named": True} if "joint_name" in item else {})}
        out.append(item)
    for item in out:
        if isinstance(item.get("parent"), int):
            item["parent"] = old_to_new[item["parent"]]
    return out, old_to_new


def link_items(robot: Robot) -> list:
    """One model-file item per link of ``robot`` (``robot.links`` order, a floating base still as
    its six links): what :func:`robot_to_dict` writes before it joins each floating base into
    one ``joint: floating`` item. Code that needs data per link (a compiled model's parameter
    names) uses this list, whose entries match ``robot.links`` one to one."""
    links = []
    names = [link.name for link in robot.links]
    for link in robot.links:
        item = {"name": link.name} if link.name else {}
        if link.joint_name:
            item["joint_name"] = link.joint_name
        if link.parent is not None:  # written only for a tree
            item["parent"] = _link_ref(names, link.parent)
        item["joint"] = link.joint
        if link.placement is not None:
            pl = link.placement
            item["placement"] = {"xyz": _floats(pl.xyz), "rpy": _floats(pl.rpy), "axis": _floats(pl.axis)}
        else:
            for key in DH_FIELDS:
                item[key] = float(getattr(link, key))
        item.update(_body_dict(link.body))
        for key in ("armature", "viscous", "coulomb"):
            if getattr(link, key):
                item[key] = float(getattr(link, key))
        if link.limits is not None:
            item["limits"] = [float(link.limits[0]), float(link.limits[1])]
        if link.hub is not None:
            item["hub"] = _body_dict(link.hub, "offset")
        if link.beam is not None:
            item["beam"] = _beam_dict(link.beam)
        if link.drive is not None:
            d = link.drive
            item["drive"] = {"gear_ratio": float(d.gear_ratio), "rotor_inertia": float(d.rotor_inertia),
                             **{k: float(getattr(d, k)) for k in ("viscous", "coulomb", "damping") if getattr(d, k)},
                             **({"stiffness": float(d.stiffness)} if d.elastic else {}),
                             **({"torque_limit": float(d.torque_limit)} if d.torque_limit is not None else {}),
                             **({"gyroscopic": True} if d.gyroscopic else {})}
        if link.name in (getattr(robot, "mimic", None) or {}):
            source, multiplier, offset = robot.mimic[link.name]
            item["mimic"] = {"joint": source, "multiplier": float(multiplier), "offset": float(offset)}
        links.append(item)
    return links


def robot_to_dict(robot: Robot, base_dir=None) -> dict:
    """Plain data for a robot, in the model-file schema (angles in radians).

    Optional fields are written only when they differ from their defaults, so files stay short.
    ``base_dir``: the folder of the file being written (mesh paths are written relative to it).
    """
    out = {"name": robot.name}
    if getattr(robot, "description", ""):
        out["description"] = robot.description
    if getattr(robot, "source", ""):
        out["source"] = copy.deepcopy(robot.source)
    out["gravity"] = _floats(robot.gravity)
    out["dh"] = robot.dh
    links = link_items(robot)
    names = [link.name for link in robot.links]
    out["links"], moved = _write_floating(robot, links)
    if robot.payload is not None:
        out["payload"] = _body_dict(robot.payload)
    if robot.frames:
        ref = lambda i: moved.get(i, i) if isinstance(_link_ref(names, i), int) and i >= 0 else _link_ref(names, i)
        out["frames"] = {name: {"link": ref(i), **_pose_dict(T)} for name, (i, T) in robot.frames.items()}
    if robot.end_effector is not None:
        out["end_effector"] = robot.end_effector
    if getattr(robot, "controller", None) is not None:
        out["controller"] = copy.deepcopy(robot.controller)
    if getattr(robot, "manoeuvre", None) is not None:
        out["manoeuvre"] = copy.deepcopy(robot.manoeuvre)
    if getattr(robot, "statics", None):
        out["statics"] = copy.deepcopy(robot.statics)
    if getattr(robot, "plan_settings", None):
        out["plan"] = copy.deepcopy(robot.plan_settings)
    if getattr(robot, "sensors", None):
        out["sensors"] = [sensor_to_dict(s) for s in robot.sensors]
    if getattr(robot, "visuals", None):
        out["visuals"] = visuals_to_list(robot, base_dir)
    return out
