"""A piece whose walls cross into another of its colour and size, which explains far more of the depth, is dropped.

Why: two pyramids cannot share their space, yet every stage that adds a piece (a second box
the detector put on one piece, a tower or pair split, a blob no box held) can fit one across a
piece already there. `pose.drop_duplicates` catches only a second fit in the same place (same
size, origins 3 mm apart, axes within 30 degrees); the rest survive, tilted or shifted through
the true one. On the five tuning sets (300 tables) 70 perceived pieces matched no true piece;
35 of those crossed (shells more than 2 mm into) a perceived piece of their own colour, and 21
of the 35 also had that piece's size and under half its depth points.

The rule is kept narrow because real neighbours cross too: fits are a few millimetres off, and
two pieces set against each other are fitted crossing by 3-11 mm (980017: two yellow larges,
11 mm, 210 and 308 points, both real). A neighbour of another colour or size with few points
is often a real piece barely seen (900010: a green small, 11 points, 6 mm into a yellow medium),
so only the same class counts, and only where the other explains twice the points. Pieces are
taken best-supported first, as non-maximum suppression takes boxes, so an extra that crosses a
true piece is dropped before it can take a third piece down with it (900037). Pieces that have
few points by construction (nested ones, a tower's or a lying tower's hidden piece) are neither
dropped nor drop others.

Two readings in one place are dropped whatever their support: same class, axes within 30
degrees, base centres less than half a base apart across the axis and under 3 mm along it (along
it, 5.5 mm, is a tower of two of a size). Two real pieces there would be one inside the other
side to side. 1000042: a red large at the picture's edge read twice, 205 and 350 points, 5 mm
apart, both kept by the support test, an unflagged "extra piece" mark. On the five tuning sets
the nearest real pair of one class, parallel, lay 0.87 of a base apart (two smalls, 12.4 mm);
second readings lay 0.15-0.47 of a base apart and 7 of the 11 such were dropped already.
"""
from __future__ import annotations

import numpy as np

from zendo.pieces import PYRAMID_SIZES
from zendo.scene import Piece, Scene
from zendo.shapes import crossing_pairs

from .pose import DUPLICATE_MM, SAME_AXIS_COS, PieceFit, scene_with

CROSS_MM = 3.0  # shells crossing deeper than this: beyond a fit's error against a neighbour
SUPPORT_RATIO = 0.5  # the dropped piece has under this share of the other's depth points
FEW_POINTS_BY_DESIGN = ("nested", "lying under", "tower under", "tower on")
SAME_PLACE_ACROSS = 0.5  # base centres closer than this share of a base, across the axis: one piece
# along it, and between the axes, the limits of pose.drop_duplicates (a tower of two of a size: 5.5 mm)
APART_SHARE = 0.4  # a piece dropped in a kept one's place this share of a base across from it: `apart_doubts`


def same_place(a: Piece, b: Piece) -> bool:
    """Whether two pieces of one class are fitted where only one of them can be."""
    if float(a.axis @ b.axis) < SAME_AXIS_COS:
        return False
    along, across = _offset(a, b)
    return abs(along) < DUPLICATE_MM and across < SAME_PLACE_ACROSS * 2 * PYRAMID_SIZES[a.size].half


def _offset(a: Piece, b: Piece) -> tuple[float, float]:
    """b's base centre from a's: along a's axis, and across it."""
    off = b.origin - a.origin
    along = float(off @ a.axis)
    return along, float(np.linalg.norm(off - along * a.axis))


def _judged_by_class(fits: list[PieceFit]) -> list[list[Piece]]:
    """The pieces judged at all (not FEW_POINTS_BY_DESIGN), grouped by colour and size: only
    pieces of one class can be readings of one piece."""
    groups: dict[tuple[str, str], list[Piece]] = {}
    for f in fits:
        if f.hypothesis not in FEW_POINTS_BY_DESIGN:
            groups.setdefault((f.piece.color, f.piece.size), []).append(f.piece)
    return list(groups.values())


def _linked(pairs) -> dict[str, set[str]]:
    """id -> ids it is paired with, both ways."""
    out: dict[str, set[str]] = {}
    for a, b in pairs:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return out


def _same_class_crossings(groups: list[list[Piece]]) -> dict[str, set[str]]:
    """id -> ids of the pieces of its class whose shells its own cross by CROSS_MM (the shells'
    distance is the costly part, so it is measured within a class only)."""
    return _linked((a, b) for pieces in groups for a, b, _ in crossing_pairs(pieces, CROSS_MM))


def _same_places(groups: list[list[Piece]]) -> dict[str, set[str]]:
    """id -> ids of the pieces of its class fitted in its place (`same_place`)."""
    return _linked((a.id, b.id) for pieces in groups for i, a in enumerate(pieces) for b in pieces[i + 1:]
                   if same_place(a, b))


def crossed_out(fits: list[PieceFit]) -> set[str]:
    """Ids of the pieces to drop (see the module's docstring): best-supported first, each one
    crossing a kept piece of its class with at least twice its points, or in a kept one's place."""
    groups = _judged_by_class(fits)
    crossing = _same_class_crossings(groups)
    places = _same_places(groups)
    points = {f.piece.id: f.n_points for f in fits}
    kept: set[str] = set()
    out: set[str] = set()
    for f in sorted(fits, key=lambda f: -f.n_points):
        pid = f.piece.id
        if any(k in kept for k in places.get(pid, ())) or any(
                k in kept and f.n_points < SUPPORT_RATIO * points[k] for k in crossing.get(pid, ())):
            out.add(pid)
        else:
            kept.add(pid)
    return out


def apart_doubts(before: list[PieceFit], after: list[PieceFit]) -> list[dict]:
    """A "missed" doubt (`"seen": "twice"`, zendo/doubts.py) for each piece `drop_crossing` took
    from `before` for standing in a kept piece's place (`same_place`) whose base centre lies
    APART_SHARE of a base or more across the kept one's axis, carrying the dropped piece (`"as"`)
    and the kept one's id (`"of"`): two pieces of one class side by side, each fitted a few
    millimetres towards the other, stand there as readily as one piece read twice.

    Why: fresh 431732, two green smalls standing base to base (14.3 mm apart), each with 40-60
    depth points, fitted 7.1 mm apart (0.496 of a base, under SAME_PLACE_ACROSS): the second was
    dropped and "exactly two pieces" and "two pieces touching" were wrong with no flag. On
    431200- the 22 pieces dropped in a kept one's place lay 0.0-0.5 of a base across from it; of
    the 6 at 0.4 or more, that was the one real piece."""
    kept = [f.piece for f in after]
    kept_ids = {p.id for p in kept}
    out = []
    for f in before:
        p = f.piece
        if p.id in kept_ids:
            continue
        for q in kept:
            if ((q.color, q.size) == (p.color, p.size) and same_place(q, p)
                    and _offset(q, p)[1] >= APART_SHARE * PYRAMID_SIZES[q.size].width):
                out.append({"kind": "missed", "at": [round(float(p.origin[0]), 1), round(float(p.origin[1]), 1)],
                            "seen": "twice", "of": q.id, "as": p.to_dict()})
                break
    return out


def drop_crossing(scene: Scene, fits: list[PieceFit]) -> tuple[Scene, list[PieceFit]]:
    """The scene and fits without the pieces `crossed_out` names."""
    gone = crossed_out(fits)
    if not gone:
        return scene, fits
    kept = [f for f in fits if f.piece.id not in gone]
    return scene_with(scene, [f.piece for f in kept], kept), kept
