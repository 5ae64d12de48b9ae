"""Worked example of docs/identification.md: from a URDF arm to identified base parameters.

A four-joint arm (three revolute joints and a prismatic one) is written as URDF; Pinocchio, an
independent rigid-body library, computes the torques of an excitation (Fourier series, period
10 s, four harmonics, 20 s at 1 kHz); noise is added as a real encoder and torque sensor would
(1e-4 rad or m on q, 2 % of each joint's rms torque). ``fm.identify`` with its defaults then
estimates the base parameters, and they predict the torques of an unseen trajectory.

Run: python examples/identify_urdf_arm.py   (needs the test extra: pin)
"""
import numpy as np
import pinocchio as pin

import flexman as fm
from flexman.analysis import rigid_regressor as rr
from flexman.trajectory import FourierSeries

URDF = """<?xml version="1.0"?>
<robot name="arm4">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0 0 0.15"/><mass value="3.0"/>
    <inertia ixx="0.05" iyy="0.05" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.2 0 0"/><mass value="2.0"/>
    <inertia ixx="0.004" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.15 0.01 0"/><mass value="1.2"/>
    <inertia ixx="0.002" iyy="0.012" izz="0.012" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l4"><inertial><origin xyz="0 0 0.05"/><mass value="0.6"/>
    <inertia ixx="0.002" iyy="0.002" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.3" rpy="1.5708 0 0"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="30" velocity="2"/></joint>
  <joint name="j4" type="prismatic"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.3 0 0" rpy="0 1.5708 0"/><axis xyz="0 0 1"/><limit lower="-0.2" upper="0.2" effort="30" velocity="0.5"/></joint>
</robot>
"""
PERIOD, HARMONICS, FS, DURATION = 10.0, 4, 1000.0, 20.0


def fourier(rng, amplitude):
    """A random zero-mean excitation, q = sum A sin + B cos with amplitudes falling as 1/l
    (``FourierSeries`` takes the coefficients of qd: a = A w, b = -B w)."""
    w = 2 * np.pi * np.arange(1, HARMONICS + 1) / PERIOD
    A, B = rng.uniform(-1, 1, (2, 4, HARMONICS)) * amplitude[:, None] / np.arange(1, HARMONICS + 1)
    return FourierSeries(PERIOD, np.zeros(4), A * w, -B * w)


def torques(model, q, qd, qdd):
    data = model.createData()
    return np.array([pin.rnea(model, data, a, b, c) for a, b, c in zip(q, qd, qdd)])


def main(path="arm4.urdf"):
    with open(path, "w") as fh:
        fh.write(URDF)
    robot, model = fm.load(path), pin.buildModelFromUrdf(path)
    rng = np.random.default_rng(1)
    amplitude = np.array([0.6, 0.5, 0.6, 0.08])
    t = np.arange(0.0, DURATION, 1.0 / FS)
    q, qd, qdd = fourier(rng, amplitude)(t)
    tau = torques(model, q, qd, qdd)
    q_meas = q + rng.normal(0, 1e-4, q.shape)
    tau_meas = tau + rng.normal(0, 1, tau.shape) * 0.02 * np.sqrt((tau ** 2).mean(axis=0))

    ident = fm.identify(robot, t, q_meas, tau_meas)
    print(ident.table())

    truth = ident.base.project(rr.standard_parameters(robot))
    z = (ident.values - truth) / ident.std
    print(f"\n{np.mean(np.abs(z) < 4):.0%} of {len(z)} base parameters within 4 standard errors of the truth "
          f"(largest |error| / std: {np.abs(z).max():.2f})")
    tu = np.arange(0.0, 5.0, 1.0 / 200)
    qu, qdu, qddu = fourier(rng, amplitude)(tu)
    tau_u = torques(model, qu, qdu, qddu)
    err = np.sqrt(((ident.predict(robot, qu, qdu, qddu) - tau_u) ** 2).mean(0)) / np.sqrt((tau_u ** 2).mean(0))
    print("unseen trajectory, rms torque error per joint (% of rms torque):", np.round(100 * err, 3))
    old = fm.identify(robot, t, q_meas, tau_meas, cutoff=50.0)  # the former default: a tenth of Nyquist
    err_old = np.sqrt(((old.predict(robot, qu, qdu, qddu) - tau_u) ** 2).mean(0)) / np.sqrt((tau_u ** 2).mean(0))
    print("the same with the former fixed 50 Hz cutoff:", np.round(100 * err_old, 1))


if __name__ == "__main__":
    main()
