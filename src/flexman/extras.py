"""Optional dependencies grouped as pip extras: a feature whose extra is missing says in one line
which ``pip install`` adds it.

The core install (``pip install flexman``) models, derives, compiles, simulates and writes reports.
Planning needs CasADi (``flexman[plan]``), distributed sweeps need Dask and PyArrow
(``flexman[sweep]``), identification from CSV files needs PyArrow (``flexman[identify]``), xacro files need ``xacro`` (``flexman[xacro]``), URDF meshes in the report
need trimesh and pycollada (``flexman[mesh]``); ``flexman[all]`` installs every extra.
"""
from __future__ import annotations

import importlib

# module -> (extra, what needs it)
EXTRAS = {
    "casadi": ("plan", "optimal motion planning and the CasADi export"),
    "distributed": ("sweep", "parameter sweeps"),
    "dask": ("sweep", "parameter sweeps"),
    "pyarrow": ("sweep", "parameter sweeps (Parquet tables)"),
    "xacro": ("xacro", "reading xacro robot descriptions"),
    "trimesh": ("mesh", "URDF meshes in the report"),
    "collada": ("mesh", "COLLADA (.dae) meshes in the report"),
    "pandas": ("pandas", "tables as pandas frames"),
}


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message is the one line to show."""


def require(module: str, feature: str | None = None, extra: str | None = None):
    """Import ``module`` (a top-level package name or a dotted submodule) or raise
    :class:`MissingExtra` naming the extra that installs it (``extra`` overrides the default one
    for modules that several extras carry)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        default, what = EXTRAS.get(top, (None, None))
        extra = extra or default
        need = feature or what or module
        hint = f"pip install 'flexman[{extra}]'" if extra else f"pip install {top}"
        raise MissingExtra(f"{need} needs the '{top}' package, which is not installed: {hint}") from None


def available(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it when it is already loaded)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False
