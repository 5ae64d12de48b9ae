"""Analyses of a robot model: natural frequencies, linearization, quasi-static deflection,
statics under endpoint loads and beam strain, closed-loop studies, the identification regressor.

The names below are imported on first use (``flexman.analysis.natural_frequencies``), so that a
simulation needing one analysis module does not import them all. Functions and modules have
distinct names (``statics`` is a function of :mod:`.endpoint_statics`, ``convergence`` of
:mod:`.modal_convergence`, ``excitation`` of :mod:`.excitation_design`, ``sensitivity`` of
:mod:`.sensitivities`, ``beta_ode`` of :mod:`.beta`), so importing a module never hides a function.
"""
from ..lazy import lazy_names

_WHERE = {
    'BetaResult': 'beta',
    'BetaTrajectory': 'beta',
    'GivenRootModes': 'beta',
    'SlidingLinkShapes': 'beta',
    'beta_ode': 'beta',
    'clamped_mass_shapes': 'beta',
    'link_beta_ode': 'beta',
    'simulate_with_beta': 'beta',
    'closed_loop_eigenvalues': 'closed_loop',
    'closed_loop_jacobian': 'closed_loop',
    'Convergence': 'modal_convergence',
    'ConvergenceNotice': 'modal_convergence',
    'convergence': 'modal_convergence',
    'convergence_notice': 'modal_convergence',
    'excitation': 'excitation_design',
    'linearize': 'frequencies',
    'natural_frequencies': 'frequencies',
    'Sensitivity': 'sensitivities',
    'sensitivity': 'sensitivities',
    'BaseParameters': 'rigid_regressor',
    'base_parameters': 'rigid_regressor',
    'regressor': 'rigid_regressor',
    'quasi_static_along': 'quasi_static',
    'quasi_static_deflection': 'quasi_static',
    'BucklingError': 'endpoint_statics',
    'StaticsResult': 'endpoint_statics',
    'statics': 'endpoint_statics',
    'StiffnessMargin': 'stiffness',
    'stiffness_margin': 'stiffness',
    'curvature': 'strain',
    'deflection': 'strain',
    'surface_strain': 'strain',
    'tip_offset': 'tip',
}


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
