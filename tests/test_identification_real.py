"""fm.identify with its defaults on realistic data: torques computed by Pinocchio (an independent
rigid-body code) on random URDF serial arms with revolute and prismatic joints, a four-harmonic
excitation of period 10 s sampled at 1 kHz for 20 s, encoder noise 1e-4 rad (m) on q and 2 %
noise on the torques. The estimate must predict the torques of an unseen trajectory (noise-free,
also from Pinocchio) within 1 % rms per joint, and at least 90 % of the base parameters must lie
within 4 reported standard errors of the truth (the URDF's own parameters, projected)."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.analysis import rigid_regressor as rr
from flexman.trajectory import FourierSeries

pin = pytest.importorskip("pinocchio")
from test_urdf import _to_pin, random_urdf  # noqa: E402

FS, DURATION, PERIOD, HARMONICS = 1000.0, 20.0, 10.0, 4


def _fourier(rng, n, amplitude=0.5):
    """A random zero-mean finite Fourier series, q = sum A sin + B cos with amplitudes falling as
    1/l (``FourierSeries`` takes the coefficients of qd: a = A w, b = -B w)."""
    w = 2 * np.pi * np.arange(1, HARMONICS + 1) / PERIOD
    A, B = rng.uniform(-1, 1, (2, n, HARMONICS)) * amplitude / np.arange(1, HARMONICS + 1)
    return FourierSeries(PERIOD, np.zeros(n), A * w, -B * w)


def _pinocchio_torques(model, q, qd, qdd):
    data = model.createData()
    return np.array([pin.rnea(model, data, _to_pin(model, a), b, c) for a, b, c in zip(q, qd, qdd)])


def _arm(tmp_path, seed, n=4):
    rng = np.random.default_rng(seed)
    text, kinds = random_urdf(rng, n)
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    return fm.load(path), pin.buildModelFromUrdf(str(path)), kinds, rng


def _record(model, rng, n, duration=DURATION):
    """(t, measured q, measured tau) and the exact (q, qd, qdd, tau) of a random excitation."""
    t = np.arange(0.0, duration, 1.0 / FS)
    q, qd, qdd = _fourier(rng, n)(t)
    tau = _pinocchio_torques(model, q, qd, qdd)
    q_meas = q + rng.normal(0.0, 1e-4, q.shape)
    tau_meas = tau + rng.normal(0.0, 1.0, tau.shape) * 0.02 * np.sqrt((tau ** 2).mean(axis=0))
    return (t, q_meas, tau_meas), (q, qd, qdd, tau)


def _check(robot, model, rng, ident):
    n = robot.n_joints
    truth = ident.base.project(rr.standard_parameters(robot))
    z = (ident.values - truth) / ident.std
    assert np.mean(np.abs(z) < 4.0) >= 0.9, dict(zip(ident.names, np.round(z, 1)))
    # an unseen trajectory, exact torques from Pinocchio
    t = np.arange(0.0, 5.0, 1.0 / 200)
    q, qd, qdd = _fourier(rng, n)(t)
    tau = _pinocchio_torques(model, q, qd, qdd)
    err = np.sqrt(((ident.predict(robot, q, qd, qdd) - tau) ** 2).mean(axis=0)) / np.sqrt((tau ** 2).mean(axis=0))
    assert np.all(err < 0.01), err
    return err


@pytest.mark.parametrize("seed", [0, 1])
def test_default_identify_on_pinocchio_data_predicts_unseen_torques(tmp_path, seed):
    robot, model, kinds, rng = _arm(tmp_path, seed)
    assert "prismatic" in kinds and any(k != "prismatic" for k in kinds)
    (t, q, tau), _ = _record(model, rng, robot.n_joints)
    ident = fm.identify(robot, t, q, tau)
    # the cutoff came from the data: above the motion's 0.4 Hz, far below the old 50 Hz default
    assert ident.cutoff_from_data and 0.4 < ident.cutoff < 10.0
    _check(robot, model, rng, ident)
    # the built-in held-out check sees what the unseen trajectory sees: well under 1 %
    assert np.all(ident.validation["relative"] < 0.01), ident.validation
    text = ident.table()
    assert "filter cutoff" in text and "read from the spectra" in text and "held-out check" in text
    assert "independent segments" in ident.to_dict()["std_method"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_default_identify_on_more_random_arms(tmp_path, seed):
    robot, model, kinds, rng = _arm(tmp_path, seed)
    (t, q, tau), _ = _record(model, rng, robot.n_joints)
    _check(robot, model, rng, fm.identify(robot, t, q, tau))


@pytest.mark.slow
def test_a_separate_validation_record_is_predicted(tmp_path):
    robot, model, _, rng = _arm(tmp_path, 1)
    (t, q, tau), _ = _record(model, rng, robot.n_joints)
    (tv, qv, tauv), _ = _record(model, rng, robot.n_joints, duration=8.0)
    ident = fm.identify(robot, t, q, tau, validation=(tv, qv, tauv))
    assert ident.validation["kind"].startswith("a separate record")
    assert np.all(ident.validation["relative"] < 0.01)
    # a wrong torque record is seen as a large error, not hidden
    bad = fm.identify(robot, t, q, tau, validation=(tv, qv, 1.2 * tauv))
    assert np.all(bad.validation["relative"] > 0.1)
