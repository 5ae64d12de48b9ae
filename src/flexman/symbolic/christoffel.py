"""Energy-based Lagrange equations: M from the kinetic energy, b from Christoffel symbols.

M is traced from the kinetic energy of the 4x4 recursion by polarization
(``M_kk = 2 T(e_k)``, ``M_kl = T(e_k + e_l) - T(e_k) - T(e_l)`` with unit velocities), so it is
``sum over bodies of J^T (mass) J`` without forming J. Its partial derivatives, and those of
the potential energy (gravity + strain), are taken by SymEngine on the expanded expressions:

    b_i = sum_jk (dM_ij/dq_k - 1/2 dM_jk/dq_i) qd_j qd_k + dV/dq_i + damping,

then recorded back on the tape. Expansion grows quickly with the arm: small arms only (beyond
``LIMIT`` expression nodes the derivation falls back to Book's recursion, noted in eom.notes).
"""
from __future__ import annotations

import numpy as np
import symengine as se

from ..dynamics import lagrange4 as l4
from ..dynamics import motors
from .convert import from_symengine, to_symengine, tree_sizes
from .program import Program

LIMIT = 200_000


def potential(model, q):
    """V(q) = -sum m g . r + strain energy, traced through the numeric routine."""
    return l4.potential_energy(model, q)


def lagrange_terms(robot, model, x, notes):
    q, qd = x["q"], x["qd"]
    tape = qd[0].tape
    nq = q.shape[-1]
    pairs = [(k, l) for k in range(nq) for l in range(k, nq)]
    V = np.zeros((len(pairs), nq))
    for p, (k, l) in enumerate(pairs):
        V[p, k] = V[p, l] = 1.0
    T = l4.kinetic_energy(model, np.broadcast_to(q, (len(pairs), nq)), V)
    Tp = dict(zip(pairs, T))
    M = np.empty((nq, nq), dtype=object)
    for k, l in pairs:
        M[k, l] = M[l, k] = 2.0 * Tp[k, k] if k == l else Tp[k, l] - Tp[k, k] - Tp[l, l]
    pot = potential(model, q)
    pnames = [n for n, i in tape.input_index.items() if not n.startswith(("q", "tau"))]
    prog = Program.from_tape("energy", tape, {"q": [f"q{k + 1}" for k in range(nq)], "p": pnames},
                             {"M": M, "V": np.array([pot], dtype=object)})
    size = tree_sizes(prog)
    if sum(size.get(a, 1) for g in prog.outputs.values() for _, _, a in g[1]) > LIMIT:
        notes.append("lagrange: expressions too large for symbolic differentiation; traced Book's recursion instead")
        return None
    ex = to_symengine(prog)
    Ms, Vs = ex["M"], ex["V"][0]
    qs = [se.Symbol(f"q{k + 1}") for k in range(nq)]
    qds = [se.Symbol(f"qd{k + 1}") for k in range(nq)]
    dM = [[[se.diff(Ms[i, j], qs[k]) for k in range(nq)] for j in range(nq)] for i in range(nq)]
    b = []
    for i in range(nq):
        e = se.diff(Vs, qs[i])
        for j in range(nq):
            for k in range(nq):
                c = dM[i][j][k] - dM[j][k][i] / 2
                if c != 0:
                    e += c * qds[j] * qds[k]
        b.append(e)
    memo = {}
    b = from_symengine(tape, np.array(b + [None], dtype=object)[:-1], memo)
    for i, lk in enumerate(model.links):  # non-conservative forces: joint viscous friction, beam damping
        if lk.viscous:
            b[i] = b[i] + lk.viscous * qd[i]
        if lk.beam is not None and np.any(lk.beam.Cd):
            idx = list(range(lk.flex.start, lk.flex.stop))
            b[idx] = b[idx] + qd[idx] @ np.asarray(lk.beam.Cd).T
    motors.dissipative_forces(model, b, qd)  # elastic joints' dampers and motor friction
    notes.append("lagrange: M from the kinetic energy, b from Christoffel symbols and dV/dq (SymEngine)")
    return M, b, None
