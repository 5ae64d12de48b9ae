"""Large batches are evaluated in chunks (issue 14): the same numbers as one vectorized call,
with working memory bounded by limits.BATCH_BYTES instead of growing with the batch."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import flexman as fm
from flexman.model import limits

FLEX = fm.examples.load("flx_three_link")
RIGID = fm.examples.load("puma560")


def evaluations(robot, q, qd, qdd):
    tau = qdd[..., : robot.n_joints]
    return {
        "mass_matrix": robot.mass_matrix(q),
        "bias_forces": robot.bias_forces(q, qd),
        "inverse_dynamics": robot.inverse_dynamics(q, qd, qdd),
        "inverse_dynamics_wrench": robot.inverse_dynamics(q, qd, qdd, f_ext=[(-1, [0.1, 0, 0], np.ones(6))]),
        "forward_dynamics": robot.forward_dynamics(q, qd, tau),
        "kinetic_energy": robot.kinetic_energy(q, qd),
        "potential_energy": robot.potential_energy(q),
        "frame": robot.frame(q, 1),
        "jacobian": robot.jacobian(q, point=[0.01, 0.02, 0.0], order=2),
    }


@pytest.mark.parametrize("robot", [FLEX, RIGID], ids=["flexible", "rigid"])
def test_chunks_give_the_numbers_of_one_call(robot, monkeypatch):
    rng = np.random.default_rng(5)
    q = 0.3 * rng.standard_normal((3, 5, robot.nq))
    qd = 0.3 * rng.standard_normal((5, robot.nq))       # broadcast against q's batch
    qdd = 0.3 * rng.standard_normal((3, 5, robot.nq))
    whole = evaluations(robot, q, qd, qdd)
    composite = robot is FLEX  # flexible arms batch the composite-body mass matrix
    nq = robot.nq
    per_state = 8 * 4 * (nq ** 2 + 64 * nq) if composite else 8 * 100 * (nq + 1) ** 2 * robot.n_joints
    monkeypatch.setattr(limits, "BATCH_BYTES", 4 * per_state)   # chunks of 4 states: 15 = 4 + 4 + 4 + 3
    assert limits.chunk_states(robot.nq, robot.n_joints, composite) == 4
    chunked = evaluations(robot, q, qd, qdd)
    for name, ref in whole.items():
        assert chunked[name].shape == ref.shape, name
        np.testing.assert_allclose(chunked[name], ref, rtol=1e-13, atol=1e-12, err_msg=name)


def test_memory_of_a_large_batch_is_bounded():
    """4000 mass matrices of the 7-coordinate arm: one vectorized recursion kept about 38 kB per
    state alive (150 MB here, 3.7 GB for 1e5 states); in chunks the peak stays near BATCH_BYTES."""
    q = np.zeros((4000, FLEX.nq))
    q[:, 3:] = 1e-3
    tracemalloc.start()
    try:
        M = FLEX.mass_matrix(q)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert M.shape == (4000, 7, 7) and np.allclose(M[0], M[-1])
    assert peak < M.nbytes + limits.BATCH_BYTES, f"peak {peak / 1e6:.0f} MB"


def test_chunk_size_follows_the_model_size():
    assert limits.chunk_states(7, 3) >= 100
    assert limits.chunk_states(limits.MAX_NQ, limits.MAX_LINKS) == 1
    assert limits.chunk_states(limits.MAX_NQ, limits.MAX_LINKS, composite=True) >= 30
