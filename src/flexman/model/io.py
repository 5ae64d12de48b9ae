"""Model files: YAML, TOML and JSON share one schema (docs/conventions.md).

``load`` / ``save`` pick the format from the file extension; the schema itself, the mapping
between plain data and :class:`~flexman.model.robot.Robot`, is :mod:`flexman.model.serialize`
(``robot_from_dict`` / ``robot_to_dict``).

Every problem in a file raises :class:`ModelError` with one line that names the field
path (``links[1].mass: ...``) and says what to write instead. Nothing read from a file is
ever executed: YAML is read with the safe loader, TOML with ``tomllib``, JSON with
``json``; names are checked to be plain identifiers.

This module knows no bundled examples: a caller that resolves example names (the root
``flexman.load``) passes them as ``bundled`` to :func:`load`.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import yaml

from .errors import ModelError
from .limits import MAX_DOCUMENT_BYTES
from .parse import parse
from .robot import Robot
from .tracking import TrackedDict, TrackedList
from .serialize import describe_value, join, robot_from_dict, robot_to_dict

__all__ = ["FORMATS", "load", "save", "dumps", "dumps_toml", "read_data", "load_overlay"]

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json"}


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
        return "[" + ", ".join(_toml_value(v, join(where, i)) for i, v in enumerate(value)) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v, join(where, k))}" for k, v in value.items())
        return "{" + inner + "}"
    if value is None:
        raise ModelError(f"{where}: TOML cannot store null; remove the field or save as YAML/JSON")
    raise ModelError(f"{where}: cannot write {describe_value(value)} to TOML")


def _is_table_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _toml_table(data: dict, prefix: str, lines: list, where: str) -> None:
    """Simple keys first (short mappings inline), then sub-tables and arrays of tables."""
    tables = []
    for key, value in data.items():
        path = join(where, key)
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
            _toml_table(value, name + ".", lines, join(where, key))
        else:
            for i, item in enumerate(value):
                lines += ["", f"[[{name}]]"]
                _toml_table(item, name + ".", lines, join(join(where, key), i))


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


def load(path_or_name, overlay=None, bundled=None, args=None, floating=False) -> Robot:
    """Load a robot from a model file (by extension), a URDF file or, failing that, a
    bundled example name.

    ``bundled`` resolves example names: an object with ``names()`` and ``load(name)`` (the
    :mod:`flexman.examples` package, as the root ``flexman.load`` passes it), or None when
    there are no bundled examples to fall back on.

    ``overlay`` (a model-style file or a dict) applies to a URDF: it turns chosen links
    into beams (:mod:`flexman.model.urdf`). A model file with a top-level ``urdf:`` field
    is such an overlay; its URDF path is relative to the file. A ``.xacro`` file is expanded
    by the ``xacro`` package with ``args`` (its ``<xacro:arg>`` values) and read as a URDF.
    ``floating=True`` makes a URDF's root link a free body (:mod:`flexman.model.floating`).
    """
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise ModelError(f"expected a model file path or a bundled example name, got {type(path_or_name).__name__}")
    if isinstance(path_or_name, str) and not path_or_name.strip():
        raise ModelError("model: empty name; give a model file (.yaml, .toml, .json) or a bundled example name")
    path = Path(path_or_name)
    if not path.is_file():
        if bundled is not None and isinstance(path_or_name, str) and path_or_name in bundled.names():
            return bundled.load(path_or_name)
        known = f"; bundled examples: {', '.join(bundled.names())}" if bundled is not None else ""
        what = "is a directory, not a model file" if path.is_dir() else "no such model file or bundled example"
        raise ModelError(f"{path_or_name}: {what}{known}")
    if path.suffix.lower() in (".urdf", ".xacro"):
        from .urdf import read_urdf, read_xacro

        robot = (read_xacro(path, args, check=overlay is None, floating=floating) if path.suffix.lower() == ".xacro"
                 else read_urdf(path, check=overlay is None, floating=floating))  # with an overlay: checked once it is applied
        return robot if overlay is None else _with_overlay(robot, overlay)
    if args is not None:
        raise ModelError(f"{path}: args are the arguments of a .xacro file; this is not one")
    if floating:
        raise ModelError(f"{path}: floating=True frees the root link of a URDF; a model file writes a floating "
                         "base as its six links (docs/urdf.md)")
    if overlay is not None:
        raise ModelError(f"{path}: an overlay applies to a .urdf file only")
    data = read_data(path)
    if isinstance(data, dict) and "urdf" in data:
        return load_overlay(data, path)
    try:
        robot = robot_from_dict(data)
    except ModelError as exc:
        raise ModelError(" ".join(f"{path}: {exc}".split())) from None
    for vis in getattr(robot, "visuals", None) or []:  # mesh files relative to the model file's folder
        if vis.kind == "mesh" and not os.path.isabs(vis.path):
            vis.path = os.path.normpath(path.resolve().parent / vis.path)
    return robot


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
        raise ModelError(f"{path}: urdf: must be the path of a .urdf file (got {describe_value(urdf)})")
    target = (Path(path).parent / urdf)
    if not target.is_file():
        raise ModelError(f"{path}: urdf: no such file {target}")
    return _with_overlay(read_urdf(target, check=False), data, path)


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
_YamlDumper.add_representer(TrackedList, yaml.SafeDumper.represent_list)  # a robot's lists and dicts
_YamlDumper.add_representer(TrackedDict, yaml.SafeDumper.represent_dict)


def _json_text(value, indent: str = "") -> str:
    """JSON with lists of numbers on one line (readable vectors and inertias)."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_json_text(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + _json_text(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def dumps(robot: Robot, fmt: str = "yaml", base_dir=None) -> str:
    """Model-file text for a robot in 'yaml', 'toml' or 'json' (``base_dir``: the folder of the file
    it goes to, so that mesh paths are written relative to it)."""
    data = robot_to_dict(robot, base_dir)
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


def save(robot: Robot, path, writers=None) -> Path:
    """Write a robot to ``path`` (format from the extension); returns the path for ``load``.

    ``writers`` maps further extensions to functions ``robot -> text`` (the root
    ``flexman.save`` adds ``.urdf``: the rigid part, see :func:`flexman.urdf_export.robot_to_urdf`).
    """
    from ..outputs import write_text

    if not isinstance(robot, Robot):
        raise ValueError(f"save: expected a Robot, got {type(robot).__name__}")
    path = Path(path)
    writer = (writers or {}).get(path.suffix.lower())
    if writer is not None:
        return write_text(path, writer(robot))
    return write_text(path, dumps(robot, _format(path), path.resolve().parent))  # whole or not at all
