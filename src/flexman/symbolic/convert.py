"""Programs as SymEngine/SymPy expressions, readable text and LaTeX, and SymEngine back to tracers."""
from __future__ import annotations

import re

import numpy as np
import symengine as se

from . import tracer as T


def _se_op(op, a):
    if op == "add":
        return a[0] + a[1]
    if op == "sub":
        return a[0] - a[1]
    if op == "mul":
        return a[0] * a[1]
    if op == "div":
        return a[0] / a[1]
    if op == "neg":
        return -a[0]
    if op == "pow":
        return a[0] ** a[1]
    return getattr(se, op)(a[0])


def tree_sizes(program) -> dict:
    size = {n: 1 for n in program.input_names}
    for t, _, args in program.body:
        size[t] = 1 + sum(size[a] if isinstance(a, str) else 1 for a in args)
    return size


def to_symengine(program, groups=None, inline=True) -> dict:
    """{group: object array of SymEngine expressions}; intermediates substituted when ``inline``."""
    env = {n: se.Symbol(n) for n in program.input_names}
    val = lambda a: env[a] if isinstance(a, str) else se.Float(a) if a != int(a) else se.Integer(int(a))
    for t, op, args in program.body:
        env[t] = _se_op(op, [val(a) for a in args]) if inline else se.Symbol(t)
    out = {}
    for g, (shape, entries) in program.outputs.items():
        if groups is not None and g not in groups:
            continue
        arr = np.empty(len(entries), dtype=object)
        for k, (_, negd, a) in enumerate(entries):
            arr[k] = -val(a) if negd else val(a)
        out[g] = arr.reshape(shape)
    return out


def to_sympy_matrix(program, group, inline_limit=20000):
    import sympy

    size = tree_sizes(program)
    total = sum(size.get(a, 1) for _, _, a in program.outputs[group][1])
    arr = to_symengine(program, [group], inline=total <= inline_limit)[group]
    if arr.ndim == 1:
        arr = arr[:, None]
    return sympy.Matrix([[sympy.sympify(e) for e in row] for row in arr])


def from_symengine(tape, exprs, memo=None):
    """Record SymEngine expressions on a tape (symbols become tape inputs of the same name)."""
    memo = {} if memo is None else memo

    def walk(e):
        if e in memo:
            return memo[e]
        if e.is_Number:
            r = float(e)
        elif e.is_Symbol:
            r = tape.input(str(e))
        elif isinstance(e, se.Add):
            r = 0.0
            for a in e.args:
                r = T.add(r, walk(a))
        elif isinstance(e, se.Mul):
            r = 1.0
            for a in e.args:
                r = T.mul(r, walk(a))
        elif isinstance(e, se.Pow):
            base, ex = e.args
            r = T.sqrt(walk(base)) if ex == se.Rational(1, 2) else T.power(walk(base), float(ex))
        elif isinstance(e, se.sin):
            r = T.sin(walk(e.args[0]))
        elif isinstance(e, se.cos):
            r = T.cos(walk(e.args[0]))
        else:
            raise NotImplementedError(f"cannot trace {type(e).__name__}: {e}")
        memo[e] = r
        return r

    flat = np.asarray(exprs, dtype=object)
    out = np.empty(flat.shape, dtype=object)
    for idx in np.ndindex(flat.shape):
        out[idx] = walk(se.sympify(flat[idx]))
    return out


def _label(label):
    """M_1_2 -> M[1,2]."""
    parts = label.split("_")
    return f"{parts[0]}[{','.join(parts[1:])}]" if len(parts) > 1 else label


def program_text(program) -> str:
    from .emit import format_expr

    lines = [f"{t} = {format_expr('python', op, args, pretty=True)}" for t, op, args in program.body]
    for g, (_, entries) in program.outputs.items():
        for label, negd, a in entries:
            lines.append(f"{_label(label)} = {'-' if negd else ''}{a if isinstance(a, str) else repr(a)}")
    return "\n".join(lines) + "\n"


def _latex_name(n):
    m = re.fullmatch(r"(qdd|qd|q|tau|Z)(\d+)", n)
    if m:
        base = {"qdd": r"\ddot{q}", "qd": r"\dot{q}", "q": "q", "tau": r"\tau", "Z": "Z"}[m.group(1)]
        return f"{base}_{{{m.group(2)}}}"
    import sympy

    return sympy.latex(sympy.Symbol(n))


def _latex_atom(a):
    if isinstance(a, str):
        return _latex_name(a)
    s = f"{a:.6g}"
    if "e" in s:
        mant, ex = s.split("e")
        s = f"{mant} \\cdot 10^{{{int(ex)}}}"
    return f"\\left({s}\\right)" if a < 0 else s


def program_latex(program) -> str:
    """An align* environment: one line per intermediate, then the outputs."""
    rows = []
    for t, op, args in program.body:
        a = [_latex_atom(x) for x in args]
        rhs = {
            "add": lambda: f"{a[0]} + {a[1]}", "sub": lambda: f"{a[0]} - {a[1]}",
            "mul": lambda: f"{a[0]} \\, {a[1]}", "div": lambda: f"\\frac{{{a[0]}}}{{{a[1]}}}",
            "neg": lambda: f"-{a[0]}", "pow": lambda: f"{a[0]}^{{{args[1]:g}}}",
            "sin": lambda: f"\\sin {a[0]}", "cos": lambda: f"\\cos {a[0]}", "sqrt": lambda: f"\\sqrt{{{a[0]}}}",
        }[op]()
        rows.append(f"{_latex_name(t)} &= {rhs}")
    for g, (_, entries) in program.outputs.items():
        for label, negd, a in entries:
            parts = label.split("_")
            name = f"{parts[0]}_{{{','.join(parts[1:])}}}"
            rows.append(f"{name} &= {'-' if negd else ''}{_latex_atom(a)}")
    return "\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}\n"
