"""The extended Kalman filter's exact Jacobians (issue 36): the derivative of the filter's own RK4
prediction (the tangent of its stages), the plant's linearization and the readings' Jacobian,
each against central differences of the function it differentiates; a torque sensor's row against
the inverse dynamics' partial derivatives; and the EKF with the exact transition against the same
filter differencing its prediction (the former mechanism)."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman import trajectory as tr
from flexman.control import Decoupling, Sampled
from flexman.control.estimation import (KalmanFilter, _output_matrices, linearize_plant, rk4_sample,
                                        rk4_transition)
from flexman.control.sampled import design_pose

S = fm.sensors
COUNT = 2 * np.pi / 2 ** 16


@pytest.fixture(scope="module")
def arm():
    """The showcase arm; its compiled model with the partial derivatives built first (the filter's
    Jacobians then come from generated C, as in a compiled run)."""
    robot = fm.examples.load("flx_three_link_lqr")
    robot.compiled(derivatives=True)
    return robot


@pytest.fixture(scope="module")
def state(arm):
    """A moving state off the rest pose: joints and rates of order one, beams bent by millimetres."""
    rng = np.random.default_rng(7)
    nq = arm.nq
    q, qd = rng.uniform(-0.6, 0.6, nq), rng.uniform(-1.0, 1.0, nq)
    q[3:], qd[3:] = 0.01 * q[3:], 0.1 * qd[3:]
    return q, qd, rng.uniform(-20.0, 20.0, arm.n_joints)


def central(fun, z, eps=1e-6):
    """Central differences of fun (a vector function) at z, one column per entry of z."""
    return np.column_stack([(fun(z + eps * e) - fun(z - eps * e)) / (2 * eps) for e in np.eye(len(z))])


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("steps", [1, 3])
def test_transition_is_the_derivative_of_the_rk4_prediction(arm, state, steps):
    q, qd, tau = state
    x, n, T = np.concatenate([q, qd]), 2 * arm.nq, 2e-3
    x_T, F, G = rk4_transition(arm, x, tau, T, steps)
    assert np.array_equal(x_T, rk4_sample(arm, x, tau, T, steps))  # the same steps, operation for operation
    J = central(lambda z: rk4_sample(arm, z[:n], z[n:], T, steps), np.concatenate([x, tau]))
    assert rel(np.hstack([F, G]), J) < 1e-6
    assert rel(F, J[:, :n]) < 1e-6 and rel(G, J[:, n:]) < 1e-6


def test_linearized_plant_is_the_derivative_of_the_forward_dynamics(arm, state):
    q, qd, tau = state
    nq = arm.nq
    A, B = linearize_plant(arm, q, qd, tau)
    J = central(lambda z: np.asarray(arm.forward_dynamics(z[:nq], z[nq:2 * nq], z[2 * nq:])),
                np.concatenate([q, qd, tau]))
    assert np.array_equal(A[:nq], np.hstack([np.zeros((nq, nq)), np.eye(nq)])) and not np.any(B[:nq])
    assert rel(A[nq:], J[:, :2 * nq]) < 1e-6 and rel(B[nq:], J[:, 2 * nq:]) < 1e-6


def test_readings_jacobian(arm, state):
    """Encoders, a strain gauge, a torque sensor and a gyroscope: C, D against central differences of
    the readings at the filter's own accelerations, y(x, tau) = h(q, qd, FD(q, qd, tau))."""
    q, qd, tau = state
    nq = arm.nq
    sensors = fm.sensors.SensorSet(arm, [S.encoder(arm, 0), S.encoder(arm, 2), S.strain_gauge(arm, "fore", 0.0, 0.05),
                                         S.torque(arm, 1), S.gyroscope(arm, "fore")])

    def readings(z):
        return sensors.h(z[:nq], z[nq:2 * nq], arm.forward_dynamics(z[:nq], z[nq:2 * nq], z[2 * nq:]))

    C, D = _output_matrices(sensors, arm, q, qd, tau)
    CD, J = np.hstack([C, D]), central(readings, np.concatenate([q, qd, tau]))
    assert rel(CD[:3], J[:3]) < 1e-6  # encoders, gauge: exact rows in q
    assert np.array_equal(C[:3, :nq], np.stack([sensors.linear_rows[k] for k in range(3)])) and not np.any(C[:3, nq:])
    assert rel(CD[4:], J[4:]) < 1e-5  # the gyroscope's rows are SensorSet.jacobians' (differences of its own)
    # the torque sensor: its inverse-dynamics derivatives through qdd = FD(q, qd, tau) cancel, to what
    # differencing (of the readings, or of those derivatives' sum) leaves of terms this large
    qdd = arm.forward_dynamics(q, qd, tau)
    dq, dqd, M = arm.inverse_dynamics_derivatives(q, qd, qdd)
    Fq, Fqd, Ft = arm.forward_dynamics_derivatives(q, qd, tau)
    terms = np.abs(np.concatenate([dq[1], dqd[1]])).max()
    composed = np.concatenate([dq[1] + M[1] @ Fq, dqd[1] + M[1] @ Fqd, M[1] @ Ft])
    assert np.abs(composed - CD[3]).max() < 1e-10 * terms and np.abs(J[3] - CD[3]).max() < 1e-8 * terms
    assert not np.any(C[3]) and np.array_equal(D[3], [0.0, 1.0, 0.0])


class DifferencedEKF(KalmanFilter):
    """The EKF as it was: its transition Jacobian by central differences of its RK4 prediction."""

    def predict(self, tau, eps=1e-6):
        n, z = len(self.x), np.concatenate([self.x, tau])
        J = central(lambda z: rk4_sample(self.model, z[:n], z[n:], self.period, self.steps), z, eps)
        self.Pk = J[:, :n] @ self.Pk_post @ J[:, :n].T + J[:, n:] @ self.W @ J[:, n:].T
        self.x = rk4_sample(self.model, self.x, tau, self.period, self.steps)
        return self.x.copy()


def test_extended_filter_equals_the_differenced_one(arm):
    """The showcase's move under LQG with the extended filter (encoders, gauges, a torque sensor, one
    sample of delay), Python loop: the estimates and the final covariances with the exact transition
    equal those of the filter differencing its prediction to what differencing leaves."""
    Q, R = arm.controller["lqr_weights"]
    law = Decoupling(arm, tr.rest_to_rest([0.0, 0.0, 0.0], [0.2, 0.1, -0.1], 0.5), gp=100.0, gv=20.0, lqr_at=0.5,
                     lqr_weights=(np.array(Q), R))
    sensors = ([S.encoder(arm, j, 2 ** 16, noise=COUNT) for j in range(3)]
               + [S.strain_gauge(arm, link, 0.0, 0.05, noise=2e-6) for link in ("upper", "fore")]
               + [S.torque(arm, 1, noise=0.05)])
    runs = []
    for kind in (KalmanFilter, DifferencedEKF):
        kf = kind(arm, fm.sensors.SensorSet(arm, sensors), 1e-3, design_pose(arm, law), 0.5, extended=True)
        lqg = Sampled(law, 1000.0, delay=1, estimator=kf, torque_noise=0.5, seed=2)
        res = fm.simulate(arm, 0.2, dt=1e-3, controller=lqg, backend="compiled", loop="python", progress=False)
        runs.append((res, kf))
    (a, exact), (b, differenced) = runs
    assert a.stats["samples"] == 200 and np.ptp(a.q[:, 0]) > 0.05
    x = b.estimate["x"]
    assert np.abs(a.estimate["x"] - x).max() < 1e-7 * np.abs(x).max()
    assert rel(exact.Pk, differenced.Pk) < 1e-6 and rel(exact.Pk_post, differenced.Pk_post) < 1e-6
    assert rel(exact.Pk, exact.P) > 1e-3  # the covariance did move away from the steady state's
