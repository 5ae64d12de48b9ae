"""Plots and (later) the 3D viewer."""
from .plots import plot_result

__all__ = ["plot_result"]
