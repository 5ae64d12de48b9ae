"""Forward-mode derivatives of traced programs (symbolic.tapediff) against central differences
of the numeric inverse dynamics on a rigid and a flexible arm."""
import math

import numpy as np
import pytest

import flexman as fm
from flexman.symbolic.tapediff import jacobian


def _evaluate(tape, values, outputs):
    """Evaluate tape nodes up to the outputs at the given input values (a plain interpreter)."""
    val = {}
    fns = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "neg": lambda a: -a, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / b, "sin": math.sin, "cos": math.cos, "sqrt": math.sqrt, "pow": lambda a, n: a ** n}
    last = max(o.idx for o in outputs if hasattr(o, "idx"))
    for i in range(last + 1):
        op, args = tape.ops[i]
        if op == "in":
            val[i] = values.get(args[0], 0.0)
        else:
            val[i] = fns[op](*[val[a] if isinstance(a, int) else a for a in args])
    return np.array([(-val[o.idx] if o.neg else val[o.idx]) if hasattr(o, "idx") else float(o) for o in outputs])


@pytest.mark.parametrize("name", ["ur5_like", "dynaman_rp", "flx_three_link", "ur5_like_flexible"])
def test_inverse_dynamics_jacobian_matches_central_differences(name):
    robot = fm.examples.load(name)
    eom = fm.derive(robot)
    tape, x = eom.tape, eom._x
    tau = list(np.ravel(eom._values["tau"]))
    qn = [t.tape.ops[t.idx][1][0] for t in x["q"]]
    qdn = [t.tape.ops[t.idx][1][0] for t in x["qd"]]
    J = jacobian(tape, tau, qn + qdn)
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1, 1, robot.nq) for _ in range(3))
    vals = {n: v for n, v in zip(qn, q)} | {n: v for n, v in zip(qdn, qd)}
    vals |= {tape.ops[t.idx][1][0]: v for t, v in zip(x["qdd"], qdd)}
    vals |= dict(eom.param_values)
    Jn = np.array([_evaluate(tape, vals, row) for row in J])
    h = 1e-6
    fd = np.zeros_like(Jn)
    for j in range(robot.nq):
        e = np.zeros(robot.nq)
        e[j] = h
        fd[:, j] = (robot.inverse_dynamics(q + e, qd, qdd) - robot.inverse_dynamics(q - e, qd, qdd)) / (2 * h)
        fd[:, robot.nq + j] = (robot.inverse_dynamics(q, qd + e, qdd) - robot.inverse_dynamics(q, qd - e, qdd)) / (2 * h)
    assert np.allclose(Jn, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))


@pytest.mark.parametrize("name", ["ur5_like", "flx_three_link"])
def test_generated_c_inverse_dynamics_derivatives_batch(name):
    """fm_inverse_dynamics_derivatives_batch (every compiled model) equals central differences."""
    import ctypes

    from flexman.codegen import c_source, cbuild

    robot = fm.examples.load(name)
    eom = fm.derive(robot)
    fast = eom.compile()
    lib = cbuild.load(cbuild.build_shared(c_source(eom, derivatives=True)))  # opt-in: not in every model yet
    f = lib.fm_inverse_dynamics_derivatives_batch
    n, nq = 3, robot.nq
    rng = np.random.default_rng(5)
    q, qd, qdd = (np.ascontiguousarray(rng.uniform(-1, 1, (n, nq))) for _ in range(3))
    dq, dqd = np.zeros((n, nq, nq)), np.zeros((n, nq, nq))
    ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
    args = [ctypes.c_long(n), ptr(q), ptr(qd), ptr(qdd)]
    p = np.ascontiguousarray(fast._params)
    if p.size:
        args.append(ptr(p))
    f(*args, ptr(dq), ptr(dqd))
    h = 1e-6
    for i in range(n):
        for j in range(nq):
            e = np.zeros(nq)
            e[j] = h
            fq = (robot.inverse_dynamics(q[i] + e, qd[i], qdd[i]) - robot.inverse_dynamics(q[i] - e, qd[i], qdd[i])) / (2 * h)
            fqd = (robot.inverse_dynamics(q[i], qd[i] + e, qdd[i]) - robot.inverse_dynamics(q[i], qd[i] - e, qdd[i])) / (2 * h)
            scale = max(1.0, np.abs(fq).max(), np.abs(fqd).max())
            assert np.allclose(dq[i, :, j], fq, rtol=1e-6, atol=1e-6 * scale)
            assert np.allclose(dqd[i, :, j], fqd, rtol=1e-6, atol=1e-6 * scale)
