"""Polynomial normal form of a straight-line program, and its re-emission by factoring.

Why: a traced recursion computes the right function with avoidable work. Products of rotation
matrices leave ``cos^2 q + sin^2 q`` where 1 is meant, like terms are added in separate
instructions, and terms that cancel exactly (a coefficient that is 0 in exact arithmetic)
leave roundoff residues such as ``1e-18 * q8`` that no instruction-level pass can recognize.

:func:`expand` runs a program on sparse polynomials instead of numbers. The variables
("atoms") are ``cos q`` and ``sin q`` of the inputs that enter a sine or cosine, the other
inputs, and for an input that appears in a denominator ``q + c`` (a sliding beam's outside
length) the shifted input ``q + c`` itself, with negative powers allowed for everything but
the trigonometric atoms. Every product is reduced with ``cos^2 = 1 - sin^2``, like terms are
collected, and a coefficient is set to zero when it is below ``TOL`` times its roundoff bound
(the sum of the magnitudes of the products that formed it): then the exact coefficient is 0,
or so small that dropping it changes the output by less than ``TOL`` of those magnitudes.
A program outside this class (square roots, divisions by sums, sines of sums) raises
:class:`NotPolynomial` and is left as it is.

:func:`emit` writes the polynomials back as straight-line code: each is split into a scalar, a
common monomial and a normalized rest; the rest is emitted by Horner's rule on its most
frequent atom, recursively, and a normalized polynomial that recurs (in any output, up to a
constant factor) is computed once. Monomials are built from shared smaller ones.
:func:`simplify_nodes` keeps the traced structure instead (products of sums stay products) and
re-emits only the intermediates whose polynomial is tiny or repeats an earlier one up to a
factor, optionally collecting like terms in sums. :func:`emit_shared` first computes once the
two-term sums (kernels) and the products of two atoms that recur across the outputs, which
recovers the products of sums that expansion multiplied out. :func:`reduce` keeps the
cheapest of these.
"""
from __future__ import annotations

import heapq
import operator

import numpy as np

from . import tracer as T
from .program import Program
from .tracer import Tape

TOL = 1e-12  # a coefficient below TOL x its roundoff bound is zero
MAX_TERMS = 5000  # a larger intermediate polynomial: the expansion is not worth it
MAX_WORK = 2_000_000  # term products in one expansion (about a second of Python)


class NotPolynomial(ValueError):
    """The program is not a Laurent polynomial in the atoms this module knows."""


class _Shift(Exception):
    """An input appears in a denominator ``a + b q``: restart with the atom ``q + a/b``."""

    def __init__(self, name, offset):
        self.name, self.offset = name, offset


class Atoms:
    """The atoms of one expansion: ``("cos", q)``, ``("sin", q)``, ``("var", q)`` or
    ``("shift", q, c)`` (the value ``q + c``), numbered in order of appearance."""

    def __init__(self):
        self.list: list[tuple] = []
        self.index: dict = {}

    def get(self, key) -> int:
        if key not in self.index:
            self.index[key] = len(self.list)
            self.list.append(key)
        return self.index[key]

    def trig_pairs(self):
        """[(sin atom, cos atom)] of the inputs that have both."""
        pairs = {}
        for k, key in enumerate(self.list):
            if key[0] in ("cos", "sin"):
                pairs.setdefault(key[1], {})[key[0]] = k
        return [(p["sin"], p["cos"]) for p in pairs.values() if len(p) == 2]


# ----- sparse polynomials: {monomial (tuple of exponents): (coefficient, bound)} ----------
def _pad(m, n):
    return m + (0,) * (n - len(m))


def _mono_mul(a, b):
    if len(a) < len(b):
        a, b = b, a
    return tuple(map(operator.add, a, b)) + a[len(b):]


def _clean(m):
    """Monomials compare without trailing zero exponents (atoms are added as they appear)."""
    k = len(m)
    while k and m[k - 1] == 0:
        k -= 1
    return m[:k]


def _prune(p):
    return {m: (c, b) for m, (c, b) in p.items() if abs(c) > TOL * b}


def _const(c):
    return {(): (float(c), abs(float(c)))} if c != 0.0 else {}


def _add(p, q, sign=1.0):
    out = dict(p)
    for m, (c, b) in q.items():
        c0, b0 = out.get(m, (0.0, 0.0))
        out[m] = (c0 + sign * c, b0 + b)
    return _prune(out)


def _scale(p, s):
    return {m: (c * s, b * abs(s)) for m, (c, b) in p.items()}


def _reduce_trig(m, pairs):
    """cos^2 = 1 - sin^2 on one monomial: [(monomial, sign)] with every cos exponent < 2.
    (Either identity gives a normal form; this one gave fewer terms and operations on the
    flexible arms of 004 Table 2.)"""
    for keep, red in pairs:
        if len(m) > red and m[red] >= 2:
            lo = list(m)
            lo[red] -= 2
            hi = list(lo)
            hi.extend([0] * (keep + 1 - len(hi)))
            hi[keep] += 2
            return (_reduce_trig(_clean(tuple(lo)), pairs)
                    + [(mm, -s) for mm, s in _reduce_trig(_clean(tuple(hi)), pairs)])
    return [(m, 1.0)]


def _mul(p, q, pairs, work):
    work[0] += len(p) * len(q)
    if work[0] > MAX_WORK:
        raise NotPolynomial("the expansion is too large to be worth it")
    out = {}
    for m1, (c1, b1) in p.items():
        for m2, (c2, b2) in q.items():
            c, b = c1 * c2, b1 * b2
            for m, s in _reduce_trig(_clean(_mono_mul(m1, m2)), pairs):
                c0, b0 = out.get(m, (0.0, 0.0))
                out[m] = (c0 + s * c, b0 + b)
    return _prune(out)


def _coefficients(p):
    """{monomial: coefficient} of a polynomial (its roundoff bounds left out)."""
    return {m: c for m, (c, _) in p.items()}


def _single_atom(p):
    """The atom index if p is exactly that atom (coefficient 1), else None."""
    if len(p) != 1:
        return None
    (m, (c, _)), = p.items()
    if c != 1.0 or sum(m) != 1 or min(m) < 0:
        return None
    return m.index(1)


# ----- expansion ---------------------------------------------------------------------
def expand(program: Program, with_nodes=False):
    """Run ``program`` on polynomials: (atoms, {group: (shape, [polynomial per entry])}).

    Raises :class:`NotPolynomial` when the program leaves the class described above.
    ``with_nodes``: also {intermediate name: polynomial}."""
    shifts = {}
    names = set(program.input_names)
    for _, op, args in program.body:  # q + c in the program: a sliding beam's length, say
        if op == "add" and len(args) == 2 and isinstance(args[0], float) and args[1] in names:
            shifts.setdefault(args[1], args[0])
    tried = set()
    for _ in range(16):
        try:
            atoms, out, env = _expand(program, shifts)
            return (atoms, out, env) if with_nodes else (atoms, out)
        except _Shift as s:
            if (s.name, s.offset) in tried:
                raise NotPolynomial(f"{s.name} appears in two different denominators") from None
            tried.add((s.name, s.offset))
            shifts[s.name] = s.offset
    raise NotPolynomial("too many shifted inputs")


def _expand(program, shifts):
    atoms = Atoms()
    env = {}
    trig_inputs = {args[0] for _, op, args in program.body if op in ("sin", "cos") and isinstance(args[0], str)
                   and args[0] in set(program.input_names)}
    for name in program.input_names:
        if name in shifts:
            k = atoms.get(("shift", name, shifts[name]))
            env[name] = _add({_clean((0,) * k + (1,)): (1.0, 1.0)}, _const(-shifts[name]))
        else:
            k = atoms.get(("var", name))
            env[name] = {_clean((0,) * k + (1,)): (1.0, 1.0)}
    for name in sorted(trig_inputs):  # both atoms exist before any product is reduced
        atoms.get(("cos", name))
        atoms.get(("sin", name))
    pairs = atoms.trig_pairs()
    work = [0]
    inputs_of = {v: k for k, v in atoms.index.items()}

    def val(a):
        return env[a] if isinstance(a, str) else _const(a)

    for target, op, args in program.body:
        a = [val(x) for x in args]
        if op == "add":
            r = _add(a[0], a[1])
        elif op == "sub":
            r = _add(a[0], a[1], -1.0)
        elif op == "neg":
            r = _scale(a[0], -1.0)
        elif op == "mul":
            r = _mul(a[0], a[1], pairs, work)
        elif op == "div":
            r = _mul(a[0], _inverse(a[1], atoms), pairs, work)
        elif op in ("sin", "cos"):
            k = _single_atom(a[0])
            key = inputs_of.get(k) if k is not None else None
            if key is None or key[0] != "var":
                raise NotPolynomial(f"{op} of an expression that is not an input")
            j = atoms.index[(op, key[1])]
            r = {_clean((0,) * j + (1,)): (1.0, 1.0)}
        elif op == "pow" and isinstance(args[1], float) and args[1] == int(args[1]):
            n = int(args[1])
            base = a[0] if n >= 0 else _inverse(a[0], atoms)
            r = _const(1.0)
            for _ in range(abs(n)):
                r = _mul(r, base, pairs, work)
        else:
            raise NotPolynomial(f"operation {op} is not polynomial")
        if len(r) > MAX_TERMS:
            raise NotPolynomial(f"an intermediate has more than {MAX_TERMS} terms")
        env[target] = r
    out = {}
    for group, (shape, entries) in program.outputs.items():
        polys = []
        for _, negd, atom in entries:
            p = val(atom)
            polys.append(_scale(p, -1.0) if negd else p)
        out[group] = (shape, polys)
    return atoms, out, env


def _inverse(p, atoms):
    """1 / p for a monomial p (negative powers of non-trigonometric atoms)."""
    if len(p) == 1:
        (m, (c, b)), = p.items()
        if all(e == 0 or atoms.list[k][0] not in ("cos", "sin") for k, e in enumerate(m)):
            return {tuple(-e for e in m): (1.0 / c, 1.0 / abs(c))}
    if len(p) == 2 and () in p:  # a + b x: shift the input x so that the denominator is one atom
        (m, (bcoef, _)), = [(m, cb) for m, cb in p.items() if m != ()]
        if sum(m) == 1 and min(m) == 0:
            key = atoms.list[m.index(1)]
            if key[0] in ("var", "shift"):  # a + b (q + c) = b (q + c + a / b)
                raise _Shift(key[1], p[()][0] / bcoef + (key[2] if key[0] == "shift" else 0.0))
    raise NotPolynomial("division by a polynomial that is not a monomial")


# ----- emission ----------------------------------------------------------------------
def _normalize(p):
    """p = scale * x^gcd * rest, rest with coefficient 1 on its first monomial (sorted)."""
    ms = list(p)
    n = max(len(m) for m in ms)
    ms = [_pad(m, n) for m in ms]
    g = tuple(min(col) for col in zip(*ms)) if ms else ()
    rest = {_clean(tuple(map(operator.sub, m, g))): c for m, c in zip(ms, p.values())}
    first = min(rest)
    s = rest[first]
    return s, _clean(g), {m: c / s for m, c in rest.items()}


def _key(rest):
    return tuple(sorted((m, float(f"{c:.14g}")) for m, c in rest.items()))


def _support(m):
    """The atoms of a dense monomial as the bits of an int (a cheap test for a divisor)."""
    return sum(1 << k for k, e in enumerate(m) if e)


class _Emitter:
    def __init__(self, atom_values, rank=None):
        self.atom_values = atom_values
        self.rank = rank or (lambda k: 0)
        self.monos = {(): 1.0}
        self.by_degree = {}  # total degree -> [(support, monomial)] of the built ones, in order built
        self.polys = {}

    def _built(self, m, value):
        if m not in self.monos:
            self.by_degree.setdefault(sum(map(abs, m)), []).append((_support(m), m))
        self.monos[m] = value

    def _divisor(self, m):
        """The first built divisor of x^m of the highest degree (x^0 if none): a divisor has the
        exponents of x^m or smaller in magnitude, of the same sign, so no higher degree."""
        support, degree, n = _support(m), sum(map(abs, m)), len(m)
        for d in sorted((d for d in self.by_degree if d <= degree), reverse=True):
            for s, known in self.by_degree[d]:
                if not s & ~support and len(known) <= n and all(0 <= e <= f or (f < 0 and f <= e <= 0)
                                                                for e, f in zip(known, m)):
                    return known
        return ()

    def monomial(self, m):
        """x^m from the largest already built divisor, one atom at a time."""
        m = _clean(m)
        if m in self.monos:
            return self.monos[m]
        best = self._divisor(m)
        cur, value = list(_pad(best, len(m))), self.monos[best]
        for k, f in enumerate(m):
            while cur[k] != f:
                step = 1 if f > cur[k] else -1
                cur[k] += step
                atom = self.atom_values[k] if step > 0 else T.div(1.0, self.atom_values[k])
                value = T.mul(value, atom)
                self._built(_clean(tuple(cur)), value)
        return value

    def poly(self, p):
        """Value of {monomial: coefficient}."""
        if not p:
            return 0.0
        s, g, rest = _normalize(p)
        return T.mul(s, T.mul(self.monomial(g), self.normalized(rest)))

    def normalized(self, rest):
        if len(rest) == 1:
            return 1.0  # the rest of a single term is the constant 1
        key = _key(rest)
        if key in self.polys:
            return self.polys[key]
        counts = {}
        for m in rest:
            for k, e in enumerate(m):
                if e > 0:
                    counts[k] = counts.get(k, 0) + 1
        k = max(counts, key=lambda j: (self.rank(j), counts[j], -j))
        with_k, without = {}, {}
        for m, c in rest.items():
            if len(m) > k and m[k] > 0:
                mm = list(m)
                mm[k] -= 1
                with_k[_clean(tuple(mm))] = c
            else:
                without[m] = c
        value = T.add(T.mul(self.atom_values[k], self.poly(with_k)), self.poly(without))
        self.polys[key] = value
        return value


def _atom_values(tape, program, atoms):
    inputs = {n: tape.input(n) for n in program.input_names}
    values = []
    for key in atoms.list:
        if key[0] == "var":
            values.append(inputs[key[1]])
        elif key[0] == "shift":
            values.append(T.add(inputs[key[1]], key[2]))
        else:
            values.append(getattr(T, key[0])(inputs[key[1]]))
    return inputs, values


def emit(program: Program, atoms: Atoms, expanded: dict, rank=None) -> Program:
    """A new program with ``program``'s inputs computing the expanded outputs."""
    tape = Tape()
    em = _Emitter(_atom_values(tape, program, atoms)[1], rank)
    outputs = {group: np.array([em.poly(_coefficients(p)) for p in polys] + [None], dtype=object)[:-1].reshape(shape)
               for group, (shape, polys) in expanded.items()}
    return Program.from_tape(program.name, tape, program.inputs, outputs, program.doc)


_OPS = {"add": T.add, "sub": lambda a, b: T.add(a, T.neg(b)), "neg": T.neg, "mul": T.mul, "div": T.div,
        "sin": T.sin, "cos": T.cos, "sqrt": T.sqrt, "pow": T.power}


def _node_key(name, nodes, cache):
    """(scale, key number) of an intermediate's polynomial, cached: two polynomials are constant
    multiples of each other exactly when their keys agree, and then their scales' ratio is the
    constant. The scale is the coefficient :func:`_normalize` takes (that of the first monomial
    once the common factor is divided out: subtracting the exponents' column minima keeps the
    order of the monomials padded with zeros), and the key is the monomials as they are with
    their coefficients over the scale, which skips the subtraction (terms x atoms, once most of
    a large symbolic model's build)."""
    if name not in cache:
        p = _coefficients(nodes[name])
        n = max(map(len, p))
        s = p[min(p, key=lambda m: _pad(m, n))]
        ids = cache.setdefault(_KEY_IDS, {})  # each distinct key as a small number: cheap to hash again
        cache[name] = (s, ids.setdefault(_key({m: c / s for m, c in p.items()}), len(ids)))
    return cache[name]


_KEY_IDS = ("distinct keys",)  # (not a node name: those are strings)


def simplify_nodes(program: Program, atoms, nodes, max_terms=3, rank=None, collect=True, cache=None) -> Program:
    """The program again, instruction by instruction, except that an intermediate whose
    polynomial has at most ``max_terms`` terms (a roundoff zero, cos^2 + sin^2, like terms that
    cancel) or is a constant multiple of an earlier one is emitted from its polynomial."""
    tape = Tape()
    inputs, values = _atom_values(tape, program, atoms)
    em = _Emitter(values, rank)
    seen = {}
    cache = {} if cache is None else cache
    env = dict(inputs)
    defs = {t: (op, args) for t, op, args in program.body}
    uses = {}
    for _, _, args in program.body:
        for a in args:
            if isinstance(a, str):
                uses[a] = uses.get(a, 0) + 1
    for _, (_, entries) in program.outputs.items():
        for _, _, a in entries:
            if isinstance(a, str):
                uses[a] = uses.get(a, 0) + 2
    val = lambda a: env[a] if isinstance(a, str) else a
    for target, op, args in program.body:
        p = nodes[target]
        if len(p) <= max_terms:
            env[target] = em.poly(_coefficients(p))
            continue
        s, key = _node_key(target, nodes, cache)
        if key in seen:
            s0, v0 = seen[key]
            env[target] = T.mul(s / s0, v0)
            continue
        if collect and op in ("add", "sub"):
            env[target] = _collected_sum(target, defs, uses, nodes, env, cache)
        else:
            env[target] = _OPS[op](*[val(a) for a in args])
        seen[key] = (s, env[target])
    outputs = {}
    for group, (shape, entries) in program.outputs.items():
        arr = np.empty(len(entries), dtype=object)
        for i, (_, negd, atom) in enumerate(entries):
            v = val(atom)
            arr[i] = T.neg(v) if negd else v
        outputs[group] = arr.reshape(shape)
    return Program.from_tape(program.name, tape, program.inputs, outputs, program.doc)


def _collected_sum(target, defs, uses, nodes, env, cache):
    """A sum of terms (the add/sub tree below ``target`` through intermediates used only
    there) with like terms collected: terms whose polynomials are constant multiples of each
    other are added as one, and a collected coefficient below its roundoff bound is dropped."""
    leaves = []

    def walk(name, sign):
        op, args = defs[name]
        if name == target or (uses.get(name, 0) == 1 and op in ("add", "sub", "neg")):
            if op == "neg":
                walk_arg(args[0], -sign)
            else:
                walk_arg(args[0], sign)
                walk_arg(args[1], sign if op == "add" else -sign)
        else:
            leaves.append((name, sign))

    def walk_arg(a, sign):
        if isinstance(a, str) and a in defs:
            walk(a, sign)
        else:
            leaves.append((a, sign))

    walk(target, 1.0)
    groups = {}
    order = []
    for a, sign in leaves:
        if not isinstance(a, str):
            key, s = ("const",), a
        else:
            if not nodes[a]:
                continue
            s, key = _node_key(a, nodes, cache)
        if key not in groups:
            groups[key] = [a, s, 0.0, 0.0]
            order.append(key)
        grp = groups[key]
        grp[2] += sign * s
        grp[3] += abs(s)
    total = 0.0
    for key in order:
        a, s0, coef, bound = groups[key]
        if abs(coef) <= TOL * bound:
            continue
        if key == ("const",):
            total = T.add(total, coef)
        else:
            total = T.add(total, T.mul(coef / s0, env[a]))
    return total


RANKS = {  # Horner's choice of atom: the most frequent one, or the most frequent of one kind first
    "frequency": lambda key: 0,
    "trigonometric first": lambda key: key[0] in ("cos", "sin"),
    "coordinates first": lambda key: key[0] == "var",
    "shifted first": lambda key: key[0] == "shift",
}


def total(program) -> int:
    """All operations of a program (multiplications, additions, divisions, functions)."""
    return sum(program.op_count().values())


def refactor(program: Program) -> Program:
    """``program`` through the polynomial normal form (same inputs and outputs), emitted with
    each Horner atom order of :data:`RANKS`; the one with the fewest operations. Raises
    :class:`NotPolynomial` when the program cannot be expanded."""
    atoms, expanded = expand(program)
    return min(_emissions(program, atoms, expanded), key=total)


def _emissions(program, atoms, expanded) -> list:
    """The outputs re-emitted with each Horner atom order of :data:`RANKS`."""
    return [emit(program, atoms, expanded, lambda k, r=rank: r(atoms.list[k])) for rank in RANKS.values()]


# ----- shared sums and products (kernel and cube extraction) -------------------------------
# The expanded outputs repeat sums that the recursion formed once: (a + b)(c + d) expands to
# ac + ad + bc + bd. A "kernel" x^k1 + r x^k2 (two terms, no common factor) that occurs in
# several places, each time times some monomial x^g and coefficient c, is computed once as a
# new atom t: every occurrence c x^g (x^k1 + r x^k2) becomes the one term c x^g t, which saves
# an addition per occurrence. Repeating this greedily (most frequent kernel first; kernels of
# kernels recover longer sums and products of sums) is the two-term kernel extraction of
# polynomial CSE (a kernel 1 - sin^2 q is emitted as cos q cos q: a product instead of a sum).
# Then products of two atoms that occur in several terms are made atoms too.
# Monomials here are sparse: sorted ((atom, exponent), ...).
MAX_SHARE = 4000  # expanded terms beyond which sums and products are not extracted (time)
SHARE_RATIO = 2.5  # nor beyond this many terms per instruction of the program: measured on the bundled
# arms, extraction won only up to 2.1 terms per instruction and cost seconds where it lost (a
# stiffened one-link arm with 5 modes: 3.3 terms per instruction, 4 s for 2072 against 638 instructions)
GROUP = 1e-11  # a pair matches a kernel key (whose ratio is rounded to 12 digits) to this
MATCH = 1e-13  # two occurrences of one kernel: their coefficient ratios agree to this (relative)


def _sparse(m):
    return tuple((k, e) for k, e in enumerate(m) if e)


def _dense(m, n):
    v = [0] * n
    for k, e in m:
        v[k] = e
    return _clean(tuple(v))


def _times(m, k, sign=1):
    """x^m * x^(sign k) for sparse monomials."""
    d = dict(m)
    for a, e in k:
        d[a] = d.get(a, 0) + sign * e
    return tuple(sorted((a, e) for a, e in d.items() if e))


def _pair_key(m1, c1, m2, c2):
    """The kernel of two terms: (k1, k2, r) with c1 x^m1 + c2 x^m2 = c1 x^g (x^k1 + r x^k2),
    x^g their greatest common divisor."""
    return next(_pair_keys(m1, c1, ((m2, c2),)))


def _pair_keys(m1, c1, terms):
    """The kernel (:func:`_pair_key`) of the term c1 x^m1 with each term of ``terms`` ((m2, c2)
    pairs, m2 != m1), m1 read into a dict once: this runs for every pair of terms of every
    polynomial (most of the kernel extraction's time). Per atom of x^m2 with exponents e1, e2
    (0 where absent), g = min(e1, e2) leaves e1 - g in k1 and e2 - g in k2; an atom of x^m1 alone
    leaves e1 in k1, or -e1 in k2 where e1 < 0 (then g = e1)."""
    d1 = dict(m1)
    negative = any(e < 0 for _, e in m1)
    for m2, c2 in terms:
        k1 = d1.copy()
        pop = k1.pop
        k2 = []
        for a, e2 in m2:
            e1 = pop(a, 0)
            if e1 == e2:
                continue
            if e1 > e2:
                k1[a] = e1 - e2
            else:
                k2.append((a, e2 - e1))
        if negative:  # m1's negative exponents absent from m2: g = e1 there
            moved = [(a, -e) for a, e in k1.items() if e < 0]
            if moved:
                for a, _ in moved:
                    del k1[a]
                k2 = sorted(k2 + moved)
        k1 = tuple(sorted(k1.items()))
        k2 = tuple(k2)
        if k1 > k2:
            yield k2, k1, float(f"{c1 / c2:.12g}")
        else:
            yield k1, k2, float(f"{c2 / c1:.12g}")


def _priority(item):
    """Order of the candidate kernels: most pairs first, then the one of lower degree (cheaper)."""
    (k1, k2, _), count = item
    return count, -sum(e for _, e in k1) - sum(e for _, e in k2)


class _SumSharing:
    """Greedy kernel extraction over a list of polynomials ({sparse monomial: coefficient}),
    edited in place; ``counts`` holds, for every kernel, its number of term pairs (updated as
    terms come and go, so that each step costs the terms it touches, not a full recount)."""

    def __init__(self, polys, n_atoms):
        self.polys, self.next_atom = polys, n_atoms
        self.counts: dict = {}
        self.frequent: set = set()  # the candidates: kernels with two or more pairs
        self.floor, self.overtaken = 1, False
        self.degrees: dict = {}  # kernel -> minus its degree (see _priority)
        for p in polys:  # the terms enter one by one, counted as any later term is
            items = list(p.items())
            p.clear()
            for m, c in items:
                self._set(p, m, c)

    def _priority(self, item):
        """:func:`_priority`, each kernel's degree computed once."""
        key, count = item
        d = self.degrees.get(key)
        if d is None:
            d = self.degrees[key] = _priority(item)[1]
        return count, d

    def _pairs(self, p, m, c, step):
        counts = self.counts
        for key in _pair_keys(m, c, [(m2, c2) for m2, c2 in p.items() if m2 != m]):
            n = counts[key] = counts.get(key, 0) + step
            if step > 0:
                if n == 2:
                    self.frequent.add(key)
                if n > self.floor:
                    self.overtaken = True
            elif n == 1:
                self.frequent.discard(key)

    def _set(self, p, m, c):
        """Give term m the coefficient c (0: remove it), keeping the pair counts right."""
        if m in p:
            self._pairs(p, m, p[m], -1)
            del p[m]
        if abs(c) > 0.0:
            p[m] = c
            self._pairs(p, m, c, +1)

    @staticmethod
    def occurrences(p, key):
        """Non-overlapping (g, m1, m2, c1) with c1 x^g (x^k1 + r x^k2) among p's terms."""
        k1, k2, r = key
        out, used = [], set()
        for m1, c1 in p.items():
            if m1 in used:
                continue
            d1 = dict(m1)
            if any(d1.get(a, 0) - e < 0 <= d1.get(a, 0) for a, e in k1):  # k1 must divide x^m1
                continue
            g = _times(m1, k1, -1)
            m2 = _times(g, k2)
            c2 = p.get(m2)
            if m2 == m1 or m2 in used or c2 is None or abs(c2 - r * c1) > GROUP * abs(c2):
                continue
            used.update((m1, m2))
            out.append((g, m1, m2, c1))
        return out

    def run(self, batch=32):
        """Extract kernels, the most frequent first, while one occurs twice or more:
        [(k1, k2, r)] in order, kernel j being the atom ``n_atoms + j`` (and free to use the
        earlier ones). The candidates are the ``batch`` most frequent kernels, taken again when
        a count outside them may have overtaken (``self.floor``)."""
        kernels = []
        while True:  # (the batch keeps the greedy order exact; it only saves full scans)
            counts = self.counts
            top = heapq.nlargest(batch, ((k, counts[k]) for k in self.frequent), key=self._priority)
            if not top or top[0][1] < 2:
                return kernels
            self.floor = top[-1][1] if len(top) == batch else 1
            self.overtaken = False
            top_keys = [k for k, _ in top]
            for key in top_keys:
                if self.overtaken or counts[key] < max(self.floor, 2):
                    break
                if max(map(counts.__getitem__, top_keys)) > counts[key]:
                    break  # an earlier candidate's count changed: take the candidates again
                kernel, found = self._exact(key)
                if sum(len(o) for _, o in found) < 2:  # overlapping or roundoff-different pairs
                    self.counts[key] = 0
                    self.frequent.discard(key)
                    continue
                self._apply(found)
                kernels.append(kernel)

    def _exact(self, key):
        """The kernel with the ratio of its first occurrence (the key's is rounded to 12 digits
        to group pairs), and the occurrences that have that ratio to MATCH."""
        found = [(p, self.occurrences(p, key)) for p in self.polys]
        first = [(p, occ[0]) for p, occ in found if occ]
        if not first:
            return key, found
        p, (_, _, m2, c1) = first[0]
        r = p[m2] / c1
        exact = [(p, [o for o in occ if abs(p[o[2]] - r * o[3]) <= MATCH * abs(p[o[2]])]) for p, occ in found]
        return (key[0], key[1], r), exact

    def _apply(self, found):
        atom = ((self.next_atom, 1),)
        self.next_atom += 1
        for p, occ in found:
            for g, m1, m2, c1 in occ:
                self._set(p, m1, 0.0)
                self._set(p, m2, 0.0)
                m = _times(g, atom)
                self._set(p, m, p.get(m, 0.0) + c1)


def _share_products(polys, n_atoms):
    """Make the product of two atoms an atom while it occurs in two or more terms (the most
    frequent first): [(a, b)], product j being the atom ``n_atoms + j``. Edits ``polys``."""
    products = []
    while True:
        counts = {}
        for p in polys:
            for m in p:
                pos = [(a, e) for a, e in m if e > 0]
                for i, (a, e) in enumerate(pos):
                    if e >= 2:
                        counts[(a, a)] = counts.get((a, a), 0) + 1
                    for b, _ in pos[i + 1:]:
                        counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            return products
        (a, b), n = max(counts.items(), key=lambda kv: kv[1])
        if n < 2:
            return products
        atom = n_atoms + len(products)
        products.append((a, b))
        pair = ((a, 1), (b, 1)) if a != b else ((a, 2),)
        for p in polys:
            for m in list(p):
                d = dict(m)
                if d.get(a, 0) > 0 and d.get(b, 0) > (a == b):
                    c = p.pop(m)
                    mm = _times(_times(m, pair, -1), ((atom, 1),))
                    p[mm] = p.get(mm, 0.0) + c


def emit_shared(program: Program, atoms: Atoms, expanded: dict) -> list:
    """The outputs re-emitted after kernel and product extraction, once per Horner atom order
    of :data:`RANKS` (a list of programs computing the same outputs)."""
    entries, unique = {}, {}
    for group, (shape, polys) in expanded.items():
        row = []
        for p in polys:
            if not p:
                row.append(None)
                continue
            s, g, rest = _normalize(_coefficients(p))
            key = _key(rest)
            unique.setdefault(key, {_sparse(m): c for m, c in rest.items()})
            row.append((s, g, key))
        entries[group] = (shape, row)
    keys = list(unique)
    polys = [unique[k] for k in keys]
    n0 = len(atoms.list)
    kernels = _SumSharing(polys, n0).run()
    products = _share_products(polys, n0 + len(kernels))
    n = n0 + len(kernels) + len(products)
    squared_sines = {((s, 2),): ((c, 2),) for s, c in atoms.trig_pairs()}
    out = []
    for rank in RANKS.values():
        tape = Tape()
        values = _atom_values(tape, program, atoms)[1]
        em = _Emitter(values, lambda k, r=rank: r(atoms.list[k]) if k < n0 else 0)
        scale = {}  # kernel atom -> the factor left out of its value (it has coefficient 1 first)

        def dense(p):  # coefficients times the factors left out of the kernels they contain
            return {_dense(m, n): c * np.prod([scale.get(a, 1.0) ** e for a, e in m]) for m, c in p.items()}

        for j, (k1, k2, r) in enumerate(kernels):
            if k1 == () and k2 in squared_sines and abs(r + 1.0) <= MATCH:  # 1 - sin^2 q is cos^2 q
                values.append(em.monomial(_dense(squared_sines[k2], n)))
                continue
            s, g, rest = _normalize(dense({k1: 1.0, k2: r}))
            scale[n0 + j] = s
            values.append(T.mul(em.monomial(g), em.normalized(rest)))
        for a, b in products:
            values.append(T.mul(values[a], values[b]))
            if a in scale or b in scale:
                scale[len(values) - 1] = scale.get(a, 1.0) * scale.get(b, 1.0)
        value = {k: em.poly(dense(p)) for k, p in zip(keys, polys)}
        outputs = {}
        for group, (shape, row) in entries.items():
            arr = np.empty(len(row), dtype=object)
            for i, e in enumerate(row):
                arr[i] = 0.0 if e is None else T.mul(e[0], T.mul(em.monomial(e[1]), value[e[2]]))
            outputs[group] = arr.reshape(shape)
        out.append(Program.from_tape(program.name, tape, program.inputs, outputs, program.doc))
    return out


MAX_EMIT = 2000  # output terms beyond which the outputs are not re-emitted whole (slow; never the cheapest)
NODE_VARIANTS = ((0, False), (2, False), (2, True))  # (max_terms, collect): the ones that ever won


def reduce(program: Program) -> Program:
    """The cheapest (fewest operations in all) of ``program``, its outputs emitted from their
    polynomials (:func:`refactor`), and ``program`` with its intermediates simplified
    (:func:`simplify_nodes`, each of :data:`NODE_VARIANTS`). All compute the same function;
    a program that is not a polynomial in the atoms is returned as it is."""
    try:
        atoms, expanded, nodes = expand(program, with_nodes=True)
    except NotPolynomial:
        return program
    rank = lambda k: RANKS["trigonometric first"](atoms.list[k])
    candidates = [program]
    terms = sum(len(p) for _, polys in expanded.values() for p in polys)
    if terms <= MAX_EMIT:
        candidates += _emissions(program, atoms, expanded)
    if terms <= MAX_SHARE and terms <= SHARE_RATIO * total(program):
        candidates += emit_shared(program, atoms, expanded)
    cache = {}
    candidates += [simplify_nodes(program, atoms, nodes, k, rank, collect, cache) for k, collect in NODE_VARIANTS]
    return min(candidates, key=total)
