"""Source text of straight-line programs in C, Fortran 90, Python/NumPy, MATLAB and Julia.

Every generated function keeps the program's line structure: inputs are unpacked into
readable scalars (q1, qd1, ...), each intermediate Z### is one assignment, and every output
entry is written with a comment naming it. Arrays are passed in row-major (C, NumPy) or in
the language's natural 1-based indexing (Fortran, MATLAB, Julia); parameter groups (``p``)
are not batched.

Each language is one :class:`Dialect` in :data:`DIALECTS` (its comments, declarations,
subscripts, function opening and closing, functions and powers): adding a language is adding
one entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

UNBATCHED = ("p",)  # input groups shared by every state of a batch


@dataclass(frozen=True)
class Function:
    """What every dialect needs to write one function: the program, the function name, the
    non-empty input groups, the output groups, the inputs each group unpacks (those the
    program uses) and one description line per output group."""

    program: object
    name: str
    inputs: list
    outputs: list
    unpack: dict
    doc: list


@dataclass(frozen=True)
class Dialect:
    """How one language writes a straight-line function. A statement is
    ``indent + declare + "<name> = <value>" + end``; ``element`` is an input array's element
    (``{g}`` the group, ``{k}`` its 0-based and ``{k1}`` its 1-based index); ``index(shape, idx)``
    the subscript of an output entry. ``opening`` gives the lines before the inputs are unpacked
    (signature, description, declarations), ``allocate`` the lines that create the output arrays
    after the body, ``closing`` the lines after the outputs. Expressions: ``functions`` prefixes
    sin / cos / sqrt (``pretty_functions`` in readable listings), ``power`` writes a ** b and
    ``double_exponent`` writes constants as Fortran double precision (1.5d0)."""

    name: str
    comment: str
    indent: str
    element: str
    index: Callable
    opening: Callable
    closing: Callable
    allocate: Callable = lambda fn: []
    declare: str = ""
    end: str = ""
    functions: str = ""
    pretty_functions: str = ""
    power: str = "{0}**{1}"
    double_exponent: bool = False

    def doc_lines(self, fn) -> list:
        """The output groups' descriptions as comment lines."""
        return [f"{self.indent}{self.comment} {line}" for line in fn.doc]


def _c_opening(fn):
    sig = ", ".join([f"const double *{g}" for g in fn.inputs] + [f"double *{g}" for g in fn.outputs])
    return [f"void {fn.name}({sig})\n{{"] + DIALECTS["c"].doc_lines(fn)


def _fortran_opening(fn):
    program = fn.program
    lines = [f"subroutine {fn.name}({', '.join(fn.inputs + fn.outputs)})"] + DIALECTS["fortran"].doc_lines(fn)
    lines.append("  implicit none")
    for g in fn.inputs:
        lines.append(f"  real(8), intent(in) :: {g}({len(program.inputs[g])})")
    for g in fn.outputs:
        shape = program.outputs[g][0] or (1,)
        lines.append(f"  real(8), intent(out) :: {g}({', '.join(str(s) for s in shape)})")
    names = [n for g in fn.inputs for _, n in fn.unpack[g]] + [t for t, _, _ in program.body]
    for k in range(0, len(names), 10):
        lines.append(f"  real(8) :: {', '.join(names[k:k + 10])}")
    return lines


def _numpy_opening(fn):
    batch = ", ".join(f"np.shape({g})[:-1]" for g in fn.inputs if g not in UNBATCHED)
    return [f"def {fn.name}({', '.join(fn.inputs)}):", f'    """{"; ".join(fn.doc)}"""',
            f"    _batch = np.broadcast_shapes({batch})"]


def _numpy_allocate(fn):
    return [f"    {g} = np.empty(_batch + {tuple(fn.program.outputs[g][0])!r})" for g in fn.outputs]


def _numpy_closing(fn):
    return [f"    return {', '.join(fn.outputs)}{',' if len(fn.outputs) == 1 else ''}"]


def _matlab_allocate(fn):
    lines = []
    for g in fn.outputs:
        shape = tuple(fn.program.outputs[g][0]) or (1,)
        shape = shape if len(shape) > 1 else shape + (1,)
        lines.append(f"{g} = zeros({', '.join(str(s) for s in shape)});")
    return lines


def _julia_allocate(fn):
    return [f"    {g} = zeros({', '.join(str(s) for s in tuple(fn.program.outputs[g][0]) or (1,))})" for g in fn.outputs]


def _one_based(open_, close, default):
    """Subscript of an output entry in a language with 1-based indexing."""
    return lambda shape, idx: open_ + ", ".join(str(i + 1) for i in idx) + close if idx else default


DIALECTS = {d.name: d for d in (
    Dialect("c", "//", "    ", "{g}[{k}]", declare="const double ", end=";", power="pow({0}, {1})",
            index=lambda shape, idx: f"[{int(np.ravel_multi_index(idx, shape)) if shape else 0}]",
            opening=_c_opening, closing=lambda fn: ["}"]),
    Dialect("fortran", "!", "  ", "{g}({k1})", double_exponent=True, index=_one_based("(", ")", "(1)"),
            opening=_fortran_opening, closing=lambda fn: [f"end subroutine {fn.name}"]),
    Dialect("python", "#", "    ", "{g}[..., {k}]", functions="math.",  # expressions only: functions are numpy's
            index=lambda shape, idx: "[..., " + ", ".join(str(i) for i in idx) + "]" if idx else "[...]",
            opening=_numpy_opening, allocate=_numpy_allocate, closing=_numpy_closing),
    Dialect("numpy", "#", "    ", "{g}[..., {k}]", functions="np.", pretty_functions="np.",
            index=lambda shape, idx: "[..., " + ", ".join(str(i) for i in idx) + "]" if idx else "[...]",
            opening=_numpy_opening, allocate=_numpy_allocate, closing=_numpy_closing),
    Dialect("matlab", "%", "", "{g}({k1})", end=";", power="{0}^{1}", index=_one_based("(", ")", "(1)"),
            opening=lambda fn: [f"function [{', '.join(fn.outputs)}] = {fn.name}({', '.join(fn.inputs)})"]
            + DIALECTS["matlab"].doc_lines(fn), allocate=_matlab_allocate, closing=lambda fn: ["end"]),
    Dialect("julia", "#", "    ", "{g}[{k1}]", power="{0}^{1}", index=_one_based("[", "]", "[1]"),
            opening=lambda fn: [f"function {fn.name}({', '.join(fn.inputs)})"] + DIALECTS["julia"].doc_lines(fn),
            allocate=_julia_allocate, closing=lambda fn: [f"    return {', '.join(fn.outputs)}", "end"]),
)}
LANGS = tuple(DIALECTS)
FUNCTION_DIALECT = {"python": "numpy"}  # whole functions in Python are NumPy functions


def dialect(lang) -> Dialect:
    """The dialect of ``lang`` (one of :data:`LANGS`)."""
    try:
        return DIALECTS[lang]
    except KeyError:
        raise ValueError(f"unknown language {lang!r}; use one of {', '.join(LANGS)}") from None


def const(lang, x: float) -> str:
    x = float(x)
    s = repr(x)
    if dialect(lang).double_exponent:
        s = s.replace("e", "d") if "e" in s else s + "d0"
    return f"({s})" if x < 0 else s


def atom(lang, a) -> str:
    return a if isinstance(a, str) else const(lang, a)


def format_expr(lang, op, args, pretty=False) -> str:
    """Right-hand side of one instruction."""
    a = [atom(lang, x) for x in args]
    if op == "add":
        return f"{a[0]} + {a[1]}"
    if op == "sub":
        return f"{a[0]} - {a[1]}"
    if op == "mul":
        return f"{a[0]}*{a[1]}"
    if op == "div":
        return f"{a[0]}/{a[1]}"
    if op == "neg":
        return f"-{a[0]}"
    if op in ("sin", "cos", "sqrt"):
        d = dialect(lang)
        return f"{d.pretty_functions if pretty else d.functions}{op}({a[0]})"
    if op == "pow":
        return dialect(lang).power.format(a[0], a[1])
    raise ValueError(f"unknown op {op}")


def function_source(lang, program, fname) -> str:
    """One function computing all output groups of ``program``."""
    d = dialect(FUNCTION_DIALECT.get(lang, lang))
    ins = [g for g in program.inputs if program.inputs[g]]
    outs = list(program.outputs)
    used = {a for _, _, args in program.body for a in args if isinstance(a, str)}
    used |= {a for _, entries in program.outputs.values() for _, _, a in entries if isinstance(a, str)}
    unpack = {g: [(k, n) for k, n in enumerate(program.inputs[g]) if n in used] for g in ins}
    doc = [f"{g}: {program.doc.get(g, '')}".rstrip(": ") for g in outs]
    fn = Function(program, fname, ins, outs, unpack, doc)
    lines = d.opening(fn)
    for g in ins:
        for k, n in unpack[g]:
            lines.append(f"{d.indent}{d.declare}{n} = {d.element.format(g=g, k=k, k1=k + 1)}{d.end}")
    for t, op, args in program.body:
        lines.append(f"{d.indent}{d.declare}{t} = {format_expr(d.name, op, args)}{d.end}")
    lines += d.allocate(fn)
    for g in outs:
        shape, entries = program.outputs[g]
        for idx, (label, negd, a) in zip(np.ndindex(tuple(shape)), entries):
            rhs = ("-" if negd else "") + atom(d.name, a)
            lines.append(f"{d.indent}{g}{d.index(tuple(shape), idx)} = {rhs}{d.end}  {d.comment} {label}")
    lines += d.closing(fn)
    return "\n".join(lines) + "\n"


def c_batch_source(program, fname) -> str:
    """C entry points looping over n states (contiguous, row-major) around ``fname``:
    ``<fname>_batch`` shares one parameter vector ``p`` among the states; when the program has
    parameters, ``<fname>_pbatch`` takes one parameter vector per state (parameter sweeps)."""
    ins = [g for g in program.inputs if program.inputs[g]]
    outs = list(program.outputs)
    sig = ", ".join(["long n"] + [f"const double *{g}" for g in ins] + [f"double *{g}" for g in outs])
    text = ""
    for suffix, shared in (("batch", UNBATCHED), ("pbatch", ())):
        if suffix == "pbatch" and "p" not in ins:
            break
        call = []
        for g in ins:
            call.append(g if g in shared else f"{g} + i*{len(program.inputs[g])}")
        for g in outs:
            size = int(np.prod(program.outputs[g][0], dtype=int))
            call.append(f"{g} + i*{size}")
        text += (f"void {fname}_{suffix}({sig})\n{{\n    for (long i = 0; i < n; ++i)\n"
                 f"        {fname}({', '.join(call)});\n}}\n")
    return text


SPLIT_ABOVE = 3000  # C functions with more instructions are split into parts of SPLIT_PART
SPLIT_PART = 1500


def c_split_source(program, fname, part=None, units=None) -> str:
    """One C function computing ``program`` as a sequence of part functions of about ``part``
    instructions each (same results, instruction for instruction). A C compiler's time grows
    faster than linearly with the size of one function (register allocation and scheduling over
    straight-line code); parts keep every function small, so compiling a large model takes time
    proportional to its size. Values one part passes to a later one go through a scratch array
    ``w`` allocated by the caller on the heap.

    ``units``: a list to which each part is appended as a translation unit of its own (then the
    returned text declares them), so the parts can be compiled in parallel; otherwise they are
    static, non-inlined functions in the returned text."""
    part = part or SPLIT_PART
    ins = [g for g in program.inputs if program.inputs[g]]
    outs = list(program.outputs)
    input_of = {n: (g, k) for g in ins for k, n in enumerate(program.inputs[g])}
    body = program.body
    chunks = [body[i:i + part] for i in range(0, len(body), part)]
    out_atoms = [a for _, entries in program.outputs.values() for _, _, a in entries if isinstance(a, str)]
    owner = {}
    for j, chunk in enumerate(chunks):
        for t, _, _ in chunk:
            owner[t] = j
    # names each part (and the final output part, index len(chunks)) reads from earlier parts
    reads = []
    for j, chunk in enumerate(chunks + [None]):
        used = out_atoms if chunk is None else [a for _, _, args in chunk for a in args if isinstance(a, str)]
        reads.append(list(dict.fromkeys(a for a in used if a in owner and owner[a] != j)))
    slot = {}
    for names in reads:
        for a in names:
            slot.setdefault(a, len(slot))
    sig_in = ", ".join([f"const double *{g}" for g in ins])
    # in one unit, parts stay separate functions (a compiler would inline each into the caller)
    lines = [] if units is not None else [
        "#ifndef FM_NOINLINE\n#if defined(__GNUC__) || defined(__clang__)\n#define FM_NOINLINE __attribute__((noinline))\n"
        "#else\n#define FM_NOINLINE\n#endif\n#endif"]
    for j, chunk in enumerate(chunks + [None]):
        used = out_atoms if chunk is None else [a for _, _, args in chunk for a in args if isinstance(a, str)]
        head = f"void {fname}_part{j + 1}({sig_in}, double *w"
        head += (", " + ", ".join(f"double *{g}" for g in outs) if chunk is None else "") + ")"
        text = [head + "\n{"]
        for n in dict.fromkeys(a for a in used if a in input_of):
            g, k = input_of[n]
            text.append(f"    const double {n} = {g}[{k}];")
        for a in reads[j]:
            text.append(f"    const double {a} = w[{slot[a]}];")
        if chunk is None:
            for g in outs:
                shape, entries = program.outputs[g]
                for idx, (label, negd, a) in zip(np.ndindex(tuple(shape)), entries):
                    rhs = ("-" if negd else "") + atom("c", a)
                    text.append(f"    {g}{DIALECTS['c'].index(tuple(shape), idx)} = {rhs};  // {label}")
        else:
            for t, op, args in chunk:
                text.append(f"    const double {t} = {format_expr('c', op, args)};")
            for t, _, _ in chunk:
                if t in slot:
                    text.append(f"    w[{slot[t]}] = {t};")
            text.append("    (void)w;")
        text.append("}\n")
        if units is None:
            lines.append("FM_NOINLINE static " + "\n".join(text))
        else:
            units.append("#include <math.h>\n\n" + "\n".join(text))
            lines.append(head + ";")
    sig = ", ".join([f"const double *{g}" for g in ins] + [f"double *{g}" for g in outs])
    args = ", ".join(ins)
    lines.append(f"void {fname}({sig})\n{{")
    for line in (f"{g}: {program.doc.get(g, '')}".rstrip(": ") for g in outs):
        lines.append(f"    // {line}")
    lines.append(f"    // {len(body)} instructions in {len(chunks)} parts; {len(slot)} values passed between parts")
    lines.append(f"    double *w = (double *)malloc({max(len(slot), 1)} * sizeof(double));")
    for j in range(len(chunks)):
        lines.append(f"    {fname}_part{j + 1}({args}, w);")
    lines.append(f"    {fname}_part{len(chunks) + 1}({args}, w, {', '.join(outs)});")
    lines.append("    free(w);")
    lines.append("}")
    return "\n".join(lines) + "\n"


SOLVE_ABOVE = 10000  # forward dynamics programs larger than this call M and b and solve in a loop

LDL_SOLVE = r"""
#ifndef FM_LDL_DEFINED
#define FM_LDL_DEFINED
/* LDL^T of a symmetric positive definite n x n matrix A (row-major, in place: L below the
   diagonal, D on it); the solution of A x = y with those factors (x holds y on entry and the
   solution on exit); and both in one call. Defined once per source (forward dynamics, partials). */
static inline void fm_ldl_factor(int n, double *A)
{
    for (int j = 0; j < n; ++j) {
        double d = A[j * n + j];
        for (int k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k] * A[k * n + k];
        A[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = A[i * n + j];
            for (int k = 0; k < j; ++k) s -= A[i * n + k] * A[j * n + k] * A[k * n + k];
            A[i * n + j] = s / d;
        }
    }
}

static inline void fm_ldl_subst(int n, const double *A, double *x)
{
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < i; ++k) x[i] -= A[i * n + k] * x[k];
    for (int i = 0; i < n; ++i) x[i] /= A[i * n + i];
    for (int i = n - 1; i >= 0; --i)
        for (int k = i + 1; k < n; ++k) x[i] -= A[k * n + i] * x[k];
}

static inline void fm_ldl_solve(int n, double *A, double *x)
{
    fm_ldl_factor(n, A);
    fm_ldl_subst(n, A, x);
}
#endif
"""


def c_add_torques(target, tau, n_joints, actuated=None) -> str:
    """C that adds S tau to ``target``: each joint torque on its own coordinate, or (elastic
    joints) on the coordinate ``actuated`` names for it."""
    if actuated is None or tuple(actuated) == tuple(range(n_joints)):
        return f"for (int i = 0; i < {n_joints}; ++i) {target}[i] += {tau}[i];"
    return " ".join(f"{target}[{c}] += {tau}[{j}];" for j, c in enumerate(actuated))


def c_forward_by_solve(program, fname, prefix, nq, n_joints, actuated=None) -> str:
    """Forward dynamics of a large model as calls: ``<prefix>_mass_matrix`` and
    ``<prefix>_bias_forces`` (defined before it), then an LDL^T solve of M qdd = S tau - b in a
    loop. The straight-line program would repeat all of M's code (more than half the source of a
    large arm) and unroll the solve; this one costs the compiler nothing."""
    has_p = bool(program.inputs.get("p"))
    p = ", p" if has_p else ""
    sig = ", ".join(["const double *q", "const double *qd", "const double *tau"]
                    + (["const double *p"] if has_p else []) + ["double *qdd"])
    return (LDL_SOLVE + f"""
void {fname}({sig})
{{
    // qdd: {program.doc.get('qdd', 'accelerations')}
    // M(q) qdd = S tau - b(q, qd): M and b by the functions above, then LDL^T in a loop
    double *M = (double *)malloc({nq * nq} * sizeof(double));
    {prefix}_mass_matrix(q{p}, M);
    {prefix}_bias_forces(q, qd{p}, qdd);
    for (int i = 0; i < {nq}; ++i) qdd[i] = -qdd[i];
    {c_add_torques("qdd", "tau", n_joints, actuated)}
    fm_ldl_solve({nq}, M, qdd);
    free(M);
}}
""")
