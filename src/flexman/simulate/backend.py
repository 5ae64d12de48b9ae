"""Which evaluator runs the equations of motion in a simulation: compiled C or interpreted NumPy.

``backend="auto"`` (the default) uses the robot's compiled model (built on first use and cached
on disk, see :mod:`flexman.codegen.modelcache`) when a C compiler is available and the robot
can be compiled, and otherwise the interpreted model, saying so in one line on stderr (once
per reason and process). ``"compiled"`` insists (an error names the reason) and
``"numeric"`` never compiles. The environment variable ``FLEXMAN_BACKEND`` sets the default
(the test suite sets ``numeric`` and opts in where it tests the compiled path).
"""
from __future__ import annotations

import os
import sys

BACKENDS = ("auto", "compiled", "numeric")
_said = set()


def default_backend() -> str:
    value = os.environ.get("FLEXMAN_BACKEND", "").strip().lower() or "auto"
    if value not in BACKENDS:
        raise ValueError(f"FLEXMAN_BACKEND: unknown '{value}'; use one of {', '.join(BACKENDS)}")
    return value


def notice(text):
    """Print ``flexman: <text>`` on stderr once per process."""
    if text not in _said:
        _said.add(text)
        print(f"flexman: {text}", file=sys.stderr)


def evaluator(robot, backend=None, formulation="newton_euler", quiet=False, work=None):
    """The object whose ``forward_dynamics`` (and the rest of the numeric API) a simulation
    calls: ``robot`` itself (numeric), or its compiled model. A compiled model or any other
    non-Robot object is returned unchanged. ``quiet``: no build or fall-back lines."""
    from ..model import Robot

    backend = default_backend() if backend is None else str(backend).lower()
    if backend not in BACKENDS:
        raise ValueError(f"backend: unknown '{backend}'; use one of {', '.join(BACKENDS)}")
    if backend == "numeric" or not isinstance(robot, Robot):
        return robot
    from ..codegen.modelcache import NotCompilable, compiled_model

    say = None if quiet else (lambda line: print(line, file=sys.stderr))
    try:
        return compiled_model(robot, formulation, progress=say)
    except (NotCompilable, RuntimeError, OSError, ImportError) as exc:
        if backend == "compiled":
            raise ValueError(f"backend='compiled': {_first_line(exc)}") from None
        if not quiet:
            notice(f"using the interpreted model (slower): {_first_line(exc)}")
        return robot


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
