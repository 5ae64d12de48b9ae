"""The loader's door (issue 14): hostile documents are refused quickly with one line naming
the place, well-formed ones in any encoding variant load."""
from __future__ import annotations


import pytest

import flexman as fm
from bounds import bounded
from flexman import cli
from flexman.model import limits
from flexman.model.errors import ModelError
from flexman.model.serialize import robot_from_dict

BASE_YAML = "name: x\nlinks:\n  - {a: 1.0, mass: 1.0, inertia: [0.1, 0.1, 0.1]}\n"
BASE_JSON = '{"name": "x", "links": [{"a": 1.0, "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}]%s}'
BASE_TOML = 'name = "x"\n%s\n[[links]]\na = 1.0\nmass = 1.0\ninertia = [0.1, 0.1, 0.1]\n'


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def refused(path, pattern, seconds=5.0):
    """load(path) raises a one-line ModelError matching pattern, within `seconds`."""
    with bounded(cpu_s=seconds), pytest.raises(ModelError, match=pattern) as info:
        fm.load(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def alias_bomb(levels=9, fan=9):
    lines = ["  l0: &l0 [" + ", ".join(["lol"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_in_free_section_is_refused_fast(tmp_path):
    # 9^9 = 387 million values once expanded: refused from the event stream in milliseconds
    path = write(tmp_path, "bomb.yaml", BASE_YAML + "controller:\n" + alias_bomb())
    refused(path, rf"line \d+, column \d+: the document expands to more than {limits.MAX_NODES} values")


def test_small_aliases_are_fine(tmp_path):
    text = ("name: x\nlinks:\n  - &rod {a: 1.0, mass: 1.0, inertia: [0.1, 0.1, 0.1]}\n"
            "  - *rod\n  - <<: *rod\n    a: 2.0\n")
    robot = fm.load(write(tmp_path, "alias.yaml", text))
    assert [link.a for link in robot.links] == [1.0, 1.0, 2.0]


def test_recursive_alias_is_refused(tmp_path):
    path = write(tmp_path, "rec.yaml", BASE_YAML + "controller: &c {kp: *c}\n")
    refused(path, r"line 4, column 21: the alias \*c refers to a value that contains it")


@pytest.mark.parametrize("name,text", [
    ("deep.yaml", BASE_YAML + "controller: " + "[" * 900 + "]" * 900 + "\n"),
    ("deep2.yaml", BASE_YAML + "controller:\n" + "".join(" " * (2 * i + 2) + f"k{i}:\n" for i in range(200)) + "\n"),
    ("deep.json", BASE_JSON % (', "controller": ' + "[" * 5000 + "]" * 5000)),
    ("deep.toml", BASE_TOML % ("controller = {kp = " + "[" * 3000 + "]" * 3000 + "}")),
])
def test_deep_nesting_is_refused(tmp_path, name, text):
    refused(write(tmp_path, name, text), rf"nested deeper than {limits.MAX_DEPTH} levels")


def test_moderate_nesting_in_json_below_recursion_limit(tmp_path):
    # deeper than MAX_DEPTH but shallow enough for json's own recursion: our walk refuses it
    path = write(tmp_path, "d.json", BASE_JSON % (', "controller": {"kp": ' + "[" * 100 + "]" * 100 + "}"))
    refused(path, r"controller\.kp(\[0\])+: nested deeper than")


@pytest.mark.parametrize("name,text,pattern", [
    ("int.yaml", BASE_YAML + "controller: {kp: " + "1" * 5000 + "}\n", r"line 4.*integer with 5000 characters"),
    ("int.json", BASE_JSON % (', "controller": {"kp": ' + "1" * 5000 + "}"), r"controller\.kp: an integer with 5000 digits"),
    ("int.toml", BASE_TOML % ("controller = {kp = " + "1" * 5000 + "}"), r"integer with more than 4300 digits"),
    ("big.yaml", BASE_YAML.replace("a: 1.0", "a: 1" + "0" * 400), r"links\[0\]\.a: the integer 1000.* too large for a float"),
    ("big.json", BASE_JSON.replace('"a": 1.0', '"a": 1' + "0" * 400) % "", r"links\[0\]\.a: the integer .* too large"),
    ("big.toml", BASE_TOML.replace("a = 1.0", "a = 1" + "0" * 400) % "", r"invalid TOML|links\[0\]\.a: the integer"),
])
def test_huge_integers_are_refused_with_place(tmp_path, name, text, pattern):
    refused(write(tmp_path, name, text), pattern)


def test_large_float_literal_names_field(tmp_path):
    path = write(tmp_path, "f.yaml", BASE_YAML.replace("a: 1.0", "a: 1e400"))
    refused(path, r"links\[0\]\.a: must be a finite number")


@pytest.mark.parametrize("name,text,pattern", [
    ("dup.yaml", "name: x\nlinks:\n  - mass: -5\n    mass: 2\n", r"links\[0\]\.mass: given twice \(lines 3 and 4\); keep one"),
    ("dup2.yaml", BASE_YAML + "name: y\n", r": name: given twice \(lines 1 and 4\)"),
    ("dup.json", '{"name": "x", "links": [{"mass": -5, "mass": 2}]}', r"links\[0\]\.mass: given twice; keep one"),
    ("dup.toml", BASE_TOML % 'name = "y"', r"invalid TOML"),
])
def test_duplicate_keys_are_refused(tmp_path, name, text, pattern):
    refused(write(tmp_path, name, text), pattern)


@pytest.mark.parametrize("name,text", [
    ("bom.yaml", "\ufeff" + BASE_YAML.replace("\n", "\r\n")),
    ("bom.json", "\ufeff" + (BASE_JSON % "").replace(", ", ",\r\n")),
    ("bom.toml", "\ufeff" + (BASE_TOML % "").replace("\n", "\r\n")),
])
def test_bom_and_crlf_load(tmp_path, name, text):
    robot = fm.load(write(tmp_path, name, text))
    assert robot.name == "x" and robot.links[0].a == 1.0 and robot.links[0].body.mass == 1.0


@pytest.mark.parametrize("name,text", [
    ("esc.yaml", BASE_YAML + 'description: "\\e[31mred\\e[0m"\n'),
    ("esc.json", BASE_JSON % ', "description": "\\u001b[2J"'),
    ("esc.toml", BASE_TOML % 'description = "bell \\u0007"'),
    ("key.json", BASE_JSON % ', "controller": {"k\\u009b": 1}'),
])
def test_control_characters_are_refused(tmp_path, name, text):
    refused(write(tmp_path, name, text), r"contains the control character U\+00(1B|07|9B)")


def test_oversized_document_is_refused_before_reading(tmp_path):
    path = write(tmp_path, "huge.yaml", BASE_YAML + "description: |\n" + ("  " + "x" * 98 + "\n") * 10_500)
    refused(path, rf"model files are limited to {limits.MAX_DOCUMENT_BYTES}")


def test_long_text_is_refused(tmp_path):
    path = write(tmp_path, "t.yaml", BASE_YAML + "description: " + "x" * (limits.MAX_TEXT + 1) + "\n")
    refused(path, rf"description: text of {limits.MAX_TEXT + 1} characters")


def test_many_values_are_refused(tmp_path):
    path = write(tmp_path, "n.json", BASE_JSON % (', "controller": {"kp": [' + ", ".join(["0"] * limits.MAX_NODES) + "]}"))
    refused(path, rf"more than {limits.MAX_NODES} values")


def test_robot_from_dict_survives_self_reference_from_python():
    data = {"name": "x", "links": [{"a": 1.0, "mass": 1.0, "inertia": [0.1, 0.1, 0.1]}], "controller": {}}
    data["controller"]["self"] = data["controller"]
    with pytest.raises(ModelError, match=r"nested deeper than|more than \d+ values"):
        robot_from_dict(data)


def test_info_prints_markup_in_description_as_text(tmp_path, capsys):
    path = write(tmp_path, "m.yaml", BASE_YAML + "description: \"[/bold] closes nothing [red]not red\"\n"
                 "source: \"[link=x]cite[/link]\"\n")
    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[/bold] closes nothing [red]not red" in out and "[link=x]cite[/link]" in out
    assert "\x1b" not in out


def test_cli_one_line_exit_2_for_bomb(tmp_path, capsys):
    path = write(tmp_path, "bomb.yaml", BASE_YAML + "controller:\n" + alias_bomb())
    assert cli.main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("flexman: error: ") and "expands to more than" in err


@pytest.mark.parametrize("argv", [
    ["simulate", "flx_rigid_pendulum", "--controller", "{path}"],
    ["sweep", "flx_rigid_pendulum", "{path}"],
])
def test_other_yaml_inputs_pass_the_same_door(tmp_path, capsys, argv):
    """A controller file and a sweep specification are read with the model files' limits."""
    path = write(tmp_path, "spec.yaml", "parameters:\n" + alias_bomb())
    with bounded(cpu_s=5.0):
        assert cli.main([a.format(path=path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expands to more than" in err and str(path) in err
