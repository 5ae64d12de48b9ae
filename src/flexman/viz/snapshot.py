"""A one-page PNG summary of a run: the arm at a few instants in 3D (deflections magnified, as
in the report's animation) beside the key time histories (joints against the reference, tip
deflections, and the end-effector error under a tracking controller, else the energy)."""
from __future__ import annotations

import numpy as np

from . import series
from .animation import auto_magnification
from .arm import arm_lines
from .meshes import posed_meshes
from .plots import save_figure

INSTANTS = 7  # arm drawings in the 3D panel, evenly spread over the run


def _draw_arm(ax, robot, q, magnify, colour, alpha):
    lines = arm_lines(robot, q, magnify)
    for part, width in ((lines.rigid, 3.0), (lines.beams, 2.0)):
        if part.size:
            ax.plot(part[:, 0], part[:, 1], part[:, 2], color=colour, linewidth=width, alpha=alpha)
    ax.scatter(*lines.tip[0], color=colour, s=12, alpha=alpha)


def plot_summary(result, path=None, robot=None, magnify=None):
    """The summary figure (matplotlib, Agg); written to ``path`` when given; returns the figure."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    robot = robot if robot is not None else getattr(result, "robot", None)
    if robot is None:
        raise ValueError("plot_summary: the result carries no robot; pass robot=")
    t = np.asarray(result.t, dtype=float)
    q = np.asarray(result.q, dtype=float).reshape(len(t), -1)
    magnify = auto_magnification(robot, q) if magnify is None else float(magnify)
    panels = {p.key: p for p in series.panels(result, robot)}
    curves = [panels["joints"]] + [panels[k] for k in ("tips",) if k in panels]
    curves.append(panels["ee_error"] if "ee_error" in panels else panels["energy"])

    fig = Figure(figsize=(12, 6.5))
    grid = fig.add_gridspec(len(curves), 2, width_ratios=[1.1, 1])
    ax3d = fig.add_subplot(grid[:, 0], projection="3d")
    cmap = colormaps["viridis"]
    picks = np.unique(np.round(np.linspace(0, len(t) - 1, INSTANTS)).astype(int))
    for j, k in enumerate(picks):
        _draw_arm(ax3d, robot, q[k], magnify, cmap(j / max(len(picks) - 1, 1)), 0.35 + 0.65 * j / max(len(picks) - 1, 1))
    fig.suptitle(f"{robot.name}: {t[-1]:.3g} s", fontsize=12)
    ax3d.set_title("the arm at t = " + ", ".join(f"{t[k]:.2g}" for k in picks)
                   + f" s (dark to light), deflections x{magnify:g}", fontsize=9)
    ax3d.set_xlabel("x [m]")
    ax3d.set_ylabel("y [m]")
    ax3d.set_zlabel("z [m]")
    ax3d.set_box_aspect((1, 1, 1))
    _equal_limits(ax3d)
    for row, panel in enumerate(curves):
        ax = fig.add_subplot(grid[row, 1])
        for k, label in enumerate(panel.labels):
            line, = ax.plot(t, panel.y[:, k], label=label, linewidth=1.2)
            if panel.reference is not None:
                ax.plot(t, panel.reference[:, k], linestyle="--", linewidth=0.8, color=line.get_color())
        ax.set_ylabel(panel.ylabel, fontsize=9)
        ax.grid(True, alpha=0.3)
        if len(panel.labels) > 1:
            ax.legend(fontsize="small", ncol=min(len(panel.labels), 4), loc="upper right")
        if row == len(curves) - 1:
            ax.set_xlabel("time [s]")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    if path is not None:
        save_figure(fig, path, dpi=90)
    return fig


def plot_arm(robot, q=None, path=None, magnify=1.0, size=(5, 4.5)):
    """The arm at one configuration (default: all coordinates 0) in 3D, e.g. a model preview;
    written to ``path`` when given; returns the figure."""
    from matplotlib.figure import Figure

    q = np.zeros(robot.nq) if q is None else np.asarray(q, dtype=float)
    fig = Figure(figsize=size)
    ax = fig.add_subplot(projection="3d")
    parts = posed_meshes(robot, q, magnify)
    if parts:  # the robot's own meshes (a URDF's visuals), shaded by the light from the viewer's side
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        for triangles, rgb in parts:
            ax.add_collection3d(Poly3DCollection(triangles, facecolors=_shaded(triangles, rgb), edgecolors="none"))
        points = np.concatenate([triangles.reshape(-1, 3) for triangles, _ in parts])
        ax.auto_scale_xyz(points[:, 0], points[:, 1], points[:, 2], had_data=True)
    _draw_arm(ax, robot, q, magnify, "#444444", 0.6 if parts else 1.0)
    joints = arm_lines(robot, q, magnify).joints
    ax.scatter(joints[:, 0], joints[:, 1], joints[:, 2], color="#1f77b4", s=14)
    ax.set_title(f"{robot.name}" + (" (q = 0)" if not np.any(q) else ""), fontsize=10)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    ax.set_box_aspect((1, 1, 1))
    _equal_limits(ax)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path, dpi=80)
    return fig


def _shaded(triangles, rgb, light=(0.4, -0.6, 0.7)):
    """Each triangle's colour: ``rgb`` darkened by the angle between its normal and the light."""
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)
    light = np.asarray(light) / np.linalg.norm(light)
    brightness = 0.45 + 0.55 * np.abs(normals @ light)
    return np.clip(np.outer(brightness, np.asarray(rgb[:3], dtype=float)), 0.0, 1.0)


def _equal_limits(ax):
    """Equal scales on the three axes (a cube around what is drawn)."""
    limits = np.array([ax.get_xlim3d(), ax.get_ylim3d(), ax.get_zlim3d()])
    centre, half = limits.mean(axis=1), 0.5 * (limits[:, 1] - limits[:, 0]).max()
    ax.set_xlim3d(centre[0] - half, centre[0] + half)
    ax.set_ylim3d(centre[1] - half, centre[1] + half)
    ax.set_zlim3d(centre[2] - half, centre[2] + half)
