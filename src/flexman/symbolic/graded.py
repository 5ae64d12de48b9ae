"""Graded scalars: values split by degree in the flexible coordinates, truncated at order k.

A :class:`Graded` holds the homogeneous components ``c[0], ..., c[k]`` of one value, each a
number or a :class:`~.tracer.Tracer`: ``c[n]`` is the part of degree n in the flexible
coordinates q_f (joint coordinates and parameters are degree 0). Products are truncated
convolutions, so running an algorithm on graded inputs gives every result exact to order k
in q_f (its Taylor polynomial about q_f = 0). Seeding q_f as pure degree-1 values puts
q_f = 0 into every degree-0 part, where constant folding removes the terms it kills.

Division, powers with non-integer or negative exponents, sin and cos take degree-0 values
only (the recursions apply them to joint coordinates and lengths, never to deflections).
"""
from __future__ import annotations

import numpy as np

from . import tracer as tc


def _zero(x) -> bool:
    return type(x) is not tc.Tracer and x == 0


class Graded:
    """Components ``c`` (a tuple, ``len(c) = k + 1``) of one value, by degree in q_f."""

    __slots__ = ("c",)

    def __init__(self, components):
        self.c = tuple(components)

    @property
    def order(self) -> int:
        return len(self.c) - 1

    def __repr__(self):
        return f"Graded{self.c!r}"

    def __bool__(self):
        raise TypeError("a graded value has no truth value: the algorithm must not branch on it")

    def __float__(self):
        raise TypeError("a graded value is not a number")

    def total(self):
        """The sum of the components: the value truncated to degree k."""
        out = 0.0
        for x in self.c:
            out = tc.add(out, x)
        return out

    def _degree0(self, what):
        if not all(_zero(x) for x in self.c[1:]):
            raise ValueError(f"graded {what}: the argument depends on the flexible coordinates "
                             "(only degree-0 values are supported)")
        return self.c[0]

    # arithmetic on the component tuples (an ndarray operand is left to NumPy, which
    # broadcasts over it). A number or tracer operand is degree 0: its fast paths below give
    # the same instructions as lifting it to (x, 0, ..., 0) would, without the lifting.
    def _other(self, other):
        """``other``'s components if it is graded, None for a degree-0 operand, NotImplemented
        for an array."""
        if isinstance(other, Graded):
            if len(other.c) != len(self.c):
                raise ValueError(f"graded values of different orders ({self.order}, {other.order})")
            return other.c
        if isinstance(other, np.ndarray):
            return NotImplemented
        return None

    def __add__(self, other):
        o = self._other(other)
        if o is None:
            return Graded((tc.add(self.c[0], other),) + tuple(_plus(x, 0.0) for x in self.c[1:]))
        return o if o is NotImplemented else _sum(self.c, o)

    __radd__ = __add__

    def __sub__(self, other):
        o = self._other(other)
        if o is None:
            return Graded((tc.add(self.c[0], tc.neg(other)),) + tuple(_plus(x, -0.0) for x in self.c[1:]))
        return o if o is NotImplemented else _difference(self.c, o)

    def __rsub__(self, other):
        o = self._other(other)
        if o is None:
            return Graded((tc.add(other, tc.neg(self.c[0])),) + tuple(_plus(tc.neg(x), 0.0) for x in self.c[1:]))
        return o if o is NotImplemented else _difference(o, self.c)

    def __mul__(self, other):
        o = self._other(other)
        if o is None:
            return _scaled(self.c, other)
        return o if o is NotImplemented else _product(self.c, o)

    __rmul__ = __mul__

    def __truediv__(self, other):
        o = self._other(other)
        if o is None:
            return Graded([tc.div(x, other) for x in self.c])
        return o if o is NotImplemented else _quotient(self.c, o)

    def __rtruediv__(self, other):
        o = self._other(other)
        if o is None:
            o = (other,) + (0.0,) * self.order
        return o if o is NotImplemented else _quotient(o, self.c)

    def __neg__(self):
        return Graded(tc.neg(a) for a in self.c)

    def __pos__(self):
        return self

    def __pow__(self, n):
        n = tc._num(n)
        if all(_zero(x) for x in self.c[1:]):
            return Graded((tc.power(self.c[0], n),) + self.c[1:])
        if n != int(n) or n < 0:
            raise ValueError("graded power: a negative or fractional power needs a degree-0 base")
        out = Graded((1.0,) + (0.0,) * self.order)
        for _ in range(int(n)):
            out = out * self
        return out

    def sin(self):
        return Graded((tc.sin(self._degree0("sin")),) + self.c[1:])

    def cos(self):
        return Graded((tc.cos(self._degree0("cos")),) + self.c[1:])


def _plus(x, zero):
    """``tc.add(x, zero)`` for a zero constant (0.0 or -0.0): a folding tape returns a tracer as
    it is, so only numbers and non-folding tapes need the call."""
    if type(x) is tc.Tracer and x.tape.fold:
        return x
    return tc.add(x, zero)


def _sum(a, b):
    return Graded([tc.add(x, y) for x, y in zip(a, b)])


def _difference(a, b):
    return Graded([tc.add(x, tc.neg(y)) for x, y in zip(a, b)])


def _scaled(a, x):
    """``a`` times the degree-0 value x: the product with (x, 0, ..., 0), component by component."""
    if _zero(x):
        return Graded((0.0,) * len(a))
    return Graded([0.0 if _zero(y) else tc.add(0.0, tc.mul(y, x)) for y in a])


def _product(a, b):
    """Truncated convolution: degrees above k are dropped."""
    live_a = [(i, x) for i, x in enumerate(a) if not _zero(x)]  # each component tested once, not per pair
    live_b = {j: y for j, y in enumerate(b) if not _zero(y)}
    out = [0.0] * len(a)
    for n in range(len(a)):
        s = 0.0
        for i, x in live_a:
            if i > n:
                break
            if n - i in live_b:
                s = tc.add(s, tc.mul(x, live_b[n - i]))
        out[n] = s
    return Graded(out)


def _quotient(a, b):
    d = Graded(b)._degree0("division")
    return Graded(tc.div(x, d) for x in a)


def seed(values, flexible, order: int):
    """Object array of graded values: ``values[i]`` is degree 1 where ``flexible[i]`` (its
    degree-0 part is then 0), degree 0 elsewhere."""
    values = np.asarray(values, dtype=object)
    flexible = np.broadcast_to(np.asarray(flexible, bool), values.shape)
    out = np.empty(values.shape, dtype=object)
    zeros = (0.0,) * order
    for idx in np.ndindex(values.shape):
        v = values[idx]
        if flexible[idx]:
            out[idx] = Graded(((0.0, v) + zeros[1:]) if order else (0.0,))
        else:
            out[idx] = Graded((v,) + zeros)
    return out


def total(values):
    """Object array of the truncated values (components summed); numbers stay numbers."""
    values = np.asarray(values, dtype=object)
    out = np.empty(values.shape, dtype=object)
    for idx in np.ndindex(values.shape):
        v = values[idx]
        out[idx] = v.total() if isinstance(v, Graded) else v
    return out
