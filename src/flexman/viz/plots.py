"""Matplotlib plots of simulation results (rendered with Agg: works without a display)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import series


def _figure(n_rows: int):
    # A bare Figure renders with Agg and leaves pyplot's global state (and backend) alone.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 2.4 * n_rows))
    axes = fig.subplots(n_rows, 1, sharex=True, squeeze=False)
    return fig, axes[:, 0]


def _lines(ax, t, y, labels, ylabel: str) -> None:
    y = np.asarray(y, dtype=float).reshape(len(t), -1)
    for k in range(y.shape[1]):
        ax.plot(t, y[:, k], label=labels[k] if k < len(labels) else f"{k + 1}")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if 1 < y.shape[1] <= 12:
        ax.legend(fontsize="small", ncol=min(y.shape[1], 6), loc="upper right")


def plot_result(result, path=None, robot=None):
    """Plot joint angles, joint velocities, torques, energy and, for a flexible robot, the
    flexible coordinates and tip deflections, and under a tracking controller the joint errors
    and the end-effector error, one subplot each, against time.

    Writes the figure to ``path`` (PNG, or any format matplotlib knows by extension) when
    given, and returns the matplotlib Figure."""
    robot = robot if robot is not None else getattr(result, "robot", None)
    t = np.asarray(result.t, dtype=float)
    shown = series.panels(result, robot)
    fig, axes = _figure(len(shown))
    for ax, panel in zip(axes, shown):
        _lines(ax, t, panel.y, panel.labels, panel.ylabel)
        if panel.reference is not None:
            ax.set_prop_cycle(None)
            ax.plot(t, panel.reference, linestyle="--", linewidth=0.8)
    axes[-1].set_xlabel("time [s]")
    if robot is not None:
        axes[0].set_title(robot.name)
    fig.tight_layout()
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
    return fig
