"""The CasADi export (``fm.derive(robot).casadi()``) equals the compiled C on random states."""
import zlib

import numpy as np
import pytest

import flexman as fm
from flexman.codegen.modelcache import compiled_model

pytest.importorskip("casadi")

EXAMPLES = fm.examples.names()  # flexible examples beam stiffening on (the default), e.g. flx_three_link_lqr


def _close(a, b, tol=1e-12, scale=None):
    a, b = np.asarray(a, dtype=float).reshape(np.shape(b)), np.asarray(b)
    scale = 1.0 + np.abs(b).max() if scale is None else scale
    assert np.abs(a - b).max() <= tol * scale, (np.abs(a - b).max(), scale)


FAST = ("dynaman_2r", "flx_three_link_lqr")  # one rigid arm, the showcase's stiffened flexible arm
CASES = [name if name in FAST else pytest.param(name, marks=pytest.mark.slow) for name in EXAMPLES]


@pytest.mark.parametrize("name", CASES)
def test_casadi_equals_compiled_c(name):
    robot = fm.examples.load(name)
    f = fm.derive(robot).casadi()
    c = compiled_model(robot)
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # the same states every run (hash() is salted)
    n, nq = robot.n_joints, robot.nq
    for _ in range(3):
        q = rng.uniform(-1, 1, nq)
        q[robot.flex_index] *= 0.05  # deflections of a few centimetres
        for i, lk in enumerate(robot.links):  # sliding joints inside their range
            if lk.joint == "prismatic":
                lo, hi = lk.limits if lk.limits is not None else (0.2, 0.8)
                q[i] = rng.uniform(lo, hi)
        qd, qdd = rng.normal(size=(2, nq))
        tau = rng.normal(size=n)
        _close(f["inverse_dynamics"](q, qd, qdd), c.inverse_dynamics(q, qd, qdd))
        # accelerations: both solve M qdd = S tau - b, each with its own rounding, so their
        # difference grows with the condition number of M (1e7 for piedboeuf_one_link's stiff beam)
        M = c.mass_matrix(q)
        _close(f["forward_dynamics"](q, qd, tau), c.forward_dynamics(q, qd, tau), 1e-12 * max(1.0, np.linalg.cond(M)))
        qdd_cas = np.asarray(f["forward_dynamics"](q, qd, tau), dtype=float).ravel()
        b = c.bias_forces(q, qd)  # and they solve it: M qdd + b = S tau, to the rounding of its terms
        _close(M @ qdd_cas + b, np.concatenate([tau, np.zeros(nq - n)]), 1e-12,
               1.0 + np.abs(M).max() * np.abs(qdd_cas).max() + np.abs(b).max())
        _close(f["mass_matrix"](q), c.mass_matrix(q))
        _close(f["bias_forces"](q, qd), c.bias_forces(q, qd))
        _close(f["tip_position"](q), robot.frame(q)[:3, 3])


def test_unknown_function_is_one_line():
    with pytest.raises(ValueError, match="which: unknown 'jerk'"):
        fm.derive(fm.examples.load("dynaman_2r")).casadi(("jerk",))
