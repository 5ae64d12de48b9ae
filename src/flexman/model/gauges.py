"""Strain-gauge positions on a robot's flexible links: the check shared by the model-file reader
(``statics.gauges``) and :func:`flexman.analysis.endpoint_statics.statics`."""
from __future__ import annotations

import numpy as np

__all__ = ["beam_length", "check_gauges"]


def beam_length(robot, link):
    """The beam length of a flexible link, or None for a link without flexible beam."""
    beam = robot.links[link].beam
    return beam.length if beam is not None and robot.links[link].is_flexible else None


def check_gauges(robot, gauges):
    """[(link, x), ...] from a mapping {link: [x, ...]}, a list with one list per link, or (one
    flexible link only) a flat list of arc lengths; each x within that link's beam."""
    if gauges is None:
        return []
    flexible = [i for i, link in enumerate(robot.links) if link.is_flexible]
    if isinstance(gauges, dict):
        items = list(gauges.items())
    else:
        gauges = list(gauges)
        if gauges and all(np.ndim(g) == 0 for g in gauges):
            if len(flexible) != 1:
                raise ValueError("gauges: with several flexible links give one list of positions per link "
                                 "(or a mapping link -> positions)")
            items = [(flexible[0], gauges)]
        else:
            items = list(enumerate(gauges))
    out = []
    for link, xs in items:
        try:
            link = int(link)
        except (TypeError, ValueError):
            raise ValueError(f"gauges: link {link!r} is not a link index") from None
        if not -robot.n_joints <= link < robot.n_joints:
            raise ValueError(f"gauges: link {link} out of range for {robot.n_joints} links")
        link %= robot.n_joints
        xs = np.atleast_1d(np.asarray(xs, dtype=float))
        if xs.size == 0:
            continue
        L = beam_length(robot, link)
        if L is None:
            raise ValueError(f"gauges: link {link} has no flexible beam to carry a strain gauge")
        bad = xs[~((xs >= 0.0) & (xs <= L))]
        if bad.size:
            raise ValueError(f"gauges: {bad[0]:g} m is outside link {link}'s beam; positions are distances "
                             f"from its root in [0, {L:g}] m")
        out.extend((link, float(x)) for x in xs)
    return out
