"""Array operations that work on float arrays (batched) and on object arrays of symbols.

The dynamics algorithms are written once against these few functions, so the same code
evaluates numerically, traces symbolically and feeds code generation.
"""
from __future__ import annotations

import numpy as np


def is_symbolic(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == object or (
        not isinstance(x, (np.ndarray, float, int, complex, np.generic))
    )


def _elementwise(name):
    npfun = getattr(np, name)

    def fun(x):
        if is_symbolic(x):
            import symengine

            sfun = getattr(symengine, name)
            arr = np.asarray(x, dtype=object)
            out = np.empty(arr.shape, dtype=object)
            for idx in np.ndindex(arr.shape):
                el = arr[idx]
                if isinstance(el, (int, float, np.number)):  # a number among symbols stays a number
                    out[idx] = float(npfun(el))
                else:  # tracer scalars (flexman.symbolic) carry their own sin/cos
                    out[idx] = getattr(el, name)() if hasattr(el, name) else sfun(el)
            return out if arr.shape else out[()]
        return npfun(x)

    fun.__name__ = name
    return fun


sin = _elementwise("sin")
cos = _elementwise("cos")


def asarray(x):
    """Float array for numbers (complex kept, for complex-step checks), object array for symbols."""
    if is_symbolic(x):
        return np.asarray(x, dtype=object)
    arr = np.asarray(x)
    return arr if np.iscomplexobj(arr) else arr.astype(float)


def zeros_like_batch(batch_shape, shape, like):
    """Zeros with the batch shape and dtype of ``like``."""
    dtype = like.dtype if isinstance(like, np.ndarray) else float
    out = np.zeros(tuple(batch_shape) + tuple(shape), dtype=dtype)
    if dtype == object:
        out[...] = 0
    return out


def trace_product(a, b):
    """tr(a @ b) for stacks of square matrices, without forming the product."""
    return (a * np.swapaxes(b, -1, -2)).sum(axis=(-1, -2))


def transpose(x):
    """The transpose of the last two axes (stacks of matrices, numbers or symbols)."""
    return np.swapaxes(x, -1, -2)


def skew(a):
    """The cross-product matrix [a]x of a (..., 3) -> (..., 3, 3): skew(a) @ b = a x b."""
    a = np.asarray(a)
    out = np.zeros(a.shape[:-1] + (3, 3), dtype=np.result_type(a, float))
    out[..., 0, 1], out[..., 0, 2] = -a[..., 2], a[..., 1]
    out[..., 1, 0], out[..., 1, 2] = a[..., 2], -a[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -a[..., 1], a[..., 0]
    return out
