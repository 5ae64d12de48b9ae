"""Model-file text to plain data, safely: the door every model file comes through.

The parsers are the standard safe ones (``yaml.safe_load``'s constructor, ``tomllib``,
``json``); around them this module enforces :mod:`.limits` so that no file can hang the
loader or crash it with an internal error:

* size: documents over ``MAX_DOCUMENT_BYTES`` are refused before parsing;
* YAML aliases: the event stream is read first (linear time, no recursion) to measure the
  nesting depth and the size of the document with every alias expanded, so alias bombs and
  self-referencing aliases are refused before anything is built;
* nesting deeper than ``MAX_DEPTH`` (JSON and TOML parsers recurse: caught as well);
* a key given twice in one mapping is an error naming the field (the parsers would keep the
  last value silently);
* integers too long to convert, or too large for a float, and text with terminal control
  characters are refused with the field named;
* a UTF-8 byte-order mark and CRLF line ends are accepted.

The result is a fresh tree of dicts, lists and scalars (no shared references).
"""
from __future__ import annotations

import json
import math
import re

import yaml

from .errors import ModelError
from .limits import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NODES, MAX_TEXT

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed: 10x faster
_COLLECTION_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
# C0 controls other than tab and newline, DEL and C1 controls: terminal escape codes and the like
_CONTROL = {c for c in range(0x20) if c not in (0x09, 0x0A)} | {0x7F} | set(range(0x80, 0xA0))
_CONTROL_TABLE = dict.fromkeys(_CONTROL)


class _Mapping(dict):
    """A parsed mapping that remembers keys given more than once: [(key, where), ...]."""

    duplicated: list = []


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _line(mark) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


# ----- YAML ------------------------------------------------------------------------------------
class _YamlLoader(_BASE_LOADER):
    """The safe loader, with duplicate keys recorded and over-long integers reported."""

    def construct_yaml_map(self, node):
        data = _Mapping()
        yield data
        seen, duplicated = {}, []
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue  # merged keys (<<) may be overridden; complex keys fail below
            key = (key_node.tag, key_node.value)
            if key in seen:
                first = seen[key].start_mark
                duplicated.append((key_node.value, f" (lines {first.line + 1} and {key_node.start_mark.line + 1})"))
            else:
                seen[key] = key_node
        data.update(self.construct_mapping(node))
        if duplicated:
            data.duplicated = duplicated

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise ModelError(f"invalid YAML{_line(node.start_mark)}: an integer with {len(node.value)} "
                             "characters; no model value needs that many digits") from None


# YAML 1.1 (PyYAML) reads 1e9, 1.0e9 and 6.0e0 as text: its float pattern wants a dot and a signed
# exponent. YAML 1.2, JSON and TOML read them as numbers; so does every flexman file (model fields,
# manoeuvres, overlays, controllers, sweep specifications): this one resolver makes them floats.
EXPONENT_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")
_YamlLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(EXPONENT_NUMBER.pattern + "$"),
                                  list("-+0123456789."))
_YamlLoader.add_constructor("tag:yaml.org,2002:map", _YamlLoader.construct_yaml_map)
_YamlLoader.add_constructor("tag:yaml.org,2002:int", _YamlLoader.construct_yaml_int)


def _yaml_error(exc: yaml.YAMLError) -> ModelError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return ModelError(f"invalid YAML{_line(mark)}: {problem}")


def _check_yaml_events(text: str) -> None:
    """Depth, alias-expanded size and self-referencing aliases, from the event stream.

    Each anchor's expanded size is remembered, so an alias costs one lookup: a bomb of nested
    aliases is measured in time linear in the text, and refused as soon as it passes MAX_NODES.
    """
    expanded = {}      # anchor -> size of its value with aliases expanded
    open_ = []         # [anchor, size so far] of each collection being read
    total = 0
    for event in yaml.parse(text, Loader=_BASE_LOADER):
        if isinstance(event, _COLLECTION_START):
            if len(open_) >= MAX_DEPTH:
                raise ModelError(f"invalid YAML{_line(event.start_mark)}: nested deeper than {MAX_DEPTH} "
                                 "levels; a model file needs a few")
            open_.append([event.anchor, 1])
            continue
        if isinstance(event, _COLLECTION_END):
            anchor, size = open_.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            if any(entry[0] == event.anchor for entry in open_):
                raise ModelError(f"invalid YAML{_line(event.start_mark)}: the alias *{event.anchor} refers to "
                                 "a value that contains it (a recursive structure); write the value out")
            anchor, size = None, expanded.get(event.anchor, 1)
        else:
            continue
        if anchor is not None:
            expanded[anchor] = size
        if open_:
            open_[-1][1] += size
            size = open_[-1][1]
        else:
            total += size
            size = total
        if size > MAX_NODES:
            raise ModelError(f"invalid YAML{_line(event.start_mark)}: the document expands to more than "
                             f"{MAX_NODES} values (aliases included); a model file needs a few hundred")


def _parse_yaml(text: str):
    try:
        _check_yaml_events(text)
        return yaml.load(text, Loader=_YamlLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise _yaml_error(exc) from None


# ----- TOML and JSON ---------------------------------------------------------------------------
class _LongInteger(str):
    """An integer literal too long to convert, kept as text so its field can be named."""


def _json_int(text: str):
    return int(text) if len(text.lstrip("-")) <= 4300 else _LongInteger(text)  # Python's own limit


def _json_object(pairs):
    data = _Mapping()
    for key, value in pairs:
        if key in data:
            data.duplicated = data.duplicated + [(key, "")]
        data[key] = value
    return data


def _parse_other(text: str, fmt: str):
    if fmt == "toml":
        import tomllib  # here: most runs read YAML, and the TOML parser's import is not free

        try:
            return tomllib.loads(text)  # TOML itself forbids duplicate keys
        except tomllib.TOMLDecodeError as exc:
            raise ModelError(f"invalid TOML: {exc}") from None
    try:
        return json.loads(text, object_pairs_hook=_json_object, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise ModelError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


# ----- entry point -----------------------------------------------------------------------------
def parse(text: str, fmt: str):
    """Plain data from model-file text in 'yaml', 'toml' or 'json' (see the module doc)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise ModelError(f"the file has {size} bytes; model files are limited to {MAX_DOCUMENT_BYTES}")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    try:
        data = _parse_yaml(text) if fmt == "yaml" else _parse_other(text, fmt)
    except RecursionError:
        raise ModelError(f"invalid {fmt.upper()}: nested deeper than {MAX_DEPTH} levels; "
                         "a model file needs a few") from None
    except ModelError:
        raise
    except ValueError as exc:  # int() of an over-long number inside the parser
        if "integer string conversion" in str(exc):
            raise ModelError(f"invalid {fmt.upper()}: an integer with more than 4300 digits; "
                             "no model value needs that many") from None
        raise ModelError(f"invalid {fmt.upper()}: {' '.join(str(exc).split())}") from None
    return plain_copy(data)


def read(path, fmt: str = "yaml"):
    """Plain data from a data file other than a model (a controller, a sweep specification):
    the same door and limits; errors are one-line ModelErrors that start with the path."""
    from pathlib import Path

    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise ModelError(f"{path}: the file has {size} bytes; data files are limited to {MAX_DOCUMENT_BYTES}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read the file ({exc})") from None
    try:
        return parse(text, fmt)
    except ModelError as exc:
        raise ModelError(" ".join(f"{path}: {exc}".split())) from None


def _check_scalar(value, where: str) -> None:
    if isinstance(value, _LongInteger):
        raise ModelError(f"{where}: an integer with {len(value.lstrip('-'))} digits; no model value needs that many")
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ModelError(f"{where or 'document'}: text of {len(value)} characters; the limit is {MAX_TEXT}")
        if value.translate(_CONTROL_TABLE) != value:
            bad = next(ch for ch in value if ord(ch) in _CONTROL)
            raise ModelError(f"{where or 'document'}: contains the control character U+{ord(bad):04X} "
                             "(a terminal escape code?); remove it")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1e308:
        raise ModelError(f"{where}: the integer {str(value)[:12]}... ({len(str(abs(value)))} digits) is too "
                         "large for a float; use a number below 1e308")
    elif isinstance(value, float) and math.isnan(value):
        pass  # the field's own check names it


def plain_copy(data):
    """A fresh copy of parsed data as plain dicts and lists, checking depth, size, duplicate
    keys, text and integers on the way (iteratively: no recursion limit to hit)."""
    root = [None]
    todo = [(data, root, 0, "", 1)]  # (value, container, slot, path, depth)
    count = 0
    while todo:
        value, parent, slot, where, depth = todo.pop()
        count += 1
        if count > MAX_NODES:
            raise ModelError(f"the document has more than {MAX_NODES} values; a model file needs a few hundred")
        if isinstance(value, (dict, list)) and depth > MAX_DEPTH:
            raise ModelError(f"{where}: nested deeper than {MAX_DEPTH} levels; a model file needs a few")
        if isinstance(value, dict):
            for key, why in getattr(value, "duplicated", ()):
                raise ModelError(f"{_join(where, key)}: given twice{why}; keep one")
            copy = {}
            for key, item in value.items():
                _check_scalar(key, where)
                copy[key] = None
                todo.append((item, copy, key, _join(where, key), depth + 1))
        elif isinstance(value, list):
            copy = [None] * len(value)
            todo.extend((item, copy, i, _join(where, i), depth + 1) for i, item in enumerate(value))
        else:
            _check_scalar(value, where)
            copy = value
        parent[slot] = copy
    return root[0]
