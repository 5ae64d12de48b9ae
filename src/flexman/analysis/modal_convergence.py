"""Modal convergence: how the lowest natural frequencies move as each beam gets more modes (or
finite elements), ``fm.analysis.convergence(robot, q=None, modes=(1, 2, 3, 5))``, and the notice
that a model's own frequencies are far from converged.

Why: the documents' models use one clamped-free mode per plane. That reproduces the documents,
but a one-mode beam is stiffer than the real one (a Rayleigh-Ritz bound from above): the lowest
frequency of ``flx_three_link`` is 36 % high. A user designing a controller on such a model
should be told, with the number of modes that would do.

The study rebuilds the model with every beam at each count (bending planes and torsion that the
beam models at all; elements for finite-element beams) and computes the lowest frequencies with
the joints free and locked (:func:`.frequencies.natural_frequencies`; zero frequencies of free
joints left out). The relative change of each row is measured against a converged reference
computed apart from the rows: every beam made of cubic finite elements (Hermite, whose
frequency errors fall as h^4, from above), their number doubled from 2 until the estimated
error (a fifteenth of the last change) is below 0.02 % (at most 16 per beam), the last two
counts Richardson-extrapolated. The largest count of clamped-free
modes is no reference: those shapes do not satisfy a free joint's or a hub's boundary conditions
and converge slowly (5 modes leave ``flx_three_link``'s lowest frequency 4.6 % high).
"""
from __future__ import annotations


import dataclasses
import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..model import limits
from ..model.errors import FlexmanWarning, ModelError
from . import physical
from .frequencies import natural_frequencies

DEFAULT_MODES = (1, 2, 3, 5)
TOLERANCE = 0.05      # "converged": within 5 % of the reference
REFERENCE_TOLERANCE = 2e-4   # the finite-element reference's estimated relative error (0.02 %)
REFERENCE_ELEMENTS = (2, 4, 8, 16)
SHOWN = 3             # lowest frequencies compared, joints free and locked
QUIET_VARIABLE = "FLEXMAN_NO_CONVERGENCE_NOTICE"


class ConvergenceNotice(FlexmanWarning):
    """A model's lowest frequencies are not converged in the number of modes (silence it with
    ``warnings.simplefilter("ignore", ConvergenceNotice)`` or FLEXMAN_NO_CONVERGENCE_NOTICE=1)."""


@dataclass
class Convergence:
    """Lowest frequencies (rad/s) per count of modes or elements per beam.

    ``counts``: the counts studied (ascending); ``free``, ``locked``:
    arrays (len(counts), k) of the lowest k frequencies with the joints free / locked (NaN where a
    count has fewer); ``own``: the model's own frequencies {"free", "locked"}; ``beams``: names of
    the flexible links; ``reference``: {"free", "locked"} converged frequencies and
    ``reference_method`` how they were obtained (module docstring); ``enough``: the smallest
    count whose frequencies are within ``tolerance`` of the reference; ``model_error``: the
    largest relative error of the model's own frequencies."""

    name: str
    counts: list
    free: np.ndarray
    locked: np.ndarray
    own: dict
    beams: list
    own_counts: dict
    reference: dict = None
    reference_method: str = "the largest count studied"
    tolerance: float = TOLERANCE

    def __post_init__(self):
        if self.reference is None:
            self.reference = {"free": self.free[-1], "locked": self.locked[-1]}

    def reference_row(self, kind, k):
        """The reference of ``kind`` padded with NaN (or cut) to k entries."""
        ref = np.full(k, np.nan)
        r = np.asarray(self.reference[kind], dtype=float)[:k]
        ref[:r.size] = r
        return ref

    def _relative(self, rows, kind):
        ref = self.reference_row(kind, rows.shape[1])
        with np.errstate(invalid="ignore", divide="ignore"):
            return (rows - ref) / ref

    @property
    def free_change(self) -> np.ndarray:
        return self._relative(self.free, "free")

    @property
    def locked_change(self) -> np.ndarray:
        return self._relative(self.locked, "locked")

    def _error(self, free, locked):
        parts = []
        for values, ref in ((free, self.reference_row("free", self.free.shape[1])),
                            (locked, self.reference_row("locked", self.locked.shape[1]))):
            k = min(len(values), len(ref))
            if k:
                parts.append(np.nanmax(np.abs(np.asarray(values[:k]) - ref[:k]) / ref[:k]))
        return float(max(parts)) if parts else 0.0

    @property
    def model_error(self) -> float:
        return self._error(self.own["free"], self.own["locked"])

    @property
    def enough(self) -> int:
        for c, f, l in zip(self.counts, self.free, self.locked):
            if self._error(f, l) <= self.tolerance:
                return c
        return self.counts[-1]

    @property
    def converged(self) -> bool:
        return self.model_error <= self.tolerance

    def notice(self) -> str:
        """One sentence for a model whose lowest frequencies are not converged ('' otherwise)."""
        if self.converged:
            return ""
        worst, where = -1.0, ""
        for kind in ("free", "locked"):
            own, ref = np.asarray(self.own[kind]), self.reference_row(kind, getattr(self, kind).shape[1])
            for i in range(min(len(own), len(ref))):
                err = abs(own[i] - ref[i]) / ref[i]
                if err > worst:
                    worst, where = err, f"joints {kind}, mode {i + 1}: {own[i]:.4g} rad/s against {ref[i]:.4g} converged"
        beams = ", ".join(f"{b} ({self.own_counts[b]})" for b in self.beams)
        return (f"{self.name}: the lowest natural frequencies are up to {100 * self.model_error:.0f} % from converged "
                f"({where}); beams {beams} need {self.enough} modes or elements each to come within "
                f"{100 * self.tolerance:.0f} % (flexman frequencies {self.name} --convergence shows the table)")

    def to_dict(self) -> dict:
        def rows(a):
            return [[None if np.isnan(v) else float(v) for v in r] for r in a]
        return {"model": self.name, "counts": list(self.counts), "beams": list(self.beams),
                "free": rows(self.free), "locked": rows(self.locked),
                "free_change": rows(self.free_change), "locked_change": rows(self.locked_change),
                "own": {k: [float(v) for v in val] for k, val in self.own.items()},
                "reference": {k: [float(v) for v in val] for k, val in self.reference.items()},
                "reference_method": self.reference_method,
                "model_error": self.model_error, "enough": self.enough, "tolerance": self.tolerance}

    def table(self) -> str:
        """Plain text: one row per count, frequencies and their change against the reference."""
        k = self.free.shape[1]
        m = self.locked.shape[1]
        head = ["count"] + [f"free {i + 1}" for i in range(k)] + [f"locked {i + 1}" for i in range(m)]
        lines = ["  ".join(f"{h:>16}" for h in head)]
        for c, f, df, l, dl in zip(self.counts, self.free, self.free_change, self.locked, self.locked_change):
            cells = [f"{c:>16}"] + [f"{v:9.4g} ({100 * d:+5.1f}%)" if np.isfinite(v) else f"{'-':>16}"
                                    for v, d in list(zip(f, df)) + list(zip(l, dl))]
            lines.append("  ".join(cells))
        ref = [f"{v:9.4g}" for v in list(self.reference_row("free", k)) + list(self.reference_row("locked", m))]
        lines.append("  ".join([f"{'reference':>16}"] + [f"{c:>16}" for c in ref]))
        lines.append(f"rad/s; change relative to the reference ({self.reference_method}). The model's own: "
                     f"{100 * self.model_error:.1f} % off; {self.enough} per beam come within "
                     f"{100 * self.tolerance:.0f} %.")
        return "\n".join(lines)

    def plot(self, path=None):
        """Frequencies against the count (free: solid, locked: dashed); saved when ``path`` given."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for i in range(self.free.shape[1]):
            ax.plot(self.counts, self.free[:, i], "o-", label=f"free {i + 1}")
        for i in range(self.locked.shape[1]):
            ax.plot(self.counts, self.locked[:, i], "s--", label=f"locked {i + 1}")
        ax.set_xlabel("modes or elements per beam")
        ax.set_ylabel("natural frequency (rad/s)")
        ax.set_title(f"{self.name}: modal convergence")
        ax.legend(fontsize="small")
        fig.tight_layout()
        if path is not None:
            from ..outputs import staged

            with staged() as files:
                target = files.path(path)
                fig.savefig(target)
            plt.close(fig)
        return fig


def _beams(robot) -> list:
    """The links whose beams have flexible coordinates."""
    return [link for link in robot.links if link.beam is not None and link.beam.nf > 0]


def _count(beam) -> int:
    """A beam's own count: its finite elements, or its most modes in one direction."""
    return beam.elements if beam.shapes == "finite_elements" else max(beam.modes.values())


def with_count(robot, count):
    """A copy of ``robot`` with every beam at ``count`` modes per modelled direction (or
    ``count`` finite elements)."""
    out = physical.with_values(robot, {})  # a copy whose derived constants and coordinate layout are rebuilt
    for link in _beams(out):
        beam = link.beam
        if beam.shapes == "finite_elements":
            link.beam = dataclasses.replace(beam, elements=int(count))
        else:
            link.beam = dataclasses.replace(beam, modes={k: (int(count) if v else 0) for k, v in beam.modes.items()})
    return out


def _lowest(robot, q, joints):
    w = np.asarray(natural_frequencies(robot, q, joints=joints), dtype=float)
    w = w[w > 1e-6 * max(1.0, w.max(initial=0.0))]
    return w[:SHOWN]


def _finite_elements(robot, elements):
    """A copy of ``robot`` whose every beam is made of ``elements`` cubic finite elements (the
    same directions modelled)."""
    out = physical.with_values(robot, {})
    for link in _beams(out):
        link.beam = dataclasses.replace(link.beam, shapes="finite_elements", elements=int(elements))
    return out


def reference(robot, q=None):
    """Converged lowest frequencies {"free", "locked"} and how they were obtained: finite-element
    beams, the elements doubled (REFERENCE_ELEMENTS); cubic Hermite elements' frequency errors fall
    as h^4, so ``w(n) + (w(n) - w(n/2)) / 15`` (Richardson) removes the leading error and
    ``|w(n) - w(n/2)| / 15`` estimates what is left in w(n): doubling stops when that is below
    REFERENCE_TOLERANCE, and the extrapolated values are the reference."""
    qj = _config(robot, q)
    last, err = None, np.inf
    for n in REFERENCE_ELEMENTS:
        variant = _finite_elements(robot, n)
        qq = None if qj is None else np.concatenate([qj, np.zeros(variant.nf)])
        now = {"free": _lowest(variant, qq, "free"), "locked": _lowest(variant, qq, "locked")}
        if last is not None:
            ref, errs = {}, [0.0]
            for k in now:
                m = min(len(now[k]), len(last[k]))
                corr = (now[k][:m] - last[k][:m]) / 15.0
                ref[k] = np.concatenate([now[k][:m] + corr, now[k][m:]])
                if m:
                    errs.append(float(np.max(np.abs(corr) / now[k][:m])))
            err = max(errs)
            if err < REFERENCE_TOLERANCE:
                return ref, (f"finite elements, {n // 2} and {n} per beam, Richardson-extrapolated "
                             f"(h^4; {100 * err:.2g} % correction)")
        last = now
    return ref, (f"finite elements, {REFERENCE_ELEMENTS[-2]} and {REFERENCE_ELEMENTS[-1]} per beam, "
                 f"Richardson-extrapolated (h^4; {100 * err:.2g} % correction, not below "
                 f"{100 * REFERENCE_TOLERANCE:g} %)")


def _config(robot, q):
    if q is None:
        return None
    q = np.asarray(q, dtype=float).reshape(-1)
    return q[:robot.n_joints]


def convergence(robot, q=None, modes=DEFAULT_MODES, quantity="frequencies", **move) -> Convergence:
    """The lowest natural frequencies (joints free and locked) of ``robot`` about the joint
    configuration ``q`` (joint values; beams undeflected) as every beam gets each number of
    ``modes`` (modes per direction, or finite elements); see the module docstring.

    ``quantity="reduction"``: instead, the error of reduced models (``fm.reduce``) against the full
    one on a move, per cutoff: ``move`` holds ``above_hz`` (cutoffs in Hz), ``controller``,
    ``t_final``, ``q0`` and options of ``fm.simulate``
    (:func:`.reduction_study.reduction_convergence`)."""
    if quantity == "reduction":
        from .reduction_study import reduction_convergence

        if "above_hz" not in move:
            raise ValueError("above_hz: give the cutoffs (Hz) to study, e.g. convergence(robot, quantity='reduction', "
                             "above_hz=(100, 300, 1000), controller=..., t_final=...)")
        return reduction_convergence(robot, **move)
    if quantity != "frequencies":
        raise ValueError(f"quantity: 'frequencies' or 'reduction' (got {quantity!r:.40})")
    if move:
        raise ValueError(f"{next(iter(move))}: not an option of the frequency study; it belongs to quantity='reduction'")
    beams = _beams(robot)
    if not beams:
        raise ValueError(f"{robot.name}: the model has no flexible beams, so there are no modes whose number could "
                         "converge; convergence applies to models with beams")
    try:
        counts = sorted({int(m) for m in modes})
    except (TypeError, ValueError):
        raise ValueError(f"modes: expected whole numbers of modes per beam (got {modes!r:.60})") from None
    if not counts or counts[0] < 1:
        raise ValueError(f"modes: expected counts >= 1 (got {modes!r:.60})")
    polynomial = any(link.beam.shapes == "polynomial" for link in beams)
    most = limits.MAX_POLYNOMIAL_MODES if polynomial else min(limits.MAX_MODES, limits.MAX_ELEMENTS)
    if counts[-1] > most:
        raise ValueError(f"modes: {counts[-1]} per beam is more than the {most} these beams support")
    qj = _config(robot, q)
    results = []
    for c in counts:
        variant = with_count(robot, c)
        qq = None if qj is None else np.concatenate([qj, np.zeros(variant.nf)])
        results.append((_lowest(variant, qq, "free"), _lowest(variant, qq, "locked")))
    qq = None if qj is None else np.concatenate([qj, np.zeros(robot.nf)])
    own = {"free": _lowest(robot, qq, "free"), "locked": _lowest(robot, qq, "locked")}

    def stack(i):
        k = max(len(r[i]) for r in results)
        out = np.full((len(results), k), np.nan)
        for row, r in enumerate(results):
            out[row, :len(r[i])] = r[i]
        return out

    names = [link.name or f"link{robot.links.index(link) + 1}" for link in beams]
    own_counts = {n: _count(link.beam) for n, link in zip(names, beams)}
    try:
        ref, method = reference(robot, q)
    except (ValueError, ModelError) as exc:  # beams finite elements cannot model: the finest count, said so
        ref, method = None, f"the largest count studied (no finite-element reference: {' '.join(str(exc).split())})"
    return Convergence(robot.name, counts, stack(0), stack(1), own, names, own_counts, ref, method)


def notice_study(robot, q=None):
    """The study a notice (and the report) needs, or None when the beams already have the finest
    default count: the model's own count against the finest first (one extra model, the common,
    converged case), the full study only when that is far off. ``q``: the joint values it is
    made at (default: the zero pose)."""
    own = max(max(_count(link.beam) for link in _beams(robot)), 1)
    finest = DEFAULT_MODES[-1]
    if own >= finest:
        return None
    quick = convergence(robot, q=q, modes=(own, finest))
    return quick if quick.converged else convergence(robot, q=q, modes=sorted(set(DEFAULT_MODES) | {own}))


def convergence_notice(robot, q=None, seen=set()) -> str:  # noqa: B006 - the set remembers models across calls
    """The notice of :meth:`Convergence.notice` for ``robot`` at the joint values ``q`` (the pose
    the user gave; default the zero pose), issued once per model content and process as a
    :class:`ConvergenceNotice` warning, and returned ('' when converged, rigid, silenced with
    FLEXMAN_NO_CONVERGENCE_NOTICE=1, or already issued). A model whose beams already have the
    finest default count (5) is taken as converged; the study is cached on the robot
    (``robot.derived``)."""
    if robot.is_rigid or os.environ.get(QUIET_VARIABLE, "") not in ("", "0"):
        return ""
    joints = None
    if q is not None and np.any(np.asarray(q, dtype=float)[: robot.n_joints] != 0.0):
        joints = np.asarray(q, dtype=float)[: robot.n_joints]
    key = (robot.content_key(), None if joints is None else tuple(joints.tolist()))  # once per model and pose
    if key in seen:
        return ""
    seen.add(key)
    if joints is not None:
        study = robot.derived(("convergence_check", key[1]), lambda r: notice_study(r, joints))
    else:
        study = robot.derived("convergence_check", notice_study)
    text = study.notice() if study is not None else ""
    if text:
        warnings.warn(text, ConvergenceNotice, stacklevel=2)
    return text
