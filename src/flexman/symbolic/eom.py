"""The symbolic equations of motion ``M(q) q̈ + b(q, q̇) = S τ`` of one robot.

:func:`derive` traces a formulation once into one tape (M, b, inverse and forward dynamics
share their intermediates) and wraps it in an :class:`EOM`, which turns the tape into
straight-line programs (dead-code eliminated per output set) for operation counts, text,
LaTeX, SymPy matrices, GIM structure, compiled code and exported source.
"""
from __future__ import annotations

import numpy as np

from ..model import engine, names
from ..model.errors import ModelError
from ..dynamics.structure import build
from . import mimic as mm
from . import recursions as tr
from .program import Program
from .tracer import Tape

FORMULATIONS = ("newton_euler", "lagrange", "book", "denoc")
WHATS = ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics", "eom", "inverse_dynamics_derivatives")

DOC = {
    "M": "mass matrix M(q), nq x nq",
    "b": "bias forces b(q, qd): Coriolis/centrifugal, gravity, elastic and damping terms",
    "tau": "generalized forces M(q) qdd + b(q, qd) (joint torques, then flexible residuals)",
    "qdd": "accelerations M(q)^-1 (S tau - b(q, qd)) (LDL^T solve)",
    "dtau_dq": "d tau / d q of tau = M(q) qdd + b(q, qd), nq x nq (row i: tau_i)",
    "dtau_dqd": "d tau / d qd, nq x nq (d tau / d qdd is M)",
}
# what -> (input groups, output groups)
LAYOUT = {
    "mass_matrix": (("q", "p"), ("M",)),
    "bias_forces": (("q", "qd", "p"), ("b",)),
    "inverse_dynamics": (("q", "qd", "qdd", "p"), ("tau",)),
    "forward_dynamics": (("q", "qd", "tau", "p"), ("qdd",)),
    "eom": (("q", "qd", "p"), ("M", "b")),
    "inverse_dynamics_derivatives": (("q", "qd", "qdd", "p"), ("dtau_dq", "dtau_dqd")),
}
NEEDS = {"mass_matrix": {"M"}, "bias_forces": {"b"}, "inverse_dynamics": {"tau"},
         "forward_dynamics": {"M", "b", "qdd"}, "eom": {"M", "b"}}


def _trace(robot, formulation, parameters, fold=True, cse=True, need=("M", "b", "tau", "qdd"), external=None,
           truncate=None, zero_q1=False):
    """Trace the requested terms into a fresh tape: (tape, inputs, values, param values, notes,
    fell_back: True where a formulation other than ``book`` traced Book's recursion instead).
    ``truncate=k`` (Book's recursion only): the M output keeps its terms of degree <= k in q_f.
    ``zero_q1``: trace in link 1's frame (``recursions.in_link1_frame``: q1 = 0 where M does not
    depend on q1; right for M only; the program keeps q1 as an unused input)."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation: unknown {formulation!r}; use one of {', '.join(FORMULATIONS)}")
    if truncate is not None and (formulation != "book" or int(truncate) != truncate or truncate < 0):
        raise ValueError("truncate: a degree k >= 0, with formulation='book' only")
    if parameters not in ("numeric", "symbolic"):
        raise ValueError("parameters: use 'numeric' or 'symbolic'")
    need = set(need) | ({"M", "b"} if "qdd" in need else set())
    tape = Tape(fold=fold, cse=cse)
    x_inputs = tr.coordinate_inputs(tape, robot.nq, robot.n_joints)
    notes = []
    reduced = robot  # with mimic joints: trace the full robot at q_full = G q + c, reduce by G^T below
    mimic = robot.mimic_map() if getattr(robot, "mimic", None) else None
    if mimic is not None:
        G, c = mimic
        robot = reduced.full
        x_inputs_full = {"q": mm.expand(G, c, x_inputs["q"]), "qd": mm.expand(G, c, x_inputs["qd"], offset=False),
                         "qdd": mm.expand(G, c, x_inputs["qdd"], offset=False), "tau": None}
        if formulation == "lagrange":  # (it differentiates by the coordinates it traces)
            notes.append("lagrange: mimic joints: traced Book's recursion instead")
    if parameters == "symbolic":
        from .params import symbolic_model

        model, pvals, pnotes = symbolic_model(robot, tape)
        notes += pnotes
    else:
        model, pvals = build(robot), {}
    x = x_inputs if mimic is None else x_inputs_full
    x = dict(x, q=tr.in_link1_frame(model, x["q"])) if zero_q1 else x
    if any(lk.joint_coulomb for lk in robot.links):
        notes.append("Coulomb friction is not traced (it branches on the sign of qd)")
    terms = None
    if formulation in ("newton_euler", "denoc"):
        if robot.is_rigid and robot.n_motors:
            notes.append(f"{formulation}: elastic joints (motor coordinates), traced Book's 4x4 recursion instead")
        elif robot.is_rigid and parameters == "numeric":
            terms = tr.rigid_terms(robot, x, formulation, notes, need)
        elif robot.is_rigid:
            notes.append(f"{formulation}: symbolic parameters are traced through Book's 4x4 recursion")
        else:
            notes.append(f"{formulation}: flexible arm, traced Book's 4x4 recursion instead")
    elif formulation == "lagrange" and mimic is None:
        from .christoffel import lagrange_terms

        terms = lagrange_terms(robot, model, x, notes)  # None: too large, noted
    fell_back = terms is None and formulation != "book"
    if terms is None:  # the exact M is needed with truncate only for qdd (its M output is the truncated one)
        exact = need - {"M"} if truncate is not None and "qdd" not in need else need
        terms = tr.book_terms(model, x, exact, composite=formulation != "book")
    M, b, tau = terms
    M_out = M
    if truncate is not None and "M" in need:
        M_out = tr.book_terms(model, x, ("M",), truncate=int(truncate))[0]
        notes.append(f"truncate={int(truncate)}: the mass matrix output (mass_matrix, eom) keeps only its terms of "
                     "degree <= k in the flexible coordinates (Taylor polynomial about q_f = 0); b, inverse and "
                     "forward dynamics are exact")
    if tau is None and "tau" in need:  # formulations that give only M and b
        tau = M @ x["qdd"] + b
    if external is None:
        external = parameters == "symbolic"
    if external and (b is not None or tau is not None):
        # DYNAMAN keeps external forces symbolic: a wrench (force, moment; base frame) at the
        # distal frame origin of every link, named F<i>x..F<i>z, T<i>x..T<i>z, entering as J^T w.
        # They travel with the parameter vector (default 0), so compiled code takes them too.
        names = [f"{c}{i + 1}{a}" for i in range(robot.n_joints) for c in "FT" for a in "xyz"]
        w = np.array(tape.inputs(names) + [None], dtype=object)[:-1].reshape(robot.n_joints, 6)
        pvals = {**pvals, **{n: 0.0 for n in names}}
        q_ext = tr.external_forces(model, x["q"], w)
        b = None if b is None else b - q_ext
        tau = None if tau is None else tau - q_ext
        notes.append("external wrenches F<i>, T<i> at each link's distal frame are inputs (default 0)")
    if mimic is not None:  # M = G^T M_full G, b = G^T b_full, tau = G^T tau_full
        red = lambda v, f: None if v is None else f(mimic[0], v)
        M_red = red(M, mm.reduce_matrix)
        M_out = M_red if M_out is M else red(M_out, mm.reduce_matrix)
        M, b, tau = M_red, red(b, mm.reduce_vector), red(tau, mm.reduce_vector)
        robot, x = reduced, x_inputs
    values = {k: v for k, v in (("M", M_out), ("b", b), ("tau", tau)) if k in need}
    if "qdd" in need:
        values["qdd"] = tr.forward_terms(M, b, x["tau"], robot.actuated)
    x_inputs["p"] = np.array([tape.input(n) for n in pvals] + [None], dtype=object)[:-1]
    return tape, x_inputs, values, pvals, notes, fell_back


class EOM:
    """Symbolic equations of motion of ``robot``; see the module docstring. ``fell_back``: True
    where ``formulation`` could not trace this arm and Book's recursion was traced instead
    (``notes`` says why)."""

    def __init__(self, robot, formulation="newton_euler", parameters="numeric", fold=True, cse=True, external=None,
                 truncate=None, reduce_mass_matrix=True):
        self.robot, self.formulation, self.parameters = robot, formulation, parameters
        self.options = dict(fold=fold, cse=cse, external=external, reduce_mass_matrix=reduce_mass_matrix,
                            truncate=truncate)
        self.tape, self._x, self._values, self.param_values, self.notes, self.fell_back = _trace(
            robot, formulation, parameters, fold, cse, external=external, truncate=truncate)
        self._programs = {}
        self._mass_matrix_steps = None

    # ----- programs and counts ----------------------------------------------------------
    @property
    def nq(self):
        return self.robot.nq

    @property
    def n_joints(self):
        return self.robot.n_joints

    def program(self, what="eom") -> Program:
        """Straight-line program (dead code removed) for one output set."""
        if what not in LAYOUT:
            raise ValueError(f"what: unknown {what!r}; use one of {', '.join(WHATS)}")
        if what not in self._programs:
            if what == "mass_matrix" and self.options["reduce_mass_matrix"]:
                program = self._reduced_mass_matrix()[1]
            else:
                program = self.traced_program(what)
            self._programs[what] = program
        return self._programs[what]

    def traced_program(self, what="eom") -> Program:
        """The straight-line program of one output set as traced (dead code removed), before the
        mass matrix's reductions: what ``reduce_mass_matrix=False`` would give."""
        if what not in LAYOUT:
            raise ValueError(f"what: unknown {what!r}; use one of {', '.join(WHATS)}")
        if what == "inverse_dynamics_derivatives" and "dtau_dq" not in self._values:
            self._trace_derivatives()
        return _program(self.tape, self._x, self._values, what, self.robot)

    def _trace_derivatives(self):
        """Record d tau / d q and d tau / d qd on the tape (forward mode through the traced
        inverse dynamics, ``tapediff``): one program, evaluated as generated code like the rest."""
        from .tapediff import jacobian

        tau = list(np.ravel(self._values["tau"]))
        name = lambda v: self.tape.ops[v.idx][1][0]
        n = self.nq
        for g, out in (("q", "dtau_dq"), ("qd", "dtau_dqd")):
            J = jacobian(self.tape, tau, [name(v) for v in self._x[g]])
            self._values[out] = np.array([c for row in J for c in row] + [None], dtype=object)[:-1].reshape(n, n)

    def op_count(self, what="inverse_dynamics") -> dict:
        """{"mul", "add" (incl. sub), "div", "fn" (sin/cos/sqrt)} of the final program."""
        return self.program(what).op_count()

    def passes(self, what="inverse_dynamics") -> list:
        """Operation counts after each simplification pass, each measured on its own trace:
        [(pass, counts)] for the raw trace, + folding at creation, + sharing of repeated
        instructions (hash-consing), + dead-code elimination; for the mass matrix also + M traced
        in link 1's frame (q1 = 0) and + the polynomial normal form (flexman.symbolic.polynomial),
        each kept only where it lowers the count (``reduce_mass_matrix=False`` turns both off)."""
        out = []
        for label, fold, cse in (("raw trace", False, False), ("+ constant folding (0, +-1, numbers)", True, False),
                                 ("+ repeated-subexpression sharing", True, True)):
            need = NEEDS[what]
            tape, x, values, _, _, _ = _trace(self.robot, self.formulation, self.parameters, fold, cse, need,
                                           external=self.options["external"], truncate=self.options["truncate"])
            out.append((label, tape.count()))
        program = _program(tape, x, values, what, self.robot)
        out.append(("+ dead-code elimination", program.op_count()))
        if what == "mass_matrix" and self.options["reduce_mass_matrix"]:
            frame1, poly = self._reduced_mass_matrix()
            out.append(("+ traced in link 1's frame (q1 = 0), if fewer", frame1.op_count()))
            out.append(("+ polynomial normal form (cos^2 = 1 - sin^2, like terms, roundoff zeros; shared sums), if fewer",
                        poly.op_count()))
        return out

    def _reduced_mass_matrix(self):
        """(the cheaper of the tape's M and M traced in link 1's frame, the cheapest after also
        the polynomial normal form): a step keeps its input where it does not lower the count.
        Book's recursion already traces M in link 1's frame (``recursions.book_terms``), so only the
        other formulations are traced again. Computed once (``program`` and ``passes`` read it)."""
        if self._mass_matrix_steps is None:
            from .polynomial import reduce, total

            o = self.options
            frame1 = _program(self.tape, self._x, self._values, "mass_matrix", self.robot)
            if self.formulation != "book":
                tape, x, values, _, _, _ = _trace(self.robot, self.formulation, self.parameters, o["fold"], o["cse"],
                                               ("M",), external=o["external"], zero_q1=True)
                frame1 = min((frame1, _program(tape, x, values, "mass_matrix", self.robot)), key=total)
            self._mass_matrix_steps = (frame1, reduce(frame1))
        return self._mass_matrix_steps

    # ----- SymPy and text ---------------------------------------------------------------
    @property
    def M(self):
        """Mass matrix as a SymPy Matrix in q (and parameter) symbols; see :meth:`sympy`."""
        return self.sympy("M")

    @property
    def b(self):
        """Bias forces as a SymPy column in q, qd (and parameter) symbols."""
        return self.sympy("b")

    def sympy(self, group="M", inline_limit=20000):
        """SymPy matrix of an output group. Intermediates are substituted while the expanded
        trees stay below ``inline_limit`` nodes; beyond that entries keep the intermediates
        Z### (their definitions: ``eom.program(...)``)."""
        from .convert import to_sympy_matrix

        what = {"M": "mass_matrix", "b": "bias_forces", "tau": "inverse_dynamics", "qdd": "forward_dynamics"}[group]
        return to_sympy_matrix(self.program(what), group, inline_limit)

    def text(self, what="eom") -> str:
        """Readable equations: intermediates Z### = ..., then M[i,j] = ..., b[i] = ..."""
        from .convert import program_text

        head = [f"# {names.comment(self.robot.name)}: equations of motion M(q) qdd + b(q, qd) = S tau "
                f"({self.formulation}, {self.parameters} parameters)"]
        head += [f"# q{k + 1}: {n}" for k, n in enumerate(self.robot.coordinate_names)]
        head += [f"# note: {n}" for n in self.notes]
        return "\n".join(head) + "\n" + program_text(self.program(what))

    def latex(self, what="eom") -> str:
        from .convert import program_latex

        return program_latex(self.program(what))

    def gim_structure(self):
        """Which M entries are zero, constant, or depend on which coordinates (003)."""
        from .mass_structure import GIMStructure

        return GIMStructure.from_program(self.program("mass_matrix"), self.robot, list(self.param_values.values()))

    def jacobian(self, link=-1, point=None):
        """Endpoint (or ``point`` of ``link``) geometric Jacobian, 6 x nq SymPy matrix."""
        from .convert import to_sympy_matrix
        from .jacobian import jacobian_program

        return to_sympy_matrix(jacobian_program(self, link, point), "J", 20000)

    # ----- code -------------------------------------------------------------------------
    def compile(self, backend="c", **kwargs):
        """An object with the numeric API of Robot, evaluating the generated code."""
        return engine.require("codegen").compile_eom(self, backend, **kwargs)

    def casadi(self, which=None) -> dict:
        """The equations as CasADi ``SX`` functions (exact derivatives for optimisers):
        {"inverse_dynamics": f(q, qd, qdd), "forward_dynamics": f(q, qd, tau), "mass_matrix": f(q),
        "bias_forces": f(q, qd), "tip_position": f(q) (the last link's distal frame origin)}, or
        only the names in ``which``. Built instruction by instruction from the programs
        (:mod:`flexman.codegen.casadi_export`); M is the traced program without the polynomial
        normal form (the same values, and no time spent reducing a program CasADi will differentiate)."""
        from .kinematics import position_program

        casadi_export = engine.require("codegen").casadi_export
        FUNCTIONS, casadi_functions = casadi_export.FUNCTIONS, casadi_export.casadi_functions

        which = tuple(FUNCTIONS) if which is None else tuple(which)
        unknown = [w for w in which if w not in FUNCTIONS]
        if unknown:
            raise ValueError(f"which: unknown {unknown[0]!r}; use some of {', '.join(FUNCTIONS)}")
        programs = {}
        for name in which:
            prog = FUNCTIONS[name][0]
            if prog == "position":  # end-effector first, then the links' tip deflections
                programs[prog] = position_program(self)
            elif prog == "mass_matrix":
                programs[prog] = _program(self.tape, self._x, self._values, prog, self.robot)
            else:
                programs[prog] = self.program(prog)
        return casadi_functions(self, programs, which)

    def export(self, lang, path, what=None):
        """Write the equations as source code in ``lang`` (c, fortran, python, matlab, julia)."""
        return engine.require("codegen").export(self, lang, path, what)

    def fmu(self, path, kind="both", controller=None, step_size=1e-3, q0=None, qd0=None, force=True,
            output_frames=(), method="auto", rho_inf=0.8, rtol=1e-8, atol=1e-10, derivatives=False, sensors=None):
        """Write an FMI 2.0 FMU of the robot to ``path`` (``.fmu``) and return the path: model
        exchange and/or co-simulation (``kind``: "me", "cs", "both"), the physical parameters
        as FMU parameters, joint torques as inputs (see :mod:`flexman.codegen.fmu`).
        ``controller``: a built-in controller of ``fm.control`` (PID, ComputedTorque, Decoupling;
        e.g. ``fm.control.from_spec(robot, robot.controller)``), whose set-points become inputs.
        Equations with numeric parameters are derived again with symbolic ones (the FMU's
        parameters); external wrenches are not part of the FMU. ``output_frames``: links or named
        frames (a URDF's ``tool0``) whose placement the FMU outputs besides the end effector's.
        ``method``: the co-simulation's integrator, "rk4", "generalized_alpha" (implicit, for stiff
        arms; ``rho_inf`` its damping), "radau5" (Radau IIA with step-size control for ``rtol``,
        ``atol``, steps at most ``step_size``) or "auto" (generalized-alpha where RK4 at
        ``step_size`` is unstable for the arm's highest mode). ``derivatives``: model exchange
        provides fmi2GetDirectionalDerivative from the model's partial derivatives (no controller).
        ``sensors``: the sensors whose channels the FMU outputs without noise (None: the robot's
        own, its model file's ``sensors:``; ``[]``: none; a list of ``fm.sensors`` sensors or a
        SensorSet)."""
        fmu = engine.require("codegen").fmu
        write_fmu = fmu.write_fmu
        fmu.check_size(self.robot)  # before deriving the symbolic-parameter equations again
        eom = self
        if self.parameters != "symbolic" or self.param_values.keys() != self._physical_parameters():
            o = self.options
            eom = EOM(self.robot, self.formulation, "symbolic", fold=o["fold"], cse=o["cse"], external=False,
                      reduce_mass_matrix=False)  # M's polynomial normal form costs seconds; the FMU need not
        return write_fmu(eom, path, kind, controller, step_size, q0, qd0, force, output_frames=output_frames,
                         method=method, rho_inf=rho_inf, rtol=rtol, atol=atol, derivatives=derivatives, sensors=sensors)

    def _physical_parameters(self):
        """The names of the parameters that are physical (not the external wrench inputs)."""
        from .params import parameter_values

        return parameter_values(self.robot).keys()

    def __repr__(self):
        c = self.op_count("inverse_dynamics")
        return (f"<EOM {self.robot.name}: nq={self.nq}, {self.formulation}, {self.parameters} parameters, "
                f"inverse dynamics {c['mul']} mul {c['add']} add>")

    def _repr_html_(self):
        """Notebook view: the equations as MathML (text when too long), counts, coordinates."""
        from ..model.engine import require

        return require("eom_html")(self)

    def _repr_latex_(self):
        """Notebook view as LaTeX: the straight-line program (``latex()``)."""
        return self.latex()


def _program(tape, x, values, what, robot):
    ins, outs = LAYOUT[what]
    inputs = {}
    for g in ins:
        inputs[g] = [tape.ops[v.idx][1][0] for v in x[g]]
    return Program.from_tape(what, tape, inputs, {g: values[g] for g in outs}, doc={g: DOC[g] for g in outs})


def derive(robot, formulation="newton_euler", parameters="numeric", **options) -> EOM:
    """Symbolic equations of motion of ``robot`` (see :class:`EOM`)."""
    return EOM(robot, formulation, parameters, **options)
