"""Model exchange's directional derivatives (``fmu(..., derivatives=True)``, issue 33): the FMU's
fmi2GetDirectionalDerivative of the state derivatives with respect to the states and the torque
inputs, called through FMPy's FMI 2.0 binding, equals central differences of the FMU's own
fmi2GetDerivatives: on the stiffened flexible pendulum and on the arm with a gyroscopic elastic
joint whose drive clips the torque input (a clipped input has no effect: its column is zero)."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Model, fmi2Real
from fmpy.validation import validate_fmu

import flexman as fm
from test_fmu import fmpy_logger_restored, stiffened_pendulum  # noqa: F401  (the fixture: FMPy's logger kept alive)
from test_gyroscopic import arm


class Instance:
    """An FMU's model exchange instance in continuous-time mode (FMPy's binding)."""

    def __init__(self, path, robot):
        md = read_model_description(str(path))
        self.description = md
        self.fmu = FMU2Model(guid=md.guid, unzipDirectory=extract(str(path)),
                             modelIdentifier=md.modelExchange.modelIdentifier, instanceName="probe")
        self.fmu.instantiate()
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        self.fmu.enterContinuousTimeMode()
        vr = {v.name: v.valueReference for v in md.modelVariables}
        names = list(robot.coordinate_names) + [f"qd_{n}" for n in robot.coordinate_names]
        self.nx = len(names)
        self.states = [vr[n] for n in names]
        self.derivatives = [vr[f"der({n})"] for n in names]
        self.taus = [vr[f"tau{j + 1}"] for j in range(robot.n_joints)]

    def set(self, x, tau):
        self.fmu.setReal(self.taus, [float(v) for v in tau])
        self.fmu.setContinuousStates((fmi2Real * self.nx)(*x), self.nx)

    def rates(self, x, tau):
        self.set(x, tau)
        dx = (fmi2Real * self.nx)()
        self.fmu.getDerivatives(dx, self.nx)
        return np.array(dx[:])

    def jacobian(self, x, tau):
        """d(der x)/d(x, tau), a column per known (one directional derivative each)."""
        self.set(x, tau)
        known = self.states + self.taus
        return np.column_stack([self.fmu.getDirectionalDerivative(self.derivatives, [k], [1.0]) for k in known])


def central(instance, x, tau, h=1e-6):
    z = np.concatenate([x, tau])
    cols = []
    for k in range(z.size):
        e = np.zeros(z.size)
        e[k] = h * max(1.0, abs(z[k]))
        up, down = z + e, z - e
        cols.append((instance.rates(up[:x.size], up[x.size:]) - instance.rates(down[:x.size], down[x.size:]))
                    / (2 * e[k]))
    return np.column_stack(cols)


CASES = {"stiff_pendulum": (stiffened_pendulum, np.array([3.0])),
         "gyroscopic": (lambda: arm(damping=0.05, torque_limit=0.01), np.array([0.5, -1.0, 0.5]))}  # joint 3 clipped


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{case: (robot, FMU path with directional derivatives, torque inputs)}, built once."""
    folder = tmp_path_factory.mktemp("directional")
    out = {}
    for case, (make, tau) in CASES.items():
        robot = make()
        out[case] = (robot, fm.derive(robot).fmu(folder / f"{case}.fmu", kind="me", derivatives=True), tau)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_directional_derivatives_equal_central_differences(case, exported):
    robot, path, tau = exported[case]
    fmu = Instance(path, robot)
    assert fmu.description.modelExchange.providesDirectionalDerivative and validate_fmu(str(path)) == []
    rng = np.random.default_rng(7)
    x = rng.uniform(-0.5, 0.5, 2 * robot.nq)
    flex = np.arange(robot.nq)[robot.flex_index]
    x[flex] *= 0.02
    x[robot.nq + flex] *= 0.02
    J, C = fmu.jacobian(x, tau), central(fmu, x, tau)
    assert np.abs(J - C).max() <= 1e-7 * np.abs(C).max()
    assert np.abs(J[robot.nq:, 2 * robot.nq:]).max() > 0  # the torques move the accelerations
    if case == "gyroscopic":
        assert not J[:, -1].any() and not C[:, -1].any()  # the clipped input
    v = rng.normal(size=2 * robot.nq + robot.n_joints)  # one call, every known at once
    fmu.set(x, tau)
    combined = fmu.fmu.getDirectionalDerivative(fmu.derivatives, fmu.states + fmu.taus, list(v))
    assert np.abs(np.array(combined) - J @ v).max() <= 1e-12 * np.abs(J).max() * np.abs(v).sum()


def test_unsupported_knowns_and_bad_options_are_refused(exported, tmp_path):
    robot, path, _ = exported["stiff_pendulum"]
    fmu = Instance(path, robot)
    step = fmu.description.modelVariables[-1]
    assert step.name == "step_size"
    with pytest.raises(Exception, match="status 3"):  # fmi2Error: a parameter is not a known
        fmu.fmu.getDirectionalDerivative(fmu.derivatives, [step.valueReference], [1.0])
    eom = fm.derive(robot)
    for kw, message in ((dict(kind="cs"), "derivatives: directional derivatives are model exchange's"),
                        (dict(controller=fm.control.PID(robot, lambda t: (np.zeros(1),) * 3, 1.0, 0.0, 0.1)),
                         "derivatives: the FMU's directional derivatives cover the robot without a built-in"),
                        (dict(derivatives="yes"), "derivatives: must be true or false")):
        with pytest.raises(ValueError, match=message) as info:
            eom.fmu(tmp_path / "q.fmu", **{"derivatives": True, **kw})
        assert "\n" not in str(info.value)
        assert not (tmp_path / "q.fmu").exists()
