"""Towers laid on their side: the piece the detector folded into a lying one, found by its colour.

Why: a tower laid down shows its lower piece only beyond the upper one's base (a rim 5.5 mm wide
where both are one size), or its upper piece beyond the lower one's tip; the detector draws one
box round both and the fit takes one pyramid. On the tuning tables (900000-, 920000-, 930000-,
980000-, 990000-) 34 lower pieces of same-size lying towers of two colours were missed so, and 13
upper ones, more than any other kind of missed piece. The towers stage (vision/towers.py) looks
only round upright pieces; the nested stage (vision/nested.py) only into lying pieces' cavities.

How: for each fitted piece lying on the table, each coaxial neighbour it could have that no
fitted piece already is: a piece it rests on (its tip in this one's cavity, toward this one's
base) or one resting on its tip. The neighbour's own depth points are those within INLIER_MM of
it, nearer to it than to any fitted piece, and beyond the upper piece's base plane (short of it,
the faces of the two lie within 1.5 mm of each other). Where there are at least MIN_POINTS of them,
the neighbour lies where the camera saw through no more than FREE_SPACE_LIMIT of it, and the colour
model (vision/colors.py) reads their pixels BAND_P surely as a colour other than the fitted
piece's, the neighbour is added with an "absent" doubt, as the towers stage adds a band it reads:
a few pixels of colour are all it rests on. One of the fitted piece's own colour cannot be told
from it and is left to the "stacked" doubt. The neighbour is taken to be the fitted piece's size,
with a class doubt for each other size that could rest so (`_size_doubts`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from zendo.build import rest_offset
from zendo.pieces import SIZES
from zendo.relations import RelationsConfig
from zendo.scene import Piece, Scene

from .colors import TABLE_MM, ColorReading, FrameColors
from .detect import Detections
from .pose import PieceFit, _free_space, next_piece_id, pixel_box, scene_with, signed_distances, union_distance
from .rest import lies_on_table
from .towers import BAND_MARGIN_MM, BAND_MIN_PX, BAND_P, FREE_SPACE_LIMIT, FREE_SPACE_TOL_MM, INLIER_MM

NEAR_MM = 80.0  # depth points this close (x, y) to a lying piece's centroid may be its tower's
ALREADY_MM = 12.0  # a fitted piece this close to the neighbour's place is that piece, found already
MIN_POINTS = 8  # the neighbour must explain this many depth points on its own
SINK_MM = 4.0  # a neighbour whose lowest corner lies deeper than this under the table is not there
BORROWED_MM = 6.0  # a fitted piece of the colour read this near the neighbour's points may be what was read
CAVITY_VIEW_COS = 0.3  # the camera this far round to the open base looks into the hollow
TABLE_RING_PX = 12  # the table round a neighbour's pixels, read to tell its colour from the table's


@dataclass(frozen=True)
class Neighbour:
    """A piece that may lie in a tower with a fitted one: where, and what of it shows."""

    piece: Piece
    where: str  # "under" (the fitted piece rests on it) or "on" (it rests on the fitted piece)
    own: np.ndarray  # which of the depth points near the fitted piece are its own


def _neighbours(p: Piece, pieces: list[Piece], new_id: str) -> list[tuple[Piece, str, Piece]]:
    """(neighbour, where, the upper piece of the pair): a piece of p's size that p rests on, and
    one that rests on p. Only one size: where the sizes differ, the larger piece's rim or the
    smaller one's tip shows dozens of pixels that the colour model reads whichever size is
    tried, and on rendered lying towers a small piece beyond a medium one's tip was added as a
    medium."""
    lift = rest_offset(p.size, p.size)
    under = replace(p, id=new_id, position=tuple(map(float, p.origin - p.axis * lift)))
    on = replace(p, id=new_id, position=tuple(map(float, p.origin + p.axis * lift)))
    return [(q, where, upper) for q, where, upper in ((under, "under", p), (on, "on", on))
            if float(q.vertices[:, 2].min()) > -SINK_MM
            and all(o.id == p.id or np.linalg.norm(o.origin - q.origin) >= ALREADY_MM for o in pieces)]


def _own_points(q: Piece, upper: Piece, rest: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """The points only `q` explains: near its surface, nearer to it than to the fitted pieces
    (`rest`: their union's distances), beyond the upper piece's base plane."""
    d = np.abs(signed_distances(q, pts))
    beyond = (pts - upper.origin) @ upper.axis < -BAND_MARGIN_MM
    return (d < INLIER_MM) & (d < np.abs(rest)) & beyond


def _read(colors: FrameColors, own: np.ndarray, pix: np.ndarray) -> ColorReading | None:
    """The colour model on the neighbour's own pixels, where it reads them BAND_P surely as a
    colour that the table round them does not read as (at least even odds)."""
    if own.sum() < max(MIN_POINTS, BAND_MIN_PX):
        return None
    got = colors.read(pix[own, 0], pix[own, 1])
    if got is None or got.p < BAND_P:
        return None
    table = _table_pixels(colors, pixel_box(pix[own]))
    near = colors.read(*table) if table is not None else None
    return None if near is not None and near.p >= 0.5 and near.color == got.color else got


def _table_pixels(colors: FrameColors, box: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The table's pixels (seen, within TABLE_MM of its plane) in `box` grown by TABLE_RING_PX.
    Why: the pixels at a piece's outline mix its colour with the table's and their depth with
    both, so on a green table a lying piece's outline read green 0.94-1.0 (tuning table 980034:
    three green pieces added on it)."""
    table_pts, seen = colors.heights
    h, w = seen.shape
    x0, y0 = (max(int(v) - TABLE_RING_PX, 0) for v in box[:2])
    x1, y1 = min(int(box[2]) + TABLE_RING_PX, w), min(int(box[3]) + TABLE_RING_PX, h)
    on = seen[y0:y1, x0:x1] & (np.abs(table_pts[y0:y1, x0:x1, 2]) < TABLE_MM)
    rows, cols = np.nonzero(on)
    return (rows + y0, cols + x0) if len(rows) else None


def _borrowed(color: str, own: np.ndarray, p: Piece, pieces: list[Piece]) -> bool:
    """Whether a fitted piece of that colour (not p) comes within BORROWED_MM of the neighbour's
    points: their colour may be its, where its fit leaves a few of its points nearer the
    neighbour (tuning table 980054: a green large beside a blue small's base, read as a green
    small under it)."""
    return any(o.id != p.id and o.color == color and float(np.min(np.abs(signed_distances(o, own)))) < BORROWED_MM
               for o in pieces)


def _cavity_in_view(upper: Piece, camera_at: np.ndarray) -> bool:
    """Whether the camera looks into the upper piece's open base (CAVITY_VIEW_COS): what shows
    beyond its base plane is then partly a hollow in shadow, which reads black (tuning tables
    980007 and 980018: a yellow and a green medium lying base towards the camera, each given a
    black medium under it)."""
    to_camera = camera_at - upper.origin
    return float(-upper.axis @ to_camera) > CAVITY_VIEW_COS * float(np.linalg.norm(to_camera))


def _size_doubts(q: Piece, p: Piece, where: str) -> list[dict]:
    """A class doubt for each other size the neighbour could have: its colour is read, its size
    only assumed (p's own). A larger piece under p, or a smaller one on it, shows the same kind
    of rim (tuning table 990036: a black medium under a yellow small was added as a black small)."""
    fits_under = (lambda s: rest_offset(s, p.size) > 1.0) if where == "under" else (lambda s: rest_offset(p.size, s) > 1.0)
    return [{"kind": "class", "piece": q.id, "color": q.color, "size": s} for s in SIZES if s != q.size and fits_under(s)]


def find_lying_towers(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights,
                      table, colors: FrameColors
                      ) -> tuple[Scene, list[PieceFit], Detections, list, list[dict]]:
    """The scene with the lying towers' neighbours read by their colour; each gets the box of its
    own pixels as its detection (no verdict: the classifier did not find it) and an "absent"
    doubt. `colors`: the frame's colour model, shared with the towers and nested stages."""
    if colors.reader is None:
        return scene, fits, detections, verdicts, []
    cfg = RelationsConfig()
    table_pts, seen = heights
    up = seen & (table_pts[..., 2] > 2.5)
    pix = np.argwhere(up)
    P = table_pts[up].astype(np.float64)
    camera_at = table.matrix[:3, 3]
    pieces, fits = list(scene.pieces), list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    doubts: list[dict] = []
    for i in range(len(scene.pieces)):
        p = pieces[i]
        if not lies_on_table(p, cfg):
            continue
        c = p.vertices.mean(axis=0)
        sel = np.flatnonzero((np.abs(P[:, 0] - c[0]) < NEAR_MM) & (np.abs(P[:, 1] - c[1]) < NEAR_MM))
        if len(sel) < MIN_POINTS:
            continue
        pts, px = P[sel], pix[sel]
        rest = union_distance([o for o in pieces if np.linalg.norm(o.origin[:2] - p.origin[:2]) < 2 * NEAR_MM], pts)
        best = None
        for q, where, upper in _neighbours(p, pieces, next_piece_id(pieces)):
            own = _own_points(q, upper, rest, pts)
            if best is not None and own.sum() <= best[1].sum():
                continue
            got = _read(colors, own, px)
            if got is None or got.color == p.color or _borrowed(got.color, pts[own], p, pieces):
                continue
            if got.color == "black" and _cavity_in_view(upper, camera_at):
                continue
            fs = _free_space(q.size, q.matrix, q.origin, frame.depth_mm, table.to_camera, frame.intrinsics,
                             FREE_SPACE_TOL_MM)
            if fs > FREE_SPACE_LIMIT:
                continue
            best = (replace(q, color=got.color), own, got, where, fs)
        if best is None:
            continue
        q, own, got, where, fs = best
        k = len(detections)
        detections = detections.plus(pixel_box(px[own]), f"{q.color}_{q.size}", got.p)
        verdicts.append(None)
        pieces.append(q)
        sd = signed_distances(q, pts[own])
        fits.append(PieceFit(q, float(np.sqrt(np.mean(sd ** 2))), int(own.sum()), fs, f"lying {where}", got.p, k))
        doubts.append({"kind": "absent", "piece": q.id, "confidence": round(got.p, 3), "why": "band",
                       "then": [p.to_dict()]})
        doubts += _size_doubts(q, p, where)
    if len(pieces) == len(scene.pieces):
        return scene, fits, detections, verdicts, doubts
    return scene_with(scene, pieces, fits), fits, detections, verdicts, doubts
