"""C source of a tiny CPython extension module around the generated model functions.

Each function ``name(in1, in2, ..., out=None, p=None)`` (METH_FASTCALL, positional only)
reads C-contiguous float64 arrays through the buffer protocol (no NumPy C API), checks their
shapes, writes the result into ``out`` (allocated with ``numpy.empty`` when None) and returns
it. ``p`` (symbolic-parameter models) defaults to the parameter values the code was made with.
The same shared library also exports the plain ``fm_<what>_batch`` C entry points (ctypes).
"""
from __future__ import annotations

RUNTIME = r"""
typedef void (*fm_kernel)(double *const *in, const double *p, double *out);

static PyObject *fm_empty;  /* numpy.empty */

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
                  int ndim, const Py_ssize_t *shape, int writable)
{
    char want[64], got[64];
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

/* Shared body of every exported function. */
static PyObject *fm_call(const char *fn, const char *sig, PyObject *const *args, Py_ssize_t nargs,
                         int nin, const char *const *names, const Py_ssize_t *sizes,
                         int np_, const double *p0, PyObject *out_shape, int out_ndim,
                         const Py_ssize_t *out_dims, fm_kernel kernel)
{
    Py_buffer b[8], bo, bp;
    double *in[8];
    int got = 0;
    if (nargs < nin || nargs > nin + 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d to %d positional arguments %s, got %zd",
                     fn, nin, nin + 2, sig, nargs);
        return NULL;
    }
    for (; got < nin; ++got) {
        if (fm_get(args[got], &b[got], fn, names[got], 1, &sizes[got], 0) < 0) goto fail;
        in[got] = (double *)b[got].buf;
    }
    const double *p = p0;
    int have_p = nargs > nin + 1 && args[nin + 1] != Py_None;
    if (have_p) {
        Py_ssize_t n = np_;
        if (fm_get(args[nin + 1], &bp, fn, "p", 1, &n, 0) < 0) goto fail;
        p = (const double *)bp.buf;
    }
    PyObject *out;
    if (nargs > nin && args[nin] != Py_None) {
        out = args[nin];
        Py_INCREF(out);
    } else {
        out = PyObject_CallOneArg(fm_empty, out_shape);
        if (!out) goto fail_p;
    }
    if (fm_get(out, &bo, fn, "out", out_ndim, out_dims, 1) < 0) { Py_DECREF(out); goto fail_p; }
    kernel(in, p, (double *)bo.buf);
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
"""


def source(model_source, programs, module, param_values=()) -> str:
    """Extension source: ``model_source`` (the fm_<what> C functions) + module ``module``.

    ``programs`` maps each exported name (``inverse_dynamics``, ...) to its Program.
    """
    pv = list(param_values)
    parts = ["#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n#include <stdio.h>\n", model_source, RUNTIME,
             f"static const double fm_p0[{max(len(pv), 1)}] = {{{', '.join(repr(float(v)) for v in pv) or '0.0'}}};\n"]
    methods = []
    for w, prog in programs.items():
        ins = [g for g in prog.inputs if prog.inputs[g] and g != "p"]
        has_p = bool(prog.inputs.get("p"))
        (og, (oshape, _)), = prog.outputs.items()
        oshape = tuple(int(s) for s in oshape)
        sig = "(" + ", ".join(ins) + "[, out[, p]])"
        call = ", ".join([f"in[{k}]" for k in range(len(ins))] + (["p"] if has_p else []) + ["out"])
        names = ", ".join(f'"{g}"' for g in ins)
        sizes = ", ".join(str(len(prog.inputs[g])) for g in ins)
        dims = ", ".join(str(s) for s in oshape) or "1"
        parts.append(f"""
static PyObject *fm_shape_{w};
static void fm_kernel_{w}(double *const *in, const double *p, double *out)
{{
    (void)p;
    fm_{w}({call});
}}
static PyObject *fm_py_{w}(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{{
    static const char *const names[] = {{{names}}};
    static const Py_ssize_t sizes[] = {{{sizes}}};
    static const Py_ssize_t dims[] = {{{dims}}};
    (void)self;
    return fm_call("{w}", "{sig}", args, nargs, {len(ins)}, names, sizes, {len(pv)}, fm_p0,
                   fm_shape_{w}, {len(oshape)}, dims, fm_kernel_{w});
}}
""")
        doc = f"{w}{sig} -> {og} {oshape}: {prog.doc.get(og, '')}".replace('"', "'")
        methods.append((w, doc, oshape))
    table = "".join(f'    {{"{w}", (PyCFunction)(void (*)(void))fm_py_{w}, METH_FASTCALL, "{doc}"}},\n'
                    for w, doc, _ in methods)
    shapes = ""
    for w, _, shape in methods:
        fmt, vals = "(" + "n" * len(shape) + ")", "".join(f", (Py_ssize_t){x}" for x in shape)
        shapes += f'        if (!(fm_shape_{w} = Py_BuildValue("{fmt}"{vals}))) return NULL;\n'
    parts.append(f"""
static PyMethodDef fm_methods[] = {{
{table}    {{NULL, NULL, 0, NULL}}
}};

static struct PyModuleDef fm_module = {{PyModuleDef_HEAD_INIT, "{module}",
    "flexman generated model (see the header comment of its C source)", -1, fm_methods, NULL, NULL, NULL, NULL}};

PyMODINIT_FUNC PyInit_{module}(void)
{{
    if (!fm_empty) {{
        PyObject *numpy = PyImport_ImportModule("numpy");
        if (!numpy) return NULL;
        fm_empty = PyObject_GetAttrString(numpy, "empty");
        Py_DECREF(numpy);
        if (!fm_empty) return NULL;
{shapes}    }}
    return PyModule_Create(&fm_module);
}}
""")
    return "\n".join(parts)

