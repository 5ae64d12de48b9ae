"""``flexman new``: a model file entered question by question, as DYNAMAN's tutorial did.

Every question shows its default in brackets (Enter takes it). An answer is put into the
model document being built and the document is passed through the loader's own checks
(:mod:`flexman.model.io`): an error that names the field just asked is shown as one line
(``! mass must be a finite number >= 0 (got -1.0)``) and the question is asked again.
Errors that only the whole link or the whole robot can show (a flexible prismatic link
with a != 0, a singular mass matrix) come when the link, or the robot, is complete: that
link's questions are then asked again with the earlier answers as defaults.

At the end the model is summarized (DH or joint table, coordinates, total mass, natural
frequencies of a flexible arm), a 3D preview PNG is written next to the model file, and on
confirmation the file is written with :func:`flexman.save` and read back with
:func:`flexman.load`. End of input (Ctrl-D, or the end of piped answers) and Ctrl-C stop
with one line on stderr and exit status 1; nothing is left behind.

Answers can be piped, one per line (an empty line takes the default); the prompts are then
printed with the answer read after them, one per line, so the output reads as a transcript.
``--defaults`` takes every default: a rigid planar two-link arm.
"""
from __future__ import annotations

import copy
import math
import re
import sys
from pathlib import Path

import numpy as np

from .common import fmt
from ..model.errors import ModelError
from ..model.parse import parse

CHOICES_JOINT = ("revolute", "prismatic")
CHOICES_SHAPES = ("clamped_free", "clamped_mass", "polynomial", "finite_elements")
YES, NO = ("y", "yes", "true"), ("n", "no", "false")
UNITS = ("deg", "degrees", "rad", "radians")
SHOWN_FREQUENCIES = 4  # per table in the summary


class Cancelled(Exception):
    """End of input or Ctrl-C: stop without writing anything."""


class Again(Exception):
    """An answer that cannot be used: the one-line reason; the question is asked again."""


class Terminal:
    """Asks questions on a terminal (``input``, with line editing), from piped lines (prompt
    and answer printed on one line each) or, with ``defaults``, answers every one itself."""

    def __init__(self, defaults: bool = False, stdin=None, stdout=None):
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.defaults = defaults
        self.tty = not defaults and self.stdin.isatty()
        if self.tty:
            try:
                import readline  # noqa: F401 - line editing and history for input()
            except ImportError:
                pass

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def ask(self, label: str, default: str) -> str:
        prompt = f"{label} [{default}]: "
        if self.defaults:
            self.say(prompt + default)
            return default
        if self.tty:
            text = input(prompt)  # EOFError (Ctrl-D) and KeyboardInterrupt go to the caller
        else:
            print(prompt, end="", file=self.stdout, flush=True)
            line = self.stdin.readline()
            if not line:
                self.say()
                raise EOFError
            text = line.rstrip("\r\n")
            self.say("".join(ch if ch.isprintable() else "?" for ch in text))  # no escape codes echoed
        return text.strip() or default


def _value(text: str):
    """A YAML scalar, list or mapping read from one answer through the model files' own safe
    parser (numbers, "90 deg", [1, 2, 3], {deg: 90}); text stays text."""
    try:
        return parse(text, "yaml")
    except ModelError as exc:
        why = re.sub(r"^invalid YAML( at line \d+, column \d+)?:\s*", "", str(exc))
        raise Again(f"cannot read {text!r}: {why}") from None


def _vector(text: str):
    """A list from "0 0 1", "0, 0, 1" or "[0, 0, 1]"; "90 deg" stays one entry."""
    if text.lstrip()[:1] in "[{":
        return _value(text)
    if "," in text:
        parts = [p.strip() for p in text.split(",")]
    else:
        parts = []
        for token in text.split():
            if token.lower() in UNITS and parts:
                parts[-1] += " " + token
            else:
                parts.append(token)
    return [_value(p) if p else None for p in parts]


def _numbers_or_one(text: str):
    """One value (``EI: 1e4``, both planes) or a list of several."""
    value = _vector(text)
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _choice(text: str, choices) -> str:
    """A choice from a unique prefix ("p" for prismatic); anything else stays as typed for the
    loader to refuse with its own list of choices."""
    hits = [c for c in choices if c.startswith(text.strip().lower())] if text.strip() else []
    return hits[0] if len(hits) == 1 else text.strip()


def _yes(text: str) -> bool:
    word = text.strip().lower()
    if word in YES:
        return True
    if word in NO:
        return False
    raise Again("answer y or n")


def _count(text: str, what: str, minimum: int = 0) -> int:
    value = _value(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() \
            or value < minimum:
        raise Again(f"{what} must be a whole number >= {minimum} (got {text.strip()!r})")
    return int(value)


def _text(value) -> str:
    """Default answer text for a number or a vector."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return " ".join(_text(v) for v in value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


_FIELD = re.compile(r"^([A-Za-z_][\w.\[\]]*): ")


def check_document(doc) -> None:
    """Every check the loader makes on a model document except the whole-robot mass-matrix
    check (which a robot still being entered may fail): field values, links, beams, the
    robot's own cross-checks. Raises a one-line ModelError naming the field."""
    from ..model.serialize import robot_from_dict

    try:
        robot_from_dict(doc, check_mass=False)
    except ModelError as exc:
        raise ModelError(" ".join(str(exc).split())) from None


def error_field(message: str) -> str:
    """The field path an error message starts with ('links[0].beam.EI'), or ''."""
    match = _FIELD.match(message)
    return match[1] if match else ""


def _covers(path: str, field: str) -> bool:
    """Is ``field`` the field ``path`` or inside it (``com[1]`` is inside ``com``)?"""
    return field == path or field.startswith(path + ".") or field.startswith(path + "[")


def reason(message: str, prefix: str = "") -> str:
    """The loader's message as the reason shown at the prompt: the path prefix of the
    question (``links[0].``) dropped, ``mass: must be`` read as ``mass must be``."""
    text = message.removeprefix(prefix) if prefix and message.startswith(prefix) else message
    return re.sub(r"^([A-Za-z_][\w.\[\]]*): must ", r"\1 must ", text)


class Guide:
    """The questions, the document they build and the answers given so far (the defaults when
    a part is asked again)."""

    def __init__(self, term: Terminal):
        self.term = term
        self.doc: dict = {}
        self.answers: dict = {}

    # one question -----------------------------------------------------------------------------
    def ask(self, key, label: str, default: str, convert=None):
        """Ask until ``convert(text)`` returns. An answer typed earlier to ``key`` is the default
        (a default taken is not remembered: asked again, it follows the answers before it)."""
        default = self.answers.get(key, default)
        while True:
            text = self.term.ask(label, default)
            try:
                value = convert(text) if convert is not None else text
            except Again as exc:
                self._again(str(exc))
                continue
            if text != default or key in self.answers:
                self.answers[key] = text
            return value

    def field(self, key, label: str, default: str, path: str, put, convert=_value, prefix: str = ""):
        """Ask for one model field: ``put(doc, value)`` places the answer; the loader's checks on
        the resulting document decide. Errors naming ``path`` are shown and the question asked
        again; others (another field's, the link's as a whole) wait for the link's end."""
        def accept(text):
            trial = copy.deepcopy(self.doc)
            put(trial, convert(text))
            try:
                check_document(trial)
            except ModelError as exc:
                if _covers(path, error_field(str(exc))):
                    raise Again(reason(str(exc), prefix)) from None
            self.doc = trial
            return trial

        self.ask(key, label, default, accept)

    def _again(self, why: str) -> None:
        if self.term.defaults:  # a default that fails its own check: a bug, not a loop
            raise RuntimeError(f"flexman new: the default answer was refused: {why}")
        self.term.say(f"  ! {why}")

    # the robot --------------------------------------------------------------------------------
    def run(self) -> None:
        t = self.term
        t.say("flexman new: a model file, question by question (Enter takes the [default]; Ctrl-C stops, "
              "nothing is written).")
        self.doc = {"links": [{}]}
        self.field("name", "robot name", "two_link", "name", lambda d, v: d.__setitem__("name", v), convert=str.strip)
        n = self.ask("n", "number of links (joints)", "2", lambda s: self._n_links(s))
        self.doc["links"] = [{} for _ in range(n)]
        self.field("dh", "DH convention (standard/modified)", "standard", "dh",
                   lambda d, v: d.__setitem__("dh", v), convert=lambda s: _choice(s, ("standard", "modified")))
        for i in range(n):
            self.link(i)
        self.gravity()
        self.payload()

    def _n_links(self, text: str) -> int:
        from ..model.limits import MAX_LINKS

        n = _count(text, "number of links", 1)
        if n > MAX_LINKS:  # the loader's own limit, said before a list of n links is built
            raise Again(f"links: {n} links; at most {MAX_LINKS} are supported (README, Limits)")
        trial = copy.deepcopy(self.doc)
        trial["links"] = [{} for _ in range(n)]
        try:
            check_document(trial)  # the loader's limit on the number of links
        except ModelError as exc:
            raise Again(reason(str(exc))) from None
        return n

    def gravity(self) -> None:
        self.field("gravity", "gravity in the base frame (m/s^2)", "0 0 -9.81", "gravity",
                   lambda d, v: d.__setitem__("gravity", v), convert=_vector)

    def payload(self) -> None:
        self.doc.pop("payload", None)
        put = lambda key: (lambda d, v: d.setdefault("payload", {}).__setitem__(key, v))
        self.field("payload.mass", "payload mass at the tip (kg, 0 for none)", "0", "payload.mass", put("mass"))
        if float(self.doc["payload"]["mass"]) == 0.0:
            self.doc.pop("payload")
            return
        self.field("payload.com", "  payload centre of mass in the last link's frame (m)", "0 0 0", "payload.com",
                   put("com"), convert=_vector)
        self.field("payload.inertia", "  payload inertia about its centre, 'Ixx Iyy Izz' (kg m^2)", "0 0 0",
                   "payload.inertia", put("inertia"), convert=_vector)

    # one link ---------------------------------------------------------------------------------
    def link(self, i: int) -> None:
        """Ask link i's questions; repeat them (earlier answers as defaults) while the complete
        link fails a check of the link or of the robot as a whole."""
        while True:
            self._link_questions(i)
            try:
                check_document(self.doc)
                return
            except ModelError as exc:
                self.term.say(f"  ! link {i + 1}: {reason(str(exc), f'links[{i}].')}")
                self.term.say(f"    answer link {i + 1} again (Enter keeps an answer)")
                if self.term.defaults:
                    raise RuntimeError(f"flexman new: the default link was refused: {exc}") from None

    def _link_questions(self, i: int) -> None:
        t, where = self.term, f"links[{i}]"
        n = len(self.doc["links"])
        self.doc["links"][i] = {}
        link = lambda d: d["links"][i]
        put = lambda key: (lambda d, v: link(d).__setitem__(key, v))
        ask = lambda key, label, default, path, convert=_value, setter=None: self.field(
            (i, key), f"  {label}", default, f"{where}.{path}", setter or put(key), convert, prefix=f"{where}.")
        t.say(f"link {i + 1} of {n}")
        if i:  # a tree: the link may hang from any earlier link or the base (model file: parent, 0-based)
            self.ask((i, "parent"), f"  parent: the link it hangs from (1 to {i}, or base)", str(i),
                     lambda s: self._parent(i, s))
        ask("joint", "joint type (revolute/prismatic)", "revolute", "joint", lambda s: _choice(s, CHOICES_JOINT))
        joint = link(self.doc)["joint"]
        placed = self.ask((i, "placement"), "  placement: DH row or URDF-style origin and axis (dh/urdf)", "dh",
                          lambda s: _pick(s, ("dh", "urdf"))) == "urdf"
        if placed:
            link(self.doc)["placement"] = {}
            pput = lambda key: (lambda d, v: link(d)["placement"].__setitem__(key, v))
            ask("xyz", "origin xyz in the previous link's frame (m)", "0 0 0" if i == 0 else "0.5 0 0",
                "placement.xyz", _vector, pput("xyz"))
            ask("rpy", "origin roll pitch yaw (rad, or e.g. '0 90 deg 0')", "0 0 0", "placement.rpy", _vector,
                pput("rpy"))
            ask("axis", "joint axis in the joint frame", "0 0 1", "placement.axis", _vector, pput("axis"))
        else:
            ask("a", "a: link length along x (m)", "0.5" if joint == "revolute" else "0", "a")
            ask("alpha", "alpha: link twist (rad, or e.g. '90 deg')", "0", "alpha")
            ask("d", "d: offset along z (m)" + (", at q = 0" if joint == "prismatic" else ""), "0", "d")
            ask("theta", "theta: joint angle offset (rad, or e.g. '90 deg')", "0", "theta")
        flexible = self.ask((i, "flexible"), "  is the link a flexible beam? (y/n)", "n", _yes)
        if flexible:
            self._beam(i, ask, placed)
        body = "tip body " if flexible else ""
        ask("mass", f"{body}mass (kg)", "0" if flexible else "1", "mass")
        mass = float(link(self.doc)["mass"])
        com, inertia = self._body_defaults(i, joint, placed, flexible, mass)
        ask("com", f"{body}centre of mass in the link frame (m)", com, "com", _vector)
        ask("inertia", f"{body}inertia about the centre of mass, 'Ixx Iyy Izz' or "
                       "'Ixx Iyy Izz Ixy Iyz Ixz' (kg m^2)", inertia, "inertia", _vector)
        unit = "rad, or e.g. '-90 deg 90 deg'" if joint == "revolute" else "m"
        ask("limits", f"joint limits 'lower upper' ({unit}; none for no limits)", "none", "limits", _limits,
            lambda d, v: link(d).__setitem__("limits", v) if v is not None else link(d).pop("limits", None))
        rate = "N m s/rad" if joint == "revolute" else "N s/m"
        ask("viscous", f"viscous joint damping ({rate})", "0", "viscous")
        ask("coulomb", "Coulomb joint friction (" + ("N m" if joint == "revolute" else "N") + ")", "0", "coulomb")

    def _parent(self, i: int, text: str) -> None:
        """Link i's parent from an answer: a link number 1..i (1-based, as the prompts count) or
        'base'; written to the document only when it is not the previous link."""
        text = text.strip().lower()
        if text == "base":
            self.doc["links"][i]["parent"] = "base"
            return
        try:
            number = int(text)
        except ValueError:
            raise Again(f"give a link number from 1 to {i} or 'base' (got {text!r})") from None
        if not 1 <= number <= i:
            raise Again(f"give a link number from 1 to {i} or 'base' (got {number})")
        if number != i:
            self.doc["links"][i]["parent"] = number - 1

    def _beam(self, i: int, ask, placed: bool) -> None:
        link = self.doc["links"][i]  # read before the questions (each answer replaces self.doc)
        length = abs(float(link.get("a", 0.0))) if not placed else 0.0
        if link["joint"] == "prismatic":
            length = max(2 * abs(float(link.get("d", 0.0))), 0.5)
        length = length if length > 0 else 0.5
        # a complete default beam first: each question then changes one field of a valid beam
        link["beam"] = {"length": length, "mass_per_length": 1.0}
        bput = lambda key: (lambda d, v: d["links"][i]["beam"].__setitem__(key, v))
        mput = lambda key: (lambda d, v: d["links"][i]["beam"].setdefault("modes", {}).__setitem__(key, v))
        ask("beam.length", "beam length (m)", _text(length), "beam.length", _value, bput("length"))
        ask("beam.mass_per_length", "beam mass per length rho A (kg/m)", "1", "beam.mass_per_length", _value,
            bput("mass_per_length"))
        ask("beam.shapes", "shape functions (clamped_free/clamped_mass/polynomial/finite_elements)", "clamped_free",
            "beam.shapes", lambda s: _choice(s, CHOICES_SHAPES), bput("shapes"))
        fem = self.doc["links"][i]["beam"]["shapes"] == "finite_elements"
        if fem:
            ask("beam.elements", "number of finite elements", "4", "beam.elements", _value, bput("elements"))
            what = "bending along local {} (modes.{}; 1 = yes, 0 = no)"
        else:
            what = "bending modes along local {} (modes.{})"
        sliding = self.doc["links"][i]["joint"] == "prismatic"  # a sliding beam bends along x and y
        ask("beam.modes.y", what.format("x" if sliding else "y", "y"), "1", "beam.modes.y", _value, mput("y"))
        ask("beam.modes.z", what.format("y" if sliding else "z", "z"), "1", "beam.modes.z", _value, mput("z"))
        if not sliding:
            ask("beam.modes.torsion", "torsion modes" if not fem else "torsion (1 = yes, 0 = no)", "0",
                "beam.modes.torsion", _value, self._torsion_put(i))
        ask("beam.EI", "bending stiffness EI (N m^2; one value for both directions, or 'EI_y EI_z')", "100", "beam.EI",
            _numbers_or_one, bput("EI"))
        if self.doc["links"][i]["beam"].get("modes", {}).get("torsion"):
            ask("beam.GJ", "torsional stiffness GJ (N m^2)", "100", "beam.GJ", _value, bput("GJ"))
            ask("beam.polar_inertia_per_length", "polar mass moment per length (kg m)", "0.001",
                "beam.polar_inertia_per_length", _value, bput("polar_inertia_per_length"))
        ask("beam.damping", "modal damping ratio", "0", "beam.damping", _value, bput("damping"))
        ask("beam.stiffening", "geometric stiffening (y/n)", "y", "beam.stiffening", _yes, bput("stiffening"))

    @staticmethod
    def _torsion_put(i: int):
        def put(d, v):
            beam = d["links"][i]["beam"]
            beam.setdefault("modes", {})["torsion"] = v
            if v:  # torsion needs GJ and a polar inertia: valid defaults until they are asked
                beam.setdefault("GJ", 100.0)
                beam.setdefault("polar_inertia_per_length", 1e-3)
            else:
                beam.pop("GJ", None)
                beam.pop("polar_inertia_per_length", None)
        return put

    def _body_defaults(self, i: int, joint: str, placed: bool, flexible: bool, mass: float):
        """A slender rod along the link (standard DH, revolute: centre at -a/2 on x, inertia
        m a^2 / 12 about y and z), else a small compact body at the frame origin."""
        link = self.doc["links"][i]
        a = float(link.get("a", 0.0)) if not placed else 0.0
        if flexible:
            return "0 0 0", "0 0 0"
        if not placed and joint == "revolute" and self.doc.get("dh", "standard") == "standard" and a:
            rod = mass * a * a / 12.0
            return _text([-a / 2, 0.0, 0.0]), _text([0.0, rod, rod])
        return "0 0 0", _text([0.01 * mass] * 3)

    # the end ----------------------------------------------------------------------------------
    def redo(self, part: str) -> None:
        """Ask one part again: a link number, 'gravity', 'payload' or 'name'."""
        if part.isdigit():
            self.link(int(part) - 1)
        elif part == "gravity":
            self.gravity()
        elif part == "payload":
            self.payload()
        elif part == "name":
            self.field("name", "robot name", "two_link", "name", lambda d, v: d.__setitem__("name", v),
                       convert=str.strip)

    def part_of(self, message: str) -> str:
        """Which part to ask again for an error of the whole robot (its field path)."""
        field = error_field(message)
        match = re.match(r"links\[(\d+)\]", field)
        if match:
            return str(int(match[1]) + 1)
        for part in ("gravity", "payload", "name"):
            if _covers(part, field):
                return part
        return "1"


def _raise(why: str):
    raise Again(why)


def _pick(text: str, choices) -> str:
    """One of ``choices`` (a unique prefix will do) for a question that is not a model field."""
    word = _choice(text, choices)
    return word if word in choices else _raise(f"answer {' or '.join(choices)}")


def _limits(text: str):
    if text.strip().lower() in ("none", "-", ""):
        return None
    return _vector(text)


def _table(headers, rows) -> list:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) if k else str(c).ljust(w) for k, (c, w) in
                                   enumerate(zip(cells, widths))).rstrip()
    return [line(headers)] + [line(r) for r in rows]


def summary(robot) -> list:
    """Text lines: the DH (and placed-joint) table, coordinates, masses, frequencies."""
    plural = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")
    out = [f"{robot.name}: {plural(robot.n_joints, 'joint')}, {plural(robot.nf, 'flexible coordinate')} (nq = {robot.nq}), "
           f"{robot.dh} DH, gravity [{', '.join(fmt(g) for g in robot.gravity)}] m/s^2"]
    rows, placed = [], []
    for i, link in enumerate(robot.links):
        beam = link.beam
        flex = str(beam.nf) if beam is not None else "0"
        masses = [fmt(link.body.mass), fmt(beam.length * beam.mass_per_length if beam is not None else 0.0)]
        if link.placement is None:
            dh = [fmt(link.a), fmt(math.degrees(link.alpha)), fmt(link.d), fmt(math.degrees(link.theta))]
        else:
            dh = ["-"] * 4
            pl = link.placement
            placed.append([str(i + 1), link.joint, " ".join(fmt(v) for v in pl.xyz),
                           " ".join(fmt(math.degrees(v)) for v in pl.rpy), " ".join(fmt(v) for v in pl.axis)])
        limits = "-" if link.limits is None else " ".join(fmt(v) for v in link.limits)
        rows.append([str(i + 1), link.joint] + dh + masses + [flex, limits])
    out.append("")
    out += _table(["#", "joint", "a [m]", "alpha [deg]", "d [m]", "theta [deg]", "body [kg]", "beam [kg]",
                   "flex coord.", "limits"], rows)
    if placed:
        out.append("")
        out += _table(["#", "joint", "origin xyz [m]", "rpy [deg]", "axis"], placed)
    out.append("")
    out.append("coordinates: " + ", ".join(robot.coordinate_names))
    payload = robot.payload.mass if robot.payload is not None else 0.0
    out.append(f"total mass: {fmt(robot.total_mass())} kg (payload {fmt(payload)} kg)")
    if robot.nf:
        from ..analysis.frequencies import natural_frequencies

        for joints, what in (("locked", "joints locked"), ("free", "joints free")):
            try:
                w = np.asarray(natural_frequencies(robot, joints=joints), dtype=float)[:SHOWN_FREQUENCIES]
                text = ", ".join(f"{v:.4g} rad/s ({v / (2 * math.pi):.4g} Hz)" for v in w)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                text = f"not available ({' '.join(str(exc).split())})"
            out.append(f"first natural frequencies at q = 0, {what}: {text}")
    return out


def _preview_path(out: Path) -> Path:
    return out.with_name(out.stem + ".preview.png")


def output_path(text: str, force: bool, option: str = "OUT") -> Path:
    """The model file to write: a model-file extension, a writable folder, not an existing
    file unless ``force``; ValueError (one line naming ``option``) otherwise."""
    from ..model.io import FORMATS
    from ..outputs import output_file

    path = Path(text.strip())
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{option}: a model file ends in {', '.join(FORMATS)} (got {path.name!r})")
    return output_file(path, option, force=force)


def _check_out(text: str, force: bool) -> Path:
    try:
        return output_path(text, force, "model file")
    except ValueError as exc:
        raise Again(" ".join(str(exc).split())) from None


def new(out=None, defaults: bool = False, force: bool = False, term: Terminal | None = None) -> int:
    """The dialogue; returns the exit status (0 written, 1 cancelled)."""
    import flexman as fm
    from ..model.serialize import robot_from_dict

    term = term or Terminal(defaults=defaults)
    out = output_path(str(out), force) if out is not None else None  # refused before any question
    preview = None
    guide = Guide(term)
    try:
        guide.run()
        if out is None:
            out = guide.ask("out", "model file (.yaml, .toml or .json)", f"{guide.doc.get('name', 'robot')}.yaml",
                            lambda s: _check_out(s, force))
        while True:
            try:
                robot = robot_from_dict(guide.doc)
            except ModelError as exc:
                part = guide.part_of(str(exc))
                term.say(f"  ! {reason(str(exc))}")
                if defaults:
                    raise RuntimeError(f"flexman new: the default robot was refused: {exc}") from None
                term.say(f"    answer {'link ' + part if part.isdigit() else part} again (Enter keeps an answer)")
                guide.redo(part)
                continue
            term.say()
            for line in summary(robot):
                term.say(line)
            from ..viz.snapshot import plot_arm

            preview = _preview_path(out)
            plot_arm(robot, path=preview)
            term.say(f"3D preview (q = 0): {preview}")
            term.say()
            guide.answers.pop("confirm", None)
            if guide.ask("confirm", f"write {out}? (y/n)", "y", _yes):
                break
            n = len(guide.doc["links"])
            parts = [str(k) for k in range(1, n + 1)] + ["gravity", "payload", "name", "quit"]
            guide.answers.pop("change", None)
            part = guide.ask("change", f"change which part: a link number (1-{n}), gravity, payload, name or quit",
                             "quit", lambda s: s.strip().lower() if s.strip().lower() in parts
                             else _raise(f"answer one of 1-{n}, gravity, payload, name, quit"))
            if part == "quit":
                raise Cancelled("nothing written")
            guide.redo(part)
    except (EOFError, KeyboardInterrupt, Cancelled) as exc:
        if preview is not None:
            preview.unlink(missing_ok=True)
        if term.tty:
            term.say()
        why = {EOFError: "end of input", KeyboardInterrupt: "interrupted"}.get(type(exc), "stopped")
        print(f"flexman new: {why}; no model file written", file=sys.stderr, flush=True)
        return 1
    path = fm.save(robot, out)
    loaded = fm.load(path)
    q0 = np.zeros(robot.nq)
    if loaded.nq != robot.nq or not np.allclose(loaded.mass_matrix(q0), robot.mass_matrix(q0), rtol=1e-12, atol=1e-12):
        path.unlink(missing_ok=True)
        raise ModelError(f"{path}: the written file does not load back as the robot entered; nothing kept")
    term.say(f"wrote {path} (loads back: nq = {loaded.nq}, M(q = 0) the same); try: flexman info {path}")
    return 0


def cmd_new(args) -> int:
    """Guided input of a model file."""
    return new(args.out, defaults=args.defaults, force=args.force)


def register(sub) -> None:
    """Add ``flexman new`` to the ``flexman`` parser."""
    help_ = "enter a model file question by question (guided input, as DYNAMAN's tutorial)"
    p = sub.add_parser("new", help=help_, description=help_)
    p.add_argument("out", nargs="?", metavar="OUT", help="model file to write (.yaml, .toml or .json; "
                   "default: asked, ROBOT_NAME.yaml)")
    p.add_argument("--defaults", action="store_true", help="take every default without asking: a two-link arm")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    p.set_defaults(func=cmd_new)
