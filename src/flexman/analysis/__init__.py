"""Analyses of a robot model: natural frequencies, linearization, closed-loop studies."""
from .frequencies import linearize, natural_frequencies

__all__ = ["linearize", "natural_frequencies"]
