"""fm.identify: known parameters recovered from simulated noisy measurements, within the reported
confidence intervals; bad data refused in one line."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import flexman as fm
from flexman.analysis import rigid_regressor as rr

W = 2 * np.pi * np.array([0.3, 0.7, 1.1, 1.7])  # rad/s: a four-harmonic (Fourier) excitation


def _fourier(rng, n):
    A, B = rng.uniform(-0.6, 0.6, (2, n, 4))

    def ref(t):
        t = np.asarray(t, float)[..., None, None]
        s, c = np.sin(W * t), np.cos(W * t)
        return ((A * s + B * c).sum(-1), (W * (A * c - B * s)).sum(-1), (-W ** 2 * (A * s + B * c)).sum(-1))
    return ref


def _measure(robot, t_final=6.0, dt=2e-3, seed=0, q_noise=1e-4, tau_noise=0.05):
    """Forward simulation under feedforward (inverse dynamics of a Fourier reference) plus PD
    feedback, then Gaussian noise on the measured q and tau."""
    from scipy.interpolate import CubicSpline

    rng = np.random.default_rng(seed)
    n = robot.n_joints
    ref = _fourier(rng, n)
    grid = np.arange(0.0, t_final + 0.1, 0.01)
    ff = CubicSpline(grid, robot.inverse_dynamics(*ref(grid)))

    def torque(t, q, qd):
        qr, qdr, _ = ref(t)
        return ff(t) + 100.0 * (qr - q[:n]) + 20.0 * (qdr - qd[:n])

    q0, qd0, _ = ref(0.0)
    res = fm.simulate(robot, t_final, dt=dt, torque=torque, q0=q0, qd0=qd0, progress=False, backend="numeric")
    return res.t, res.q + rng.normal(0, q_noise, res.q.shape), res.tau + rng.normal(0, tau_noise, res.tau.shape)


@pytest.fixture(scope="module")
def arm():
    robot = copy.deepcopy(fm.examples.load("saha_3link"))
    robot.clear_derived()
    for link in robot.links:
        link.armature, link.viscous = 0.05, 0.8
    return robot


def test_identify_recovers_base_parameters_within_their_intervals(arm):
    t, q, tau = _measure(arm)
    ident = fm.identify(arm, t, q, tau, armature=True, viscous=True)
    true = ident.base.project(rr.standard_parameters(arm, armature=True, viscous=True))
    z = (ident.values - true) / ident.std
    assert np.all(np.abs(z) < 4.0), dict(zip(ident.names, z))  # every one inside +-4 standard errors
    assert np.sum(ident.relative_std < 0.01) >= 8  # and the intervals are tight where the motion excites
    assert "m1" in ident.base.unidentifiable and ident.table().count("\n") >= len(ident.names)
    names = dict(zip(ident.names, ident.values))
    fv = [k for k in names if k.startswith("Fv")]
    assert len(fv) == 3 and all(abs(names[k] - 0.8) < 4 * ident.std[ident.names.index(k)] for k in fv)


def test_identify_bad_data(arm):
    t = np.linspace(0, 1, 200)
    q, tau = np.zeros((200, 3)), np.zeros((200, 3))
    t_bad = t.copy()
    t_bad[50] = t_bad[49]
    with pytest.raises(ValueError, match="t: time must increase"):
        fm.identify(arm, t_bad, q, tau)
    with pytest.raises(ValueError, match=r"q: expected shape \(200, 3\)"):
        fm.identify(arm, t, q[:, :2], tau)
    rng = np.random.default_rng(1)  # the arm at rest: noisy encoders, gravity torques with noise
    t = np.linspace(0, 4, 800)
    q = rng.normal(0, 1e-4, (800, 3))
    tau = arm.inverse_dynamics(np.zeros(3), np.zeros(3), np.zeros(3)) + rng.normal(0, 0.01, (800, 3))
    with pytest.raises(ValueError, match="joint positions show no motion above their noise"):
        fm.identify(arm, t, q, tau)
    with pytest.raises(ValueError, match="does not excite"):
        fm.identify(arm, t, np.zeros_like(q), tau, cutoff=10.0)  # only gravity terms are seen


def _swing(T=2.0, A=0.6):
    """Rest-to-rest joint swing q = A (x - sin(2 pi x) / (2 pi)), x = t / T: rate and acceleration
    zero at both ends, so the beam starts and ends the record at rest."""
    w = 2 * np.pi

    def traj(t):
        x = min(max(t / T, 0.0), 1.0)
        return np.array([A * (x - np.sin(w * x) / w)]), np.array([A * (1 - np.cos(w * x)) / T]), np.array([A * w * np.sin(w * x) / T ** 2])
    return traj


@pytest.mark.slow
def test_identify_recovers_a_perturbed_beam_stiffness(compiled_backend):
    """flx_joint_mass (a 4 m beam on a hub): data simulated with EI 20% above the model file's,
    noisy tip offsets (2% of their peak), torques (1%) and joint angles (1e-6 rad); the estimate
    from the file's EI lies within 4 standard errors of the truth. The filter cutoff is read from
    the data as for rigid arms (issue 27) and reported. A 1 s swing and half a second at rest
    (750 steps of 2 ms per simulation, compiled model) keep the fit to a few tens of simulations."""
    from flexman.analysis import physical, signals

    robot = fm.examples.load("flx_joint_mass")
    ei = 1.2 * physical.value(robot, "EI1")
    true = physical.with_values(robot, {"EI1": ei})
    res = fm.simulate(true, 1.5, dt=2e-3, prescribed=_swing(T=1.0), progress=False)
    tip = fm.analysis.tip_offset(true, res.q)
    rng = np.random.default_rng(0)
    tip = tip + rng.normal(0, 0.02 * np.abs(tip).max(), tip.shape)
    tau = res.tau + rng.normal(0, 0.01 * np.abs(res.tau).max(), res.tau.shape)
    q = res.q[:, :1] + rng.normal(0, 1e-6, (len(res.t), 1))
    ident = fm.identify(robot, res.t, q, tau, parameters=["EI1"], tip=tip)
    assert abs(ident.values[0] - ei) < 4 * ident.std[0]
    assert abs(ident.values[0] / ei - 1) < 0.01 and ident.std[0] / ei < 0.005
    # the same data-driven cutoff as the rigid path, not the former fixed tenth of Nyquist (25 Hz here)
    assert ident.cutoff_from_data and ident.cutoff == signals.choose_cutoff(res.t, q, tau)
    assert ident.cutoff != pytest.approx(0.05 * signals.sampling_rate(res.t))
    assert f"filter cutoff: {ident.cutoff:.3g} Hz (read from the spectra of q and tau)" in ident.table()
    assert ident.to_dict()["cutoff_hz"] == ident.cutoff


def test_identify_unknown_beam_parameter():
    robot = fm.examples.load("flx_joint_mass")
    t = np.linspace(0, 1, 100)
    with pytest.raises(ValueError, match="unknown parameter 'EI2' for .*valid: .*EI1"):
        fm.identify(robot, t, np.zeros((100, 1)), t[:, None], parameters=["EI2"], tip=np.zeros((100, 3)))


def test_identify_beam_says_which_parameters_cannot_be_told_apart():
    """A planar swing bends the beam along y only: EIz1 has no effect, and EI1 (both planes) acts
    exactly as EIy1."""
    robot = fm.examples.load("flx_joint_mass")
    res = fm.simulate(robot, 0.4, dt=2e-3, prescribed=_swing(T=0.4, A=0.2), progress=False)
    tip = fm.analysis.tip_offset(robot, res.q)
    args = (robot, res.t, res.q[:, :1], res.tau)
    with pytest.raises(ValueError, match="EIz1 has no effect on the measured data"):
        fm.identify(*args, parameters=["EIz1"], tip=tip)
    with pytest.raises(ValueError, match=r"(EI1, EIy1|EIy1, EI1) cannot be told apart"):
        fm.identify(*args, parameters=["EI1", "EIy1"], tip=tip)
