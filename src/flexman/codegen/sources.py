"""Source text of a model's equations: the comment header of every generated file, the C
source of the compiled library and the files :func:`export` writes (C, Fortran, Python/NumPy,
MATLAB, Julia). The functions themselves come from :mod:`.emit`."""
from __future__ import annotations

import os
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


def c_source(eom, what=WHATS, prefix="fm", batch=True, units=None, derivatives=None) -> str:
    """C source of the model's functions; ``units``: a list that receives the parts of split
    large functions as translation units of their own (see ``emit.c_split_source``).
    ``derivatives`` adds ``<prefix>_inverse_dynamics_derivatives[_batch]`` (d tau / d q,
    d tau / d qd). Off by default (None: ``FLEXMAN_DERIVATIVES=1`` turns it on): the program is
    4-5 times the inverse dynamics and nothing in the compiled loop calls it yet."""
    what = tuple(what)
    if derivatives is None:
        derivatives = batch and "inverse_dynamics" in what and os.environ.get("FLEXMAN_DERIVATIVES") == "1"
    if derivatives and "inverse_dynamics_derivatives" not in what:
        what += ("inverse_dynamics_derivatives",)
    parts = [header(eom, "//", what), "#include <math.h>\n#include <stdlib.h>\n"]
    # a large forward dynamics calls M and b (when they come before it) and solves in a loop
    before_fd = set(what[:what.index("forward_dynamics")]) if "forward_dynamics" in what else set()
    for w in what:
        prog = eom.program(w)
        if w == "forward_dynamics" and {"mass_matrix", "bias_forces"} <= before_fd and len(prog.body) > emit.SOLVE_ABOVE:
            parts.append(emit.c_forward_by_solve(prog, f"{prefix}_{w}", prefix, eom.nq, eom.n_joints))
        elif len(prog.body) > emit.SPLIT_ABOVE:  # large models: several small functions compile much faster
            parts.append(emit.c_split_source(prog, f"{prefix}_{w}", units=units))
        else:
            parts.append(emit.function_source("c", prog, f"{prefix}_{w}"))
        if batch:
            parts.append(emit.c_batch_source(prog, f"{prefix}_{w}"))
    return "\n".join(parts)


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
