"""Measured joint signals for identification: their checks, the low-pass cutoff read from their
spectra, and the zero-phase filtering and differentiation of the joint positions.

Why a cutoff from the data: joint velocities and accelerations come from differentiating the
encoder signal twice, which multiplies its noise by (2 pi f)^2. A fixed cutoff (say a tenth of
the Nyquist frequency) keeps far more noise than motion when the motion lives below a few hertz.
:func:`motion_band` finds, per channel, the highest frequency at which the spectrum stands clearly
above the channel's own noise floor; :func:`choose_cutoff` puts the filter's corner there.
"""
from __future__ import annotations

import numpy as np

MAX_ORDER = 10           # Butterworth order: higher orders gain nothing and ring
FLOOR_FACTOR = 10.0      # a spectral line counts as motion when 10x above the noise floor
DYNAMIC_RANGE = 1e-20    # noise floor never below this fraction of the peak (exact, noise-free data)
MAX_CUTOFF_FRACTION = 0.1  # of the sampling rate (a fifth of Nyquist): the cutoff of noise-free data
MIN_RATE = 1.0           # Hz: slower sampling means t was not written in seconds
SETTLING_PERIODS = 2.0   # periods of the cutoff trimmed at each end (the filter's start-up)


def check_signals(robot, t, q, tau):
    """Checked float arrays (t, q, tau): one ValueError line naming the argument otherwise."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 20:
        raise ValueError(f"t: expected a 1-D array of at least 20 sample times (got shape {t.shape})")
    if not np.all(np.isfinite(t)):
        raise ValueError("t: sample times must be finite numbers")
    step = np.diff(t)
    if np.any(step <= 0):
        k = int(np.flatnonzero(step <= 0)[0])
        raise ValueError(f"t: time must increase from sample to sample (sample {k + 1} at t = {t[k + 1]:g} "
                         f"follows t = {t[k]:g})")
    if np.ptp(step) > 1e-3 * step.mean():
        raise ValueError("t: samples must be equally spaced (the zero-phase filter assumes one sampling rate); "
                         "resample the data first")
    if step.mean() > 1.0 / MIN_RATE:
        raise ValueError(f"t: samples are {step.mean():.3g} s apart (a sampling rate of {1 / step.mean():.3g} Hz); "
                         f"t must be in seconds at {MIN_RATE:g} Hz or faster - convert it if it was written in "
                         "ms, us, ns or ps")
    n = robot.n_joints
    out = [t]
    for name, arr in (("q", q), ("tau", tau)):
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 1 and n == 1:
            arr = arr[:, None]
        if arr.shape != (t.size, n):
            raise ValueError(f"{name}: expected shape ({t.size}, {n}) (one row per sample time, one column per "
                             f"joint), got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: all values must be finite numbers")
        out.append(arr)
    tau = out[2]
    for j in range(n):
        if np.ptp(tau[:, j]) == 0.0:
            raise ValueError(f"tau{j + 1}: the torque channel is constant ({tau[0, j]:g}) over the whole record - "
                             "a dead sensor or an unwired column; every joint needs its measured torque")
    return out


def sampling_rate(t) -> float:
    """Samples per second of equally spaced times."""
    return 1.0 / float(np.mean(np.diff(t)))


def motion_band(t, x, factor=FLOOR_FACTOR):
    """(edge, floor) per column of x (N, k): the highest frequency (Hz) at which the spectrum of
    x stands ``factor`` times above its noise floor, and that floor (power per Hz).

    The spectrum (Welch, Hann window, segments of an eighth of the record: about 15 averages) is taken of the second
    difference of x and divided by the difference's gain: this whitens a motion concentrated at low
    frequencies, so the window's leakage does not lift the high band, while leaving white noise
    white. The floor is the median over the upper half of the band (f > fs/4), where only noise
    lives; it is never taken below 1e-20 of the peak (noise-free data)."""
    from scipy.signal import welch

    fs = sampling_rate(t)
    x = np.asarray(x, dtype=float).reshape(len(t), -1)
    d = np.diff(x, 2, axis=0)
    f, P = welch(d, fs=fs, nperseg=min(len(d), max(32, len(d) // 8)), axis=0, detrend="constant")
    f, P = f[1:], P[1:]
    P = P / ((2.0 * np.sin(np.pi * f / fs)) ** 4)[:, None]
    high = f > fs / 4
    floor = np.median(P[high], axis=0) if high.any() else np.zeros(P.shape[1])
    floor = np.maximum(floor, DYNAMIC_RANGE * P.max(axis=0))
    edge = np.zeros(P.shape[1])
    for j in range(P.shape[1]):
        above = np.flatnonzero(P[:, j] > factor * floor[j])
        edge[j] = f[above[-1]] if above.size else 0.0
    return edge, floor


def choose_cutoff(t, q, tau) -> float:
    """Filter cutoff (Hz) from the data: the highest band edge (:func:`motion_band`) over the
    joint positions and torques, at most a tenth of the sampling rate. The joint positions must
    show motion of their own (torque alone may be noise or gravity)."""
    fs = sampling_rate(t)
    edge_q, floor = motion_band(t, q)
    moving = np.var(q, axis=0) > FLOOR_FACTOR ** 2 * floor * fs / 2  # motion well above the noise's variance
    edge_q = edge_q[moving]
    if not np.any(edge_q > 0):
        raise ValueError("data: the joint positions show no motion above their noise (flat spectra); the joints "
                         "must move through an exciting trajectory (or give cutoff= in Hz)")
    edges = np.concatenate([edge_q, motion_band(t, tau)[0]])
    return float(min(edges.max(), MAX_CUTOFF_FRACTION * fs))


def check_filter(t, cutoff, order):
    """(cutoff, order) checked against the sampling rate and the record length."""
    fs = sampling_rate(t)
    if isinstance(order, bool) or not float(order).is_integer() or not 1 <= int(order) <= MAX_ORDER:
        raise ValueError(f"order: the Butterworth filter order must be an integer from 1 to {MAX_ORDER} "
                         f"(got {order!r}); 4 is usual")
    cutoff = float(cutoff)
    if not (np.isfinite(cutoff) and 0 < cutoff < 0.5 * fs):
        raise ValueError(f"cutoff: must lie between 0 and the Nyquist frequency {0.5 * fs:g} Hz of the data "
                         f"(got {cutoff:g} Hz)")
    duration = float(t[-1] - t[0])
    need = 4 * SETTLING_PERIODS / cutoff
    if duration < need:
        raise ValueError(f"cutoff: {cutoff:.3g} Hz needs at least {need:.3g} s of data (the filter settles over "
                         f"{SETTLING_PERIODS / cutoff:.3g} s at each end, which is trimmed); the record is "
                         f"{duration:.3g} s - record longer or raise the cutoff")
    return cutoff, int(order)


def settling_samples(t, cutoff) -> int:
    """Samples trimmed at each end after filtering at ``cutoff`` Hz."""
    return int(np.ceil(SETTLING_PERIODS * sampling_rate(t) / cutoff))


def lowpass(t, cutoff, order):
    """The zero-phase Butterworth filter x -> filtered x (along axis 0), second-order sections
    (stable at any order and cutoff, unlike the transfer-function form)."""
    from scipy.signal import butter, sosfiltfilt

    fs = sampling_rate(t)
    sos = butter(int(order), cutoff / (0.5 * fs), output="sos")

    def filt(x):
        return sosfiltfilt(sos, x, axis=0, padlen=min(3 * (2 * len(sos) + 1), len(t) - 1))

    return filt


def derivatives(x, t):
    """(rates, accelerations) of samples x (N, ...) taken at times t: central differences
    (second order at the ends too)."""
    xd = np.gradient(x, t, axis=0, edge_order=2)
    return xd, np.gradient(xd, t, axis=0, edge_order=2)


def filtered_motion(t, q, cutoff=None, order=4):
    """(q, qd, qdd, filter) from samples q (N, n): zero-phase Butterworth at ``cutoff`` Hz (default
    from the data's spectrum of q alone, see :func:`motion_band`), then central differences.
    ``filter(x)`` filters any other signal the same way."""
    if cutoff is None:
        edge = motion_band(t, q)[0].max()
        cutoff = min(edge, MAX_CUTOFF_FRACTION * sampling_rate(t)) if edge > 0 else MAX_CUTOFF_FRACTION * sampling_rate(t)
    cutoff, order = check_filter(t, cutoff, order)
    filt = lowpass(t, cutoff, order)
    qf = filt(q)
    return (qf,) + derivatives(qf, t) + (filt,)
