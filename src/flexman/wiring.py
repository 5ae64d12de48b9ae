"""Connects the layers: fills the model's engine slots (:mod:`flexman.model.engine`) with the
implementations of the higher layers. ``import flexman`` calls :func:`connect`; every slot is
filled with a loader, so nothing beyond the model is imported until it is first used."""
from __future__ import annotations

import importlib

from .model.engine import provide


def _module(name):
    return lambda: importlib.import_module(name)


def _attribute(module, attr):
    return lambda: getattr(importlib.import_module(module), attr)


def connect() -> None:
    """Fill every engine slot (idempotent)."""
    provide("codegen", lazy=_module("flexman.codegen"))
    provide("check_manoeuvre", lazy=_attribute("flexman.trajectory", "from_spec"))
    provide("dynamics", lazy=_module("flexman.dynamics.api"))
    provide("natural_frequencies", lazy=_attribute("flexman.analysis.frequencies", "natural_frequencies"))
    provide("robot_html", lazy=_attribute("flexman.viz.notebook", "robot_html"))
    provide("result_html", lazy=_attribute("flexman.viz.notebook", "result_html"))
    provide("eom_html", lazy=_attribute("flexman.viz.equations", "eom_html"))
    provide("plot_result", lazy=_attribute("flexman.viz.plots", "plot_result"))
    provide("write_report", lazy=_attribute("flexman.viz.report", "write_report"))
    provide("plot_robustness", lazy=_attribute("flexman.viz.shaping", "plot_robustness"))
