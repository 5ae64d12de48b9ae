"""`flexman new`: guided input through a real pseudo-terminal, through piped answers, with
--defaults; Ctrl-C and end of input write nothing and exit 1 with one line."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import flexman as fm
from flexman.cli import new as guided
from flexman.model.errors import ModelError

pexpect = pytest.importorskip("pexpect")

COMMAND = [sys.executable, "-m", "flexman.cli", "new"]
TIMEOUT = 120  # s per step: two shared cores, and the first import of flexman is slow
MASS_REASON = "! mass must be a finite number >= 0 (got -1.0)"

# (what the prompt says, the answer typed): a rigid link 1 (one wrong answer, asked again) and
# a flexible link 2 with one bending mode; "" takes the default.
DIALOGUE = [
    ("robot name [two_link]", "arm"),
    ("number of links (joints) [2]", ""),
    ("DH convention (standard/modified) [standard]", ""),
    ("joint type (revolute/prismatic) [revolute]", "r"),
    ("placement: DH row or URDF-style origin and axis (dh/urdf) [dh]", ""),
    ("a: link length along x (m) [0.5]", "0.8"),
    ("alpha: link twist", ""),
    ("d: offset along z (m) [0]", ""),
    ("theta: joint angle offset", ""),
    ("is the link a flexible beam? (y/n) [n]", "n"),
    ("mass (kg) [1]", "-1"),          # wrong: asked again with the loader's reason
    ("mass (kg) [1]", "2"),
    ("centre of mass in the link frame (m) [-0.4 0 0]", ""),
    ("inertia about the centre of mass", "0 0.1 0.1"),
    ("joint limits", "-90 deg 90 deg"),
    ("viscous joint damping (N m s/rad) [0]", "0.5"),
    ("Coulomb joint friction (N m) [0]", ""),
    ("parent: the link it hangs from (1 to 1, or base) [1]", ""),
    ("joint type (revolute/prismatic) [revolute]", ""),
    ("placement: DH row or URDF-style origin and axis (dh/urdf) [dh]", "dh"),
    ("a: link length along x (m) [0.5]", "1.0"),
    ("alpha: link twist", "0"),
    ("d: offset along z (m) [0]", ""),
    ("theta: joint angle offset", ""),
    ("is the link a flexible beam? (y/n) [n]", "y"),
    ("beam length (m) [1]", ""),
    ("beam mass per length rho A (kg/m) [1]", "2"),
    ("shape functions", ""),
    ("bending modes along local y (modes.y) [1]", "1"),
    ("bending modes along local z (modes.z) [1]", "0"),
    ("torsion modes [0]", ""),
    ("bending stiffness EI", "500"),
    ("modal damping ratio [0]", ""),
    ("geometric stiffening (y/n) [y]", "n"),
    ("tip body mass (kg) [0]", "0.5"),
    ("tip body centre of mass in the link frame (m) [0 0 0]", ""),
    ("tip body inertia about the centre of mass", ""),
    ("joint limits", "none"),
    ("viscous joint damping (N m s/rad) [0]", ""),
    ("Coulomb joint friction (N m) [0]", ""),
    ("gravity in the base frame (m/s^2) [0 0 -9.81]", "0 -9.81 0"),
    ("payload mass at the tip (kg, 0 for none) [0]", "0"),
    ("write", "y"),
]
ANSWERS = [answer for _, answer in DIALOGUE]
MASS_PROMPT = 10  # index of the first mass question in DIALOGUE


def expected_robot() -> fm.Robot:
    """The robot of DIALOGUE, built directly in Python."""
    rigid = fm.Link(joint="revolute", a=0.8, body=fm.RigidBody(2.0, [-0.4, 0.0, 0.0], [0.0, 0.1, 0.1]),
                    viscous=0.5, limits=(-math.pi / 2, math.pi / 2))
    beam = fm.Beam(length=1.0, mass_per_length=2.0, EI=(500.0, 500.0), modes={"y": 1, "z": 0, "torsion": 0},
                   stiffening=False)
    flexible = fm.Link(joint="revolute", a=1.0, body=fm.RigidBody(0.5), beam=beam)
    return fm.Robot(links=[rigid, flexible], name="arm", gravity=[0.0, -9.81, 0.0])


def assert_same_robot(path):
    robot, want = fm.load(path), expected_robot()
    assert robot.name == "arm" and robot.nq == want.nq == 3
    assert robot.coordinate_names == want.coordinate_names
    rng = np.random.default_rng(0)
    for q in [np.zeros(3), *rng.uniform(-1.0, 1.0, (3, 3))]:
        np.testing.assert_allclose(robot.mass_matrix(q), want.mass_matrix(q), rtol=1e-13, atol=1e-13)
        qd = rng.uniform(-1.0, 1.0, 3)
        np.testing.assert_allclose(robot.bias_forces(q, qd), want.bias_forces(q, qd), rtol=1e-12, atol=1e-12)
    assert robot.links[0].viscous == 0.5
    assert robot.links[0].limits == pytest.approx((-math.pi / 2, math.pi / 2))
    np.testing.assert_allclose(robot.gravity, [0.0, -9.81, 0.0])


def spawn(tmp_path, *args):
    env = dict(os.environ, TERM="dumb", COLUMNS="200")
    return pexpect.spawn(COMMAND[0], COMMAND[1:] + list(args), cwd=str(tmp_path), env=env, encoding="utf-8",
                         timeout=TIMEOUT, dimensions=(50, 250), preexec_fn=_terminal_signals)


def _terminal_signals():
    """Ctrl-C interrupts, as in a terminal: a suite started in the background (``make test &``, a
    non-interactive shell's job) passes SIGINT on ignored, and Python then installs no handler."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def piped(tmp_path, answers, *args):
    return subprocess.run(COMMAND + list(args), input="".join(a + "\n" for a in answers), capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)


def rest_lines(child) -> list:
    """What the child printed until it exited, without the terminal's echo of ^C / ^D."""
    child.expect(pexpect.EOF)
    child.close()
    return [line.strip() for line in child.before.splitlines() if line.strip() not in ("", "^C", "^D")]


# ----- (a) a real terminal ----------------------------------------------------------------------------
def test_terminal_dialogue_writes_the_robot(tmp_path):
    child = spawn(tmp_path, "out.yaml")
    for k, (prompt, answer) in enumerate(DIALOGUE):
        if prompt == "write":
            child.expect_exact("total mass: 4.5 kg")
            child.expect_exact("first natural frequencies at q = 0, joints locked:")
            child.expect_exact("3D preview (q = 0): out.preview.png")
        child.expect_exact(prompt)
        if k == MASS_PROMPT + 1:  # the wrong mass came back with its reason, then the same question
            assert MASS_REASON in child.before
        child.expect_exact(": ")
        child.sendline(answer)
    child.expect_exact("wrote out.yaml")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert_same_robot(tmp_path / "out.yaml")
    assert (tmp_path / "out.preview.png").stat().st_size > 1000


# ----- (b) piped answers ------------------------------------------------------------------------------
def test_piped_answers_write_the_same_robot(tmp_path):
    proc = piped(tmp_path, ANSWERS, "out.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # each prompt on its own line with the answer read after it, the reason on the next line
    at = lines.index("  mass (kg) [1]: -1")
    assert lines[at + 1] == "  " + MASS_REASON and lines[at + 2] == "  mass (kg) [1]: 2"
    assert "robot name [two_link]: arm" in lines
    assert any(line.startswith("first natural frequencies at q = 0, joints locked: ") for line in lines)
    assert_same_robot(tmp_path / "out.yaml")


def test_defaults_write_a_two_link_arm(tmp_path):
    proc = subprocess.run(COMMAND + ["--defaults"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    robot = fm.load(tmp_path / "two_link.yaml")
    assert robot.n_joints == 2 and robot.nf == 0 and robot.total_mass() == pytest.approx(2.0)
    assert np.linalg.cond(robot.mass_matrix(np.zeros(2))) < 1e3
    assert (tmp_path / "two_link.preview.png").exists()


# ----- (c) stopping: nothing written, exit 1, one line ------------------------------------------------
@pytest.mark.parametrize("stop", ["ctrl-c", "ctrl-d"])
def test_terminal_stop_writes_nothing(tmp_path, stop):
    child = spawn(tmp_path, "out.yaml")
    for prompt, answer in DIALOGUE[:MASS_PROMPT]:
        child.expect_exact(prompt)
        child.expect_exact(": ")
        child.sendline(answer)
    child.expect_exact("mass (kg) [1]: ")
    # readline draws the prompt before it waits in select(); a Ctrl-C landing in between sets
    # Python's signal flag without waking select (CPython's readline), so the key waits for the
    # next one. A person is never that fast: give the prompt a moment, as they would.
    time.sleep(0.5)
    child.sendintr() if stop == "ctrl-c" else child.sendeof()
    lines = rest_lines(child)
    why = "interrupted" if stop == "ctrl-c" else "end of input"
    assert lines == [f"flexman new: {why}; no model file written"], lines
    assert child.exitstatus == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cut", [5, len(ANSWERS) - 1])  # mid-way; at the confirmation (preview written)
def test_end_of_piped_input_writes_nothing(tmp_path, cut):
    proc = piped(tmp_path, ANSWERS[:cut], "out.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == ["flexman new: end of input; no model file written"]
    assert "Traceback" not in proc.stdout
    assert list(tmp_path.iterdir()) == []


def test_declined_then_quit_writes_nothing(tmp_path):
    proc = piped(tmp_path, ANSWERS[:-1] + ["n", "quit"], "out.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == ["flexman new: stopped; no model file written"]
    assert list(tmp_path.iterdir()) == []


def test_existing_file_is_refused_before_any_question(tmp_path):
    (tmp_path / "out.yaml").write_text("keep me")
    proc = piped(tmp_path, [], "out.yaml")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["flexman: error: OUT: out.yaml exists; remove it or add --force"]
    assert "robot name" not in proc.stdout
    assert (tmp_path / "out.yaml").read_text() == "keep me"


def test_new_help():
    proc = subprocess.run(COMMAND + ["--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--defaults" in proc.stdout and "OUT" in proc.stdout
    top = subprocess.run(COMMAND[:-1] + ["--help"], capture_output=True, text=True, timeout=120)
    assert " new " in top.stdout


# ----- the mapping of the loader's messages (no process) -----------------------------------------------
def test_reasons_are_the_loaders_own_messages():
    doc = {"links": [{"mass": -1.0}]}
    with pytest.raises(ModelError) as err:
        guided.check_document(doc)
    message = str(err.value)
    assert guided.error_field(message) == "links[0].mass"
    assert guided.reason(message, "links[0].") == "mass must be a finite number >= 0 (got -1.0)"
    # a robot still being entered is not refused for its mass matrix (checked at the end)
    guided.check_document({"links": [{}, {}]})
    assert guided._vector("-90 deg 90 deg") == ["-90 deg", "90 deg"]
    assert guided._vector("[0, 0, 1]") == [0, 0, 1] == guided._vector("0, 0, 1")
    assert guided._choice("p", guided.CHOICES_JOINT) == "prismatic"


def test_placed_link_and_a_singular_robot_asked_again(tmp_path):
    """A URDF-style placement; a link without mass fails the loader's mass-matrix check at
    the end, and that link is asked again with the typed answers as defaults."""
    first = ["placed", "1", "", "", "urdf", "0 0 0.3", "0 90 deg 0", "", "", "0", "", "", "", "", "", "", ""]
    again = ["", "", "", "", "", "", "3", "0.1 0 0", "0.01 0.02 0.02", "", "", "", ""]
    proc = piped(tmp_path, first + again, "placed.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  ! links[0]: the mass matrix at q = 0 is singular" in proc.stdout
    assert "    answer link 1 again (Enter keeps an answer)" in proc.stdout
    assert "  placement: DH row or URDF-style origin and axis (dh/urdf) [urdf]: " in proc.stdout
    robot = fm.load(tmp_path / "placed.json")
    link = fm.Link(placement=fm.model.Placement([0.0, 0.0, 0.3], [0.0, math.pi / 2, 0.0], [0.0, 0.0, 1.0]),
                   body=fm.RigidBody(3.0, [0.1, 0.0, 0.0], [0.01, 0.02, 0.02]))
    want = fm.Robot(links=[link], name="placed")
    for q in ([0.0], [0.7]):
        np.testing.assert_allclose(robot.mass_matrix(np.array(q)), want.mass_matrix(np.array(q)), rtol=1e-13)
        np.testing.assert_allclose(robot.bias_forces(np.array(q), np.array([0.3])),
                                   want.bias_forces(np.array(q), np.array([0.3])), rtol=1e-12, atol=1e-12)


def test_piped_answers_write_a_tree(tmp_path):
    """Link 3 hangs from link 1 (the parent question, asked from link 2 on): the file says so and
    loads as a tree; a wrong answer to it is asked again with a one-line reason."""
    rigid = [""] * 13  # a default rigid DH link: joint ... Coulomb friction
    answers = ["tree", "3", ""] + rigid + [""] + rigid + ["4", "1"] + rigid + ["", "0", "y"]
    proc = piped(tmp_path, answers, "tree.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "give a link number from 1 to 2 or 'base' (got 4)" in proc.stdout
    robot = fm.load(tmp_path / "tree.yaml")
    assert robot.parents == (-1, 0, 0)
