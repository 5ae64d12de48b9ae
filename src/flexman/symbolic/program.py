"""Straight-line programs: the live part of a tape, renumbered, with named inputs and outputs.

A :class:`Program` is what code generation, operation counts, text output and the GIM
structure analysis work from. Building one from a tape is dead-code elimination: only the
instructions the requested outputs reach are kept, and intermediates are renumbered
Z1, Z2, ... in execution order.

* ``inputs``: ``{group: [names]}``, e.g. ``{"q": ["q1", "q2"], "qd": [...]}``;
* ``body``: ``[(target, op, args)]`` with args input/intermediate names (str) or constants (float);
* ``outputs``: ``{group: (shape, [(name, negated, atom)])}`` in row-major order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .tracer import OP_KIND, Tape, Tracer


@dataclass
class Program:
    name: str
    inputs: dict
    body: list
    outputs: dict
    doc: dict = field(default_factory=dict)  # group -> one-line description (file headers)

    # ----- construction -----------------------------------------------------------------
    @classmethod
    def from_tape(cls, name, tape: Tape, inputs: dict, outputs: dict, doc=None, prefix="Z"):
        """Dead-code elimination from ``outputs`` ({group: array of values}) and renumbering."""
        roots = [v.idx for arr in outputs.values() for v in np.ravel(np.asarray(arr, dtype=object))
                 if isinstance(v, Tracer)]
        live = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i in live:
                continue
            live.add(i)
            stack.extend(a for a in tape.ops[i][1] if isinstance(a, int))
        names, body = {}, []
        for i in sorted(live):
            op, args = tape.ops[i]
            if op == "in":
                names[i] = args[0]
                continue
            names[i] = f"{prefix}{len(body) + 1}"
            body.append((names[i], op, tuple(names[a] if isinstance(a, int) else a for a in args)))
        out = {}
        for group, arr in outputs.items():
            arr = np.asarray(arr, dtype=object)
            entries = []
            for idx in np.ndindex(arr.shape):
                v = arr[idx]
                label = "_".join([group] + [str(k + 1) for k in idx]) if idx else group
                if isinstance(v, Tracer):
                    entries.append((label, v.neg, names[v.idx]))
                else:
                    entries.append((label, False, float(np.real(v))))
            out[group] = (arr.shape, entries)
        return cls(name, {g: list(v) for g, v in inputs.items()}, body, out, dict(doc or {}))

    # ----- queries ----------------------------------------------------------------------
    @property
    def input_names(self) -> list:
        return [n for names in self.inputs.values() for n in names]

    def op_count(self) -> dict:
        out = {"mul": 0, "add": 0, "div": 0, "fn": 0}
        for _, op, _ in self.body:
            out[OP_KIND[op]] += 1
        return out

    def dependencies(self) -> dict:
        """For every intermediate and output name: the frozenset of input names it depends on."""
        deps = {n: frozenset([n]) for n in self.input_names}
        for target, _, args in self.body:
            s = frozenset()
            for a in args:
                if isinstance(a, str):
                    s = s | deps.get(a, frozenset([a]))
            deps[target] = s
        for _, entries in self.outputs.values():
            for label, _, atom in entries:
                deps[label] = deps[atom] if isinstance(atom, str) else frozenset()
        return deps

    def __len__(self):
        return len(self.body)

    def text(self) -> str:
        """Readable listing: Z### = ..., then the outputs."""
        from .convert import program_text

        return program_text(self)


def run_program(program, q):
    """Evaluate a straight-line program at one state q (float vector): {group: array}, through
    the NumPy code generator (the program has one input group, q)."""
    from .emit import function_source

    env = {"np": np}
    exec(compile(function_source("numpy", program, "f"), "<flexman program>", "exec"), env)  # our own code
    return dict(zip(program.outputs, env["f"](np.asarray(q, dtype=float))))
