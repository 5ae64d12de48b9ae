"""Analyses of a robot model: natural frequencies, linearization, closed-loop studies."""
from .beta_ode import BetaTrajectory, beta_ode, link_beta_ode
from .closed_loop import closed_loop_eigenvalues, closed_loop_jacobian
from .frequencies import linearize, natural_frequencies
from .stiffness import StiffnessMargin, stiffness_margin

__all__ = [
    "linearize",
    "natural_frequencies",
    "closed_loop_eigenvalues",
    "closed_loop_jacobian",
    "stiffness_margin",
    "StiffnessMargin",
    "beta_ode",
    "link_beta_ode",
    "BetaTrajectory",
]
