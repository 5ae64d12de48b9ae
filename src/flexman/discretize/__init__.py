"""Beam discretizations: shape functions, their mass/stiffness integrals and frequency equations."""
from . import frequency_roots, shapes
from .frequency_roots import *  # noqa: F401,F403  (names listed in frequency_roots.__all__)
from .shapes import *  # noqa: F401,F403  (names listed in shapes.__all__)

__all__ = shapes.__all__ + frequency_roots.__all__
