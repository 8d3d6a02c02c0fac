"""Towers the detector read as one piece: the piece under or on top of a fitted one, found in depth.

Why: a tower of two pieces of one size shows the lower one only as a 5.5 mm band under the upper
one, and a small piece on a large one's tip sits inside the same box; the detector then draws one
box and pose fits one pyramid where two stand. On the tuning set (seeds 900000-900059) 44 % of the
visible pieces stacked on another were missed so, the largest single cause of missed pieces.

How: for each fitted upright piece, each way a coaxial neighbour could stand with it (a piece of
the same or a larger size under it, where it stood, with it lifted onto that piece's tip; a piece
of the same or a smaller size on its tip) is scored against the depth around it: how many more
above-table points the scene with the neighbour explains than the scene without it, and how much
of the neighbour (and of the lifted piece) lies where the camera saw through. The best one that
clears TOWER_GAIN_POINTS and the free-space limits is added; the classifier reads the box of the
points only it explains (the band a lower piece shows) for its size, and the colour model
(vision/colors.py) reads the band's own pixels for its colour: the classifier's 96 mm window
there is mostly the upper piece (tuning set: 10 of 12 lower pieces took the upper one's colour).

A tower added in depth alone, in one colour, whose shape a large piece has (SMALLER_TOWERS) gets an
"absent" doubt on its upper piece (`"why": "one"`): the two may be that one large piece.

A tower of two pieces of one size differs from one piece in depth by a band 5.5 mm high, too
little to decide (the "stacked" doubt). Its colour can: when the band under the rim shows a
colour other than the upper piece's, surely, the lower piece is added, with an "absent" doubt,
for a few pixels of colour are all it rests on. Under a piece fitted on the table the band's
colour decides alone (no floor on depth's point gain, a less sure reading), for there its pixels,
less those another fitted piece explains, can only be the lower piece's or the fitted one's foot.
Most of a band lies under the 2.5 mm the stage looks above; where what shows above it is too thin
to read, the band's points from 1.5 mm up (its foot) are read with it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import NamedTuple
from dataclasses import dataclass, replace

import numpy as np

from zendo.build import rest_offset
from zendo.doubts import laid_down, set_down, stacked_as
from zendo.pieces import PYRAMID_SIZES, RAINBOW_COLORS, SIZES, larger_sizes
from zendo.relations import RelationsConfig
from zendo.scene import Piece, Scene

from .classes import PYRAMID_CLASSES
from .colors import ColorReading, FrameColors
from .detect import Detections
from .pose import (
    PieceFit,
    _free_space,
    next_piece_id,
    pixel_box,
    scene_with,
    signed_distances,
    union_distance,
)
from .rest import lies_on_table, turned

UPRIGHT_COS = np.cos(np.radians(15))  # only (near) upright pieces stack coaxially
LEVEL_COS = np.cos(np.radians(1))  # a fit leaning more than this is also tried upright (`candidates`)
NEAR_MM = 22.0  # points this close (in x, y) to a piece's axis are its tower's
INLIER_MM = 1.5  # a point this close to a solid's surface is explained by it
TOWER_GAIN_POINTS = 25  # the tower must explain this many more points than the piece alone
FREE_SPACE_LIMIT = 0.35  # at most this share of the added piece (or the one lifted onto it) where the camera saw through
STACKED_FREE_SPACE = 0.3  # a same-size tower this consistent with depth is a doubt (tuning set: 29 of 35 such
STACKED_MIN_GAIN = -40  # towers the detector read as one piece, 22 of 428 lone upright pieces)
SMALLER_TOWERS = (("medium", "medium"), ("medium", "medium", "medium"), ("medium", "small"),
                  ("medium", "small", "small"), ("medium", "medium", "small"), ("small", "small"),
                  ("small", "small", "small"))  # what an upright large piece may be (bottom first)
SMALLER_MIN_GAIN = 15  # a tower of those must explain this many more points than the large piece
SMALLER_FREE_SPACE = 0.3  # and lie where the camera saw through no more than this
FREE_SPACE_TOL_MM = 4.0
LYING_TOWERS = (("medium", "medium"), ("medium", "medium", "medium"), ("medium", "small"),
                ("medium", "medium", "small"), ("small", "small"), ("small", "small", "small"))  # what a lying large piece may be
LYING_TOWER_GAIN = 15  # ... where one laid on its side explains this many more points (`lying_tower_doubts`)
LYING_TOWER_FREE_SPACE = 0.3  # ... and lies where the camera saw through no more than this
LYING_TOWER_REACH_MM = 35.0  # ... of the depth this near (x, y) the piece's middle
LYING_STACK_GAIN = 10  # a lying small's nest of two smalls must explain this many more points (`lying_small_stacks`)
LYING_STACK_FREE_SPACE = 0.25  # ... and lie where the camera saw through no more than this
LYING_STACK_REACH_MM = 30.0  # ... of the depth this near (x, y) the piece's middle
COAXIAL_MM = 3.0  # a fitted piece this close to the axis (x, y) already stands in the tower
GROUNDED_MM = 3.0
FLOATING_MM = 2.0  # a tower's lower piece fitted this far over the table, nothing under it: see `floating_tower_doubts`
SHIFTS_MM = (-4.0, -2.0, 0.0, 2.0, 4.0)  # a lone fit of a tower is off along the axis by about this
SINK_MM = 2.0  # ... but its lower piece stands no deeper than this in the piece it rests on: see `_candidates`
MIN_CLASS_P = 0.5  # the classifier must read a pyramid in the added piece's band this surely
BAND_MARGIN_MM = 1.0  # a lower piece's band: its points at least this far under the upper one's rim
BAND_MIN_PX = 8  # the colour model reads a band of this many pixels; its reading counts this surely:
BAND_P = 0.8  # (tuning sets: 8 px / 0.8 gave 11 more right classes on each, 12 px / 0.9 gave 9 and 6)
GROUNDED_BAND_P = 0.5  # under a piece fitted on the table (tuning sets, no gain floor, other pieces' pixels left
# out: 0.8 found 24 true towers and 1 false one, 0.5 found 26 and 1; 3 and 4 with the lower piece's colour wrong)
UP_MM = 2.5  # the towers stage's depth: points this far above the table
FOOT_FLOOR_MM = 1.5  # a lower piece's band: its points this high too (the colour model's table is under 1.5 mm)
FOOT_CLEAR_MM = 6.0  # ... this far from any other piece (the lying stage's BORROWED_MM): a neighbour's foot
# is where its fit is least sure (the bundled recording: a red large's foot read as a red piece under the
# tower's yellow medium, whose band read 1 pixel)
BAND_DOUBT_P = 0.02  # a band's runner-up colour this likely is a class doubt: a few pixels are read less
# surely than a crop (the classifier's CLASS_DOUBT_P is 0.03; a blue band in shadow read black 0.95, blue 0.04)


@dataclass(frozen=True)
class Candidate:
    """One way a hidden neighbour could complete a tower with `base` (a fitted piece)."""

    where: str  # "under" or "on"
    added: Piece
    moved: Piece  # the fitted piece, where the tower puts it
    gain: int = 0  # points explained with the neighbour minus without
    free_space: float = 0.0


@dataclass(frozen=True)
class Addition:
    """The neighbour the towers stage adds: which candidate, the colour it is given, the box its
    band shows in (its detection), and the classifier's verdict there (None where only its band's
    colour found it)."""

    candidate: Candidate
    reading: ColorReading
    box: np.ndarray
    verdict: object = None


def _at(p: Piece, origin: np.ndarray, size: str | None = None, pid: str | None = None) -> Piece:
    return replace(p, position=tuple(map(float, origin)), size=size or p.size, id=pid or p.id)


def _on_the_table(p: Piece) -> bool:
    return float(p.vertices[:, 2].min()) < GROUNDED_MM


def stands_on_table(p: Piece) -> bool:
    """Upright within UPRIGHT_COS and grounded within GROUNDED_MM: where this stage stacks a tower
    (and the later tests of a tower read as one piece look)."""
    return p.axis[2] >= UPRIGHT_COS and float(p.vertices[:, 2].min()) <= GROUNDED_MM


def _support(p: Piece, pieces: list[Piece], reach_mm: float = COAXIAL_MM) -> Piece | None:
    """The fitted piece `p` rests on coaxially (its tip under p's base: their axes within
    `reach_mm`), if any."""
    best, best_z = None, -np.inf
    for q in pieces:
        if q.id == p.id or np.linalg.norm(q.origin[:2] - p.origin[:2]) > reach_mm or q.origin[2] >= p.origin[2] - 1:
            continue
        if q.origin[2] > best_z:
            best, best_z = q, q.origin[2]
    return best


def carries(p: Piece, pieces: list[Piece]) -> bool:
    """Whether one of `pieces` rests on `p`'s tip (`_support` within ON_TIP_MM)."""
    return any(_support(q, [p], ON_TIP_MM) is not None for q in pieces)


def candidates(p: Piece, pieces: list[Piece], new_id: str) -> Iterator[Candidate]:
    """Every coaxial neighbour `p` could have that no fitted piece already is, about p's fitted
    axis and, where the fit leans more than LEVEL_COS, about the upright one too. Why: a lone
    fit of a tower leans where the tower stands straight (tuning 920026: a black medium on a
    green one on a red large's tip, fitted between the two mediums and leaning 6 degrees; the
    green one under it explained 257 points fewer than the lone fit about its axis, 2 more
    upright)."""
    yield from _candidates(p, pieces, new_id)
    if p.axis[2] < LEVEL_COS:  # stood up about its origin
        yield from _candidates(turned(p, p.axis, np.array([0.0, 0.0, 1.0]), p.origin), pieces, new_id)


def _candidates(p: Piece, pieces: list[Piece], new_id: str) -> Iterator[Candidate]:
    """`candidates` about p's own axis. Single fits of a tower sit between its pieces, so each
    is also tried a few millimetres up and down; but where p rests on a fitted piece, never more
    than SINK_MM down into it. Why: a piece on another's tip is itself often fitted low, sunk
    into the tip, and then lifted a little with one of its size on it explains the depth better
    than alone: fresh 423263, a yellow small on a green large's tip fitted 5.9 mm low, read as a
    green small (the large's colour round its rim) under the yellow one, "exactly two pieces"
    wrong with no flag. On the tuning and held-out tables (660) the floor drops candidates on 84
    and changes what is added on one (920013, two wrong marks fewer)."""
    axis = p.axis
    grounded = _on_the_table(p)
    support = None if grounded else _support(p, pieces)
    occupied_above = any(q.id != p.id and np.linalg.norm(q.origin[:2] - p.origin[:2]) < COAXIAL_MM
                         and q.origin[2] > p.origin[2] + 1 for q in pieces)
    for s in SIZES:
        lift = rest_offset(s, p.size)
        if lift <= 1.0:
            continue  # p would cover a piece of that size, not rest on it
        if support is not None:
            if rest_offset(support.size, s) <= 1.0:
                continue
            origin = support.origin + axis * rest_offset(support.size, s)
        else:  # on the table (p stood there, or p floats: nothing under it was seen)
            origin = np.array([p.origin[0], p.origin[1], 0.0])
        yield Candidate("under", _at(p, origin, s, new_id), _at(p, origin + axis * lift))
    if not occupied_above:
        shifts = _not_sunk(p, support, (0.0, 2.0, 4.0) if grounded else SHIFTS_MM)
        for s in SIZES:
            lift = rest_offset(p.size, s)
            if lift <= 1.0:
                continue
            for dz in shifts:
                base = p if grounded or dz == 0 else _at(p, p.origin + axis * dz)
                top = base.origin + axis * (lift + (dz if grounded else 0.0))
                yield Candidate("on", _at(p, top, s, new_id), base)


def _not_sunk(p: Piece, support: Piece | None, shifts: tuple[float, ...]) -> tuple[float, ...]:
    """The shifts of p along its axis that leave its base no more than SINK_MM below where it
    rests on its support's tip (measured along p's axis, as the "under" candidates place a piece
    there); all of them where nothing supports p or p would cover its support."""
    rest = 0.0 if support is None else rest_offset(support.size, p.size)
    if rest <= 1.0:
        return shifts
    sunk = float(np.dot(p.origin - support.origin, p.axis)) - rest
    return tuple(dz for dz in shifts if sunk + dz >= -SINK_MM)


@dataclass(frozen=True)
class Around:
    """The depth round a fitted piece's axis, as the scene explains it: each point's signed
    distance to every near piece but this one (`others`) and to those and this one
    (`with_base`), and how many points the latter explains (`n_before`)."""

    pts: np.ndarray
    others: np.ndarray
    with_base: np.ndarray
    n_before: int

    def gain(self, instead: list[Piece], kept: np.ndarray | None = None) -> int:
        """How many more points the scene explains with `instead` added to what `kept` explains:
        the points' distances to the rest of the scene (default: the others and the base as
        fitted; `others` alone where `instead` replaces the base)."""
        kept = self.with_base if kept is None else kept
        after = np.abs(np.minimum(kept, union_distance(instead, self.pts))) < INLIER_MM
        return int(np.count_nonzero(after)) - self.n_before


def _near_pieces(base: Piece, pieces: list[Piece]) -> list[Piece]:
    """The other pieces whose solids can reach the depth round base's axis (NEAR_MM, and 30 mm
    for their own reach)."""
    return [q for q in pieces if q.id != base.id and np.linalg.norm(q.origin[:2] - base.origin[:2]) < NEAR_MM + 30]


def around(base: Piece, pieces: list[Piece], pts: np.ndarray) -> Around:
    """`pts` (the depth round base's axis) as the scene explains it, computed once per piece for
    every candidate and tower tried there."""
    others = union_distance(_near_pieces(base, pieces), pts)
    with_base = np.minimum(others, signed_distances(base, pts))
    return Around(pts, others, with_base, int(np.count_nonzero(np.abs(with_base) < INLIER_MM)))


def _gain(c: Candidate, base: Piece, near: Around) -> Candidate:
    """The candidate with how many more points the scene explains with it than without it. Half
    the candidates leave the base where it was fitted; every point the scene explained and no
    longer does is one the candidate loses, so the gain is the difference of the two counts."""
    kept = None if c.moved is base else np.minimum(near.others, signed_distances(c.moved, near.pts))
    return replace(c, gain=near.gain([c.added], kept))


def _seen_through(pieces: list[Piece], depth_mm, to_cam, intr) -> float:
    """The largest share of any of these pieces that lies where the camera saw through."""
    return max(_free_space(q.size, q.matrix, q.origin, depth_mm, to_cam, intr, FREE_SPACE_TOL_MM) for q in pieces)


def _with_free_space(c: Candidate, base: Piece, depth_mm, to_cam, intr) -> Candidate:
    """The candidate with the larger share of the added piece, or of the base where the tower
    moves it, that lies where the camera saw through."""
    moved = [] if c.moved is base else [c.moved]
    return replace(c, free_space=_seen_through([c.added] + moved, depth_mm, to_cam, intr))


def scored_candidates(base: Piece, pieces: list[Piece], near: Around, new_id: str) -> list[Candidate]:
    """Every candidate with its point gain (against `near`, the depth round base), best first."""
    return sorted((_gain(c, base, near) for c in candidates(base, pieces, new_id)),
                  key=lambda c: -c.gain)


def smaller_tower_doubt(base: Piece, near: Around, depth_mm, to_cam, intr) -> dict | None:
    """A "tower" doubt (zendo/doubts.py) when a tower of smaller pieces standing where an upright
    large piece stands explains SMALLER_MIN_GAIN more of the depth round it than the large piece
    does, within the free-space limit; it names every such tower, best first. Why so sparing:
    the sizes are similar shapes, so a tower of three mediums is nearly a large piece's outline
    and many a lone large one fits some tower about as well (tuning tables: 20 of 283 gain
    something, 3 gain 15 points or more; the tower of three mediums read as one large gained 23)."""
    if base.size != "large" or float(base.vertices[:, 2].min()) > GROUNDED_MM:
        return None
    found = []
    for sizes in SMALLER_TOWERS:
        stack = stacked_as(base, sizes)
        gain = near.gain(stack, near.others)
        if gain < SMALLER_MIN_GAIN:
            continue
        if _seen_through(stack, depth_mm, to_cam, intr) <= SMALLER_FREE_SPACE:
            found.append((gain, sizes))
    if not found:
        return None
    return {"kind": "tower", "piece": base.id, "towers": [list(s) for _, s in sorted(found, key=lambda f: -f[0])]}


def valid_candidates(scored: list[Candidate], base: Piece, depth_mm, to_cam, intr, min_gain: int = 1) -> list[Candidate]:
    """Those that explain at least `min_gain` more points within the free-space limit, best first."""
    out = []
    for c in scored:
        if c.gain < min_gain:
            break
        c = _with_free_space(c, base, depth_mm, to_cam, intr)
        if c.free_space <= FREE_SPACE_LIMIT:
            out.append(c)
    return out


def _stacked_candidates(scored: list[Candidate], base: Piece, depth_mm, to_cam, intr, any_size: bool = False,
                        gaining_limit: float = STACKED_FREE_SPACE) -> Iterator[Candidate]:
    """The neighbours of base's size (of any size, with `any_size`) depth cannot rule out, best
    first: the camera saw through at most STACKED_FREE_SPACE of them, or `gaining_limit` of one
    that explains more points than base alone."""
    for c in scored:
        if (c.added.size != base.size and not any_size) or c.gain < STACKED_MIN_GAIN:
            continue
        c = _with_free_space(c, base, depth_mm, to_cam, intr)
        if c.free_space <= (gaining_limit if c.gain > 0 else STACKED_FREE_SPACE):
            yield c


def stacked_doubt(scored: list[Candidate], base: Piece, depth_mm, to_cam, intr) -> dict | None:
    """A "stacked" doubt (zendo/doubts.py) when a piece of the base's own size could stand under
    or on it: such a tower differs from one piece only by 5.5 mm along faces that slope 74 deg
    (1.5 mm across them) and a band a few pixels high, so depth cannot rule it in or out.

    One that explains more points than base alone is a doubt up to the towers stage's own
    FREE_SPACE_LIMIT (0.35), not STACKED_FREE_SPACE (0.3): a tower of smalls read as its top one,
    where the camera saw through a third of the piece the tower adds (fresh 403778, a red small's
    23 px rim under a blue one: +17 points, 0.32; 404695, three smalls: +20, 0.33), had no stacked
    doubt to tell the Master (5 wrong marks unflagged on each)."""
    c = next(_stacked_candidates(scored, base, depth_mm, to_cam, intr, gaining_limit=FREE_SPACE_LIMIT), None)
    return None if c is None else {"kind": "stacked", "piece": base.id, "where": c.where}


def _own_points(c: Candidate, pieces: list[Piece], base: Piece, pts: np.ndarray) -> np.ndarray:
    """Which points the added piece explains better than the tower's other pieces do."""
    own = np.abs(signed_distances(c.added, pts))
    others = np.abs(union_distance([q for q in pieces if q.id != base.id] + [c.moved], pts))
    return (own < INLIER_MM) & (own < others)


def _band_box(c: Candidate, pieces: list[Piece], base: Piece, pts: np.ndarray, pix: np.ndarray) -> np.ndarray | None:
    """The image box of the points the added piece alone explains (what shows of it)."""
    mine = _own_points(c, pieces, base, pts)
    return pixel_box(pix[mine]) if mine.sum() >= 5 else None


def _under_rim(lower: Piece, upper: Piece, pts: np.ndarray) -> np.ndarray:
    """The lower piece's points below the upper one's rim: what shows of it in its own colour. Above
    the rim the faces of a same-size pair lie within 1.5 mm of each other, so "nearer to the lower
    piece" there picks pixels of the upper one."""
    rim = float(upper.vertices[:, 2].min())
    return (np.abs(signed_distances(lower, pts)) < INLIER_MM) & (pts[:, 2] < rim - BAND_MARGIN_MM)


def _band_points(c: Candidate, pieces: list[Piece], base: Piece, pts: np.ndarray) -> np.ndarray:
    """The added piece's points whose colour is its own."""
    return _under_rim(c.added, c.moved, pts) if c.where == "under" else _own_points(c, pieces, base, pts)


def _band_pixels(c: Candidate, pieces: list[Piece], base: Piece, pts: np.ndarray, pix: np.ndarray,
                 low: FootSource) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    """The added piece's pixels whose colour is its own, and (a lower piece's) its foot's."""
    band = pix[_band_points(c, pieces, base, pts)]
    return band, ((lambda: _foot_pixels(c.added, c.moved, low())) if c.where == "under" else (lambda: band[:0]))


def _band_color(colors: FrameColors, pixels: np.ndarray, min_p: float = BAND_P) -> ColorReading | None:
    """The colour model on the chosen pixels (a band, as image rows and columns); None for fewer
    than BAND_MIN_PX pixels, a reading under `min_p`, or no colour model."""
    if len(pixels) < BAND_MIN_PX:
        return None
    got = colors.read(pixels[:, 0], pixels[:, 1])
    return got if got is not None and got.p >= min_p else None


@dataclass(frozen=True)
class Foot:
    """The depth round a piece's axis between FOOT_FLOOR_MM and the towers stage's floor (UP_MM),
    with each point's distance to the pieces near it but that one (`others`).

    Why: the towers stage works on the points UP_MM above the table, which leaves 3 of a same-size
    tower's 5.5 mm band; its lower 2.5 mm is most of what shows of the lower piece from above (tuning
    900025: a blue large under a green large showed 47 pixels, 5 of them above UP_MM, and read green)."""

    pts: np.ndarray
    pix: np.ndarray
    others: np.ndarray


FootSource = Callable[[], "Foot | None"]  # a base's Foot, worked out on first call


def foot(low: PointsUp, base: Piece, pieces: list[Piece]) -> Foot:
    """Base's `Foot`, from the frame's `foot_points`."""
    sel = _near_axis(low.x, low.y, low.points, base.origin)
    pts = low.points[sel]
    return Foot(pts, low.pixels[sel], union_distance(_near_pieces(base, pieces), pts))


def _foot_pixels(lower: Piece, upper: Piece, low: Foot | None) -> np.ndarray:
    """The pixels of a lower piece's band under UP_MM: where it stands on the table, its points
    in `low` under the upper one's rim and FOOT_CLEAR_MM clear of every other piece."""
    if low is None or not _on_the_table(lower) or len(low.pts) == 0:
        return np.zeros((0, 2), np.int64)
    return low.pix[_under_rim(lower, upper, low.pts) & (np.abs(low.others) >= FOOT_CLEAR_MM)]


def _lower_color(colors: FrameColors, band: np.ndarray, foot_px: Callable[[], np.ndarray], min_p: float = BAND_P
                 ) -> tuple[ColorReading | None, np.ndarray]:
    """A lower piece's band read (`_band_color`), and the pixels the reading rests on; only where
    the band is too thin to read (under BAND_MIN_PX pixels), read with its foot. Why not always:
    a foot's pixels meet the table, its shadow and the piece's own darkened base, and where the
    band alone read right they changed it (tuning 930046: a red large's read black, 930028 a red
    one yellow). Where the foot is read, a reading that the table round it reads as too is no
    reading: depth noise lifts table pixels into the foot (tuning 920030: a yellow band on a red
    table read red). `foot_px` is called only where the band is too thin."""
    if len(band) >= BAND_MIN_PX or not len(foot := foot_px()):
        return _band_color(colors, band, min_p), band
    both = np.concatenate([band, foot])
    got = _band_color(colors, both, min_p)
    return (None, both) if got is not None and colors.like_table(got, pixel_box(both)) else (got, both)


def _band_class_doubts(piece: Piece, reading: ColorReading, under_a_rim: bool = False) -> list[dict]:
    """The class doubts of a piece whose colour a band gave: its runner-up colour where it is
    within reach (BAND_DOUBT_P), for a band in shadow can pass for black; and, for a reading
    under BAND_P (only a piece under one on the table is added on such), every other colour:
    before it was added, the "stacked" doubt offered the piece in each colour (held-out table
    950008: a yellow medium's band read red 0.77, black 0.14, left "contains a yellow piece"
    wrong and unflagged). A lower piece's band (`under_a_rim`) read black is read in every other
    colour too, however surely: the band lies under the upper piece's rim, in its shadow, where
    any colour darkens to black, and depth's pixels for it straddle the upper piece's dark edge
    (fresh 407453 and 407723: yellow mediums under blue ones read black 0.90 and 0.98, runner-up
    green and blue, "contains a medium yellow piece" wrong with no flag)."""
    out = []
    if reading.runner_up != reading.color and reading.runner_up_p >= BAND_DOUBT_P:
        out.append({"kind": "class", "piece": piece.id, "color": reading.runner_up, "size": piece.size,
                    "p": round(reading.runner_up_p, 3)})
    named = {reading.color} | {d["color"] for d in out}
    if under_a_rim and reading.color == "black":
        return out + shaded_doubts(piece, named)
    if reading.p < BAND_P:
        out += _other_colours(piece, named)
    return out


def _other_colours(piece: Piece, named: set[str], **why) -> list[dict]:
    """A class doubt at the piece's size of every colour not `named` (and `why`'s fields)."""
    return [{"kind": "class", "piece": piece.id, "color": c, "size": piece.size, **why}
            for c in RAINBOW_COLORS if c not in named]


def shaded_doubts(piece: Piece, named: set[str] = frozenset()) -> list[dict]:
    """A class doubt (`"why": "shade"`) of every colour but black and `named` for a piece read
    black from its band under another piece's rim: in that shadow any colour darkens to black,
    so the reading says little, and such a doubt is paired with a piece added by another doubt
    as a likely colour's is (zendo.doubts.joint_recoloured_added_alternatives)."""
    return _other_colours(piece, {"black", *named}, why="shade")


def _color_tower_candidate(scored: list[Candidate], base: Piece, on_table: bool, depth_mm, to_cam,
                           intr) -> Candidate | None:
    """The piece that may stand under `base`, for its band's colour to decide. Under a raised
    piece, the one of any size that gains most of those depth cannot rule out: it rests on the
    tip the fitted piece rests on, which sets each size's height (tuning 900047, a yellow medium
    between a yellow large and a green small on top, gained 21 points and a small 3 there; the
    small was added while only the fitted piece's size was tried). Under a piece fitted on the
    table, one of its own size: there depth's point gain is no witness (the tuning sets' true
    towers of one size read as one piece there, whose band read right, gained -174 to +17 points;
    STACKED_MIN_GAIN kept 8 of 26 out), while the band's pixels, less those another fitted piece
    explains, can only be that piece's or the fitted one's own foot, whose colour adds nothing:
    so there only the free-space limit applies. (The bundled recording's middle piece of three,
    boxed alone and fitted standing inside the red large, read its band red off the large's own
    faces.)"""
    if not on_table:
        return next((c for c in _stacked_candidates(scored, base, depth_mm, to_cam, intr, any_size=True)
                     if c.where == "under"), None)
    c = next((c for c in scored if c.where == "under" and c.added.size == base.size), None)
    if c is None:
        return None
    c = _with_free_space(c, base, depth_mm, to_cam, intr)
    return c if c.free_space <= STACKED_FREE_SPACE else None


def _color_tower(scored: list[Candidate], base: Piece, pieces, near: Around, pix, colors: FrameColors, depth_mm,
                 to_cam, intr, low: FootSource = lambda: None) -> Addition | None:
    """The same-size piece under `base` that depth left in doubt, when its band shows another
    colour surely (BAND_MIN_PX; BAND_P, or GROUNDED_BAND_P under a piece on the table); no verdict
    (the classifier did not find it). `near`: the depth round base's axis, as the scene explains it;
    `low`: base's foot, read where the band is too thin (`_lower_color`)."""
    on_table = _on_the_table(base)
    c = _color_tower_candidate(scored, base, on_table, depth_mm, to_cam, intr)
    if c is None:
        return None
    band = _band_points(c, pieces, base, near.pts)
    if on_table:  # the band alone decides there: none of its pixels may be another piece's
        band &= np.abs(near.others) >= INLIER_MM
    got, shows = _lower_color(colors, pix[band], lambda: _foot_pixels(c.added, c.moved, low()),
                              GROUNDED_BAND_P if on_table else BAND_P)
    if got is None or got.color == base.color:
        return None
    return Addition(c, got, pixel_box(shows))


def _near_axis(X: np.ndarray, Y: np.ndarray, P: np.ndarray, origin: np.ndarray, reach: float = NEAR_MM) -> np.ndarray:
    """The indices, in order, of the points within `reach` (x, y) of a piece's axis. Why the
    square first: a frame has tens of thousands of points above the table and a piece's tower a
    few hundred, so the distance is taken only inside the square around the axis (a frame of a
    dozen pieces paid 13 ms for it over all the points)."""
    idx = np.flatnonzero((np.abs(X - origin[0]) < reach) & (np.abs(Y - origin[1]) < reach))
    return idx[np.linalg.norm(P[idx, :2] - origin[:2], axis=1) < reach]


class PointsUp(NamedTuple):
    """The frame's depth points standing off the table (table frame), their pixels, and their x
    and y laid out for `_near_axis`."""

    points: np.ndarray
    pixels: np.ndarray
    x: np.ndarray
    y: np.ndarray


def points_up(heights) -> PointsUp:
    """The frame's `PointsUp`. The pipeline works them out once a frame for the towers stage and
    the lying nests' test (`lying_small_stacks`): 1.5-2.5 ms each time."""
    table_pts, seen = heights
    return _points(table_pts, seen & (table_pts[..., 2] > UP_MM))


def foot_points(heights) -> PointsUp:
    """The frame's points between FOOT_FLOOR_MM and UP_MM off the table (`Foot`)."""
    table_pts, seen = heights
    z = table_pts[..., 2]
    return _points(table_pts, seen & (z > FOOT_FLOOR_MM) & (z <= UP_MM))


def _points(table_pts: np.ndarray, mask: np.ndarray) -> PointsUp:
    P = table_pts[mask].astype(np.float64)
    return PointsUp(P, np.argwhere(mask), np.ascontiguousarray(P[:, 0]), np.ascontiguousarray(P[:, 1]))


def lying_small_stacks(frame, scene: Scene, up: PointsUp, table) -> list[dict]:
    """A "stacked" doubt for each small piece lying on the table where two smalls nested one in
    the other explain LYING_STACK_GAIN more of the depth round it than the piece alone: the other
    one round its tip ("where": "under": the piece read is the inner one, its outer one's walls
    lost in its own), lying where the camera saw through no more than LYING_STACK_FREE_SPACE;
    else the other one in it, its base out of the piece's ("where": "in": the piece read is the
    outer one), within the same share (0.2 until session 66: fresh 413253, two blue smalls nested,
    read as the outer, the nest 22 points better and 0.231 seen through; "exactly two pieces",
    "touching" and "pointing" wrong with no flag). Why a test, when lying mediums and larges get the
    doubt on sight (vision.doubts.lying_stack_doubts): small ones are many and the doubt on every
    one cost 1.3 points of right marks flagged on 920000-; a nest of two smalls shows 5.5 mm more
    piece along its axis and its rim, which depth sees. Tuning tables, final scenes (session 48):
    of 461 smalls lying alone, 20 pass the first test and 7 more the second; of 117 smalls read
    where a nest of two or three lay (tuning and fresh tables 400000-401799), 57 pass the first
    and 28 more the second (fresh 400405, 401232: a nest read as its outer piece, "exactly two
    pieces" and "a piece pointing at another" wrong and unflagged; a nest of three, 400071,
    explains 10 more points but lies 0.207 where the camera saw through)."""
    lift = rest_offset("small", "small")
    out = []
    for p, near in _lying_on_table(scene, "small", up, LYING_STACK_REACH_MM, LYING_STACK_GAIN):
        tip = [_at(p, p.origin + p.axis * lift), replace(p, id=f"{p.id}-stack")]
        base = [p, _at(p, p.origin - p.axis * lift, pid=f"{p.id}-stack")]
        for where, stack in (("under", tip), ("in", base)):
            if (near.gain(stack, near.others) >= LYING_STACK_GAIN
                    and _seen_through(stack, frame.depth_mm, table.to_camera, frame.intrinsics) <= LYING_STACK_FREE_SPACE):
                out.append({"kind": "stacked", "piece": p.id, "where": where})
                break
    return out


def lying_tower_doubts(frame, scene: Scene, up: PointsUp, table) -> list[dict]:
    """A "tower" doubt with "laid" (zendo/doubts.py) for each large piece lying on the table where
    a tower of smaller pieces laid on its side (`zendo.doubts.laid_as`) explains LYING_TOWER_GAIN
    more of the depth round it than the large piece, lying where the camera saw through no more
    than LYING_TOWER_FREE_SPACE; it names every such tower, best first, each with how far along
    the large piece's axis it starts (its base, halfway, or its tip where the large piece's is).

    Why: three mediums one on another's tip are 45.9 mm long, a large 44.5, and laid down they
    show as one large piece to the detector and classifier both; fresh 431429, three blue mediums
    read as one blue large, "no large pieces" wrong with no flag (427114 and 427627 before it).
    Sessions 46-47 laid the towers along the large piece as fitted, where each smaller piece
    floats, and found no depth test; set down on the table, 431429's tower of three explains 56
    points more and the five true lying larges of that table 13-86 fewer at best."""
    out = []
    for p, near in _lying_on_table(scene, "large", up, LYING_TOWER_REACH_MM, LYING_TOWER_GAIN):
        found = []
        for sizes in LYING_TOWERS:
            tower = stacked_as(p, sizes)  # built once, laid down at each start
            short = PYRAMID_SIZES["large"].height - tower_length(sizes)
            stacks = [(shift, laid_down(tower, p.axis * shift)) for shift in (0.0, short / 2, short)]
            gain, shift, stack = max(((near.gain(st, near.others), shift, st) for shift, st in stacks),
                                     key=lambda g: g[0])
            if (gain >= LYING_TOWER_GAIN
                    and _seen_through(stack, frame.depth_mm, table.to_camera, frame.intrinsics) <= LYING_TOWER_FREE_SPACE):
                found.append((gain, sizes, round(float(shift), 1)))
        if found:
            found.sort(key=lambda f: -f[0])
            out.append({"kind": "tower", "piece": p.id, "towers": [list(s) for _, s, _ in found],
                        "laid": [shift for _, _, shift in found]})
    return out


def _lying_on_table(scene: Scene, size: str, up: PointsUp, reach_mm: float, min_points: int
                    ) -> Iterator[tuple[Piece, Around]]:
    """Each piece of `size` lying on the table, with the depth within `reach_mm` (x, y) of its
    middle as the scene explains it (`around`), where that holds at least `min_points` points:
    what the lying nest and lying tower tests weigh their stacks against."""
    pieces = list(scene.pieces)
    cfg = RelationsConfig()
    P, _, X, Y = up
    for p in pieces:
        if p.size != size or not lies_on_table(p, cfg):
            continue
        pts = P[_near_axis(X, Y, P, p.vertices[:, :2].mean(axis=0), reach_mm)]
        if len(pts) >= min_points:
            yield p, around(p, pieces, pts)


def tower_length(sizes) -> float:
    """From the bottom piece's base to the top one's tip, along the axis (`rest_offset`)."""
    return PYRAMID_SIZES[sizes[-1]].height + sum(rest_offset(a, b) for a, b in zip(sizes, sizes[1:]))


def complete_towers(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights,
                    table, classifier, colors: FrameColors, up: PointsUp
                    ) -> tuple[Scene, list[PieceFit], Detections, list, list[dict]]:
    """The scene with every tower neighbour the depth shows and the detector missed; each added
    piece gets a detection (its band's box) and the classifier's verdict, so the class and absent
    doubts treat it like any other piece. Also the "stacked" doubts of the pieces where a tower
    of one size cannot be told from one piece. Without a classifier there is no colour to give:
    nothing is added, the doubts are still raised. `colors`: the frame's colour model, shared
    with the nested stage; `up`: the frame's `points_up`."""
    P, pix, X, Y = up
    pieces = list(scene.pieces)
    fits = list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    doubts: list[dict] = []
    thirds: list[str] = []  # the upper pieces of towers of one size completed from a band
    depth, to_cam, intr = frame.depth_mm, table.to_camera, frame.intrinsics
    order = sorted(range(len(pieces)), key=lambda i: -fits[i].n_points)
    low = cache(lambda: foot_points(heights))  # worked out where a band first needs it
    for i in order:
        base = pieces[i]
        if base.axis[2] < UPRIGHT_COS:
            continue
        sel = _near_axis(X, Y, P, base.origin)
        if len(sel) < TOWER_GAIN_POINTS:
            continue
        pts, px = P[sel], pix[sel]
        near = around(base, pieces, pts)
        scored = scored_candidates(base, pieces, near, next_piece_id(pieces))
        base_foot = cache(lambda base=base: foot(low(), base, pieces))  # bound now: called in this round only
        added = None
        if classifier is not None and scored and scored[0].gain >= TOWER_GAIN_POINTS:
            added = _add(valid_candidates(scored, base, depth, to_cam, intr), pieces, base, pts, px, colors,
                         frame, table, heights, classifier, base_foot)
        if added is None and classifier is not None:
            added = _color_tower(scored, base, pieces, near, px, colors, depth, to_cam, intr, base_foot)
            if added is not None:  # without the lower piece, the upper one stands where it was fitted
                doubts.append({"kind": "absent", "piece": added.candidate.added.id,
                               "confidence": round(added.reading.p, 3), "why": "band", "then": [base.to_dict()]})
                thirds.append(base.id)
        if added is None:
            for d in (stacked_doubt(scored, base, depth, to_cam, intr),
                      smaller_tower_doubt(base, near, depth, to_cam, intr)):
                if d is not None:
                    doubts.append(d)
            continue
        best, reading, box, v = added.candidate, added.reading, added.box, added.verdict
        color, p_color = reading.color, reading.p
        piece = replace(best.added, color=color)
        doubts += _band_class_doubts(piece, reading, under_a_rim=best.where == "under")
        lower = best.moved
        if best.where == "on":  # the fitted piece is the lower one now: its box read the upper one's colour
            got, _ = _lower_color(colors, px[_under_rim(lower, piece, pts)],
                                  lambda: _foot_pixels(lower, piece, base_foot()))
            if got is not None:
                lower = replace(lower, color=got.color)
                doubts += _band_class_doubts(lower, got, under_a_rim=True)
        pieces[i] = lower
        fits[i] = replace(fits[i], piece=lower)
        pieces.append(piece)
        doubts += (same_size_tower_doubts(best, lower, piece) + floating_tower_doubts(best, lower, piece, pieces)
                   + one_piece_doubts(best.where, lower, piece, p_color))
        k = len(detections)
        detections = detections.plus(box, f"{color}_{piece.size}", p_color)
        verdicts.append(v)
        sd = signed_distances(piece, pts)
        near = np.abs(sd) < 2 * INLIER_MM  # its own points (its band), not the whole tower's
        rms = float(np.sqrt(np.mean(sd[near] ** 2))) if near.any() else 99.0
        fits.append(PieceFit(piece, rms, int(near.sum()), best.free_space, f"tower {best.where}", p_color, k))
    doubts += over_the_top_doubts(pieces, up, frozenset(d["piece"] for d in doubts if d["kind"] == "stacked"))
    doubts += third_piece_doubts(thirds, frozenset(d["piece"] for d in doubts if d["kind"] == "stacked"))
    if len(pieces) == len(scene.pieces):
        return scene, fits, detections, verdicts, doubts
    scene = scene_with(scene, pieces, fits)
    return scene, fits, detections, verdicts, doubts


def third_piece_doubts(uppers: list[str], doubted: frozenset[str] = frozenset()) -> list[dict]:
    """A "stacked" doubt ("under", `"why": "third"`) on each of `uppers`, the upper pieces of the
    towers of one size the stage completed from a lower piece's band, that has no stacked doubt
    yet (`doubted`): a third piece of that size may stand between the two.

    Why: fresh 434828, green, yellow and black mediums one on another, the yellow showing a 36 px
    band: the black's lone fit sat on the table, the green band lifted it one step, and depth,
    from a fit 2.3 mm off the axis, did not show the tower reaching higher (`over_the_top_doubts`);
    "at least one medium yellow piece" was wrong with no flag. The band read is the lowest one
    that shows; a middle one's may show as little. Such towers come to about 90 in 600 tables;
    right marks flagged +0.02 points on 434800-."""
    return [{"kind": "stacked", "piece": pid, "where": "under", "why": "third"} for pid in uppers if pid not in doubted]


TOP_REACH_MM = 2.0  # depth this near (x, y) a top piece's axis is over its tip: see `over_the_top_doubts`
TOP_OVER_MM = 2.5  # ... and where its 90th percentile stands this far over the fitted tip
TOP_MIN_POINTS = 8  # ... of at least this many points
TOP_CLEAR_MM = 2.0  # ... leaving out points this near or inside another piece's solid
ON_TIP_MM = 4.0  # a piece this near (x, y) another's axis and a millimetre higher is on its tip (`_support`)


def over_the_top_doubts(pieces: list[Piece], up: PointsUp, doubted: frozenset[str] = frozenset()) -> list[dict]:
    """A "stacked" doubt ("where": "under", "why": "top") on each upright piece with nothing
    fitted on its tip and no stacked doubt yet (`doubted`: the ids that have one) whose depth
    within TOP_REACH_MM of its axis, away from every other piece, stands TOP_OVER_MM over its
    fitted tip (the 90th percentile of TOP_MIN_POINTS or more): the camera sees the tower reach
    higher than the pieces read, so a piece of its size may stand hidden under it (the doubt's
    alternative lifts it one step onto one of each colour).

    Why: fresh 433399, blue, green and red smalls one on another, the green showing a 37 px band;
    the red was fitted between its own place and the green's, 6.5 mm up, the stage found the blue
    under it and set the red on the blue's tip, and "no green pieces" was marked wrong with no
    flag. Depth over the red's axis stood 5 mm over its tip (13 points), where a piece read
    whole shows its tip's depth 2-4 mm under the tip (a cone's apex, smoothed): over 2,257 top
    pieces of 300 tables of 432400-, 20 stood 2.5 mm over (8 points or more), 14 of them under a
    tower's top that truly stood higher, before leaving out other pieces' points."""
    out = []
    P, _, X, Y = up
    for p in pieces:
        if p.id in doubted or p.axis[2] < UPRIGHT_COS or carries(p, pieces):
            continue  # not upright, or something read on its tip
        pts = P[_near_axis(X, Y, P, p.origin, TOP_REACH_MM)]
        if len(pts) >= TOP_MIN_POINTS:
            pts = pts[union_distance(_near_pieces(p, pieces), pts) > TOP_CLEAR_MM]
        if len(pts) >= TOP_MIN_POINTS and float(np.percentile(pts[:, 2], 90)) >= p.tip[2] + TOP_OVER_MM:
            out.append({"kind": "stacked", "piece": p.id, "where": "under", "why": "top"})
    return out


def same_size_tower_doubts(added: Candidate, lower: Piece, upper: Piece) -> list[dict]:
    """A "stacked" doubt ("instead": the piece added) where a smaller piece was added on the tip
    of a piece fitted on the table: the two may be a tower of two of the lower one's size.

    Why: such a tower stands only 5.5 mm taller than its lower piece, as tall as a small on a
    large's tip or a medium on a medium's; the one fit of the tower sits on the table, a
    millimetre or two across from the upper piece, so depth scores the tower of one size 40-80
    points under the smaller piece on the tip and the classifier, reading the tip, reads a
    smaller size (fresh 406621, two black larges read as a black small on a black large; 406645,
    a red large on a blue one read as a red medium on a red large: "all pieces the same size"
    marked wrong with no flag). Only where the tip reads in the lower piece's colour: a tower of
    one size shows its upper piece whole, tip and all, so the fit (the lower piece now) and the
    tip are one piece's colour, and a tip of another colour is another piece. On the five tuning
    sets 34 smaller pieces were added so, 4 of them on such towers; 15 of the 34 were one colour
    with their lower piece, 3 of the 4 among them."""
    if (added.where != "on" or not _on_the_table(lower) or upper.color != lower.color
            or lower.size not in larger_sizes(upper.size)):
        return []
    return [{"kind": "stacked", "piece": lower.id, "where": "under", "instead": upper.id}]


def floating_tower_doubts(added: Candidate, lower: Piece, upper: Piece, pieces: list[Piece]) -> list[dict]:
    """A "stacked" doubt ("under") where a piece of the lower one's size was added on its tip and
    the lower one's fit floats FLOATING_MM or more over the table with no fitted piece under it:
    a third piece of that size may stand under the two.

    Why: the lone fit of a tower of three of one size sits between its pieces, so the stage
    finds the top two and the fit, now the lower of them, floats a few millimetres up. Under
    GROUNDED_MM it counts as on the table and the rest stage sets it down, and nothing says a
    piece may be under it (fresh 411576: green, yellow and blue smalls read as the yellow and the
    blue, the yellow fitted 2.5 mm up; "no green pieces", "exactly two pieces" wrong with no
    flag). On the five tuning sets the stage completed 62 towers, 32 of one size: the 16 whose
    lower piece floated (2.5 to 21.6 mm) all had a piece under it in truth (11 a third of its
    size, 5 a larger one); the other 16 lower pieces stood within 0.2 mm of the table. Over
    GROUNDED_MM the "held" doubt asks much the same, where the rest stage leaves the piece up."""
    if added.where != "on" or upper.size != lower.size:
        return []
    if float(lower.vertices[:, 2].min()) < FLOATING_MM or _support(lower, pieces) is not None:
        return []
    return [{"kind": "stacked", "piece": lower.id, "where": "under"}]


def one_piece_doubts(where: str, fitted: Piece, added: Piece, p: float) -> list[dict]:
    """An "absent" doubt ("why": "one") on the upper piece of a tower of one colour the stage
    completed, where the two may be one large piece (`one_larger`): without the upper piece, the
    lower one stands as that large piece. `where` is the candidate's: "on", the piece added on
    the fitted one's tip; "under", the piece added under the fitted one, which it lifted.

    Why both ways: fresh 429455, a black large fitted as a black small on top of its own depth,
    and the stage added a black medium under it; the tower was then taken bottom first as the
    small under the medium, no large piece's shape, and "exactly two pieces" was marked wrong
    with no flag."""
    lower, upper = (added, fitted) if where == "under" else (fitted, added)
    one = one_larger(lower, upper)
    if one is None:
        return []
    return [{"kind": "absent", "piece": upper.id, "confidence": round(p, 3), "why": "one", "then": [one.to_dict()]}]


def one_larger(lower: Piece, upper: Piece) -> Piece | None:
    """The one large piece a tower of one colour found in depth may be, standing on the table
    where its lower piece stands, or None where the tower is no shape a large piece has
    (SMALLER_TOWERS: the "tower" doubt's other way round).

    Why: such a tower's outline is nearly a large one's (the "tower" doubt), so depth finds the
    tower in a large piece as readily as the large piece in a tower: held-out 940006, a red large
    read as two red mediums, the upper one off the table, so "contains an ungrounded piece" was
    marked wrong with no flag."""
    if lower.color != upper.color or (lower.size, upper.size) not in SMALLER_TOWERS:
        return None
    return set_down(replace(lower, size="large"))


def _add(options: list[Candidate], pieces, base, pts, px, colors: FrameColors, frame, table, heights, classifier,
         low: FootSource = lambda: None) -> Addition | None:
    """The neighbour to add, or None when no candidate is within the free-space limit or the
    classifier does not read a pyramid there. The colour is the band's own (the colour model)
    where that reads BAND_MIN_PX pixels BAND_P surely, else the classifier's (no runner-up then:
    its verdict raises the class doubts)."""
    if not options or options[0].gain < TOWER_GAIN_POINTS:
        return None
    best, box, v = _read(options, pieces, base, pts, px, frame, table, heights, classifier)
    if best is None:
        return None
    color, p_color = v.color() if v is not None else (None, 0.0)
    if color is None or p_color < MIN_CLASS_P:
        return None
    band, _ = _lower_color(colors, *_band_pixels(best, pieces, base, pts, px, low))
    return Addition(best, band if band is not None else ColorReading(color, p_color, color, 0.0), box, v)


def _read(options: list[Candidate], pieces, base, pts, px, frame, table, heights, classifier):
    """(candidate, its band's box, the classifier's verdict there). Pieces of every size that
    rest on a tip show nearly the same outer surface above it (the faces of all sizes slope
    alike), so where depth cannot tell the sizes apart the classifier reads the box that holds
    every such candidate's band, and its size picks among them."""
    best = options[0]
    alike = [c for c in options if c.where == best.where and 2 * c.gain >= best.gain]
    boxes = [b for b in (_band_box(c, pieces, base, pts, px) for c in alike) if b is not None]
    if not boxes:
        return None, None, None
    box = np.array([min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                    max(b[3] for b in boxes)], np.float32)
    v = classifier.read_box(frame, table, box, heights)
    if v is not None and v.class_id < len(PYRAMID_CLASSES):
        size = PYRAMID_CLASSES[v.class_id].split("_")[1]
        best = next((c for c in alike if c.added.size == size), best)
    return best, box, v
