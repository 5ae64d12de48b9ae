"""Names that reach generated code or file formats: the one place they are checked or made safe.

* :func:`identifier` validates a name read from a model file (robot and link names): plain
  ASCII letters, digits and ``_``, not starting with a digit, at most ``MAX_NAME`` characters.
* :func:`mangle` turns any text (a robot name set from Python, a file name) into an identifier
  that is valid in every language flexman emits (C, Python, Fortran, MATLAB, Julia): ASCII
  only, starting with a letter, no keyword of any of them, short enough for Fortran and MATLAB
  (63 characters) once a function suffix is added.
* :func:`comment` makes text safe inside a one-line comment of any of those languages: no line
  breaks or control characters, no ``*/`` that would end a C block comment.

Generated code never contains a name that did not pass through here.
"""
from __future__ import annotations

import hashlib
import re

from .errors import ModelError

MAX_NAME = 40   # leaves room for "_inverse_dynamics" within Fortran's and MATLAB's 63
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Reserved words of the target languages (a name equal to one, ignoring case for Fortran, gets a suffix)
KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
_Bool _Complex _Imaginary
False None True and as assert async await class def del elif except finally from global import in is lambda
nonlocal not or pass raise try with yield
abstract baremodule begin catch end export function let local macro module mutable primitive quote
struct type using where
allocatable call character complex contains data dimension elseif endif entry equivalence exit external
format implicit integer intent intrinsic logical parameter precision program pure real recursive
result save select stop subroutine then
classdef otherwise parfor persistent spmd
""".split())
_KEYWORDS_LOWER = frozenset(k.lower() for k in KEYWORDS)


def is_identifier(value) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NAME and bool(_IDENTIFIER.fullmatch(value))


def identifier(value, where: str) -> str:
    """``value`` when it is a valid name, else a one-line :class:`ModelError` naming ``where``."""
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        shown = repr(value)[:40] if isinstance(value, str) else type(value).__name__
        raise ModelError(f"{where}: must be an identifier (letters, digits and _, not starting with a digit; "
                         f"got {shown}); put free text in 'description'")
    if len(value) > MAX_NAME:
        raise ModelError(f"{where}: {len(value)} characters; names are limited to {MAX_NAME}")
    return value


def mangle(text, fallback: str = "fm") -> str:
    """A valid identifier in C, Python, Fortran, MATLAB and Julia made from ``text``.

    Valid short names come back unchanged; others have every other character replaced by
    ``_``, a letter prefix when they do not start with one, a ``_`` suffix when they are a
    keyword, and, when too long, a cut with a short hash so distinct names stay distinct."""
    text = str(text) if text is not None else ""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    if not re.match(r"[A-Za-z]", name):
        name = f"{fallback}_{name}" if name else fallback
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    if name in KEYWORDS or name.lower() in _KEYWORDS_LOWER:
        name += "_"
    return name


def comment(text, limit: int = 200) -> str:
    """``text`` as one line that cannot end a comment in any target language."""
    text = "".join(ch if ch.isprintable() and ch.isascii() else ("?" if ch.isprintable() else " ") for ch in str(text))
    text = " ".join(text.split()).replace("*/", "* /")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# C0 controls (tab and newline included: a message is one line), DEL and the C1 controls
# U+0080..U+009F, which terminals read as escape sequences (U+009B is the one-byte CSI).
_TERMINAL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text, limit: int = 200) -> str:
    """Text as it may be echoed to a terminal: every control character written as an escape
    (``\\x9b``), cut to ``limit`` characters. Names read from files (URDF link names, paths) go
    through here before they reach a message."""
    text = _TERMINAL_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    return text if len(text) <= limit else text[: limit - 3] + "..."
