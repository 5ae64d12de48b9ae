"""Code generation from symbolic equations of motion.

* :func:`compile_eom` (``eom.compile("c" | "numpy")``): an object with the numeric API of
  ``Robot`` (mass_matrix, bias_forces, inverse_dynamics, forward_dynamics; leading batch
  dimensions; ``out=`` to write into a given array), backed by compiled C or by generated,
  vectorized NumPy code. The C library is also a CPython extension module (:mod:`.pyext`)
  whose functions are the model's methods: one float64 state runs in C straight from the
  call (cheaper than a pybind11 function), anything else (batches go through ctypes to a
  loop inside C) in Python. Without Python or NumPy headers (or with ``FLEXMAN_NO_EXT=1`` /
  ``compile("c", ext=False)``) everything uses ctypes;
* :func:`export` (``eom.export(lang, path)``): source files in C, Fortran, Python, MATLAB, Julia;
* :func:`program`: a stand-alone C simulator (RK4) reading its inputs from a text file.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import threading
import warnings
import weakref

import numpy as np

from ..dynamics.derivatives import ForwardDerivatives, InverseDerivatives
from ..lazy import lazy_names
from ..model import inputs, names
from . import cbuild

#: the compiled functions of a model (also ``sources.WHATS``)
WHATS = ("mass_matrix", "bias_forces", "inverse_dynamics", "forward_dynamics")
#: names imported on first use: loading a cached model needs none of the code generators
_LAZY = {"casadi_export": None, "fmu": None, "modelcache": None, "pyext": None, "program": "simulator", "write_input": "simulator", "c_source": "sources",
         "export": "sources", "header": "sources", "simulator": None, "sources": None}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)


#: the partial derivatives a model compiled with ``derivatives=True`` adds (``out_shapes``: one per output)
PARTIALS = ("inverse_dynamics_derivatives", "forward_dynamics_derivatives")


def calling_layout(eom, derivatives=False) -> dict:
    """{what: {"inputs": [[group, size], ...] (non-empty groups, in argument order),
    "out_shape": [...]}}: all the compiled functions' calling convention needs. With
    ``derivatives`` also the two :data:`PARTIALS` (``"out_shapes"``: a shape per output)."""
    out = {}
    for w in WHATS:
        prog = eom.program(w)
        out[w] = {"inputs": [[g, len(n)] for g, n in prog.inputs.items() if n],
                  "out_shape": [int(k) for k in next(iter(prog.outputs.values()))[0]]}
    if derivatives:
        prog = eom.program("inverse_dynamics_derivatives")
        nq, nj = eom.nq, eom.n_joints
        out[PARTIALS[0]] = {"inputs": [[g, len(n)] for g, n in prog.inputs.items() if n],
                            "out_shapes": [[nq, nq], [nq, nq]]}
        n_p = len(eom.param_values)
        takes_p = any(out[w]["inputs"][-1][0] == "p" for w in ("mass_matrix", "bias_forces", PARTIALS[0]))
        out[PARTIALS[1]] = {"inputs": [["q", nq], ["qd", nq], ["tau", nj]] + ([["p", n_p]] if takes_p else []),
                            "out_shapes": [[nq, nq], [nq, nq], [nq, nj]]}
    return out


class CompiledModel:
    """Generated code of an EOM with the numeric API of ``Robot`` (batched over leading dims).

    ``params`` holds the parameter values of a symbolic-parameter EOM (edit it to change them).
    Everything the generated code does not provide (frames, Jacobians, energies, coordinate
    slices) comes from the robot, so a compiled model can be simulated and controlled as is.
    """

    def __init__(self, eom, backend, funcs, source, ext=None, robot=None, layout=None, param_values=None):
        """From an EOM, or (a model from the cache, see :mod:`.modelcache`) from the robot, the
        :func:`calling_layout` of the code and the parameter values."""
        self.robot = robot if robot is not None else eom.robot
        self.nq, self.n_joints = self.robot.nq, self.robot.n_joints
        self.coordinate_names = list(self.robot.coordinate_names)
        self.backend, self.source = backend, source
        values = eom.param_values if eom is not None else param_values
        self.param_names = list(values)
        self._params = np.array(list(values.values()), dtype=float)
        self._layout = layout if layout is not None else calling_layout(eom)
        self._funcs = funcs
        self._out_shape = {w: tuple(lay["out_shape"]) for w, lay in self._layout.items() if "out_shape" in lay}
        self.ext = ext  # the extension module (single-state fast path) or None
        self._flat = {}  # partial derivatives of one state through the extension
        self._nq2, self._square, self._by_joint = self.nq ** 2, (self.nq, self.nq), (self.nq, self.n_joints)
        self._scratch = threading.local()  # per-thread buffers of single-state partial derivatives
        if ext is not None:  # C functions shadowing the methods: one float64 state runs in C, else the method
            p = self._params if len(self._params) else None
            me = weakref.proxy(self)  # no reference cycle: the model is freed as soon as it is unused
            for w in WHATS:
                setattr(self, w, ext.bind(w, functools.partial(getattr(CompiledModel, w), me), p))
            for w in PARTIALS:  # flat outputs of one state, or None: the general path
                if w in self._layout:
                    self._flat[w] = ext.bind(w, _no_fast_path, p)

    @property
    def params(self):
        return self._params

    @params.setter
    def params(self, values):
        self._params[:] = values  # in place: the compiled code keeps reading this buffer

    def evaluate(self, what, params, *arrays, out=None):
        """``what`` ("forward_dynamics", "mass_matrix", ...) for a batch of states, each with its
        own parameter vector: ``params`` of shape (..., len(param_names)) broadcast with the
        states' batch shape (e.g. one robot variant per state of a parameter sweep)."""
        if what not in WHATS:
            raise ValueError(f"what: unknown {what!r}; use one of {', '.join(WHATS)}")
        names = [g for g, _ in self._layout[what]["inputs"] if g != "p"]
        if len(arrays) != len(names):
            raise TypeError(f"evaluate({what!r}): expected params and {', '.join(names)}")
        return self._run(what, out, p_each=params, **dict(zip(names, arrays)))

    def _run(self, what, out, p_each=None, **arrays):
        """The general path: any batch shape (broadcast), any array-like input; ``out`` (optional)
        an array of the result's shape to write into; ``p_each``: one parameter vector per state."""
        sizes = dict(self._layout[what]["inputs"])
        groups = list(sizes)
        arrays = {g: inputs.vector(a, sizes[g], g, "n_joints" if g == "tau" else "nq") for g, a in arrays.items()}
        if any(a.dtype != np.float64 for a in arrays.values()):
            raise ValueError(f"{what}: compiled models take real numbers (complex or symbolic input: use the robot)")
        if p_each is not None:
            p_each = np.asarray(p_each, dtype=np.float64)
            if p_each.shape[-1:] != (len(self.param_names),):
                raise ValueError(f"params: expected last dimension {len(self.param_names)} "
                                 f"({', '.join(self.param_names)}), got shape {p_each.shape}")
            if "p" not in groups:  # a model without parameters: nothing to vary
                p_each = None
            else:
                arrays["p"] = p_each
        if self.backend == "numpy":
            return _into(out, self._funcs[what](*[arrays[g] if g != "p" or p_each is not None else self.params
                                                  for g in groups])[0])
        shapes = {a.shape[:-1] for a in arrays.values()}
        batch = shapes.pop() if len(shapes) == 1 else inputs.batch_shape(arrays)
        n = 1
        for k in batch:
            n *= k
        args = [n]
        keep = []
        for g in groups:
            a = self.params if g == "p" and p_each is None else arrays[g]
            if (g != "p" or p_each is not None) and a.shape[:-1] != batch:
                a = np.broadcast_to(a, batch + a.shape[-1:])
            a = np.ascontiguousarray(a)
            keep.append(a)
            args.append(a.ctypes.data)
        shape = batch + self._out_shape[what]
        direct = out is not None and _check_out(out, shape).dtype == np.float64 and out.flags.c_contiguous
        res = out if direct else np.empty(shape)
        args.append(res.ctypes.data)
        (self._funcs[what] if p_each is None else self._funcs[what + "/p"])(*args)
        return _into(out, res)

    def c_entry(self, what):
        """(address of the C function ``fm_<what>_batch(n, inputs..., outputs...)``, whether it
        takes the parameter vector p) for C code that calls the model itself (the compiled
        simulation loop); None for generated NumPy code."""
        if self.backend != "c":
            return None
        takes_p = any(g == "p" for g, _ in self._layout[what]["inputs"])
        return ctypes.cast(self._funcs[what], ctypes.c_void_p).value, takes_p

    # With the extension, CompiledModel.__init__ shadows these by C functions of the same
    # signature that handle one float64 state and call these for anything else.
    def mass_matrix(self, q, out=None):
        """M(q), shape (..., nq, nq); ``out``: optional array to write it into (returned)."""
        return self._run("mass_matrix", out, q=q)

    def bias_forces(self, q, qd, out=None):
        """b(q, qd), shape (..., nq): M qdd + b = S tau; ``out`` as for mass_matrix."""
        return self._run("bias_forces", out, q=q, qd=qd)

    def inverse_dynamics(self, q, qd, qdd, out=None):
        """Joint forces tau (..., n_joints) for the accelerations qdd; ``out`` as for mass_matrix."""
        return self._run("inverse_dynamics", out, q=q, qd=qd, qdd=qdd)

    def forward_dynamics(self, q, qd, tau, out=None):
        """Accelerations qdd (..., nq) under the joint forces tau; ``out`` as for mass_matrix."""
        return self._run("forward_dynamics", out, q=q, qd=qd, tau=tau)

    # ----- partial derivatives (a model compiled with derivatives=True; else the robot's) -----
    @property
    def has_derivatives(self) -> bool:
        """Whether the generated code includes the partial derivatives (:data:`PARTIALS`)."""
        return PARTIALS[0] in self._layout and PARTIALS[0] in self._funcs

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        """(d tau/d q, d tau/d qd, M) as ``Robot.inverse_dynamics_derivatives``, from the
        generated code (forward-mode derivatives of the traced inverse dynamics)."""
        flat = self._flat.get(PARTIALS[0])
        if flat is not None and (out := flat(q, qd, qdd)) is not None:  # one state through the extension
            n = self._nq2
            return InverseDerivatives(out[:n].reshape(self._square), out[n:].reshape(self._square), self.mass_matrix(q))
        if not self.has_derivatives:
            return self.robot.inverse_dynamics_derivatives(q, qd, qdd)
        dq, dqd = self._run_partials(PARTIALS[0], q=q, qd=qd, qdd=qdd)
        return InverseDerivatives(dq, dqd, self.mass_matrix(np.broadcast_to(q, dq.shape[:-1])))

    def forward_dynamics_derivatives(self, q, qd, tau):
        """(d qdd/d q, d qdd/d qd, d qdd/d tau) as ``Robot.forward_dynamics_derivatives``: one
        C call per batch (M's factors solve for all three)."""
        flat = self._flat.get(PARTIALS[1])
        if flat is not None and (out := flat(q, qd, tau)) is not None:  # one state through the extension
            n = self._nq2
            return ForwardDerivatives(out[:n].reshape(self._square), out[n:2 * n].reshape(self._square),
                                      out[2 * n:].reshape(self._by_joint))
        if not self.has_derivatives:
            return self.robot.forward_dynamics_derivatives(q, qd, tau)
        if self.backend == "numpy":
            qdd = self.forward_dynamics(q, qd, tau)
            dq, dqd = self._run_partials(PARTIALS[0], q=q, qd=qd, qdd=qdd)
            from ..dynamics.api import selection
            from ..dynamics.derivatives import from_inverse

            return from_inverse(dq, dqd, self.mass_matrix(np.broadcast_to(q, dq.shape[:-1])), selection(self.robot))
        return ForwardDerivatives(*self._run_partials(PARTIALS[1], q=q, qd=qd, tau=tau))

    def _run_partials(self, what, **arrays):
        """The outputs of a partial-derivative function for any batch shape of real, finite states."""
        if self.backend == "c":
            single = self._flat_partials(what, arrays) or self._single_partials(what, arrays)
            if single is not None:
                return single
        lay = self._layout[what]
        sizes = dict(lay["inputs"])
        arrays = {g: inputs.finite(inputs.vector(a, sizes[g], g, "n_joints" if g == "tau" else "nq"), g)
                  for g, a in arrays.items()}
        if any(a.dtype != np.float64 for a in arrays.values()):
            raise ValueError(f"{what}: compiled models take real numbers (complex or symbolic input: use the robot)")
        batch = np.broadcast_shapes(*(a.shape[:-1] for a in arrays.values()))
        n = int(np.prod(batch, dtype=int))
        if self.backend == "numpy":
            outs = self._funcs[what](*[arrays[g] if g != "p" else self.params for g, _ in lay["inputs"]])
            return [np.broadcast_to(o, batch + tuple(shape)).copy() for o, shape in zip(outs, lay["out_shapes"])]
        keep = [self.params if g == "p" else np.ascontiguousarray(np.broadcast_to(arrays[g], batch + (k,)))
                for g, k in lay["inputs"]]
        outs = [np.empty(batch + tuple(shape)) for shape in lay["out_shapes"]]
        self._funcs[what](n, *[a.ctypes.data for a in keep], *[o.ctypes.data for o in outs])
        return outs

    def _flat_partials(self, what, arrays):
        """One state through the extension: the outputs as views of one flat array, or None."""
        flat = self._flat.get(what)
        out = flat(*arrays.values()) if flat is not None else None
        if out is None:
            return None
        res, at = [], 0
        for shape in self._layout[what]["out_shapes"]:
            size = shape[0] * shape[1]
            res.append(out[at:at + size].reshape(shape))
            at += size
        return res

    def _single_partials(self, what, arrays):
        """One state of finite float64 vectors in C through a per-thread scratch buffer whose
        addresses are known (reading an array's address costs more than the derivatives of a
        small arm); None when the arguments are anything else (the general path decides)."""
        lay = self._layout[what]
        sizes = lay["inputs"]
        for (g, k), a in zip(sizes, arrays.values()):
            if type(a) is not np.ndarray or a.shape != (k,) or a.dtype.char != "d":
                return None
        scratch = getattr(self._scratch, what, None)
        if scratch is None:
            scratch = _Scratch(self, what)
            setattr(self._scratch, what, scratch)
        buf, at = scratch.buffer, scratch.at
        for (g, k), a in zip(sizes, arrays.values()):
            buf[at[g]:at[g] + k] = a
        if scratch.inputs @ scratch.zeros != 0.0:  # NaN unless every input is finite (inf * 0 is NaN)
            return None  # the general path names the entry that is not finite
        self._funcs[what](1, *scratch.pointers)
        out = buf[scratch.outputs_start:].copy()
        return [out[o:o + n].reshape(shape) for o, n, shape in scratch.outputs]

    def __getattr__(self, name):
        if name.startswith("_") or name == "robot":
            raise AttributeError(name)
        return getattr(self.robot, name)

    def __repr__(self):
        ext = ", extension" if self.ext is not None else ""
        return f"<CompiledModel nq={self.nq} backend={self.backend}{ext}>"


def _no_fast_path(*args, **kwargs):
    """The fallback of the extension's partial derivatives: None (the Python path decides)."""
    return None


class _Scratch:
    """Inputs (the states, then the parameters) and outputs of one single-state call, in one
    array: their addresses are read once."""

    def __init__(self, model, what):
        lay = model._layout[what]
        self.at, offset = {}, 0
        for g, k in lay["inputs"]:
            if g != "p":
                self.at[g] = offset
                offset += k
        self.inputs_end = offset
        n_p = len(model.params) if any(g == "p" for g, _ in lay["inputs"]) else 0
        self.outputs_start = offset + n_p
        self.outputs, total = [], 0
        for shape in lay["out_shapes"]:
            size = int(np.prod(shape, dtype=int))
            self.outputs.append((total, size, tuple(shape)))
            total += size
        self.buffer = np.empty(self.outputs_start + total)
        self.inputs, self.zeros = self.buffer[:self.inputs_end], np.zeros(self.inputs_end)
        base = self.buffer.ctypes.data
        self.pointers = [base + 8 * self.at[g] if g != "p" else model.params.ctypes.data for g, _ in lay["inputs"]]
        self.pointers += [base + 8 * (self.outputs_start + o) for o, _, _ in self.outputs]


def _check_out(out, shape):
    """``out`` when it is a writable array of ``shape``, else a TypeError / ValueError."""
    if not isinstance(out, np.ndarray) or not out.flags.writeable:
        raise TypeError(f"out must be a writable NumPy array, got {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(f"out: expected shape {shape}, got {out.shape}")
    return out


def _into(out, res):
    """``res``, or ``out`` holding it."""
    if out is None or out is res:
        return res
    _check_out(out, res.shape)[...] = res
    return out


_warned = []


def _build_ext(eom, source, flags, layout=None):
    """(ctypes library, extension module) of the model, or None when that cannot be built."""
    name = "fm_ext_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    from . import pyext

    text = pyext.source(source, {w: eom.program(w) for w in WHATS}, name, eom.param_values.values(), layout)
    try:
        path = cbuild.build_shared(text, flags, extension=True)
        return cbuild.load(path), cbuild.load_extension(path, name), text
    except (RuntimeError, ImportError, OSError) as exc:
        if not _warned:
            _warned.append(exc)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            warnings.warn(f"flexman: Python extension not built ({first}); using ctypes only "
                          "(slower single calls)", RuntimeWarning, stacklevel=4)
        return None


def ctypes_functions(lib, layout) -> dict:
    """{what: the library's fm_<what>_batch(n, inputs..., out) entry point, typed for ctypes}."""
    funcs = {}
    for w in PARTIALS:
        if w in layout:
            f = getattr(lib, f"fm_{w}_batch")
            f.restype = None
            f.argtypes = [ctypes.c_long] + [ctypes.c_void_p] * (len(layout[w]["inputs"]) + len(layout[w]["out_shapes"]))
            funcs[w] = f
    for w in WHATS:
        f = getattr(lib, f"fm_{w}_batch")
        f.restype = None
        f.argtypes = [ctypes.c_long] + [ctypes.c_void_p] * (len(layout[w]["inputs"]) + 1)
        funcs[w] = f
        if any(g == "p" for g, _ in layout[w]["inputs"]):
            f = getattr(lib, f"fm_{w}_pbatch")
            f.restype = None
            f.argtypes = [ctypes.c_long] + [ctypes.c_void_p] * (len(layout[w]["inputs"]) + 1)
            funcs[w + "/p"] = f
    return funcs


def compile_eom(eom, backend="c", flags=None, ext=None, derivatives=False):
    """Generate, build (C: compile and cache; NumPy: exec our own generated source) and load.

    ``ext`` (C only): also build the CPython extension for single calls; default True unless
    the environment variable ``FLEXMAN_NO_EXT=1``. A failed extension build warns once and
    falls back to ctypes. ``derivatives``: also the partial derivatives of the inverse and
    forward dynamics (:data:`PARTIALS`; the program is several times the inverse dynamics)."""
    from ..symbolic import emit
    from .sources import c_source

    if backend == "numpy":
        what = WHATS + (PARTIALS[:1] if derivatives else ())
        source = "import numpy as np\n\n" + "\n".join(
            emit.function_source("numpy", eom.program(w), f"fm_{w}") for w in what)
        env = {}
        exec(compile(source, f"<flexman generated {names.mangle(eom.robot.name)}>", "exec"), env)  # our own generated code
        funcs = {w: env[f"fm_{w}"] for w in what}
        return CompiledModel(eom, "numpy", funcs, source, layout=calling_layout(eom, derivatives))
    if backend != "c":
        raise ValueError("backend: use 'c' or 'numpy'")
    source = c_source(eom, derivatives=bool(derivatives))
    if ext is None:
        ext = os.environ.get("FLEXMAN_NO_EXT", "") in ("", "0")
    cbuild.compiler()  # no compiler: say that, not "extension not built"
    layout = calling_layout(eom, derivatives)
    built = _build_ext(eom, source, flags, layout) if ext else None
    if built:
        lib, module, ext_source = built
    else:
        lib, module, ext_source = cbuild.load(cbuild.build_shared(source, flags)), None, None
    funcs = ctypes_functions(lib, layout)
    model = CompiledModel(eom, "c", funcs, source, module, layout=layout)
    model._lib, model.ext_source = lib, ext_source
    return model
