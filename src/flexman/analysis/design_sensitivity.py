"""Exact derivatives of the dynamics with respect to named physical parameters:
``fm.analysis.sensitivity(robot, quantity, parameters, q=..., qd=..., qdd=...)``.

How: ``fm.derive(robot, parameters="symbolic")`` traces the robot's recursion into a
straight-line program whose inputs include the physical parameters (DH lengths, the standard
inertial parameters of every body, beam properties, gravity, armature; see
:mod:`flexman.symbolic.params`). :func:`forward_mode` replays that program on a fresh tape
carrying, beside every value v, its derivatives dv/dtheta (forward-mode differentiation of the
program: d(a b) = a db + b da, d sin a = cos a da, ...). The seeds are the derivatives of
the program's parameter inputs with respect to the physical parameters asked for (a link's
mass moves its first moments m c and its inertia about the frame origin, ``EI<i>`` moves both
bending stiffnesses ...), so the replay yields d(output)/d(physical parameter) directly. The
new program is generated as vectorized NumPy code and evaluated: exact derivatives (to
roundoff), no differencing step to choose.

Natural frequencies (at rest, joints free as in ``robot.natural_frequencies(q)``): with the
stiffness K = d tau(q, 0, 0)/dq (itself a forward-mode replay in q, then replayed again in
the parameters) and the mass matrix M, each eigenpair K phi = w^2 M phi with phi^T M phi = 1
changes by ``d(w^2) = phi^T (dK - w^2 dM) phi`` (differentiate K phi = lam M phi and multiply
by phi^T: the terms in d phi cancel because K - lam M is symmetric and annihilates phi), so
``dw = d(w^2) / (2 w)``; valid for distinct frequencies.

A parameter whose value is 0 is no symbol in the derived program (zeros are folded); for
its derivative the program is derived from a copy of the robot with that value made non-zero
and evaluated at the true values (the program is exact for any values).
Clamped-mass beam shapes follow the loads; their derivative holds the shapes fixed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import inputs
from . import physical

QUANTITIES = ("inverse_dynamics", "mass_matrix", "frequencies")
_PLACEHOLDER = 0.37  # a generic non-zero value for parameters that are 0


# ----- forward-mode replay of a straight-line program ----------------------------------------------


def forward_mode(program, seeds: dict, constants=None, k=None):
    """Replay ``program`` on a new tape with derivatives. ``seeds``: {input name: (k,) array of
    numbers or tracers} (inputs not named have zero derivative); ``constants``: {input name:
    number} substituted (folded) instead of inputs. Returns (tape, {name: value}, {name: (k,)
    object array of derivatives}) for inputs, intermediates and output labels."""
    from ..symbolic.tracer import Tape, cos, sin, sqrt

    constants = constants or {}
    tape = Tape()
    if k is None:
        k = len(next(iter(seeds.values()))) if seeds else 0
    zero = np.zeros(k, dtype=object)
    zero[:] = 0.0
    val, der = {}, {}
    for name in program.input_names:
        val[name] = constants[name] if name in constants else tape.input(name)
        d = zero.copy()
        if name in seeds:
            d[:] = list(seeds[name])
        der[name] = d

    def get(a):
        return (val[a], der[a]) if isinstance(a, str) else (a, zero)

    for target, op, args in program.body:
        if op in ("add", "sub", "mul", "div"):
            (a, da), (b, db) = get(args[0]), get(args[1])
            if op == "add":
                v, d = a + b, da + db
            elif op == "sub":
                v, d = a - b, da - db
            elif op == "mul":
                v, d = a * b, da * b + a * db
            else:
                v = a / b
                d = (da - v * db) / b
        elif op == "neg":
            a, da = get(args[0])
            v, d = -a, -da
        elif op == "sin":
            a, da = get(args[0])
            v, d = sin(a), cos(a) * da
        elif op == "cos":
            a, da = get(args[0])
            v, d = cos(a), -sin(a) * da
        elif op == "sqrt":
            a, da = get(args[0])
            v = sqrt(a)
            d = da / (2.0 * v) if any(not _is_zero(x) for x in da) else zero
        elif op == "pow":
            (a, da), n = get(args[0]), float(args[1])
            v, d = a ** n, (n * a ** (n - 1.0)) * da
        else:
            raise ValueError(f"forward_mode: unknown instruction {op!r}")
        val[target], der[target] = v, np.asarray(d, dtype=object)
    for _, entries in program.outputs.values():
        for label, negated, atom in entries:
            v, d = get(atom)
            val[label], der[label] = (-v, -d) if negated else (v, d)
    return tape, val, der


def _is_zero(x):
    return not hasattr(x, "tape") and float(x) == 0.0


def _numpy_program(name, tape, inputs, outputs):
    """(Program, callable) of NumPy code from tracer outputs ({group: object array})."""
    from ..symbolic import emit
    from ..symbolic.program import Program

    prog = Program.from_tape(name, tape, inputs, outputs)
    env = {}
    source = "import numpy as np\n\n" + emit.function_source("numpy", prog, name)
    exec(compile(source, f"<flexman sensitivity {name}>", "exec"), env)  # our own generated code
    return prog, env[name]


def output_labels(program, group):
    """(shape, entry labels) of one output group of a program."""
    shape, entries = program.outputs[group]
    return shape, [label for label, _, _ in entries]


# ----- physical parameters -> the derived program's parameter inputs --------------------------------


def _body_seeds(body, field):
    """{standard parameter stem: d(value)/d(field)} for a body given by mass, com, inertia about com."""
    m, c = body.mass, np.asarray(body.com, float)
    stems = {"XX": (0, 0), "XY": (0, 1), "XZ": (0, 2), "YY": (1, 1), "YZ": (1, 2), "ZZ": (2, 2)}
    if field == "mass":
        dIo = np.dot(c, c) * np.eye(3) - np.outer(c, c)
        out = {"m": 1.0, "MX": c[0], "MY": c[1], "MZ": c[2]}
    elif field in ("cx", "cy", "cz"):
        k = "xyz".index(field[1])
        e = np.eye(3)[k]
        dIo = m * (2 * c[k] * np.eye(3) - np.outer(e, c) - np.outer(c, e))
        out = {f"M{'XYZ'[k]}": m}
    else:
        r, cc = physical._INERTIA[field]
        dIo = np.zeros((3, 3))
        dIo[r, cc] = 1.0
        out = {}
    out.update({stem: dIo[rc] for stem, rc in stems.items()})
    return out


def symbol_seeds(robot, names) -> dict:
    """{symbol of the derived program: (len(names),) derivatives with respect to the named
    physical parameters}."""
    seeds = {}

    def add(sym, j, value):
        if value:
            seeds.setdefault(sym, np.zeros(len(names)))[j] += value

    n = robot.n_joints
    for j, name in enumerate(names):
        owner, field, i = physical.split(name)
        if owner == "robot" or field in ("a", "d", "px", "py", "pz", "Ia"):
            add(f"{field}{'' if i is None else i + 1}", j, 1.0)
        elif owner == "beam":
            for f in (("EIy", "EIz") if field == "EI" else (field,)):
                add(f"{f}{i + 1}", j, 1.0)
        else:
            if owner == "payload":
                from ..model import RigidBody

                body, suffix, k = robot.payload or RigidBody(), "", n
            elif owner == "hub":
                link = robot.links[i]
                body, suffix, k = link.hub, ("h" if link.is_flexible else ""), i + 1
            else:
                body, suffix, k = robot.links[i].body, "", i + 1
            for stem, v in _body_seeds(body, field).items():
                add(f"{stem}{suffix}{k}", j, v)
    return seeds


def probe_robot(robot, names):
    """The robot with every named parameter that is 0 made non-zero (see the module docstring)."""
    zeros = {n: _PLACEHOLDER for n in names if physical.value(robot, n) == 0.0}
    if not zeros:
        return robot
    # a body parameter that is zero may act through standard parameters that are zero too: make
    # the whole body generic (mass, centre of mass and products of inertia non-zero)
    for n in list(zeros):
        owner, field, i = physical.split(n)
        if owner in ("link", "hub", "payload") and field in physical.BODY:
            pre = {"hub": "hub_", "payload": "payload_"}.get(owner, "")
            num = "" if i is None or owner == "payload" else str(i + 1)
            for f in physical.BODY:
                key = "payload" if (owner == "payload" and f == "mass") else f"{pre}{f}{num}"
                if physical.value(robot, key) == 0.0:
                    zeros.setdefault(key, _PLACEHOLDER * (0.5 if f.startswith("I") else 1.0))
    return physical.with_values(robot, zeros)


# ----- the public function ---------------------------------------------------------------------


@dataclass
class Sensitivity:
    """``derivative[j]`` = d(value)/d(parameters[j]) (same shape as ``value``); ``values`` the
    parameters' current values; ``relative`` = (p / f) df/dp where f != 0 (dimensionless)."""

    quantity: str
    parameters: list
    values: np.ndarray
    value: np.ndarray
    derivative: np.ndarray
    labels: list

    @property
    def relative(self):
        with np.errstate(divide="ignore", invalid="ignore"):
            p = self.values.reshape((-1,) + (1,) * np.ndim(self.value))
            return np.where(self.value != 0, p * self.derivative / self.value, np.nan)

    def to_dict(self) -> dict:
        return {"quantity": self.quantity, "labels": self.labels,
                "value": np.asarray(self.value).reshape(-1).tolist(),
                "parameters": [{"name": n, "value": float(v), "derivative": np.asarray(d).reshape(-1).tolist()}
                               for n, v, d in zip(self.parameters, self.values, self.derivative)]}

    def table(self) -> str:
        flat_v = np.asarray(self.value).reshape(-1)
        flat_d = self.derivative.reshape(len(self.parameters), -1)
        width = max(len(lb) for lb in self.labels) if self.labels else 5
        head = f"{'':<{width}}  {'value':>12}" + "".join(f"  {'d/d' + n:>14}" for n in self.parameters)
        lines = [head]
        for r, lb in enumerate(self.labels):
            lines.append(f"{lb:<{width}}  {flat_v[r]:12.6g}" + "".join(f"  {flat_d[j, r]:14.6g}"
                                                                    for j in range(len(self.parameters))))
        return "\n".join(lines)


def model_sensitivity(robot, quantity, parameters, q=None, qd=None, qdd=None) -> Sensitivity:
    """Exact derivatives of a quantity of the model at one state ("inverse_dynamics",
    "mass_matrix", "frequencies"); see :func:`flexman.analysis.sensitivities.sensitivity`."""
    from ..symbolic import derive
    from ..symbolic.params import parameter_values

    if quantity not in QUANTITIES:
        raise ValueError(f"quantity: unknown {quantity!r}; use one of {', '.join(QUANTITIES)}")
    names = physical.check(robot, parameters)
    nq = robot.nq
    q = np.zeros(nq) if q is None else inputs.physical_state(inputs.real(inputs.state(robot, q), "q"), "q", "position")
    probe = probe_robot(robot, names)
    eom = derive(probe, formulation="book", parameters="symbolic", external=False, reduce_mass_matrix=False)
    actual = parameter_values(robot)
    pnames = list(eom.param_values)
    p = np.array([actual.get(n, 0.0) for n in pnames])
    seeds = symbol_seeds(robot, names)
    missing = [s for s in seeds if s not in pnames and np.any(seeds[s])]
    if missing:
        raise ValueError(f"sensitivity: parameter symbols {', '.join(missing)} are not in the derived model")
    values = np.array([physical.value(robot, n) for n in names])
    k = len(names)
    if quantity == "inverse_dynamics":
        qd = np.zeros(nq) if qd is None else inputs.physical_state(inputs.real(inputs.state(robot, qd, "qd"), "qd"), "qd", "rate")
        qdd = np.zeros(nq) if qdd is None else inputs.physical_state(
            inputs.real(inputs.state(robot, qdd, "qdd"), "qdd"), "qdd", "acceleration")
        prog = eom.program("inverse_dynamics")
        value, deriv = _evaluate(prog, "tau", seeds, k, {"q": q, "qd": qd, "qdd": qdd, "p": p})
        return Sensitivity(quantity, names, values, value, deriv, [f"tau[{c}]" for c in robot.coordinate_names])
    if quantity == "mass_matrix":
        prog = eom.program("mass_matrix")
        value, deriv = _evaluate(prog, "M", seeds, k, {"q": q, "p": p})
        cn = robot.coordinate_names
        return Sensitivity(quantity, names, values, value, deriv, [f"M[{a},{b}]" for a in cn for b in cn])
    if qd is not None:
        qd = inputs.physical_state(inputs.real(inputs.state(robot, qd, "qd"), "qd"), "qd", "rate")
        return _frequencies_about_motion(robot, eom, q, qd, p, seeds, names, values)
    return _frequencies(robot, eom, q, p, seeds, names, values)


def _evaluate(prog, group, seeds, k, arrays, constants=None):
    """(value, derivative (k, *shape)) of one output group of ``prog`` by a forward-mode replay."""
    shape, labels = output_labels(prog, group)
    tape, val, der = forward_mode(prog, seeds, constants, k)
    out_v = np.array([val[lb] for lb in labels] + [None], dtype=object)[:-1].reshape(shape)
    out_d = np.array([der[lb][j] for j in range(k) for lb in labels] + [None], dtype=object)[:-1]
    out_d = out_d.reshape((k,) + tuple(shape))
    ins = {g: n for g, n in prog.inputs.items() if g not in (constants or {}) and n}
    _, fn = _numpy_program("sensitivity", tape, ins, {"value": out_v, "d": out_d})
    v, d = fn(*[np.asarray(arrays[g], float) for g in ins])
    return np.asarray(v), np.asarray(d)


def _frequencies(robot, eom, q, p, seeds, names, values):
    """Frequencies at rest (joints free) and their derivatives by the eigenvector formula."""
    from scipy.linalg import eigh

    nq = robot.nq
    prog = eom.program("inverse_dynamics")
    zeros = {n: 0.0 for g in ("qd", "qdd") for n in prog.inputs[g]}
    qnames = prog.inputs["q"]
    # K = d tau(q, 0, 0) / dq: a replay in q (qd = qdd = 0 folded), as a program of q and p ...
    tape, _, der = forward_mode(prog, {n: np.eye(nq)[c] for c, n in enumerate(qnames)}, zeros, nq)
    _, labels = output_labels(prog, "tau")
    Kt = np.array([der[lb][c] for lb in labels for c in range(nq)] + [None], dtype=object)[:-1].reshape(nq, nq)
    from ..symbolic.program import Program

    kprog = Program.from_tape("stiffness", tape, {"q": qnames, "p": prog.inputs["p"]}, {"K": Kt})
    # ... replayed again in the physical parameters
    K, dK = _evaluate(kprog, "K", seeds, len(names), {"q": q, "p": p})
    M, dM = _evaluate(eom.program("mass_matrix"), "M", seeds, len(names), {"q": q, "p": p})
    K, dK = 0.5 * (K + K.T), 0.5 * (dK + np.swapaxes(dK, -1, -2))
    lam, phi = eigh(K, 0.5 * (M + M.T))  # phi^T M phi = I
    dlam = np.einsum("ir,jik,kr->jr", phi, dK, phi) - lam * np.einsum("ir,jik,kr->jr", phi, dM, phi)
    w = np.sqrt(np.clip(lam, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        dw = np.where(w > 0, dlam / (2 * w), 0.0)
    return Sensitivity("frequencies", names, values, w, dw, [f"w{r + 1} (rad/s)" for r in range(len(w))])


def _frequencies_about_motion(robot, eom, q, qd, p, seeds, names, values):
    """Frequencies of the flexible coordinates about a steady motion (joints at q turning at qd's
    rates, beams at their steady deflection p*; ``analysis.frequencies.frequencies_about_motion``)
    and their derivatives. The steady deflection moves with the parameters, dp*/dtheta =
    -K^-1 dQ_f/dtheta, so K, C and M are differentiated along (dp*/dtheta, 1) (a replay in the
    flexible coordinates and rates gives Q_f, K = dQ_f/dp, C = dQ_f/dpd; a replay of that one in
    the parameters and p* the total derivatives). The eigenvalues lambda = +-i w of
    A = [[0, 1], [-M^-1 K, -M^-1 G]] (G the gyroscopic, antisymmetric part of C) change by
    d lambda = y^H dA x / (y^H x) with x, y the right and left eigenvectors."""
    from scipy.linalg import eig

    from ..symbolic.program import Program
    from .frequencies import steady_deflection

    sl, nf = robot.flex_index, robot.nf
    k = len(names)
    if nf == 0:
        return Sensitivity("frequencies", names, values, np.zeros(0), np.zeros((k, 0)), [])
    qs = np.array(q, dtype=float)
    qs[sl] = steady_deflection(robot, q, qd)
    qds = np.array(qd, dtype=float)
    qds[sl] = 0.0
    prog = eom.program("inverse_dynamics")
    fq, fqd = prog.inputs["q"][sl], prog.inputs["qd"][sl]
    eye = np.eye(2 * nf)
    first = {n: eye[c] for c, n in enumerate(fq)} | {n: eye[nf + c] for c, n in enumerate(fqd)}
    tape, val, der = forward_mode(prog, first, {n: 0.0 for n in prog.inputs["qdd"]}, 2 * nf)
    _, labels = output_labels(prog, "tau")
    rows = labels[sl]
    obj = lambda items, shape: np.array(list(items) + [None], dtype=object)[:-1].reshape(shape)
    groups = {"Q": obj((val[r] for r in rows), (nf,)),
              "K": obj((der[r][c] for r in rows for c in range(nf)), (nf, nf)),
              "C": obj((der[r][nf + c] for r in rows for c in range(nf)), (nf, nf))}
    jac = Program.from_tape("flexible_jacobians", tape,
                            {"q": prog.inputs["q"], "qd": prog.inputs["qd"], "p": prog.inputs["p"]}, groups)
    arrays = {"q": qs, "qd": qds, "p": p}
    K, _ = _evaluate(jac, "K", {}, 0, arrays)
    _, dQ = _evaluate(jac, "Q", seeds, k, arrays)  # partial derivatives at fixed p*
    V = -np.linalg.solve(K, dQ.T)  # (nf, k): dp*/dtheta
    total = dict(seeds) | {n: V[c] for c, n in enumerate(fq)}
    K, dK = _evaluate(jac, "K", total, k, arrays)
    C, dC = _evaluate(jac, "C", total, k, arrays)
    M, dM = _evaluate(eom.program("mass_matrix"), "M", total, k, arrays)
    M, dM = M[sl, sl], dM[:, sl, sl]
    G, dG = 0.5 * (C - C.T), 0.5 * (dC - np.swapaxes(dC, -1, -2))
    Minv = np.linalg.inv(M)
    Z, I = np.zeros((nf, nf)), np.eye(nf)
    A = np.block([[Z, I], [-Minv @ K, -Minv @ G]])
    lam, left, right = eig(A, left=True, right=True)
    up = np.flatnonzero(lam.imag > 0)
    up = up[np.argsort(lam.imag[up])]
    w = np.zeros(nf)
    dw = np.zeros((k, nf))
    for j in range(k):
        dMinv = -Minv @ dM[j] @ Minv
        dA = np.block([[Z, Z], [-(dMinv @ K + Minv @ dK[j]), -(dMinv @ G + Minv @ dG[j])]])
        for r, i in enumerate(up[:nf]):
            x, y = right[:, i], left[:, i]
            dw[j, r] = ((y.conj() @ dA @ x) / (y.conj() @ x)).imag
    w[:len(up[:nf])] = lam.imag[up[:nf]]
    order = np.argsort(w)
    return Sensitivity("frequencies", names, values, w[order], dw[:, order],
                       [f"w{r + 1} (rad/s)" for r in range(nf)])
