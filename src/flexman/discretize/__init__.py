"""Beam discretizations: shape functions, their mass/stiffness integrals and frequency equations."""
from .frequencies import (
    beam_frequencies,
    beta_rate,
    clamped_free_roots,
    clamped_mass_roots,
    exact_frequencies,
    frequency_equation,
    frequency_equation_partials,
    torsion_roots,
)
from .shapes import (
    DIRECTIONS,
    KINDS,
    ShapeSet,
    mass_matrix,
    shape_set,
    stiffness_matrix,
    tip_mass_matrix,
)

__all__ = [
    "ShapeSet",
    "shape_set",
    "stiffness_matrix",
    "mass_matrix",
    "tip_mass_matrix",
    "clamped_free_roots",
    "clamped_mass_roots",
    "torsion_roots",
    "frequency_equation",
    "frequency_equation_partials",
    "beta_rate",
    "beam_frequencies",
    "exact_frequencies",
    "KINDS",
    "DIRECTIONS",
]
