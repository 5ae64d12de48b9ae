"""Partial derivatives of the inverse and forward dynamics (issue 33): the complex step through
the recursions, the traced programs as generated NumPy and C, against central differences,
CasADi's automatic derivatives and Pinocchio's computeRNEADerivatives / computeABADerivatives."""
import numpy as np
import pytest

import flexman as fm
from backends import ROBOTS, states
from urdf_helpers import ROBOTS as ERD, pin_q


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("derivatives")
    return {name: build(tmp) for name, build in ROBOTS.items()}


def _central(f, x, h=1e-6):
    """Central differences of f (a vector) by each entry of x: (len f, len x)."""
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(cols).T


def _rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("name", list(ROBOTS))
def test_complex_step_equals_central_differences(robots, name):
    """Every kind of robot (rigid, geared, flexible, tree, mimic, floating with and without beams)."""
    robot = robots[name]
    q, qd, tau = states(robot, 1, seed=4)[0]
    qdd = robot.forward_dynamics(q, qd, tau)
    d = robot.inverse_dynamics_derivatives(q, qd, qdd, backend="numeric")
    assert _rel(d.dq, _central(lambda x: robot.inverse_dynamics(x, qd, qdd), q)) < 1e-6
    assert _rel(d.dqd, _central(lambda x: robot.inverse_dynamics(q, x, qdd), qd)) < 1e-6
    assert _rel(d.dqdd, robot.mass_matrix(q)) < 1e-14
    f = robot.forward_dynamics_derivatives(q, qd, tau, backend="numeric")
    assert _rel(f.dq, _central(lambda x: robot.forward_dynamics(x, qd, tau), q)) < 1e-6
    assert _rel(f.dqd, _central(lambda x: robot.forward_dynamics(q, x, tau), qd)) < 1e-6
    assert _rel(f.dtau, _central(lambda x: robot.forward_dynamics(q, qd, x), tau)) < 1e-6


@pytest.mark.parametrize("name", ["rigid_serial", "geared_drives", "flexible_serial", "mimic_tree", "floating_urdf_beam"])
def test_generated_numpy_and_c_equal_the_recursions(robots, name):
    """Batched: the traced program as NumPy and as C (one call per batch) equal the complex step."""
    robot = robots[name]
    rows = states(robot, 3, seed=6)
    q, qd, tau = (np.array(x) for x in zip(*rows))
    eom = fm.derive(robot)
    ref_i = robot.inverse_dynamics_derivatives(q, qd, 0.3 * qd, backend="numeric")
    ref_f = robot.forward_dynamics_derivatives(q, qd, tau, backend="numeric")
    for kind in ("numpy", "c"):
        fast = eom.compile(kind, derivatives=True)
        for got, ref in ((fast.inverse_dynamics_derivatives(q, qd, 0.3 * qd), ref_i),
                         (fast.forward_dynamics_derivatives(q, qd, tau), ref_f)):
            for a, b in zip(got, ref):
                assert a.shape == b.shape and _rel(a, b) < 1e-10, kind
        one = fast.forward_dynamics_derivatives(q[1], qd[1], tau[1])  # one state: the extension's path
        for a, b in zip(one, ref_f):
            assert _rel(a, b[1]) < 1e-10, kind


def test_casadi_automatic_derivatives(robots):
    """CasADi's jacobian of the same equations (exported instruction by instruction)."""
    import casadi as ca

    for name in ("rigid_serial", "flexible_serial"):
        robot = robots[name]
        q, qd, tau = states(robot, 1, seed=8)[0]
        fns = fm.derive(robot).casadi(["forward_dynamics"])
        fd = fns["forward_dynamics"]
        x = [ca.SX.sym(n, k) for n, k in (("q", robot.nq), ("qd", robot.nq), ("tau", robot.n_joints))]
        out = fd(*x)
        jac = ca.Function("j", x, [ca.jacobian(out, v) for v in x])
        ref = [np.array(m) for m in jac(q, qd, tau)]
        got = robot.forward_dynamics_derivatives(q, qd, tau, backend="numeric")
        for a, b in zip(got, ref):
            assert _rel(a, b) < 1e-10


@pytest.mark.skipif(ERD is None, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", ["ur_description/urdf/ur5_robot.urdf", "xarm_description/urdf/xarm7.urdf",
                                 "kinova_description/robots/kinova.urdf"])
def test_pinocchio_rnea_and_aba_derivatives(rel):
    """The UR5 (6 joints), the xArm7 (7) and the Kinova arm (continuous joints) against Pinocchio's analytic
    derivatives, numeric and compiled."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(ERD / rel))
    data = model.createData()
    robot = fm.load(ERD / rel)
    for link in robot.links:  # Pinocchio's recursions leave out the URDF's joint damping and friction
        link.viscous = link.coulomb = 0.0
    if robot.nq != model.nv:
        pytest.skip("mimic fingers: Pinocchio's model has every joint a coordinate")
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.uniform(-1, 1, robot.nq) for _ in range(3))
    tau = rng.uniform(-5, 5, robot.nq)
    pin.computeRNEADerivatives(model, data, pin_q(model, q), qd, qdd)
    rnea = (data.dtau_dq.copy(), data.dtau_dv.copy(), np.triu(data.M) + np.triu(data.M, 1).T)
    pin.computeABADerivatives(model, data, pin_q(model, q), qd, tau)
    aba = (data.ddq_dq.copy(), data.ddq_dv.copy(), np.triu(data.Minv) + np.triu(data.Minv, 1).T)
    for backend in ("numeric", "compiled"):
        for a, b in zip(robot.inverse_dynamics_derivatives(q, qd, qdd, backend=backend), rnea):
            assert _rel(a, b) < 1e-10, backend
        for a, b in zip(robot.forward_dynamics_derivatives(q, qd, tau, backend=backend), aba):
            assert _rel(a, b) < 1e-10, backend


def test_joint_friction_by_complex_step(robots):
    """Viscous friction's slope is in d tau / d qd, Coulomb friction's is zero (away from rest):
    the complex step must not differentiate sign() as z / |z|."""
    import copy

    robot = copy.deepcopy(robots["rigid_serial"])
    for k, link in enumerate(robot.links):
        link.viscous, link.coulomb = 0.5 + k, 2.0
    q, qd, tau = states(robot, 1, seed=3)[0]
    d = robot.inverse_dynamics_derivatives(q, qd, 0 * qd, backend="numeric")
    assert _rel(d.dqd, _central(lambda x: robot.inverse_dynamics(q, x, 0 * qd), qd, h=1e-7)) < 1e-6
    fast = fm.derive(robot).compile("c", derivatives=True)
    assert _rel(fast.inverse_dynamics_derivatives(q, qd, 0 * qd).dqd, d.dqd) < 1e-10


def test_bad_input_is_one_line(robots):
    robot = robots["rigid_serial"]
    q = np.zeros(robot.nq)
    with pytest.raises(ValueError, match="backend: unknown 'fast'"):
        robot.forward_dynamics_derivatives(q, q, q, backend="fast")
    with pytest.raises(ValueError, match=r"qd\[1\] is nan"):
        robot.inverse_dynamics_derivatives(q, [0.0, np.nan], q, backend="numeric")
    with pytest.raises(ValueError, match="q: derivatives take real numbers"):
        robot.inverse_dynamics_derivatives(q + 1j, q, q, backend="numeric")
    with pytest.raises(ValueError, match="tau"):
        robot.forward_dynamics_derivatives(q, q, [1.0, 2.0, 3.0], backend="numeric")


def test_a_robot_stays_copyable_after_compiled_derivatives(robots):
    """The compiled model that served the derivatives is not kept on the robot (ctypes objects
    cannot be pickled): copies and pickles of the robot still work."""
    import copy
    import pickle

    robot = copy.deepcopy(robots["flexible_serial"])
    robot.compiled(derivatives=True)
    q, qd, tau = states(robot, 1)[0]
    robot.forward_dynamics_derivatives(q, qd, tau)  # auto: the compiled variant, built just above
    assert copy.deepcopy(robot).nq == robot.nq and pickle.loads(pickle.dumps(robot)).nq == robot.nq
