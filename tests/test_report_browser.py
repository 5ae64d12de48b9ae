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
    page.goto(path.as_uri())
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
