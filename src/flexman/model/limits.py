"""The limits flexman enforces on its inputs, in one place (README "Limits", docs/robustness.md).

Each number is a bound past which an input is refused with a one-line message naming the
field and the limit, rather than accepted and left to hang, overflow or run out of memory
later. The document limits keep the loader fast on hostile files; the model limits keep
every model inside the range where its numerics have been checked.
"""
from __future__ import annotations

# ----- model files (the document itself) ---------------------------------------------------
MAX_DOCUMENT_BYTES = 1_000_000   # a 200-link model file is under 100 kB
MAX_XACRO_CALLS = 10_000         # macro calls while a xacro file expands (a robot's: tens to hundreds)
MAX_XACRO_VALUE = 1_000_000      # items of a text or list, or digits of an integer, one xacro expression may make
MAX_URDF_BYTES = 50_000_000      # a URDF (a xacro file's expansion): real ones are kB to a few MB
MAX_DEPTH = 32                   # nesting of mappings and lists (a model file uses 5)
MAX_NODES = 100_000              # values after expanding YAML aliases (alias bombs stop here)
MAX_TEXT = 10_000                # characters of one text value (a description, a citation)
MAX_VISUALS = 2_000              # visual elements (meshes, primitives) of one model file (tiago_dual: 120)

# ----- model sizes ---------------------------------------------------------------------------
MAX_LINKS = 200                  # links (moving joints) of one robot: each has a coordinate, so MAX_NQ bounds them
                                 #   anyway (tiago_dual.urdf has 101; a 200-link tree loads in about 1.6 s, checks included)
MAX_NQ = 200                     # coordinates in all (M of a 200-coordinate arm: about 2 s)
MAX_MODES = 50                   # eigenfunction modes per direction (cost grows as n^2)
MAX_POLYNOMIAL_MODES = 6         # eta^k shapes: cond(M) is 1e9 at 6, 3e12 at 8, singular past 12
MAX_ELEMENTS = 50                # finite elements per beam

# ----- magnitudes (SI); beyond these, products in the dynamics overflow or lose all digits ---
MAX_LENGTH = 1e3                 # m: DH lengths, centres of mass, beam lengths, prismatic limits
MIN_BEAM_LENGTH = 1e-4           # m
MAX_ANGLE = 1e3                  # rad: DH angles and joint limits (beyond, sin and cos lose digits)
MAX_MASS = 1e6                   # kg: a body, a hub, the payload
MAX_MASS_PER_LENGTH = 1e6        # kg/m
MIN_MASS_PER_LENGTH = 1e-6       # kg/m
MAX_INERTIA = 1e9                # kg m^2: an inertia entry, an armature
MAX_STIFFNESS = 1e12             # N m^2: EI and GJ
MAX_POLAR_INERTIA = 1e6          # kg m: polar mass moment per length
MAX_DAMPING_RATIO = 10.0         # modal damping ratio of a beam
MAX_FRICTION = 1e9               # viscous (N m s) and Coulomb (N m) joint friction
MAX_GRAVITY = 1e3                # m/s^2
MAX_MIMIC_MULTIPLIER = 1e3       # |q_follower / q_followed|: the reduced M = G^T M G grows as its square

# ----- the mass matrix of an accepted model --------------------------------------------------
MAX_CONDITION = 1e12             # cond(M) at rest; past this solving M qdd = f loses most digits

# ----- runs: sizes estimated before anything is allocated (check_run_size) --------------------
MAX_SAMPLES = 1e7                # output samples of one run (t_final / dt): 1e7 x 2 nq floats
MAX_RUN_BYTES = 4e9              # memory one run's results may need (samples x floats per sample)
MAX_SENSITIVITY_STEPS = 1e6      # RK4 steps of a manoeuvre sensitivity (a Python loop: ~1 ms a step)
MAX_STATICS_POINTS = 1e6         # joint values x load cases of one statics sweep
MAX_SWEEP_POINTS = 100_000       # points of one parameter sweep (one file of results per point)
MAX_FMU_COORDINATES = 80         # an FMU's model (symbolic parameters): 80 rigid links took 35 s and 420 MB,
                                 # 40 took 10 s; the cost grows as nq^2 (200 links: GBs, many minutes)
SWEEP_POINT_SECONDS = 600.0      # default wall-time limit of one sweep point (run.time_limit)
MAX_CACHE_SIZE = 1024 ** 5       # bytes: a model-cache size limit past 1024T is a slip (flexman cache)

# ----- loads and prescribed motion ------------------------------------------------------------
MAX_FORCE = 1e9                  # N (and N m for moments): an applied endpoint load
MIN_DURATION = 1e-6              # s: a trajectory's duration, ramp time or spline interval
MAX_JOINT_POSITION = 1e6         # rad of a revolute joint (a long spin-up); prismatic: MAX_LENGTH
MAX_JOINT_RATE = 1e4             # rad/s or m/s of a prescribed motion
MAX_JOINT_ACCELERATION = 1e8     # rad/s^2 or m/s^2 of a prescribed motion

# ----- batches ---------------------------------------------------------------------------------
BATCH_BYTES = 64e6               # working memory of one chunk of a batched evaluation


def check_run_size(count, floats_each, what: str, option: str, most: float = MAX_SAMPLES, hint: str = "") -> int:
    """The one guard on run sizes, called before anything is allocated: ``count`` items (output
    samples, steps, points) of ``floats_each`` floats must stay within ``most`` items and
    ``MAX_RUN_BYTES``. Returns ``count`` as an int; else a ``ValueError`` that names ``option``
    (what to change) and the limit it meets, followed by ``hint``."""
    hint = f"; {hint}" if hint else ""
    try:
        count = float(count)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{option}: {what} cannot be counted (got {count!r:.40})") from None
    if not count < float("inf"):
        raise ValueError(f"{option}: an unbounded number of {what}; the limit is {most:g}{hint}")
    if count > most:
        raise ValueError(f"{option}: {count:.3g} {what}; the limit is {most:g} (README, Limits){hint}")
    need = 8.0 * count * max(float(floats_each), 1.0)
    if need > MAX_RUN_BYTES:
        raise ValueError(f"{option}: {count:.3g} {what} would need about {need / 1e9:.3g} GB; the limit is "
                         f"{MAX_RUN_BYTES / 1e9:g} GB (README, Limits){hint}")
    return int(count)


def chunk_states(nq: int, n_links: int, composite: bool = False) -> int:
    """States per chunk of a batched evaluation: the unit-acceleration recursion keeps about
    (nq + 1)^2 * n_links * 100 floats per state alive (measured: 38 kB per state for the
    7-coordinate three-link arm); the composite-body mass matrix (``composite``) about
    4 (nq^2 + 64 nq) (measured peaks: 20, 47 and 77 kB per state at 15, 40 and 60 coordinates)."""
    per_state = 8 * 4 * (nq ** 2 + 64 * nq) if composite else 8 * 100 * (nq + 1) ** 2 * max(n_links, 1)
    return max(1, int(BATCH_BYTES // per_state))


# ----- measurement files (identification) ------------------------------------------------------
MAX_CSV_BYTES = 2e9              # bytes of one measurement CSV (1e7 rows of 13 columns: about 1.5 GB)
MAX_MEASUREMENT_ROWS = 10_000_000  # samples of one record (as MAX_SAMPLES for a run)
MAX_CSV_LINE = 1 << 20           # bytes of one line (and of one block read): a sample row is under 1 kB
MAX_CSV_COLUMNS = 1000           # columns of one measurement CSV (t, q, tau of 200 joints and a tip: 404)
MAX_MEASUREMENT_VALUES = 2e8     # rows x columns read (held twice while the blocks are joined: 3.2 GB)
