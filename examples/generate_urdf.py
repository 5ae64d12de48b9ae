"""Write the bundled URDF arms (src/flexman/examples/data/*.urdf) from published DH and
inertial data; run it again after changing a number here. Nothing is downloaded.

- ur5_like: the UR5's standard DH lengths and link masses and centres of mass as Universal
  Robots publishes them ("DH parameters for calculations of kinematics and dynamics"), with
  a2, a3 taken positive (the mirrored zero pose, so each arm link extends along +x of its
  joint frame and a beam can replace it) and inertias of uniform solid cylinders
  (radius 0.06 m) along each link, which UR does not publish.
- panda_like: the Franka Emika Panda's modified-DH kinematics (Franka's documentation) with
  the inertial parameters identified by Gaz, Cognetti, Oliva, Robuffo Giordano and De Luca,
  "Dynamic identification of the Franka Emika Panda robot with retrieval of feasible
  parameters using penalty-based optimization", IEEE RA-L 4(4), 2019.

The files are written by ``fm.save(robot, "x.urdf")``; the model checks (positive
definite inertias, triangle inequality) run on the way.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import flexman as fm
from flexman.model import Link, RigidBody, Robot

DATA = Path(__file__).resolve().parents[1] / "src" / "flexman" / "examples" / "data"


def cylinder(mass, length, axis, radius=0.06):
    """Principal inertias of a uniform solid cylinder along a coordinate axis (0, 1, 2)."""
    along = 0.5 * mass * radius**2
    across = mass * (3 * radius**2 + length**2) / 12
    out = [across, across, across]
    out[axis] = along
    return out


def ur5_like() -> Robot:
    d = [0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823]
    a = [0.0, 0.425, 0.39225, 0.0, 0.0, 0.0]
    alpha = [np.pi / 2, 0.0, 0.0, np.pi / 2, -np.pi / 2, 0.0]
    mass = [3.7, 8.393, 2.275, 1.219, 1.219, 0.1879]
    com = [[0.0, -0.02561, 0.00193], [-0.2125, 0.0, 0.11336], [-0.15, 0.0, 0.0265],
           [0.0, -0.0018, 0.01634], [0.0, 0.0018, 0.01634], [0.0, 0.0, -0.001159]]
    extent = [(0.089159, 1), (0.425, 0), (0.39225, 0), (0.10915, 1), (0.09465, 1), (0.0823, 2)]
    names = ["shoulder", "upper_arm", "forearm", "wrist1", "wrist2", "wrist3"]
    links = [Link(joint="revolute", a=a[i], alpha=alpha[i], d=d[i], name=names[i],
                  body=RigidBody(mass[i], com[i], cylinder(mass[i], *extent[i])),
                  limits=(-2 * np.pi, 2 * np.pi)) for i in range(6)]
    return Robot(links=links, name="ur5_like", dh="standard")


def panda_like() -> Robot:
    a = [0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088]
    d = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0]
    alpha = [0.0, -np.pi / 2, np.pi / 2, np.pi / 2, -np.pi / 2, np.pi / 2, np.pi / 2]
    mass = [4.970684, 0.646926, 3.228604, 3.587895, 1.225946, 1.666555, 0.735522]
    com = [[0.003875, 0.002081, -0.04762], [-0.003141, -0.02872, 0.003495], [0.027518, 0.039252, -0.066502],
           [-0.05317, 0.104419, 0.027454], [-0.011953, 0.041065, -0.038437], [0.060149, -0.014117, -0.010517],
           [0.010517, -0.004252, 0.061597]]
    # [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] about the centre of mass
    inertia = [[0.70337, 0.70661, 0.009117, -0.000139, 0.019169, 0.006772],
               [0.007962, 0.02811, 0.025995, -0.003925, 0.000704, 0.010254],
               [0.037242, 0.036155, 0.01083, -0.004761, -0.012805, -0.011396],
               [0.025853, 0.019552, 0.028323, 0.007796, 0.008641, -0.001332],
               [0.035549, 0.029474, 0.008627, -0.002117, 0.000229, -0.004037],
               [0.001964, 0.004354, 0.005433, 0.000109, 0.000341, -0.001158],
               [0.012516, 0.010027, 0.004815, -0.000428, -0.000741, -0.001196]]
    lower = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]
    upper = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]
    links = []
    for i in range(7):
        ixx, iyy, izz, ixy, iyz, ixz = inertia[i]
        I = [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]
        links.append(Link(joint="revolute", a=a[i], alpha=alpha[i], d=d[i], name=f"link{i + 1}",
                          body=RigidBody(mass[i], com[i], I), limits=(lower[i], upper[i])))
    return Robot(links=links, name="panda_like", dh="modified")


def main():
    for robot in (ur5_like(), panda_like()):
        path = fm.save(robot, DATA / f"{robot.name}.urdf")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
