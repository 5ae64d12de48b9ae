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


def save_figure(fig, path, dpi=100) -> Path:
    """Write ``fig`` to ``path`` (format from its extension), creating the folder; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


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
        tt = t if panel.t is None else panel.t  # (a sensor's or the controller's samples)
        if panel.dots:  # readings as dots over the true value
            ax.plot(tt, panel.reference, color="0.35", linewidth=0.9)
            ax.plot(tt, panel.y, ".", markersize=3, label=panel.labels[0])
            ax.set_ylabel(panel.ylabel)
            ax.grid(True, alpha=0.3)
            continue
        _lines(ax, tt, panel.y, panel.labels, panel.ylabel)
        if panel.reference is not None:
            ax.set_prop_cycle(None)
            ax.plot(tt, panel.reference, linestyle="--", linewidth=0.8)
    axes[-1].set_xlabel("time [s]")
    if robot is not None:
        axes[0].set_title(robot.name)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_statics(sweep, path, joint_label="joint angle"):
    """Statics against a swept joint, one curve per force numbered 1, 2, ... (the layout of 001
    Figs. 6-12): joint torque; with order 2 also its difference to orders 1 and 0; the curvature
    at each gauge; the endpoint deflection normal to the link and, with order 2, its difference
    to order 1. ``sweep``: the dict built by ``flexman statics --sweep`` (angles, forces and per
    order the torque (F, A), curvature (F, A, G) and endpoint (F, A) arrays)."""
    x = np.asarray(sweep["angles"], dtype=float)
    order = sweep["order"]
    main = sweep["orders"][order]
    compare = order == 2 and 1 in sweep["orders"] and 0 in sweep["orders"]
    n_gauges = np.asarray(main["curvature"]).shape[-1]
    rows = 1 + (2 if compare else 0) + n_gauges + 1 + (1 if compare else 0)
    fig, axes = _figure(rows)
    labels = [f"{i + 1}: {_force_text(f)}" for i, f in enumerate(sweep["forces"])]
    k = 0

    def panel(values, ylabel):
        nonlocal k
        _lines(axes[k], x, np.asarray(values, dtype=float).T, labels, ylabel)
        k += 1

    panel(main["torque"], f"torque O({order}) [N m]")
    if compare:
        ref = np.asarray(main["torque"])
        panel(np.asarray(sweep["orders"][1]["torque"]) - ref, "torque O(1) - O(2) [N m]")
        panel(np.asarray(sweep["orders"][0]["torque"]) - ref, "torque O(0) - O(2) [N m]")
    for g in range(n_gauges):
        panel(np.asarray(main["curvature"])[..., g], f"curvature, gauge {g + 1} [1/m]")
    panel(1e3 * np.asarray(main["endpoint"]), "endpoint deflection [mm]")
    if compare:
        panel(1e3 * (np.asarray(main["endpoint"]) - np.asarray(sweep["orders"][1]["endpoint"])),
              "endpoint O(2) - O(1) [mm]")
    axes[-1].set_xlabel(joint_label)
    fig.tight_layout()
    fig.savefig(Path(path), dpi=110)
    return Path(path)


def _force_text(force) -> str:
    return "[" + ", ".join(f"{v:g}" for v in force) + "] N"
