"""Which loop a sampled run takes, and the compiled one: a whole run of a sampled controller
(:class:`flexman.control.Sampled`) in one C call (:mod:`flexman.codegen.loop_sampled`).

A sampled run goes through the compiled loop when, besides what the continuous compiled loop
needs of its law (a compiled model, a built-in law on a built-in trajectory, designed on the
simulated robot; :mod:`.compiled_loop`), its readings are computed in C (encoders, strain gauges
and joint torque sensors: a row in q, or of ``M qdd + b`` plus the joint spring's rows in q and
qd; accelerometers, gyroscopes and position sensors: the set's frame-sensor program compiled, :mod:`flexman.codegen.frame_sensors`, a late
position sensor at the samples' positions interpolated as in Python) and its estimator is none or
the steady-state or extended Kalman filter on the simulated model. The extended filter propagates
its covariance through the exact derivative of its RK4 prediction, from the model's partial
derivatives in C (the variant compiled with them, :func:`.compiled_loop.partials_model`); while
that is not built the run keeps the Python loop (a background build, where on, readies it for
the next run), and a compiled EKF run says ``stats["jacobian"] == "analytic"``; it relinearizes
frame sensors through their program's exact Jacobians (``fm_frame_sensor_jacobians``). Any law,
sensor set or filter written or overridden in Python keeps the Python loop (:mod:`.sampled`);
``stats["loop_reason"]`` says why.

The noise is NumPy's: the draws of every sensor's stream and of the disturbance are taken in
Python for all the run's samples (:meth:`Sampled.draws`), so both loops read the same numbers
and agree to round-off.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from ..codegen import loop_sampled
from ..codegen.frame_sensors import JACOBIANS
from .compiled_loop import LOOPS, LoopUnavailable, partials_model, plan
from .run import check_first_torque

#: the sensor types whose readings the compiled loop evaluates
SENSORS = ("encoder", "strain_gauge", "torque", "accelerometer", "gyroscope", "position")
_P = ctypes.POINTER(ctypes.c_double)


def _array(a):
    return np.ascontiguousarray(a, dtype=float)


def _ptr(a):
    return None if a is None else a.ctypes.data_as(_P)


def plan_sampled(model, controller, n_joints, t_grid, loop="auto"):
    """(SampledLoop or None, reason): the compiled loop of a sampled run when it can take it (see
    the module doc), else None and why, in words; ``loop`` as for :func:`.compiled_loop.plan`."""
    loop = "auto" if loop is None else str(loop).lower()
    if loop not in LOOPS:
        raise ValueError(f"loop: unknown '{loop}'; use one of {', '.join(LOOPS)}")
    if loop == "python":
        return None, "loop='python' was asked for"
    made = _describe(model, controller, n_joints, t_grid)
    if isinstance(made, str):
        if loop == "compiled":
            raise LoopUnavailable(f"loop='compiled': {made}")
        return None, made
    return made, "compiled"


def _describe(model, controller, nj, t_grid):
    """The run's SampledLoop, or the reason it cannot be compiled."""
    spec = controller.loop_spec() if hasattr(controller, "loop_spec") else None
    if spec is None:
        return f"the sampled controller ({type(controller).__name__}) is written in Python"
    if getattr(model, "backend", None) != "c":
        return "the dynamics are interpreted (no compiled model)"
    compiled, why = plan(model, "rk4", nj, spec["law"], None, t_grid)
    if compiled is None:
        return f"the sampled law: {why}"
    sensors, estimator = spec["sensors"], spec["estimator"]
    readings = None
    if sensors is not None:
        readings = sensors.loop_spec() if hasattr(sensors, "loop_spec") else None
        if readings is None:
            return "the sensor set's readings are written in Python"
        other = next((t for t in readings["types"] if t not in SENSORS), None)
        if other is not None:
            return f"the compiled loop does not read a {other} (it reads {', '.join(SENSORS)} sensors)"
        if "torque" in readings["types"] and readings["model"] is not model:
            return "the torque sensors evaluate another model than the one simulated"
    if estimator is not None:
        filt = estimator.loop_spec() if hasattr(estimator, "loop_spec") else None
        if filt is None:
            return f"the estimator ({type(estimator).__name__}) is written in Python"
        if filt["model"] is not model:
            return "the estimator's model is another than the one simulated"
        if filt["sensors"] is not sensors:
            return "the estimator reads other sensors than the controller's"
        if filt["extended"]:
            why = _extended(model, compiled)
            if why:
                return why
    return SampledLoop(compiled, readings)


def _extended(model, compiled):
    """Why the extended Kalman filter cannot run compiled, or None once the loop has the model's
    partial derivatives (the variant of the model compiled with them; when it is not built yet it
    is built in the background for the next run, as for the implicit methods' Newton Jacobian)."""
    if not compiled.use_partials(partials_model(model)):
        return NO_PARTIALS
    return None


#: why an extended filter's run keeps the Python loop until the model's derivative variant is built
#: (said on stderr too: unlike a law written in Python, nothing the user chose makes this run slow)
NO_PARTIALS = ("the extended Kalman filter needs the model's partial derivatives in C, which are not built "
               "(robot.compiled(derivatives=True) builds them; with background builds on, the next run has them)")


class SampledLoop:
    """One sampled run's C description: the law's plant and control structs (from
    :class:`.compiled_loop.CompiledLoop`) and the readings' rows; :meth:`run` integrates it."""

    def __init__(self, compiled, readings):
        self.compiled, self.readings = compiled, readings

    def _sampler(self, spec, n_samples, nj, keep):
        """The ``loop_sampled.Sampler`` of a started controller (its arrays go into ``keep``)."""
        controller_draws, disturbance = spec["draws"]
        s = loop_sampled.Sampler(m=0, delay=spec["delay"], period=spec["period"], est_steps=1,
                                 est_period=spec["period"])
        if self.readings is not None:
            r = self.readings
            row = np.ascontiguousarray(r["coordinate"], dtype=np.intc)
            arrays = [_array(r[k]) for k in ("H", "Hd", "bias", "noise", "quantum")] + [_array(controller_draws)]
            keep.extend(arrays + [row])
            s.m = len(row)
            s.H, s.Hd, s.bias, s.sd, s.quantum, s.draws = (_ptr(a) for a in arrays)
            s.row = row.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
            s.needs_qdd = int(np.any(row >= 0))
            if np.any(r["frame_at"] >= 0):
                s.frames = ctypes.addressof(self._frames(r, spec["period"], keep))
                s.needs_qdd = 1
        filt = spec["estimator"].loop_spec() if spec["estimator"] is not None else None
        if filt is not None:
            gain = _array(filt["gain"])
            keep.append(gain)
            s.gain, s.est_steps, s.est_period = _ptr(gain), int(filt["steps"]), float(filt["period"])
            s.needs_qdd = int(s.needs_qdd or filt["needs_qdd"])
            if filt["extended"]:
                ekf = [_array(filt[k]) for k in ("P", "P_post", "R", "W")]  # P, P_post: the filter's own, in place
                keep.extend(ekf)
                struct = loop_sampled.Ekf(*(_ptr(a) for a in ekf))
                keep.append(struct)
                s.ekf = ctypes.addressof(struct)
        if disturbance is not None:
            sd, draws = _array(np.broadcast_to(spec["torque_noise"], (nj,))), _array(disturbance)
            keep.extend((sd, draws))
            s.dist_sd, s.dist_draws = _ptr(sd), _ptr(draws)
        z = _array(spec["z"] if spec["z"] is not None else np.zeros(0))
        s.nz = len(z)
        xbar = _array(filt["x"]) if filt is not None else np.zeros(1)
        keep.extend((z, xbar))
        return s, z, xbar

    @staticmethod
    def _frames(readings, period, keep):
        """The ``loop_sampled.Frames`` of the frame sensors: their compiled program, where each
        reading takes its output, and each reading's latency (whole samples and a fraction)."""
        sensors = readings["sensors"]
        lib = sensors.frame_library()
        at = np.ascontiguousarray(readings["frame_at"], dtype=np.intc)
        per_channel = [lag for lag, s in zip(sensors.lags(period), sensors.sensors) for _ in range(s.n_channels)]
        lag = np.ascontiguousarray([whole for whole, _ in per_channel], dtype=np.intc)
        frac = _array([f for _, f in per_channel])
        reach = max((whole + (f > 0.0) for whole, f in per_channel), default=0)  # the oldest sample read
        f = loop_sampled.Frames(eval=lib.address(), jac=lib.address(JACOBIANS), n=lib.m, max_lag=int(reach),
                                at=at.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                                lag=lag.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), frac=_ptr(frac))
        keep.extend((lib, at, lag, frac, f))
        return f

    def run(self, controller, t_grid, q0, qd0, nq, nj, steps, reduced=None, x_start=None):
        """(t, X (N, 2 nq), taus (N, nj), record, stats) as :func:`.sampled.run_sampled` returns
        them, from one C call: the controller is started, its noise drawn for every sample.
        ``reduced``: a reduced model of the plant (its M and b the compiled model's): (q0, qd0) and
        X's rows are its active coordinates; the run leaves its last dropped coordinates in the
        model's warm start. Its one-line error when they do not converge. ``x_start``: the full
        state (q, qd) the controller starts from (default: (q0, qd0))."""
        from .compiled_reduced import ReducedLoop

        start = time.perf_counter()
        t_grid = _array(t_grid)
        N = len(t_grid)
        n_samples = -(-(N - 1) // steps)
        controller.start(*((q0, qd0) if x_start is None else x_start), nj)
        spec = dict(controller.loop_spec(), draws=controller.draws(n_samples, nj))
        keep = []
        sampler, z, xbar = self._sampler(spec, n_samples, nj, keep)
        m = sampler.m
        x0 = _array(np.concatenate([q0, qd0]))
        X, taus = np.empty((N, len(x0))), np.empty((N, nj))
        plant = None if reduced is None else ReducedLoop(self.compiled, reduced)
        ts, Y, Ytrue, Xhat = np.empty(n_samples), np.empty((n_samples, m)), np.empty((n_samples, m)), \
            np.empty((n_samples, 2 * nq))
        n_out, k, t_fault, evals = ctypes.c_long(0), ctypes.c_long(0), ctypes.c_double(np.nan), ctypes.c_long(0)
        c = self.compiled
        status = c.lib.fm_sampled_run(ctypes.byref(c.plant), ctypes.byref(c.control), ctypes.byref(sampler),
                                      _ptr(t_grid), N, _ptr(x0), _ptr(xbar), _ptr(z), int(steps), _ptr(X), _ptr(taus),
                                      _ptr(ts), _ptr(Y), _ptr(Ytrue), _ptr(Xhat), ctypes.byref(n_out), ctypes.byref(k),
                                      ctypes.byref(t_fault), ctypes.byref(evals),
                                      None if plant is None else ctypes.byref(plant.struct))
        if status == 5:
            raise ValueError(reduced.not_converged())
        if status == 4:
            raise MemoryError("the compiled sampled loop could not allocate its work space")
        check_first_torque(t_grid[0], taus[0])
        n, k = n_out.value, k.value
        sensors = spec["sensors"] is not None
        record = {"t": ts[:k], "y": Y[:k] if sensors else None, "true": Ytrue[:k] if sensors else None,
                  "estimate": Xhat[:k]}
        message = {0: "completed", 3: "the state is not finite", 2: "the applied torque is not finite",
                   1: "SingularMatrixError: the law's flexible mass-matrix block is singular at this state"}[status]
        stats = {"rhs_evaluations": evals.value, "wall_time": time.perf_counter() - start, "loop": "compiled",
                 "samples": k, "success": status == 0, "diverged": status != 0,
                 "t_fault": None if status == 0 else float(t_fault.value), "message": message, "steps": n - 1,
                 "sample_rate": 1.0 / controller.period, "delay": controller.delay}
        if sampler.ekf:  # the EKF's transition Jacobian: the model's partial derivatives through RK4
            stats["jacobian"] = "analytic"
        return t_grid[:n], X[:n], taus[:n], record, stats
