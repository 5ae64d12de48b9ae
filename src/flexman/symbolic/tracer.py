"""Tracer scalars: run the numeric algorithms once on them and record straight-line code.

A :class:`Tracer` stands for one value of the computation. Every non-trivial operation on
tracers appends one instruction to a :class:`Tape` and returns a tracer naming its result,
like the Z### strings of DYNAM/SYMFLX (000 ch. 4) and SymPyBotics' intermediates. The tape
therefore grows linearly with the recursion instead of building expression trees (no swell).

Simplifications happen when an instruction is created:

* numbers are folded (``2.0 * 3.0`` never reaches the tape), ``x * 0 = 0``, ``x * 1 = x``,
  ``x + 0 = x``, ``x - x = 0``; a constant times ``c * y`` becomes ``(c c') * y``;
* negation costs nothing: a tracer carries a sign flag that its consumers absorb
  (``a + (-b)`` is recorded as ``a - b``, ``(-a) * b`` as ``-(a * b)``, ``cos(-x) = cos(x)``);
* ``sin``/``cos`` of the same argument are computed once;
* with ``cse=True`` identical instructions are shared (hash-consing, i.e. repeated
  subexpression elimination at creation time).

``fold=False`` and ``cse=False`` switch these off, so that each pass can be measured.
An instruction's arguments are node indices (``int``) or constants (``float``).
"""
from __future__ import annotations

import math

import numpy as np

COMMUTATIVE = ("add", "mul")
OP_KIND = {"add": "add", "sub": "add", "neg": "add", "mul": "mul", "div": "div",
           "sin": "fn", "cos": "fn", "sqrt": "fn", "pow": "fn"}


class Tape:
    """Recorded instructions ``(op, args)``; inputs are instructions ``("in", (name,))``."""

    def __init__(self, fold: bool = True, cse: bool = True):
        self.fold, self.cse = fold, cse
        self.ops: list[tuple] = []
        self.memo: dict = {}
        self.input_index: dict[str, int] = {}

    def __len__(self):
        return len(self.ops)

    def input(self, name: str) -> "Tracer":
        """A named input (coordinate, velocity, parameter); the same name gives the same node."""
        if name not in self.input_index:
            self.input_index[name] = len(self.ops)
            self.ops.append(("in", (name,)))
        return Tracer(self, self.input_index[name])

    def inputs(self, names) -> list:
        return [self.input(n) for n in names]

    def node(self, op: str, args: tuple, neg: bool = False) -> "Tracer":
        if op in COMMUTATIVE:
            args = tuple(sorted(args, key=_argkey))
        # constants and node indices must not collide in the memo (3.0 == 3 in Python)
        memo_key = (op, tuple((type(a) is float, a) for a in args))
        if self.cse or op in ("sin", "cos"):  # sin/cos of one argument are always shared
            idx = self.memo.get(memo_key)
            if idx is not None:
                return Tracer(self, idx, neg)
        idx = len(self.ops)
        self.ops.append((op, args))
        self.memo[memo_key] = idx
        return Tracer(self, idx, neg)

    def count(self, nodes=None) -> dict:
        """Operation counts of the given node indices (default: the whole tape)."""
        out = {"mul": 0, "add": 0, "div": 0, "fn": 0}
        for i in range(len(self.ops)) if nodes is None else nodes:
            kind = OP_KIND.get(self.ops[i][0])
            if kind:
                out[kind] += 1
        return out


def _argkey(a):
    """Constants first (so ``c * x`` is ``("mul", (c, x))``), then nodes by index."""
    return (1, a) if isinstance(a, int) else (0, a)


def is_number(x) -> bool:
    return not isinstance(x, Tracer)


class Tracer:
    """One traced scalar: node ``idx`` of ``tape``, negated when ``neg`` is set."""

    __slots__ = ("tape", "idx", "neg")

    def __init__(self, tape: Tape, idx: int, neg: bool = False):
        self.tape, self.idx, self.neg = tape, idx, neg

    def __repr__(self):
        return f"{'-' if self.neg else ''}<{self.tape.ops[self.idx][0]} #{self.idx}>"

    def __bool__(self):
        raise TypeError("a traced value has no truth value: the algorithm must not branch on it")

    def __float__(self):
        raise TypeError("a traced value is not a number")

    def __getitem__(self, key):
        """Index like a NumPy scalar (``x[..., None]``), as the algorithms do with floats."""
        box = np.empty((), dtype=object)
        box[()] = self
        return box[key]

    # arithmetic (an ndarray operand is left to NumPy, which broadcasts over it; the lambdas
    # defer to the module functions below) --------------------------------------------
    def _binary(fn, reflected=False):
        def op(self, other):
            if isinstance(other, np.ndarray):
                return NotImplemented
            return fn(other, self) if reflected else fn(self, other)
        return op

    __add__ = __radd__ = _binary(lambda a, b: add(a, b))
    __sub__ = _binary(lambda a, b: add(a, neg(b)))
    __rsub__ = _binary(lambda a, b: add(a, neg(b)), reflected=True)
    __mul__ = __rmul__ = _binary(lambda a, b: mul(a, b))
    __truediv__ = _binary(lambda a, b: div(a, b))
    __rtruediv__ = _binary(lambda a, b: div(a, b), reflected=True)
    del _binary

    def __neg__(self):
        return Tracer(self.tape, self.idx, not self.neg)

    def __pos__(self):
        return self

    def __pow__(self, n):
        return power(self, n)

    def sin(self):
        return sin(self)

    def cos(self):
        return cos(self)

    def sqrt(self):
        return sqrt(self)


# ----- the operations on values (numbers or tracers) -----------------------------------
def _num(x):
    return float(x.real) if isinstance(x, complex) else float(x)


def neg(a):
    return -a if isinstance(a, Tracer) else -_num(a)


def _pos(t: Tracer) -> int:
    """Node index of the value of t with its sign applied (materializes a negation)."""
    if not t.neg:
        return t.idx
    return t.tape.node("neg", (t.idx,)).idx


def add(a, b):
    if type(a) is float and type(b) is float:  # the common case, first (the same sum as below)
        return a + b
    if is_number(a) and is_number(b):
        return _num(a) + _num(b)
    if is_number(a):
        a, b = b, a
    tape = a.tape
    if is_number(b):  # tracer + constant
        c = _num(b)
        if c == 0.0 and tape.fold:
            return a
        if a.neg:  # -x + c = -(x - c)
            return tape.node("sub", (a.idx, c), neg=True)
        return tape.node("add", (a.idx, c))
    if a.idx == b.idx and tape.fold:
        return 0.0 if a.neg != b.neg else mul(2.0, a)
    if a.neg == b.neg:
        return tape.node("add", (a.idx, b.idx), neg=a.neg)
    pos, negv = (a, b) if b.neg else (b, a)  # pos - negv, recorded with the older node first
    if pos.idx < negv.idx or not tape.cse:
        return tape.node("sub", (pos.idx, negv.idx))
    return tape.node("sub", (negv.idx, pos.idx), neg=True)


def mul(a, b):
    if type(a) is float and type(b) is float:  # the common case, first (the same product as below)
        return a * b
    if is_number(a) and is_number(b):
        return _num(a) * _num(b)
    if is_number(a):
        a, b = b, a
    tape = a.tape
    if is_number(b):  # tracer * constant: keep the constant positive, the sign in the flag
        c = _num(b)
        if tape.fold:
            if c == 0.0:
                return 0.0
            if c == 1.0:
                return a
            if c == -1.0:
                return -a
        sign = a.neg != (c < 0)
        c = abs(c)
        op, args = tape.ops[a.idx]
        if tape.fold and op == "mul" and isinstance(args[0], float):  # c * (c0 * y) = (c c0) * y
            c, idx = c * args[0], args[1]
            if c == 1.0:
                return Tracer(tape, idx, sign)
            return tape.node("mul", (c, idx), neg=sign)
        return tape.node("mul", (c, a.idx), neg=sign)
    return tape.node("mul", (a.idx, b.idx), neg=a.neg != b.neg)


def div(a, b):
    if is_number(b):
        c = _num(b)
        if c == 0.0:
            raise ZeroDivisionError("traced division by the constant 0")
        return mul(a, 1.0 / c) if not is_number(a) else _num(a) / c
    tape = b.tape
    if is_number(a):
        c = _num(a)
        if c == 0.0 and tape.fold:
            return 0.0
        return tape.node("div", (abs(c), b.idx), neg=(c < 0) != b.neg)
    if a.idx == b.idx and tape.fold:
        return -1.0 if a.neg != b.neg else 1.0
    return tape.node("div", (a.idx, b.idx), neg=a.neg != b.neg)


def power(a, n):
    """a ** n; integer n by repeated products (shared squares), otherwise a ``pow`` node."""
    n = _num(n)
    if is_number(a):
        return _num(a) ** n
    if n == int(n):
        n = int(n)
        if n < 0:
            return div(1.0, power(a, -n))
        result, base = 1.0, a
        while n:
            if n & 1:
                result = mul(result, base)
            n >>= 1
            if n:
                base = mul(base, base)
        return result
    return a.tape.node("pow", (_pos(a), n))


def sin(a):
    if is_number(a):
        return math.sin(_num(a))
    return a.tape.node("sin", (a.idx,), neg=a.neg)  # sin(-x) = -sin(x)


def cos(a):
    if is_number(a):
        return math.cos(_num(a))
    return a.tape.node("cos", (a.idx,))  # cos(-x) = cos(x)


def sqrt(a):
    if is_number(a):
        return math.sqrt(_num(a))
    return a.tape.node("sqrt", (_pos(a),))
