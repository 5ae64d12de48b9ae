"""The report in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright.

The page must load with no console error and no network request, the animation must step
frame by frame, scrub, play, switch to true scale and jump to a time clicked on a plot, and
the 3D view must show the arm (not a blank canvas).

The test needs /usr/bin/chromium (`make test` installs it, see the Makefile's browser step). Without it the test fails, unless
FLEXMAN_SKIP_BROWSER=1 says a browser-less run is intended.
"""
from __future__ import annotations

import io
import os
import shutil

import numpy as np
import pytest

import flexman as fm
from flexman.control import from_spec

# root in a container: no sandbox, /tmp rather than a small /dev/shm; WebGL (the 3D view) in software
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--enable-unsafe-swiftshader", "--use-angle=swiftshader"]
BEAM_ORANGE = np.array([0xFF, 0x7F, 0x0E]) / 255.0


def chromium_path():
    """Debian's chromium (or FLEXMAN_CHROMIUM); fail, or skip where FLEXMAN_SKIP_BROWSER=1."""
    path = os.environ.get("FLEXMAN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        message = ("no headless browser: install Debian's chromium (apt-get install chromium) and the test extra "
                   "(playwright); set FLEXMAN_SKIP_BROWSER=1 to skip this test on purpose")
        if os.environ.get("FLEXMAN_SKIP_BROWSER") == "1":
            pytest.skip(message)
        pytest.fail(message)
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    robot = fm.examples.load("flx_three_link")
    res = fm.simulate(robot, 0.6, dt=1e-3, controller=from_spec(robot, robot.controller))
    return res.report(tmp_path_factory.mktemp("report") / "report.html")


def open_page(browser, path):
    """The report loaded with every network request refused and recorded, and console errors kept."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            return r.continue_()
        requests.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri(), timeout=180000)  # a busy machine: the 8 MB page parses slowly
    page.wait_for_function("window.flexmanAnimation !== undefined", timeout=60000)
    return page, errors, requests


def settle(page, condition):
    """Wait until a condition holds: a click's handler may run after the click call returns."""
    page.wait_for_function(condition, timeout=10000)


def image(png_bytes):
    from matplotlib.image import imread

    return imread(io.BytesIO(png_bytes), format="png")[..., :3]


def beam_pixels(img):
    return int(np.sum(np.all(np.abs(img - BEAM_ORANGE) < 0.08, axis=-1)))


@pytest.mark.slow
def test_report_in_chromium(browser, report):
    page, errors, requests = open_page(browser, report)
    try:
        n = page.evaluate("window.flexmanAnimation.frames")
        times = page.evaluate("window.flexmanAnimation.times")
        assert n == len(times) == 240
        # frame by frame with the step button: the readout, the scrubber and the drawn arm follow
        previous = None
        for k in range(1, 6):
            page.click("#forward")
            settle(page, f"window.flexmanAnimation.frame === {k}")
            assert page.inner_text("#time-readout") == f"t = {times[k]:.3f} s"
            assert page.eval_on_selector("#scrub", "s => s.value") == str(k)
            tip = page.evaluate("document.getElementById('arm3d').data[5].x.concat("
                                "document.getElementById('arm3d').data[5].z)")
            assert tip != previous  # the end-effector moved
            previous = tip
        # scrubbing jumps, play advances by itself
        page.eval_on_selector("#scrub", "s => { s.value = 100; s.dispatchEvent(new Event('input')); }")
        assert page.evaluate("window.flexmanAnimation.frame") == 100
        page.select_option("#speed", "0.1")  # 0.1 s of the run per second: the move lasts 6 s
        page.click("#play")
        settle(page, "window.flexmanAnimation.playing")
        page.wait_for_timeout(400)
        first = page.evaluate("window.flexmanAnimation.frame")
        page.wait_for_timeout(400)
        second = page.evaluate("window.flexmanAnimation.frame")
        assert 100 < first < second, (first, second)
        page.click("#play")  # pause
        settle(page, "!window.flexmanAnimation.playing")
        # the scale switch: at true scale the tip sits nearer the undeformed arm's
        tip_of = "(() => { const d = document.getElementById('arm3d').data; return [d[5].x[0], d[5].y[0], d[5].z[0]]; })()"
        magnified = np.array(page.evaluate(tip_of))
        page.select_option("#scale", "1")
        settle(page, f"document.getElementById('arm3d').data[5].x[0] !== {float(magnified[0])!r}")
        true_scale = np.array(page.evaluate(tip_of))
        frame = page.evaluate("window.flexmanAnimation.frame")
        anim_tip = np.array(page.evaluate(f"JSON.parse(document.getElementById('animation-data').textContent)"
                                          f".frames[{frame}].true_tip.map(axis => axis[0])"))
        np.testing.assert_allclose(true_scale, anim_tip)
        assert not np.allclose(true_scale, magnified)
        page.select_option("#scale", page.eval_on_selector("#scale", "s => s.options[0].value"))
        # a click on a plot moves the animation to that time
        plot = page.locator("#plot-ee_error")
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        page.evaluate("window.flexmanAnimation.show(0)")
        page.mouse.move(box["x"] + 0.6 * box["width"], box["y"] + 0.5 * box["height"])
        page.mouse.click(box["x"] + 0.6 * box["width"], box["y"] + 0.5 * box["height"])
        settle(page, "window.flexmanAnimation.frame > 60")
        # the 3D view is drawn: varied pixels, and the beams in their colour
        page.locator("#arm3d").scroll_into_view_if_needed()
        page.evaluate("window.flexmanAnimation.show(239)")
        page.wait_for_timeout(300)
        img = image(page.locator("#arm3d").screenshot())
        assert img.std() > 0.02  # a blank canvas has 0
        assert beam_pixels(img) > 200, beam_pixels(img)
        assert not errors, errors
        assert not requests, requests  # offline: nothing fetched
    finally:
        page.close()


@pytest.fixture(scope="module")
def compare_report(tmp_path_factory):
    """A report with the comparison section of `flexman report --compare` (make run): three runs of
    one arm (here driven three cheap ways; the showcase plans one of them, tests/test_showcase_compare.py)."""
    from flexman.analysis.tip import tip_offset

    robot = fm.examples.load("flx_three_link")
    runs = {"controlled": fm.simulate(robot, 0.6, dt=1e-3, controller=from_spec(robot, robot.controller)),
            "pushed": fm.simulate(robot, 0.6, dt=1e-3, torque=[100.0, -50.0, 25.0]),
            "pulled": fm.simulate(robot, 0.6, dt=1e-3, torque=[-100.0, 50.0, -25.0])}
    comparison = {"curves": {name: (r.t, np.linalg.norm(tip_offset(robot, r.q), axis=1), 0.3) for name, r in runs.items()},
                  "motions": {name: (r.t, r.q) for name, r in runs.items()}}
    return runs["controlled"].report(tmp_path_factory.mktemp("compare") / "report.html", comparison=comparison)


def view_rgb(colour):
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255.0


@pytest.mark.slow
def test_compare_page_shows_three_arms_side_by_side(browser, compare_report):
    """The three runs' arms in three 3D views driven by one slider: after a step each view draws its
    own run's arm at that instant (read back from the page's traces), the three differ and every arm
    moved since the start; play advances all three; each view is drawn in its run's colour."""
    page, errors, requests = open_page(browser, compare_report)
    try:
        page.wait_for_function("window.flexmanComparison !== undefined", timeout=60000)
        cmp = "window.flexmanComparison"
        assert page.evaluate(f"{cmp}.runs") == ["controlled", "pushed", "pulled"]
        n, times = page.evaluate(f"{cmp}.frames"), page.evaluate(f"{cmp}.times")
        assert n == len(times) == 240
        data = page.evaluate("JSON.parse(document.getElementById('comparison-animation').textContent)")
        tip_js = "[0, 1, 2].map(k => { const d = document.getElementById('cmp-arm-' + k).data[5]; return [d.x[0], d.y[0], d.z[0]]; })"
        start = np.array(page.evaluate(tip_js), dtype=float)
        page.eval_on_selector("#cmp-scrub", "s => { s.value = 120; s.dispatchEvent(new Event('input')); }")
        settle(page, f"{cmp}.frame === 120")
        assert page.inner_text("#cmp-time") == f"t = {times[120]:.3f} s"
        tips = np.array(page.evaluate(tip_js), dtype=float)
        for k, run in enumerate(data["runs"]):  # each view shows its own run at the slider's instant
            np.testing.assert_allclose(tips[k], [axis[0] for axis in run["frames"][120]["tip"]])
        assert np.all(np.linalg.norm(tips - start, axis=1) > 0.01)  # every arm moved (m)
        assert min(np.linalg.norm(tips[i] - tips[j]) for i, j in ((0, 1), (0, 2), (1, 2))) > 0.01  # three runs
        # the end-effector's path so far: 121 points in each view
        assert page.evaluate("[0, 1, 2].map(k => document.getElementById('cmp-arm-' + k).data[6].x.length)") == [121] * 3
        # the main animation is not driven by the comparison's slider
        assert page.evaluate("window.flexmanAnimation.frame") == 0
        page.click("#cmp-forward")
        settle(page, f"{cmp}.frame === 121")
        page.select_option("#cmp-speed", "0.1")
        # the button itself: a click by position can land elsewhere while a loaded machine still lays the page out
        page.eval_on_selector("#cmp-play", "b => b.click()")
        settle(page, f"{cmp}.playing")
        page.wait_for_timeout(400)
        first = page.evaluate(f"{cmp}.frame")
        page.wait_for_timeout(400)
        second = page.evaluate(f"{cmp}.frame")
        assert 121 < first < second, (first, second)
        page.click("#cmp-play")
        settle(page, f"!{cmp}.playing")
        moved = np.array(page.evaluate(tip_js), dtype=float)
        assert np.all(np.linalg.norm(moved - tips, axis=1) > 0)
        # each view is drawn, in its run's colour
        page.evaluate(f"{cmp}.show(239)")
        page.wait_for_timeout(300)
        for k, run in enumerate(data["runs"]):
            view = page.locator(f"#cmp-arm-{k}")
            view.scroll_into_view_if_needed()
            img = image(view.screenshot())
            pixels = int(np.sum(np.all(np.abs(img - view_rgb(run["colour"])) < 0.08, axis=-1)))
            assert pixels > 100, (run["name"], pixels)
        assert not errors, errors
        assert not requests, requests
    finally:
        page.close()


@pytest.mark.slow
def test_named_frames_in_chromium(browser, tmp_path):
    """UR5's named frames (tool0...) are drawn: a labelled marker per frame and its triad, which
    follow the arm when the animation steps; no console error."""
    import warnings

    from urdf_helpers import ROBOTS

    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(ROBOTS / "ur_description/urdf/ur5_robot.urdf")
    res = fm.simulate(robot, 0.3, dt=1e-2, q0=[0.1, -0.6, 0.9, -0.4, 0.5, 0.3], backend="numeric")
    page, errors, requests = open_page(browser, res.report(tmp_path / "ur5.html"))
    try:
        names = page.evaluate("document.getElementById('arm3d').data.map(d => d.name)")
        assert "named frames: x, y, z axes" in names
        named = page.evaluate("document.getElementById('arm3d').data.find(d => d.mode === 'markers+text')")
        k = named["text"].index("tool0")
        last = len(res.t) - 1
        page.evaluate(f"window.flexmanAnimation.show({last})")
        settle(page, f"window.flexmanAnimation.frame === {last}")
        shown = page.evaluate(f"(() => {{ const d = document.getElementById('arm3d').data.find("
                              f"d => d.mode === 'markers+text'); return [d.x[{k}], d.y[{k}], d.z[{k}]]; }})()")
        tool0 = robot.frame(res.q[-1], "tool0")[:3, 3]  # where the model puts it at the last sample
        np.testing.assert_allclose(shown, tool0, atol=1e-5)
        assert errors == [] and requests == []
    finally:
        page.close()


@pytest.mark.slow
def test_ur5_meshes_bend_with_the_flexible_forearm_in_chromium(browser, tmp_path):
    """The UR5 with its forearm a tube (the overlay of tests/urdf_helpers.py), 3 s under gravity:
    the report stays under 10 MB; the page draws its seven meshes (read back from the drawn traces
    through window.flexmanScene, and seen on the canvas); at the frame of largest deflection every
    forearm vertex sits where Pinocchio's forearm frame and the beam's own centre line at the
    vertex's station (shape functions, magnified as the sticks) put it, and the meshes move."""
    import pinocchio as pin

    from flexman.dynamics.structure import numeric_model
    from urdf_helpers import FOREARM_OVERLAY, ROBOTS, bent_by_centreline, pin_q

    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    pytest.importorskip("trimesh")
    urdf = ROBOTS / "ur_description/urdf/ur5_robot.urdf"
    robot = fm.load(urdf, overlay=FOREARM_OVERLAY)
    res = fm.simulate(robot, 3.0, dt=0.02, q0=[0.1, -0.6, 0.9, -0.4, 0.5, 0.3, 0, 0],
                      method="generalized_alpha", backend="numeric")
    path = res.report(tmp_path / "ur5.html")
    assert path.stat().st_size < 10e6
    page, errors, requests = open_page(browser, path)
    try:
        scene = "window.flexmanScene"
        page.wait_for_function(f"{scene} !== undefined", timeout=60000)
        visuals = page.evaluate(f"{scene}.visuals")
        assert [v["name"] for v in visuals] == [v.name for v in robot.visuals]
        drawn = page.evaluate("document.getElementById('arm3d').data.filter(d => d.type === 'mesh3d').map(d => d.i.length)")
        assert drawn == [v["triangles"] for v in visuals] and sum(drawn) == page.evaluate(f"{scene}.triangles") > 5000
        anim = page.evaluate("(() => { const A = JSON.parse(document.getElementById('animation-data').textContent);"
                             " return {magnify: A.magnify, times: A.frames.map(f => f.t)}; })()")
        samples = [int(np.argmin(np.abs(res.t - t))) for t in anim["times"]]
        frame = int(np.argmax(np.abs(res.q[samples, 6:]).max(axis=1)))
        page.evaluate(f"window.flexmanAnimation.show({frame})")
        settle(page, f"window.flexmanAnimation.frame === {frame}")
        k = [v["name"] for v in visuals].index("forearm_link")
        assert visuals[k]["flexible"]
        shown = np.array(page.evaluate(f"{scene}.positions({k})")).T
        local = np.array(page.evaluate(f"{scene}.local({k})")).reshape(-1, 3)
        # where they belong: Pinocchio's forearm_link frame, the overlay's turn, the beam's deflection
        q = res.q[samples[frame]]
        model = pin.buildModelFromUrdf(str(urdf))
        data = model.createData()
        pin.framesForwardKinematics(model, data, pin_q(model, q[:6]))
        oMf = data.oMf[model.getFrameId("forearm_link")]
        turn = robot.visuals[k].origin[:3, :3]  # the turned link frame <- the URDF link frame
        beam = numeric_model(robot).links[2].beam
        expected = bent_by_centreline(beam, anim["magnify"] * q[6:], local) @ turn @ oMf.rotation.T + oMf.translation
        rigid = local @ turn @ oMf.rotation.T + oMf.translation
        np.testing.assert_allclose(shown, expected, atol=2e-5)  # (float32 arrays in the page)
        assert np.linalg.norm(shown - rigid, axis=1).max() > 0.005  # it bends visibly (m)
        stations = (local - beam.root) @ np.eye(3)[beam.axis] / beam.length
        assert np.sum((stations > 0.1) & (stations < 0.9)) > 200  # along the beam, not only at its ends
        # the meshes move with the arm, and they are on the canvas
        page.evaluate(f"window.flexmanAnimation.show({frame - 5})")
        settle(page, f"window.flexmanAnimation.frame === {frame - 5}")
        assert np.abs(np.array(page.evaluate(f"{scene}.positions({k})")).T - shown).max() > 1e-3
        view = page.locator("#arm3d")
        view.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        with_meshes = image(view.screenshot())
        mesh_traces = [v["trace"] for v in visuals]
        page.evaluate(f"Plotly.restyle('arm3d', {{visible: false}}, {mesh_traces})")
        page.wait_for_timeout(300)
        without = image(view.screenshot())
        assert np.sum(np.abs(with_meshes - without).max(axis=-1) > 0.1) > 2000  # pixels the meshes cover
        assert not errors, errors
        assert not requests, requests
    finally:
        page.close()


@pytest.mark.slow
def test_compare_views_draw_each_runs_meshes_in_chromium(browser, tmp_path):
    """Issue 35: the side-by-side views of a URDF robot carry its meshes, each view posed by its own
    run: at a frame, view k's upper-arm mesh sits where Pinocchio's frame of that link puts it for run
    k's sample, and the two runs' meshes differ."""
    import pinocchio as pin

    from flexman.analysis.tip import tip_offset
    from urdf_helpers import ROBOTS, pin_q

    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    pytest.importorskip("trimesh")
    urdf = ROBOTS / "ur_description/urdf/ur5_robot.urdf"
    robot = fm.load(urdf)
    runs = {name: fm.simulate(robot, 0.4, dt=0.02, q0=q0, backend="numeric", progress=False)
            for name, q0 in (("left", [0.3, -0.8, 0.9, 0, 0.4, 0]), ("right", [-0.3, -0.5, 0.6, 0.2, -0.4, 0]))}
    comparison = {"curves": {n: (r.t, np.linalg.norm(tip_offset(robot, r.q), axis=1), 0.2) for n, r in runs.items()},
                  "motions": {n: (r.t, r.q) for n, r in runs.items()}}
    path = runs["left"].report(tmp_path / "cmp.html", comparison=comparison)
    page, errors, requests = open_page(browser, path)
    try:
        page.wait_for_function("window.flexmanComparison !== undefined", timeout=60000)
        cmp = "window.flexmanComparison"
        frame = page.evaluate(f"{cmp}.frames") - 1
        page.evaluate(f"{cmp}.show({frame})")
        settle(page, f"{cmp}.frame === {frame}")
        times = page.evaluate(f"{cmp}.times")
        model = pin.buildModelFromUrdf(str(urdf))
        data = model.createData()
        shown = []
        for k, res in enumerate(runs.values()):
            visuals = page.evaluate(f"{cmp}.meshes({k}).visuals")
            assert [v["name"] for v in visuals] == [v.name for v in robot.visuals]
            m = [v["name"] for v in visuals].index("upper_arm_link")
            positions = np.array(page.evaluate(f"{cmp}.meshes({k}).positions({m})")).T
            local = np.array(page.evaluate(f"{cmp}.meshes({k}).local({m})")).reshape(-1, 3)
            q = res.q[int(np.argmin(np.abs(res.t - times[frame])))]
            pin.framesForwardKinematics(model, data, pin_q(model, q))
            oMf = data.oMf[model.getFrameId("upper_arm_link")]
            origin = robot.visuals[m].origin
            in_urdf = np.linalg.solve(origin[:3, :3], (local - origin[:3, 3]).T).T
            np.testing.assert_allclose(positions, in_urdf @ oMf.rotation.T + oMf.translation, atol=2e-5)
            shown.append(positions)
        assert np.abs(shown[0] - shown[1]).max() > 0.05  # two runs, two poses
        assert not errors, errors
        assert not requests, requests
    finally:
        page.close()


def test_lab_report_shows_readings_over_truth_and_the_estimates_error(browser, tmp_path):
    """A sampled LQG run (encoders, strain gauges, Kalman filter): a panel per channel with the readings
    as dots at their samples over the true value, and the estimate's error of the joints, of the
    flexible coordinates and of the tip deflections, read back from the page's Plotly graphs."""
    from flexman import trajectory as tr
    from flexman.control import Decoupling
    from flexman.viz.series import tip_deflections

    S = fm.sensors
    arm = fm.examples.load("flx_three_link_lqr")
    Q, R = arm.controller["lqr_weights"]
    law = Decoupling(arm, tr.rest_to_rest([0.0] * 3, [0.2, 0.1, -0.1], 0.2), gp=100.0, gv=20.0, lqr_at=0.2,
                     lqr_weights=(np.array(Q), R))
    sensors = ([S.encoder(arm, j, 2 ** 16, noise=1e-4) for j in range(3)]
               + [S.strain_gauge(arm, link, 0.0, 0.05, noise=2e-6) for link in ("upper", "fore")])
    res = fm.simulate(arm, 0.3, dt=1e-3, controller=fm.control.lqg(arm, law, sensors, rate=500.0, seed=3),
                      backend="compiled", progress=False)
    page, errors, requests = open_page(browser, res.report(tmp_path / "lab.html", equations=None))
    try:
        names = list(res.measurements)
        for k, name in enumerate(names):
            ch = res.measurements[name]
            true, dots = page.evaluate(f"document.getElementById('plot-sensor-{k}').data")
            assert dots["mode"] == "markers" and true["mode"] == "lines" and dots["name"] == name
            np.testing.assert_allclose(dots["x"], ch.t, atol=1e-9)
            np.testing.assert_allclose(dots["y"], ch.y, atol=1e-9)
            np.testing.assert_allclose(true["y"], ch.true, atol=1e-9)
        assert np.abs(np.array(dots["y"]) - ch.true).max() > 0  # a noisy gauge reads off its true value
        # the estimate's error, against the true state at the controller's samples (on the output grid)
        rows = np.searchsorted(res.t, res.estimate["t"])
        error = res.estimate["x"][:, :arm.nq] - res.q[rows]
        joints = page.evaluate("document.getElementById('plot-estimate_joints').data.map(d => d.y)")
        np.testing.assert_allclose(np.array(joints).T, error[:, :arm.n_joints], atol=1e-9)
        flexible = page.evaluate("document.getElementById('plot-estimate_flexible').data.map(d => d.y)")
        np.testing.assert_allclose(np.array(flexible).T, error[:, arm.n_joints:], atol=1e-9)
        assert 0 < np.abs(error[:, arm.n_joints:]).max() < 0.5 * np.ptp(res.q[:, arm.n_joints:])
        tips = page.evaluate("document.getElementById('plot-estimate_tips').data.map(d => d.y)")
        est_tip, _ = tip_deflections(arm, res.estimate["x"][:, :arm.nq])
        true_tip, _ = tip_deflections(arm, res.q[rows])
        np.testing.assert_allclose(np.array(tips[1::2]).T, est_tip, atol=1e-9)  # dots: the estimate
        np.testing.assert_allclose(np.array(tips[0::2]).T, true_tip, atol=1e-9)  # lines: the truth
        assert not errors, errors
        assert not requests, requests
    finally:
        page.close()
