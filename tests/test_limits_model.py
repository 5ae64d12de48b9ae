"""Models that parse but cannot be simulated are refused at the door (issue 14), naming the
field and the limit; models at the limits load and give a usable mass matrix."""
from __future__ import annotations


import numpy as np
import pytest

import flexman as fm
from bounds import bounded
from flexman.discretize.frequency_roots import clamped_mass_roots
from flexman.model import limits
from flexman.model.checks import check_mass_matrix
from flexman.model.errors import ModelError
from flexman.model.serialize import robot_from_dict

BODY = {"mass": 1.0, "inertia": [0.1, 0.1, 0.1]}


def one_link(**fields):
    return {"name": "x", "links": [dict({"a": 1.0, **BODY}, **fields)]}


def beam(**fields):
    return dict({"length": 1.0, "mass_per_length": 1.0, "EI": 10.0}, **fields)


def sliding(d, limits_=None):
    link = {"joint": "prismatic", "d": d, "beam": beam(shapes="clamped_mass")}
    if limits_ is not None:
        link["limits"] = limits_
    return {"name": "x", "links": [link]}


@pytest.mark.parametrize("data,pattern", [
    ({"name": "x", "links": [{"a": 1.0}, {"a": 1.0, "mass": 1.0}]},
     r"^links\[1\]: the mass matrix at q = 0 is singular: coordinate q2 moves almost no mass.*give links\[1\] a mass"),
    (one_link(a=1e300), r"^links\[0\]\.a: 1e\+300 is beyond the supported magnitude 1000 m"),
    (one_link(theta=1e20), r"^links\[0\]\.theta: 1e\+20 is beyond the supported magnitude 1000 rad"),
    (one_link(com=[0, 0, 1e9]), r"^links\[0\]\.com: 1e\+09 is beyond"),
    (one_link(inertia=[1e300, 1e300, 1e300]), r"^links\[0\]\.inertia: 1e\+300 is beyond .* kg m\^2"),
    (one_link(viscous=1e200), r"^links\[0\]\.viscous: 1e\+200 is beyond"),
    (one_link(limits=[-1e300, 1e300]), r"^links\[0\]\.limits: 1e\+300 is beyond"),
    (dict(one_link(), payload={"mass": 1e300}), r"^payload\.mass: 1e\+300 is beyond the supported magnitude 1e\+06 kg"),
    (dict(one_link(), gravity=[0, 0, -1e9]), r"^gravity: 1e\+09 is beyond"),
    (one_link(beam=beam(length=1e-300)), r"^links\[0\]\.beam\.length: 1e-300 m is outside the supported range \[0\.0001, 1000\]"),
    (one_link(beam=beam(mass_per_length=1e-300)), r"^links\[0\]\.beam\.mass_per_length: 1e-300 kg/m is outside"),
    (one_link(beam=beam(EI=1e300)), r"^links\[0\]\.beam\.EI: 1e\+300 is beyond"),
    (one_link(beam=beam(damping=1e6)), r"^links\[0\]\.beam\.damping: 1e\+06 is beyond"),
    (one_link(beam=beam(modes={"y": 10**9})), r"^links\[0\]\.beam\.modes\.y: 1000000000 modes; clamped_free beams support at most 50"),
    (one_link(beam=beam(shapes="polynomial", modes={"y": 10})),
     r"^links\[0\]\.beam\.modes\.y: 10 modes; polynomial beams support at most 6 \(polynomial shapes make M singular"),
    (one_link(beam=beam(shapes="finite_elements", elements=10**9)), r"^links\[0\]\.beam\.elements: 1000000000 elements; at most 50"),
    ({"name": "x", "links": [{"a": 1.0, **BODY}] * 201}, r"^links: 201 links; at most 200"),
    ({"name": "x", "links": [one_link(beam=beam(modes={"y": 50, "z": 50}))["links"][0]] * 3},
     r"^links: 303 coordinates in all; at most 200"),
    (sliding(0.0), r"^links\[0\]\.d: a flexible prismatic link needs 0\.0001 <= d <= beam\.length = 1 m .*got 0\)"),
    (sliding(1e-300), r"^links\[0\]\.d: a flexible prismatic link needs 0\.0001 <= d"),  # found by the fuzz suite
    (sliding(-0.2), r"^links\[0\]\.d: a flexible prismatic link needs 0\.0001 <= d"),
    (sliding(1.5), r"^links\[0\]\.d: a flexible prismatic link needs 0\.0001 <= d"),
    (sliding(0.5, [-0.5, 0.2]), r"^links\[0\]\.limits: the beam's outside length q \+ d must stay in \[0\.0001, 1\] m; .*\[-0\.4999, 0\.5\]"),
    (sliding(0.5, [0.0, 0.8]), r"^links\[0\]\.limits: the beam's outside length"),
])
def test_unusable_models_are_refused_fast(data, pattern):
    with bounded(cpu_s=5.0), pytest.raises(ModelError, match=pattern) as info:
        robot_from_dict(data)
    assert "\n" not in str(info.value)


def test_refused_in_files_too(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: x\nlinks:\n  - {joint: prismatic, d: 0, beam: {length: 1, mass_per_length: 1, EI: 1, shapes: clamped_mass}}\n")
    with pytest.raises(ModelError, match=rf"^{path}: links\[0\]\.d: a flexible prismatic"):
        fm.load(path)


@pytest.mark.parametrize("shapes,modes,elements", [
    ("polynomial", limits.MAX_POLYNOMIAL_MODES, 0),
    ("clamped_free", limits.MAX_MODES, 0),
    ("clamped_mass", 20, 0),
    ("finite_elements", 1, limits.MAX_ELEMENTS),
])
def test_models_at_the_limits_load_and_have_a_regular_mass_matrix(shapes, modes, elements):
    # with a hub: the joint's inertia does not depend on the modes (without one, the modes nearly
    # span the rigid rotation and cond(M) grows as n^4: 2e12 at 50 modes, refused by the check)
    extra = {"elements": elements} if elements else {}
    data = one_link(beam=beam(shapes=shapes, modes={"y": modes, "z": 0}, **extra),
                    hub={"mass": 1.0, "inertia": [0.1, 0.1, 0.1]})
    robot = robot_from_dict(data)
    M = robot.mass_matrix(np.zeros(robot.nq))
    eig = np.linalg.eigvalsh(M)
    assert np.allclose(M, M.T) and eig[0] > 0 and eig[-1] / eig[0] < limits.MAX_CONDITION


def test_many_modes_without_hub_are_refused_by_the_condition_check():
    with pytest.raises(ModelError, match=r"^links\[0\]: the mass matrix at q = 0 is ill-conditioned \(condition number 2e\+12\)"):
        robot_from_dict(one_link(beam=beam(modes={"y": 50, "z": 0})))
    robot_from_dict(one_link(beam=beam(modes={"y": 30, "z": 0})))  # cond 9e10: accepted


def test_sliding_beam_inside_its_range_loads():
    robot = robot_from_dict(sliding(0.5, [-0.4, 0.5]))
    assert robot.nq == 3
    M = robot.mass_matrix(np.zeros(3))
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_robot_from_python_gets_the_same_limits():
    with pytest.raises(ModelError, match=r"^beam\.modes\.y: 1000000000 modes"):
        fm.Beam(length=1.0, mass_per_length=1.0, EI=1.0, modes={"y": 10**9})
    with pytest.raises(ModelError, match=r"^a: 1e\+300 is beyond"):
        fm.Link(a=1e300)
    with pytest.raises(ModelError, match=r"^links\[0\]\.d: a flexible prismatic link"):
        fm.Robot(links=[fm.Link(joint="prismatic", beam=fm.Beam(length=1.0, mass_per_length=1.0, EI=1.0))])


def test_check_mass_matrix_names_the_flexible_coordinate():
    # a beam whose mass per length is tiny against a heavy hub: its coordinates carry no mass
    robot = fm.Robot(links=[fm.Link(a=1.0, hub=fm.RigidBody(1e6, [0, 0, 0], [1e6, 1e6, 1e6]),
                                    beam=fm.Beam(length=1.0, mass_per_length=1e-6, EI=1.0,
                                                 shapes="polynomial", modes={"y": 6, "z": 0}))])
    with pytest.raises(ModelError, match=r"^links\[0\]\.beam: the mass matrix at q = 0 is ill-conditioned.*coordinate ey1_"):
        check_mass_matrix(robot)


def test_frequency_roots_never_loop_forever():
    with pytest.raises(ValueError, match="tip loads must be finite"):
        clamped_mass_roots(2, np.inf, 0.0, 0.0)
    with pytest.raises(ValueError, match="tip loads must be finite"):
        clamped_mass_roots(2, np.nan, 1.0, 0.0)
    assert np.all(np.diff(clamped_mass_roots(5, 1.0, 0.1, 0.0)) > 0)


def test_a_model_that_cannot_be_evaluated_is_a_model_error(monkeypatch):
    robot = fm.Robot(links=[fm.Link(a=1.0, body=fm.RigidBody(1.0, [0, 0, 0], [0.1, 0.1, 0.1]))])

    def broken(q):
        raise ValueError("tip loads must be finite (got M=inf)")

    monkeypatch.setattr(robot, "mass_matrix", broken)
    with pytest.raises(ModelError, match=r"^the mass matrix at q = 0 cannot be computed \(tip loads must be finite"):
        check_mass_matrix(robot)
