"""Source text of straight-line programs in C, Fortran 90, Python/NumPy, MATLAB and Julia.

Every generated function keeps the program's line structure: inputs are unpacked into
readable scalars (q1, qd1, ...), each intermediate Z### is one assignment, and every output
entry is written with a comment naming it. Arrays are passed in row-major (C, NumPy) or in
the language's natural 1-based indexing (Fortran, MATLAB, Julia); parameter groups (``p``)
are not batched.
"""
from __future__ import annotations

import numpy as np

LANGS = ("c", "fortran", "python", "numpy", "matlab", "julia")
UNBATCHED = ("p",)  # input groups shared by every state of a batch


def const(lang, x: float) -> str:
    x = float(x)
    if lang == "fortran":
        s = repr(x)
        s = s.replace("e", "d") if "e" in s else s + "d0"
    else:
        s = repr(x)
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
        prefix = "np." if lang == "numpy" else ("math." if lang == "python" and not pretty else "")
        return f"{prefix}{op}({a[0]})"
    if op == "pow":
        if lang == "c":
            return f"pow({a[0]}, {a[1]})"
        if lang in ("matlab", "julia"):
            return f"{a[0]}^{a[1]}"
        return f"{a[0]}**{a[1]}"
    raise ValueError(f"unknown op {op}")


def _index(lang, shape, idx):
    """Subscript of an output entry."""
    if lang in ("c",):
        return f"[{int(np.ravel_multi_index(idx, shape)) if shape else 0}]"
    if lang in ("numpy", "python"):
        return "[..., " + ", ".join(str(i) for i in idx) + "]" if idx else "[...]"
    if lang == "julia":
        return "[" + ", ".join(str(i + 1) for i in idx) + "]" if idx else "[1]"
    return "(" + ", ".join(str(i + 1) for i in idx) + ")" if idx else "(1)"


def _comment(lang):
    return {"c": "//", "fortran": "!", "python": "#", "numpy": "#", "matlab": "%", "julia": "#"}[lang]


def function_source(lang, program, fname) -> str:
    """One function computing all output groups of ``program``."""
    if lang == "python":
        lang = "numpy"
    cm = _comment(lang)
    ins = [g for g in program.inputs if program.inputs[g]]
    outs = list(program.outputs)
    lines, decl = [], []
    used = {a for _, _, args in program.body for a in args if isinstance(a, str)}
    used |= {a for _, entries in program.outputs.values() for _, _, a in entries if isinstance(a, str)}
    unpack = {g: [(k, n) for k, n in enumerate(program.inputs[g]) if n in used] for g in ins}
    doc = [f"{g}: {program.doc.get(g, '')}".rstrip(": ") for g in outs]
    if lang == "c":
        sig = ", ".join([f"const double *{g}" for g in ins] + [f"double *{g}" for g in outs])
        lines.append(f"void {fname}({sig})\n{{")
        for line in doc:
            lines.append(f"    {cm} {line}")
        for g in ins:
            for k, n in unpack[g]:
                lines.append(f"    const double {n} = {g}[{k}];")
        for t, op, args in program.body:
            lines.append(f"    const double {t} = {format_expr(lang, op, args)};")
    elif lang == "fortran":
        lines.append(f"subroutine {fname}({', '.join(ins + outs)})")
        for line in doc:
            lines.append(f"  {cm} {line}")
        lines.append("  implicit none")
        for g in ins:
            lines.append(f"  real(8), intent(in) :: {g}({len(program.inputs[g])})")
        for g in outs:
            shape = program.outputs[g][0] or (1,)
            lines.append(f"  real(8), intent(out) :: {g}({', '.join(str(s) for s in shape)})")
        names = [n for g in ins for _, n in unpack[g]] + [t for t, _, _ in program.body]
        for k in range(0, len(names), 10):
            decl.append(f"  real(8) :: {', '.join(names[k:k + 10])}")
        lines += decl
        for g in ins:
            for k, n in unpack[g]:
                lines.append(f"  {n} = {g}({k + 1})")
        for t, op, args in program.body:
            lines.append(f"  {t} = {format_expr(lang, op, args)}")
    elif lang == "numpy":
        lines.append(f"def {fname}({', '.join(ins)}):")
        lines.append(f'    """{"; ".join(doc)}"""')
        batch = ", ".join(f"np.shape({g})[:-1]" for g in ins if g not in UNBATCHED)
        lines.append(f"    _batch = np.broadcast_shapes({batch})")
        for g in ins:
            for k, n in unpack[g]:
                lines.append(f"    {n} = {g}[..., {k}]")
        for t, op, args in program.body:
            lines.append(f"    {t} = {format_expr(lang, op, args)}")
        for g in outs:
            lines.append(f"    {g} = np.empty(_batch + {tuple(program.outputs[g][0])!r})")
    elif lang == "matlab":
        lines.append(f"function [{', '.join(outs)}] = {fname}({', '.join(ins)})")
        for line in doc:
            lines.append(f"{cm} {line}")
        for g in ins:
            for k, n in unpack[g]:
                lines.append(f"{n} = {g}({k + 1});")
        for t, op, args in program.body:
            lines.append(f"{t} = {format_expr(lang, op, args)};")
        for g in outs:
            shape = tuple(program.outputs[g][0]) or (1,)
            shape = shape if len(shape) > 1 else shape + (1,)
            lines.append(f"{g} = zeros({', '.join(str(s) for s in shape)});")
    elif lang == "julia":
        lines.append(f"function {fname}({', '.join(ins)})")
        for line in doc:
            lines.append(f"    {cm} {line}")
        for g in ins:
            for k, n in unpack[g]:
                lines.append(f"    {n} = {g}[{k + 1}]")
        for t, op, args in program.body:
            lines.append(f"    {t} = {format_expr(lang, op, args)}")
        for g in outs:
            shape = tuple(program.outputs[g][0]) or (1,)
            lines.append(f"    {g} = zeros({', '.join(str(s) for s in shape)})")
    else:
        raise ValueError(f"unknown language {lang!r}; use one of {', '.join(LANGS)}")

    ind = {"c": "    ", "fortran": "  ", "numpy": "    ", "matlab": "", "julia": "    "}[lang]
    end = ";" if lang in ("c", "matlab") else ""
    for g in outs:
        shape, entries = program.outputs[g]
        for idx, (label, negd, a) in zip(np.ndindex(tuple(shape)), entries):
            rhs = ("-" if negd else "") + atom(lang, a)
            lines.append(f"{ind}{g}{_index(lang, tuple(shape), idx)} = {rhs}{end}  {cm} {label}")
    if lang == "c":
        lines.append("}")
    elif lang == "fortran":
        lines.append(f"end subroutine {fname}")
    elif lang == "numpy":
        lines.append(f"    return {', '.join(outs)}{',' if len(outs) == 1 else ''}")
    elif lang == "matlab":
        lines.append("end")
    elif lang == "julia":
        lines.append(f"    return {', '.join(outs)}")
        lines.append("end")
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
                    text.append(f"    {g}{_index('c', tuple(shape), idx)} = {rhs};  // {label}")
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
/* Solve A x = y for a symmetric positive definite n x n matrix A (row-major, overwritten by its
   LDL^T factors: L below the diagonal, D on it); x holds y on entry and the solution on exit. */
static void fm_ldl_solve(int n, double *A, double *x)
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
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < i; ++k) x[i] -= A[i * n + k] * x[k];
    for (int i = 0; i < n; ++i) x[i] /= A[i * n + i];
    for (int i = n - 1; i >= 0; --i)
        for (int k = i + 1; k < n; ++k) x[i] -= A[k * n + i] * x[k];
}
"""


def c_forward_by_solve(program, fname, prefix, nq, n_joints) -> str:
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
    for (int i = 0; i < {n_joints}; ++i) qdd[i] += tau[i];
    fm_ldl_solve({nq}, M, qdd);
    free(M);
}}
""")
