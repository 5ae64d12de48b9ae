"""Source text of a model's equations: the comment header of every generated file, the C
source of the compiled library and the files :func:`export` writes (C, Fortran, Python/NumPy,
MATLAB, Julia). The functions themselves come from :mod:`.emit`."""
from __future__ import annotations

from pathlib import Path

from ..model import names
from ..outputs import write_text
from . import WHATS  # defined once, in the package
from ..symbolic import emit


def header(eom, cm, what):
    """The comment block that opens every generated file (comment marker ``cm``): the model, its
    coordinates and parameters, the operation counts of the functions ``what`` and the notes."""
    r = eom.robot
    lines = [f"flexman: equations of motion of '{names.comment(r.name)}' ({eom.formulation} formulation, "
             f"{eom.parameters} parameters), nq = {r.nq}, {r.n_joints} joints",
             "M(q) qdd + b(q, qd) = S tau;  generated code, do not edit",
             "inputs: q, qd, qdd (nq each), tau (one per joint)" + (", p (parameters)" if eom.param_values else "")]
    lines += [f"  q{k + 1}: {n}" for k, n in enumerate(r.coordinate_names)]
    if eom.param_values:
        lines += [f"  p[{k}] = {n} = {v!r}" for k, (n, v) in enumerate(eom.param_values.items())]
    for w in what:
        prog = eom.program(w)
        c = prog.op_count()
        for g in prog.outputs:
            lines.append(f"{w}: {g} = {prog.doc.get(g, '')}  [{c['mul']} mul, {c['add']} add, {c['div']} div, {c['fn']} fn]")
    lines += [f"note: {names.comment(n, 1000)}" for n in eom.notes]
    return "\n".join(f"{cm} {l}".rstrip() for l in lines) + "\n"


def c_source(eom, what=WHATS, prefix="fm", batch=True, units=None, derivatives=False) -> str:
    """C source of the model's functions; ``units``: a list that receives the parts of split
    large functions as translation units of their own (see ``emit.c_split_source``).
    ``derivatives`` adds ``<prefix>_inverse_dynamics_derivatives[_batch]`` (d tau / d q,
    d tau / d qd) and, with M and b, ``<prefix>_forward_dynamics_derivatives[_batch]``
    (:func:`c_forward_derivatives`). Off by default: the program is 4-5 times the inverse
    dynamics, so models carry it only when asked (``compiled_model(..., derivatives=True)``)."""
    what = tuple(what)
    if derivatives and "inverse_dynamics_derivatives" not in what:
        what += ("inverse_dynamics_derivatives",)
    forward_partials = derivatives and {"mass_matrix", "bias_forces"} <= set(what)
    parts = [header(eom, "//", what), "#include <math.h>\n#include <stdlib.h>\n"]
    # a large forward dynamics calls M and b (when they come before it) and solves in a loop
    before_fd = set(what[:what.index("forward_dynamics")]) if "forward_dynamics" in what else set()
    for w in what:
        prog = eom.program(w)
        if w == "forward_dynamics" and {"mass_matrix", "bias_forces"} <= before_fd and len(prog.body) > emit.SOLVE_ABOVE:
            parts.append(emit.c_forward_by_solve(prog, f"{prefix}_{w}", prefix, eom.nq, eom.n_joints,
                                                 eom.robot.actuated))
        elif len(prog.body) > emit.SPLIT_ABOVE:  # large models: several small functions compile much faster
            parts.append(emit.c_split_source(prog, f"{prefix}_{w}", units=units))
        else:
            parts.append(emit.function_source("c", prog, f"{prefix}_{w}"))
        if batch:
            parts.append(emit.c_batch_source(prog, f"{prefix}_{w}"))
    if forward_partials:
        parts.append(c_forward_derivatives(eom, prefix, batch))
    return "\n".join(parts)


def _takes_p(eom, what):
    return bool(eom.program(what).inputs.get("p"))


def c_forward_derivatives(eom, prefix="fm", batch=True) -> str:
    """``<prefix>_forward_dynamics_derivatives(q, qd, tau[, p], dq, dqd, dtau)``: the partials of
    qdd = FD(q, qd, tau) from M, b and the inverse dynamics' partials (defined before it):
    qdd solves M qdd = S tau - b; then M X = -[dID/dq, dID/dqd] and M X = S, with one LDL^T
    factorisation of M (``flexman.dynamics.derivatives`` writes the same identity in NumPy).
    All matrices row-major, ``dq[i*nq + j] = d qdd_i / d q_j``, ``dtau`` nq x n_joints."""
    nq, nj = eom.nq, eom.n_joints
    actuated = tuple(getattr(eom.robot, "actuated", range(nj)))  # S: the coordinate each joint torque acts on
    has_p = any(_takes_p(eom, w) for w in ("mass_matrix", "bias_forces", "inverse_dynamics_derivatives"))
    arg = lambda w: ", p" if _takes_p(eom, w) else ""
    sig = "const double *q, const double *qd, const double *tau" + (", const double *p" if has_p else "")
    outs = "double *dq, double *dqd, double *dtau"
    small = nq * nq <= 4096  # large models: M and the scratch vectors on the heap
    alloc = (f"double M[{nq * nq}], qdd[{nq}], x[{nq}];" if small else
             f"double *M = (double *)malloc({nq * (nq + 2)} * sizeof(double)), *qdd = M + {nq * nq}, *x = qdd + {nq};")
    text = f"""
{emit.LDL_SOLVE}
void {prefix}_forward_dynamics_derivatives({sig}, {outs})
{{
    static const int act[{max(nj, 1)}] = {{{", ".join(str(c) for c in actuated) or "0"}}};
    {alloc}
    {prefix}_mass_matrix(q{arg("mass_matrix")}, M);
    {prefix}_bias_forces(q, qd{arg("bias_forces")}, qdd);
    fm_ldl_factor({nq}, M);
    for (int i = 0; i < {nq}; ++i) qdd[i] = -qdd[i];
    {emit.c_add_torques("qdd", "tau", nj, actuated)}
    fm_ldl_subst({nq}, M, qdd);
    {prefix}_inverse_dynamics_derivatives(q, qd, qdd{arg("inverse_dynamics_derivatives")}, dq, dqd);
    for (int j = 0; j < {nq}; ++j) {{
        for (int i = 0; i < {nq}; ++i) x[i] = -dq[i * {nq} + j];
        fm_ldl_subst({nq}, M, x);
        for (int i = 0; i < {nq}; ++i) dq[i * {nq} + j] = x[i];
        for (int i = 0; i < {nq}; ++i) x[i] = -dqd[i * {nq} + j];
        fm_ldl_subst({nq}, M, x);
        for (int i = 0; i < {nq}; ++i) dqd[i * {nq} + j] = x[i];
    }}
    for (int j = 0; j < {nj}; ++j) {{
        for (int i = 0; i < {nq}; ++i) x[i] = (i == act[j]);
        fm_ldl_subst({nq}, M, x);
        for (int i = 0; i < {nq}; ++i) dtau[i * {nj} + j] = x[i];
    }}{"" if small else chr(10) + "    free(M);"}
}}
"""
    if batch:
        p_call = ", p" if has_p else ""
        text += f"""
void {prefix}_forward_dynamics_derivatives_batch(long n, {sig}, {outs})
{{
    for (long i = 0; i < n; ++i)
        {prefix}_forward_dynamics_derivatives(q + i*{nq}, qd + i*{nq}, tau + i*{nj}{p_call},
            dq + i*{nq * nq}, dqd + i*{nq * nq}, dtau + i*{nq * nj});
}}
"""
    return text


def ident(name):
    """Function-name prefix from a file name (made safe in the one place names are)."""
    return names.mangle(name)


def export(eom, lang, path, what=None):
    """Write source code of the equations to ``path`` and return the path."""
    path = Path(path)
    what = tuple(what or WHATS)
    lang = lang.lower()
    if lang == "c":
        text = c_source(eom, what, prefix=ident(path.stem))
    elif lang == "matlab":  # one callable function per file: [M, b] = <file name>(q, qd)
        fname = ident(path.stem)
        text = emit.function_source("matlab", eom.program("eom"), fname) + header(eom, "%", ("eom",))
        text += "% inverse dynamics: tau = M*qdd + b;  forward dynamics: qdd = M \\ ([tau; zeros] - b)\n"
    elif lang in ("fortran", "python", "julia"):
        cm = "!" if lang == "fortran" else "#"
        pre = ident(path.stem)
        text = header(eom, cm, what)
        if lang == "python":
            text += "import numpy as np\n\n\n"
        for w in what:
            text += "\n" + emit.function_source(lang, eom.program(w), f"{pre}_{w}")
    else:
        raise ValueError(f"lang: unknown {lang!r}; use c, fortran, python, matlab or julia")
    return write_text(path, text)
