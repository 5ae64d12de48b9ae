"""Analyses of a robot model: natural frequencies, linearization, quasi-static deflection,
statics under endpoint loads and beam strain, closed-loop studies, the identification regressor."""
from .beta_ode import (BetaResult, BetaTrajectory, GivenRootModes, SlidingLinkShapes, beta_ode,
                       clamped_mass_shapes, link_beta_ode, simulate_with_beta)
from .closed_loop import closed_loop_eigenvalues, closed_loop_jacobian
from .convergence import Convergence, ConvergenceNotice, convergence, convergence_notice
from .excitation import excitation
from .frequencies import linearize, natural_frequencies
from .sensitivity import Sensitivity, sensitivity
from .rigid_regressor import BaseParameters, base_parameters, regressor
from .quasi_static import quasi_static_along, quasi_static_deflection
from .statics import BucklingError, StaticsResult, statics
from .stiffness import StiffnessMargin, stiffness_margin
from .strain import curvature, deflection, surface_strain
from .tip import tip_offset

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
