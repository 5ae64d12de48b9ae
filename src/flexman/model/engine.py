"""Named slots through which the model layer reaches the layers built on it.

The model (layer 0) holds data; the algorithms (dynamics), analyses, views and reports live in
higher layers that import the model, never the other way round. Where a model object offers a
convenience that a higher layer implements (``Robot.mass_matrix``, ``Robot._repr_html_``,
``Result.plot``...), it asks this module for the implementation by name::

    require("dynamics").mass_matrix(robot, q)

and :func:`flexman.wiring.connect` (run by ``import flexman``) fills the slots with
:func:`provide`. A slot may be filled with the object itself or, to keep ``import flexman``
light, with a loader called once on first use (``provide(name, lazy=loader)``).
"""
from __future__ import annotations

# Every slot the lower layers use, with what it holds (the error message names it).
SLOTS = {
    "check_manoeuvre": "from_spec(spec, n_joints, field): a model file's manoeuvre checked (flexman.trajectory)",
    "codegen": "the code generators (flexman.codegen): compile_eom, export, casadi_export, fmu.write_fmu",
    "dynamics": "the numeric dynamics API (flexman.dynamics.api)",
    "natural_frequencies": "natural_frequencies(robot, q, qd=None) (flexman.analysis.frequencies)",
    "robot_html": "robot_html(robot): a robot's notebook view (flexman.viz.notebook)",
    "result_html": "result_html(result): a run's notebook view (flexman.viz.notebook)",
    "eom_html": "eom_html(eom): the equations' notebook view (flexman.viz.equations)",
    "plot_result": "plot_result(result, path, robot): a run's plots (flexman.viz.plots)",
    "write_report": "write_report(result, path, robot=..., **options) (flexman.viz.report)",
    "plot_robustness": "plot_robustness(data, path, tolerance=, title=): a shaper's robustness curve (flexman.viz.shaping)",
}

_filled: dict = {}
_loaders: dict = {}


class UnfilledSlot(RuntimeError):
    """A slot was required before :func:`flexman.wiring.connect` filled it."""


def provide(name: str, obj=None, *, lazy=None) -> None:
    """Fill slot ``name`` with ``obj``, or with ``lazy()`` evaluated on first :func:`require`."""
    if name not in SLOTS:
        raise KeyError(f"engine slot {name!r}: unknown; known slots: {', '.join(SLOTS)}")
    if (obj is None) == (lazy is None):
        raise ValueError(f"engine slot {name!r}: give either an object or lazy=loader")
    _filled.pop(name, None)
    _loaders.pop(name, None)
    if lazy is not None:
        _loaders[name] = lazy
    else:
        _filled[name] = obj


def require(name: str):
    """The object in slot ``name``; :class:`UnfilledSlot` naming it when nothing filled it."""
    try:
        return _filled[name]
    except KeyError:
        pass
    loader = _loaders.get(name)
    if loader is None:
        what = SLOTS.get(name, "an unknown slot")
        raise UnfilledSlot(f"flexman engine slot {name!r} ({what}) is not filled: import flexman "
                           "(flexman.wiring.connect() fills the slots)")
    obj = _filled[name] = loader()
    return obj


def filled(name: str) -> bool:
    """Whether slot ``name`` has been provided (loaded or not)."""
    return name in _filled or name in _loaders
