"""The CPython extension built next to the compiled C model: same numbers as ctypes and NumPy,
one-line argument errors, parameters, the ctypes fallback (FLEXMAN_NO_EXT, failed build), and
``out=`` on every function (extension fast path, ctypes, NumPy; one state and batches), the C
methods' fallback to the general path, fresh results."""
import shutil
import warnings
import weakref

import numpy as np
import pytest

import flexman as fm
import flexman.codegen as cg
from flexman.codegen import cbuild

from test_symbolic import flexible_arm, planar_2r, random_rigid, rel, state

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
WHATS = ("mass_matrix", "bias_forces", "inverse_dynamics", "forward_dynamics")


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.getbasetemp() / "flexman_cache"
    monkeypatch.setenv("FLEXMAN_CACHE", str(path))
    monkeypatch.delenv("FLEXMAN_NO_EXT", raising=False)
    return path


def args_of(what, q, qd, qdd, tau):
    return {"mass_matrix": (q,), "bias_forces": (q, qd), "inverse_dynamics": (q, qd, qdd),
            "forward_dynamics": (q, qd, tau)}[what]


def models(robot, formulation, parameters):
    eom = fm.derive(robot, formulation=formulation, parameters=parameters)
    fast = eom.compile("c")
    assert fast.ext is not None, "extension not built"
    return fast, eom.compile("c", ext=False), eom.compile("numpy")


@pytest.mark.parametrize("case", ["rigid", "rigid_symbolic", "flexible", "flexible_prismatic"])
def test_extension_equals_ctypes_and_numpy(case):
    rng = np.random.default_rng(7)
    if case.startswith("rigid"):
        robot, form = random_rigid(rng, 5), "newton_euler"
    else:
        robot, form = flexible_arm(prismatic=case.endswith("prismatic")), "book"
    fast, slow, npy = models(robot, form, "symbolic" if case.endswith(("symbolic", "prismatic")) else "numeric")
    assert slow.ext is None
    for k in range(3):
        q, qd, qdd, tau = state(rng, robot, ())
        for w in WHATS:
            a = args_of(w, q, qd, qdd, tau)
            x = getattr(fast, w)(*a)  # extension
            assert type(x) is np.ndarray and x.dtype == np.float64
            assert rel(x, getattr(slow, w)(*a)) < 1e-12  # ctypes
            assert rel(x, getattr(npy, w)(*a)) < 1e-12
            assert rel(x, getattr(robot, w)(*a)) < 1e-9
            out = np.full_like(x, np.nan)  # module function writing into a given array
            assert getattr(fast.ext, w)(*a, out) is out
            assert np.array_equal(out, x)
    # batches and non-float64 / list input take the general path
    q, qd, qdd, tau = state(rng, robot, (3, 2))
    assert rel(fast.inverse_dynamics(q, qd, qdd), slow.inverse_dynamics(q, qd, qdd)) < 1e-12
    assert rel(fast.mass_matrix(list(q[0, 0])), slow.mass_matrix(q[0, 0])) < 1e-12
    assert rel(fast.bias_forces(q[0, 0].astype(np.float32), qd[0, 0]), slow.bias_forces(q[0, 0].astype(np.float32), qd[0, 0])) < 1e-12


def test_bad_arguments_raise_one_line_errors():
    robot, _ = planar_2r()
    ext = fm.derive(robot).compile("c").ext
    q = np.array([0.1, 0.2])
    cases = [
        (lambda: ext.inverse_dynamics(q, q, np.zeros(3)), ValueError, "qdd must have shape (2,), got (3,)"),
        (lambda: ext.bias_forces(np.zeros((1, 2)), q), ValueError, "q must have shape (2,), got (1, 2)"),
        (lambda: ext.mass_matrix(q, np.empty((2, 3))), ValueError, "out must have shape (2, 2), got (2, 3)"),
        (lambda: ext.mass_matrix(q.astype(np.float32)), TypeError, "q must be a float64 array"),
        (lambda: ext.mass_matrix([0.1, 0.2]), TypeError, "q must be a C-contiguous float64 array of shape (2,), got list"),
        (lambda: ext.bias_forces(q, np.zeros(4)[::2]), TypeError, "qd must be a C-contiguous"),
        (lambda: ext.forward_dynamics(q, q), TypeError, "takes 3 to 5 positional arguments (q, qd, tau[, out[, p]]), got 2"),
        (lambda: ext.mass_matrix(q, np.zeros((2, 2), order="F").T.T), TypeError, "out must be a C-contiguous, writable"),
    ]
    for call, exc, text in cases:
        with pytest.raises(exc) as info:
            call()
        msg = str(info.value)
        assert text in msg and "\n" not in msg, msg
    ro = np.zeros((2, 2))
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="out must be a C-contiguous, writable"):
        ext.mass_matrix(q, ro)
    # through the model: the general path names the argument as well
    fast = fm.derive(robot).compile("c")
    with pytest.raises(ValueError, match=r"qd: expected nq = 2 values per state \(last axis\), got shape \(3,\)"):
        fast.bias_forces(q, np.zeros(3))


def test_symbolic_parameters_reach_the_extension():
    robot, _ = planar_2r()
    fast = fm.derive(robot, formulation="book", parameters="symbolic").compile("c")
    heavier, _ = planar_2r(m1=2.0, m2=1.6, l2=0.9)
    q, qd = np.array([0.3, -0.4]), np.array([0.5, 0.2])
    assert rel(fast.mass_matrix(q), robot.mass_matrix(q)) < 1e-12
    assert rel(fast.ext.mass_matrix(q), robot.mass_matrix(q)) < 1e-12  # compiled-in defaults
    fast.params = list(fm.derive(heavier, formulation="book", parameters="symbolic").param_values.values())
    assert rel(fast.mass_matrix(q), heavier.mass_matrix(q)) < 1e-12
    assert rel(fast.bias_forces(q, qd), heavier.bias_forces(q, qd)) < 1e-12
    assert rel(fast.ext.bias_forces(q, qd, None, fast.params), heavier.bias_forces(q, qd)) < 1e-12
    with pytest.raises(ValueError, match=r"p must have shape \(%d,\)" % len(fast.params)):
        fast.ext.mass_matrix(q, None, fast.params[:-1])


def test_fallback_environment_variable(monkeypatch, cache):
    monkeypatch.setenv("FLEXMAN_NO_EXT", "1")
    robot, _ = planar_2r()
    fast = fm.derive(robot).compile("c")
    q, qd, qdd = np.array([0.3, -0.4]), np.array([0.5, 0.2]), np.array([1.0, -2.0])
    assert fast.ext is None
    assert rel(fast.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd)) < 1e-12
    assert rel(fast.mass_matrix(q), robot.mass_matrix(q)) < 1e-12


def test_fallback_when_extension_cannot_be_built(monkeypatch):
    def no_headers():
        raise RuntimeError("Python.h not found in /nowhere (install the Python development headers)")

    monkeypatch.setattr(cbuild, "python_include", no_headers)
    monkeypatch.setattr(cg, "_warned", [])
    robot, _ = planar_2r(m1=1.7)
    with pytest.warns(RuntimeWarning, match="Python extension not built.*using ctypes"):
        fast = fm.derive(robot).compile("c")
    assert fast.ext is None
    q, qd, tau = np.array([0.3, -0.4]), np.array([0.5, 0.2]), np.array([1.0, -2.0])
    assert rel(fast.forward_dynamics(q, qd, tau), robot.forward_dynamics(q, qd, tau)) < 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process
        fm.derive(planar_2r(m1=1.9)[0]).compile("c")


# ----- out= and the methods bound to the extension's C functions ----------------------------
@pytest.fixture(scope="module")
def arm():
    rng = np.random.default_rng(3)
    robot = random_rigid(rng, 4)
    eom = fm.derive(robot, formulation="denoc")
    fast = eom.compile("c")
    assert fast.ext is not None, "extension not built"
    return robot, {"extension": fast, "ctypes": eom.compile("c", ext=False), "numpy": eom.compile("numpy")}


@pytest.mark.parametrize("kind", ["extension", "ctypes", "numpy"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_out_is_filled_and_returned(arm, kind, batch):
    robot, models = arm
    model = models[kind]
    q, qd, qdd, tau = state(np.random.default_rng(len(batch)), robot, batch)
    for w in WHATS:
        a = args_of(w, q, qd, qdd, tau)
        ref = getattr(robot, w)(*a)
        x = getattr(model, w)(*a)
        assert type(x) is np.ndarray and x.dtype == np.float64 and x.shape == ref.shape
        assert rel(x, ref) < 1e-9
        assert getattr(model, w)(*a) is not x  # a fresh array each call
        for order in ("C", "F"):  # F: not C-contiguous (when 2-D), copied in
            out = np.full(ref.shape, np.nan, order=order)
            assert getattr(model, w)(*a, out=out) is out
            assert np.array_equal(out, x)
            out[...] = np.nan
            assert getattr(model, w)(*a, out) is out  # positional
            assert np.array_equal(out, x)
        out = np.zeros(ref.shape, dtype=np.float32)  # other dtype: cast in
        assert getattr(model, w)(*a, out=out) is out and rel(out, ref) < 1e-6


@pytest.mark.parametrize("kind", ["extension", "ctypes", "numpy"])
def test_bad_out_raises(arm, kind):
    robot, models = arm
    model = models[kind]
    q = np.zeros(robot.nq)
    with pytest.raises(ValueError, match=r"out: expected shape \(4, 4\), got \(4, 3\)"):
        model.mass_matrix(q, out=np.empty((4, 3)))
    with pytest.raises(ValueError, match=r"out: expected shape \(2, 4\)"):
        model.bias_forces(np.zeros((2, robot.nq)), q, out=np.empty(4))
    ro = np.empty((4, 4))
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="out must be a writable NumPy array"):
        model.mass_matrix(q, out=ro)
    with pytest.raises(TypeError, match="out must be a writable NumPy array, got list"):
        model.mass_matrix(q, out=[[0.0] * 4] * 4)
    with pytest.raises(TypeError):
        model.mass_matrix(q, bad=1)
    with pytest.raises(TypeError):
        model.inverse_dynamics(q, q)


def test_extension_methods_fall_back_to_the_general_path(arm):
    robot, models = arm
    fast, slow = models["extension"], models["ctypes"]
    assert type(fast.mass_matrix).__name__ == "builtin_function_or_method"
    rng = np.random.default_rng(5)
    q, qd, qdd, _ = state(rng, robot, (5,))
    ref = slow.inverse_dynamics(q, qd, qdd)
    cases = [((q, qd, qdd), {}), ((q[0], qd, qdd), {}),  # batch, broadcast q
             ((list(q[1]), qd[1], qdd[1]), {}), ((q[1].astype(np.float32), qd[1], qdd[1]), {}),
             ((np.stack([q[1]] * 2, axis=1)[:, 0], qd[1], qdd[1]), {}),  # strided
             ((q[1].astype(">f8"), qd[1], qdd[1]), {}),  # byte-swapped
             ((), {"q": q[1], "qd": qd[1], "qdd": qdd[1]})]  # keywords
    for args, kwargs in cases:
        x = fast.inverse_dynamics(*args, **kwargs)
        want = slow.inverse_dynamics(*args, **kwargs)
        assert x.shape == want.shape and rel(x, want) < 1e-12
    assert rel(fast.inverse_dynamics(q, qd, qdd), ref) < 1e-12


def test_symbolic_parameters_reach_the_bound_methods():
    robot, _ = planar_2r()
    fast = fm.derive(robot, formulation="book", parameters="symbolic").compile("c")
    heavier, _ = planar_2r(m1=2.0, m2=1.6, l2=0.9)
    q, qd = np.array([0.3, -0.4]), np.array([0.5, 0.2])
    out = np.empty((2, 2))
    assert rel(fast.mass_matrix(q, out=out), robot.mass_matrix(q)) < 1e-12
    fast.params = list(fm.derive(heavier, formulation="book", parameters="symbolic").param_values.values())
    assert rel(fast.mass_matrix(q), heavier.mass_matrix(q)) < 1e-12
    assert rel(fast.bias_forces(q, qd, out=np.empty(2)), heavier.bias_forces(q, qd)) < 1e-12
    assert rel(fast.bias_forces(np.stack([q, q]), qd)[1], heavier.bias_forces(q, qd)) < 1e-12


def test_bind_checks_its_arguments_and_models_are_freed(arm):
    _, models = arm
    ext = models["extension"].ext
    with pytest.raises(ValueError, match="no function nope"):
        ext.bind("nope", print, None)
    with pytest.raises(ValueError, match="p must be a C-contiguous float64 array"):
        ext.bind("mass_matrix", print, np.zeros(3))
    robot, _ = planar_2r(m1=1.1)
    model = fm.derive(robot).compile("c")
    ref = weakref.ref(model)
    del model  # freed at once: the bound C methods hold no reference cycle
    assert ref() is None
