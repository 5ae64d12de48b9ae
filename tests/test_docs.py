"""The API reference (issue 37): ``make docs`` builds the how-tos and the reference generated from
the docstrings offline, with warnings as errors, and every public name of ``flexman``,
``flexman.analysis``, ``flexman.control`` and ``flexman.trajectory`` is in it."""
from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import api_pages  # noqa: E402


def inventory(path):
    """The object names of a Sphinx-style objects.inv (mkdocstrings writes one)."""
    data = path.read_bytes()
    start = 0
    for _ in range(4):  # four header lines, then zlib
        start = data.index(b"\n", start) + 1
    return {line.split(" ", 1)[0] for line in zlib.decompress(data[start:]).decode().splitlines() if line}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-3000:]
    return out


def test_api_pages_are_current():
    stale = [path.name for path, text in api_pages.pages().items() if not path.exists() or path.read_text() != text]
    assert not stale, f"run python tools/api_pages.py (stale: {stale})"


@pytest.mark.parametrize("package", sorted(api_pages.PACKAGES))
def test_every_public_name_is_in_the_reference(site, package):
    names = inventory(site / "objects.inv")
    public = importlib.import_module(package).__all__
    missing = [n for n in public if api_pages.where(package, n) not in names]
    assert not missing, f"{package}: not in the reference: {missing}"
    html = (site / "api" / (package.split(".")[-1] if "." in package else "flexman") / "index.html").read_text()
    assert all(f"{package}.{n}" in html for n in public)


def test_the_how_tos_are_built_beside_the_reference(site):
    for page in ("urdf", "statics", "motion", "fmu", "report", "architecture", "testing"):
        assert (site / page / "index.html").is_file(), page
