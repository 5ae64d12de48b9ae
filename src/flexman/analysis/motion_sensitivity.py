"""Exact derivatives of figures of a simulated manoeuvre (peak tip deflection, tip error at the
end) with respect to named physical parameters: forward sensitivity equations.

The joints follow a prescribed motion ``traj(t) -> (q_r, qd_r, qdd_r)`` exactly (as
``fm.simulate(..., prescribed=traj)``); the flexible coordinates p obey the flexible rows of
the inverse dynamics, ``ID_f(q, qd, qdd) = 0``, i.e. ``qdd_f = -M_ff^-1 ID_f(q, qd, [qdd_r, 0])``.
Differentiating with respect to a parameter theta (the prescription does not depend on it) gives
the sensitivities ``S = dp/dtheta``, ``S_v = dpd/dtheta``::

    S' = S_v,   S_v' = -M_ff^-1 (dID_f/dp S + dID_f/dpd S_v + dID_f/dtheta)

(implicit differentiation of ``ID_f = 0``; M_ff = dID_f/dqdd_f). All partial derivatives come
from one forward-mode replay of the derived inverse-dynamics program (see
:mod:`.design_sensitivity`), compiled to C when a compiler is there. The augmented system is
integrated by the same fixed-step RK4, on the same grid, as the simulation, so the result is
the exact derivative of the discrete RK4 solution (for explicit Runge-Kutta methods,
differentiating the scheme and applying it to the variational equations agree).

The tip offset (last link's distal frame origin against the undeformed arm at the same joint
values, :func:`flexman.analysis.tip_offset`) and its partial derivatives in p and theta come
from the robot's frames traced with symbolic parameters and replayed the same way; then
``d tip/d theta = dtip/dp S + dtip/dtheta``.
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import physical
from ..model import inputs
from ..model.limits import MAX_SENSITIVITY_STEPS, check_run_size
from .design_sensitivity import Sensitivity, forward_mode, output_labels, probe_robot, symbol_seeds

FIGURES = ("peak_tip_deflection", "final_tip_error")


def _compile(prog, name):
    """A callable ``f(*input arrays) -> tuple of output arrays`` for one state: generated C when a
    compiler is there (cached by content), else generated NumPy."""
    from ..codegen import cbuild
    from ..symbolic import emit

    ins = [g for g in prog.inputs if prog.inputs[g]]
    outs = list(prog.outputs)
    shapes = [tuple(prog.outputs[g][0]) for g in outs]
    try:
        cbuild.compiler()
    except (RuntimeError, OSError):
        env = {}
        exec(compile("import numpy as np\n\n" + emit.function_source("numpy", prog, name), f"<{name}>", "exec"), env)
        return env[name]
    body = emit.c_split_source(prog, name) if len(prog.body) > emit.SPLIT_ABOVE else emit.function_source("c", prog, name)
    lib = cbuild.load(cbuild.build_shared("#include <math.h>\n#include <stdlib.h>\n" + body))
    fn = getattr(lib, name)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * (len(ins) + len(outs))

    def call(*arrays):
        args = [np.ascontiguousarray(a, dtype=float) for a in arrays]
        res = [np.empty(s) for s in shapes]
        fn(*[a.ctypes.data for a in args], *[r.ctypes.data for r in res])
        return tuple(res)
    return call


def _tip_program(probe, pnames):
    """Program of the tip offset (3,) in q and the parameters."""
    from ..dynamics import lagrange4 as l4
    from ..symbolic.params import symbolic_model
    from ..symbolic.program import Program
    from ..symbolic.tracer import Tape

    tape = Tape()
    q = np.array(tape.inputs([f"q{k + 1}" for k in range(probe.nq)]) + [None], dtype=object)[:-1]
    model, pvals, _ = symbolic_model(probe, tape)
    if list(pvals) != list(pnames):
        raise RuntimeError("tip program: parameter order differs from the dynamics program")
    rigid = q.copy()
    rigid[probe.flex_index] = 0.0
    tip = l4.frames(model, q)[-1][:3, 3] - l4.frames(model, rigid)[-1][:3, 3]
    return Program.from_tape("tip", tape, {"q": [f"q{k + 1}" for k in range(probe.nq)], "p": list(pnames)},
                             {"tip": tip})


def _replayed(prog, groups_of, seeds, k, name):
    """Compile a forward-mode replay of ``prog``: outputs each group's value and derivatives (k, ...)."""
    from ..symbolic.program import Program

    tape, val, der = forward_mode(prog, seeds, None, k)
    outs = {}
    for g in groups_of:
        shape, labels = output_labels(prog, g)
        outs[g] = np.array([val[lb] for lb in labels] + [None], dtype=object)[:-1].reshape(shape)
        outs["d" + g] = np.array([der[lb][j] for j in range(k) for lb in labels] + [None],
                                 dtype=object)[:-1].reshape((k,) + tuple(shape))
    ins = {g: n for g, n in prog.inputs.items() if n}
    return _compile(Program.from_tape(name, tape, ins, outs), name)


def motion_sensitivity(robot, figure, parameters, prescribed, t_final, dt=1e-3, q0=None, qd0=None) -> Sensitivity:
    """d(figure)/d(parameters) of the prescribed manoeuvre ``prescribed`` over [0, t_final] (RK4
    at ``dt``; flexible coordinates from ``q0``/``qd0``, default at rest). ``figure``:
    "peak_tip_deflection" (the largest |tip offset| over the output samples) or
    "final_tip_error" (|tip offset| at t_final: the end-effector error the vibration leaves)."""
    from ..simulate.prescribed import check_resolved, motion_input
    from ..symbolic import derive
    from ..symbolic.params import parameter_values

    if figure not in FIGURES:
        raise ValueError(f"figure: unknown {figure!r}; use one of {', '.join(FIGURES)}")
    if robot.is_rigid:
        raise ValueError("figure: the robot has no flexible links; its tip follows the joints exactly")
    names = physical.check(robot, parameters)
    motion = motion_input(prescribed, robot.n_joints)
    t_final, dt = inputs.positive(t_final, "t_final"), inputs.positive(dt, "dt")
    check_run_size(t_final / dt, 3 + 3 * len(names), "RK4 steps (t_final / dt)", "t_final",  # before deriving
                   most=MAX_SENSITIVITY_STEPS, hint="shorten the manoeuvre or use a larger dt")
    check_resolved(prescribed, dt)
    k, nf, nq, nj = len(names), robot.nf, robot.nq, robot.n_joints
    sl = robot.flex_index
    probe = probe_robot(robot, names)
    eom = derive(probe, formulation="book", parameters="symbolic", external=False, reduce_mass_matrix=False)
    pnames = list(eom.param_values)
    actual = parameter_values(robot)
    p = np.array([actual.get(n, 0.0) for n in pnames])
    G = symbol_seeds(robot, names)

    prog = eom.program("inverse_dynamics")
    dirs = 3 * nf + k  # derivative directions: p, pd, pdd (gives M_ff), theta
    eye = np.eye(dirs)
    seeds = {}
    for block, group in enumerate(("q", "qd", "qdd")):
        for c, n in enumerate(prog.inputs[group][sl]):
            seeds[n] = eye[block * nf + c]
    for s, g in G.items():
        seeds[s] = np.concatenate([np.zeros(3 * nf), g])
    dyn = _replayed(prog, ["tau"], seeds, dirs, "fm_sens_dynamics")

    tprog = _tip_program(probe, pnames)
    tseeds = {n: np.eye(nf + k)[c] for c, n in enumerate(tprog.inputs["q"][sl])}
    for s, g in G.items():
        tseeds[s] = np.concatenate([np.zeros(nf), g])
    tipf = _replayed(tprog, ["tip"], tseeds, nf + k, "fm_sens_tip")

    def rates(t, y):
        pf, vf = y[:nf], y[nf:2 * nf]
        S, Sv = y[2 * nf:].reshape(2, nf, k)
        qr, qdr, qddr = motion(t)
        q = np.concatenate([qr, pf])
        qd = np.concatenate([qdr, vf])
        qdd = np.concatenate([qddr, np.zeros(nf)])
        tau, d = dyn(q, qd, qdd, p)
        M_ff = d[2 * nf:3 * nf, sl].T  # d ID_f / d pdd
        acc = -np.linalg.solve(M_ff, tau[sl])
        qdd[sl] = acc
        _, d = dyn(q, qd, qdd, p)  # partial derivatives at the actual accelerations
        Jp, Jv, Jt = d[:nf, sl].T, d[nf:2 * nf, sl].T, d[3 * nf:, sl].T
        dS = -np.linalg.solve(M_ff, Jp @ S + Jv @ Sv + Jt)
        return np.concatenate([vf, acc, Sv.ravel(), dS.ravel()])

    y = np.zeros(2 * nf + 2 * nf * k)
    if q0 is not None:
        y[:nf] = np.asarray(q0, float)[sl]
    if qd0 is not None:
        y[nf:2 * nf] = np.asarray(qd0, float)[sl]
    steps = int(round(t_final / dt))
    if steps < 1 or not np.isclose(steps * dt, t_final, rtol=1e-9, atol=1e-12):
        raise ValueError(f"t_final: must be a whole number of steps dt = {dt:g} s (got {t_final:g})")
    tips, dtips = [], []
    for n in range(steps + 1):
        t = n * dt
        qr, _, _ = motion(t)
        q = np.concatenate([qr, y[:nf]])
        tip, dtip = tipf(q, p)  # dtip: (nf + k, 3)
        S = y[2 * nf:].reshape(2, nf, k)[0]
        tips.append(tip)
        dtips.append(dtip[:nf].T @ S + dtip[nf:].T)
        if n == steps:
            break
        k1 = rates(t, y)
        k2 = rates(t + 0.5 * dt, y + 0.5 * dt * k1)
        k3 = rates(t + 0.5 * dt, y + 0.5 * dt * k2)
        k4 = rates(t + dt, y + dt * k3)
        y = y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"the simulation diverged at t = {t + dt:g} s; use a smaller dt")
    tips, dtips = np.array(tips), np.array(dtips)  # (N, 3), (N, 3, k)
    norms = np.linalg.norm(tips, axis=1)
    i = int(np.argmax(norms)) if figure == "peak_tip_deflection" else len(norms) - 1
    value = norms[i]
    deriv = tips[i] @ dtips[i] / value if value > 0 else np.zeros(k)
    values = np.array([physical.value(robot, n) for n in names])
    return Sensitivity(figure, names, values, np.array([value]), deriv[:, None],
                       [f"{figure} (m) at t = {i * dt:g} s"])
