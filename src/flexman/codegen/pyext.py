"""C source of a tiny CPython extension module around the generated model functions.

Module functions ``name(in1, in2, ..., out=None, p=None)`` (METH_FASTCALL, positional only)
take C-contiguous float64 arrays of exactly one state, check their shapes, write the result
into ``out`` (a new array when None) and return it. ``p`` (symbolic-parameter models)
defaults to the parameter values the code was made with. NumPy arrays are read through the
NumPy C API (a few flag checks, no buffer export); anything else goes through the buffer
protocol, which also makes the one-line error messages.

``bind(name, fallback, p)`` returns a function ``name(in1, ..., out=None)`` for one model
(``CompiledModel`` installs it as its method): one float64 state runs straight in C with the
model's parameter array ``p`` (or None), any other call (batches, lists, other dtypes,
wrong arguments) is handed unchanged to ``fallback``, the general Python path.

The same shared library also exports the plain ``fm_<what>_batch`` C entry points (ctypes).
"""
from __future__ import annotations

RUNTIME = r"""
typedef void (*fm_kernel)(double *const *in, const double *p, double *out);

typedef struct {
    const char *name, *sig;        /* "mass_matrix", "(q[, out[, p]])" */
    int nin;                       /* inputs besides p */
    const char *const *names;      /* their names */
    const npy_intp *sizes;         /* and lengths */
    int out_ndim;
    const npy_intp *out_dims;
    fm_kernel kernel;
} fm_spec;

/* Data of an aligned, native-order, C-contiguous float64 ndarray of exactly `shape`, else NULL. */
static inline double *fm_data(PyObject *o, int ndim, const npy_intp *shape, int writable)
{
    if (!PyArray_Check(o)) return NULL;
    PyArrayObject *a = (PyArrayObject *)o;
    int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | (writable ? NPY_ARRAY_WRITEABLE : 0);
    if (PyArray_TYPE(a) != NPY_DOUBLE || PyArray_NDIM(a) != ndim || !PyArray_CHKFLAGS(a, flags)
        || !PyArray_ISNOTSWAPPED(a)) return NULL;
    for (int i = 0; i < ndim; ++i)
        if (PyArray_DIM(a, i) != shape[i]) return NULL;
    return (double *)PyArray_DATA(a);
}

/* The kernel on ndarrays that fm_data accepts (out: NULL / None for a new array).
   NULL without an error set: some argument does not fit, take another path. */
static inline PyObject *fm_fast(const fm_spec *s, PyObject *const *args, PyObject *out, const double *p)
{
    double *in[8], *o;
    for (int k = 0; k < s->nin; ++k)
        if (!(in[k] = fm_data(args[k], 1, &s->sizes[k], 0))) return NULL;
    if (out && out != Py_None) {
        if (!(o = fm_data(out, s->out_ndim, s->out_dims, 1))) return NULL;
        Py_INCREF(out);
    } else {
        if (!(out = PyArray_SimpleNew(s->out_ndim, (npy_intp *)s->out_dims, NPY_DOUBLE))) return NULL;
        o = (double *)PyArray_DATA((PyArrayObject *)out);
    }
    s->kernel(in, p, o);
    return out;
}

static void fm_shape_str(char *buf, size_t n, int ndim, const Py_ssize_t *shape)
{
    if (ndim == 1) { snprintf(buf, n, "(%zd,)", shape[0]); return; }
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < ndim && k < n; ++i)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %zd" : "%zd", shape[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
}

/* Get a C-contiguous float64 buffer of exactly `shape`; on failure set one clear error. */
static int fm_get(PyObject *o, Py_buffer *b, const char *fn, const char *name,
                  int ndim, const npy_intp *dims, int writable)
{
    char want[64], got[64];
    Py_ssize_t shape[2];
    for (int i = 0; i < ndim; ++i) shape[i] = (Py_ssize_t)dims[i];
    fm_shape_str(want, sizeof want, ndim, shape);
    if (PyObject_GetBuffer(o, b, PyBUF_FORMAT | PyBUF_ND | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s(): %s must be a C-contiguous%s float64 array of shape %s, got %.60s",
                     fn, name, writable ? ", writable" : "", want, Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *f = b->format ? b->format : "B";
#if PY_LITTLE_ENDIAN
    if (*f == '<' || *f == '=' || *f == '@') ++f;
#else
    if (*f == '>' || *f == '!' || *f == '=' || *f == '@') ++f;
#endif
    if (f[0] != 'd' || f[1]) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be a float64 array, got buffer format '%s'", fn, name, b->format ? b->format : "B");
        PyBuffer_Release(b);
        return -1;
    }
    int ok = b->ndim == ndim;
    for (int i = 0; ok && i < ndim; ++i)
        ok = b->shape[i] == shape[i];
    if (!ok) {
        fm_shape_str(got, sizeof got, b->ndim, b->shape);
        if (b->ndim == 0) snprintf(got, sizeof got, "()");
        PyErr_Format(PyExc_ValueError, "%s(): %s must have shape %s, got %s", fn, name, want, got);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* Module function: fm_fast when it applies, else every argument through the buffer protocol. */
static PyObject *fm_call(const fm_spec *s, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer b[8], bo, bp;
    double *in[8];
    int got = 0, nin = s->nin;
    if (nargs < nin || nargs > nin + 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d to %d positional arguments %s, got %zd",
                     s->name, nin, nin + 2, s->sig, nargs);
        return NULL;
    }
    PyObject *out = nargs > nin && args[nin] != Py_None ? args[nin] : NULL;
    int have_p = nargs > nin + 1 && args[nin + 1] != Py_None;
    const double *p = have_p ? fm_data(args[nin + 1], 1, fm_np, 0) : fm_p0;
    if (p) {
        PyObject *r = fm_fast(s, args, out, p);
        if (r || PyErr_Occurred()) return r;
    }
    for (; got < nin; ++got) {
        if (fm_get(args[got], &b[got], s->name, s->names[got], 1, &s->sizes[got], 0) < 0) goto fail;
        in[got] = (double *)b[got].buf;
    }
    p = fm_p0;
    if (have_p) {
        if (fm_get(args[nin + 1], &bp, s->name, "p", 1, fm_np, 0) < 0) goto fail;
        p = (const double *)bp.buf;
    }
    if (out)
        Py_INCREF(out);
    else if (!(out = PyArray_SimpleNew(s->out_ndim, (npy_intp *)s->out_dims, NPY_DOUBLE)))
        goto fail_p;
    if (fm_get(out, &bo, s->name, "out", s->out_ndim, s->out_dims, 1) < 0) { Py_DECREF(out); goto fail_p; }
    s->kernel(in, p, (double *)bo.buf);
    PyBuffer_Release(&bo);
    if (have_p) PyBuffer_Release(&bp);
    while (got--) PyBuffer_Release(&b[got]);
    return out;
fail_p:
    if (have_p) PyBuffer_Release(&bp);
fail:
    while (got--) PyBuffer_Release(&b[got]);
    return NULL;
}

/* Bound function (self: the tuple (fallback, p or None)): called as name(in..., out=None);
   fm_fast when it applies, else the same call of fallback. */
static PyObject *fm_bound(const fm_spec *s, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames)
{
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int fits = nk ? (nk == 1 && nargs == s->nin
                     && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "out") == 0)
                  : (nargs == s->nin || nargs == s->nin + 1);
    if (fits) {
        PyObject *out = nargs + nk > s->nin ? args[s->nin] : NULL, *pa = PyTuple_GET_ITEM(self, 1);
        const double *p = pa == Py_None ? fm_p0 : (const double *)PyArray_DATA((PyArrayObject *)pa);
        PyObject *r = fm_fast(s, args, out, p);
        if (r || PyErr_Occurred()) return r;
    }
    return PyObject_Vectorcall(PyTuple_GET_ITEM(self, 0), args, (size_t)nargs, kwnames);
}
"""

BIND = r"""
/* bind(name, fallback, p): the bound function `name` of one model (see fm_bound). */
static PyObject *fm_bind(PyObject *module, PyObject *args)
{
    const char *name;
    PyObject *fallback, *p;
    (void)module;
    if (!PyArg_ParseTuple(args, "sOO:bind", &name, &fallback, &p)) return NULL;
    PyMethodDef *def = fm_bound_defs;
    while (def->ml_name && strcmp(def->ml_name, name)) ++def;
    if (!def->ml_name) return PyErr_Format(PyExc_ValueError, "bind(): no function %s", name);
    if (!PyCallable_Check(fallback)) return PyErr_Format(PyExc_TypeError, "bind(): fallback must be callable");
    if (p != Py_None && !fm_data(p, 1, fm_np, 0))
        return PyErr_Format(PyExc_ValueError, "bind(): p must be a C-contiguous float64 array of shape (%zd,)",
                            (Py_ssize_t)fm_np[0]);
    PyObject *self = PyTuple_Pack(2, fallback, p);
    if (!self) return NULL;
    PyObject *f = PyCFunction_NewEx(def, self, NULL);
    Py_DECREF(self);
    return f;
}
"""


def source(model_source, programs, module, param_values=(), layout=None) -> str:
    """Extension source: ``model_source`` (the fm_<what> C functions) + module ``module``.

    ``programs`` maps each exported name (``inverse_dynamics``, ...) to its Program. ``layout``
    (a ``calling_layout`` with derivatives) adds the partial derivatives (``codegen.PARTIALS``),
    their several outputs written one after the other into one flat array.
    """
    pv = list(param_values)
    parts = ["#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n#include <stdio.h>\n#include <string.h>\n"
             "#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION\n#include <numpy/arrayobject.h>\n",
             model_source,
             f"static const double fm_p0[{max(len(pv), 1)}] = {{{', '.join(repr(float(v)) for v in pv) or '0.0'}}};\n"
             f"static const npy_intp fm_np[1] = {{{len(pv)}}};\n",
             RUNTIME]
    methods, bound = [], []
    specs = []  # (name, [(input, size)], takes p, [output offsets], output shape, doc of the output)
    for w, prog in programs.items():
        (og, (oshape, _)), = prog.outputs.items()
        specs.append((w, [(g, len(prog.inputs[g])) for g in prog.inputs if prog.inputs[g] and g != "p"],
                      bool(prog.inputs.get("p")), [0], tuple(int(s) for s in oshape), og, prog.doc.get(og, "")))
    for w, lay in (layout or {}).items():
        if "out_shapes" in lay:
            sizes = [int(a) * int(b) for a, b in lay["out_shapes"]]
            offsets = [sum(sizes[:k]) for k in range(len(sizes))]
            specs.append((w, [(g, k) for g, k in lay["inputs"] if g != "p"], any(g == "p" for g, _ in lay["inputs"]),
                          offsets, (sum(sizes),), "partials", "the partial derivatives one after the other"))
    for w, ins_sizes, has_p, offsets, oshape, og, odoc in specs:
        ins = [g for g, _ in ins_sizes]
        sig = "(" + ", ".join(ins) + "[, out[, p]])"
        call = ", ".join([f"in[{k}]" for k in range(len(ins))] + (["p"] if has_p else [])
                         + [f"out + {o}" if o else "out" for o in offsets])
        names = ", ".join(f'"{g}"' for g in ins)
        sizes = ", ".join(str(k) for _, k in ins_sizes)
        dims = ", ".join(str(s) for s in oshape) or "1"
        parts.append(f"""
static void fm_kernel_{w}(double *const *in, const double *p, double *out)
{{
    (void)p;
    fm_{w}({call});
}}
static const char *const fm_names_{w}[] = {{{names}}};
static const npy_intp fm_sizes_{w}[] = {{{sizes}}};
static const npy_intp fm_dims_{w}[] = {{{dims}}};
static const fm_spec fm_spec_{w} = {{"{w}", "{sig}", {len(ins)}, fm_names_{w}, fm_sizes_{w},
                                     {len(oshape)}, fm_dims_{w}, fm_kernel_{w}}};
static PyObject *fm_py_{w}(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{{
    (void)self;
    return fm_call(&fm_spec_{w}, args, nargs);
}}
static PyObject *fm_bound_{w}(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{{
    return fm_bound(&fm_spec_{w}, self, args, nargs, kwnames);
}}
""")
        text = f"-> {og} {oshape}: {odoc}".replace('"', "'")
        methods.append((w, f"{w}{sig} {text}"))
        bound.append((w, f"{w}({', '.join(ins)}, out=None) {text} (one float64 state in C, else the general path)"))
    table = "".join(f'    {{"{w}", (PyCFunction)(void (*)(void))fm_py_{w}, METH_FASTCALL, "{doc}"}},\n'
                    for w, doc in methods)
    btable = "".join(f'    {{"{w}", (PyCFunction)(void (*)(void))fm_bound_{w}, METH_FASTCALL | METH_KEYWORDS, '
                     f'"{doc}"}},\n' for w, doc in bound)
    parts.append(f"""
static PyMethodDef fm_bound_defs[] = {{
{btable}    {{NULL, NULL, 0, NULL}}
}};
{BIND}
static PyMethodDef fm_methods[] = {{
{table}    {{"bind", fm_bind, METH_VARARGS, "bind(name, fallback, p): the function name(..., out=None) of one model"}},
    {{NULL, NULL, 0, NULL}}
}};

static struct PyModuleDef fm_module = {{PyModuleDef_HEAD_INIT, "{module}",
    "flexman generated model (see the header comment of its C source)", -1, fm_methods, NULL, NULL, NULL, NULL}};

PyMODINIT_FUNC PyInit_{module}(void)
{{
    import_array();
    return PyModule_Create(&fm_module);
}}
""")
    return "\n".join(parts)
