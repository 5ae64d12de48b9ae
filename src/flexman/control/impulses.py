"""Impulse sequences of input shapers for one vibration mode, their convolution and their
residual vibration.

A shaper is a sequence of impulses (amplitudes ``A_i`` summing to 1, times ``t_i`` from 0);
convolving a command with it leaves the command's end point unchanged and cancels the
vibration of a mode of natural frequency ``omega`` and damping ratio ``zeta``.

The residual vibration of a sequence (Singer & Seering 1990) is the amplitude of a mode's free
vibration after the last impulse, relative to the vibration one unit impulse leaves, both seen
the same time after their last impulse::

    V(omega, zeta) = exp(-zeta omega t_N) |sum_i A_i exp((zeta omega + i omega_d) t_i)|,
    omega_d = omega sqrt(1 - zeta^2).

Shapers (``Td = 2 pi / omega_d``, ``K = exp(-zeta pi / sqrt(1 - zeta^2))``):

- ``ZV`` (zero vibration): ``A = (1, K) / (1 + K)`` at ``t = (0, Td/2)``: V = 0 at the design
  frequency.
- ``ZVD`` (zero vibration and derivative): ``A = (1, 2K, K^2) / (1 + K)^2`` at ``(0, Td/2, Td)``:
  V and dV/domega vanish there, so V stays small over a wider band.
- ``EI`` (extra insensitive, Singhose, Seering & Singer): three impulses over one damped period,
  with ``V = tolerance`` at the design frequency and ``V = 0`` at one lower and one higher
  frequency; accepting a small V at the design point widens the band where V <= tolerance beyond
  ZVD's for the same duration. Undamped: ``A = ((1 + V)/4, (1 - V)/2, (1 + V)/4)`` at
  ``(0, T/2, T)`` (V(r) = |(1+V)/2 cos(pi r) + (1-V)/2| at frequency ratio r); damped: the same
  conditions solved numerically, starting from the undamped sequence.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import fsolve

__all__ = ["KINDS", "sequence", "convolve", "residual_vibration"]

KINDS = ("ZV", "ZVD", "EI")


def check_kind(kind):
    """``kind`` upper-cased, or one ValueError naming the kinds."""
    name = str(kind).upper() if isinstance(kind, str) else None
    if name not in KINDS:
        raise ValueError(f"kind: unknown shaper {kind!r}; use one of {', '.join(KINDS)}")
    return name


def check_frequency(omega, where="frequency"):
    omega = float(omega)
    if not (np.isfinite(omega) and omega > 0):
        raise ValueError(f"{where}: a natural frequency must be a finite number > 0 rad/s (got {omega:g})")
    return omega


def check_damping(zeta, where="damping"):
    zeta = float(zeta)
    if not (np.isfinite(zeta) and 0.0 <= zeta < 1.0):
        raise ValueError(f"{where}: a damping ratio must be in [0, 1) (got {zeta:g}); "
                         "an overdamped mode does not ring and needs no shaper")
    return zeta


def check_tolerance(tolerance):
    tol = float(tolerance)
    if not (np.isfinite(tol) and 0.0 < tol < 1.0):
        raise ValueError(f"tolerance: must be between 0 and 1, exclusive (got {tolerance!r}); "
                         "e.g. 0.05 for 5 % residual vibration")
    return tol


def _transform(amplitudes, times, omega, zeta):
    """exp(-zeta omega t_N) sum_i A_i exp((zeta omega + i omega_d) t_i) for omega of any shape
    (complex omega allowed: complex-step derivatives)."""
    A = np.asarray(amplitudes)
    t = np.asarray(times)
    w = np.asarray(omega)[..., None]
    s = zeta * w + 1j * w * np.sqrt(1.0 - zeta**2)
    return np.sum(A * np.exp(s * t - zeta * w * t[-1]), axis=-1)


def residual_vibration(amplitudes, times, omega, damping=0.0):
    """V(omega): the residual vibration of a mode of frequency ``omega`` (rad/s, any shape) and
    damping ratio ``damping`` after the impulse sequence, as a fraction of an unshaped impulse's."""
    return np.abs(_transform(amplitudes, times, np.asarray(omega, dtype=float), float(damping)))


def _zv(zeta):
    K = np.exp(-zeta * np.pi / np.sqrt(1.0 - zeta**2))
    return np.array([1.0, K]) / (1.0 + K), np.array([0.0, 0.5])


def _zvd(zeta):
    K = np.exp(-zeta * np.pi / np.sqrt(1.0 - zeta**2))
    return np.array([1.0, 2.0 * K, K**2]) / (1.0 + K) ** 2, np.array([0.0, 0.5, 1.0])


def _ei_undamped(V):
    """Amplitudes, times (in periods) and the two zero-vibration frequency ratios of the
    undamped EI shaper: V(r) = |(1+V)/2 cos(pi r) + (1-V)/2| vanishes at cos(pi r) = -(1-V)/(1+V)."""
    A = np.array([(1.0 + V) / 4.0, (1.0 - V) / 2.0, (1.0 + V) / 4.0])
    r = np.arccos(-(1.0 - V) / (1.0 + V)) / np.pi
    return A, np.array([0.0, 0.5, 1.0]), r, 2.0 - r


def _ei(zeta, V):
    """EI for a damped vibration of unit period: with the last impulse one damped period after
    the first (as in the undamped shaper), solve V = tolerance at the design frequency and V = 0
    (real and imaginary parts) at two unknown flanking frequencies for A_1, A_2, t_2 and those
    two frequencies; by continuation in the damping from the undamped shaper. Times in periods."""
    A0, t0, r_lo, r_hi = _ei_undamped(V)
    x = np.array([A0[0], A0[1], t0[1], r_lo, r_hi])
    for z in np.linspace(0.0, zeta, int(np.ceil(zeta / 0.01)) + 1)[1:]:
        wn = 2.0 * np.pi / np.sqrt(1.0 - z**2)  # the natural frequency whose damped period is 1

        def equations(x):
            a1, a2, t2, r1, r2 = x
            A, t = np.array([a1, a2, 1.0 - a1 - a2]), np.array([0.0, t2, 1.0])
            lo, hi = _transform(A, t, r1 * wn, z), _transform(A, t, r2 * wn, z)
            return [abs(_transform(A, t, wn, z)) - V, lo.real, lo.imag, hi.real, hi.imag]

        with warnings.catch_warnings():  # judged by the residual below, not by fsolve's flag
            warnings.simplefilter("ignore", RuntimeWarning)
            x = fsolve(equations, x, xtol=1e-13)
        A = np.array([x[0], x[1], 1.0 - x[0] - x[1]])
        if np.max(np.abs(equations(x))) > 1e-10 or not (x[3] < 1.0 < x[4] and np.all(A > 0)):
            raise ValueError(f"damping: no EI shaper found for damping ratio {zeta:g} and tolerance {V:g}; "
                             "use ZVD for such a heavily damped mode")
    return np.array([x[0], x[1], 1.0 - x[0] - x[1]]), np.array([0.0, x[2], 1.0])


def sequence(kind, omega, damping=0.0, tolerance=0.05):
    """(amplitudes, times) of a ``kind`` shaper ("ZV", "ZVD" or "EI") for a mode of natural
    frequency ``omega`` (rad/s) and damping ratio ``damping``; ``tolerance`` is EI's residual
    vibration at the design frequency (a fraction, e.g. 0.05)."""
    kind = check_kind(kind)
    omega = check_frequency(omega)
    zeta = check_damping(damping)
    if kind == "ZV":
        A, periods = _zv(zeta)
    elif kind == "ZVD":
        A, periods = _zvd(zeta)
    else:
        A, periods = _ei(zeta, check_tolerance(tolerance))
    period = 2.0 * np.pi / (omega * np.sqrt(1.0 - zeta**2))
    return A, periods * period


def convolve(first, second, merge=1e-12):
    """The impulse sequence of two shapers applied one after the other (the product of their
    transforms, so V is the product of their V's); impulses closer than ``merge`` seconds are
    merged. Each argument and the result: (amplitudes, times), times ascending."""
    A1, t1 = (np.asarray(v, dtype=float) for v in first)
    A2, t2 = (np.asarray(v, dtype=float) for v in second)
    A = np.outer(A1, A2).ravel()
    t = np.add.outer(t1, t2).ravel()
    order = np.argsort(t, kind="stable")
    A, t = A[order], t[order]
    keep_A, keep_t = [A[0]], [t[0]]
    for a, s in zip(A[1:], t[1:]):
        if s - keep_t[-1] <= merge:
            keep_A[-1] += a
        else:
            keep_A.append(a)
            keep_t.append(s)
    return np.array(keep_A), np.array(keep_t)
