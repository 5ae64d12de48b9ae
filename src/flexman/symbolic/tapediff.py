"""Forward-mode derivatives of a traced straight-line program, recorded on the same tape.

Differentiating the tape (rather than the algorithms) keeps one recursion: the derivative of
each recorded instruction is itself recorded with the tape's folding and CSE, so derivative
programs go through the same dead-code elimination, operation counts and code generation as
the programs they come from.
"""
from __future__ import annotations

from . import tracer as tr
from .tracer import Tape, Tracer


def _val(tape: Tape, a):
    """Value of an instruction argument: a node (int) or a constant (float)."""
    return Tracer(tape, a) if isinstance(a, int) else float(a)


def _d(dot: dict, a):
    return dot.get(a, 0.0) if isinstance(a, int) else 0.0


def tangents(tape: Tape, outputs, seeds: dict) -> list:
    """Directional derivatives of ``outputs`` (tracers or numbers) along ``seeds``.

    ``seeds``: ``{input name: tangent}`` (a number or a tracer on ``tape``); inputs not named
    have tangent 0. Returns one tangent (tracer or float) per output, in order.
    """
    roots = [o.idx for o in outputs if isinstance(o, Tracer)]
    if not roots:
        return [0.0 for _ in outputs]
    last = max(roots)
    dot: dict = {}
    for name, s in seeds.items():
        if name in tape.input_index and not (tr.is_number(s) and float(s) == 0.0):
            dot[tape.input_index[name]] = s
    for i in range(last + 1):
        op, args = tape.ops[i]
        if op == "in":
            continue
        da = [_d(dot, a) for a in args]
        if all(tr.is_number(x) and float(x) == 0.0 for x in da):
            continue
        v = [_val(tape, a) for a in args]
        if op == "add":
            d = tr.add(da[0], da[1])
        elif op == "sub":
            d = tr.add(da[0], tr.neg(da[1]))
        elif op == "neg":
            d = tr.neg(da[0])
        elif op == "mul":
            d = tr.add(tr.mul(da[0], v[1]), tr.mul(v[0], da[1]))
        elif op == "div":
            q = Tracer(tape, i)
            d = tr.div(tr.add(da[0], tr.neg(tr.mul(q, da[1]))), v[1])
        elif op == "sin":
            d = tr.mul(tr.cos(v[0]), da[0])
        elif op == "cos":
            d = tr.neg(tr.mul(tr.sin(v[0]), da[0]))
        elif op == "sqrt":
            d = tr.div(da[0], tr.mul(2.0, Tracer(tape, i)))
        elif op == "pow":
            n = float(args[1])
            d = tr.mul(tr.mul(n, tr.power(v[0], n - 1.0)), da[0])
        else:  # pragma: no cover - a new op must get its rule here
            raise NotImplementedError(f"no derivative rule for traced op {op!r}")
        if not (tr.is_number(d) and float(d) == 0.0):
            dot[i] = d
    out = []
    for o in outputs:
        if not isinstance(o, Tracer):
            out.append(0.0)
            continue
        d = dot.get(o.idx, 0.0)
        out.append(tr.neg(d) if o.neg else d)
    return out


def jacobian(tape: Tape, outputs, names) -> list:
    """``J[i][j] = d outputs[i] / d names[j]`` as tracers or numbers (one forward sweep per name)."""
    cols = [tangents(tape, outputs, {n: 1.0}) for n in names]
    return [[cols[j][i] for j in range(len(names))] for i in range(len(outputs))]
