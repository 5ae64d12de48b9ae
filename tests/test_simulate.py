"""Tests of fm.simulate: integrators, torque inputs, results.

Literature: Mackay's thesis (000), ch. 3: the rigid compound pendulum (sec. 3.3.1, Table 3.1
link, Table 3.2 periods, eqs. 3.5-3.7), the double pendulum (sec. 3.3.2) and the energy
conservation of the RK4 solutions.
"""
import numpy as np
import pytest
from scipy.special import ellipk

import flexman as fm
from flexman import Link, RigidBody, Robot
from flexman.simulate import METHODS, Result

G = 9.81
# 000 Table 3.1: the 4 m tube, treated as a rigid uniform rod for the compound pendulum (sec. 3.3.1)
TUBE_MASS, TUBE_LENGTH = 10.955, 4.0


def rod(length=1.0, mass=1.0):
    """Uniform rod along the link's x axis, pivoted at the joint (DH frame at its far end)."""
    i = mass * length**2 / 12.0
    return Link(joint="revolute", a=length,
                body=RigidBody(mass=mass, com=[-length / 2, 0, 0], inertia=[0, i, i]))


def pendulum(n=1, length=1.0, mass=1.0):
    """n rods in a vertical plane; gravity along base +x so q = 0 hangs straight down."""
    return Robot(links=[rod(length, mass) for _ in range(n)], gravity=[G, 0, 0])


def zero_crossings(t, y):
    """Times where y changes sign, by linear interpolation between samples."""
    i = np.nonzero(np.sign(y[:-1]) * np.sign(y[1:]) < 0)[0]
    return t[i] - y[i] * (t[i + 1] - t[i]) / (y[i + 1] - y[i])


def test_callable_after_subpackage_import():
    import flexman.simulate  # noqa: F401  (rebinds fm.simulate to the package)

    robot = pendulum()
    for _ in range(2):
        res = fm.simulate(robot, 0.01, dt=1e-3, q0=[0.1])
        assert res.q.shape == (11, 1)


def test_rk4_is_fourth_order():
    """Halving dt divides the RK4 error by ~2^4 = 16 (classic Runge-Kutta, 000 sec. 3.1)."""
    robot = pendulum()
    ref = fm.simulate(robot, 1.0, dt=0.5, method="DOP853", rtol=1e-13, atol=1e-14, q0=[1.0])
    errors = []
    for dt in (0.01, 0.005, 0.0025):
        res = fm.simulate(robot, 1.0, dt=dt, q0=[1.0])
        assert res.t[-1] == 1.0
        errors.append(abs(res.q[-1, 0] - ref.q[-1, 0]))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 14.5) & (ratios < 17.5)), ratios  # measured 15.2, 15.6


@pytest.mark.slow
@pytest.mark.parametrize("phi0, table", [(0.05, 3.276), (0.1, 3.278), (0.2, 3.284), (0.4, 3.309)])
def test_compound_pendulum_period(phi0, table):
    """000 sec. 3.3.1, Table 3.2: RK4 at 1 ms; the period from zero crossings matches the
    elliptic integral period (eq. 3.6) to 1 ms, and Table 3.2's elliptic-integral column."""
    robot = pendulum(1, TUBE_LENGTH, TUBE_MASS)
    k = np.sin(phi0 / 2)
    exact = np.sqrt(32 * TUBE_LENGTH / (3 * G)) * ellipk(k**2)  # ellipk takes m = k^2
    assert exact == pytest.approx(table, abs=5e-4)
    res = fm.simulate(robot, 1.3 * exact, dt=1e-3, q0=[phi0])
    zc = zero_crossings(res.t, res.q[:, 0])  # at T/4, 3T/4, 5T/4
    assert len(zc) == 3
    period = zc[2] - zc[0]
    assert abs(period - exact) < 1e-3  # the thesis' resolution (3.308 +- 0.001 s)
    assert abs(2 * (zc[1] - zc[0]) - exact) < 1e-3
    assert abs(period - exact) < 1e-6  # measured: below 1e-10 s
    # the thesis' remark: total energy constant to eight decimal places with RK4 at 1 ms
    assert np.ptp(res.energy) / abs(res.energy[0]) < 1e-8


@pytest.mark.parametrize("n, q0", [(1, [1.0]), (2, [0.4, -0.7])])
def test_energy_conserved_dop853(n, q0):
    """Unforced single and double pendulum (000 sec. 3.3.1-3.3.2): energy is constant."""
    robot = pendulum(n, TUBE_LENGTH, TUBE_MASS)
    res = fm.simulate(robot, 5.0, dt=1e-2, method="DOP853", rtol=1e-11, atol=1e-12, q0=q0)
    kinetic = robot.kinetic_energy(res.q, res.qd)
    drift = np.max(np.abs(res.energy - res.energy[0])) / np.max(kinetic)
    assert drift < 1e-8, drift


@pytest.mark.parametrize("method", METHODS)
def test_all_methods_agree(method):
    robot = pendulum(2)
    kw = dict(q0=[0.5, -0.3], qd0=[0.0, 1.0], torque=[0.2, -0.1])
    ref = fm.simulate(robot, 0.5, dt=0.01, method="DOP853", rtol=1e-12, atol=1e-12, **kw)
    fixed = method in ("rk4", "generalized_alpha")  # fixed steps: a finer grid, every tenth sample compared
    res = fm.simulate(robot, 0.5, dt=1e-3 if fixed else 0.01, method=method, rtol=1e-9, atol=1e-11, **kw)
    assert res.method == method
    assert res.stats["rhs_evaluations"] > 0 and res.stats["wall_time"] > 0
    step = 10 if fixed else 1
    np.testing.assert_allclose(res.t[::step], ref.t, atol=1e-12)
    np.testing.assert_allclose(res.q[::step], ref.q, atol=1e-6 if method != "generalized_alpha" else 1e-5)  # 2nd order
    np.testing.assert_allclose(res.tau, np.broadcast_to([0.2, -0.1], res.tau.shape))


@pytest.mark.parametrize("method", ["rk4", "DOP853"])
def test_torque_forms_equivalent(method):
    """Constant, sampled array and callable torques give the same motion."""
    robot = pendulum(2)
    t = fm.simulate(robot, 0.3, dt=0.01, q0=[0.1, 0.2]).t
    a, b = np.array([1.0, -0.5]), np.array([2.0, 3.0])
    kw = dict(dt=0.01, method=method, q0=[0.1, 0.2])
    constant = [fm.simulate(robot, 0.3, torque=a, **kw),
                fm.simulate(robot, 0.3, torque=np.tile(a, (len(t), 1)), **kw),
                fm.simulate(robot, 0.3, torque=lambda t, q, qd: a, **kw),
                fm.simulate(robot, 0.3, controller=lambda t, q, qd: a, **kw)]
    # a torque linear in time is reproduced exactly by the linear interpolation of its samples
    ramp = [fm.simulate(robot, 0.3, torque=a + b * t[:, None], **kw),
            fm.simulate(robot, 0.3, torque=lambda t, q, qd: a + b * t, **kw)]
    for group in (constant, ramp):
        for res in group[1:]:
            np.testing.assert_allclose(res.q, group[0].q, rtol=0, atol=1e-12)
            np.testing.assert_allclose(res.tau, group[0].tau, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ramp[0].tau, a + b * t[:, None], atol=1e-12)
    assert np.ptp(constant[0].energy) > 1e-3  # the torque does work
    scalar = fm.simulate(pendulum(1), 0.1, dt=0.01, torque=0.7)
    np.testing.assert_allclose(scalar.tau, 0.7)


def test_rk4_calls_plain_controller_in_time_order():
    robot = pendulum(1)
    calls = []

    def controller(t, q, qd):
        calls.append(t)
        return -2.0 * qd[:1]

    res = fm.simulate(robot, 0.1, dt=0.01, q0=[0.3], controller=controller)
    assert len(calls) == 4 * 10 + 1  # four stages per step, one more for the final torque
    assert np.all(np.diff(calls) >= 0)
    np.testing.assert_allclose(res.tau[:, 0], -2.0 * res.qd[:, 0], atol=1e-15)


def test_output_grid_and_errors():
    robot = pendulum(1)
    res = fm.simulate(robot, 0.105, dt=0.01)
    assert res.t[-1] == 0.105 and len(res.t) == 12
    with pytest.raises(ValueError, match="method"):
        fm.simulate(robot, 0.1, method="euler")
    with pytest.raises(ValueError, match="torque"):
        fm.simulate(robot, 0.1, dt=0.01, torque=np.zeros((5, 1)))
    with pytest.raises(ValueError, match="q0"):
        fm.simulate(robot, 0.1, q0=[0.0, 0.0])


def test_result_save_load(tmp_path):
    robot = pendulum(2)
    res = fm.simulate(robot, 0.05, dt=0.01, q0=[0.3, 0.1], torque=[0.5, 0.0])
    back = Result.load(res.save(tmp_path / "run.npz"))
    for name in ("t", "q", "qd", "tau", "energy", "controller_state"):
        np.testing.assert_array_equal(getattr(back, name), getattr(res, name))
    assert back.method == "rk4" and back.coordinate_names == ["q1", "q2"]
    assert int(back.stats["rhs_evaluations"]) == res.stats["rhs_evaluations"]

    res.save(tmp_path / "run.csv")
    header = (tmp_path / "run.csv").read_text().splitlines()[0]
    assert header == "t,q1,q2,qd_q1,qd_q2,tau_q1,tau_q2,energy"
    table = np.loadtxt(tmp_path / "run.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(table, res.table())
    with pytest.raises(ValueError, match="extension"):
        res.save(tmp_path / "run.txt")


def test_plot(tmp_path):
    res = fm.simulate(pendulum(1), 0.05, dt=0.01, q0=[0.3])
    fig = res.plot(tmp_path / "run.png")
    assert fig is not None and (tmp_path / "run.png").stat().st_size > 0
    from flexman.simulate.result import _minimal_plot  # the fallback without flexman.viz

    _minimal_plot(res, tmp_path / "min.png")
    assert (tmp_path / "min.png").stat().st_size > 0


def test_progress_bar_runs():
    res = fm.simulate(pendulum(1), 0.02, dt=0.01, progress=True)
    assert len(res.t) == 3
    res = fm.simulate(pendulum(1), 0.02, dt=0.01, method="RK45", progress=True)
    assert len(res.t) == 3


def test_flexible_arm_energy_conserved():
    """A free flexible link (000 sec. 3.3.3-3.3.4 style check): joint and mode exchange energy,
    the total stays constant."""
    from flexman import Beam

    beam = Beam(length=1.0, mass_per_length=1.0, EI=[100.0, 100.0], modes={"y": 1, "z": 0})
    robot = Robot(links=[Link(joint="revolute", a=1.0, body=RigidBody(mass=0.1), beam=beam)],
                  gravity=[G, 0, 0])
    res = fm.simulate(robot, 0.5, dt=1e-2, method="DOP853", rtol=1e-11, atol=1e-12,
                      q0=[0.3, 0.02])
    assert np.ptp(res.q[:, 1]) > 0.01  # the mode vibrates
    drift = np.max(np.abs(res.energy - res.energy[0])) / np.max(robot.kinetic_energy(res.q, res.qd))
    assert drift < 1e-8, drift


def test_result_repr_is_one_line_and_to_pandas_has_every_column():
    robot = pendulum(2)
    res = fm.simulate(robot, 0.5, dt=0.01, q0=[0.4, -0.2], progress=False)
    text = repr(res)
    assert "\n" not in text and len(text) < 200 and str(res) == text
    assert text.startswith(f"<Result {robot.name}: 51 samples over 0.5 s, nq = 2, {res.stats['method']}")
    frame = res.to_pandas()
    assert list(frame.columns) == res.columns()[1:] and frame.index.name == "t"
    np.testing.assert_array_equal(frame.index.to_numpy(), res.t)
    np.testing.assert_array_equal(frame[res.coordinate_names].to_numpy(), res.q)
    np.testing.assert_array_equal(frame[[f"tau_{n}" for n in res.joint_names]].to_numpy(), res.tau)


def test_robot_repr_is_one_line_with_its_figures():
    robot = fm.examples.load("flx_three_link")
    assert repr(robot) == str(robot) == "<Robot 'flx_three_link': 3 joints (chain), 2 flexible links, nq = 7>"
