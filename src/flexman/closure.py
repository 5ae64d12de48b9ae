"""Closure as a user feature (thesis sec. 3.3, Figs. 3.28-3.29).

Drive the arm with a joint controller, record the motion, feed the recorded states and the
accelerations back through the inverse dynamics, and compare the torques it returns with the
torques that were applied. The flexible rows of the inverse dynamics must vanish too.
"""
from __future__ import annotations


import numpy as np


def closure_run(robot, t_final, dt=1e-3, controller=None, out=None, tolerance=1e-6):
    """Simulate under `controller` (default: the model's controller section, never switched
    off) and return a report of the torque mismatch; optionally plot both histories."""
    from .control import from_spec
    from .simulate import simulate

    if controller is None:
        spec = dict(getattr(robot, "controller", None) or {})
        if not spec:
            from .model import ModelError

            raise ModelError("controller: the model has no controller section to drive the closure run")
        spec.pop("off_at", None)  # thesis Fig. 3.28: controllers not switched off
        controller = from_spec(robot, spec)
    res = simulate(robot, t_final, dt=dt, method="rk4", controller=controller, progress=False)
    qdd = robot.forward_dynamics(res.q, res.qd, res.tau)
    tau_id = robot.inverse_dynamics(res.q, res.qd, qdd)
    applied = np.concatenate([res.tau, np.zeros((len(res.t), robot.nf))], axis=1)
    diff = np.abs(tau_id - applied)
    scale = max(np.abs(res.tau).max(), 1e-12)
    report = {
        "model": robot.name, "samples": int(len(res.t)),
        "max_abs_difference": float(diff.max()), "max_relative_difference": float(diff.max() / scale),
        "passed": bool(diff.max() <= tolerance * scale) and not res.diverged, "files": [],
        "diverged": bool(res.diverged), "t_diverged": res.t_diverged,  # a partial run never passes
    }
    if out is not None:
        from .outputs import output_folder, staged

        out = output_folder(out, "out")
        with staged() as files:  # both files replace the old ones together
            np.savez(files.path(out / "closure.npz"), t=res.t, tau_applied=res.tau,
                     tau_inverse=tau_id[:, : robot.n_joints])
            _plot(res.t, res.tau, tau_id[:, : robot.n_joints], robot, files.path(out / "closure.png"))
        report["files"] += [str(out / "closure.npz"), str(out / "closure.png")]
    return report


def _plot(t, applied, inverse, robot, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 6))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for j in range(applied.shape[1]):
        ax1.plot(t, applied[:, j], label=f"tau{j + 1} applied")
        ax2.plot(t, inverse[:, j], label=f"tau{j + 1} inverse dynamics")
    ax1.set_title(f"{robot.name}: control torques (thesis Fig. 3.28)")
    ax2.set_title("torques from the inverse dynamics of the recorded motion (Fig. 3.29)")
    ax2.set_xlabel("time [s]")
    for ax in (ax1, ax2):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path
