"""fm.analysis.excitation (issue 27): an optimised Fourier excitation has a lower base-regressor
condition number than random series scaled to the same limits, and a simulation of the arm
following it (fm.simulate(prescribed=)) stays within every limit; impossible limits are one line."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.analysis.excitation import condition, excitation
from flexman.trajectory import FourierSeries


def _gravity(robot):
    z = np.zeros(robot.n_joints)
    return np.abs(robot.inverse_dynamics(z, z, z))


@pytest.mark.parametrize("name", ["dynaman_rp", pytest.param("saha_3link", marks=pytest.mark.slow)])
def test_optimised_excitation_is_better_conditioned_and_within_limits(name):
    robot = fm.examples.load(name)
    limits = {"qd": 2.0, "qdd": 20.0, "tau": 3 * _gravity(robot).max() + 10.0}
    traj = fm.analysis.excitation(robot, 10.0, 4, limits=limits, starts=10, iterations=20)
    assert isinstance(traj, FourierSeries)
    assert traj.condition * 3.0 <= traj.random_condition, (traj.condition, traj.random_condition)
    assert traj.condition == pytest.approx(condition(robot, traj), rel=1e-9)
    # the arm made to follow it: every limit holds over a whole period, between the design points too
    res = fm.simulate(robot, 10.0, dt=5e-3, prescribed=traj, progress=False, backend="numeric")
    L = traj.limits
    assert np.all(res.q[:, :robot.n_joints] >= L["q"][:, 0] - 1e-9) and np.all(res.q[:, :robot.n_joints] <= L["q"][:, 1] + 1e-9)
    assert np.all(np.abs(res.qd[:, :robot.n_joints]) <= L["qd"] * (1 + 1e-9))
    assert np.all(np.abs(traj(res.t)[2]) <= L["qdd"] * (1 + 1e-9))
    assert np.all(np.abs(res.tau) <= L["tau"] * (1 + 1e-9))
    # at least one limit is reached (the motion uses the room it has)
    reach = max(np.abs(res.qd[:, :robot.n_joints]).max(axis=0).max() / L["qd"].max(),
                np.abs(res.tau).max() / L["tau"].max())
    assert reach > 0.5


def test_series_csv_round_trip(tmp_path):
    traj = FourierSeries(2.0, [0.1, -0.2], [[0.3, 0.1], [0.2, -0.1]], [[0.0, 0.2], [0.1, 0.05]])
    path = traj.to_csv(tmp_path / "excitation.csv", rate=100.0, periods=2)
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    assert data.shape == (400, 7)
    q, qd, qdd = traj(data[:, 0])
    np.testing.assert_array_equal(data[:, 1:3], q)
    # the series is periodic and its rates are the derivatives of its positions
    np.testing.assert_allclose(traj(2.0)[0], traj(0.0)[0], atol=1e-12)
    h = 1e-5
    np.testing.assert_allclose((traj(0.3 + h)[0] - traj(0.3 - h)[0]) / (2 * h), traj(0.3)[1], atol=1e-8)
    np.testing.assert_allclose((traj(0.3 + h)[1] - traj(0.3 - h)[1]) / (2 * h), traj(0.3)[2], atol=1e-7)


@pytest.mark.parametrize("limits,pattern", [
    ({"tau": 1.0}, r"^limits.tau: joint 2 needs .* to hold the arm still at the centre of its range, above its limit 1; "
                   r"no excitation satisfies these limits"),
    ({"q": [[0.0, 1.0], [0.5, 0.5], [0, 1]]}, r"^limits.q: joint 2 has lower 0.5 >= upper 0.5"),
    ({"qd": [1.0, 0.0, 1.0]}, r"^limits.qd: joint 2 has 0; a largest magnitude must be > 0"),
    ({"speed": 1.0}, r"^limits.speed: unknown; use q, qd, qdd or tau"),
])
def test_impossible_limits_are_one_sentence(limits, pattern):
    with pytest.raises(ValueError, match=pattern):  # saha_3link's second joint carries the arm's weight
        excitation(fm.examples.load("saha_3link"), 10.0, 4, limits=limits, starts=2, iterations=1)


def test_flexible_arm_and_bad_period_refused():
    with pytest.raises(ValueError, match="excitation: the robot has flexible links"):
        excitation(fm.examples.load("flx_three_link"), 10.0, 4)
    with pytest.raises(ValueError, match=r"^period: must be a finite number of seconds > 0"):
        excitation(fm.examples.load("dynaman_rp"), -1.0, 4)
    with pytest.raises(ValueError, match=r"^harmonics: expected a whole number from 1 to 20"):
        excitation(fm.examples.load("dynaman_rp"), 10.0, 0)
