"""The derived equations as CasADi ``SX`` functions (``fm.derive(robot).casadi()``).

One more way to evaluate the straight-line programs of :mod:`flexman.symbolic.program`: each
instruction becomes one CasADi ``SX`` operation through :data:`OPERATIONS` (the table that plays
the part :data:`flexman.symbolic.emit.DIALECTS` plays for source text), so the graph is built
instruction by instruction from the program, never by evaluating generated source. CasADi then
gives exact derivatives of the equations of motion, which is what an optimiser (IPOPT, for
:func:`flexman.plan`) needs. Parameters of a symbolic-parameter EOM are fixed at the EOM's values.
"""
from __future__ import annotations

import numpy as np

from ..extras import require

#: program operation -> CasADi expression of its arguments (SX values or floats)
OPERATIONS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "sin": lambda a: _casadi().sin(a),
    "cos": lambda a: _casadi().cos(a),
    "sqrt": lambda a: _casadi().sqrt(a),
    "pow": lambda a, b: a ** b,
}

#: function name -> (EOM program, CasADi input names in order)
FUNCTIONS = {
    "inverse_dynamics": ("inverse_dynamics", ("q", "qd", "qdd")),
    "forward_dynamics": ("forward_dynamics", ("q", "qd", "tau")),
    "mass_matrix": ("mass_matrix", ("q",)),
    "bias_forces": ("bias_forces", ("q", "qd")),
    "tip_position": ("position", ("q",)),  # the first 3 outputs of symbolic.kinematics.position_program
}


def _casadi():
    return require("casadi", "the CasADi export")


def program_function(program, name, input_groups, param_values=None):
    """A ``casadi.Function`` ``name(*inputs) -> outputs`` evaluating ``program``: one SX column
    per input group (in ``input_groups`` order), one dense SX matrix per output group."""
    ca = _casadi()
    symbols = {g: ca.SX.sym(g, len(program.inputs.get(g, ()))) for g in input_groups}
    env = {}
    for g in input_groups:
        for k, n in enumerate(program.inputs.get(g, ())):
            env[n] = symbols[g][k]
    for n, value in zip(program.inputs.get("p", ()), (param_values or {}).values()):
        env[n] = float(value)
    missing = [n for g, names in program.inputs.items() if g not in input_groups for n in names if n not in env]
    if missing:
        raise ValueError(f"casadi: the program {program.name} needs inputs {missing[:3]} that no argument gives")
    value = lambda a: env[a] if isinstance(a, str) else float(a)  # noqa: E731
    for target, op, args in program.body:
        env[target] = OPERATIONS[op](*(value(a) for a in args))
    outputs = []
    for group, (shape, entries) in program.outputs.items():
        flat = [(-value(a) if negd else value(a)) for _, negd, a in entries]
        rows, cols = (tuple(shape) + (1, 1))[:2] if len(shape) < 2 else tuple(shape)
        out = ca.SX.zeros(rows, cols)
        for idx, v in zip(np.ndindex(rows, cols), flat):
            out[idx] = v
        outputs.append(out)
    names = list(program.outputs)
    return ca.Function(name, [symbols[g] for g in input_groups], outputs, list(input_groups), names)


def casadi_functions(eom, programs, which) -> dict:
    """{name: casadi.Function} for the entries ``which`` of :data:`FUNCTIONS` (``programs``:
    program name -> the EOM's straight-line program of that name)."""
    out = {name: program_function(programs[FUNCTIONS[name][0]], name, FUNCTIONS[name][1], eom.param_values)
           for name in which}
    if "tip_position" in out:  # the end-effector's position only
        ca, f = _casadi(), out["tip_position"]
        q = ca.SX.sym("q", f.size1_in(0))
        out["tip_position"] = ca.Function("tip_position", [q], [f(q)[:3]], ["q"], ["tip"])
    return out
