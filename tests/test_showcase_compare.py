"""`flexman report --compare` (make run): the same move three ways in one report."""
import re

import numpy as np
import pytest

from flexman.cli import main
from flexman.viz.report import comparison_section

pytest.importorskip("casadi")


def test_comparison_section_numbers():
    t = np.linspace(0.0, 3.0, 301)
    err = np.where(t <= 1.0, 0.05, np.where(t >= 1.2, 1e-4, 0.02))  # m
    html, figure = comparison_section({"curves": {"a": (t, err, 1.0)}, "pages": {"a": "report-a.html"}})
    cells = re.findall(r"<td>(.*?)</td>", html)
    assert cells == ["<a href='report-a.html'>a</a>", "1", "50", "0.1"]
    assert np.allclose(figure["data"][0]["y"], 1e3 * err)


def test_compare_needs_the_controller(tmp_path, capsys):
    assert main(["report", "flx_three_link_lqr", "--compare", "--t-final", "0.1", "--out", str(tmp_path / "o")]) == 2
    assert "--compare: needs --controller" in capsys.readouterr().err


@pytest.mark.slow
def test_showcase_three_ways(tmp_path, capsys):
    out = tmp_path / "show"
    assert main(["report", "flx_three_link_lqr", "--controller", "--compare", "--t-final", "3.0", "--dt", "2e-3",
                 "--out", str(out)]) == 0
    page = (out / "report.html").read_text()
    number = lambda text: float("nan") if text == "-" else float(text)  # noqa: E731 ("-": the run ends before)
    rows = {m[0]: (number(m[1]), number(m[2]), number(m[3])) for m in re.findall(
        r"<tr><td>(?:<a [^>]*>)?([^<]+)(?:</a>)?</td><td>([\d.e+-]+)</td><td>([\d.e+-]+)</td><td>([\d.e+-]+)</td></tr>",
        page)}
    assert set(rows) == {"profile", "ZVD-shaped", "optimal"}
    assert rows["profile"][2] > 10.0           # mm of ringing 0.2 s after the sinusoidal move
    assert rows["optimal"][2] < 1.0            # the plan tracked with feed-forward + LQR
    assert rows["optimal"][0] == pytest.approx(2.5)
    for name in ("report-zvd-shaped.html", "report-optimal.html"):
        assert "animation-data" in (out / name).read_text()
    # the three arms side by side in the page itself: one time axis, each run's own motion
    import json
    anim = json.loads(re.search(r"<script type='application/json' id='comparison-animation'>(.*?)</script>",
                                page).group(1))
    assert [r["name"] for r in anim["runs"]] == ["profile", "ZVD-shaped", "optimal"]
    assert all(len(r["frames"]) == len(anim["times"]) for r in anim["runs"])
    mid = len(anim["times"]) // 3  # during the move (1 s of 3): the three arms are in different places
    tips = np.array([[axis[0] for axis in r["frames"][mid]["tip"]] for r in anim["runs"]])
    assert np.linalg.norm(tips[0] - tips[1]) > 1e-3 and np.linalg.norm(tips[0] - tips[2]) > 1e-3
    assert "id='cmp-arm-2'" in page


def test_comparison_animation_puts_the_runs_on_one_clock():
    """The side-by-side views: one time axis (the first run's frames), each run drawn at its sample
    nearest each frame time, one magnification and one cube for all."""
    import flexman as fm
    from flexman.viz.report import comparison_animation

    robot = fm.examples.load("dynaman_2r")
    fast = fm.simulate(robot, 1.0, dt=0.01, q0=[0.3, 0.0])
    slow = fm.simulate(robot, 1.0, dt=0.004, q0=[-0.3, 0.2])
    data = comparison_animation(robot, {"fast": (fast.t, fast.q), "slow": (slow.t, slow.q)})
    assert np.allclose(data["times"], fast.t)  # 101 samples: every one a frame
    assert [r["name"] for r in data["runs"]] == ["fast", "slow"]
    for run, res in zip(data["runs"], (fast, slow)):
        assert len(run["frames"]) == len(data["times"])
        for k in (0, 37, 100):
            nearest = int(np.argmin(np.abs(res.t - data["times"][k])))
            tip = robot.frame(res.q[nearest])[:3, 3]
            assert np.allclose([axis[0] for axis in run["frames"][k]["tip"]], tip, atol=1e-5)
            assert np.allclose([axis[k] for axis in run["trail"]], tip, atol=1e-5)
    lo, hi = np.array(data["range"]).T
    assert np.allclose(hi - lo, (hi - lo)[0])  # a cube
    for run in data["runs"]:  # that holds every arm
        for f in run["frames"]:
            pts = np.array([[v for v in axis if v is not None] for axis in f["rigid"]])
            assert np.all(pts.min(axis=1) >= lo - 1e-9) and np.all(pts.max(axis=1) <= hi + 1e-9)
