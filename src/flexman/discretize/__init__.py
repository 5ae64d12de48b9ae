"""Beam discretizations: shape functions, their mass/stiffness integrals and frequency equations."""
from . import frequencies, shapes
from .frequencies import *  # noqa: F401,F403  (names listed in frequencies.__all__)
from .shapes import *  # noqa: F401,F403  (names listed in shapes.__all__)

__all__ = shapes.__all__ + frequencies.__all__
