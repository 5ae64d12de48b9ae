"""Identification regressor of a rigid arm: the joint torques are linear in the inertial
parameters, ``tau = Y(q, qd, qdd) @ pi``.

Per link, ``pi`` holds the ten standard inertial parameters of everything rigidly attached to
the link's own DH frame (its body, a hub, the payload on the last link, a rod without modes),
in Pinocchio's order for dynamic parameters::

    m, MX, MY, MZ, XX, XY, YY, XZ, YZ, ZZ      (names: m1, MX1, ..., ZZ1, m2, ...)

with ``(MX, MY, MZ) = m c`` (first moments) and ``XX .. ZZ`` the inertia about the frame origin
(not about the centre of mass): in these the torques are linear, in (m, c, I_c) they are not.
Optional columns follow for all joints: armature ``Ia<i>`` (tau_i += Ia_i qdd_i), viscous
friction ``Fv<i>`` (+= Fv_i qd_i) and Coulomb friction ``Fc<i>`` (+= Fc_i sign(qd_i)).

Y is computed by the 4x4 recursion (:func:`flexman.dynamics.lagrange4.inverse_dynamics`) run
once for all columns: every link's second-moment matrix ``J = int h h^T dm`` is replaced by a
stack of unit matrices, one per column, and since the torques are linear in J, the result at
stack entry k is column k exactly (no differencing).

Not every column can be identified from torques: :func:`base_parameters` finds a largest set
of independent columns by QR with column pivoting on random samples, expresses the other
columns through them and names the combinations (a ``base parameter`` such as
``ZZ1 + YY2 + 0.09 m2``) and the parameters that have no effect at all.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dynamics import lagrange4
from ..dynamics.structure import build
from ..model import inputs
from ..model.errors import ModelError

INERTIAL = ("m", "MX", "MY", "MZ", "XX", "XY", "YY", "XZ", "YZ", "ZZ")  # Pinocchio's dynamic parameter order
_INERTIA_ENTRIES = {"XX": (0, 0), "XY": (0, 1), "YY": (1, 1), "XZ": (0, 2), "YZ": (1, 2), "ZZ": (2, 2)}


def check_rigid(robot, what="regressor"):
    """Refuse, naming ``what``, an arm the rigid regressor does not describe (flexible links)."""
    if not robot.is_rigid:
        raise ValueError(f"{what}: the robot has flexible links; the rigid identification regressor needs a rigid "
                         "arm (identify beam parameters with fm.identify(..., parameters=[...]))")


def parameter_names(robot, armature=False, viscous=False, coulomb=False) -> list:
    """Names of the regressor's columns, in order (with mimic joints: numbered by ``robot.links``,
    the followers' included)."""
    count = len(robot.links) if getattr(robot, "mimic", None) else robot.n_joints
    names = [f"{p}{i + 1}" for i in range(count) for p in INERTIAL]
    for flag, tag in ((armature, "Ia"), (viscous, "Fv"), (coulomb, "Fc")):
        if flag:
            names += [f"{tag}{i + 1}" for i in range(count)]
    return names


def pseudo_inertia(pi) -> np.ndarray:
    """Second-moment matrix J (..., 4, 4) from ten standard parameters (..., 10) in INERTIAL order."""
    pi = np.asarray(pi, dtype=float)
    m, mc = pi[..., 0], pi[..., 1:4]
    Io = np.zeros(pi.shape[:-1] + (3, 3))
    for k, name in enumerate(INERTIAL[4:]):
        r, c = _INERTIA_ENTRIES[name]
        Io[..., r, c] = Io[..., c, r] = pi[..., 4 + k]
    J = np.zeros(pi.shape[:-1] + (4, 4))
    J[..., :3, :3] = 0.5 * np.trace(Io, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - Io
    J[..., :3, 3] = J[..., 3, :3] = mc
    J[..., 3, 3] = m
    return J


def from_pseudo_inertia(J) -> np.ndarray:
    """The ten standard parameters (INERTIAL order) of a second-moment matrix J (4, 4)."""
    S = np.asarray(J[:3, :3], dtype=float)
    Io = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3]] + [Io[_INERTIA_ENTRIES[n]] for n in INERTIAL[4:]])


def standard_parameters(robot, armature=False, viscous=False, coulomb=False) -> np.ndarray:
    """The robot's own parameter vector ``pi`` (columns of :func:`regressor`, same order)."""
    check_rigid(robot, "standard_parameters")
    model = build(getattr(robot, "full", robot))  # (mimic joints: every link's parameters, the followers' included)
    out = [from_pseudo_inertia(lk.body_tip + lk.body_base) for lk in model.links]
    values = list(np.concatenate(out))
    for flag, key in ((armature, "armature"), (viscous, "viscous"), (coulomb, "coulomb")):
        if flag:
            values += [getattr(link, f"joint_{key}") for link in robot.links]  # (drives' rotors and friction included)
    return np.array(values)


def regressor(robot, q, qd, qdd, armature=False, viscous=False, coulomb=False) -> np.ndarray:
    """Y (..., n_joints, P) with ``Y @ standard_parameters(robot, ...) == robot.inverse_dynamics``
    for a rigid arm; columns named by :func:`parameter_names`. Mimic joints (``q_full = G q + c``):
    ``Y = G^T Y_full(G q + c, G qd, G qdd)``, the full robot's columns (every link's, friction
    columns per link) reduced like its torques."""
    check_rigid(robot)
    q, qd, qdd = inputs.states(robot, q=q, qd=qd, qdd=qdd)
    q, qd, qdd = (inputs.finite(inputs.real(a, n), n) for a, n in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
    if getattr(robot, "mimic", None):
        G, c = robot.mimic_map()
        Y = regressor(robot.full, q @ G.T + c, qd @ G.T, qdd @ G.T, armature, viscous, coulomb)
        return np.swapaxes(G, 0, 1) @ Y
    q, qd, qdd = np.broadcast_arrays(q, qd, qdd)
    batch, n = q.shape[:-1], robot.n_joints
    flat = [a.reshape(-1, n) for a in (q, qd, qdd)]
    count = flat[0].shape[0]
    cols = 10 * n
    units = pseudo_inertia(np.eye(10)).reshape(10, 16)  # (10, 16): J of each unit parameter, flattened
    model = build(robot)
    parents = [lk.parent for lk in model.links]
    Y = np.zeros((count, n, cols))
    chunk = 4000  # keeps the (chunk, 4, 4) frames of every link near tens of MB
    for s in range(0, count, chunk):
        recs = lagrange4.forward(model, *(a[s:s + chunk] for a in flat))
        # tau_i = sum_j tr(dW_j/dq_i J_j Wdd_j^T) over the links j carried by joint i: with J_j the
        # unit matrices of link j's ten parameters, column (j, k) of row i is the contraction of
        # (dW_j/dq_i)^T Wdd_j with U_k; dW_j/dq_i = dW_parent(j)/dq_i A_j, dW_i/dq_i = W0_i A1_i
        dW = [None] * n  # dW[j]: {i: dW_j/dq_i}
        for j, rec in enumerate(recs):
            own = {j: rec["W0"] @ rec["A1"]}
            if parents[j] >= 0:
                own.update({i: d @ rec["A"] for i, d in dW[parents[j]].items()})
            dW[j] = own
            Wdd = rec["Wdd"]
            for i, d in own.items():
                X = (np.swapaxes(d, -1, -2) @ Wdd).reshape(-1, 16)
                Y[s:s + chunk, i, 10 * j:10 * j + 10] = X @ units.T
    extra = [np.eye(n)[None] * a[:, :, None] for a, flag in
             ((flat[2], armature), (flat[1], viscous), (np.sign(flat[1]), coulomb)) if flag]
    if extra:
        Y = np.concatenate([Y] + extra, axis=-1)
    return Y.reshape(batch + Y.shape[1:])


@dataclass
class BaseParameters:
    """Identifiable combinations of the standard parameters (see :func:`base_parameters`).

    ``beta = pi[independent] + K @ pi[dependent]`` and ``Y[..., independent] @ beta == Y @ pi``.
    ``unidentifiable`` lists the columns with no effect on the torques; ``regrouped`` maps each
    other dependent column to the base parameters it is absorbed into."""

    names: list            # all column names (standard order)
    independent: np.ndarray  # indices of the base columns
    dependent: np.ndarray    # indices of the other columns
    K: np.ndarray            # (len(independent), len(dependent))
    rank: int

    @property
    def base_names(self) -> list:
        """Each base parameter as its combination, e.g. ``ZZ1 + YY2 + 0.09*m2``."""
        out = []
        for r, i in enumerate(self.independent):
            terms = [self.names[i]]
            for c, d in enumerate(self.dependent):
                k = self.K[r, c]
                if k:
                    terms.append(f"{'-' if k < 0 else '+'} {_coef(abs(k))}{self.names[d]}")
            out.append(" ".join(terms))
        return out

    @property
    def unidentifiable(self) -> list:
        """Columns that do not change the torques at all."""
        return [self.names[d] for c, d in enumerate(self.dependent) if not np.any(self.K[:, c])]

    @property
    def regrouped(self) -> dict:
        """{dependent column: [base columns it is absorbed into]} for the others."""
        return {self.names[d]: [self.names[self.independent[r]] for r in np.flatnonzero(self.K[:, c])]
                for c, d in enumerate(self.dependent) if np.any(self.K[:, c])}

    def project(self, pi) -> np.ndarray:
        """Base parameter values of a full parameter vector (..., P)."""
        pi = np.asarray(pi, dtype=float)
        return pi[..., self.independent] + pi[..., self.dependent] @ self.K.T

    def describe(self) -> str:
        """One line per fact: the base combinations and the parameters without effect."""
        lines = [f"{self.rank} identifiable combinations of {len(self.names)} parameters"]
        lines += [f"  {b}" for b in self.base_names]
        if self.unidentifiable:
            lines.append("no effect on the torques: " + ", ".join(self.unidentifiable))
        return "\n".join(lines)


def _coef(k):
    return "" if abs(k - 1.0) < 1e-12 else f"{k:.6g}*"


def random_states(robot, samples, rng):
    """Random (q, qd, qdd), each (samples, n_joints), within the joint limits where given."""
    n = robot.n_joints
    links = robot.joint_links  # (mimic joints: the independent ones)
    lo = np.array([l.limits[0] if l.limits else (-np.pi if l.joint == "revolute" else -0.5) for l in links])
    hi = np.array([l.limits[1] if l.limits else (np.pi if l.joint == "revolute" else 0.5) for l in links])
    q = rng.uniform(lo, hi, (samples, n))
    return q, rng.uniform(-2.0, 2.0, (samples, n)), rng.uniform(-5.0, 5.0, (samples, n))


def base_parameters(robot, armature=False, viscous=False, coulomb=False, samples=None, seed=0, tol=1e-9,
                    Y=None) -> BaseParameters:
    """Identifiable (base) parameters by QR with column pivoting of Y stacked over random states.

    Columns are scaled to unit norm first (the parameters have different units); a column below
    1e-10 of the largest is taken as zero. The numerical rank counts the pivots
    |R_kk| > tol |R_00|; the pivoted columns are the base,
    the rest are ``R11^-1 R12`` combinations of them (entries below 1e-9 of the largest set to
    zero: they are roundoff). ``Y``: a stacked regressor (rows, P) of one's own (e.g. of the
    measured trajectory) instead of random states."""
    from scipy.linalg import qr, solve_triangular

    names = parameter_names(robot, armature, viscous, coulomb)
    if Y is None:
        rng = np.random.default_rng(seed)
        samples = samples or max(50, 2 * len(names))
        Y = regressor(robot, *random_states(robot, samples, rng), armature, viscous, coulomb)
    W = np.asarray(Y, dtype=float).reshape(-1, len(names))
    scale = np.linalg.norm(W, axis=0)
    none = scale <= 1e-10 * max(scale.max(), 1e-300)  # roundoff columns: scaled up they would look independent
    W = np.where(none, 0.0, W)
    scale[none] = 1.0
    _, R, piv = qr(W / scale, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > tol * diag[0])) if diag.size and diag[0] > 0 else 0
    K = solve_triangular(R[:rank, :rank], R[:rank, rank:])
    K = K * scale[piv[rank:]][None, :] / scale[piv[:rank]][:, None]  # back to unscaled columns
    big = np.abs(K).max() if K.size else 0.0
    K[np.abs(K) <= 1e-9 * max(big, 1.0)] = 0.0
    order = np.argsort(piv[:rank])  # base columns in the standard order
    return BaseParameters(names, piv[:rank][order], piv[rank:], K[order], rank)
