"""The complete elastic-joint model (issue 36: ``drive.gyroscopic``): the rotor's coupling with the
rotation of the link that carries it. Oracle: an independent Lagrangian written here in SymPy
from the energies of a spatial three-joint arm whose third joint is elastic, with the rotor as
a body of its own on link 2 (mass, axial and transverse inertia) turning at ``n theta_dot``
relative to it: M = d2T/dqd2 and b = d/dt(dT/dqd) - dT/dq + dV/dq at zero acceleration.
The rotor's axis is tilted so that both its coupling and its gyroscopic torque are non-zero."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.model.robot import Placement

sp = pytest.importorskip("sympy")

AXES = [np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.6, 0.8])]
ORIGINS = [np.zeros(3), np.array([0.0, 0.0, 0.3]), np.array([0.5, 0.0, 0.0])]
BODIES = [(1.5, [0.0, 0.0, 0.1], np.diag([0.02, 0.03, 0.01])),
          (1.0, [0.3, 0.0, 0.0], np.array([[0.01, 0.001, 0.0], [0.001, 0.04, 0.0], [0.0, 0.0, 0.04]])),
          (0.6, [0.2, 0.05, 0.0], np.diag([0.004, 0.01, 0.012]))]
N, J, JT, MR, K = 40.0, 3e-4, 2e-4, 0.3, 80.0  # gear ratio, rotor axial / transverse inertia, rotor mass, spring
GRAVITY = np.array([0.0, 0.0, -9.81])


def rotor_inertia():
    z = AXES[2]
    return JT * (np.eye(3) - np.outer(z, z)) + J * np.outer(z, z)


def arm(gyroscopic=True, damping=0.0, torque_limit=None):
    links = []
    for i, (m, com, inertia) in enumerate(BODIES):
        kw = {}
        if i == 1:  # the rotor: a body on link 2 at joint 3 (its inertia moving with link 2)
            kw["hub"] = fm.RigidBody(mass=MR, com=ORIGINS[2], inertia=rotor_inertia())
        if i == 2:
            kw["drive"] = fm.Drive(gear_ratio=N, rotor_inertia=J, stiffness=K, damping=damping, gyroscopic=gyroscopic,
                                   torque_limit=torque_limit)
        links.append(fm.Link(joint="revolute", placement=Placement(xyz=ORIGINS[i], axis=AXES[i]),
                             body=fm.RigidBody(mass=m, com=com, inertia=inertia), **kw))
    return fm.Robot(links=links, gravity=GRAVITY, name="gyro_arm")


def rot(axis, angle):
    k = sp.Matrix(axis)
    S = sp.Matrix([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return sp.eye(3) + sp.sin(angle) * S + (1 - sp.cos(angle)) * S * S


def vee(W):
    return sp.Matrix([W[2, 1], W[0, 2], W[1, 0]])


@pytest.fixture(scope="module")
def oracle():
    return lagrangian()


def lagrangian():
    """(M(q), b(q, qd)) as NumPy functions of the independent Lagrangian."""
    q = sp.symbols("q1:4") + (sp.Symbol("th"),)
    qd = sp.symbols("qd1:4") + (sp.Symbol("thd"),)
    R, p = sp.eye(3), sp.zeros(3, 1)
    frames = []
    for i in range(3):
        p = p + R * sp.Matrix(ORIGINS[i])
        R = R * rot(AXES[i], q[i])
        frames.append((R, p))

    def rate(x):
        return x.jacobian(sp.Matrix(q)) * sp.Matrix(qd)

    T, V = 0, 0
    g = sp.Matrix(GRAVITY)
    pieces = [(frames[i], BODIES[i][0], BODIES[i][1], BODIES[i][2], None) for i in range(3)]
    pieces.append((frames[1], MR, ORIGINS[2], rotor_inertia(), AXES[2]))  # the rotor
    for (Rb, pb), m, com, inertia, spin in pieces:
        c = pb + Rb * sp.Matrix(com)
        v = rate(c)
        w = vee(Rb.T * sum((Rb.diff(x) * xd for x, xd in zip(q, qd)), sp.zeros(3, 3)))  # body-frame R^T R_dot
        if spin is not None:  # the rotor turns at n theta_dot about its axis relative to link 2
            w = w + N * qd[3] * sp.Matrix(spin)
        T += sp.Rational(1, 2) * m * (v.T * v)[0] + sp.Rational(1, 2) * (w.T * sp.Matrix(inertia) * w)[0]
        V += -m * (g.T * c)[0]
    V += sp.Rational(1, 2) * K * (q[3] - q[2]) ** 2
    dT = sp.Matrix([T]).jacobian(sp.Matrix(qd))
    M = dT.jacobian(sp.Matrix(qd))
    b = dT.jacobian(sp.Matrix(q)) * sp.Matrix(qd) - sp.Matrix([T]).jacobian(sp.Matrix(q)).T \
        + sp.Matrix([V]).jacobian(sp.Matrix(q)).T
    fM = sp.lambdify([q], M, "numpy", cse=True)
    fb = sp.lambdify([q, qd], b, "numpy", cse=True)
    return (lambda x: np.array(fM(x), float)), (lambda x, xd: np.array(fb(x, xd), float).ravel())


def test_mass_matrix_and_bias_equal_the_energy_lagrangian(oracle):
    fM, fb = oracle
    robot = arm()
    assert robot.coordinate_names[-1] == "q3_motor"
    rng = np.random.default_rng(7)
    Q, QD = rng.uniform(-2, 2, (5, 4)), rng.uniform(-3, 3, (5, 4))
    for q, qd in zip(Q, QD):
        np.testing.assert_allclose(robot.mass_matrix(q), fM(q), rtol=0, atol=1e-10)
        np.testing.assert_allclose(robot.bias_forces(q, qd), fb(q, qd), rtol=0, atol=1e-10)
    np.testing.assert_allclose(robot.mass_matrix(Q), np.array([fM(q) for q in Q]), rtol=0, atol=1e-10)  # composite
    # the coupling is there: the reduced model misses it by c = n J on the motor's row
    reduced = arm(gyroscopic=False)
    assert abs(reduced.mass_matrix(Q[0])[3, :3] - fM(Q[0])[3, :3]).max() > 0.1 * N * J


def test_generated_code_and_traced_equations_agree():
    robot = arm()
    rng = np.random.default_rng(11)
    q, qd, qdd = rng.uniform(-2, 2, (3, 4)), rng.uniform(-3, 3, (3, 4)), rng.uniform(-3, 3, (3, 4))
    fast = fm.derive(robot).compile("c")
    np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), rtol=0, atol=1e-11)
    np.testing.assert_allclose(fast.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd), rtol=0,
                               atol=1e-10)
    eom = fm.derive(robot, formulation="lagrange")  # M from the kinetic energy, b by Christoffel symbols
    energy = eom.compile("numpy")
    assert any(n.startswith("lagrange: M from the kinetic energy") for n in eom.notes)
    np.testing.assert_allclose(energy.mass_matrix(q), robot.mass_matrix(q), rtol=0, atol=1e-11)
    np.testing.assert_allclose(energy.bias_forces(q, qd), robot.bias_forces(q, qd), rtol=0, atol=1e-10)


def test_a_free_run_conserves_energy_in_both_loops():
    robot = arm()
    q0, qd0 = np.array([0.2, 0.7, -0.4, -0.1]), np.array([1.5, -1.0, 2.0, 30.0])
    runs = {loop: fm.simulate(robot, 0.4, dt=2e-4, method="rk4", q0=q0, qd0=qd0, loop=loop, progress=False,
                              backend="compiled" if loop == "compiled" else "numeric")
            for loop in ("python", "compiled")}
    for res in runs.values():
        drift = np.abs(res.energy - res.energy[0]).max() / abs(res.energy[0])
        assert drift < 1e-8
    np.testing.assert_allclose(runs["compiled"].q, runs["python"].q, rtol=0, atol=1e-9)
    assert runs["compiled"].stats["loop"] == "compiled"


def test_a_flexible_carrier_keeps_m_symmetric_and_the_energy():
    """The rotor of joint 3 on the flexible upper arm of flx_three_link: its coupling then reaches
    the beam's coordinates through the tip's rotation. M by composite bodies equals M by unit
    accelerations, 2 T = qd^T M qd, and a free run conserves energy."""
    from flexman.model.serialize import robot_from_dict, robot_to_dict

    data = robot_to_dict(fm.examples.load("flx_three_link"))
    data["links"][2]["drive"] = {"gear_ratio": 50.0, "rotor_inertia": 2e-4, "stiffness": 3000.0, "gyroscopic": True}
    robot = robot_from_dict(data)
    rng = np.random.default_rng(1)
    Q, QD = rng.uniform(-0.5, 0.5, (3, robot.nq)), rng.uniform(-1, 1, (3, robot.nq))
    M = robot.mass_matrix(Q)
    np.testing.assert_allclose(M, [robot.mass_matrix(q) for q in Q], rtol=0, atol=1e-11)
    np.testing.assert_allclose(2 * robot.kinetic_energy(Q, QD), np.einsum("ni,nij,nj->n", QD, M, QD), rtol=1e-12)
    assert np.abs(M[:, -1, robot.flex_index]).max() > 1e-4  # the motor is coupled with the beam's modes
    qd0 = np.zeros(robot.nq)
    qd0[0], qd0[-1] = 1.0, 20.0
    res = fm.simulate(robot, 0.1, dt=1e-4, method="rk4", qd0=qd0, progress=False, backend="numeric")
    assert np.abs(res.energy - res.energy[0]).max() < 1e-9 * np.abs(res.energy).max()


def test_fmu_of_gyroscopic_drives_equals_simulate(tmp_path):
    """An FMU (co-simulation, RK4) of the arm with its gyroscopic elastic joint, run by FMPy, equals
    fm.simulate of the same robot on the interpreted path; without the rotor's coupling the run
    differs by far more: the FMU's generated equations carry it."""
    fmpy = pytest.importorskip("fmpy")
    robot = arm(damping=0.05)
    q0, qd0 = np.array([0.3, -0.4, 0.5, 0.5 * N]), np.array([1.0, -0.5, 0.8, 40.0])
    tau = np.array([0.5, -1.0, 0.02])
    path = fm.derive(robot).fmu(tmp_path / "gyro.fmu", kind="cs", step_size=1e-3)
    values = {n: float(v) for n, v in zip(robot.coordinate_names, q0)}
    values.update({f"qd_{n}": float(v) for n, v in zip(robot.coordinate_names, qd0)})
    values.update({f"tau{j + 1}": float(v) for j, v in enumerate(tau)})
    out = fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=0.1, output_interval=1e-3,
                            start_values=values)
    got = np.column_stack([out[n] for n in robot.coordinate_names])
    run = dict(dt=1e-3, q0=q0, qd0=qd0, torque=tau, method="rk4", backend="numeric", progress=False)
    ref = fm.simulate(robot, 0.1, **run)
    assert got.shape == ref.q.shape
    assert np.abs(got - ref.q).max() < 1e-10
    assert np.abs(fm.simulate(arm(gyroscopic=False, damping=0.05), 0.1, **run).q - ref.q).max() > 0.1


@pytest.mark.parametrize("drive, message", [
    (dict(gyroscopic=True), r"gyroscopic: the rotor's coupling is a term of the elastic joint's complete model"),
    (dict(gyroscopic=1, stiffness=10.0, rotor_inertia=1e-4), r"gyroscopic: must be true or false"),
])
def test_bad_gyroscopic_drives_are_one_line(drive, message):
    with pytest.raises(fm.ModelError, match=message) as info:
        fm.Drive(**drive)
    assert "\n" not in str(info.value)
    with pytest.raises(fm.ModelError, match=r"drive\.gyroscopic: the complete model's rotor turns about a revolute"):
        fm.Link(joint="prismatic", drive=fm.Drive(stiffness=10.0, rotor_inertia=1e-4, gyroscopic=True))
