"""A drive's torque limit (issue 36): ``drive.torque_limit`` (N m at the motor) saturates the
applied joint torque at ``|n| torque_limit`` in every loop (Python, compiled, sampled, batch) and
in the FMU, the same saturation as a controller's ``tau_max``; model files, overlays and a URDF's
``<limit effort>`` carry it; ``fm.plan`` takes it as its default torque limits."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.trajectory import rest_to_rest

N, LIMIT = 50.0, 0.2  # gear ratio and motor torque limit: 10 N m at the joint


def dynaman(limit=LIMIT):
    data = robot_to_dict(fm.examples.load("dynaman_2r"))
    for link in data["links"]:
        link["drive"] = {"gear_ratio": N, "rotor_inertia": 1e-5, **({"torque_limit": limit} if limit else {})}
    return robot_from_dict(data)


def pid(robot, tau_max=None):
    return fm.control.PID(robot, rest_to_rest([0.0, 0.0], [1.0, -1.0], 0.5), 400.0, 10.0, 40.0, tau_max=tau_max)


@pytest.mark.parametrize("loop", ["python", "compiled"])
def test_a_saturated_run_equals_the_run_with_the_equivalent_tau_max(loop):
    limited, free = dynaman(), dynaman(limit=None)
    np.testing.assert_array_equal(limited.torque_limits, [N * LIMIT, N * LIMIT])
    kw = dict(dt=1e-3, method="rk4", loop=loop, backend="compiled" if loop == "compiled" else None, progress=False)
    a = fm.simulate(limited, 1.0, controller=pid(limited), **kw)
    b = fm.simulate(free, 1.0, controller=pid(free, tau_max=N * LIMIT), **kw)
    assert a.stats["loop"] == b.stats["loop"] == loop
    assert np.mean(np.abs(a.tau) >= N * LIMIT) > 0.3  # the run rides the limit much of the time
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.tau, b.tau, rtol=0, atol=1e-12)
    # an open-loop torque above the limit acts as the limit itself
    c = fm.simulate(limited, 0.3, torque=[30.0, -25.0], **kw)
    d = fm.simulate(free, 0.3, torque=[N * LIMIT, -N * LIMIT], **kw)
    np.testing.assert_allclose(c.q, d.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.abs(c.tau), N * LIMIT, rtol=0, atol=1e-12)


def test_the_sampled_loops_and_a_batch_saturate_too():
    limited, free = dynaman(), dynaman(limit=None)
    for loop in ("python", "compiled"):
        a = fm.simulate(limited, 0.6, dt=1e-3, controller=fm.control.Sampled(pid(limited), 500.0), loop=loop,
                        backend="compiled", progress=False)
        b = fm.simulate(free, 0.6, dt=1e-3, controller=fm.control.Sampled(pid(free, tau_max=N * LIMIT), 500.0),
                        loop=loop, backend="compiled", progress=False)
        assert a.stats["loop"] == loop and np.abs(a.tau).max() == N * LIMIT
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
    runs = fm.simulate_batch(limited, 0.3, dt=1e-3, q0=np.zeros((2, 2)), torque=[30.0, -25.0], progress=False)
    one = fm.simulate(free, 0.3, dt=1e-3, method="rk4", torque=[N * LIMIT, -N * LIMIT], progress=False)
    np.testing.assert_allclose(runs.q[1], one.q, rtol=0, atol=1e-10)
    other = dynaman(limit=0.1)
    with pytest.raises(ValueError, match=r"^robots\[0\]: its drives' torque limits differ") as info:
        fm.simulate_batch(limited, 0.01, robots=[other, limited], progress=False)
    assert "\n" not in str(info.value)


def test_the_fmu_saturates_its_torque_inputs(tmp_path):
    fmpy = pytest.importorskip("fmpy")
    limited, free = dynaman(), dynaman(limit=None)
    path = fm.derive(limited).fmu(tmp_path / "limited.fmu", kind="cs")
    res = fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=0.3, output_interval=1e-3,
                            start_values={"tau1": 30.0, "tau2": -25.0, "step_size": 1e-3})
    ref = fm.simulate(free, 0.3, dt=1e-3, method="rk4", torque=[N * LIMIT, -N * LIMIT], backend="numeric",
                      progress=False)
    q = np.stack([res[n] for n in free.coordinate_names], axis=-1)
    np.testing.assert_allclose(q, ref.q, rtol=0, atol=1e-9)


def test_model_file_overlay_and_urdf_effort_round_trip(tmp_path):
    robot = dynaman(limit=0.25)
    back = fm.load(fm.save(robot, tmp_path / "limited.yaml"))
    assert back.links[1].drive.torque_limit == 0.25
    np.testing.assert_array_equal(back.torque_limits, robot.torque_limits)
    urdf = tmp_path / "geared.urdf"
    urdf.write_text("""<robot name="geared">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/><origin xyz="0.25 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="fore"><inertial><mass value="0.5"/><origin xyz="0.2 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="12" velocity="3"/></joint>
  <joint name="elbow" type="revolute"><parent link="arm"/><child link="fore"/><origin xyz="0.5 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="6" velocity="3"/></joint>
  <transmission name="t1"><type>transmission_interface/SimpleTransmission</type>
    <joint name="shoulder"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
    <actuator name="m1"><mechanicalReduction>-100</mechanicalReduction></actuator></transmission>
</robot>""")
    loaded = fm.load(urdf)
    assert loaded.links[0].drive.torque_limit == pytest.approx(0.12)  # effort / |reduction|, motor side
    np.testing.assert_allclose(loaded.torque_limits, [12.0, np.inf])  # the elbow has no drive: no limit
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(f"urdf: {urdf.name}\nlinks:\n  shoulder: {{drive: {{torque_limit: 0.05}}}}\n"
                       "  elbow: {drive: {gear_ratio: 20, torque_limit: 0.1}}\n")
    over = fm.load(overlay)
    assert over.links[0].drive.gear_ratio == -100.0
    np.testing.assert_allclose(over.torque_limits, [5.0, 2.0])


def test_plan_takes_the_drives_limits_by_default():
    pytest.importorskip("casadi")
    beam = fm.Beam(length=1.0, mass_per_length=1.0, EI=[50.0, 50.0], modes={"y": 1, "z": 0, "torsion": 0})
    link = fm.Link(joint="revolute", a=1.0, body=fm.RigidBody(mass=0.0), beam=beam,
                   hub=fm.RigidBody(mass=1.0, inertia=[0.05, 0.05, 0.05]),
                   drive=fm.Drive(gear_ratio=10.0, torque_limit=0.2))
    robot = fm.Robot(links=[link], gravity=[0, 0, 0], name="hub_arm")
    plan = fm.plan(robot, [0.0], [1.0], knots=30)  # minimum time: the drive's 2 N m is the limit
    dense = plan.report["dense"]
    assert 0.95 < dense["torque_peak"][0] / 2.0 <= 1.002 and dense["within_limits"]


