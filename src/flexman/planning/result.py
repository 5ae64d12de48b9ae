"""A solved plan: the joint trajectory, the flexible motion, the torques and IPOPT's report.

The joint motion is rebuilt exactly as the collocation assumed it (accelerations linear between
knots: a C2 piecewise cubic), so ``plan.trajectory`` handed to ``fm.simulate(prescribed=)`` is the
motion the optimiser planned; it is a ``spline`` trajectory of :mod:`flexman.trajectory` (its
pieces' coefficients), so the compiled loop evaluates it in C. Flexible coordinates between
knots: cubic Hermite interpolation of their knot values and rates; torques: the quadratic
through knot, midpoint and knot.
"""
from __future__ import annotations

import numpy as np

from ..model import inputs

from ..trajectory import Trajectory, piecewise_values


class PlanningError(ValueError):
    """A plan that cannot be made (infeasible limits, no convergence): one sentence."""


FAILURES = {
    "Infeasible_Problem_Detected": "the limits cannot be met: no motion reaches the goal at rest within them "
                                   "in {T} (raise the torque or rate limits, or allow a longer duration)",
    "Maximum_Iterations_Exceeded": "IPOPT stopped at its iteration limit without a solution (raise max_iter "
                                   "(--max-iter), add knots, or warm start from a better guess)",
    "Maximum_WallTime_Exceeded": "IPOPT stopped at the time limit without a solution (raise time_limit "
                                 "(--time-limit); a move much faster than the arm allows may never converge: "
                                 "allow a longer duration)",
    "Restoration_Failed": "IPOPT could not restore feasibility: the limits are probably too tight for this move "
                          "in {T} (raise them, or allow a longer duration)",
}


class Plan:
    """Result of :func:`flexman.plan`. ``trajectory``: the joints' ``Trajectory`` (callable
    t -> (q, qd, qdd)); ``duration``: seconds; ``t``: knot times; ``q``, ``qd``, ``qdd``: knot
    values of all coordinates; ``flexible``: the flexible coordinates at the knots;
    ``torques``: joint torques at the knots (``torque(t)`` between them); ``report``: IPOPT's
    status, iterations, constraint violation, seconds; ``window``: (start, end) of the move
    inside the horizon (pre- and post-actuation of a tip_path plan lie outside it)."""

    def __init__(self, robot, sol, q_start, q_goal, weights, path, window):
        self.robot, self.solution, self.weights, self.path = robot, sol, dict(weights), path
        self.q_start, self.q_goal = q_start, q_goal
        self.duration = sol.T
        self.window = (float(window[0]), float(window[1]))
        N = len(sol.q) - 1
        self.h = sol.T / N
        self.t = np.linspace(0.0, sol.T, N + 1)
        self.q, self.qd, self.qdd, self.torques = sol.q, sol.qd, sol.qdd, sol.tau
        self.flexible = sol.q[:, robot.flex_index]
        self.report = {"status": sol.status, "success": sol.success, "iterations": sol.iterations,
                       "constraint_violation": sol.violation, "seconds": sol.seconds, "objective": sol.objective,
                       "duration": sol.T, "knots": N}
        self.trajectory = self._joint_trajectory(q_start, q_goal)

    def check(self):
        """Raise :class:`PlanningError` (one sentence) unless IPOPT solved the problem."""
        s = self.solution
        if s.success or s.status in ("Solve_Succeeded", "Solved_To_Acceptable_Level"):
            return
        why = FAILURES.get(s.status, f"IPOPT ended with {s.status.replace('_', ' ').lower()}")
        why = why.format(T=f"{s.T:.4g} s" if self.weights.get("time") is None else "the least time it found")
        raise PlanningError(f"plan: {why}; after {s.iterations} iterations the constraints are violated by "
                            f"{s.violation:.2g}")

    def _joint_trajectory(self, q_start, q_goal):
        """The joints from the knot values, acceleration linear on each interval: on interval k,
        ``q = q_k + qd_k s + qdd_k s^2/2 + j_k s^3/6`` (s = t - t_k, j_k the interval's jerk), as a
        ``spline`` trajectory (the piecewise polynomials of q, qd, qdd on the knot times)."""
        r = self.robot.joint_index
        q0, v0, a0 = self.q[:-1, r], self.qd[:-1, r], self.qdd[:-1, r]
        jerk = np.diff(self.qdd[:, r], axis=0) / self.h
        c = np.stack([jerk / 6.0, a0 / 2.0, v0, q0])
        c1 = c[:3] * np.array([3.0, 2.0, 1.0])[:, None, None]  # the derivatives' coefficients
        c2 = c1[:2] * np.array([2.0, 1.0])[:, None, None]
        times = self.t

        def evaluate(t):
            return piecewise_values(times, c, t), piecewise_values(times, c1, t), piecewise_values(times, c2, t)

        traj = Trajectory(0.0, self.duration, evaluate, self.robot.n_joints)
        traj.q_start, traj.q_end, traj.times, traj.points = q_start.copy(), q_goal.copy(), times, self.q[:, r]
        traj.kind, traj.pieces = "spline", (c, c1, c2)
        return traj

    # ----- evaluation between knots -----------------------------------------------------
    def _locate(self, t):
        t = np.clip(np.asarray(t, dtype=float), 0.0, self.duration)
        k = np.minimum((t / self.h).astype(int), len(self.t) - 2)
        return k, (t - self.t[k]) / self.h

    def state(self, t):
        """(q, qd, qdd) of all coordinates at time(s) t: joints exactly, flexible coordinates
        by cubic Hermite interpolation of the knots."""
        q_r, qd_r, qdd_r = self.trajectory(t)
        f = self.robot.flex_index
        k, s = self._locate(t)
        s = s[..., None]
        h = self.h
        p0, p1, v0, v1 = self.q[k][..., f], self.q[k + 1][..., f], self.qd[k][..., f], self.qd[k + 1][..., f]
        h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
        d00, d10, d01, d11 = 6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, -6 * s**2 + 6 * s, 3 * s**2 - 2 * s
        qf = h00 * p0 + h * h10 * v0 + h01 * p1 + h * h11 * v1
        qdf = (d00 * p0 + h * d10 * v0 + d01 * p1 + h * d11 * v1) / h
        a0, a1 = self.qdd[k][..., f], self.qdd[k + 1][..., f]
        qddf = a0 + (a1 - a0) * s
        return (np.concatenate([q_r, qf], axis=-1), np.concatenate([qd_r, qdf], axis=-1),
                np.concatenate([qdd_r, qddf], axis=-1))

    def torque(self, t):
        """Planned joint torques at time(s) t (zero outside the plan, where the arm is at rest
        without gravity; the static torque at the ends otherwise)."""
        k, s = self._locate(t)
        s = s[..., None]
        t0, tm, t1 = self.torques[k], self.solution.tau_mid[k], self.torques[k + 1]
        return t0 * (1 - s) * (1 - 2 * s) + tm * 4 * s * (1 - s) + t1 * s * (2 * s - 1)

    def tip(self, t=None):
        """End-effector positions (knots, or times t) of the planned motion."""
        q = self.q if t is None else self.state(t)[0]
        return self.robot.frame(q, inputs.end_effector(self.robot))[..., :3, 3]

    def summary(self) -> dict:
        r = self.report
        return {"duration_s": self.duration, "iterations": r["iterations"], "constraint_violation": r["constraint_violation"],
                "solver_seconds": r["seconds"], "status": r["status"],
                "peak_torque": np.max(np.abs(self.torques), axis=0),
                "peak_rate": np.max(np.abs(self.qd[:, self.robot.joint_index]), axis=0),
                "peak_flexible": np.max(np.abs(self.flexible), axis=0) if self.robot.nf else np.zeros(0)}

    def __repr__(self):
        return (f"<Plan {self.robot.name}: {self.duration:.4g} s, {len(self.t) - 1} knots, "
                f"{self.report['status']}, {self.report['iterations']} iterations>")
