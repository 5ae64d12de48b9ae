"""Which evaluator runs the equations of motion in a simulation: compiled C or interpreted NumPy.

``backend="auto"`` (the default) uses the robot's compiled model (built on first use and cached
on disk, see :mod:`flexman.codegen.modelcache`) when a C compiler is available and the robot
can be compiled, and otherwise the interpreted model, saying so in one line on stderr (once
per reason and process). ``"compiled"`` insists (an error names the reason) and
``"numeric"`` never compiles. The environment variable ``FLEXMAN_BACKEND`` sets the default
(the test suite sets ``numeric`` and opts in where it tests the compiled path).

``"auto"`` pays for itself: when the caller says how much work the run is (``work``: its steps
of one state, RK4 steps times runs; for adaptive methods the output steps, a lower bound) and
the model is not built yet, it
weighs the estimated build time (:func:`estimated_build_seconds`, from the coordinate count and
the beams' shapes; measured in docs/scaling.md) against the run's cost on the interpreted model
(one timed forward-dynamics call times four per step). A run that would finish interpreted before the
compiler does runs interpreted, and the notice says so, with both estimates; the model is then
built in a detached background process for the next run (:mod:`flexman.codegen.background`,
``FLEXMAN_BACKGROUND_COMPILE=0`` turns that off).
"""
from __future__ import annotations

import os
import sys
import time

from ..dynamics.api import mass_matrix_and_bias
from ..model import Robot

BACKENDS = ("auto", "compiled", "numeric")
_said = set()


def default_backend() -> str:
    value = os.environ.get("FLEXMAN_BACKEND", "").strip().lower() or "auto"
    if value not in BACKENDS:
        raise ValueError(f"FLEXMAN_BACKEND: unknown '{value}'; use one of {', '.join(BACKENDS)}")
    return value


def notice(text, key=None):
    """Print ``flexman: <text>`` on stderr once per process (per ``key`` when given: a notice whose
    numbers vary a little from run to run is still said once)."""
    key = text if key is None else key
    if key not in _said:
        _said.add(key)
        print(f"flexman: {text}", file=sys.stderr)


#: build time (derive + compile, wall seconds on the 2-core development machine) of a model of nq
#: coordinates: BUILD_BASE + BUILD_PER_NQ2 * nq**2, fitted to docs/scaling.md's chains; models with
#: clamped-mass beams (every value is structure, no shared parameters) take BUILD_CLAMPED_MASS times that
BUILD_BASE, BUILD_PER_NQ2, BUILD_CLAMPED_MASS = 1.5, 0.0038, 5.0
RHS_PER_STEP = 4  # right-hand sides per RK4 step


def estimated_build_seconds(robot) -> float:
    """Seconds to derive and compile ``robot``'s model on a cold cache (see the constants above)."""
    seconds = BUILD_BASE + BUILD_PER_NQ2 * robot.nq ** 2
    if any(link.beam is not None and link.beam.shapes == "clamped_mass" for link in robot.links):
        seconds *= BUILD_CLAMPED_MASS
    return seconds


def interpreted_seconds_per_call(robot) -> float:
    """One interpreted forward-dynamics call at rest, timed (after a first call that builds the
    numeric model); kept per robot content, so repeated decisions agree."""
    import numpy as np

    def measure(r):
        q, tau = np.zeros(r.nq), np.zeros(r.n_joints)
        try:
            r.forward_dynamics(q, q, tau)
            call = r.forward_dynamics
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # a singular M at rest: the run's own
            # check says so in its words; time what the call costs without the solve
            call = lambda q, qd, _: mass_matrix_and_bias(r, q, qd)  # noqa: E731
        start = time.perf_counter()
        call(q, q, tau)
        return time.perf_counter() - start

    return robot.derived("interpreted_fd_seconds", measure)


def worth_compiling(robot, work):
    """(True, "") when building the compiled model costs less than running ``work`` right-hand
    sides interpreted; else (False, the reason in words, with both estimates)."""
    build = estimated_build_seconds(robot)
    run = interpreted_seconds_per_call(robot) * work
    if build < run:
        return True, ""
    return False, (f"compiling '{robot.name}' ({robot.nq} coordinates) would take about {build:.3g} s, the run about "
                   f"{run:.2g} s interpreted (backend='compiled' compiles and caches it)")


def fixed_step_work(method, steps):
    """The steps a run will take when it is known beforehand (``steps`` for fixed-step RK4), else
    None: an adaptive method may take many steps per output (a fast mode, a growing solution), so
    its cost cannot be weighed against a build and the model is compiled as for any long run."""
    return steps if str(method).lower() == "rk4" else None


def evaluator(robot, backend=None, formulation="newton_euler", quiet=False, work=None):
    """The object whose ``forward_dynamics`` (and the rest of the numeric API) a simulation
    calls: ``robot`` itself (numeric), or its compiled model. A compiled model or any other
    non-Robot object is returned unchanged. ``quiet``: no build or fall-back lines. ``work``:
    the run's steps (of one state), so that ``"auto"`` does not build a model for a run that
    costs less than the build (see the module doc)."""
    backend = default_backend() if backend is None else str(backend).lower()
    if backend not in BACKENDS:
        raise ValueError(f"backend: unknown '{backend}'; use one of {', '.join(BACKENDS)}")
    if not isinstance(robot, Robot):
        return robot
    if backend == "numeric":
        return robot.numeric()  # its methods too: never a compiled model found in the cache
    from ..codegen import cbuild
    from ..codegen.modelcache import NotCompilable, check_compilable, compiled_model, existing_model

    say = None if quiet else (lambda line: print(line, file=sys.stderr))
    try:
        if backend == "auto" and work is not None:
            built = existing_model(robot, formulation)
            if built is not None:
                return built
            check_compilable(robot)  # these two fail as compiled_model would, before any weighing
            cbuild.compiler()
            worth, why = worth_compiling(robot, RHS_PER_STEP * work)
            if not worth:
                from ..codegen import background

                if background.start(robot, formulation, estimated_build_seconds(robot)):
                    why += "; compiling it in the background for the next run (FLEXMAN_BACKGROUND_COMPILE=0: never)"
                if not quiet:  # once per model: the timings in the text vary from run to run
                    notice(f"running the interpreted model: {why}", key=("interpreted", robot.name, robot.nq))
                return robot
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


def mass_and_bias(model, q, qd):
    """(M(q), b(q, qd)) of the evaluator ``model``: one recursion for the interpreted robot (its
    two functions apart run two), a compiled model's own two functions otherwise. For the
    callers that need both at every stage (model-based controllers, prescribed motion)."""
    if isinstance(model, Robot):
        return mass_matrix_and_bias(model, q, qd)
    return model.mass_matrix(q), model.bias_forces(q, qd)
