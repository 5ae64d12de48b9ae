"""Every feature on every backend it can take (issue 34, 38): one table of robots and one of
backends, crossed by the ``backend_case`` fixture of tests/test_backends.py.

A *robot case* is a name and a builder (tmp folder -> Robot) covering one feature: rigid and
flexible serial arms, trees, mimic joints, floating bases from a model file and a URDF, with
and without a beam. A *backend* evaluates that robot one way:

* ``numeric``: the interpreted recursions (``robot.mass_matrix`` ...), the reference;
* ``traced``: the same recursions traced into programs, run as generated NumPy;
* ``c``: the generated C, compiled (``fm.derive(robot).compile("c")``);
* ``loop``: a simulation under a controller in the compiled C loop (``backend="compiled"``);
* ``casadi``: the CasADi functions (``fm.derive(robot).casadi()``);
* ``fmu``: the FMI 2.0 co-simulation FMU run by FMPy.

Each backend is compared with ``numeric`` on the same states; a feature a backend cannot take
must be refused in one line, which the test then asserts instead.
"""
from __future__ import annotations

import numpy as np

import flexman as fm
from test_floating_file import MODEL as SATELLITE_MODEL

BACKENDS = ("traced", "c", "loop", "casadi", "fmu")

# the floating satellite of test_floating_file (a bus, a boom, a hand), with its boom a beam or rigid
BEAM = "    beam: {length: 1.0, mass_per_length: 1.0, EI: 200.0, modes: {y: 1, z: 1}}\n"
SATELLITE_FILE_BEAM = SATELLITE_MODEL
SATELLITE_FILE = SATELLITE_MODEL.replace(BEAM, "")

SATELLITE_URDF = """<?xml version="1.0"?>
<robot name="sat_urdf">
  <link name="bus"><inertial><origin xyz="0.05 0 0"/><mass value="20"/>
    <inertia ixx="2" iyy="2.5" izz="3" ixy="0.1" ixz="0" iyz="0"/></inertial></link>
  <link name="boom"><inertial><origin xyz="1.0 0 0"/><mass value="0.2"/>
    <inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="hand"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="0.001" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="boom_joint" type="revolute"><parent link="bus"/><child link="boom"/>
    <origin xyz="0.5 0 0.2"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
  <joint name="hand_joint" type="revolute"><parent link="boom"/><child link="hand"/>
    <origin xyz="1.0 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
</robot>
"""
BOOM_BEAM = {"links": {"boom": {"beam": {"length": 1.0, "mass_per_length": 1.0, "EI": 200.0,
                                         "modes": {"y": 1, "z": 1}}}}}


def _file(tmp, name, text):
    path = tmp / name
    path.write_text(text)
    return fm.load(path)


def _tree(tmp):
    from test_trees import flexible_tree

    return flexible_tree(2, n=3)[0]


def _mimic(tmp):
    from test_mimic import tree_urdf

    return _file(tmp, "mimic.urdf", tree_urdf())


def _geared(tmp):
    """The Saha 3-link arm behind rigid transmissions (drives: rotor inertia and motor viscous
    friction reflected at the joints)."""
    from flexman.model.serialize import robot_from_dict, robot_to_dict

    data = robot_to_dict(fm.examples.load("saha_3link"))
    for link, (n, rotor, viscous) in zip(data["links"], [(100.0, 3e-5, 0.002), (-50.0, 8e-5, 0.0), (160.0, 1.2e-5, 0.001)]):
        link["drive"] = {"gear_ratio": n, "rotor_inertia": rotor, "viscous": viscous}
    return robot_from_dict(data)


def _elastic(tmp):
    """The flexible three-link arm with elastic joints (issue 36): a motor coordinate behind a
    spring (and a damper on the second) at the first two joints, a rigid drive at the third."""
    from flexman.model.serialize import robot_from_dict, robot_to_dict

    data = robot_to_dict(fm.examples.load("flx_three_link"))
    data["links"][0]["drive"] = {"gear_ratio": 100.0, "rotor_inertia": 3e-5, "stiffness": 800.0, "viscous": 1e-4}
    data["links"][1]["drive"] = {"gear_ratio": -60.0, "rotor_inertia": 5e-5, "stiffness": 300.0, "damping": 0.5}
    data["links"][2]["drive"] = {"gear_ratio": 40.0, "rotor_inertia": 2e-5}
    return robot_from_dict(data)


ROBOTS = {
    "rigid_serial": lambda tmp: fm.examples.load("dynaman_2r"),
    "geared_drives": _geared,
    "elastic_joints": _elastic,
    "flexible_serial": lambda tmp: fm.examples.load("flx_three_link"),
    "flexible_tree": _tree,
    "mimic_tree": _mimic,
    "floating_file": lambda tmp: _file(tmp, "sat.yaml", SATELLITE_FILE),
    "floating_file_beam": lambda tmp: _file(tmp, "sat_beam.yaml", SATELLITE_FILE_BEAM),
    "floating_urdf": lambda tmp: fm.load(_write(tmp, "sat.urdf", SATELLITE_URDF), floating=True),
    "floating_urdf_beam": lambda tmp: fm.load(_write(tmp, "sat_b.urdf", SATELLITE_URDF), floating=True,
                                               overlay=BOOM_BEAM),
}


def _write(tmp, name, text):
    path = tmp / name
    path.write_text(text)
    return path


def states(robot, n=3, seed=0):
    """n states (q, qd, tau) near rest: joints within +-0.6 rad, deflections of a few mm."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = rng.uniform(-0.6, 0.6, robot.nq)
        q[robot.flex_index] = rng.uniform(-0.005, 0.005, robot.nf)
        qd = rng.uniform(-0.5, 0.5, robot.nq)
        out.append((q, qd, rng.uniform(-1.0, 1.0, robot.n_joints)))
    return out
