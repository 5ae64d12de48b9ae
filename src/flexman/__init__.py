"""flexman: dynamics, code generation and simulation of manipulators with rigid and flexible links."""
from .model import Beam, Drive, Link, ModelError, RigidBody, Robot
from .model.errors import one_line_warnings as _one_line_warnings
from .simulate import Result, simulate, simulate_batch
from .wiring import connect as _connect

_connect()  # fill the model's engine slots with the higher layers (flexman.wiring)
_one_line_warnings()  # flexman's notices: one line each, no source line

from .version import __version__  # noqa: F401


def load(path, overlay=None, args=None, floating=False):
    """Load a robot from a YAML, TOML or JSON model file, a URDF or a xacro file (``args``: the
    xacro arguments; with an optional overlay that makes chosen links flexible) or a bundled
    example name. ``floating=True``: a URDF's root link flies (six base coordinates first)."""
    from .model.io import load as _load

    return _load(path, overlay=overlay, bundled=bundled_examples(), args=args, floating=floating)


def save(robot, path):
    """Save a robot to YAML, TOML, JSON or URDF (the rigid part), chosen by the file extension."""
    from .model.io import save as _save
    from .urdf_export import robot_to_urdf

    return _save(robot, path, writers={".urdf": robot_to_urdf})


def bundled_examples():
    """The bundled examples (:mod:`flexman.examples`: ``names()``, ``path(name)``,
    ``load(name)``), or None while they are not available in this installation."""
    try:
        from . import examples
    except ImportError:
        return None
    return examples if hasattr(examples, "names") and hasattr(examples, "load") else None


def derive(robot, formulation="newton_euler", parameters="numeric", **options):
    """Derive symbolic equations of motion; see :mod:`flexman.symbolic` (options: fold, cse,
    external: wrenches on every link as named inputs, default with symbolic parameters)."""
    from .symbolic import derive as _derive

    return _derive(robot, formulation=formulation, parameters=parameters, **options)


def sweep(robot, parameters, run=None, scheduler=None, **options):
    """Simulate variants of ``robot`` on Dask and collect figures in one Parquet file; see
    :mod:`flexman.sweeps` (options: sampling, samples, seed, figures, out, n_workers, progress)."""
    from .extras import require
    from .sweeps import sweep as _sweep

    require("distributed", "fm.sweep"), require("pyarrow", "fm.sweep")
    return _sweep(robot, parameters, run=run, scheduler=scheduler, **options)


def identify(robot, t, q, tau, parameters=None, **options):
    """Identify parameters from measured motion: the base inertial parameters of a rigid arm by
    weighted least squares, or named beam properties of flexible links by nonlinear least squares
    on simulations; see :mod:`flexman.analysis.identification`."""
    from .analysis.identification import identify as _identify

    return _identify(robot, t, q, tau, parameters=parameters, **options)


def plan(robot, q_start, q_goal, duration=None, limits=None, objective=None, **options):
    """An optimal rest-to-rest move over the full flexible dynamics (CasADi + IPOPT): minimum
    effort, time, tip deflection, an end-effector path, or a weighted sum; see
    :func:`flexman.planning.plan` (options: knots, path, pre_post, guess, max_iter)."""
    from .extras import require
    from .planning import plan as _plan

    require("casadi", "fm.plan")
    return _plan(robot, q_start, q_goal, duration=duration, limits=limits, objective=objective, **options)


def reduce(robot, above_hz=None, coordinates=None, static=True):
    """The model of ``robot`` with the flexible coordinates whose mode is above ``above_hz`` (Hz),
    or those named in ``coordinates``, replaced by their quasi-static deflection (the static
    correction of modal truncation; ``static=False``: dropped outright). ``fm.simulate`` runs it
    with the full coordinates in its result; see :mod:`flexman.analysis.reduction` and
    docs/stiff.md."""
    from .analysis.reduction import reduce as _reduce

    return _reduce(robot, above_hz=above_hz, coordinates=coordinates, static=static)


def __getattr__(name):
    import importlib

    if name in ("examples", "trajectory", "control", "analysis", "discretize", "dynamics", "viz", "planning", "sensors"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(name)


__all__ = ["Beam", "Drive", "Link", "ModelError", "RigidBody", "Result", "Robot", "load", "save", "bundled_examples", "simulate", "simulate_batch", "derive", "sweep", "identify", "plan", "reduce"]
