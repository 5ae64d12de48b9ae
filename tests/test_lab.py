"""Sampled control, Kalman filtering and LQG on the showcase arm (issue 36): zero-order hold
against SciPy's cont2discrete, the steady-state gain against python-control's dlqe, separation,
the showcase's numbers at 1 kHz from encoders and strain gauges, filter consistency (NEES) and the
model file's controller section."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import cont2discrete
from scipy.stats import chi2

import flexman as fm
from flexman import Link, RigidBody, Robot
from flexman.control import Decoupling, Sampled
from flexman.control.sampled import design_pose
from flexman.model import ModelError
from flexman.model.serialize import robot_from_dict, robot_to_dict

S = fm.sensors
GAUGE_C = 0.05  # m: half the height of the showcase's tubes' section (chosen)


@pytest.fixture(scope="module")
def arm():
    return fm.examples.load("flx_three_link_lqr")


@pytest.fixture(scope="module")
def law(arm):
    return fm.control.from_spec(arm, arm.controller)


COUNT = 2 * np.pi / 2 ** 16


def lab_sensors(arm):
    """16-bit encoders on the three joints (jitter of one count) and one strain gauge at the root
    of each tube (2 microstrain)."""
    return ([S.encoder(arm, j, 2 ** 16, noise=COUNT) for j in range(3)]
            + [S.strain_gauge(arm, link, 0.0, GAUGE_C, noise=2e-6) for link in ("upper", "fore")])


def test_zero_order_hold_is_exact_on_a_linear_plant():
    """A rigid link without gravity is a double integrator; under u_k = -K x_k held over each sample
    and applied one sample late the samples follow the discrete system of cont2discrete exactly."""
    robot = Robot(links=[Link(joint="revolute", a=0.5, body=RigidBody(mass=2.0, com=[-0.25, 0, 0], inertia=[0, 0.04, 0.04]))],
                  gravity=[0.0, 0.0, 0.0])
    J = robot.mass_matrix([0.0])[0, 0]
    A, B = np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[0.0], [1.0 / J]])
    K = np.array([[40.0, 6.0]])
    T = 0.01
    Ad, Bd, *_ = cont2discrete((A, B, np.eye(2), np.zeros((2, 1))), T, method="zoh")
    for delay in (0, 1, 2):
        ctl = Sampled(lambda t, q, qd: -K @ np.r_[q, qd], rate=1 / T, delay=delay)
        res = fm.simulate(robot, 1.0, dt=T / 4, q0=[0.3], qd0=[-0.2], controller=ctl, backend="numeric")
        x, pending = np.array([0.3, -0.2]), [np.zeros(1)] * delay
        for k in range(100):
            assert np.allclose(np.r_[res.q[4 * k], res.qd[4 * k]], x, atol=1e-12)
            pending.append(-K @ x)
            x = Ad @ x + Bd @ pending.pop(0)


def test_a_fast_sampled_loop_converges_to_the_continuous_one(arm, law):
    ref = fm.simulate(arm, 1.0, dt=1e-4, controller=law, method="rk4")
    errors = []
    for rate in (1000, 10000):
        res = fm.simulate(arm, 1.0, dt=1e-4, controller=Sampled(law, rate))
        errors.append(np.abs(res.q - ref.q).max())
    assert errors[1] < 0.15 * errors[0] and errors[1] < 1e-3  # first order in the sample period


@pytest.fixture(scope="module")
def kf(arm, law):
    return fm.control.kalman(arm, lab_sensors(arm), 1000.0, q=design_pose(arm, law), torque_noise=0.5)


def test_linearized_plant_matches_the_frequency_analysis(arm, kf):
    """A = [[0, I], [-M^-1 K, 0]], B = [0; M^-1 S] at the pose, with M and K from
    fm.analysis.frequencies.linearize (complex-step stiffness)."""
    from flexman.analysis.frequencies import linearize

    M, K = linearize(arm, kf.pose)
    nq = arm.nq
    assert np.allclose(kf.A[nq:, :nq], -np.linalg.solve(M, K), atol=1e-6 * np.abs(kf.A).max())
    assert np.allclose(kf.B[nq:], np.linalg.inv(M)[:, :arm.n_joints], rtol=1e-7, atol=1e-10)


def test_steady_state_gain_equals_dlqe(kf):
    import control

    L, P, _ = control.dlqe(kf.Ad, kf.Bd, kf.C, kf.W, kf.R)
    assert np.allclose(kf.predictor_gain, L, rtol=1e-8, atol=1e-8 * np.abs(L).max())
    assert np.allclose(kf.P, P, rtol=1e-8, atol=1e-8 * np.abs(P).max())


def test_observability_names_what_the_sensors_cannot_see(arm, law):
    without_q1 = lab_sensors(arm)[1:]
    with pytest.raises(ValueError, match=r"^sensors: the chosen sensors cannot observe the rigid motion of q1"):
        fm.control.kalman(arm, without_q1, 1000.0, q=design_pose(arm, law))
    # encoders alone see the beams through the coupling (a check, not a refusal)
    assert fm.control.kalman(arm, lab_sensors(arm)[:3], 1000.0, q=design_pose(arm, law)).gain.shape == (14, 3)


def _match(a, b):
    """Largest distance between two sets of eigenvalues paired greedily."""
    b = list(b)
    worst = 0.0
    for x in sorted(a, key=lambda z: (z.real, z.imag)):
        j = int(np.argmin([abs(x - y) for y in b]))
        worst = max(worst, abs(x - b.pop(j)))
    return worst


def test_lqg_separation(arm, law):
    """The sampled LQG loop (decoupling + LQR law on the Kalman estimate, no delay) linearized at
    the pose: its eigenvalues are those of the sampled LQR loop and of the estimator (Ad (I - M C))."""
    kf = fm.control.kalman(arm, lab_sensors(arm), 1000.0, q=design_pose(arm, law), torque_noise=0.5, steps=8)
    ctl = Sampled(law, 1000.0, estimator=kf)
    n, nq, t = 2 * arm.nq, arm.nq, 3.0  # after lqr_at: the LQR phase
    x0 = np.concatenate([kf.pose, np.zeros(nq)])

    ctl.sensors.read = lambda y: y  # the loop's linearization: readings without noise and counting

    def step(z):
        """(x, xbar) -> (x', xbar') on the linearized plant, the filter and law as implemented."""
        x, xbar = z[:n], z[n:]
        ctl.start(x[:nq], x[nq:], arm.n_joints)
        kf.x = xbar.copy()
        tau, *_ = ctl.sample(t, x[:nq], x[nq:], np.zeros(nq))
        x_next = x0 + kf.Ad @ (x - x0) + kf.Bd @ (tau - kf.tau0)
        return np.concatenate([x_next, kf.x])

    z0, eps = np.concatenate([x0, x0]), 1e-5
    Phi = np.column_stack([(step(z0 + eps * e) - step(z0 - eps * e)) / (2 * eps) for e in np.eye(2 * n)])
    K_law = np.column_stack([(law.torque(t, *np.split(x0 + eps * e, 2)) - law.torque(t, *np.split(x0 - eps * e, 2)))
                             / (2 * eps) for e in np.eye(n)])
    lqr = np.linalg.eigvals(kf.Ad + kf.Bd @ K_law)
    estimator = np.linalg.eigvals(kf.Ad @ (np.eye(n) - kf.gain @ kf.C))
    assert np.all(np.abs(lqr) < 1) and np.all(np.abs(estimator) < 1)
    assert _match(np.linalg.eigvals(Phi), np.concatenate([lqr, estimator])) < 1e-8


def _ee(arm, q):
    return arm.frame(q, -1, order=2)[..., :3, 3]


def _tips(arm, q):
    return np.stack([fm.analysis.deflection(arm, q, link, 4.0) for link in (1, 2)], axis=-2)  # (..., 2, 3)


def test_showcase_lqg_at_1khz_from_encoders_and_gauges(arm, law):
    """The showcase move controlled at 1 kHz with one sample of delay from 16-bit encoders and one
    2-microstrain gauge per tube: end-effector error after the move within 1.5x the full-state LQR's,
    estimated tip deflections within 1 mm rms of the true ones."""
    ref = fm.simulate(arm, 5.0, dt=1e-3, controller=law, method="rk4")
    lqg = fm.control.lqg(arm, law, lab_sensors(arm), rate=1000.0, delay=1, torque_noise=0.5, seed=1)
    res = fm.simulate(arm, 5.0, dt=1e-3, controller=lqg)
    goal = _ee(arm, design_pose(arm, law))
    after = ref.t >= 2.5
    rms = lambda e: np.sqrt(np.mean(np.sum(e ** 2, axis=-1)))
    e_ref, e_lqg = rms(_ee(arm, ref.q[after]) - goal), rms(_ee(arm, res.q[after]) - goal)
    assert e_lqg < 1.5 * e_ref
    xhat = res.estimate["x"]
    true_tips, est_tips = _tips(arm, res.q[:len(xhat)]), _tips(arm, xhat[:, :arm.nq])
    assert np.abs(true_tips).max() > 0.05  # the tubes do bend (several centimetres)
    assert np.all(np.sqrt(np.mean(np.sum((true_tips - est_tips) ** 2, axis=-1), axis=0)) < 1e-3)
    assert set(res.measurements) == {s.name for s in lqg.sensors.sensors}
    enc = res.measurements["encoder_base"]
    assert np.allclose(enc.y / (2 * np.pi / 2 ** 16), np.round(enc.y / (2 * np.pi / 2 ** 16)))


def test_filter_is_consistent_over_50_seeded_runs(arm, law):
    """NEES of the steady-state filter holding the showcase's final pose under the torque disturbance
    it was designed for, started with an error drawn from its covariance: the average over 50 runs
    lies inside the two-sided 95 % chi-square band at (nearly) every sample."""
    pose = design_pose(arm, law)
    hold = Decoupling(arm, lambda t: (pose[:3], np.zeros(3), np.zeros(3)), law.gp, law.gv, lqr_at=0.0,
                      lqr_weights=(np.diag([1e6] * 7 + [100.0] * 3 + [1.0] * 4), 1e-2))
    lqg = fm.control.lqg(arm, hold, lab_sensors(arm), rate=1000.0, torque_noise=0.5)
    kf, n, runs = lqg.estimator, 2 * arm.nq, 50
    L = np.linalg.cholesky(kf.P)
    Pinv = np.linalg.inv(kf.P_post)
    nees = []
    for seed in range(runs):
        x0 = np.concatenate([pose, np.zeros(arm.nq)]) + L @ np.random.default_rng(100 + seed).standard_normal(n)
        lqg.seed = seed
        orig = lqg.estimator.reset
        lqg.estimator.reset = lambda q0, qd0, P0=None: orig(pose, np.zeros(arm.nq))
        res = fm.simulate(arm, 0.2, dt=1e-3, controller=lqg, q0=x0[:arm.nq], qd0=x0[arm.nq:])
        del lqg.estimator.reset
        e = np.concatenate([res.q, res.qd], axis=1)[:len(res.estimate["x"])] - res.estimate["x"]
        nees.append(np.einsum("ki,ij,kj->k", e, Pinv, e))
    anees = np.mean(nees, axis=0)
    lo, hi = chi2.ppf([0.025, 0.975], runs * n) / runs
    inside = np.mean((anees > lo) & (anees < hi))
    assert inside > 0.9, (inside, anees.mean(), lo, hi)


def _lqg_file(arm, **changes):
    data = robot_to_dict(arm)
    data["sensors"] = ([{"type": "encoder", "joint": j, "counts_per_revolution": 65536, "noise": COUNT} for j in range(3)]
                       + [{"type": "strain_gauge", "link": link, "station": 0.0, "offset": GAUGE_C, "noise": 2e-6}
                          for link in ("upper", "fore")])
    data["controller"].update({"rate": 1000, "delay": 1, "estimator": "kalman", "torque_noise": 0.5, "seed": 1})
    for key, value in changes.items():
        target = data["controller"] if key in ("rate", "delay", "estimator", "torque_noise") else data
        if value is None:
            target.pop(key)
        else:
            target[key] = value
    return data


def test_model_file_lqg_equals_the_python_one(arm, law):
    robot = robot_from_dict(_lqg_file(arm))
    ctl = fm.control.from_spec(robot, robot.controller)
    assert isinstance(ctl, Sampled) and ctl.delay == 1 and ctl.estimator is not None
    a = fm.simulate(robot, 0.3, dt=1e-3, controller=ctl)
    b = fm.simulate(arm, 0.3, dt=1e-3, controller=fm.control.lqg(arm, law, lab_sensors(arm), rate=1000.0, delay=1,
                                                                      torque_noise=0.5, seed=1))
    # the same run to round-off, amplified by 300 closed-loop samples (one of the two may find the
    # model compiled in the background meanwhile); another gain, seed or delay differs by 1e-4 or more
    assert np.allclose(a.q, b.q, rtol=0, atol=1e-8)


@pytest.mark.parametrize("changes, message", [
    ({"rate": 0}, "controller.rate: must be a sample rate in Hz > 0"),
    ({"delay": -1}, "controller.delay: must be a whole number of samples >= 0"),
    ({"estimator": "luenberger"}, "controller.estimator: unknown 'luenberger'"),
    ({"torque_noise": -0.1}, "controller.torque_noise: must be a torque standard deviation in N m >= 0"),
])
def test_bad_sampling_fields_are_refused(arm, changes, message):
    robot = robot_from_dict(_lqg_file(arm, **changes))
    with pytest.raises(ModelError) as info:
        fm.control.from_spec(robot, robot.controller)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_unobservable_estimator_and_long_delay_are_refused_in_one_line(arm, tmp_path, capsys):
    data = _lqg_file(arm)
    data["sensors"] = data["sensors"][1:]  # no encoder on the base joint
    robot = robot_from_dict(data)
    with pytest.raises(ModelError, match=r"^controller.estimator: sensors: the chosen sensors cannot observe the rigid "
                                         r"motion of q1"):
        fm.control.from_spec(robot, robot.controller)
    robot = robot_from_dict(_lqg_file(arm, delay=500))
    with pytest.raises(ValueError, match=r"^controller.delay: 500 samples \(0.5 s\) is not shorter than the run"):
        fm.simulate(robot, 0.2, dt=1e-3, controller=fm.control.from_spec(robot, robot.controller))
    from flexman.cli import main

    fm.save(robot, tmp_path / "lab.yaml")
    assert main(["simulate", str(tmp_path / "lab.yaml"), "--controller", "--t-final", "0.2"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("flexman: error: controller.delay: 500 samples") and not any("Traceback" in e for e in err)
