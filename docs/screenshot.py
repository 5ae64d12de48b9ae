"""Regenerate docs/report-3d.png: the 3D view of `make run`'s report, taken by headless Chromium.

Run after `make run`: .venv/bin/python docs/screenshot.py [results/showcase/report.html]
Another report, picture and time shown: docs/screenshot.py REPORT [OUT.png [T_SHOWN]], e.g.
docs/urdf-flexible.png (see README, URDF):
  flexman report ur5_like_flexible --t-final 1 --dt 5e-3 --method Radau --q0 0 -0.5 0.8 0 0 0 --out results/ur5
  .venv/bin/python docs/screenshot.py results/ur5/report.html docs/urdf-flexible.png 0.2
"""
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

REPORT = Path(sys.argv[1] if len(sys.argv) > 1 else "results/showcase/report.html").resolve()
OUT = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else Path(__file__).resolve().parent / "report-3d.png"
T_SHOWN = float(sys.argv[3]) if len(sys.argv) > 3 else 0.75  # s: the showcase's links bend most here

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                args=["--no-sandbox", "--enable-unsafe-swiftshader", "--use-angle=swiftshader"])
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(REPORT.as_uri())
    page.wait_for_function("window.flexmanAnimation !== undefined", timeout=60000)
    page.evaluate(f"""() => {{ const a = window.flexmanAnimation;
        a.show(a.times.findIndex(t => t >= {T_SHOWN})); }}""")
    page.wait_for_timeout(500)
    page.locator("#animation").screenshot(path=str(OUT))
    browser.close()
print(f"wrote {OUT}")
