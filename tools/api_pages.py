"""Write the API reference pages (docs/api/*.md) from the packages' public names.

Each public name of ``flexman``, ``flexman.analysis``, ``flexman.control`` and
``flexman.trajectory`` (their ``__all__``) gets one mkdocstrings directive pointing at the module
that defines it, so that names the packages import on first use are documented where they live.
``make docs`` runs this, then ``mkdocs build --strict`` renders the pages with the how-tos.

Usage: python tools/api_pages.py [--check]   (--check: exit 1 if the committed pages are stale)
"""
from __future__ import annotations

import importlib
import inspect
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = {
    "flexman": "The package: load and save robots, simulate, derive, sweep, identify, plan.",
    "flexman.analysis": "Analyses of a model: frequencies, linearization, statics, strain, sensitivities, identification helpers.",
    "flexman.control": "Controllers, gains, input shapers and trackers of planned moves.",
    "flexman.trajectory": "Joint trajectories: rest-to-rest profiles, splines, spin-ups, Fourier series, CSV records.",
}


def where(package: str, name: str) -> str:
    """The dotted path mkdocstrings should document for ``package.name``."""
    obj = getattr(importlib.import_module(package), name)
    module = getattr(obj, "__module__", None)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        if module and module.startswith("flexman") and hasattr(importlib.import_module(module), name):
            return f"{module}.{name}"
    return f"{package}.{name}"


def page(package: str) -> str:
    names = list(importlib.import_module(package).__all__)
    lines = [f"# `{package}`", "", PACKAGES[package], ""]
    for name in names:
        lines += [f"## `{package}.{name}`", "", f"::: {where(package, name)}", "    options:",
                  "      show_root_heading: false", "      heading_level: 3", ""]
    return "\n".join(lines)


def pages() -> dict:
    return {ROOT / "docs" / "api" / f"{pkg.split('.')[-1] if '.' in pkg else 'flexman'}.md": page(pkg)
            for pkg in PACKAGES}


def main(argv) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    stale = []
    for path, text in pages().items():
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"docs/api is stale ({', '.join(stale)}): run python tools/api_pages.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
