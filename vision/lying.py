"""Towers laid on their side: the lower piece the detector folded into a lying one, found by its colour.

Why: a tower of one size laid down shows its lower piece only as a rim 5.5 mm wide beyond the
upper one's base; the detector draws one box round both and the fit takes the upper pyramid. On
the tuning tables (900000-, 920000-, 930000-, 980000-, 990000-) 34 lower pieces of same-size
lying towers of two colours were missed so; the towers stage (vision/towers.py) looks only round
upright pieces, the nested stage (vision/nested.py) only into lying pieces' cavities, and the
"stacked" doubt is raised for lying mediums and larges only (990053: a green small under a
yellow small, 86 px of it showing, left five marks wrong and unflagged).

How: for each fitted piece lying on the table, the piece of its size it could rest on, where no
fitted piece is. That piece's own depth points are those within INLIER_MM of it, nearer to it
than to any fitted piece, and beyond the fitted piece's base plane (short of it the faces of the
two lie within 1.5 mm of each other). It is added where the colour model (vision/colors.py) reads
their pixels BAND_P surely as a colour other than the fitted piece's and at most FREE_SPACE_LIMIT
of it lies where the camera saw through, unless something else explains the colour: the table
round the pixels reads the same (at a piece's outline pixels mix its colour with the table's),
a fitted piece of that colour comes within BORROWED_MM, or the colour is black (the rim beyond a
lying piece's base lies in its shadow, or shows its hollow). It gets an "absent" doubt, as the
towers stage's band pieces: a few pixels of colour are all it rests on; and a class doubt for
each larger size, whose rim shows alike. A rim of the fitted piece's own colour cannot be told
from it and is left to the "stacked" doubt.

A rim this stage cannot add, a small's that is black or has lost its depth, may still be doubted:
`rim_doubts`, on the final poses; and so may the band a lower piece of one size shows at the
foot of an upright piece fitted on the table where the tower stands.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from zendo.build import rest_offset, rest_origin
from zendo.pieces import SIZES
from zendo.relations import RelationsConfig
from zendo.scene import Piece, Scene

from .color_check import neighbours
from .colors import ColorReading, FrameColors
from .detect import Detections
from .heading import outline_masks
from .pose import PieceFit, _free_space, next_piece_id, pixel_box, scene_with, signed_distances, union_distance
from .rest import lies_on_table
from .towers import BAND_MARGIN_MM, FREE_SPACE_LIMIT, FREE_SPACE_TOL_MM, INLIER_MM, _band_color, stands_on_table

ALREADY_MM = 12.0  # a fitted piece this close to the neighbour's place is that piece, found already
BORROWED_MM = 6.0  # a fitted piece of the colour read this near the neighbour's points may be what was read
SHADOW_COLORS = ("black",)  # a rim read so may be the lying piece's shadow or hollow, not a piece
ABOVE_MM = 2.5  # depth points standing this far above the table are read (as the towers stage reads them)
WINDOW_PAD_PX = 3  # a point within INLIER_MM of a piece projects within this of its outline's box
RIM_MIN_PX = 15  # a lying small's rim (`rim_doubts`) must show this many pixels off the table,
RIM_OFF_SHARE = 0.5  # ... be off it this much (no depth, or depth over ABOVE_MM),
RIM_READ_P = 0.5  # ... and read as another colour this surely
UPRIGHT_RIM_MIN_PX = 8  # an upright piece's foot band (`rim_doubts`) must show this many pixels off the table,
UPRIGHT_RIM_OFF_SHARE = 0.3  # ... be off it this much,
UPRIGHT_RIM_READ_P = 0.9  # ... and read as another colour, not black, this surely


def _neighbour(p: Piece, pieces: list[Piece], new_id: str) -> Piece | None:
    """The piece of p's size that p could rest on (its tip in p's cavity, 5.5 mm back along p's
    axis), or None where a fitted piece is there already.

    Only one size: where the sizes differ, the larger piece's rim shows dozens of pixels that
    read the same whichever size is tried (on rendered lying towers a small piece beyond a medium
    one's tip was added as a medium). Not the piece that could rest on p either: on the tuning
    tables all three such pieces added were false (8-9 mm from any true piece)."""
    q = replace(p, id=new_id, position=tuple(map(float, p.origin - p.axis * rest_offset(p.size, p.size))))
    if any(o.id != p.id and np.linalg.norm(o.origin - q.origin) < ALREADY_MM for o in pieces):
        return None
    return q


def _own_points(q: Piece, upper: Piece, rest: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """The points only `q` explains: near its surface, nearer to it than to the fitted pieces
    (`rest`: their union's distances), beyond the upper piece's base plane."""
    d = np.abs(signed_distances(q, pts))
    beyond = (pts - upper.origin) @ upper.axis < -BAND_MARGIN_MM
    return (d < INLIER_MM) & (d < np.abs(rest)) & beyond


def _read(colors: FrameColors, own: np.ndarray, pix: np.ndarray) -> ColorReading | None:
    """The towers stage's band reading of the neighbour's own pixels (`towers._band_color`:
    BAND_MIN_PX pixels, BAND_P surely), where the table round them does not read as that colour
    (`FrameColors.like_table`)."""
    px = pix[own]
    got = _band_color(colors, px)
    return None if got is None or colors.like_table(got, pixel_box(px)) else got


def _borrowed(color: str, own: np.ndarray, p: Piece, pieces: list[Piece]) -> bool:
    """Whether a fitted piece of that colour (not p) comes within BORROWED_MM of the neighbour's
    points: their colour may be its, where its fit leaves a few of its points nearer the
    neighbour (tuning table 980054: a green large beside a blue small's base, read as a green
    small under it)."""
    return any(o.id != p.id and o.color == color and float(np.min(np.abs(signed_distances(o, own)))) < BORROWED_MM
               for o in pieces)


def _size_doubts(q: Piece, p: Piece) -> list[dict]:
    """A class doubt for each larger size the piece under p could have: its colour is read, its
    size only assumed (p's own), and a larger piece shows the same kind of rim (tuning table
    990036: a black medium under a yellow small was added as a black small)."""
    return [{"kind": "class", "piece": q.id, "color": q.color, "size": s} for s in SIZES
            if s != q.size and rest_offset(s, p.size) > 1.0]


def _near(q: Piece, heights, project) -> tuple[np.ndarray, np.ndarray]:
    """The depth points (table frame) standing above the table within INLIER_MM of q's bounding
    sphere (`PyramidSize.bounding_radius`), and their pixels (row, column): read in the window of q's projected outline, a few
    hundred pixels, not the frame's tens of thousands of points above the table."""
    table_pts, seen = heights
    h, w = seen.shape
    uv = project(q.vertices)
    x0, y0 = (max(int(np.floor(v)) - WINDOW_PAD_PX, 0) for v in uv.min(axis=0))
    x1, y1 = min(int(np.ceil(uv[:, 0].max())) + WINDOW_PAD_PX, w), min(int(np.ceil(uv[:, 1].max())) + WINDOW_PAD_PX, h)
    if x1 <= x0 or y1 <= y0:
        return np.zeros((0, 3)), np.zeros((0, 2), int)
    win = table_pts[y0:y1, x0:x1]
    rows, cols = np.nonzero(seen[y0:y1, x0:x1] & (win[..., 2] > ABOVE_MM))
    pts = win[rows, cols].astype(np.float64)
    keep = np.linalg.norm(pts - q.origin, axis=1) < q.dims.bounding_radius + INLIER_MM
    return pts[keep], np.stack([rows[keep] + y0, cols[keep] + x0], axis=1)


def _within_reach(q: Piece, pieces: list[Piece]) -> list[Piece]:
    """The fitted pieces whose solids may come within INLIER_MM of q's: only they can explain a
    point near q better than q does."""
    reach = q.dims.bounding_radius + INLIER_MM
    return [o for o in pieces if np.linalg.norm(o.origin - q.origin) < reach + o.dims.bounding_radius + INLIER_MM]


def find_lying_towers(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights,
                      table, project, colors: FrameColors
                      ) -> tuple[Scene, list[PieceFit], Detections, list, list[dict]]:
    """The scene with the lower pieces of lying towers read by their rims' colour; each gets the
    box of its rim's pixels as its detection (no verdict: the classifier did not find it), an
    "absent" doubt and class doubts for the larger sizes. `colors`: the frame's colour model,
    shared with the towers and nested stages; `project`: table points to pixels."""
    if colors.reader is None:
        return scene, fits, detections, verdicts, []
    cfg = RelationsConfig()
    pieces, fits = list(scene.pieces), list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    doubts: list[dict] = []
    for p in scene.pieces:
        if not lies_on_table(p, cfg):
            continue
        q = _neighbour(p, pieces, next_piece_id(pieces))
        if q is None:
            continue
        pts, px = _near(q, heights, project)
        own = _own_points(q, p, union_distance(_within_reach(q, pieces), pts), pts)
        got = _read(colors, own, px)
        if (got is None or got.color == p.color or got.color in SHADOW_COLORS
                or _borrowed(got.color, pts[own], p, pieces)):
            continue
        fs = _free_space(q.size, q.matrix, q.origin, frame.depth_mm, table.to_camera, frame.intrinsics,
                         FREE_SPACE_TOL_MM)
        if fs > FREE_SPACE_LIMIT:
            continue
        q = replace(q, color=got.color)
        k = len(detections)
        detections = detections.plus(pixel_box(px[own]), f"{q.color}_{q.size}", got.p)
        verdicts.append(None)
        pieces.append(q)
        sd = signed_distances(q, pts[own])
        fits.append(PieceFit(q, float(np.sqrt(np.mean(sd ** 2))), int(own.sum()), fs, "lying under", got.p, k))
        doubts.append({"kind": "absent", "piece": q.id, "confidence": round(got.p, 3), "why": "band",
                       "then": [p.to_dict()]})
        doubts += _size_doubts(q, p)
    if len(pieces) == len(scene.pieces):
        return scene, fits, detections, verdicts, doubts
    return scene_with(scene, pieces, fits), fits, detections, verdicts, doubts


def _rim_pixels(q: Piece, covering: list[Piece], project, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The image rows and columns inside q's projected outline and outside every piece's of
    `covering`: where a piece at q's place shows beyond the pieces in front of it."""
    h, w = shape
    uv = project(q.vertices)
    x0, y0 = (max(int(np.floor(v)), 0) for v in uv.min(axis=0))
    x1, y1 = min(int(np.ceil(uv[:, 0].max())) + 1, w), min(int(np.ceil(uv[:, 1].max())) + 1, h)
    if x1 <= x0 or y1 <= y0:
        return np.zeros(0, int), np.zeros(0, int)
    win = (y1 - y0, x1 - x0)
    rim = outline_masks(q.vertices[None], project, x0, y0, win)[0]
    front = _reaching(covering, project, (x0, y0, x1, y1))
    if len(front):
        rim &= ~outline_masks(front, project, x0, y0, win).any(axis=0)
    rows, cols = np.nonzero(rim)
    return rows + y0, cols + x0


def _reaching(pieces: list[Piece], project, window: tuple[int, int, int, int]) -> np.ndarray:
    """The corners (N x 5 x 3) of those pieces whose projected outline comes within a pixel of
    the window (x0, y0, x1, y1). Why: the band test asks this of every upright piece against
    every other piece on the table, and a far one's outline covers none of the window."""
    if not pieces:
        return np.zeros((0, 5, 3))
    corners = np.array([o.vertices for o in pieces])
    uv = project(corners.reshape(-1, 3)).reshape(len(pieces), -1, 2)
    lo, hi = uv.min(axis=1), uv.max(axis=1)
    x0, y0, x1, y1 = window
    near = (hi[:, 0] >= x0 - 1) & (lo[:, 0] <= x1) & (hi[:, 1] >= y0 - 1) & (lo[:, 1] <= y1)
    return corners[near]


@dataclass(frozen=True)
class RimTest:
    """How surely a rim must show another piece: at least `min_px` pixels off the table (no
    depth there, or depth over ABOVE_MM), `off_share` of the rim so, read `read_p` surely as a
    colour not in `never`."""
    min_px: int
    off_share: float
    read_p: float
    never: tuple[str, ...] = ()


LYING_RIM = RimTest(RIM_MIN_PX, RIM_OFF_SHARE, RIM_READ_P)
UPRIGHT_RIM = RimTest(UPRIGHT_RIM_MIN_PX, UPRIGHT_RIM_OFF_SHARE, UPRIGHT_RIM_READ_P, SHADOW_COLORS)


def _shows_other(p: Piece, rim: tuple[np.ndarray, np.ndarray], around: list[Piece], heights, colors: FrameColors,
                 test: RimTest) -> bool:
    """Whether the rim's off-table pixels pass `test` as a colour that is not p's, not a
    neighbour's (whose pixels a rim may hold) and not the table's round them."""
    table_pts, seen = heights
    rows, cols = rim
    if len(rows) == 0:
        return False
    off = ~seen[rows, cols] | (table_pts[rows, cols, 2] > ABOVE_MM)
    if off.sum() < test.min_px or off.mean() < test.off_share:
        return False
    rows, cols = rows[off], cols[off]
    got = colors.read(rows, cols)
    return not (got is None or got.p < test.read_p or got.color == p.color or got.color in test.never
                or got.color in {o.color for o in around}
                or colors.like_table(got, pixel_box(np.stack([rows, cols], axis=1))))


def rim_doubts(scene: Scene, heights, project, colors: FrameColors, doubts: list[dict]) -> list[dict]:
    """A "stacked" doubt ("why": "rim") for each piece, with no stacked doubt in `doubts` yet,
    where a lower piece of its size would show a rim of another colour: for a small lying on the
    table ("where": "in"), `_neighbour`'s place outside every fitted piece's outline, tested by
    LYING_RIM; for a piece standing upright on the table ("where": "under"), its own outline
    outside the outline it would have lifted onto a piece of its size (`rest_offset`) and
    outside every other piece's, tested by UPRIGHT_RIM (`_shows_other`).

    Why, beside `find_lying_towers`: that stage adds a rim's piece from its depth points and
    never a black one (a lying piece's shadow and hollow are dark). Fresh 420146: a red small
    lying on a black one, the black one's 64 px a dark band at the red one's base end, with the
    depth dropped over both (20 of the band's 72 pixels had depth): no box, no piece added, and
    "exactly two pieces" and three more marks wrong with no flag. A shadow lies on the table,
    which depth sees; a rim stands off it. Measured on the final scenes of the five tuning sets
    (497 lying smalls) before it was built: one small got the doubt, a true nest (900039, a red
    small under a yellow one, its rim without depth); on fresh 419800- one, 420146.

    Why upright, beside the towers stage (which adds a lower piece from its band's depth points)
    and `color_check`'s "stacked" doubt (which needs the crop and the piece's pixels to read two
    colours): fresh 420312, a yellow small on a blue one read as one yellow small standing on
    the table, fitted at the blue one's place; the blue showed as a 30 px band under the
    yellow's outline lifted, 12 px of it off the table (8 without depth), read blue 0.995, and
    five marks were wrong with no flag. The band sits in the piece's own shadow, so black is
    never taken (UPRIGHT_RIM.never). Measured on the final scenes of the five tuning sets (2,435
    upright pieces on the table) before it was built: one piece got the doubt, a true tower
    (920058, a yellow medium on a green one); at 6 px and 0.2 off, three (two true); with black
    taken at 0.8, nine (one true: the rest were shadows)."""
    if colors.reader is None:
        return []
    cfg = RelationsConfig()
    pieces = list(scene.pieces)
    have = {d["piece"] for d in doubts if d["kind"] == "stacked"}
    around = neighbours(pieces)
    shape = heights[1].shape
    out = []
    for i, p in enumerate(pieces):
        if p.id in have:
            continue
        if p.size == "small" and lies_on_table(p, cfg):
            q = _neighbour(p, pieces, f"{p.id}-rim")
            if q is not None and _shows_other(p, _rim_pixels(q, pieces, project, shape), around[i], heights, colors,
                                              LYING_RIM):
                out.append({"kind": "stacked", "piece": p.id, "where": "in", "why": "rim"})
        elif stands_on_table(p):
            lifted = replace(p, position=tuple(map(float, rest_origin(p, p.size))))
            covering = [o for o in pieces if o.id != p.id] + [lifted]
            if _shows_other(p, _rim_pixels(p, covering, project, shape), around[i], heights, colors, UPRIGHT_RIM):
                out.append({"kind": "stacked", "piece": p.id, "where": "under", "why": "rim"})
    return out
