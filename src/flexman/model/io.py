"""Model files: YAML, TOML and JSON share one schema (DESIGN.md, "Model files").

``load`` / ``save`` pick the format from the file extension; ``robot_from_dict`` /
``robot_to_dict`` convert between plain data and :class:`~flexman.model.robot.Robot`.

Every problem in a file raises :class:`ModelError` with one line that names the field
path (``links[1].mass: ...``) and says what to write instead. Nothing read from a file is
ever executed: YAML is read with the safe loader, TOML with ``tomllib``, JSON with
``json``; names are checked to be plain identifiers.
"""
from __future__ import annotations

import copy
import difflib
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import yaml

from .checks import check_mass_matrix
from . import names
from .errors import ModelError
from .limits import MAX_DOCUMENT_BYTES
from .parse import parse, plain_copy
from .robot import DH_CONVENTIONS, JOINT_TYPES, SHAPE_KINDS, Beam, Link, Placement, RigidBody, Robot, inertia_matrix

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json"}

TOP_FIELDS = ("name", "description", "source", "gravity", "dh", "links", "payload", "controller", "manoeuvre",
              "statics")
STATICS_FIELDS = ("point", "gauges", "forces")
LINK_FIELDS = ("name", "joint", "a", "alpha", "d", "theta", "mass", "com", "inertia", "hub", "beam",
               "armature", "viscous", "coulomb", "limits", "placement")
PLACEMENT_FIELDS = ("xyz", "rpy", "axis")
DH_FIELDS = ("a", "alpha", "d", "theta")
BODY_FIELDS = ("mass", "com", "inertia")
HUB_FIELDS = ("mass", "inertia", "offset")
BEAM_FIELDS = ("length", "mass_per_length", "EI", "GJ", "polar_inertia_per_length", "damping",
               "shapes", "modes", "elements", "stiffening")
MODE_FIELDS = ("y", "z", "torsion")

INERTIA_HINT = "give [Ixx, Iyy, Izz, Ixy, Iyz, Ixz], a 3x3 matrix or 3 principal values"
ANGLE_HINT = "a number in radians, {deg: 90} or \"90 deg\""

# PyYAML (YAML 1.1) reads an unquoted 1e-3 as a string; accept exactly that spelling as a number.
_EXP_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
_ANGLE_TEXT = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(deg|degrees|rad|radians)")


# ----- small validators: each names its field path in the error ----------------------------
def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _describe(value) -> str:
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


def _check_fields(data, where: str, allowed, what: str = "mapping") -> dict:
    """``data`` must be a mapping whose keys are all in ``allowed``."""
    if not isinstance(data, dict):
        name = where or "model file"
        raise ModelError(f"{name}: expected a {what} with fields {', '.join(allowed)} (got {_describe(data)})")
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            if key == "com" and "offset" in allowed:
                close = ["offset"]  # a hub's centre of mass is called offset
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ModelError(
                f"{_join(where, str(key))}: unknown field{hint}; allowed fields: {', '.join(allowed)}"
            )
    return data


def _number(value, where: str, *, minimum=None, positive=False, what="a finite number") -> float:
    """A finite float, optionally >= minimum or > 0. Booleans and text are refused."""
    bound = " > 0" if positive else (f" >= {minimum:g}" if minimum is not None else "")
    if isinstance(value, str) and _EXP_NUMBER.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{where}: must be {what}{bound} (got {_describe(value)})")
    value = float(value)
    bad = not math.isfinite(value) or (positive and value <= 0) or (minimum is not None and value < minimum)
    if bad:
        raise ModelError(f"{where}: must be {what}{bound} (got {value!r})")
    return value


def _angle(value, where: str) -> float:
    """Radians from a number (radians), ``{deg: x}`` or the text ``"x deg"`` / ``"x rad"``."""
    if isinstance(value, dict):
        if set(value) != {"deg"}:
            raise ModelError(f"{where}: an angle mapping must be {{deg: <number>}} (got fields {', '.join(map(str, value))})")
        return math.radians(_number(value["deg"], _join(where, "deg")))
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
        raise ModelError(f"{where}: must be a whole number >= {minimum} (got {_describe(value)})")
    return int(value)


def _numbers(value, where: str, n: int, hint: str, **kw) -> list:
    """A list of exactly ``n`` numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ModelError(f"{where}: expected {n} numbers, {hint} (got {_describe(value)})")
    return [_number(v, _join(where, i), **kw) for i, v in enumerate(value)]


def _vec3(value, where: str) -> np.ndarray:
    return np.array(_numbers(value, where, 3, "[x, y, z]"))


def _inertia(value, where: str) -> np.ndarray:
    if isinstance(value, (list, tuple)) and len(value) == 3 and all(isinstance(r, (list, tuple)) for r in value):
        rows = [_numbers(r, _join(where, i), 3, "one row of the 3x3 matrix") for i, r in enumerate(value)]
        arr = np.array(rows)
    elif isinstance(value, (list, tuple)) and len(value) in (3, 6):
        arr = np.array([_number(v, _join(where, i)) for i, v in enumerate(value)])
    else:
        raise ModelError(f"{where}: {INERTIA_HINT} (got {_describe(value)})")
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
    raise ModelError(f"{where}: must be {kind} (got {_describe(value)})")


def _plain(value, where: str):
    """Plain data only (mappings with text keys, lists, text, numbers, booleans, null)."""
    if isinstance(value, dict):
        for key, val in value.items():
            if not isinstance(key, str):
                raise ModelError(f"{where}: keys must be text (got {_describe(key)})")
            _plain(val, _join(where, key))
    elif isinstance(value, list):
        for i, val in enumerate(value):
            _plain(val, _join(where, i))
    elif isinstance(value, float) and not math.isfinite(value):
        raise ModelError(f"{where}: must be a finite number (got {value!r})")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise ModelError(f"{where}: must be plain data: text, number, list or mapping (got {_describe(value)})")
    return value


def _build(cls, where: str, **kwargs):
    """Construct a data class; prefix its own ModelError ('mass: ...') with the path."""
    try:
        return cls(**kwargs)
    except ModelError as exc:
        raise ModelError(f"{where}.{exc}" if where else str(exc)) from None


# ----- dict -> Robot ---------------------------------------------------------------------------
def _body(data, where: str, fields=BODY_FIELDS) -> RigidBody:
    _check_fields(data, where, fields)
    com_key = "offset" if "offset" in fields else "com"
    mass = _number(data.get("mass", 0.0), _join(where, "mass"), minimum=0)
    com = _vec3(data.get(com_key, [0.0, 0.0, 0.0]), _join(where, com_key))
    inertia = _inertia(data.get("inertia", [0.0, 0.0, 0.0]), _join(where, "inertia"))
    return _build(RigidBody, where, mass=mass, com=com, inertia=inertia)


def _beam(data, where: str) -> Beam:
    _check_fields(data, where, BEAM_FIELDS)
    for key in ("length", "mass_per_length"):
        if key not in data:
            raise ModelError(f"{_join(where, key)}: required field missing (a number > 0)")
    kw = {
        "length": _number(data["length"], _join(where, "length"), positive=True),
        "mass_per_length": _number(data["mass_per_length"], _join(where, "mass_per_length"), positive=True),
    }
    ei = data.get("EI", [0.0, 0.0])
    if isinstance(ei, (list, tuple)):
        kw["EI"] = tuple(_numbers(ei, _join(where, "EI"), 2, "[EI_y, EI_z]", minimum=0))
    else:
        kw["EI"] = (_number(ei, _join(where, "EI"), minimum=0),) * 2
    for key in ("GJ", "polar_inertia_per_length", "damping"):
        if key in data:
            kw[key] = _number(data[key], _join(where, key), minimum=0)
    if "shapes" in data:
        kw["shapes"] = _choice(data["shapes"], _join(where, "shapes"), SHAPE_KINDS, "shape kind")
    if "modes" in data:
        modes = _check_fields(data["modes"], _join(where, "modes"), MODE_FIELDS)
        kw["modes"] = {k: _count(v, _join(_join(where, "modes"), k)) for k, v in modes.items()}
    if "elements" in data:
        kw["elements"] = _count(data["elements"], _join(where, "elements"), 1)
    if "stiffening" in data:
        if not isinstance(data["stiffening"], bool):
            raise ModelError(f"{_join(where, 'stiffening')}: must be true or false (got {data['stiffening']!r})")
        kw["stiffening"] = data["stiffening"]
    # Beam's messages already start with "beam."; prefix only the link part of the path.
    link_path = where.rsplit(".beam", 1)[0]
    return _build(Beam, link_path, **kw)


def _placement(data, where: str) -> Placement:
    """``{xyz: [x, y, z], rpy: [roll, pitch, yaw], axis: [ax, ay, az]}`` (URDF joint origin and axis)."""
    _check_fields(data, where, PLACEMENT_FIELDS)
    xyz = _vec3(data.get("xyz", [0.0, 0.0, 0.0]), _join(where, "xyz"))
    rpy = data.get("rpy", [0.0, 0.0, 0.0])
    if not isinstance(rpy, (list, tuple)) or len(rpy) != 3:
        raise ModelError(f"{_join(where, 'rpy')}: expected 3 angles [roll, pitch, yaw] (got {_describe(rpy)})")
    rpy = [_angle(v, _join(_join(where, "rpy"), i)) for i, v in enumerate(rpy)]
    axis = _vec3(data.get("axis", [0.0, 0.0, 1.0]), _join(where, "axis"))
    if not np.linalg.norm(axis) > 1e-9:
        raise ModelError(f"{_join(where, 'axis')}: must be a non-zero vector such as [0, 0, 1]")
    return Placement(xyz, rpy, axis)


def _link(data, where: str) -> Link:
    _check_fields(data, where, LINK_FIELDS)
    joint = _choice(data.get("joint", "revolute"), _join(where, "joint"), JOINT_TYPES, "joint type")
    kw = {"joint": joint}
    if "name" in data:
        kw["name"] = _identifier(data["name"], _join(where, "name"))
    if "placement" in data:
        given = [k for k in DH_FIELDS if k in data]
        if given:
            raise ModelError(f"{_join(where, given[0])}: a link with a placement takes no DH values; "
                             "remove a, alpha, d, theta or the placement")
        kw["placement"] = _placement(data["placement"], _join(where, "placement"))
    for key in ("a", "d"):
        kw[key] = _number(data.get(key, 0.0), _join(where, key))
    for key in ("alpha", "theta"):
        kw[key] = _angle(data.get(key, 0.0), _join(where, key))
    for key in ("armature", "viscous", "coulomb"):
        kw[key] = _number(data.get(key, 0.0), _join(where, key), minimum=0)
    kw["body"] = _body({k: data[k] for k in BODY_FIELDS if k in data}, where)
    if "hub" in data:
        kw["hub"] = _body(data["hub"], _join(where, "hub"), HUB_FIELDS)
    if "beam" in data:
        kw["beam"] = _beam(data["beam"], _join(where, "beam"))
    if "limits" in data:
        lpath = _join(where, "limits")
        value = data["limits"]
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise ModelError(f"{lpath}: expected [lower, upper] (got {_describe(value)})")
        conv = _angle if joint == "revolute" else _number
        lo, hi = (conv(v, _join(lpath, i)) for i, v in enumerate(value))
        if not lo < hi:
            raise ModelError(f"{lpath}: lower limit must be below upper limit (got [{lo:g}, {hi:g}])")
        kw["limits"] = (lo, hi)
    return _build(Link, where, **kw)


def robot_from_dict(data) -> Robot:
    """Build a validated :class:`Robot` from plain data (a parsed model file).

    Besides the data-class fields, the robot gets ``controller`` (a plain dict or None),
    ``manoeuvre`` (a plain dict or None: a joint motion for ``simulate --prescribed``, checked
    here by building it, see :func:`flexman.trajectory.from_spec`),
    ``description`` (text) and ``source`` (text or a list of citations) as attributes.
    """
    try:
        robot = _robot_from_dict(plain_copy(data))
        check_mass_matrix(robot, keep_model=False)
        return robot
    except ModelError as exc:
        raise ModelError(" ".join(str(exc).split())) from None  # always one line


def _robot_from_dict(data) -> Robot:
    _check_fields(data, "", TOP_FIELDS)
    if "links" not in data:
        raise ModelError("links: required field missing (a list of links, one per joint)")
    links = data["links"]
    if not isinstance(links, list) or not links:
        raise ModelError(f"links: must be a non-empty list of links (got {_describe(links)})")
    kw = {"links": [_link(item, _join("links", i)) for i, item in enumerate(links)]}
    if "name" in data:
        kw["name"] = _identifier(data["name"], "name")
    if "gravity" in data:
        kw["gravity"] = _vec3(data["gravity"], "gravity")
    if "dh" in data:
        kw["dh"] = _choice(data["dh"], "dh", DH_CONVENTIONS, "DH convention")
    if "payload" in data:
        kw["payload"] = _body(data["payload"], "payload")
    robot = _build(Robot, "", **kw)
    robot.controller = None
    if data.get("controller") is not None:
        if not isinstance(data["controller"], dict):
            raise ModelError(f"controller: must be a mapping (got {_describe(data['controller'])})")
        robot.controller = copy.deepcopy(_plain(data["controller"], "controller"))
    robot.manoeuvre = None
    if data.get("manoeuvre") is not None:
        from ..trajectory import from_spec

        spec = copy.deepcopy(_plain(data["manoeuvre"], "manoeuvre"))
        try:
            from_spec(spec, robot.n_joints, "manoeuvre")
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        robot.manoeuvre = spec
    robot.statics = _statics(data["statics"], robot) if data.get("statics") is not None else None
    robot.description = _text(data.get("description", ""), "description")
    robot.source = _text(data.get("source", ""), "source", allow_list=True)
    return robot


def _statics(data, robot) -> dict:
    """The optional load case of ``flexman statics``: where the endpoint force acts (a point in
    the last link's distal frame), strain-gauge positions (one list per link, m from the beam
    root) and the endpoint forces [fx, fy, fz] (N, base frame) of a family of curves."""
    _check_fields(data, "statics", STATICS_FIELDS)
    out = {}
    if "point" in data:
        out["point"] = [float(v) for v in _vec3(data["point"], "statics.point")]
    if "gauges" in data:
        gauges = data["gauges"]
        if not isinstance(gauges, list) or len(gauges) > robot.n_joints or not all(isinstance(g, list) for g in gauges):
            raise ModelError(f"statics.gauges: expected one list of positions per link (at most {robot.n_joints}), "
                             f"got {_describe(gauges)}")
        out["gauges"] = [[_number(x, _join(_join("statics.gauges", i), j), minimum=0.0) for j, x in enumerate(g)]
                         for i, g in enumerate(gauges)]
        from ..analysis.statics import check_gauges

        try:
            check_gauges(robot, out["gauges"])
        except ValueError as exc:
            raise ModelError(f"statics.{exc}") from None
    if "forces" in data:
        forces = data["forces"]
        if not isinstance(forces, list) or not forces:
            raise ModelError(f"statics.forces: expected a list of forces [fx, fy, fz] (got {_describe(forces)})")
        out["forces"] = [[float(v) for v in _vec3(f, _join("statics.forces", i))] for i, f in enumerate(forces)]
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


def robot_to_dict(robot: Robot) -> dict:
    """Plain data for a robot, in the model-file schema (angles in radians).

    Optional fields are written only when they differ from their defaults, so files stay short.
    """
    out = {"name": robot.name}
    if getattr(robot, "description", ""):
        out["description"] = robot.description
    if getattr(robot, "source", ""):
        out["source"] = copy.deepcopy(robot.source)
    out["gravity"] = _floats(robot.gravity)
    out["dh"] = robot.dh
    links = []
    for link in robot.links:
        item = {"name": link.name} if link.name else {}
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
        links.append(item)
    out["links"] = links
    if robot.payload is not None:
        out["payload"] = _body_dict(robot.payload)
    if getattr(robot, "controller", None) is not None:
        out["controller"] = copy.deepcopy(robot.controller)
    if getattr(robot, "manoeuvre", None) is not None:
        out["manoeuvre"] = copy.deepcopy(robot.manoeuvre)
    if getattr(robot, "statics", None):
        out["statics"] = copy.deepcopy(robot.statics)
    return out


# ----- TOML writer (tomllib only reads) ------------------------------------------------------
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON escapes are valid TOML basic strings
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, _join(where, i)) for i, v in enumerate(value)) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v, _join(where, k))}" for k, v in value.items())
        return "{" + inner + "}"
    if value is None:
        raise ModelError(f"{where}: TOML cannot store null; remove the field or save as YAML/JSON")
    raise ModelError(f"{where}: cannot write {_describe(value)} to TOML")


def _is_table_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _toml_table(data: dict, prefix: str, lines: list, where: str) -> None:
    """Simple keys first (short mappings inline), then sub-tables and arrays of tables."""
    tables = []
    for key, value in data.items():
        path = _join(where, key)
        if isinstance(value, dict):
            inline = _toml_value(value, path)
            nested = any(isinstance(v, (dict, list)) and not _is_scalar_list(v) for v in value.values())
            if len(inline) <= 60 and not nested:
                lines.append(f"{_toml_key(key)} = {inline}")
                continue
        if isinstance(value, dict) or _is_table_list(value):
            tables.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value, path)}")
    for key, value in tables:
        name = prefix + _toml_key(key)
        if isinstance(value, dict):
            lines += ["", f"[{name}]"]
            _toml_table(value, name + ".", lines, _join(where, key))
        else:
            for i, item in enumerate(value):
                lines += ["", f"[[{name}]]"]
                _toml_table(item, name + ".", lines, _join(_join(where, key), i))


def _is_scalar_list(value) -> bool:
    return isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value)


def dumps_toml(data: dict) -> str:
    """TOML text for plain data (enough for the model schema and a plain controller dict)."""
    lines: list = []
    _toml_table(data, "", lines, "")
    return "\n".join(lines).lstrip("\n") + "\n"


# ----- files -----------------------------------------------------------------------------------
def _format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ModelError(f"{path}: unknown file type '{path.suffix}'; use .yaml, .yml, .toml or .json")
    return fmt


def _parse(text: str, fmt: str):
    """Parse text within the document limits; every problem is a one-line ModelError."""
    return parse(text, fmt)


def _example_module():
    """The bundled examples module, or None while it is not available."""
    try:
        from .. import examples
    except ImportError:
        return None
    return examples if hasattr(examples, "names") and hasattr(examples, "load") else None


def load(path_or_name, overlay=None) -> Robot:
    """Load a robot from a model file (by extension), a URDF file or, failing that, a
    bundled example name.

    ``overlay`` (a model-style file or a dict) applies to a URDF: it turns chosen links
    into beams (:mod:`flexman.model.urdf`). A model file with a top-level ``urdf:`` field
    is such an overlay; its URDF path is relative to the file.
    """
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise ModelError(f"expected a model file path or a bundled example name, got {type(path_or_name).__name__}")
    if isinstance(path_or_name, str) and not path_or_name.strip():
        raise ModelError("model: empty name; give a model file (.yaml, .toml, .json) or a bundled example name")
    path = Path(path_or_name)
    if not path.is_file():
        examples = _example_module()
        if examples is not None and isinstance(path_or_name, str) and path_or_name in examples.names():
            return examples.load(path_or_name)
        known = f"; bundled examples: {', '.join(examples.names())}" if examples is not None else ""
        what = "is a directory, not a model file" if path.is_dir() else "no such model file or bundled example"
        raise ModelError(f"{path_or_name}: {what}{known}")
    if path.suffix.lower() == ".urdf":
        from .urdf import read_urdf

        robot = read_urdf(path)
        return robot if overlay is None else _with_overlay(robot, overlay)
    if overlay is not None:
        raise ModelError(f"{path}: an overlay applies to a .urdf file only")
    data = read_data(path)
    if isinstance(data, dict) and "urdf" in data:
        return load_overlay(data, path)
    try:
        return robot_from_dict(data)
    except ModelError as exc:
        raise ModelError(" ".join(f"{path}: {exc}".split())) from None


def read_data(path) -> dict:
    """The parsed plain data of a YAML, TOML or JSON file."""
    path = Path(path)
    fmt = _format(path)
    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise ModelError(f"{path}: the file has {path.stat().st_size} bytes; model files are limited "
                             f"to {MAX_DOCUMENT_BYTES}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read the file ({exc})") from None
    try:
        return _parse(text, fmt)
    except ModelError as exc:
        raise ModelError(" ".join(f"{path}: {exc}".split())) from None


def load_overlay(data: dict, path) -> Robot:
    """A robot from an overlay whose ``urdf:`` field names the URDF (relative to ``path``)."""
    from .urdf import read_urdf

    urdf = data.get("urdf")
    if not isinstance(urdf, str) or not urdf.lower().endswith(".urdf"):
        raise ModelError(f"{path}: urdf: must be the path of a .urdf file (got {_describe(urdf)})")
    target = (Path(path).parent / urdf)
    if not target.is_file():
        raise ModelError(f"{path}: urdf: no such file {target}")
    return _with_overlay(read_urdf(target), data, path)


def _with_overlay(robot: Robot, overlay, path=None) -> Robot:
    from .urdf import apply_overlay

    if not isinstance(overlay, dict):
        path = Path(overlay)
        overlay = read_data(path)
    try:
        return apply_overlay(robot, overlay)
    except ModelError as exc:
        raise ModelError(" ".join(f"{path or 'overlay'}: {exc}".split())) from None


class _YamlDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line text (descriptions) as literal blocks."""


def _yaml_str(dumper, text):
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_YamlDumper.add_representer(str, _yaml_str)


def _json_text(value, indent: str = "") -> str:
    """JSON with lists of numbers on one line (readable vectors and inertias)."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_json_text(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + _json_text(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def dumps(robot: Robot, fmt: str = "yaml") -> str:
    """Model-file text for a robot in 'yaml', 'toml' or 'json'."""
    data = robot_to_dict(robot)
    robot_from_dict(data)  # refuse to write a file that would not load back
    if fmt == "json":
        return _json_text(data) + "\n"
    header = f"# flexman model file: {robot.name}\n"
    if fmt == "toml":
        return header + dumps_toml(data)
    if fmt == "yaml":
        return header + yaml.dump(data, Dumper=_YamlDumper, sort_keys=False,
                                  default_flow_style=None, allow_unicode=True, width=100)
    raise ModelError(f"unknown format '{fmt}'; use yaml, toml or json")


def save(robot: Robot, path) -> Path:
    """Write a robot to ``path`` (format from the extension; ``.urdf`` writes the rigid part,
    see :func:`flexman.model.urdf.robot_to_urdf`); returns the path for ``load``."""
    from ..outputs import write_text

    if not isinstance(robot, Robot):
        raise ValueError(f"save: expected a Robot, got {type(robot).__name__}")
    path = Path(path)
    if path.suffix.lower() == ".urdf":
        from .urdf import robot_to_urdf

        return write_text(path, robot_to_urdf(robot))
    return write_text(path, dumps(robot, _format(path)))  # whole or not at all
