"""The HTML report: the arm's drawn geometry against the model and closed forms, the animation
data, the page's content (offline, equations, plots) and `flexman report`."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

import flexman as fm
from flexman.control import from_spec
from flexman.viz.animation import SHOWN_DEFLECTION, animation_data, auto_magnification, max_tip_deflection
from flexman.viz.arm import STATIONS, arm_lines, reach
from flexman.viz.equations import program_lines

BETA1 = 1.875104068711961  # first root of cos(b) cosh(b) = -1 (clamped-free beam)


def clamped_free_mode(x):
    """First clamped-free eigenfunction on [0, 1] (closed form), up to scale."""
    b = BETA1
    sigma = (math.cosh(b) + math.cos(b)) / (math.sinh(b) + math.sin(b))
    return np.cosh(b * x) - np.cos(b * x) - sigma * (np.sinh(b * x) - np.sin(b * x))


def pieces(points):
    """Split (P, 3) at NaN rows into the pieces a part is drawn with."""
    out, cur = [], []
    for row in points:
        if np.all(np.isnan(row)):
            out.append(np.array(cur))
            cur = []
        else:
            cur.append(row)
    return out + ([np.array(cur)] if cur else [])


@pytest.mark.parametrize("name", ["flx_three_link", "theodore_rrp", "theodore_rrp_fem", "puma560", "stanford_arm"])
def test_lines_meet_the_model_frames(name):
    """Joints at the previous distal frames, each beam's tip at its link's distal frame (the
    deflection transform E evaluated at the tip), the last point at the end-effector."""
    robot = fm.examples.load(name)
    rng = np.random.default_rng(1)
    q = 0.3 * rng.standard_normal((3, robot.nq))
    q[:, robot.flex_index] *= 0.05
    lines = arm_lines(robot, q)
    frames = [robot.frame(q, i)[..., :3, 3] for i in range(robot.n_joints)]
    np.testing.assert_allclose(lines.joints[:, 0], 0.0, atol=1e-15)
    for i in range(1, robot.n_joints):
        np.testing.assert_allclose(lines.joints[:, i], frames[i - 1], atol=1e-12)
    np.testing.assert_allclose(lines.tip[:, 0], frames[-1], atol=1e-12)
    flexible = [i for i, link in enumerate(robot.links) if link.is_flexible]
    for b in range(len(q)):
        beams = pieces(lines.beams[b])
        assert len(beams) == len(flexible)
        for piece, i in zip(beams, flexible):
            np.testing.assert_allclose(piece[-1], frames[i][b], atol=1e-12)


def test_beam_curve_is_the_clamped_free_mode():
    """One clamped-free mode excited: the drawn deflection along link 2 has the closed-form
    shape cosh - cos - sigma (sinh - sin), is zero at the clamp and equals the tip offset."""
    robot = fm.examples.load("flx_three_link")
    q = np.zeros(robot.nq)
    q[robot.coordinate_names.index("ey2_1")] = 0.05
    rest = q.copy()
    rest[robot.flex_index] = 0.0
    disp = arm_lines(robot, q).beams[:STATIONS] - arm_lines(robot, rest).beams[:STATIONS]
    size = np.linalg.norm(disp, axis=-1)
    eta = np.linspace(0.0, 1.0, STATIONS)
    np.testing.assert_allclose(size / size[-1], clamped_free_mode(eta) / clamped_free_mode(1.0), atol=1e-9)
    assert size[0] < 1e-15
    np.testing.assert_allclose(size[-1], np.linalg.norm(fm.analysis.tip_offset(robot, q, link=1)), rtol=1e-12)


def test_sliding_beam_passes_through_its_hub():
    """The translating beam: inner end l0 behind the tip along the joint axis, clamped at the
    hub (the joint origin), tip at the distal frame."""
    robot = fm.examples.load("theodore_rrp")
    q = np.zeros(robot.nq)
    q[2] = 0.4
    q[robot.flex_index] = 0.01
    lines = arm_lines(robot, q)
    boom = pieces(lines.beams)[-1]
    assert len(boom) == STATIONS + 1
    np.testing.assert_allclose(boom[1], lines.joints[2], atol=1e-12)  # the hub: undeflected
    straight = q.copy()
    straight[robot.link_flex_slice(2)] = 0.0  # the boom undeflected, on the deflected link 2
    W = robot.frame(straight, 2)
    np.testing.assert_allclose(boom[0], W[:3, 3] - robot.links[2].beam.length * W[:3, 2], atol=1e-12)


def test_magnified_lines_scale_the_flexible_coordinates():
    robot = fm.examples.load("flx_three_link")
    q = np.random.default_rng(2).normal(size=robot.nq) * 0.02
    scaled = q.copy()
    scaled[robot.flex_index] *= 7.0
    np.testing.assert_allclose(arm_lines(robot, q, 7.0).beams, arm_lines(robot, scaled).beams, atol=1e-14)


def test_auto_magnification_is_a_round_factor_that_shows_the_deflection():
    robot = fm.examples.load("flx_three_link")
    q = np.zeros((5, robot.nq))
    q[:, 4] = np.linspace(0, 1e-3, 5)
    k = auto_magnification(robot, q)
    shown = k * max_tip_deflection(robot, q) / reach(robot)
    mantissa = k / 10 ** math.floor(math.log10(k))
    assert mantissa in (1.0, 2.0, 5.0)
    assert shown <= SHOWN_DEFLECTION
    assert shown > SHOWN_DEFLECTION / 2.5  # the next round factor would be too large
    assert auto_magnification(fm.examples.load("puma560"), np.zeros((2, 6))) == 1.0


@pytest.fixture(scope="module")
def three_link_run():
    robot = fm.examples.load("flx_three_link")
    return fm.simulate(robot, 0.3, dt=1e-3, controller=from_spec(robot, robot.controller))


def json_block(page, element_id):
    match = re.search(rf"<script type='application/json' id='{element_id}'>(.*?)</script>", page, re.S)
    return json.loads(match.group(1))


def test_report_is_self_contained(three_link_run, tmp_path):
    path = three_link_run.report(tmp_path / "out")
    assert path.name == "report.html"
    page = path.read_text(encoding="utf-8")
    markup = re.sub(r"<script[^>]*>.*?</script>", "<script></script>", page, flags=re.S)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", markup)  # the markup fetches nothing
    assert "<link" not in markup and "<script src" not in markup  # (the browser test watches requests)
    assert "plotly.js v" in page  # the bundle is inlined
    anim = json_block(page, "animation-data")
    t = np.asarray(three_link_run.t)
    times = [f["t"] for f in anim["frames"]]
    assert len(times) == 240 and times[0] == t[0] and times[-1] == t[-1] and np.all(np.diff(times) > 0)
    assert anim["magnify"] == auto_magnification(three_link_run.robot, three_link_run.q)
    robot, k = three_link_run.robot, anim["magnify"]
    last = anim["frames"][-1]
    for scale, prefix in ((k, ""), (1.0, "true_")):  # the magnified arm and the true-scale one
        tip = arm_lines(robot, three_link_run.q[-1], scale).tip[0]
        np.testing.assert_allclose([axis[0] for axis in last[prefix + "tip"]], tip, atol=1e-5)
    plots = json_block(page, "plot-data")
    assert {"joints", "torques", "energy", "tips", "joint_errors", "ee_error"} <= set(plots)
    assert len(plots["joints"]["data"]) == 2 * 3  # each joint and its desired value
    for key in ("model", "frequencies", "equations", "animation"):
        assert f"<section id='{key}'>" in page
    assert "<details>" in page and "Z1 = cos(q1)" in page  # the long program as text


def test_short_equations_are_typeset(tmp_path):
    robot = fm.examples.load("dynaman_2r")
    res = fm.simulate(robot, 0.05, dt=1e-2)
    page = res.report(tmp_path / "r.html", equations="newton_euler").read_text(encoding="utf-8")
    eom = fm.derive(robot, formulation="newton_euler")
    assert page.count("<tr><td><math") == len(program_lines(eom.latex())) == len(eom.text().splitlines()) - 1 - robot.nq
    assert "Rigid arm: no elastic modes" in page


def flexman(*args):
    return subprocess.run([sys.executable, "-m", "flexman.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_report_command(tmp_path):
    proc = flexman("report", "flx_flexible_pendulum", "--t-final", "0.1", "--magnify", "3", "--out", tmp_path,
                   "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert out["report"] == str((tmp_path / "report.html").resolve())
    assert json_block(page, "animation-data")["magnify"] == 3.0
    assert (tmp_path / "result.png").stat().st_size > 0 and (tmp_path / "result.npz").exists()
    from matplotlib.image import imread

    summary = imread(tmp_path / "summary.png")  # the arm in 3D beside the key curves: not blank
    assert summary.shape[1] > summary.shape[0] > 400 and summary[..., :3].std() > 0.05


@pytest.mark.parametrize("args, message", [
    (["--magnify", "-1"], "--magnify: must be a number >= 0"),
    (["--equations", "bogus"], "--equations"),
    (["--q0", "1", "2", "3", "4", "5"], "--q0"),
])
def test_report_command_errors(tmp_path, args, message):
    proc = flexman("report", "flx_flexible_pendulum", "--out", tmp_path, *args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flexman: error: ") and message in lines[0], proc.stderr


@pytest.mark.slow
def test_showcase_tracks_and_damps():
    """`make run`'s move (flx_three_link_lqr) does what its model file and the README say: the
    joints track within 6 mrad, the links bend visibly during the move (tips lag up to about
    20 cm), and the LQR loop settles the end-effector to about 2 mm two seconds after it."""
    robot = fm.examples.load("flx_three_link_lqr")
    res = fm.simulate(robot, 4.5, dt=2e-3, controller=from_spec(robot, robot.controller), progress=False)
    from flexman.viz.series import panels

    p = {panel.key: panel for panel in panels(res, robot)}
    t = np.asarray(res.t)
    moving, after = t <= 2.5, t >= 4.4
    assert np.abs(p["joint_errors"].y[moving]).max() < 1e-6  # decoupling: exact while the command runs
    assert np.abs(p["joint_errors"].y).max() < 6e-3
    assert 150.0 < p["tips"].y.max() < 250.0  # mm
    assert p["ee_error"].y[after].max() < 2.5  # mm, settled
    assert p["tips"].y[(t > 2.5) & (t < 3.0)].max() > 20.0  # residual vibration right after the move


def test_long_series_keep_their_envelope():
    """A fast vibration decimated for the plots keeps its extremes in every bucket."""
    from flexman.viz.report import envelope

    t = np.linspace(0.0, 10.0, 200_001)
    y = np.sin(2 * np.pi * 97.0 * t) * np.exp(-0.2 * t)
    keep = envelope(y, 4000)
    assert len(keep) <= 4002 and keep[0] == 0 and keep[-1] == len(y) - 1 and np.all(np.diff(keep) > 0)
    buckets = np.array_split(np.arange(len(y)), 10)
    for b in buckets:  # the decimated curve spans what the full one does, bucket by bucket
        inside = keep[(keep >= b[0]) & (keep <= b[-1])]
        assert y[inside].max() > y[b].max() - 0.02 and y[inside].min() < y[b].min() + 0.02
    np.testing.assert_array_equal(envelope(y[:100], 4000), np.arange(100))


def test_named_frames_are_drawn_where_the_model_puts_them(tmp_path):
    """A URDF's named frames (UR5: base, ee_link, tool0) are in the report's animation data: their
    origins at ``robot.frame(q, name)`` and a triad whose segments run along that frame's axes;
    the page labels them by name. A robot without named frames draws none."""
    import warnings

    from urdf_helpers import ROBOTS

    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(ROBOTS / "ur_description/urdf/ur5_robot.urdf")
    q = np.array([[0.1, -0.6, 0.9, -0.4, 0.5, 0.3], [0.4, -0.2, 0.3, 0.2, -0.5, 1.0]])
    anim = animation_data(robot, [0.0, 0.1], q)
    assert anim["frame_names"] == list(robot.frames) and "tool0" in anim["frame_names"]
    size = anim["triad_size"]
    assert 0 < size < 0.1 * (anim["range"][0][1] - anim["range"][0][0])
    for f, qk in zip(anim["frames"], q):
        for k, name in enumerate(anim["frame_names"]):
            T = robot.frame(qk, name)
            np.testing.assert_allclose([axis[k] for axis in f["named"]], T[:3, 3], atol=1e-5)
            for a, part in enumerate(("frame_x", "frame_y", "frame_z")):
                start = np.array([axis[3 * k] for axis in f[part]])
                end = np.array([axis[3 * k + 1] for axis in f[part]])
                assert all(axis[3 * k + 2] is None for axis in f[part])  # a gap after each triad's axis
                np.testing.assert_allclose(start, T[:3, 3], atol=1e-5)
                np.testing.assert_allclose(end - start, size * T[:3, a], atol=2e-5)
    res = fm.simulate(robot, t_final=0.02, dt=0.01, q0=q[0], backend="numeric")
    page = res.report(tmp_path / "ur5").read_text(encoding="utf-8")
    assert json_block(page, "animation-data")["frame_names"] == anim["frame_names"]
    assert "named frames: x, y, z axes" in page
    plain = animation_data(fm.load(fm.examples.path("puma560")), [0.0], np.zeros((1, 6)))
    assert plain["frame_names"] == [] and "named" not in plain["frames"][0]
