"""Statics under endpoint loads and beam strain (001 sec. 3.4): closed forms, exact kinematics,
the damped dynamics, and bad input."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.dynamics.structure import numeric_model
from flexman.analysis import BucklingError, curvature, deflection, statics, surface_strain

EI, MU, L = 13.4, 0.65, 0.7845


def cantilever(modes=5, gravity=(0.0, 0.0, 0.0), torsion=0, z=0, EIz=None, tool=None):
    beam = Beam(length=L, mass_per_length=MU, EI=[EI, EIz or EI], GJ=7.0, polar_inertia_per_length=1e-4,
                shapes="polynomial", modes={"y": modes, "z": z, "torsion": torsion})
    return Robot(links=[Link(a=L, beam=beam, body=tool or RigidBody())], gravity=list(gravity))


def wrench(*values):
    out = np.zeros(6)
    out[: len(values)] = values
    return out


# ----- closed forms ---------------------------------------------------------------------------
@pytest.mark.parametrize("order", [1, 2])
def test_cantilever_tip_force_and_own_weight(order):
    """Horizontal cantilever: tip deflection F L^3/3EI - q L^4/8EI and curvature
    F (L - x)/EI - q (L - x)^2/2EI (the polynomial shapes hold both exactly; loads normal to the
    axis add no second-order stiffness)."""
    g, F = 9.81, 0.8
    robot = cantilever(gravity=(0, -g, 0))
    x = np.array([0.0, 0.2, 0.5, L])
    res = statics(robot, [0.0], wrench(0, F), order=order, gauges=x)
    q = MU * g
    tip = F * L**3 / (3 * EI) - q * L**4 / (8 * EI)
    assert res.deflection[1] == pytest.approx(tip, rel=1e-11)
    assert np.allclose(res.curvature[:, 2], F * (L - x) / EI - q * (L - x) ** 2 / (2 * EI), rtol=0, atol=1e-12)
    assert np.allclose(deflection(robot, res.q, 0, L)[1], tip, rtol=1e-11)
    # holding torque: the moment of the weight and of the force about the joint (order 1: the
    # points move normal to the lever arms; order 2: foreshortening shortens them slightly)
    assert res.torques[0] == pytest.approx(q * L * L / 2 - F * L, rel=1e-12 if order == 1 else 1e-3)


def test_point_along_the_beam():
    """A force at x = a along the beam: tip deflection F a^2 (3L - a) / 6EI."""
    robot, F, a = cantilever(), 1.5, 0.3
    res = statics(robot, [0.0], wrench(0, F), point=a, order=1)
    assert deflection(robot, res.q, 0, L)[1] == pytest.approx(F * a * a * (3 * L - a) / (6 * EI), rel=1e-11)
    # under the load the five polynomials miss the kink of w''' (Ritz): within 1 %
    assert res.position[1] == pytest.approx(F * a**3 / (3 * EI), rel=1e-2)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_beam_column_closed_form(sign):
    """Order 2 under an axial tip load P (tension +, compression -) and a transverse tip force F
    is the beam-column: tip deflection F (kL - tanh kL)/(P k) in tension, F (tan kL - kL)/(P k)
    in compression, k = sqrt(P/EI). Order 1 stays at F L^3/3EI."""
    robot, F = cantilever(modes=6), 0.3
    P = 0.6 * np.pi**2 * EI / (4 * L * L)  # 60 % of the buckling load
    k = np.sqrt(P / EI)
    exact = F * (k * L - np.tanh(k * L)) / (P * k) if sign > 0 else F * (np.tan(k * L) - k * L) / (P * k)
    two = statics(robot, [0.0], wrench(sign * P, F), order=2)
    one = statics(robot, [0.0], wrench(sign * P, F), order=1)
    assert deflection(robot, two.q, 0, L)[1] == pytest.approx(exact, rel=1e-7)
    assert deflection(robot, one.q, 0, L)[1] == pytest.approx(F * L**3 / (3 * EI), rel=1e-11)
    assert abs(exact / (F * L**3 / (3 * EI)) - 1) > 0.1  # the load stiffening/softening is large here


def test_buckling_is_reported():
    """Euler's load pi^2 EI / 4L^2 of the clamped-free column: below it a stable equilibrium,
    above it a BucklingError naming the load (the first-order model cannot buckle)."""
    robot = cantilever(modes=6)
    Pcr = np.pi**2 * EI / (4 * L * L)
    statics(robot, [0.0], wrench(-0.999 * Pcr, 1e-3), order=2)
    with pytest.raises(BucklingError, match="buckling"):
        statics(robot, [0.0], wrench(-1.001 * Pcr, 1e-3), order=2)
    with pytest.raises(BucklingError, match="buckling"):  # exactly axial: the trivial equilibrium is unstable
        statics(robot, [0.0], wrench(-1.001 * Pcr), order=2)
    statics(robot, [0.0], wrench(-1.001 * Pcr, 1e-3), order=1)


def test_rigid_arm_torques_equal_inverse_dynamics():
    """A rigid 2R arm: the holding torques are gravity plus -J^T w (Pinocchio-checked inverse dynamics)."""
    rod = lambda m, l: RigidBody(m, [-l / 2, 0, 0], [0, m * l * l / 12, m * l * l / 12])
    robot = Robot(links=[Link(a=0.7, body=rod(1.0, 0.7)), Link(a=0.4, alpha=0.3, body=rod(0.5, 0.4))],
                  gravity=[0, -9.81, 0])
    q = np.array([[0.3, 0.9], [-1.0, 0.2]])
    w = np.array([1.0, -2.0, 0.5, 0.1, -0.2, 0.3])
    point = np.array([0.05, 0.02, -0.01])
    res = statics(robot, q, w, point=point, order=0)
    zero = np.zeros_like(q)
    ref = robot.inverse_dynamics(q, zero, zero, f_ext=[(-1, point, w)])
    assert np.allclose(res.torques, ref, atol=1e-12)


# ----- consistency with the dynamics --------------------------------------------------------
def _settle(robot, q_r, w, point, t_final=12.0):
    """The flexible coordinates after a long simulation with the joints held and the beam damped
    (the first-order dynamics of robot.inverse_dynamics), and the torque holding the joints."""
    J, F = robot.joint_index, robot.flex_index
    nf = robot.nf

    def rhs(t, x):
        q = np.zeros(robot.nq)
        qd = np.zeros(robot.nq)
        q[J], q[F], qd[F] = q_r, x[:nf], x[nf:]
        r = robot.inverse_dynamics(q, qd, np.zeros(robot.nq), f_ext=[(-1, point, w)])[F]
        M = robot.mass_matrix(q)[F, F]
        return np.concatenate([x[nf:], -np.linalg.solve(M, r)])

    sol = solve_ivp(rhs, (0, t_final), np.zeros(2 * nf), method="LSODA", rtol=1e-11, atol=1e-13)
    q = np.zeros(robot.nq)
    q[J], q[F] = q_r, sol.y[:nf, -1]
    tau = robot.inverse_dynamics(q, np.zeros(robot.nq), np.zeros(robot.nq), f_ext=[(-1, point, w)])[J]
    return q[F], tau, np.abs(sol.y[nf:, -1]).max()


def _first_order_dynamics():
    """The documents' first-order dynamics (no geometric stiffening)."""
    return {"stiffening": False}


def test_order_one_is_the_equilibrium_of_the_damped_dynamics():
    beam = Beam(length=L, mass_per_length=MU, EI=[EI, EI], shapes="polynomial", modes={"y": 3, "z": 0},
                damping=0.7, **_first_order_dynamics())
    tool = RigidBody(0.1608, [0.0115, -0.158, 0.0], [1e-4, 1e-4, 1e-4])
    robot = Robot(links=[Link(a=0.0365 + L, beam=beam, body=tool)], gravity=[0, -9.81, 0])
    point, w, q_r = np.array([0.0115, -0.3159, 0]), wrench(0, -2.46), np.array([0.7])
    q_f, tau, speed = _settle(robot, q_r, w, point)
    res = statics(robot, q_r, w, point=point, order=1)
    assert speed < 1e-9
    assert np.allclose(res.q_f, q_f, rtol=1e-6, atol=1e-6 * np.abs(q_f).max())
    assert res.torques[0] == pytest.approx(tau[0], rel=1e-6)


def test_order_two_is_the_equilibrium_of_the_stiffened_dynamics():
    """With geometric stiffening in the dynamics (beam: {stiffening: true}: second-order kinematics
    for the beam's mass, the tool and the endpoint load), the damped arm settles where the order-2
    statics (an independent Newton solution) puts it."""
    beam = Beam(length=L, mass_per_length=MU, EI=[EI, EI], shapes="polynomial", modes={"y": 3, "z": 0},
                damping=0.7, stiffening=True)
    tool = RigidBody(0.1608, [0.0115, -0.158, 0.0], [1e-4, 1e-4, 1e-4])
    robot = Robot(links=[Link(a=0.0365 + L, beam=beam, body=tool)], gravity=[0, -9.81, 0])
    point, w, q_r = np.array([0.0115, -0.3159, 0]), wrench(0, -2.46), np.array([0.7])
    q_f, tau, speed = _settle(robot, q_r, w, point)
    res = statics(robot, q_r, w, point=point, order=2)
    assert speed < 1e-9
    assert np.allclose(res.q_f, q_f, rtol=1e-6, atol=1e-6 * np.abs(q_f).max())
    assert res.torques[0] == pytest.approx(tau[0], rel=1e-6)


# ----- second-order kinematics against the exact (curvature-integrated) kinematics ----------
def _exact_tip(robot, q, point, steps=400):
    """Tip frame of a one-link arm at q_r = 0 by integrating R' = R skew(kappa), r' = R e_x
    (RK4) with kappa = (alpha', -w'', v'') from the shape functions (001 eqs. 10, 15, 17)."""
    beam = numeric_model(robot).links[0].beam
    sets, n0 = beam.shapes, 0
    coef = {}
    for direction, ss in sets.items():
        coef[direction] = (ss, q[1 + n0 : 1 + n0 + ss.n])
        n0 += ss.n

    def kappa(x):
        out = np.zeros(3)
        for direction, (ss, c) in coef.items():
            s = np.asarray(ss.scale, float)
            d = 1 if direction == "torsion" else 2
            val = c @ (ss(np.array([x / L]), d)[:, 0] * L ** (s - d))
            out[{"torsion": 0, "z": 1, "y": 2}[direction]] = -val if direction == "z" else val
        return out

    def f(x, y):
        R = y[:9].reshape(3, 3)
        k = kappa(x)
        K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        return np.concatenate([(R @ K).ravel(), R[:, 0]])

    y, h = np.concatenate([np.eye(3).ravel(), np.zeros(3)]), L / steps
    for i in range(steps):
        x = i * h
        k1 = f(x, y)
        k2 = f(x + h / 2, y + h / 2 * k1)
        k3 = f(x + h / 2, y + h / 2 * k2)
        k4 = f(x + h, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    R = y[:9].reshape(3, 3)
    return y[9:] + R @ point, R


def test_second_order_kinematics_is_the_expansion_of_the_exact_kinematics():
    """frame(order=2) (bending in both planes and torsion, with their coupling) differs from the
    exact kinematics by O(deflection^3); frame(order=1) by O(deflection^2). Its Jacobian equals the
    derivative of the exact kinematics to O(deflection^2) (001: exact to first order)."""
    robot = cantilever(modes=2, z=2, torsion=2)
    rng = np.random.default_rng(4)
    q0 = np.concatenate([[0.0], rng.normal(size=robot.nf) * 0.2])
    point = np.array([0.05, -0.3, 0.1])
    h4 = np.append(point, 1.0)

    def errors(scale, order):
        q = q0 * scale
        pos, R = _exact_tip(robot, q, point)
        T = robot.frame(q, order=order)
        return max(np.abs((T @ h4)[:3] - pos).max(), np.abs(T[:3, :3] - R).max())

    for order, power in ((1, 2), (2, 3)):
        ratio = errors(0.02, order) / errors(0.01, order)
        assert abs(np.log2(ratio) - power) < 0.1, (order, ratio)
    assert errors(0.02, 2) < 0.05 * errors(0.02, 1)

    def jacobian_error(scale, order):
        q = q0 * scale
        J = robot.jacobian(q, point=point, order=order)[:3, 1:]
        step = 1e-5
        fd = np.stack([(_exact_tip(robot, q + step * e, point)[0] - _exact_tip(robot, q - step * e, point)[0])
                       / (2 * step) for e in np.eye(robot.nq)[1:]], axis=1)
        return np.abs(J - fd).max()

    assert abs(np.log2(jacobian_error(0.04, 2) / jacobian_error(0.02, 2)) - 2) < 0.15
    assert abs(np.log2(jacobian_error(0.04, 1) / jacobian_error(0.02, 1)) - 1) < 0.15


def test_curvature_strain_and_batches():
    """curvature on a batch of coordinates (e.g. a simulation's res.q) in both planes and twist;
    surface strain = -(h/2) v'' on the +y face, -(h/2) w'' on the +z face."""
    robot = cantilever(modes=2, z=1, torsion=1)
    q = np.array([[0.0, 0.01, 0.002, -0.02, 0.03], [0.1, 0.0, 0.0, 0.0, 0.0]])
    x = np.array([0.1, 0.4])
    k = curvature(robot, q, 0, x)
    assert k.shape == (2, 2, 3)
    eta = x / L
    v2 = (0.01 * 2 + 0.002 * 6 * eta) / L**2
    w2 = -0.02 * 2 / L**2
    alpha1 = 0.03 / L
    assert np.allclose(k[0], np.stack([np.full(2, alpha1), np.full(2, -w2), v2], axis=-1), atol=1e-14)
    assert np.allclose(k[1], 0.0)
    assert np.allclose(surface_strain(k, 0.01, "y"), -0.005 * k[..., 2])
    assert np.allclose(surface_strain(k, 0.01, "z"), -0.005 * np.stack([np.full(2, w2), np.zeros(2)]))


def test_batched_over_configurations_and_loads():
    robot = cantilever(gravity=(0, -9.81, 0))
    angles = np.linspace(-1.5, 1.5, 4)[:, None]
    loads = np.zeros((3, 1, 6))
    loads[:, 0, 1] = [0.0, -1.0, -2.0]
    res = statics(robot, angles[:, None], loads[None].reshape(1, 3, 6), gauges=[0.1])
    assert res.q_f.shape == (4, 3, robot.nf) and res.torques.shape == (4, 3, 1)
    assert res.curvature.shape == (4, 3, 1, 3) and res.orientation.shape == (4, 3, 3, 3)
    one = statics(robot, angles[2], loads[1, 0], gauges=[0.1])
    assert np.allclose(res.q_f[2, 1], one.q_f, atol=1e-15) and np.allclose(res.torques[2, 1], one.torques)


# ----- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"wrench": [1.0, 2.0, 3.0]}, "wrench: expected 6 numbers"),
        ({"wrench": [np.nan, 0, 0, 0, 0, 0]}, "wrench: all loads must be finite"),
        ({"wrench": [np.inf, 0, 0, 0, 0, 0]}, "wrench: all loads must be finite"),
        ({"point": 1.0}, "point: 1 m is outside link 0's beam"),
        ({"point": -0.1}, "outside link 0's beam"),
        ({"point": [0.0, 1.0]}, "point: give"),
        ({"order": 3}, "order: must be 0"),
        ({"order": "2"}, "order: must be 0"),
        ({"gauges": [0.1, 2.0]}, "gauges: 2 m is outside"),
    ],
)
def test_bad_input_is_one_clear_error(kwargs, message):
    robot = cantilever()
    args = {"q_r": [0.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        statics(robot, **args)
    with pytest.raises(ValueError, match="q_r: expected 1 joint"):
        statics(robot, [0.0, 1.0])
    with pytest.raises(ValueError, match="x: 2 m is outside"):
        curvature(robot, np.zeros(robot.nq), 0, 2.0)


# ----- fuzzed inputs: numbers or one clear ValueError ----------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

JUNK = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                 st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=7),
                 st.lists(st.lists(st.floats(-1e3, 1e3), min_size=6, max_size=6), max_size=2))


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(q_r=JUNK, w=JUNK, point=JUNK, order=st.sampled_from([0, 1, 2, 3, -1, 1.5, None, "2"]), gauges=JUNK)
def test_fuzzed_statics_inputs(q_r, w, point, order, gauges):
    robot = FUZZ_ROBOT
    try:
        res = statics(robot, q_r, w, point=point, order=order, gauges=gauges)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert np.all(np.isfinite(res.torques)) and np.all(np.isfinite(res.q_f))


FUZZ_ROBOT = cantilever(modes=2, gravity=(0, -9.81, 0))


def test_two_flexible_links_in_space():
    """Two flexible links (both bending planes, torsion), a full wrench with a moment: order 1 is a
    root of robot.inverse_dynamics at rest (the first-order dynamics; moment through J^T w) and
    its torques are that model's; at both orders the loaded point is robot.frame(q, order) there."""
    beam = lambda L: Beam(length=L, mass_per_length=0.8, EI=[9.0, 14.0], GJ=6.0, polar_inertia_per_length=2e-4,
                          modes={"y": 2, "z": 2, "torsion": 1}, **_first_order_dynamics())
    robot = Robot(links=[Link(a=0.6, alpha=np.pi / 2, beam=beam(0.6), body=RigidBody(0.3, [0.02, 0, 0.01])),
                         Link(a=0.5, alpha=0.4, beam=beam(0.5), body=RigidBody(0.2, [0.01, -0.05, 0.02]))],
                  gravity=[0, 0, -9.81])
    q_r, point = np.array([0.4, -0.7]), np.array([0.03, -0.08, 0.05])
    w = np.array([0.8, -1.2, 0.5, 0.05, -0.04, 0.03])
    zero = np.zeros(robot.nq)
    for order in (1, 2):
        res = statics(robot, q_r, w, point=point, order=order)
        assert np.allclose((robot.frame(res.q, order=order) @ np.append(point, 1.0))[:3], res.position, atol=1e-13)
        if order == 1:
            gen = robot.inverse_dynamics(res.q, zero, zero, f_ext=[(-1, point, w)])
            assert np.abs(gen[robot.flex_index]).max() < 1e-10 * np.abs(gen).max()
            assert np.allclose(gen[robot.joint_index], res.torques, rtol=1e-10)
            first = res.q_f
    assert np.abs(res.q_f - first).max() > 1e-3 * np.abs(first).max()  # order 2 differs at these loads
