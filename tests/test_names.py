"""Names reaching generated code (issue 14): checked or made safe in one place (model/names.py)."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flexman as fm
from flexman.model import names
from flexman.model.errors import ModelError
from flexman.model.serialize import robot_from_dict

HOSTILE = 'arm\n#include "/etc/passwd"\nint main(void){return 1;}*/\x1b[31m'
LANGS = {"c": ".c", "python": ".py", "fortran": ".f90", "matlab": ".m", "julia": ".jl"}


@pytest.fixture(scope="module")
def eom():
    robot = fm.examples.load("flx_double_pendulum")
    robot.name = HOSTILE  # set from Python: never validated by a loader
    return fm.derive(robot)


@pytest.mark.parametrize("lang", LANGS)
def test_hostile_robot_name_stays_inside_one_comment(eom, lang, tmp_path):
    path = eom.export(lang, tmp_path / f"my arm-1{LANGS[lang]}")
    text = path.read_text()
    assert "\x1b" not in text and "*/" not in text.split("\n", 3)[0]
    header = [line for line in text.splitlines() if "equations of motion of" in line]
    assert len(header) == 1 and "int main(void)" in header[0]  # the payload is comment text on that line
    assert not any(line.startswith(("#include \"/etc", "int main")) for line in text.splitlines())
    assert "my_arm_1_mass_matrix" in text or lang == "matlab"


def test_exported_python_runs_and_c_compiles(eom, tmp_path):
    path = eom.export("python", tmp_path / "arm.py")
    env = {}
    exec(compile(path.read_text(), str(path), "exec"), env)
    q = np.array([0.1, 0.2])
    np.testing.assert_allclose(env["arm_mass_matrix"](q)[0], eom.robot.mass_matrix(q), rtol=1e-12)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        c = eom.export("c", tmp_path / "arm.c")
        subprocess.run([cc, "-c", "-o", str(tmp_path / "arm.o"), str(c)], check=True, capture_output=True)


def test_eom_text_header_is_one_line(eom):
    first = eom.text().splitlines()[0]
    assert first.startswith("# arm #include") and "\x1b" not in first


@given(st.text(max_size=80))
@settings(max_examples=60, derandomize=True, deadline=None)
def test_mangle_always_gives_a_safe_identifier(text):
    name = names.mangle(text)
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) and len(name) <= names.MAX_NAME
    assert name not in names.KEYWORDS and name.lower() not in {k.lower() for k in names.KEYWORDS}
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,30}", text) and text.lower() not in {k.lower() for k in names.KEYWORDS}:
        assert name == text  # valid names are kept


def test_mangle_examples():
    assert names.mangle("end") == "end_" and names.mangle("Program") == "Program_"
    assert names.mangle("1arm") == "fm_1arm" and names.mangle("") == "fm"
    assert names.mangle("bras élastique") == "bras__lastique"
    long_a, long_b = "a" * 100, "a" * 99 + "b"
    assert names.mangle(long_a) != names.mangle(long_b) and len(names.mangle(long_a)) == names.MAX_NAME


def test_comment_is_one_safe_line():
    assert names.comment("a\nb\r\nc\x00d */ e") == "a b c d * / e"
    assert len(names.comment("x" * 500)) == 200


@pytest.mark.parametrize("value,pattern", [
    ("two words", r"^name: must be an identifier"),
    ("x\ny", r"^name: must be an identifier"),
    ("é", r"^name: must be an identifier"),
    ("a" * 41, r"^name: 41 characters; names are limited to 40"),
    (7, r"^name: must be an identifier .*got int"),
])
def test_loader_names_are_identifiers(value, pattern):
    with pytest.raises(ModelError, match=pattern):
        robot_from_dict({"name": value, "links": [{"a": 1.0, "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]})
