"""Regenerate docs/report-3d.png: the 3D view of `make run`'s report, taken by headless Chromium.

Run after `make run`: .venv/bin/python docs/screenshot.py [results/showcase/report.html]
Another report, picture and time shown: docs/screenshot.py REPORT [OUT.png [T_SHOWN]], e.g.
docs/urdf-flexible.png (see README, URDF):
  flexman report ur5_like_flexible --t-final 1 --dt 5e-3 --method Radau --q0 0 -0.5 0.8 0 0 0 --out results/ur5
  .venv/bin/python docs/screenshot.py results/ur5/report.html docs/urdf-flexible.png 0.2
With --compare: the "same move three ways" section of a `report --compare` page (its error curves and
the three arms side by side), e.g. docs/report-compare.png:
  .venv/bin/python docs/screenshot.py --compare results/showcase/report.html docs/report-compare.png 1.5
"""
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = [a for a in sys.argv[1:] if a != "--compare"]
COMPARE = "--compare" in sys.argv[1:]
REPORT = Path(ARGS[0] if ARGS else "results/showcase/report.html").resolve()
OUT = Path(ARGS[1]).resolve() if len(ARGS) > 1 else Path(__file__).resolve().parent / (
    "report-compare.png" if COMPARE else "report-3d.png")
T_SHOWN = float(ARGS[2]) if len(ARGS) > 2 else (1.5 if COMPARE else 0.75)  # s: the showcase's links bend most here
ANIMATION, SECTION = ("flexmanComparison", "#comparison") if COMPARE else ("flexmanAnimation", "#animation")

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                args=["--no-sandbox", "--enable-unsafe-swiftshader", "--use-angle=swiftshader"])
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(REPORT.as_uri(), timeout=180000)
    page.wait_for_function(f"window.{ANIMATION} !== undefined", timeout=60000)
    page.evaluate(f"""() => {{ const a = window.{ANIMATION};
        a.show(a.times.findIndex(t => t >= {T_SHOWN})); }}""")
    page.wait_for_timeout(500)
    page.locator(SECTION).screenshot(path=str(OUT))
    browser.close()
print(f"wrote {OUT}")
