"""Stiffness-overestimation margin of the model-based decoupling law (004 sec. 4.3).

Re-derivation. Plant (gravity-free, n_r and n_f the velocity terms):
``M_rr qdd_r + M_rf qdd_f + n_r = Gamma`` and ``M_fr qdd_r + M_ff qdd_f + n_f + K q_f = 0``.
The law (48) uses a model stiffness K_hat:
``Gamma = S_r u + n_r - M_rf M_ff^-1 (n_f + K_hat q_f)`` with ``S_r = M_rr - M_rf M_ff^-1 M_fr``.
Eliminating qdd_f from the plant and subtracting gives ``qdd_r = u - G dK q_f`` with
``dK = K_hat - K`` and ``G = S_r^-1 M_rf M_ff^-1 = M_rr^-1 M_rf S_f^-1`` (block inverse of M,
``S_f = M_ff - M_fr M_rr^-1 M_rf``): eq. (49). Putting qdd_r back into the flexible rows:

    M_ff qdd_f + n_f + (K - H dK) q_f = -M_fr u,    H = M_fr M_rr^-1 M_rf S_f^-1     (50)

H = M_ff S_f^-1 - I has real eigenvalues >= 0 (P S_f^-1 with P = M_fr M_rr^-1 M_rf >= 0).
For a uniform overestimate dK = alpha K, ``M_ff^-1 (K - H dK) = ((1 + alpha) M_ff^-1 - alpha S_f^-1) K``,
whose eigenvalues are all positive exactly when ``alpha M_ff < (1 + alpha) S_f``, i.e. when
``alpha lambda_max(H) < 1`` (the lemma; here necessary and sufficient). For a general dK the
paper takes ``alpha = lambda_max(dK) / lambda_max(K)``; ``omega2`` gives the exact test.

The lemma treats u as an input: it predicts the closed loop when the joint loop is slow
compared with the flexible modes (as in 004). A fast joint loop (high gains) holds the joints
(e ~ 0) and the flexible part then vibrates with the true K whatever K_hat is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import inputs
from .frequencies import stiffness

__all__ = ["StiffnessMargin", "stiffness_margin"]


@dataclass
class StiffnessMargin:
    """alpha: overestimation ratio lambda_max(dK) / lambda_max(K); lambda_max: of H;
    stable: the lemma's alpha * lambda_max < 1; omega2: eigenvalues (real parts, ascending)
    of ``M_ff^-1 (K - H dK)``, the squared frequencies of (50) with u as an input;
    K_closed: the closed-loop stiffness ``K - H dK``; H: the matrix H of (50)."""

    alpha: float
    lambda_max: float
    stable: bool
    omega2: np.ndarray
    K_closed: np.ndarray
    H: np.ndarray


def _flex_stiffness(robot, q):
    f = robot.flex_index
    return stiffness(robot, q)[f, f]


def stiffness_margin(robot, K_hat, q=None):
    """The lemma of 004 sec. 4.3 for ``robot`` (the true plant) at configuration ``q``.

    ``K_hat``: the model's flexible stiffness, an (nf, nf) matrix, a scalar c (K_hat = c K),
    or a model Robot with the same coordinates (its stiffness at q is used).
    """
    if robot.nf == 0:
        raise ValueError("stiffness_margin: the robot has no flexible coordinates")
    q = np.zeros(robot.nq) if q is None else inputs.finite(inputs.real(inputs.state(robot, q), "q"), "q")
    if q.ndim != 1:
        raise ValueError(f"q: expected one configuration of nq = {robot.nq} values, got shape {q.shape}")
    r, f = robot.joint_index, robot.flex_index
    K = _flex_stiffness(robot, q)
    if hasattr(K_hat, "mass_matrix"):
        if K_hat.nq != robot.nq:
            raise ValueError("stiffness_margin: the model robot must have the plant's coordinates")
        K_hat = _flex_stiffness(K_hat, q)
    K_hat = np.asarray(K_hat, dtype=float)
    K_hat = K_hat * K if K_hat.ndim == 0 else K_hat
    if K_hat.shape != K.shape:
        raise ValueError(f"stiffness_margin: K_hat must be {K.shape}, got {K_hat.shape}")
    dK = K_hat - K
    M = robot.mass_matrix(q)
    P = M[f, r] @ np.linalg.solve(M[r, r], M[r, f])
    S_f = M[f, f] - P
    H = np.linalg.solve(S_f.T, P.T).T  # P S_f^-1
    lam_H = float(np.max(np.linalg.eigvals(H).real))
    sym = lambda A: 0.5 * (A + A.T)  # noqa: E731
    alpha = float(np.max(np.linalg.eigvalsh(sym(dK))) / np.max(np.linalg.eigvalsh(sym(K))))
    K_cl = K - H @ dK
    omega2 = np.sort(np.linalg.eigvals(np.linalg.solve(M[f, f], K_cl)).real)
    return StiffnessMargin(alpha=alpha, lambda_max=lam_H, stable=bool(alpha * lam_H < 1.0),
                           omega2=omega2, K_closed=K_cl, H=H)
