"""What a reduction costs in accuracy: the same move on the full model and on reduced ones, per
cutoff, ``fm.analysis.convergence(robot, quantity="reduction", above_hz=(...), controller=...,
t_final=...)``.

Each cutoff gives two models: the dropped coordinates slaved to their quasi-static deflection
(:func:`.reduction.reduce`) and dropped outright (truncation), so the table shows what the static
correction is worth. The error of each is measured against the full model's run on the output
grid: the joint angles (rad, largest over the run) and the end effector's deflection
(:func:`.tip.tip_offset`, largest difference over the run relative to the full model's peak).
Every run uses the same options (``dt``, ``method``, ``backend`` ...) so the integrator's own
error is common to all; for a stiff full model give an accurate one (e.g. RK4 below its stable
step).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frequencies import natural_frequencies
from .reduction import reduce
from .tip import tip_offset


@dataclass
class ReductionConvergence:
    """Per cutoff (Hz, ascending): ``kept`` flexible coordinates, ``highest`` natural frequency of
    the reduced model (rad/s, joints free), ``joint_error`` (rad) and ``tip_error`` (relative to
    the full model's peak tip deflection) of the slaved model, ``truncated_joint_error`` and
    ``truncated_tip_error`` of plain truncation; ``full_highest`` and ``full_tip_peak`` (m) of the
    full model."""

    name: str
    cutoffs: list
    kept: list
    highest: np.ndarray
    joint_error: np.ndarray
    tip_error: np.ndarray
    truncated_joint_error: np.ndarray
    truncated_tip_error: np.ndarray
    full_highest: float
    full_tip_peak: float

    def to_dict(self) -> dict:
        return {"model": self.name, "cutoffs_hz": list(self.cutoffs), "kept": list(self.kept),
                "highest": [float(v) for v in self.highest], "joint_error": [float(v) for v in self.joint_error],
                "tip_error": [float(v) for v in self.tip_error],
                "truncated_joint_error": [float(v) for v in self.truncated_joint_error],
                "truncated_tip_error": [float(v) for v in self.truncated_tip_error],
                "full_highest": self.full_highest, "full_tip_peak": self.full_tip_peak}

    def table(self) -> str:
        """Plain text: one row per cutoff."""
        head = ["above Hz", "kept", "highest Hz", "joint err rad", "tip err", "truncated: joint", "tip"]
        lines = ["  ".join(f"{h:>16}" for h in head)]
        for row in zip(self.cutoffs, self.kept, self.highest, self.joint_error, self.tip_error,
                       self.truncated_joint_error, self.truncated_tip_error):
            c, k, w, je, te, tj, tt = row
            lines.append("  ".join([f"{c:>16g}", f"{k:>16d}", f"{w / (2 * np.pi):>16.4g}"]
                                   + [f"{v:>16.2e}" for v in (je, te, tj, tt)]))
        lines.append(f"full model: highest {self.full_highest / (2 * np.pi):.4g} Hz, peak tip deflection "
                     f"{self.full_tip_peak:.3g} m; tip errors relative to that peak")
        return "\n".join(lines)


def reduction_convergence(robot, above_hz, controller=None, t_final=1.0, q0=None, **options) -> ReductionConvergence:
    """The full model and its reductions at each cutoff of ``above_hz`` (Hz) run the same move
    (``controller``, ``t_final``, ``q0`` and the other options of :func:`flexman.simulate`); see
    the module docstring."""
    from ..simulate import simulate

    try:
        cutoffs = sorted(float(c) for c in np.atleast_1d(above_hz))
    except (TypeError, ValueError):
        raise ValueError(f"above_hz: expected cutoffs in Hz (got {above_hz!r:.60})") from None
    models = [(reduce(robot, above_hz=c), reduce(robot, above_hz=c, static=False)) for c in cutoffs]
    options = {"progress": False, **options}
    full = simulate(robot, t_final, q0=q0, controller=controller, **options)
    tip_full = tip_offset(robot, full.q)
    peak = float(np.linalg.norm(tip_full, axis=-1).max())
    J = robot.joint_index

    def errors(model):
        res = simulate(model, t_final, q0=q0, controller=controller, **options)
        n = min(len(res.t), len(full.t))
        tip = tip_offset(robot, res.q[:n])
        return (float(np.abs(res.q[:n, J] - full.q[:n, J]).max()),
                float(np.linalg.norm(tip - tip_full[:n], axis=-1).max() / max(peak, np.finfo(float).tiny)))

    rows = [(errors(slaved), errors(truncated)) for slaved, truncated in models]
    return ReductionConvergence(
        robot.name, cutoffs, [m[0].nf for m in models],
        np.array([natural_frequencies(m[0]).max() for m in models]),
        np.array([r[0][0] for r in rows]), np.array([r[0][1] for r in rows]),
        np.array([r[1][0] for r in rows]), np.array([r[1][1] for r in rows]),
        float(natural_frequencies(robot).max()), peak)
