"""parameter_values (the input vector of a compiled symbolic-parameter model) takes its fast
path after the first robot of a beam structure: the beams' names are remembered, their
tensors not built. It must give the names, order and values of the full derivation's
``symbolic_model`` for every robot, zeros and clamped-mass shapes included."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.symbolic import params
from flexman.symbolic.tracer import Tape


def full(robot):
    return list(params.symbolic_model(robot, Tape())[1].items())


def variants(robot, rng):
    """The robot with its beam and body values moved, and one with some beam values zero."""
    out = []
    for zero in (False, True):
        data = robot_to_dict(robot)
        for link in data["links"]:
            if "mass" in link:
                link["mass"] = link["mass"] * (1 + 0.2 * rng.random())
            beam = link.get("beam")
            if beam:
                beam["mass_per_length"] *= 1 + 0.2 * rng.random()
                if "length" in beam:
                    beam["length"] *= 1 + 0.1 * rng.random()
                if zero:
                    beam["damping"] = 0.0
                    beam.pop("GJ", None)
        out.append(robot_from_dict(data))
    return out


@pytest.mark.parametrize("name", fm.examples.names())
def test_fast_path_equals_the_full_derivation(name, monkeypatch):
    robot = fm.examples.load(name)
    assert list(params.parameter_values(robot).items()) == full(robot)  # fills the memory
    for seed in (0, 1):  # the second round finds every structure (zeros too) remembered
        for variant in variants(robot, np.random.default_rng(seed)):
            assert list(params.parameter_values(variant).items()) == full(variant)


def test_second_robot_of_a_structure_skips_the_beam_tensors(monkeypatch):
    robot = fm.examples.load("flx_three_link")
    first = params.parameter_values(robot)
    def no_full_derivation(*args):
        raise AssertionError("symbolic_model called for a remembered structure")

    monkeypatch.setattr(params, "symbolic_model", no_full_derivation)
    data = robot_to_dict(robot)
    data["links"][1]["beam"]["mass_per_length"] *= 1.5
    changed = params.parameter_values(robot_from_dict(data))
    assert list(changed) == list(first)
    assert changed["rhoA2"] == pytest.approx(1.5 * first["rhoA2"], rel=1e-15)


def test_clamped_mass_shapes_take_the_full_path(monkeypatch):
    robot = fm.examples.load("ur5_like_flexible")
    assert params._beam_keys(robot) is None  # its shapes follow from the loads
    calls = []
    original = params.symbolic_model
    monkeypatch.setattr(params, "symbolic_model", lambda *a: calls.append(1) or original(*a))
    params.parameter_values(robot)
    params.parameter_values(robot)
    assert len(calls) == 2
