"""Analyses of a robot model: natural frequencies, linearization, quasi-static deflection,
statics under endpoint loads and beam strain, closed-loop studies, the identification regressor.

The names below are imported on first use (``flexman.analysis.natural_frequencies``), so that a
simulation needing one analysis module does not import them all.
"""
import sys
import types

from ..lazy import lazy_names

_WHERE = {
    'BetaResult': 'beta_ode',
    'BetaTrajectory': 'beta_ode',
    'GivenRootModes': 'beta_ode',
    'SlidingLinkShapes': 'beta_ode',
    'beta_ode': 'beta_ode',
    'clamped_mass_shapes': 'beta_ode',
    'link_beta_ode': 'beta_ode',
    'simulate_with_beta': 'beta_ode',
    'closed_loop_eigenvalues': 'closed_loop',
    'closed_loop_jacobian': 'closed_loop',
    'Convergence': 'convergence',
    'ConvergenceNotice': 'convergence',
    'convergence': 'convergence',
    'convergence_notice': 'convergence',
    'excitation': 'excitation',
    'linearize': 'frequencies',
    'natural_frequencies': 'frequencies',
    'Sensitivity': 'sensitivity',
    'sensitivity': 'sensitivity',
    'BaseParameters': 'rigid_regressor',
    'base_parameters': 'rigid_regressor',
    'regressor': 'rigid_regressor',
    'quasi_static_along': 'quasi_static',
    'quasi_static_deflection': 'quasi_static',
    'BucklingError': 'statics',
    'StaticsResult': 'statics',
    'statics': 'statics',
    'StiffnessMargin': 'stiffness',
    'stiffness_margin': 'stiffness',
    'curvature': 'strain',
    'deflection': 'strain',
    'surface_strain': 'strain',
    'tip_offset': 'tip',
}


class _Package(types.ModuleType):
    """Importing a submodule binds it on its package; where a function has the submodule's name
    (``beta_ode``, ``statics``, ...) the function keeps the name, as when all were imported here."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _WHERE.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__getattr__, __dir__ = lazy_names(__name__, _WHERE)

__all__ = [
    "linearize",
    "natural_frequencies",
    "quasi_static_deflection",
    "quasi_static_along",
    "closed_loop_eigenvalues",
    "closed_loop_jacobian",
    "stiffness_margin",
    "StiffnessMargin",
    "beta_ode",
    "link_beta_ode",
    "BetaTrajectory",
    "BetaResult",
    "GivenRootModes",
    "SlidingLinkShapes",
    "clamped_mass_shapes",
    "simulate_with_beta",
    "tip_offset",
    "statics",
    "StaticsResult",
    "BucklingError",
    "curvature",
    "deflection",
    "surface_strain",
    "regressor",
    "base_parameters",
    "BaseParameters",
    "sensitivity",
    "Sensitivity",
    "convergence",
    "convergence_notice",
    "Convergence",
    "ConvergenceNotice",
    "excitation",
]
