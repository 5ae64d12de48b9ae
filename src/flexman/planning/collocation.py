"""Hermite–Simpson direct collocation of a rest-to-rest move over the full flexible dynamics.

The move is cut into ``knots`` intervals of length h = T/knots. At every knot the unknowns are
the coordinates q, rates qd and accelerations qdd of all coordinates (joints and flexible);
at every interval's midpoint the flexible accelerations. The joint accelerations are linear on
each interval (the midpoint takes their mean), so the joint motion is a C2 piecewise cubic that
the Hermite–Simpson defects integrate exactly: the joints of the plan are exactly the
trajectory handed to ``fm.simulate(prescribed=)``; only the flexible motion is approximated,
to the method's fourth order in h.

Constraints (Betts, *Practical Methods for Optimal Control*, ch. 4: compressed Hermite–Simpson):

* defects ``x_{k+1} - x_k - h/6 (f_k + 4 f_m + f_{k+1}) = 0`` with x = (q, qd), f = (qd, qdd), and
  the Hermite midpoint state ``x_m = (x_k + x_{k+1})/2 + h/8 (f_k - f_{k+1})``;
* the flexible rows of the equations of motion, ``inverse_dynamics(q, qd, qdd)[flex] = 0``, at
  knots and midpoints (the implicit form: no mass matrix is inverted); their joint rows are the
  torques;
* both ends at rest: all rates and accelerations zero, the joints at their targets (the
  flexible coordinates then sit at their static deflection, zero without gravity);
* torque limits at knots and midpoints, rate limits at knots, joint ranges at knots; between them
  the interpolated motion may exceed a limit by a little: :func:`flexman.planning.plan` checks the
  returned trajectory densely (:func:`dense_peaks`) and re-solves with the bounds backed off.

Costs are integrated by Simpson's rule on the same grid. The functions come from
``fm.derive(robot).casadi()`` (exact derivatives; IPOPT uses the exact Hessian).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..extras import require
from .result import PlanningError


#: the length (m) end-effector errors are measured in by the costs: squared centimetres, so that a
#: centimetre weighs about as much as the normalised effort of a move
LENGTH = 0.01


@dataclass
class Problem:
    """What one transcription needs (all arrays checked by :func:`flexman.planning.plan`)."""

    robot: object
    functions: dict          # CasADi functions: inverse_dynamics, tip_position
    q_start: np.ndarray      # joint targets, n_joints
    q_goal: np.ndarray
    duration: float | None   # None: minimum time
    knots: int
    weights: dict            # cost name -> weight (time, effort, deflection, tip_path)
    torque_limit: np.ndarray | None
    rate_limit: np.ndarray | None
    ranges: list             # per joint (lo, hi) or None
    path: object = None      # tip_path: t -> (3,) target of the end-effector on the move
    path_window: tuple = (0.0, 0.0)  # tip_path: (start, end) of the path inside the horizon
    guess: object = None     # initial joint profile t -> (q, qd, qdd) over [0, guess_duration]
    guess_duration: float = 1.0
    torque_scale: np.ndarray | None = None
    jerk_scale: np.ndarray | None = None
    max_iter: int = 500
    deadline: float | None = None  # time.monotonic() by which every solve must end
    time_limit: float | None = None  # the plan's whole time limit (s), for messages
    warm: object = None      # a Solution of the same grid to start from (a re-solve with tightened limits)


@dataclass
class Solution:
    """Knot values of a solved transcription and IPOPT's report."""

    T: float
    q: np.ndarray      # (knots + 1, nq)
    qd: np.ndarray
    qdd: np.ndarray
    qdd_mid: np.ndarray  # (knots, nq) at the midpoints
    tau: np.ndarray      # (knots + 1, n_joints)
    tau_mid: np.ndarray  # (knots, n_joints)
    status: str
    success: bool
    iterations: int
    violation: float
    seconds: float
    objective: float


def _hs_midpoint(x0, x1, f0, f1, h):
    """The Hermite midpoint state x_m of the module docstring."""
    return 0.5 * (x0 + x1) + h / 8.0 * (f0 - f1)


def solve(problem: Problem) -> Solution:
    """Transcribe ``problem`` and solve it with IPOPT (silent); see the module docstring."""
    ca = require("casadi", "fm.plan (optimal motion planning)")

    p, robot = problem, problem.robot
    nq, nj, N = robot.nq, robot.n_joints, p.knots
    r, f = robot.joint_index, robot.flex_index
    ID = p.functions["inverse_dynamics"]

    Q = ca.MX.sym("q", nq, N + 1)
    V = ca.MX.sym("qd", nq, N + 1)
    A = ca.MX.sym("qdd", nq, N + 1)
    Af = ca.MX.sym("qddf_mid", robot.nf, N)
    T = ca.MX.sym("T") if p.duration is None else ca.MX(float(p.duration))
    h = T / N

    Qm = _hs_midpoint(Q[:, :-1], Q[:, 1:], V[:, :-1], V[:, 1:], h)
    Vm = _hs_midpoint(V[:, :-1], V[:, 1:], A[:, :-1], A[:, 1:], h)
    Am = ca.vertcat(0.5 * (A[r, :-1] + A[r, 1:]), Af) if robot.nf else 0.5 * (A[r, :-1] + A[r, 1:])
    knots_id = ID.map(N + 1)(Q, V, A)
    mid_id = ID.map(N)(Qm, Vm, Am)
    tau, tau_m = knots_id[r, :], mid_id[r, :]

    g, lbg, ubg = [], [], []

    def constrain(expr, lo=0.0, hi=0.0):
        expr = ca.vec(expr)
        g.append(expr)
        lbg.append(np.broadcast_to(lo, expr.shape[0]) if np.ndim(lo) == 0 else lo)
        ubg.append(np.broadcast_to(hi, expr.shape[0]) if np.ndim(hi) == 0 else hi)

    constrain(Q[:, 1:] - Q[:, :-1] - h / 6.0 * (V[:, :-1] + 4.0 * Vm + V[:, 1:]))
    constrain(V[:, 1:] - V[:, :-1] - h / 6.0 * (A[:, :-1] + 4.0 * Am + A[:, 1:]))
    if robot.nf:
        constrain(knots_id[f, :])
        constrain(mid_id[f, :])
    scale = p.torque_scale if p.torque_scale is not None else np.ones(nj)
    if p.torque_limit is not None:
        lim = np.repeat((p.torque_limit / scale)[:, None], N + 1, axis=1).ravel(order="F")
        constrain(tau / scale, -lim, lim)
        lim_m = np.repeat((p.torque_limit / scale)[:, None], N, axis=1).ravel(order="F")
        constrain(tau_m / scale, -lim_m, lim_m)

    # bounds: ends at rest, joint targets, ranges and rate limits
    big = np.inf
    lbq, ubq = np.full((nq, N + 1), -big), np.full((nq, N + 1), big)
    for i, rng in enumerate(p.ranges):
        if rng is not None:
            lbq[i], ubq[i] = rng
    lbq[r, 0] = ubq[r, 0] = p.q_start
    lbq[r, -1] = ubq[r, -1] = p.q_goal
    lbv, ubv = np.full((nq, N + 1), -big), np.full((nq, N + 1), big)
    if p.rate_limit is not None:
        lbv[r], ubv[r] = -p.rate_limit[:, None], p.rate_limit[:, None]
    lbv[:, [0, -1]] = ubv[:, [0, -1]] = 0.0
    lba, uba = np.full((nq, N + 1), -big), np.full((nq, N + 1), big)
    lba[:, [0, -1]] = uba[:, [0, -1]] = 0.0

    # costs, by Simpson's rule (w = h/6 (1, 4, 1) on knot, midpoint, knot)
    def integral(knot_values, mid_values):
        return h / 6.0 * (ca.sum2(knot_values[:, :-1] + knot_values[:, 1:]) + 4.0 * ca.sum2(mid_values))

    w = p.weights
    cost = 0
    if w.get("effort"):
        cost += w["effort"] * integral(ca.sum1((tau / scale) ** 2), ca.sum1((tau_m / scale) ** 2))
    if w.get("deflection") or w.get("tip_path"):
        tip = p.functions["tip_position"]
        rigid = lambda q: ca.vertcat(q[r, :], ca.MX.zeros(robot.nf, q.shape[1]))  # noqa: E731
        tip_k, tip_m = tip.map(N + 1)(Q), tip.map(N)(Qm)
        if w.get("deflection"):
            dk = tip_k - tip.map(N + 1)(rigid(Q))
            dm = tip_m - tip.map(N)(rigid(Qm))
            cost += w["deflection"] * integral(ca.sum1((dk / LENGTH) ** 2), ca.sum1((dm / LENGTH) ** 2))
        if w.get("tip_path"):
            Tf = float(p.duration)
            tk = np.linspace(0.0, Tf, N + 1)
            tm = 0.5 * (tk[:-1] + tk[1:])
            pk, pm = np.array([p.path(t) for t in tk]).T, np.array([p.path(t) for t in tm]).T
            ek, em = (tip_k - pk) / LENGTH, (tip_m - pm) / LENGTH
            cost += w["tip_path"] * integral(ca.sum1(ek ** 2), ca.sum1(em ** 2))
    if w.get("time"):
        cost += w["time"] * T
    if w.get("smooth"):  # joint jerk (constant on each interval), normalised by the warm start's
        jerk = (A[r, 1:] - A[r, :-1]) / h
        cost += w["smooth"] * h * ca.sum1(ca.sum2((jerk / p.jerk_scale[:, None]) ** 2))

    # the unknowns and the warm start (the joint profile; flexible motion from rest)
    Tg = float(p.duration) if p.duration is not None else float(p.guess_duration)
    tg = np.linspace(0.0, Tg, N + 1)
    gq, gv, ga = (np.asarray(a).T for a in p.guess(tg * p.guess_duration / Tg))
    s = p.guess_duration / Tg
    x0 = [np.vstack([gq, np.zeros((robot.nf, N + 1))]), np.vstack([gv * s, np.zeros((robot.nf, N + 1))]),
          np.vstack([ga * s * s, np.zeros((robot.nf, N + 1))]), np.zeros((robot.nf, N))]
    if p.warm is not None and len(p.warm.q) == N + 1:  # the previous solution of a re-solve
        w0 = p.warm
        x0 = [w0.q.T, w0.qd.T, w0.qdd.T, w0.qdd_mid.T[f] if robot.nf else np.zeros((0, N))]
        Tg = w0.T
    blocks = [Q, V, A, Af]
    lbx = [lbq, lbv, lba, np.full((robot.nf, N), -big)]
    ubx = [ubq, ubv, uba, np.full((robot.nf, N), big)]
    if p.duration is None:
        blocks.append(T)
        x0.append(np.array([Tg]))
        lbx.append(np.array([1e-3]))
        ubx.append(np.array([1e4]))
    flat = lambda arrays: np.concatenate([np.ravel(a, order="F") for a in arrays])  # noqa: E731
    x = ca.vertcat(*[ca.vec(b) for b in blocks])
    nlp = {"x": x, "f": cost, "g": ca.vertcat(*g)}
    opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes", "ipopt.max_iter": int(p.max_iter),
            "ipopt.tol": 1e-9, "ipopt.acceptable_tol": 1e-7}
    if p.deadline is not None:
        left = p.deadline - time.monotonic()
        if left <= 0:
            raise PlanningError(f"time_limit: the plan used its {p.time_limit:g} s before this solve; raise time_limit "
                                "(--time-limit), or use fewer knots")
        opts["ipopt.max_wall_time"] = float(left)
    solver = ca.nlpsol("plan", "ipopt", nlp, opts)
    lbg_all, ubg_all = np.concatenate(lbg), np.concatenate(ubg)
    start = time.perf_counter()
    sol = solver(x0=flat(x0), lbx=flat(lbx), ubx=flat(ubx), lbg=lbg_all, ubg=ubg_all)
    seconds = time.perf_counter() - start
    stats = solver.stats()
    xs = np.asarray(sol["x"]).ravel()
    gs = np.asarray(sol["g"]).ravel()
    lbx_all, ubx_all = flat(lbx), flat(ubx)
    violation = max(float(np.max(np.maximum(lbg_all - gs, 0.0), initial=0.0)),
                    float(np.max(np.maximum(gs - ubg_all, 0.0), initial=0.0)),
                    float(np.max(np.maximum(lbx_all - xs, 0.0), initial=0.0)),
                    float(np.max(np.maximum(xs - ubx_all, 0.0), initial=0.0)))
    evaluate = ca.Function("knots", [x], [Q, V, A, Am, tau, tau_m, T])
    q, qd, qdd, qdd_m, tk, tm, Tv = (np.asarray(v) for v in evaluate(xs))
    return Solution(float(Tv.ravel()[0]), q.T, qd.T, qdd.T, qdd_m.T, tk.T, tm.T, stats["return_status"],
                    bool(stats["success"]), int(stats["iter_count"]), violation, seconds, float(sol["f"]))


def dense_peaks(plan, functions, points: int) -> dict:
    """The largest joint torques and rates of the trajectory ``plan`` returns, checked at ``points``
    evenly spaced instants per interval (both ends included): torques both as the inverse dynamics of
    the interpolated state (:meth:`Plan.state`: the joints exactly, the flexible coordinates by their
    Hermite interpolant) and as the planned torque interpolant (:meth:`Plan.torque`), rates on the
    joint trajectory. {"torque": per joint, "rate": per joint, "points_per_interval": points}."""
    N = len(plan.t) - 1
    t = np.linspace(0.0, plan.duration, N * points + 1)
    q, qd, qdd = plan.state(t)
    r = plan.robot.joint_index
    ID = functions["inverse_dynamics"].map(len(t))
    tau = np.asarray(ID(q.T, qd.T, qdd.T)).T[:, r]
    torque = np.maximum(np.abs(tau).max(axis=0), np.abs(plan.torque(t)).max(axis=0))
    return {"torque": torque, "rate": np.abs(qd[:, r]).max(axis=0), "points_per_interval": int(points)}
