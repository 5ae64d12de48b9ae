"""Public numeric API details: external wrenches (Q = J^T f), second-order kinematics."""
import numpy as np

from flexman import Beam, Link, RigidBody, Robot


def planar_2r(l1=0.7, l2=0.4):
    rod = lambda m, l: RigidBody(m, [-l / 2, 0, 0], [0, m * l * l / 12, m * l * l / 12])
    return Robot(links=[Link(a=l1, body=rod(1.0, l1)), Link(a=l2, body=rod(0.5, l2))], gravity=[0, 0, 0])


def test_endpoint_force_enters_as_jacobian_transpose():
    """Static 2R arm: holding an endpoint force F needs tau = -J^T F (closed-form planar J)."""
    l1, l2 = 0.7, 0.4
    robot = planar_2r(l1, l2)
    q = np.array([0.3, 0.9])
    F = np.array([2.0, -1.5, 0.0])
    s1, c1, s12, c12 = np.sin(q[0]), np.cos(q[0]), np.sin(q.sum()), np.cos(q.sum())
    J = np.array([[-l1 * s1 - l2 * s12, -l2 * s12], [l1 * c1 + l2 * c12, l2 * c12]])
    wrench = np.concatenate([F, np.zeros(3)])
    tau = robot.inverse_dynamics(q, np.zeros(2), np.zeros(2), f_ext=[(-1, None, wrench)])
    assert np.allclose(tau, -J.T @ F[:2], atol=1e-12)
    # forward dynamics with the same wrench and the holding torques stays at rest
    qdd = robot.forward_dynamics(q, np.zeros(2), tau, f_ext=[(-1, None, wrench)])
    assert np.allclose(qdd, 0.0, atol=1e-12)


def test_foreshortening_of_a_quadratic_shape():
    """001 eq. 44 shape (x/L)^2: the tip moves back by 1/2 int (w')^2 dx = 2 xi^2 / (3 L)."""
    L, xi = 1.3, 0.05
    beam = Beam(length=L, mass_per_length=1.0, EI=[10.0, 10.0], shapes="polynomial", modes={"y": 1, "z": 0})
    robot = Robot(links=[Link(a=L, beam=beam)], gravity=[0, 0, 0])
    q = np.array([0.0, xi])
    first = robot.frame(q, order=1)[:3, 3]
    second = robot.frame(q, order=2)[:3, 3]
    assert np.allclose(first, [L, xi, 0.0], atol=1e-14)  # tip deflection psi(1) = 1
    assert np.allclose(second, [L - 2 * xi**2 / (3 * L), xi, 0.0], atol=1e-14)


def test_second_order_jacobian_is_the_derivative_of_second_order_kinematics():
    beam = Beam(length=1.0, mass_per_length=1.0, EI=[10.0, 12.0], modes={"y": 2, "z": 1})
    beam2 = Beam(length=1.2, mass_per_length=0.7, EI=[8.0, 8.0], modes={"y": 1, "z": 1})
    robot = Robot(links=[Link(a=1.0, alpha=0.5, beam=beam), Link(joint="prismatic", d=0.6, beam=beam2)])
    rng = np.random.default_rng(2)
    q = rng.normal(size=robot.nq) * 0.1
    point = np.array([0.02, 0.01, -0.03])
    J = robot.jacobian(q, point=point, order=2)
    pos = lambda x: (robot.frame(x, order=2) @ np.append(point, 1.0))[:3]
    h = 1e-6
    for k in range(robot.nq):
        e = np.zeros(robot.nq)
        e[k] = h
        assert np.allclose(J[:3, k], (pos(q + e) - pos(q - e)) / (2 * h), atol=1e-8)
    # second order differs from first order by terms of first order in the deflection
    def gap(scale):
        x = q.copy()
        x[robot.flex_index] *= scale
        return np.abs(robot.jacobian(x, point=point, order=2) - robot.jacobian(x, point=point, order=1)).max()

    # (products with the other link's first-order terms add O(deflection^2) to the gap)
    assert gap(1.0) > 0 and abs(gap(1e-4) / gap(5e-5) - 2.0) < 1e-3
