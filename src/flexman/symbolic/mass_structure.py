"""Structure of the generalized inertia matrix (Saha et al., 003): which entries are zero,
constant, or depend on which coordinates, read off the dependency sets of the M program."""
from __future__ import annotations

import numpy as np


class GIMStructure:
    """``entries[i][j]``: "zero", "constant", or the frozenset of coordinate names it depends on."""

    def __init__(self, entries, names):
        self.entries, self.names = entries, names

    @classmethod
    def from_program(cls, program, robot, params=(), refine=True):
        """Dependency sets of the tape (an upper bound: a cancellation such as the base
        rotation in base-frame formulations is invisible to them), refined when ``refine``
        by evaluating the program with each coordinate perturbed at random states."""
        deps = program.dependencies()
        changes = _probe(program, robot, params) if refine else None
        shape, entries = program.outputs["M"]
        qnames = program.inputs["q"]
        coord = dict(zip(qnames, robot.coordinate_names))
        out = [[None] * shape[1] for _ in range(shape[0])]
        for idx, (label, _, a) in zip(np.ndindex(tuple(shape)), entries):
            if not isinstance(a, str):
                out[idx[0]][idx[1]] = "zero" if a == 0.0 else "constant"
                continue
            on = frozenset(coord[n] for n in deps[label] if n in coord)
            if changes is not None:
                on = frozenset(c for c in on if changes[robot.coordinate_names.index(c)][idx])
            out[idx[0]][idx[1]] = on if on else "constant"
        return cls(out, list(robot.coordinate_names))

    def depends_on(self, i, j):
        """Coordinates entry (i, j) depends on (empty for zero and constant entries)."""
        e = self.entries[i][j]
        return e if isinstance(e, frozenset) else frozenset()

    @property
    def is_constant(self) -> bool:
        return all(not isinstance(e, frozenset) for row in self.entries for e in row)

    @property
    def is_diagonal(self) -> bool:
        return all(e == "zero" for i, row in enumerate(self.entries) for j, e in enumerate(row) if i != j)

    @property
    def configuration_dependent(self) -> list:
        return [(i, j) for i, row in enumerate(self.entries) for j, e in enumerate(row) if isinstance(e, frozenset)]

    def __str__(self):
        cells = [["0" if e == "zero" else "c" if e == "constant" else "f(" + ",".join(sorted(e, key=self.names.index)) + ")"
                  for e in row] for row in self.entries]
        w = max(len(c) for row in cells for c in row)
        lines = ["GIM structure (0: zero, c: constant, f(...): depends on)"]
        lines += ["  " + "  ".join(c.ljust(w) for c in row) for row in cells]
        lines.append(f"constant: {self.is_constant}, diagonal: {self.is_diagonal}")
        return "\n".join(lines)

    __repr__ = __str__


def _probe(program, robot, params, trials=4, seed=1):
    """changes[k][i, j]: whether M[i, j] moves when coordinate k alone moves (random states)."""
    from .emit import function_source

    env = {"np": np}
    exec(function_source("numpy", program, "f"), env)  # our own generated code
    f = env["f"]
    rng = np.random.default_rng(seed)
    nq = robot.nq
    q = rng.uniform(-2.0, 2.0, (trials, nq))
    q[:, robot.flex_index] *= 0.05
    args = lambda qq: [qq] + ([np.asarray(params, float)] if program.inputs.get("p") else [])
    M0 = f(*args(q))[0]
    scale = max(np.abs(M0).max(), 1e-300)
    out = []
    for k in range(nq):
        q1 = q.copy()
        q1[:, k] += rng.uniform(0.3, 1.0, trials) * (0.05 if k >= robot.n_joints else 1.0)
        out.append((np.abs(f(*args(q1))[0] - M0) > 1e-10 * scale).any(axis=0))
    return out
