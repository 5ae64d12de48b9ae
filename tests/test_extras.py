"""The light core (issue 37): without the optional packages flexman still imports, simulates,
derives, compiles and writes a report, and each feature that needs an extra refuses in one line
naming the ``pip install`` that adds it.

The optional packages are hidden from a child interpreter by an import hook, which is what a
fresh ``pip install flexman`` (no extras) looks like to the code.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from flexman.extras import EXTRAS, MissingExtra, require

HIDDEN = sorted(EXTRAS)

CHILD = textwrap.dedent("""
    import importlib.abc, json, os, sys, tempfile
    HIDDEN = set(sys.argv[1].split(","))

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in HIDDEN:
                raise ImportError(f"No module named {name!r}")

    sys.meta_path.insert(0, Hide())
    import numpy as np
    import flexman as fm

    out = {}
    robot = fm.examples.load("flx_three_link")
    res = fm.simulate(robot, 0.02, dt=1e-3)
    out["samples"] = len(res.t)
    fast = fm.derive(robot).compile("c")
    q = np.linspace(0.1, 0.7, robot.nq)
    out["compiled_vs_numeric"] = float(abs(fast.mass_matrix(q) - robot.mass_matrix(q)).max())
    folder = tempfile.mkdtemp()
    res.report(os.path.join(folder, "report.html"))
    out["report_bytes"] = os.path.getsize(os.path.join(folder, "report.html"))
    for name, call in (("plan", lambda: fm.plan(robot, np.zeros(3), np.full(3, 0.1), duration=1.0)),
                       ("sweep", lambda: fm.sweep(robot, {"links.0.beam.EI": [1.0, 2.0]})),
                       ("casadi", lambda: fm.derive(robot).casadi())):
        try:
            call()
            out[name] = None
        except ImportError as exc:
            out[name] = str(exc)
    out["imported"] = sorted(m for m in sys.modules if m.split(".")[0] in HIDDEN)
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def core_run(tmp_path_factory):
    proc = subprocess.run([sys.executable, "-c", CHILD, ",".join(HIDDEN)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path_factory.mktemp("core"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_core_simulates_derives_compiles_and_reports(core_run):
    assert core_run["samples"] == 21
    assert core_run["compiled_vs_numeric"] < 1e-10
    assert core_run["report_bytes"] > 100_000
    assert core_run["imported"] == []


@pytest.mark.parametrize("feature, extra", [("plan", "plan"), ("sweep", "sweep"), ("casadi", "plan")])
def test_missing_extra_is_one_line_naming_the_pip_install(core_run, feature, extra):
    message = core_run[feature]
    assert message is not None and "\n" not in message
    assert f"pip install 'flexman[{extra}]'" in message


def test_require_names_the_extra_and_the_feature():
    with pytest.raises(MissingExtra, match=r"reading things needs the 'no_such_pkg_xyz' package.*pip install no_such_pkg_xyz"):
        require("no_such_pkg_xyz", "reading things")
    assert require("json") is json


def test_cli_refuses_a_missing_extra_in_one_line(tmp_path):
    hide = textwrap.dedent("""
        import importlib.abc, sys
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "casadi":
                    raise ImportError(name)
        sys.meta_path.insert(0, Hide())
        from flexman.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    proc = subprocess.run([sys.executable, "-c", hide, "plan", "dynaman_2r", "--to", "0.5", "0.5", "--duration", "1",
                           "--out", str(tmp_path / "p")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'flexman[plan]'" in lines[0], proc.stderr
