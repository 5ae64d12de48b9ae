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
import warnings
import weakref

import numpy as np

from ..lazy import lazy_names
from ..model import inputs, names
from . import cbuild

#: the compiled functions of a model (also ``sources.WHATS``)
WHATS = ("mass_matrix", "bias_forces", "inverse_dynamics", "forward_dynamics")
#: names imported on first use: loading a cached model needs none of the code generators
_LAZY = {"casadi_export": None, "fmu": None, "pyext": None, "program": "simulator", "write_input": "simulator", "c_source": "sources",
         "export": "sources", "header": "sources", "simulator": None, "sources": None}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)


def calling_layout(eom) -> dict:
    """{what: {"inputs": [[group, size], ...] (non-empty groups, in argument order),
    "out_shape": [...]}}: all the compiled functions' calling convention needs."""
    out = {}
    for w in WHATS:
        prog = eom.program(w)
        out[w] = {"inputs": [[g, len(n)] for g, n in prog.inputs.items() if n],
                  "out_shape": [int(k) for k in next(iter(prog.outputs.values()))[0]]}
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
        self._out_shape = {w: tuple(lay["out_shape"]) for w, lay in self._layout.items()}
        self.ext = ext  # the extension module (single-state fast path) or None
        if ext is not None:  # C functions shadowing the methods: one float64 state runs in C, else the method
            p = self._params if len(self._params) else None
            me = weakref.proxy(self)  # no reference cycle: the model is freed as soon as it is unused
            for w in WHATS:
                setattr(self, w, ext.bind(w, functools.partial(getattr(CompiledModel, w), me), p))

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
        batch = shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*(a.shape[:-1] for a in arrays.values()))
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

    def __getattr__(self, name):
        if name.startswith("_") or name == "robot":
            raise AttributeError(name)
        return getattr(self.robot, name)

    def __repr__(self):
        ext = ", extension" if self.ext is not None else ""
        return f"<CompiledModel nq={self.nq} backend={self.backend}{ext}>"


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


def _build_ext(eom, source, flags):
    """(ctypes library, extension module) of the model, or None when that cannot be built."""
    name = "fm_ext_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    from . import pyext

    text = pyext.source(source, {w: eom.program(w) for w in WHATS}, name, eom.param_values.values())
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


def compile_eom(eom, backend="c", flags=None, ext=None):
    """Generate, build (C: compile and cache; NumPy: exec our own generated source) and load.

    ``ext`` (C only): also build the CPython extension for single calls; default True unless
    the environment variable ``FLEXMAN_NO_EXT=1``. A failed extension build warns once and
    falls back to ctypes."""
    from ..symbolic import emit
    from .sources import c_source

    if backend == "numpy":
        source = "import numpy as np\n\n" + "\n".join(
            emit.function_source("numpy", eom.program(w), f"fm_{w}") for w in WHATS)
        env = {}
        exec(compile(source, f"<flexman generated {names.mangle(eom.robot.name)}>", "exec"), env)  # our own generated code
        return CompiledModel(eom, "numpy", {w: env[f"fm_{w}"] for w in WHATS}, source)
    if backend != "c":
        raise ValueError("backend: use 'c' or 'numpy'")
    source = c_source(eom)
    if ext is None:
        ext = os.environ.get("FLEXMAN_NO_EXT", "") in ("", "0")
    cbuild.compiler()  # no compiler: say that, not "extension not built"
    built = _build_ext(eom, source, flags) if ext else None
    if built:
        lib, module, ext_source = built
    else:
        lib, module, ext_source = cbuild.load(cbuild.build_shared(source, flags)), None, None
    funcs = ctypes_functions(lib, calling_layout(eom))
    model = CompiledModel(eom, "c", funcs, source, module)
    model._lib, model.ext_source = lib, ext_source
    return model
