"""URDF import of kinematic trees, and the overlay that makes chosen links flexible (export:
:mod:`flexman.urdf_export`).

A URDF joint places its child link's frame by a fixed ``origin`` (xyz, rpy) and moves it
about or along ``axis``; each movable joint becomes one flexman link with that
:class:`~flexman.model.robot.Placement` and, on a tree, its ``parent``; joints are taken
depth-first from the root, a link's child joints sorted by name (Pinocchio's order, from urdfdom). Fixed joints are merged:
their child's inertial joins the moving link they hang from, their origin is carried into the
joints beyond, and their child link stays as a named frame (``robot.frames``). Bodies fixed to
the root link do not move and are dropped. A ``<transmission>`` that carries a
``<mechanicalReduction>`` for one joint gives that joint's link a :class:`~flexman.model.robot.Drive`
with that gear ratio (its rotor inertia, friction or spring come from an overlay's ``drive:``).

The XML is parsed with ``defusedxml`` (no entity expansion, no external references) and
files over ``MAX_BYTES`` are refused. Every problem is one :class:`ModelError` line that
names the URDF element.
"""
from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np

from ..extras import MissingExtra, require
from . import limits as size_limits
from . import visuals as visuals_
from .checks import flag_singular_mass
from .errors import FlexmanWarning, ModelError
from .floating import floating_links
from .names import MAX_NAME, printable
from .parse import plain_copy
from .rotations import matrix_rpy, rpy_matrix
from .robot import (Drive, Link, MimicRobot, Placement, RigidBody, Robot, bound_text, bounds, inertia_problem, meets_bound,
                    unit_vector)
from .serialize import check_fields, join, robot_from_dict, robot_to_dict

MAX_BYTES = 5_000_000
MOVING = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic"}
MAX_LIMIT = {"revolute": size_limits.MAX_ANGLE, "prismatic": size_limits.MAX_LENGTH}
OVERLAY_LINK_FIELDS = ("beam", "mass", "com", "inertia", "hub", "armature", "viscous", "coulomb", "limits", "drive")


# ----- small geometry helpers --------------------------------------------------------------
def _frame(xyz, rpy) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rpy_matrix(rpy)[:3, :3]
    T[:3, 3] = xyz
    return T


def _moved(body: RigidBody, T) -> np.ndarray:
    """Second moments (4x4) of a body given in frame B, expressed in frame A (T = A <- B)."""
    return T @ body.pseudo_inertia() @ T.T


# ----- parsing ------------------------------------------------------------------------------
def _parse_xml(text: str, where: str):
    import defusedxml.ElementTree as ET
    from defusedxml import DefusedXmlException

    if len(text.encode("utf-8")) > MAX_BYTES:
        raise ModelError(f"{where}: URDF larger than {MAX_BYTES // 1_000_000} MB; refusing to read it")
    try:
        root = ET.fromstring(text, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise ModelError(f"{where}: URDF uses a forbidden XML feature ({type(exc).__name__}); "
                         "remove the DOCTYPE/ENTITY declarations") from None
    except ET.ParseError as exc:
        raise ModelError(f"{where}: malformed XML ({exc})") from None
    if root.tag != "robot":
        raise ModelError(f"{where}: the root element is <{root.tag}>; a URDF starts with <robot>")
    return root


def _floats(elem, attr: str, n: int, where: str, default=None) -> np.ndarray:
    text = elem.get(attr) if elem is not None else None
    if text is None:
        if default is None:
            raise ModelError(f"{where}: attribute '{attr}' missing")
        return np.asarray(default, float)
    try:
        vals = np.array([float(v) for v in text.split()])
    except ValueError:
        raise ModelError(f"{where}: attribute {attr}=\"{text}\" must be {_count(n)}") from None
    if vals.shape != (n,) or not np.all(np.isfinite(vals)):
        raise ModelError(f"{where}: attribute {attr}=\"{text}\" must be {_count(n)}")
    return vals


def _count(n: int) -> str:
    return "a finite number" if n == 1 else f"{n} finite numbers separated by spaces"


def _origin(elem, where: str) -> np.ndarray:
    org = elem.find("origin")
    w = f"{where}/origin"
    return _frame(_floats(org, "xyz", 3, w, (0, 0, 0)), _floats(org, "rpy", 3, w, (0, 0, 0)))


def _inertial(link_elem, where: str) -> RigidBody | None:
    """The link's inertial in the link frame, or None when it has none."""
    inertial = link_elem.find("inertial")
    if inertial is None:
        return None
    w = f"{where}/inertial"
    T = _origin(inertial, w)
    mass_el = inertial.find("mass")
    if mass_el is None:
        raise ModelError(f"{w}: <mass value=...> missing")
    mass = float(_floats(mass_el, "value", 1, f"{w}/mass")[0])
    rule = bounds("body")["mass"]
    if not meets_bound(mass, rule):
        raise ModelError(f"{w}/mass: value must be {bound_text(rule)} (got {mass:g})")
    inertia_el = inertial.find("inertia")
    if inertia_el is None:
        raise ModelError(f"{w}: <inertia ixx=... iyy=... izz=... ixy=... ixz=... iyz=...> missing")
    vals = {k: float(_floats(inertia_el, k, 1, f"{w}/inertia", (0.0,))[0])
            for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    Ic = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                   [vals["ixy"], vals["iyy"], vals["iyz"]],
                   [vals["ixz"], vals["iyz"], vals["izz"]]])
    R = T[:3, :3]
    try:
        body = RigidBody(mass, T[:3, 3], R @ Ic @ R.T, strict=False)
    except ModelError as exc:
        raise ModelError(f"{w}: {exc}") from None
    problem = inertia_problem(body.inertia, "inertia")
    body.strict = problem is None
    if problem:  # Pinocchio reads such inertials as written; so do we, saying so (once per file: _say_kept)
        _KEPT.append(f"{w}: {problem}")
    return body


_KEPT: list = []  # inertials kept as written by the file being read


def _say_kept(where: str) -> None:
    """One notice for the file's implausible inertials (all of them named when there are several)."""
    import warnings

    kept, _KEPT[:] = list(_KEPT), []
    if len(kept) == 1:
        text = f"{kept[0]}; kept as written (a model file written from it is refused, unless fixed joints merge it into a consistent body)"
    elif kept:
        names = ", ".join(k.split("<link name=")[-1].split(">")[0].strip('"') for k in kept)
        text = (f"{where}: {len(kept)} inertials are not physically consistent (links {names}: negative or "
                "triangle-violating principal moments, usually round-off); kept as written (a model file written "
                "from it is refused, unless fixed joints merge them into consistent bodies)")
    else:
        return
    warnings.warn(text, FlexmanWarning, stacklevel=4)


def urdf_identifier(name: str) -> str:
    """A flexman identifier for a URDF name: characters other than ASCII letters, digits and _
    become _, and a name longer than a model file allows is cut with a short hash of the whole
    name (distinct names stay distinct), so the name also passes a model file's checks when saved."""
    out = re.sub(r"\W", "_", name, flags=re.ASCII)
    out = out if re.match(r"[A-Za-z_]", out) else f"_{out}"
    if len(out) > MAX_NAME:
        out = f"{out[:MAX_NAME - 9]}_{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return out


def _unique_identifiers(names, where: str, what: str = "links") -> None:
    """Refuse URDF names that become the same identifier (``a-b`` and ``a_b``): they would share
    an overlay entry and could not be told apart in a saved model."""
    seen = {}
    for name in names:
        ident = urdf_identifier(name)
        if ident in seen and seen[ident] != name:
            raise ModelError(f"{where}: the {what} \"{printable(seen[ident], 60)}\" and \"{printable(name, 60)}\" "
                             f"both become the flexman name '{ident}' (characters other than letters, digits "
                             "and _ become _); rename one of them in the URDF")
        seen[ident] = name


def _tree(root, where: str):
    """(root link name, [joint elements depth-first], link elements by name) of a URDF tree: the
    joints visited depth-first from the root link, each link's child joints by name (the order
    Pinocchio's reader, through urdfdom, numbers them in). A link with two parent joints (a closed loop),
    several root links, or a joint naming a missing link: one clear error naming the element."""
    links = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise ModelError(f"{where}: a <link> without a name")
        if name in links:
            raise ModelError(f"{where}: <link name=\"{name}\"> appears twice")
        links[name] = el
    if not links:
        raise ModelError(f"{where}: no <link> elements")
    by_parent, parent_of = {}, {}
    for j in root.findall("joint"):
        jname = j.get("name", "?")
        jw = f"<joint name=\"{jname}\">"
        parent, child = j.find("parent"), j.find("child")
        if parent is None or child is None or not parent.get("link") or not child.get("link"):
            raise ModelError(f"{where}: {jw} needs <parent link=...> and <child link=...>")
        p, c = parent.get("link"), child.get("link")
        for name in (p, c):
            if name not in links:
                raise ModelError(f"{where}: {jw} names link '{name}', which has no <link> element")
        if c in parent_of:
            raise ModelError(f"{where}: {jw}: link '{c}' is already the child of joint "
                             f"'{parent_of[c].get('name')}' (a closed loop); a URDF describes a tree")
        parent_of[c] = j
        by_parent.setdefault(p, []).append(j)
    roots = [n for n in links if n not in parent_of]
    if len(roots) != 1:
        what = "no root link (a closed loop)" if not roots else f"several root links ({', '.join(roots)})"
        raise ModelError(f"{where}: {what}; a URDF describes one tree with a single root link")
    # urdfdom (which Pinocchio and ROS read URDFs with) lists a link's child joints sorted by joint
    # name; visiting them so gives Pinocchio's coordinates (a serial chain: the file's order)
    children = lambda link: sorted(by_parent.get(link, []), key=lambda j: j.get("name", ""))
    order, stack = [], list(reversed(children(roots[0])))
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(children(j.find("child").get("link"))))
    if len(order) < len(parent_of):  # joints on a cycle that no path from the root reaches
        lost = next(j for j in parent_of.values() if j not in order)
        raise ModelError(f"{where}: <joint name=\"{lost.get('name', '?')}\"> lies on a closed loop of links "
                         "not reached from the root; a URDF describes a tree")
    return roots[0], order, links


_MESH_NOTICES: set = set()


def _mesh_notice(visuals, problems, where: str) -> None:
    """Meshes are not needed for the dynamics, only for the report's picture: one short line on
    stderr when some will not be drawn (a mesh file not found, or trimesh/pycollada missing),
    once per file and process (a notice, not a Python warning with a source line); none when all
    will be drawn. ``FLEXMAN_QUIET=1`` silences it."""
    import os
    import sys

    from ..extras import available

    if where in _MESH_NOTICES or os.environ.get("FLEXMAN_QUIET") == "1":
        return
    why = []
    if problems:
        why.append(f"{len(problems)} visual(s) not found or not readable ({problems[0].rstrip('.')})")
    if visuals and not available("trimesh"):
        why.append(f"{len(visuals)} visual(s) not drawn without trimesh (pip install 'flexman[mesh]')")
    elif any(v.path.lower().endswith(".dae") for v in visuals) and not available("collada"):
        why.append("the .dae meshes not drawn without pycollada (pip install 'flexman[mesh]')")
    if why:
        _MESH_NOTICES.add(where)
        print(printable(f"flexman: {where}: {'; '.join(why)}; the report draws those links as lines", 600),
              file=sys.stderr)


def robot_from_urdf(text: str, where: str = "URDF", check: bool = True, floating: bool = False,
                    base_dir=None) -> Robot:
    """A rigid :class:`Robot` from URDF text: a tree of revolute, continuous and prismatic joints;
    fixed joints merged into the moving body before them (their child's inertial added, their
    child link kept as a named frame, ``robot.frames``). The root link is the fixed base: its
    inertial and those fixed to it do not move and are dropped. ``floating=True``: the root link
    is a free body instead, six coordinates before the joints' (:mod:`.floating`), carrying its
    inertial and those fixed to it.

    The robot gets the whole-model checks a model file gets
    (:func:`~flexman.model.checks.check_model`); ``check=False`` leaves them to the caller (an
    overlay still to be applied may give a massless link its mass). Names quoted in a message are
    escaped (a control character in a URDF name never reaches a terminal). The links' visual
    meshes and primitives become ``robot.visuals`` (:mod:`.visuals`; mesh files found from
    ``base_dir``, the URDF's folder, see :mod:`.packages`) for the report to draw."""
    _KEPT.clear()
    try:
        robot = _robot_from_urdf(text, where, floating, base_dir)
    except ModelError as exc:
        _KEPT.clear()
        raise ModelError(printable(str(exc), 2000)) from None
    _say_kept(where)
    return _checked(robot, where) if check else robot


def _robot_from_urdf(text: str, where: str, floating: bool = False, base_dir=None) -> Robot:
    root = _parse_xml(text, where)
    root_name, joints, links = _tree(root, where)
    _unique_identifiers(links, where)
    _unique_identifiers([j.get("name", "?") for j in joints if j.get("type") in MOVING], where, "joints")
    out = []  # (name, joint, placement, second moments, limits, damping, friction, parent)
    attached = {root_name: (-1, np.eye(4))}  # URDF link -> (flexman link it rides on, -1 base; transform)
    frames = {}
    mimics = {}  # joint name -> (its <mimic> element, where)
    moving = {}  # joint name -> flexman link name, for the movable joints
    if floating:  # the root link flies: six links, the last carrying its inertial
        body = _inertial(links[root_name], f"{where}: <link name=\"{root_name}\">")
        for k, link in enumerate(floating_links(RigidBody(), urdf_identifier(root_name), named=True)):
            out.append({"name": link.name, "joint_name": link.joint_name, "joint": link.joint, "placement": link.placement, "limits": None,
                        "J": body.pseudo_inertia() if body is not None and k == 5 else np.zeros((4, 4)),
                        "viscous": 0.0, "coulomb": 0.0, "parent": k - 1, "strict": body is None or body.strict,
                        "where": f"{where}: <link name=\"{root_name}\">"})
        attached[root_name] = (5, np.eye(4))
    for j in joints:
        jname = j.get("name", "?")
        jw = f"<joint name=\"{jname}\">"
        kind = j.get("type")
        child = j.find("child").get("link")
        lw = f"<link name=\"{child}\">"
        if j.find("mimic") is not None and kind != "fixed":  # (a fixed joint has no coordinate: urdfdom ignores its mimic)
            mimics[jname] = (j.find("mimic"), f"{where}: {jw}/mimic")
        on, carry = attached[j.find("parent").get("link")]
        origin = carry @ _origin(j, f"{where}: {jw}")
        body = _inertial(links[child], f"{where}: {lw}")
        if kind == "fixed":
            attached[child] = (on, origin)
            frames[urdf_identifier(child)] = (on, origin)
            if on >= 0 and body is not None:
                out[on]["J"] += _moved(body, origin)
                out[on]["strict"] &= body.strict
            continue
        if kind == "floating":
            raise ModelError(f"{where}: {jw}: a floating joint is read as a free root link: remove the joint "
                             f"and load with floating=True (the root link '{child}' then flies)")
        if kind not in MOVING:
            raise ModelError(f"{where}: {jw}: joint type '{kind}' is not supported; flexman reads "
                             "revolute, continuous, prismatic and fixed joints")
        axis = _floats(j.find("axis"), "xyz", 3, f"{where}: {jw}/axis", (1, 0, 0))
        if np.abs(axis).max() < 1e-9:
            raise ModelError(f"{where}: {jw}/axis: xyz must be a non-zero vector")
        limits = None
        lim = j.find("limit")
        if kind != "continuous" and lim is not None and lim.get("lower") is not None:
            lo = float(_floats(lim, "lower", 1, f"{where}: {jw}/limit")[0])
            hi = float(_floats(lim, "upper", 1, f"{where}: {jw}/limit", (0.0,))[0])
            if lo > hi:  # inverted, as a model file's [3, -3] is refused (lower = upper: URDF's "no limits")
                raise ModelError(f"{where}: {jw}/limit: lower {lo:g} is above upper {hi:g}; swap them, or write "
                                 "lower = upper (or leave the limit out) for a joint without limits")
            # no range (lo == hi) or one beyond any angle or length (URDFs write 1e16 for none): no limits
            limits = (lo, hi) if lo < hi and max(abs(lo), abs(hi)) <= MAX_LIMIT[MOVING[kind]] else None
        dyn = j.find("dynamics")
        damping = float(_floats(dyn, "damping", 1, f"{where}: {jw}/dynamics", (0.0,))[0])
        friction = float(_floats(dyn, "friction", 1, f"{where}: {jw}/dynamics", (0.0,))[0])
        rules = bounds("link")  # URDF damping and friction are flexman's viscous and coulomb
        if not (meets_bound(damping, rules["viscous"]) and meets_bound(friction, rules["coulomb"])):
            raise ModelError(f"{where}: {jw}/dynamics: damping and friction must be {bound_text(rules['viscous'])}")
        try:  # the origin with the fixed joints before it: magnitudes within the model limits
            placement = Placement(origin[:3, 3], matrix_rpy(origin[:3, :3]), axis)
        except ModelError as exc:
            raise ModelError(f"{where}: {jw}: {exc}") from None
        attached[child] = (len(out), np.eye(4))
        moving[jname] = urdf_identifier(child)
        out.append({"name": urdf_identifier(child), "joint_name": urdf_identifier(jname), "joint": MOVING[kind], "placement": placement,
                    "J": body.pseudo_inertia() if body is not None else np.zeros((4, 4)), "limits": limits,
                    "viscous": damping, "coulomb": friction, "parent": on, "where": f"{where}: {lw}",
                    "strict": body is None or body.strict})
    if not out:
        raise ModelError(f"{where}: no revolute, continuous or prismatic joint; nothing moves")
    carried = [d["J"][3, 3] for d in out]
    for i in range(len(out) - 1, -1, -1):  # the mass each joint moves: its link's and its subtree's
        if out[i]["parent"] >= 0:
            carried[out[i]["parent"]] += carried[i]
    # (a joint whose link and subtree have no mass leaves M singular: the robot loads, flagged by
    # _checked, for its kinematics and inverse dynamics; forward dynamics refuse it)
    gears = _transmissions(root, joints, moving, where)
    robot_links = [
        Link(joint=d["joint"], placement=d["placement"], body=RigidBody.from_second_moments(d["J"], d["strict"]),
             limits=d["limits"], viscous=d["viscous"], coulomb=d["coulomb"], name=d["name"], joint_name=d["joint_name"],
             parent=None if d["parent"] == i - 1 else d["parent"], drive=gears.get(d["name"]))
        for i, d in enumerate(out)
    ]
    name = urdf_identifier(root.get("name") or "robot")
    if mimics:
        robot = MimicRobot(links=robot_links, name=name, frames=frames, mimic=_mimic_map(mimics, moving, joints))
    else:
        robot = Robot(links=robot_links, name=name, frames=frames)
    robot.controller, robot.description, robot.source = None, "", ""
    robot.visuals, problems = [], []
    colours = visuals_.named_colours(root)
    for link_name, (on, carry) in attached.items():
        found, missing = visuals_.link_visuals(links[link_name], on, carry, lambda e: _origin(e, where),
                                               base_dir, colours)
        robot.visuals += found
        problems += missing
    _mesh_notice(robot.visuals, problems, where)
    return robot


def _effort(joint, where: str):
    """A joint's ``<limit effort>`` (N m at the joint), or None where it gives no usable limit
    (missing, zero, or 1e6 N m and more: what URDFs write for none)."""
    lim = joint.find("limit")
    effort = float(_floats(lim, "effort", 1, f"{where}: joint '{joint.get('name')}'/limit", (0.0,))[0])
    return effort if 0.0 < effort < 1e6 else None


def _transmissions(root, joints, moving: dict, where: str) -> dict:
    """{link name: Drive(gear_ratio)} from the ``<transmission>`` elements that carry one
    ``<mechanicalReduction>`` for one joint (ROS's SimpleTransmission, old and new syntax); the
    joint's ``<limit effort>`` (a joint-side torque) becomes the drive's motor-side
    ``torque_limit = effort / |ratio|``, so the joint's limit is the URDF's effort.
    Those that cannot be read so (coupling several joints, naming a fixed or missing joint, a
    reduction that is not a non-zero number) are named in one line on stderr and left out; one
    without a reduction carries nothing."""
    import sys

    kinds = {j.get("name"): j.get("type") for j in joints}
    elements = {j.get("name"): j for j in joints}
    out, skipped = {}, []
    for t in root.findall("transmission"):
        label = t.get("name", "?")
        reductions = list(t.iter("mechanicalReduction"))
        names = [j.get("name") for j in t.findall("joint")]
        if not reductions:
            continue
        if len(names) != 1 or len(reductions) != 1:
            skipped.append(f"{label} (couples {len(names)} joints)")
            continue
        name = names[0]
        if name not in moving:  # a missing or fixed joint (a robot's fingers fixed in a reduced model)
            skipped.append(f"{label} ({'no joint' if name not in kinds else 'a ' + str(kinds[name]) + ' joint'} "
                           f"'{name}')")
            continue
        text = (reductions[0].text or "").strip()
        try:
            ratio = float(text)
            drive = Drive(gear_ratio=ratio)
        except (ValueError, ModelError):
            skipped.append(f"{label} (reduction '{text[:20]}')")
            continue
        effort = _effort(elements[name], where)
        out[moving[name]] = drive if effort is None else Drive(gear_ratio=ratio, torque_limit=effort / abs(ratio))
    if skipped:  # real descriptions carry such transmissions: one line, and the rest of the file reads
        shown = ", ".join(skipped[:4]) + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else "")
        print(f"flexman: {where}: {len(skipped)} transmission(s) not read as gear ratios: {shown}; give those "
              "joints' drives in an overlay", file=sys.stderr)
    return out


def _mimic_map(mimics: dict, moving: dict, joints) -> dict:
    """{following link: (followed link, multiplier, offset)} from the <mimic> elements, with one
    line naming the joint for a mimic of a missing, fixed or mimic joint, or of itself."""
    names = {j.get("name", "?") for j in joints}
    out = {}
    for jname, (elem, where) in mimics.items():
        source = elem.get("joint")
        if source is None:
            raise ModelError(f"{where}: attribute 'joint' missing (the joint it follows)")
        if source == jname:
            raise ModelError(f"{where}: joint=\"{printable(source, 80)}\": a joint cannot follow itself")
        if source not in names:
            raise ModelError(f"{where}: joint=\"{printable(source, 80)}\": there is no joint of that name")
        if source in mimics:
            raise ModelError(f"{where}: joint=\"{printable(source, 80)}\" is a mimic joint itself; follow the joint "
                             "it follows instead")
        if source not in moving:
            raise ModelError(f"{where}: joint=\"{printable(source, 80)}\" is not a revolute, continuous or prismatic "
                             "joint (nothing to follow)")
        multiplier = float(_floats(elem, "multiplier", 1, where, (1.0,))[0])
        offset = float(_floats(elem, "offset", 1, where, (0.0,))[0])
        out[moving[jname]] = (moving[source], multiplier, offset)
    return out


def _checked(robot: Robot, where: str) -> Robot:
    """The whole-model checks, except that a singular or ill-conditioned mass matrix (a chain of
    links that moves no mass, as real descriptions have: a finger without inertials) loads: the
    robot is flagged (``robot.singular_mass``, the sentence that forward dynamics and simulation
    refuse it with) and one line says so on stderr."""
    problem = flag_singular_mass(robot, where)  # (check_model's check, with this one exception)
    if problem:
        import sys

        print(f"flexman: warning: {problem}", file=sys.stderr)
    return robot


def read_urdf(path, check: bool = True, floating: bool = False) -> Robot:
    """A rigid robot from a URDF file (``check``: see :func:`robot_from_urdf`)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ModelError(f"{path}: URDF larger than {MAX_BYTES // 1_000_000} MB; refusing to read it")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read the file ({exc})") from None
    return robot_from_urdf(text, str(path), check, floating, base_dir=path.parent)


def read_xacro(path, args=None, check: bool = True, floating: bool = False) -> Robot:
    """A rigid robot from a xacro file (``arm.urdf.xacro``), expanded by the ``xacro`` package with
    ``args`` ({name: value}, the file's ``<xacro:arg>`` values) and read as a URDF. xacro evaluates
    the file's ``${...}`` expressions (in its own restricted namespace): load files you trust.
    An error in the file is one line naming it."""
    path = Path(path)
    if args is not None and not (isinstance(args, dict) and all(isinstance(k, str) for k in args)):
        raise ModelError(f"{path}: args: expected a mapping {{name: value}} of xacro arguments (got {type(args).__name__})")
    try:
        xacro = require("xacro", f"{path}: reading xacro files")
    except MissingExtra as exc:
        raise ModelError(str(exc)) from None
    import contextlib
    import io

    mappings = {k: str(v) for k, v in (args or {}).items()}
    noise = io.StringIO()
    expand, calls = xacro.handle_macro_call, [0]

    def counted(node, macros, symbols):  # a macro bomb (each macro calling the next twice) stops here
        calls[0] += 1
        if calls[0] > size_limits.MAX_XACRO_CALLS:
            raise _XacroTooLarge(f"{path}: the expansion makes more than {size_limits.MAX_XACRO_CALLS:,} macro calls "
                                 "(README, Limits); a robot needs tens to hundreds - is a macro calling itself?")
        return expand(node, macros, symbols)
    evaluate = xacro.safe_eval
    try:
        xacro.handle_macro_call = counted  # xacro looks the function up in its module at each call
        xacro.safe_eval = lambda expr, globals, locals=None: _bounded_eval(xacro, path, expr, globals)
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise):
            text = xacro.process_file(str(path), mappings=mappings).toxml()
    except _XacroTooLarge as exc:
        raise ModelError(str(exc)) from None
    except Exception as exc:  # xacro raises its own, XML and name errors, and exits on some
        inner = exc
        while inner is not None and not isinstance(inner, _XacroTooLarge):  # xacro wraps what it evaluated
            inner = getattr(inner, "exc", None) or inner.__cause__ or inner.__context__
        if inner is not None:
            raise ModelError(str(inner)) from None
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ModelError(f"{path}: xacro could not expand the file: {why}") from None
    except SystemExit:
        why = " ".join(noise.getvalue().split())[:300] or "xacro stopped"
        raise ModelError(f"{path}: xacro could not expand the file: {why}") from None
    finally:
        xacro.handle_macro_call, xacro.safe_eval = expand, evaluate
    if len(text) > size_limits.MAX_URDF_BYTES:
        raise ModelError(f"{path}: the expansion is {len(text) / 1e6:.3g} MB of URDF; the limit is "
                         f"{size_limits.MAX_URDF_BYTES / 1e6:g} MB (README, Limits)")
    return robot_from_urdf(text, str(path), check, floating, base_dir=path.parent)


class _XacroTooLarge(Exception):
    """Raised inside xacro's expansion when it makes too many macro calls or too large a value."""


def _bounded_eval(xacro, path, expr, symbols):
    """xacro's ``safe_eval`` with every power, product and shift checked before it is computed, so
    that one expression (``${10**10**10}``, ``${'x' * 10**10}``) cannot hang or exhaust memory:
    the expression's syntax tree routes them through :func:`_bounded_operation`."""
    import ast

    tree = ast.parse(expr.strip(), "<expression>", "eval")
    names = [node.id for node in ast.walk(tree) if isinstance(node, ast.Name)]
    names += [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)]
    if any(n.startswith("__") for n in names):  # xacro's own rule
        raise xacro.XacroException("Use of invalid name(s): ", ", ".join(n for n in names if n.startswith("__")))

    class Guard(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if not isinstance(node.op, (ast.Pow, ast.Mult, ast.LShift)):
                return node
            call = ast.Call(func=ast.Name("flexman_bounded_operation", ast.Load()),
                            args=[ast.Constant(type(node.op).__name__), node.left, node.right], keywords=[])
            return ast.copy_location(call, node)

    code = compile(ast.fix_missing_locations(Guard().visit(tree)), "<expression>", "eval")
    symbols.update(__builtins__={})  # as xacro: no built-ins

    class Names:  # xacro's table (its lazy properties evaluated on lookup), and the guard
        def __getitem__(self, name):
            if name == "flexman_bounded_operation":
                return lambda op, a, b: _bounded_operation(path, op, a, b)
            return symbols[name]

    return eval(code, symbols, Names())


def _bounded_operation(path, op, a, b):
    """``a ** b``, ``a * b`` or ``a << b``, refused when the result would exceed MAX_XACRO_VALUE
    items (a text or list) or digits (an integer)."""
    import operator

    limit = size_limits.MAX_XACRO_VALUE
    ints = isinstance(a, int) and isinstance(b, int)
    if op == "Pow" and ints and b > 0 and abs(a) > 1 and b * math.log10(abs(a)) > limit:
        too_large = True
    elif op == "LShift" and ints and b * math.log10(2) > limit:
        too_large = True
    elif op == "Mult" and ints and (a.bit_length() + b.bit_length()) * math.log10(2) > limit:
        too_large = True
    elif op == "Mult" and isinstance(a, (str, list, tuple)) != isinstance(b, (str, list, tuple)):
        seq, n = (a, b) if isinstance(a, (str, list, tuple)) else (b, a)
        too_large = isinstance(n, int) and len(seq) * max(n, 0) > limit
    else:
        too_large = False
    if too_large:
        raise _XacroTooLarge(f"{path}: an expression's value would exceed {limit:,} items or digits (README, Limits); "
                             "a robot's expressions compute numbers and short names")
    return {"Pow": operator.pow, "Mult": operator.mul, "LShift": operator.lshift}[op](a, b)


# ----- overlay: chosen links become beams ---------------------------------------------------------
def apply_overlay(robot: Robot, overlay: dict, where: str = "overlay") -> Robot:
    """The robot with an overlay applied: top-level name/description/source/gravity/payload/
    controller, and ``links: {link_name: {beam: ..., mass: ..., ...}}`` per link."""
    check_fields(overlay, "", ("urdf", "name", "description", "source", "gravity", "payload",
                                "controller", "links", "end_effector"), "overlay")
    overlay = plain_copy(overlay)  # every value checked as a model file's (an integer of 400 digits included)
    data = robot_to_dict(robot)  # (mimic joints and a floating base included: they read back)
    for key in ("name", "description", "source", "gravity", "payload", "controller", "end_effector"):
        if key in overlay:
            data[key] = overlay[key]
    per_link = overlay.get("links", {}) or {}
    if not isinstance(per_link, dict):
        raise ModelError("links: an overlay's links is a mapping {link_name: {beam: ..., ...}}")
    names = [item.get("name", "") for item in data["links"]]
    joints = {item["joint_name"]: item.get("name", "") for item in data["links"] if item.get("joint_name")}
    turns = {}  # link index -> rotation of its frame (beam.axis)
    for name, fields in per_link.items():
        lw = join("links", str(name))
        name = joints.get(name, name) if name not in names else name  # a joint's name: the link it moves
        if name not in names:
            raise ModelError(f"{lw}: no moving link or joint of that name; links: {', '.join(names)}"
                             + (f"; joints: {', '.join(joints)}" if joints else ""))
        check_fields(fields, lw, OVERLAY_LINK_FIELDS)
        fields = dict(fields)
        item = data["links"][names.index(name)]
        if isinstance(fields.get("drive"), dict) and "drive" in item:  # (a URDF transmission's gear ratio kept)
            fields["drive"] = {**item["drive"], **fields["drive"]}
        beam = fields.get("beam")
        if isinstance(beam, dict) and "axis" in beam:
            beam = dict(beam)
            turns[name] = _beam_turn(beam.pop("axis"), join(join(lw, "beam"), "axis"))
            fields["beam"] = beam
        data["links"][names.index(name)].update(fields)
    out = robot_from_dict(data, check_mass=False)  # the whole model is checked once it is turned
    out.visuals = visuals_.renumbered(getattr(robot, "visuals", []), [link.name for link in robot.links],
                                      [link.name for link in out.links])
    for name, R in turns.items():  # (by name: a floating base is one item in data, six links in out)
        _turn_link(out, [link.name for link in out.links].index(name), R, join(join("links", str(name)), "beam.axis"))
    return _checked(out, where)


def _beam_turn(axis, where: str) -> np.ndarray | None:
    """The rotation R (3x3) taking x onto the overlay's beam ``axis`` (None for x itself): the
    smallest rotation, and for -x half a turn about z.

    Written as a turn by the angle atan2(|x cross a|, a_x) about the unit vector along x cross a,
    which is exact for every direction: the classic I + [v]x + [v]x^2 / (1 + a_x) divides by a
    number that vanishes near -x and loses every digit there (a "rotation" off by 1 %)."""
    bad = f"{where}: must be 3 numbers, a non-zero direction in the link frame such as [0, 0, -1] (got {axis!r:.80})"
    if not isinstance(axis, (list, tuple)) or len(axis) != 3 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in axis):
        raise ModelError(bad)
    a = np.array(axis, float)
    if not np.all(np.isfinite(a)):
        raise ModelError(bad)
    try:
        a = unit_vector(a, where)
    except ModelError:
        raise ModelError(bad) from None
    if np.array_equal(a, [1.0, 0.0, 0.0]):
        return None
    v = np.array([0.0, -a[2], a[1]])  # x cross a
    s = float(np.hypot(a[1], a[2]))
    if s == 0.0:  # exactly -x: every axis normal to x is a smallest turn; take z
        return np.diag([-1.0, -1.0, 1.0])
    k = v / s
    angle = np.arctan2(s, a[0])
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def _turn_body(body: RigidBody | None, R) -> RigidBody | None:
    if body is None:
        return None
    return RigidBody(body.mass, R.T @ body.com, R.T @ body.inertia @ R)


def _turn_link(robot: Robot, i: int, R, where: str) -> None:
    """Re-express link i in the frame F R (a change of frame, the dynamics unchanged): its
    placement, body and hub, the next link's placement (or the payload at the tip)."""
    if R is None:
        return
    link = robot.links[i]
    if link.placement is None or link.joint != "revolute":
        raise ModelError(f"{where}: only for a revolute link with a URDF placement")
    pl = link.placement
    link.placement = Placement(pl.xyz, matrix_rpy(rpy_matrix(pl.rpy)[:3, :3] @ R), R.T @ pl.axis)
    link.body, link.hub = _turn_body(link.body, R), _turn_body(link.hub, R)
    for nxt in (robot.links[c] for c, p in enumerate(robot.parents) if p == i):  # its children, on a tree
        if nxt.placement is None:
            raise ModelError(f"{where}: the next link needs a URDF placement")
        pn = nxt.placement
        nxt.placement = Placement(R.T @ pn.xyz, matrix_rpy(R.T @ rpy_matrix(pn.rpy)[:3, :3]), pn.axis)
    for name, (j, T) in list(robot.frames.items()):  # the named frames fixed to it
        if j == i:
            turned = np.eye(4)
            turned[:3, :3] = R.T
            robot.frames[name] = (j, turned @ T)
    turned = np.eye(4)
    turned[:3, :3] = R.T
    robot.visuals = visuals_.turned(getattr(robot, "visuals", []), i, turned)
    if i == len(robot.links) - 1 and robot.payload is not None:
        robot.payload = _turn_body(robot.payload, R)
