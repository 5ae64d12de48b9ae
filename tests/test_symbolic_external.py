"""Issue 4 (DYNAMAN keeps external forces symbolic): wrenches on every link are named inputs of
the derived equations and equal the numeric J^T w."""
import numpy as np
import pytest

import flexman as fm


@pytest.mark.parametrize("name", ["dynaman_2r", "flx_flexible_pendulum", "theodore_rrp"])
def test_external_wrenches_are_inputs_equal_to_jacobian_transpose(name):
    robot = fm.examples.load(name)
    fast = fm.derive(robot, formulation="book", external=True).compile("numpy")
    rng = np.random.default_rng(0)
    q, qd = rng.normal(size=(2, robot.nq)) * 0.1
    w = rng.normal(size=(robot.n_joints, 6))
    p = fast.params.copy()
    for i in range(robot.n_joints):
        for k, c in enumerate(("F{}x", "F{}y", "F{}z", "T{}x", "T{}y", "T{}z")):
            p[fast.param_names.index(c.format(i + 1))] = w[i, k]
    fast.params = p
    expected = robot.bias_forces(q, qd) - sum(robot.jacobian(q, link=i).T @ w[i] for i in range(robot.n_joints))
    assert np.abs(fast.bias_forces(q, qd) - expected).max() < 1e-10 * np.abs(expected).max()


def test_symbolic_parameters_name_the_wrenches():
    eom = fm.derive(fm.examples.load("dynaman_2r"), parameters="symbolic")
    names = {str(s) for s in eom.b.free_symbols}
    assert {"F2x", "F2y", "T1z", "T2z"} <= names


@pytest.mark.parametrize("formulation", ["book", "newton_euler"])
def test_inverse_dynamics_passes_count_the_wrenches(formulation):
    # each pass traces only the inverse dynamics: its last step is the program op_count reports
    eom = fm.derive(fm.examples.load("dynaman_2r"), formulation=formulation, parameters="symbolic")
    assert eom.passes("inverse_dynamics")[-1][1] == eom.op_count("inverse_dynamics")
