"""Issue 4: for every bundled example the numeric model, the traced program evaluated as NumPy
code and the compiled C code agree to 1e-10; Saha's modified arm (003 Fig. 4) has a constant
inertia matrix and no Coriolis/centrifugal terms."""
import numpy as np
import pytest

import flexman as fm

NAMES = fm.examples.names()


def _states(robot, rng, k=3):
    q = rng.normal(size=(k, robot.nq)) * 0.3
    q[:, robot.flex_index] *= 0.1
    for i, link in enumerate(robot.links):
        if link.joint == "prismatic":
            q[:, i] = rng.uniform(-0.05, 0.05, k)
    qd = rng.normal(size=(k, robot.nq))
    tau = rng.normal(size=(k, robot.n_joints))
    return q, qd, tau


def _close(a, b, tol=1e-10):
    return np.abs(a - b).max() <= tol * max(np.abs(b).max(), 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_numeric_symbolic_numpy_and_c_agree(name):
    robot = fm.examples.load(name)
    formulation = "newton_euler" if robot.is_rigid else "book"
    eom = fm.derive(robot, formulation=formulation)
    q, qd, tau = _states(robot, np.random.default_rng(3))
    M, b = robot.mass_matrix(q), robot.bias_forces(q, qd)
    qdd = robot.forward_dynamics(q, qd, tau)
    for backend in ("numpy", "c"):
        fast = eom.compile(backend)
        assert _close(fast.mass_matrix(q), M)
        assert _close(fast.bias_forces(q, qd), b)
        # solving with M loses cond(M) x roundoff (cond ~1e8 for the monomial shapes of 001)
        cond = np.linalg.cond(M).max()
        assert _close(fast.forward_dynamics(q, qd, tau), qdd, max(1e-9, 1e-15 * cond))


def test_saha_modified_arm_has_constant_gim_and_no_coriolis_terms():
    robot = fm.examples.load("saha_3link_modified")
    gim = fm.derive(robot, formulation="denoc").gim_structure()
    assert gim.is_constant
    rng = np.random.default_rng(0)
    q, qd, _ = _states(robot, rng)
    g = robot.bias_forces(q, np.zeros_like(qd))  # gravity part
    assert np.abs(robot.bias_forces(q, qd) - g).max() < 1e-12 * max(1.0, np.abs(g).max())
    assert np.allclose(robot.mass_matrix(q), robot.mass_matrix(np.zeros(robot.nq)), atol=1e-14)
