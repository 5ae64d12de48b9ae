"""fm.analysis.excitation (issue 27): an optimised Fourier excitation has a lower base-regressor
condition number than random series scaled to the same limits, and a simulation of the arm
following it (fm.simulate(prescribed=)) stays within every limit; impossible limits are one line."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.analysis import rigid_regressor as rr
from flexman.analysis.excitation_design import excitation
from flexman.trajectory import FourierSeries


RIGID_ARMS = ["dynaman_2r", "dynaman_rp"] + [pytest.param(name, marks=pytest.mark.slow) for name in (
    "flx_rigid_pendulum", "flx_double_pendulum", "saha_3link", "saha_3link_modified", "puma560", "ur5_like",
    "stanford_arm")]


def _limits(robot):
    """Rates 2, accelerations 20, torques 1.5 x the largest gravity torque over the joint ranges
    (sampled) + 10: room to move through the range (at q = 0 a pendulum hanging down needs none)."""
    q = rr.random_states(robot, 400, np.random.default_rng(5))[0]
    z = np.zeros_like(q)
    return {"qd": 2.0, "qdd": 20.0, "tau": 1.5 * np.abs(robot.inverse_dynamics(q, z, z)).max(axis=0) + 10.0}


def _own_random_series(robot, L, period, H, rng, t):
    """A random Fourier series scaled, here and independently of the library, to the largest
    amplitude the limits allow: per joint the position span, rate and acceleration on the grid
    t, centred in the range; then the whole oscillation halved in scale by bisection until the
    torques fit."""
    n = robot.n_joints
    a, b = rng.standard_normal((2, n, H)) / np.arange(1, H + 1)
    q, qd, qdd = FourierSeries(period, np.zeros(n), a, b)(t)
    s = np.min([(L["q"][:, 1] - L["q"][:, 0]) / np.ptp(q, axis=0), L["qd"] / np.abs(qd).max(axis=0),
                L["qdd"] / np.abs(qdd).max(axis=0)], axis=0)
    centre = 0.5 * (q.max(axis=0) + q.min(axis=0))

    def series(g):
        return FourierSeries(period, L["q"].mean(axis=1) - g * s * centre, g * s[:, None] * a, g * s[:, None] * b)

    ok = lambda g: np.all(np.abs(robot.inverse_dynamics(*series(g)(t))) <= L["tau"])  # noqa: E731
    lo, hi = (1.0, 1.0) if ok(1.0) else (0.0, 1.0)
    for _ in range(40 if hi > lo else 0):
        lo, hi = ((lo + hi) / 2, hi) if ok((lo + hi) / 2) else (lo, (lo + hi) / 2)
    return series(lo)


def _cond(robot, traj, t, base):
    Y = rr.regressor(robot, *traj(t))[..., base.independent]
    return np.linalg.cond(Y.reshape(-1, Y.shape[-1]))


@pytest.mark.parametrize("name", RIGID_ARMS)
def test_optimised_excitation_is_three_times_better_conditioned_and_within_limits(name):
    """Issue 27: at least 3x lower condition number than the median random series within the
    same limits (the library's own baseline and 11 series scaled here independently), and every
    limit kept by the arm made to follow it."""
    robot = fm.examples.load(name)
    traj = fm.analysis.excitation(robot, 10.0, 4, limits=_limits(robot))
    assert isinstance(traj, FourierSeries)
    L = traj.limits
    base = rr.base_parameters(robot)
    t = np.arange(2000) * 10.0 / 2000
    own = [_own_random_series(robot, L, 10.0, 4, np.random.default_rng(100 + k), t) for k in range(11)]
    for tr in own:  # the comparison series do satisfy the limits
        q, qd, qdd = tr(t)
        assert np.all(q >= L["q"][:, 0] - 1e-9) and np.all(q <= L["q"][:, 1] + 1e-9)
        assert np.all(np.abs(qd) <= L["qd"] * (1 + 1e-9)) and np.all(np.abs(qdd) <= L["qdd"] * (1 + 1e-9))
        assert np.all(np.abs(robot.inverse_dynamics(q, qd, qdd)) <= L["tau"])
    median_own = float(np.median([_cond(robot, tr, t, base) for tr in own]))
    mine = _cond(robot, traj, t, base)
    assert mine * 3.0 <= median_own, (mine, median_own)
    assert traj.condition * 3.0 <= traj.random_condition, (traj.condition, traj.random_condition)
    assert traj.condition == pytest.approx(mine, rel=0.02)  # the reported number, on another grid
    # the arm made to follow it: every limit holds over a whole period, between the design points too
    res = fm.simulate(robot, 10.0, dt=5e-3, prescribed=traj, progress=False, backend="numeric")
    n = robot.n_joints
    assert np.all(res.q[:, :n] >= L["q"][:, 0] - 1e-9) and np.all(res.q[:, :n] <= L["q"][:, 1] + 1e-9)
    assert np.all(np.abs(res.qd[:, :n]) <= L["qd"] * (1 + 1e-9))
    assert np.all(np.abs(traj(res.t)[2]) <= L["qdd"] * (1 + 1e-9))
    assert np.all(np.abs(res.tau) <= L["tau"] * (1 + 1e-9))
    # the same torques as inverse dynamics of the series (the simulation is of this motion)
    np.testing.assert_allclose(res.tau, robot.inverse_dynamics(*traj(res.t)), rtol=1e-7, atol=1e-7)


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


def test_excite_command_writes_a_reference_that_simulate_follows(tmp_path, capsys):
    """`flexman excite`: the CSV holds t, q, qd, qdd of a series within the limits given on the
    command line and the model's joint ranges; read back (fm.trajectory.from_csv) it drives
    fm.simulate(prescribed=) through the same motion, torques equal to inverse dynamics."""
    import json

    from flexman.cli import main
    from flexman.trajectory import from_csv

    out = tmp_path / "excitation.csv"
    assert main(["excite", "dynaman_rp", "--period", "4", "--harmonics", "3", "--out", str(out), "--rate", "250",
                 "--rate-limit", "1.5", "--accel-limit", "10", "--torque-limit", "40", "--starts", "4", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    robot = fm.examples.load("dynaman_rp")
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    assert data.shape == (1000, 7)
    np.testing.assert_allclose(data[:, 0], np.arange(1000) / 250.0)
    q, qd, qdd = data[:, 1:3], data[:, 3:5], data[:, 5:7]
    lo, hi = np.array(robot.links[1].limits)
    assert np.all(q[:, 1] >= lo - 1e-12) and np.all(q[:, 1] <= hi + 1e-12)  # the model's prismatic range
    assert np.abs(qd).max() <= 1.5 * (1 + 1e-9) and np.abs(qdd).max() <= 10.0 * (1 + 1e-9)
    # rates and accelerations are the derivatives of the positions written (central differences, periodic)
    h = 1 / 250.0
    np.testing.assert_allclose((np.roll(q, -1, 0) - np.roll(q, 1, 0)) / (2 * h), qd, atol=2e-3)
    np.testing.assert_allclose((np.roll(qd, -1, 0) - np.roll(qd, 1, 0)) / (2 * h), qdd, atol=2e-2)
    assert summary["condition"] * 3.0 <= summary["random_condition"]
    traj = from_csv(out)
    res = fm.simulate(robot, 3.9, dt=4e-3, prescribed=traj, progress=False, backend="numeric")
    ref = FourierSeries(4.0, summary["q0"], summary["a"], summary["b"])(res.t)
    np.testing.assert_allclose(res.q[:, :2], ref[0], atol=1e-8)
    np.testing.assert_allclose(res.tau, robot.inverse_dynamics(*ref), atol=1e-5)
    assert np.abs(res.tau).max() <= 40.0


@pytest.mark.parametrize("argv,message", [
    (["--torque-limit", "1"], "--torque-limit: joint 2 needs "),
    (["--rate-limit", "1", "0", "1"], "--rate-limit: joint 2 has 0; a largest magnitude must be > 0"),
    (["--rate-limit", "1", "2"], "--rate-limit: expected 1 or 3 values"),
    (["--harmonics", "30"], "--harmonics: expected a whole number from 1 to 20"),
    (["--seed", "-1"], "--seed: expected a whole number from 0 to 2**63-1"),
    (["--period", "1e9"], "--period: 1e+09 s x --periods 1 at --rate 1000 makes 1e+12 rows"),
    (["--starts", "5000"], "--starts: expected a whole number from 1 to 1000"),
    (["--position-limit", "1", "0"], "--position-limit: joint 1 has lower 1 >= upper 0"),
    (["--position-limit", "-1", "1", "0"], "--position-limit: expected 2 or 6 values"),
])
def test_excite_command_refuses_in_one_line(tmp_path, capsys, argv, message):
    from flexman.cli import main

    out = tmp_path / "x.csv"
    assert main(["excite", "saha_3link", "--period", "5", "--out", str(out), "--starts", "2"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"flexman: error: {message}") and err.count("\n") == 1, err
    assert not out.exists()


def test_excite_command_refuses_a_flexible_arm(tmp_path, capsys):
    from flexman.cli import main

    assert main(["excite", "flx_three_link", "--period", "5", "--out", str(tmp_path / "x.csv")]) == 2
    assert "excitation: the robot has flexible links" in capsys.readouterr().err


def test_sampled_reference_interpolates_exactly_between_samples(tmp_path):
    """from_csv: quintic Hermite through (q, qd, qdd) samples reproduces a quintic polynomial
    exactly (an independent oracle: the polynomial itself), positions, rates and accelerations."""
    from flexman.trajectory import from_csv

    c = np.array([0.3, -1.0, 0.5, 2.0, -0.7, 0.25])
    poly = np.polynomial.Polynomial(c)
    t = np.array([0.0, 0.13, 0.4, 0.41, 1.0])
    path = tmp_path / "p.csv"
    np.savetxt(path, np.column_stack([t, poly(t), poly.deriv()(t), poly.deriv(2)(t)]), delimiter=",",
               header="t,q1,qd1,qdd1", comments="")
    traj = from_csv(path)
    s = np.linspace(0, 1, 97)
    q, qd, qdd = traj(s)
    np.testing.assert_allclose(q[:, 0], poly(s), atol=1e-12)
    np.testing.assert_allclose(qd[:, 0], poly.deriv()(s), atol=1e-11)
    np.testing.assert_allclose(qdd[:, 0], poly.deriv(2)(s), atol=1e-10)
    (tmp_path / "bad.csv").write_text("t,q1,qdd1\n0,0,0\n")
    with pytest.raises(ValueError, match=r"bad.csv: expected the header t,q1,qd1,qdd1"):
        from_csv(tmp_path / "bad.csv")


def _csv_of(path, t, q, qd, qdd, prefix=b""):
    rows = "\n".join(f"{a:.17g},{b:.17g},{c:.17g},{d:.17g}" for a, b, c, d in zip(t, q, qd, qdd))
    path.write_bytes(prefix + ("t,q1,qd1,qdd1\n" + rows + "\n").encode())
    return path


def test_from_csv_reads_a_byte_order_mark_and_refuses_bad_files_in_one_line(tmp_path):
    """from_csv: a UTF-8 BOM is read; non-UTF-8 bytes, an over-long single line and rates or
    accelerations that contradict the positions are refused naming the file (one line each)."""
    from flexman.trajectory import from_csv

    t = np.linspace(0.0, 1.0, 201)
    q, qd, qdd = np.sin(3 * t), 3 * np.cos(3 * t), -9 * np.sin(3 * t)
    traj = from_csv(_csv_of(tmp_path / "bom.csv", t, q, qd, qdd, prefix=b"\xef\xbb\xbf"))
    np.testing.assert_allclose(traj(0.5)[0], [np.sin(1.5)], atol=1e-12)
    bad = {
        "latin.csv": (b"t,q1,qd1,qdd1\n0,0,0,0\n1,\xe9,0,0\n", "not UTF-8 text"),
        "long.csv": (b"t,q1,qd1,qdd1\n" + b"1" * 10**6, "row 2 is longer than"),
        "longhead.csv": (b"t" * 10**5, "the first line is longer than 4096"),
    }
    for name, (content, message) in bad.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError) as info:
            from_csv(tmp_path / name)
        assert str(info.value).startswith(str(tmp_path / name)) and message in str(info.value)
        assert "\n" not in str(info.value)
    for name, args, message in [("rates.csv", (q, 0 * qd, qdd), "qd1 contradicts q1"),
                                ("accel.csv", (q, qd, 0 * qdd), "qdd1 contradicts qd1")]:
        with pytest.raises(ValueError, match=message):
            from_csv(_csv_of(tmp_path / name, t, *args))


def test_excite_command_keeps_the_position_limits_given(tmp_path):
    """`--position-limit`: per joint, or one range for all; the written series stays inside (a UR5's
    shoulder kept above its table)."""
    from flexman.cli import main

    out = tmp_path / "e.csv"
    assert main(["excite", "saha_3link", "--period", "4", "--harmonics", "3", "--out", str(out), "--starts", "3",
                 "--position-limit", "-0.3", "0.2", "0.1", "0.6", "-1", "1"]) == 0
    q = np.loadtxt(out, delimiter=",", skiprows=1)[:, 1:4]
    lows, highs = np.array([-0.3, 0.1, -1.0]), np.array([0.2, 0.6, 1.0])
    assert np.all(q >= lows - 1e-12) and np.all(q <= highs + 1e-12)
    assert np.all(q.max(axis=0) - q.min(axis=0) > 0.2 * (highs - lows))  # the ranges are used, not avoided


def test_excitation_of_a_mimic_robot_keeps_its_torque_limits():
    """Mimic joints (a follower moved by its leader): the series is designed on the independent
    joints, its torques (the followers' inertia and friction carried through G) stay within the
    limit given, checked with the robot's own inverse dynamics."""
    from test_mimic import tree_urdf

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mimic.urdf"
        path.write_text(tree_urdf())
        robot = fm.load(path)
    for link in robot.links:
        link.viscous, link.coulomb = 0.05, 0.02
    traj = excitation(robot, 3.0, 2, limits={"tau": 6.0, "qd": 1.0, "qdd": 4.0}, starts=3, iterations=5)
    t = np.linspace(0.0, 3.0, 601)
    q, qd, qdd = traj(t)
    assert np.abs(robot.inverse_dynamics(q, qd, qdd)).max() <= 6.0 * (1 + 1e-9)
    assert np.isfinite(traj.condition) and traj.condition < traj.random_condition
