"""Matplotlib plots of simulation results (rendered with Agg: works without a display)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..analysis.tip import tip_offset


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


def _tip_deflections(robot, q):
    """Distance of each flexible link's tip from where the undeformed link would put it."""
    cols, labels = [], []
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            cols.append(np.linalg.norm(tip_offset(robot, q, link=i), axis=-1))
            labels.append(f"tip {i + 1}")
    return (1e3 * np.stack(cols, axis=1), labels, "tip deflection [mm]")


def plot_result(result, path=None, robot=None):
    """Plot joint angles, joint velocities, torques, energy and, for a flexible robot, the
    flexible coordinates and tip deflections, and under a tracking controller the joint errors
    and the end-effector error, one subplot each, against time.

    Writes the figure to ``path`` (PNG, or any format matplotlib knows by extension) when
    given, and returns the matplotlib Figure."""
    robot = robot if robot is not None else getattr(result, "robot", None)
    t = np.asarray(result.t, dtype=float)
    q = np.asarray(result.q, dtype=float).reshape(len(t), -1)
    qd = np.asarray(result.qd, dtype=float).reshape(len(t), -1)
    nj = robot.n_joints if robot is not None else q.shape[1]
    names = getattr(result, "coordinate_names", None) or (
        list(robot.coordinate_names) if robot is not None else [f"q{i + 1}" for i in range(q.shape[1])])
    panels = [(q[:, :nj], names[:nj], "joint [rad, m]"), (qd[:, :nj], names[:nj], "velocity [/s]")]
    tau = getattr(result, "tau", None)
    if tau is not None and np.size(tau):
        panels.append((tau, [f"tau_{n}" for n in names[:nj]], "torque [N m, N]"))
    energy = getattr(result, "energy", None)
    if energy is not None and np.size(energy):
        panels.append((energy, ["energy"], "energy [J]"))
    if q.shape[1] > nj:
        panels.append((q[:, nj:], names[nj:], "flexible coord."))
        if robot is not None:
            panels.append(_tip_deflections(robot, q))
    traj = getattr(getattr(result, "controller", None), "traj", None)
    if traj is not None and robot is not None:
        q_ref = np.asarray(traj(t)[0], dtype=float).reshape(len(t), nj)
        panels.append((q[:, :nj] - q_ref, [f"e_{n}" for n in names[:nj]], "joint error [rad, m]"))
        ee = np.linalg.norm(tip_offset(robot, q, q_ref), axis=-1)
        panels.append((1e3 * ee[:, None], ["|p - p_d|"], "end-effector error [mm]"))
    fig, axes = _figure(len(panels))
    for ax, (y, labels, ylabel) in zip(axes, panels):
        _lines(ax, t, y, labels, ylabel)
    axes[-1].set_xlabel("time [s]")
    if robot is not None:
        axes[0].set_title(robot.name)
    fig.tight_layout()
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
    return fig
