"""The topology of a robot's links: a kinematic tree rooted at the base.

Every link has a parent: another link (given by name or by its index in the list as written)
or the base. ``Link.parent = None`` means the previous link (the base for the first), so a
serial arm needs no ``parent`` at all. A robot keeps its links in depth-first order, children in
the order they were written (Pinocchio's order): every parent comes before its children, the
links of one branch are contiguous, and a serial arm keeps its order and its coordinates.

After :func:`depth_first` a link's ``parent`` is canonical: None where the parent is the link
just before it (or the base for the first link), otherwise the index of the parent in the new
order, with :data:`BASE` (-1) for the base.
"""
from __future__ import annotations

import numbers

from .errors import ModelError

BASE = -1


def _describe(links, i) -> str:
    name = links[i].name
    return f"links[{i}] ({name})" if name else f"links[{i}]"


FLOATING_SUFFIXES = ("x", "y", "z", "yaw", "pitch")  # the names model.floating gives a floating link's first five


def check_names(links, frame_refs=()) -> None:
    """Refuse link names a reference could not tell apart: two links of one name (a link named
    ``bus_x`` beside the coordinate links a floating link ``bus`` generates), and a link named
    ``base`` where a parent or a frame (``frame_refs``: the links frames are fixed to) says
    'base'. ModelError in one line naming the links and the fix."""
    first = {}
    for i, link in enumerate(links):
        name = link.name
        if not name:
            continue
        if name in first:
            stem, _, suffix = name.rpartition("_")
            why = (f" (a floating link {stem!r} names its coordinate links {stem}_x ... {stem}_pitch)"
                   if suffix in FLOATING_SUFFIXES and stem in first else "")
            raise ModelError(f"links: two links are named {name!r}{why}; give every link its own name")
        first[name] = i
    if "base" in first:
        says_base = [f"link {link.name!r}" if link.name else f"links[{i}]" for i, link in enumerate(links)
                     if isinstance(link.parent, str) and link.parent == "base"]
        says_base += [f"frames.{n}" for n, ref in frame_refs if isinstance(ref, str) and ref == "base"]
        if says_base:
            raise ModelError(f"{says_base[0]}: its parent 'base' is ambiguous, a link is named 'base' too; rename "
                             "that link ('base' is the robot's base)")


def resolve(links) -> list:
    """The parent index (BASE for the base) of each link of ``links`` as written: names, indices,
    'base' and None (the previous link) resolved (names are unique: :func:`check_names`).
    ModelError naming the link otherwise."""
    by_name = {}
    for i, link in enumerate(links):
        if link.name:
            by_name.setdefault(link.name, []).append(i)
    out = []
    for i, link in enumerate(links):
        ref = link.parent
        if ref is None:
            out.append(i - 1)
        elif isinstance(ref, str) and ref == "base":
            out.append(BASE)
        elif isinstance(ref, str):
            if ref not in by_name:
                raise ModelError(f"links[{i}].parent: no link is named '{ref}'; give the name of another link, "
                                 "its index or 'base'")
            out.append(by_name[ref][0])
        elif isinstance(ref, numbers.Integral) and not isinstance(ref, bool):
            j = int(ref)
            if j == BASE:
                out.append(BASE)
            elif 0 <= j < len(links):
                out.append(j)
            else:
                raise ModelError(f"links[{i}].parent: index {j} is not a link (0 to {len(links) - 1}, "
                                 "or -1 / 'base' for the base)")
        else:
            raise ModelError(f"links[{i}].parent: expected a link name, a link index or 'base' "
                             f"(got {type(ref).__name__})")
        if out[-1] == i:
            raise ModelError(f"{_describe(links, i)}.parent: a link cannot be its own parent")
    return out


def depth_first(links, parents) -> tuple:
    """(order, parents in the new order): the links visited depth-first from the base, children
    in the order written. A link never reached from the base lies on a closed loop: ModelError
    naming it."""
    children = {BASE: []}
    for i, p in enumerate(parents):
        children.setdefault(p, []).append(i)
    order = []
    stack = list(reversed(children[BASE]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children.get(i, [])))
    if len(order) < len(links):
        left = sorted(set(range(len(links))) - set(order))
        chain, i = [], left[0]
        while i not in chain:  # follow the parents round the loop for the message
            chain.append(i)
            i = parents[i]
        loop = " -> ".join(_describe(links, j) for j in chain + [i])
        raise ModelError(f"{_describe(links, left[0])}.parent: the parents form a closed loop ({loop}); "
                         "a robot is a tree: one link of the loop must hang from another link or the base")
    new_index = {old: new for new, old in enumerate(order)}
    new_parents = [BASE if parents[old] == BASE else new_index[parents[old]] for old in order]
    return order, new_parents


def canonical(parents) -> list:
    """Link.parent values for parents in depth-first order: None for the previous link."""
    return [None if p == i - 1 else p for i, p in enumerate(parents)]


def parent_indices(links) -> tuple:
    """Parent index of each link of a robot (links already in depth-first order)."""
    return tuple(i - 1 if link.parent is None else int(link.parent) for i, link in enumerate(links))


def children_of(parents) -> list:
    """For each link, the indices of its children, in order."""
    out = [[] for _ in parents]
    for i, p in enumerate(parents):
        if p != BASE:
            out[p].append(i)
    return out


def subtree_end(parents, i) -> int:
    """One past the last index of link i's subtree: its descendants are i+1 .. end-1 (depth-first
    order keeps a subtree contiguous, and the first link after it hangs from a link before i)."""
    end = i + 1
    while end < len(parents) and parents[end] >= i:
        end += 1
    return end
