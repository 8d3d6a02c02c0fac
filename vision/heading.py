"""Which way a piece lying on the table points, read from its outline in colour.

Why: depth settles how a lying piece lies but not well which way it points. Its tip rests on the
table, where the piece is thinnest and stereo noise (1.5-2.7 mm) is as large as what it shows, so
the fit turns the piece about its middle to wherever the noise fits best: on the tuning tables
(900000-) 12 % of the pieces lying on the table came out more than 10 degrees off (most 10-23
degrees: the refined fit stayed near the heading it started from), and a few pointed the wrong
way altogether (110-140 degrees off). Pointing, touching and "same direction" read that heading.
The colour picture shows the piece's outline sharply; turning the fitted piece about its
centroid until its projected outline covers the piece's colour best (intersection over union)
took the median heading error of those pieces from 2.7 to 1.7 degrees and the share off by more
than 10 degrees from 12 % to 5 %; the tip moves, the rest of the pose does not.

- Which pixels are the piece's colour: those nearer, in Lab (lightness weighing 0.3, since the
  faces of one piece are shaded differently), to the median of the pixels inside its fitted
  outline than to the median of the table pixels round it (under TABLE_MM, outside every outline).
- Pixels inside another piece's outline are left out of the score: a neighbour may hide part of
  this one, or show this one's colour.
- Turns within NEAR_DEG of the fit are taken on the outline alone; a turn farther (the fit
  pointing the wrong way) needs FAR_GAIN more overlap than the best near one, since a small piece
  half hidden has an outline that fits several ways about as well.
- A turn that would push the piece into a neighbour is not taken.
Upright against flat was measured too: the outline preferred the truth for 1 of 5 small
upright pieces fitted lying, so it does not decide that.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import cv2
import numpy as np

from zendo.relations import RelationsConfig, orientation
from zendo.scene import Piece, Scene
from zendo.shapes import solid_distance

from .pose import PieceFit

NEAR_DEG = 30.0  # turns within this of the fit are taken on the outline alone
STEP_DEG = 2.5
FAR_STEP_DEG = 10.0  # the coarse look all round, refined by STEP_DEG about its best
FAR_GAIN = 0.10  # a turn beyond NEAR_DEG must cover this much more (IoU) than the best near one
ON_TABLE_MM = 1.0  # a piece whose lowest corner is this close to the table lies on it
TABLE_MM = 1.0  # a pixel this close to the table plane is the table
MARGIN_PX = 25  # the window round a piece's outline: room for every turn of it
L_WEIGHT = 0.3
MIN_OWN_PX = 5
MIN_TABLE_PX = 20
INTO_MM = 1.0  # a turn may not push a piece this far into a neighbour (unless it was already)

Project = Callable[[np.ndarray], np.ndarray]


def turned(piece: Piece, deg: float) -> Piece:
    """The piece turned about the vertical through its centroid."""
    a = np.radians(deg)
    c, s = np.cos(a), np.sin(a)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    mid = piece.vertices.mean(axis=0)
    return piece.moved(R, mid - R @ mid)


def outline(piece: Piece, project: Project, x0: int, y0: int, shape: tuple[int, int]) -> np.ndarray:
    """The piece's projected outline (the hull of its corners) as a mask of the window at (x0, y0)."""
    uv = project(piece.vertices) - (x0, y0)
    m = np.zeros(shape, np.uint8)
    hull = cv2.convexHull(np.round(uv * 4).astype(np.int32))
    cv2.fillConvexPoly(m, hull, 1, shift=2)
    return m.astype(bool)


def colour_mask(lab: np.ndarray, own: np.ndarray, table: np.ndarray) -> np.ndarray | None:
    """Pixels nearer the piece's colour (median over `own`) than the table's (over `table`)."""
    if own.sum() < MIN_OWN_PX or table.sum() < MIN_TABLE_PX:
        return None
    w = np.array([L_WEIGHT, 1.0, 1.0], np.float32)
    d_own = (((lab - np.median(lab[own], axis=0)) * w) ** 2).sum(axis=-1)
    d_table = (((lab - np.median(lab[table], axis=0)) * w) ** 2).sum(axis=-1)
    return d_own < d_table


def _iou(a: np.ndarray, b: np.ndarray, valid: np.ndarray) -> float:
    union = ((a | b) & valid).sum()
    return float((a & b & valid).sum()) / max(int(union), 1)


def best_turn(piece: Piece, others: list[Piece], lab: np.ndarray, height: np.ndarray,
              project: Project) -> float:
    """The turn (degrees) whose outline covers the piece's colour best; 0 when the picture
    cannot tell (too few of its own or of the table's pixels in view)."""
    h, w = height.shape
    uv = project(piece.vertices)
    size = float(np.ptp(uv, axis=0).max())
    cx, cy = uv.mean(axis=0)
    reach = size + MARGIN_PX
    x0, y0 = max(0, int(cx - reach)), max(0, int(cy - reach))
    x1, y1 = min(w, int(cx + reach) + 1), min(h, int(cy + reach) + 1)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return 0.0
    shape = (y1 - y0, x1 - x0)
    covered = np.zeros(shape, bool)
    for q in others:
        covered |= outline(q, project, x0, y0, shape)
    mine = outline(piece, project, x0, y0, shape)
    own = cv2.erode(mine.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool) & ~covered
    table = (height[y0:y1, x0:x1] < TABLE_MM) & ~covered & ~mine
    mask = colour_mask(lab[y0:y1, x0:x1], own, table)
    if mask is None:
        return 0.0
    valid = ~covered

    def score(deg: float) -> float:
        return _iou(outline(turned(piece, deg), project, x0, y0, shape), mask, valid)

    near = {float(d): score(d) for d in np.arange(-NEAR_DEG, NEAR_DEG + 1e-6, STEP_DEG)}
    near_best = max(near, key=lambda d: (near[d], -abs(d)))
    far = {float(d): score(d) for d in np.arange(-180.0, 180.0, FAR_STEP_DEG) if abs(d) > NEAR_DEG + 1e-6}
    if far:
        coarse = max(far, key=far.get)
        far.update({coarse + s: score(coarse + s) for s in (-STEP_DEG, STEP_DEG)})
        far_best = max(far, key=far.get)
        if far[far_best] >= near[near_best] + FAR_GAIN:
            return far_best
    return near_best


def _lying_on_table(piece: Piece, cfg: RelationsConfig) -> bool:
    return float(piece.vertices[:, 2].min()) < ON_TABLE_MM and orientation(piece, cfg).value == "flat"


def _pushes_in(new: Piece, old: Piece, others: list[Piece]) -> bool:
    for q in others:
        if float(np.linalg.norm(q.origin[:2] - old.origin[:2])) > q.dims.height + old.dims.height + 5.0:
            continue
        if solid_distance(new, q) < -INTO_MM and solid_distance(old, q) >= -INTO_MM:
            return True
    return False


def check_headings(rgb: np.ndarray, scene: Scene, fits: list[PieceFit], heights,
                   project: Project) -> tuple[Scene, list[PieceFit]]:
    """Every piece lying on the table turned to where its outline covers its colour best."""
    cfg = RelationsConfig()
    pieces = list(scene.pieces)
    if not any(_lying_on_table(p, cfg) for p in pieces):
        return scene, fits
    table_pts, valid = heights
    height = np.where(valid, table_pts[..., 2], np.inf)
    lab = cv2.cvtColor(rgb, cv2.COLOR_RGB2LAB).astype(np.float32)
    by_id = {}
    for i, p in enumerate(pieces):
        if not _lying_on_table(p, cfg):
            continue
        others = pieces[:i] + pieces[i + 1:]
        deg = best_turn(p, others, lab, height, project)
        if abs(deg) < 1e-6:
            continue
        new = turned(p, deg)
        if _pushes_in(new, p, others):
            continue
        pieces[i] = by_id[p.id] = new
    if not by_id:
        return scene, fits
    fits = [replace(f, piece=by_id[f.piece.id]) if f.piece.id in by_id else f for f in fits]
    return replace(scene, pieces=tuple(pieces)), fits
