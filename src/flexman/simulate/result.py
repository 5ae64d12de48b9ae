"""The outcome of a simulation: sampled states, applied torques, energy; saving and plotting."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model import engine


@dataclass(repr=False)
class Result:
    """Time histories at the output times ``t`` (N,).

    ``q``, ``qd``: (N, nq) generalized coordinates and velocities; ``tau``: (N, n_joints) the
    joint torques applied at those times; ``energy``: (N,) kinetic + potential energy;
    ``controller_state``: (N, n_states) internal controller states (e.g. PID integrals).
    ``stats`` holds ``rhs_evaluations``, ``wall_time`` (s), ``steps`` and the solver message.
    ``diverged``: the run stopped early (a non-finite state, a failed solver step or a
    singular mass matrix) at time ``t_diverged``; the samples before it are kept.
    Under prescribed joint motion (``simulate(..., prescribed=traj)``), ``tau`` holds the torques
    the motion needs, ``work`` (N,) the work they have done since t = 0 and ``prescribed`` the
    motion itself. ``measurements``: what the sensors read (the robot's own ``sensors:``, or a
    sampled controller's), channel name -> (t, y, true), each at its sensor's rate; ``estimate``:
    a sampled controller's estimates of (q, qd) at its samples.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    energy: np.ndarray
    robot: object = None
    method: str = "rk4"
    stats: dict = field(default_factory=dict)
    controller_state: np.ndarray | None = None
    coordinate_names: list | None = None
    controller: object = None  # the controller that drove the run (its reference trajectory is plotted)
    diverged: bool = False
    t_diverged: float | None = None
    work: np.ndarray | None = None
    prescribed: object = None
    measurements: object = None  # what the sensors read (flexman.sensors.Measurements), or None without sensors
    estimate: dict | None = None  # a sampled controller's state estimates: {"t": sample times, "x": (K, 2 nq)}

    def __post_init__(self):
        if self.coordinate_names is None:
            if self.robot is not None:
                self.coordinate_names = list(self.robot.coordinate_names)
            else:
                self.coordinate_names = [f"x{i + 1}" for i in range(self.q.shape[1])]
        if self.controller_state is None:
            self.controller_state = np.zeros((len(self.t), 0))

    @property
    def joint_names(self) -> list:
        return self.coordinate_names[: self.tau.shape[1]]

    def energy_drift(self) -> float:
        """Largest change of the total energy over the run, relative to the energy that changed
        form: the larger of the highest kinetic energy and the largest change of potential
        energy (the total itself has an arbitrary zero, so it is no scale). 0 when nothing
        moved; without a robot, relative to the largest |E|."""
        e = np.asarray(self.energy, dtype=float).reshape(len(self.t), -1).sum(axis=1)
        if e.size < 2:
            return 0.0
        change = float(np.max(np.abs(e - e[0])))
        if self.robot is not None:
            kinetic = np.asarray(self.robot.kinetic_energy(self.q, self.qd), dtype=float).reshape(-1)
            potential = e - kinetic
            scale = max(float(kinetic.max()), float(np.max(np.abs(potential - potential[0]))))
        else:
            scale = float(np.abs(e).max())
        return 0.0 if change == 0.0 else change / max(scale, np.finfo(float).tiny)

    def columns(self) -> list:
        """Column names of the CSV layout: t, q names, qd_..., tau_..., energy."""
        names = self.coordinate_names
        return (["t"] + names + [f"qd_{n}" for n in names]
                + [f"tau_{n}" for n in self.joint_names] + ["energy"])

    def table(self) -> np.ndarray:
        return np.column_stack([self.t, self.q, self.qd, self.tau, self.energy])

    def to_pandas(self):
        """The run as a pandas DataFrame indexed by time: the columns of :meth:`columns` (pandas is
        optional: ``pip install 'flexman[pandas]'``)."""
        from ..extras import require

        pd = require("pandas", "Result.to_pandas")
        energy = np.asarray(self.energy, dtype=float).reshape(len(self.t), -1).sum(axis=1)
        data = np.column_stack([self.t, self.q, self.qd, self.tau, energy])
        return pd.DataFrame(data, columns=self.columns()).set_index("t")

    def __repr__(self):
        """One line: the robot, samples, time span, method and backend, and whether it diverged;
        the arrays themselves through the attributes (``res.q``, ``res.to_pandas()``)."""
        name = getattr(self.robot, "name", None) or "?"
        n, span = len(self.t), (float(self.t[-1]) if len(self.t) else 0.0)
        ran = self.stats.get("method", self.method)
        where = ", ".join(str(self.stats[k]) for k in ("backend", "loop") if self.stats.get(k))
        state = f"diverged at t = {self.t_diverged:g} s" if self.diverged else "finished"
        return (f"<Result {name}: {n} samples over {span:g} s, nq = {self.q.shape[1]}, {ran}"
                f"{f' ({where})' if where else ''}, {state}>")

    __str__ = __repr__

    def save(self, path):
        """Write ``.npz`` (everything but the robot) or ``.csv`` (one row per output time),
        under a temporary name renamed into place (never half a file)."""
        from ..outputs import staged

        final = Path(path)
        ext = final.suffix.lower()
        if ext not in (".npz", ".csv"):
            raise ValueError(f"save: unknown extension '{ext}'; use .npz or .csv")
        with staged() as files:
            self._write(files.path(final), ext)
        return final

    def _write(self, path, ext):
        if ext == ".npz":
            np.savez(path, t=self.t, q=self.q, qd=self.qd, tau=self.tau, energy=self.energy,
                     controller_state=self.controller_state, method=np.array(self.method),
                     coordinate_names=np.array(self.coordinate_names),
                     diverged=np.array(bool(self.diverged)),
                     t_diverged=np.array(np.nan if self.t_diverged is None else float(self.t_diverged)),
                     stats_keys=np.array([str(k) for k in self.stats]),
                     stats_values=np.array([str(v) for v in self.stats.values()]))
        else:
            np.savetxt(path, self.table(), delimiter=",", header=",".join(self.columns()),
                       comments="", fmt="%.17g")

    @classmethod
    def load(cls, path, robot=None):
        """Read a result written by :meth:`save` as ``.npz`` (stats come back as strings)."""
        with np.load(Path(path), allow_pickle=False) as data:
            t_div = float(data["t_diverged"]) if "t_diverged" in data else np.nan
            return cls(diverged=bool(data["diverged"]) if "diverged" in data else False,
                       t_diverged=None if np.isnan(t_div) else t_div,
                       t=data["t"], q=data["q"], qd=data["qd"], tau=data["tau"],
                       energy=data["energy"], robot=robot, method=str(data["method"]),
                       stats=dict(zip(data["stats_keys"].tolist(), data["stats_values"].tolist())),
                       controller_state=data["controller_state"],
                       coordinate_names=data["coordinate_names"].tolist())

    def plot(self, path=None):
        """Plot the run (``flexman.viz.plots.plot_result`` when available); return the figure."""
        try:
            plot_result = engine.require("plot_result")
        except (ImportError, engine.UnfilledSlot):
            plot_result = None
        from ..outputs import staged

        with staged() as files:
            target = None if path is None else files.path(path)
            if plot_result is not None:
                return plot_result(self, target, self.robot)
            return _minimal_plot(self, target)

    def _repr_html_(self):
        """Notebook view: the key numbers of the run and its plots (an inline PNG); the 3D
        animation is in :meth:`report`."""
        return engine.require("result_html")(self)

    def report(self, path, allow_diverged=False, **options):
        """Write the self-contained HTML report (model, frequencies, equations, plots, 3D
        animation) to ``path`` (a folder gets ``report.html``); return its path. Options:
        ``magnify``, ``equations``, ``title`` (see ``flexman.viz.report.report_html``).
        A run that diverged gets no report unless ``allow_diverged`` (a blow-up drawn as results
        misleads); one that is written says so at its top."""
        if self.diverged and not allow_diverged:
            raise ValueError(diverged_refusal(self, "allow_diverged=True"))
        return engine.require("write_report")(self, path, robot=self.robot, **options)


def diverged_refusal(result, option) -> str:
    """The one line that refuses a report of a diverged run (``option``: how to insist)."""
    return (f"report: the run diverged at t = {result.t_diverged:g} s ({result.stats.get('message', 'no message')}); "
            f"no report is written of a blow-up - run it with method='auto' or a smaller dt, or give {option} to "
            "write one that says so at its top")


def _minimal_plot(result, path=None):
    """Coordinates and energy against time, on the non-interactive Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 6))
    FigureCanvasAgg(fig)
    ax_q, ax_e = fig.subplots(2, 1, sharex=True)
    for i, name in enumerate(result.coordinate_names):
        ax_q.plot(result.t, result.q[:, i], label=name)
    ax_q.set_ylabel("q")
    ax_q.legend(loc="best", fontsize="small")
    ax_e.plot(result.t, result.energy)
    ax_e.set_ylabel("energy [J]")
    ax_e.set_xlabel("t [s]")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
