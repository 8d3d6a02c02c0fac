"""Each piece's colour read again from its own pixels, once every pose is final.

Why: the crop classifier reads a piece from a 96 mm window round its box, so where a piece shows
little of itself beside a larger neighbour, the window is mostly the neighbour and so can be the
reading (tuning tables: a blue small read green beside a green large). The colour model
(vision/colors.py) reads a pixel set alone, and once the poses are fitted the pixels that are a
piece's own are known in 3-D: those on its fitted solid and nearer to it than to any other piece.

What it does with a disagreement, measured on the tuning tables (900000-, 920000-; 30 and 35
pieces of the wrong colour among 828 and 886 matched):
- the colour model sure (p >= RECOLOR_P) and the classifier not (p < TRUSTED_P): the piece takes
  the colour model's colour (6 and 7 pieces changed; 5 and 6 of them to the right colour); the
  classifier's reading stays a class doubt, as every runner-up does;
- otherwise, the colour model's reading with p >= DOUBT_P is a class doubt (9 and 15 of the
  wrong colours get one, 5 and 6 right ones too).
Pieces no classifier verdict stands behind (a tower's lower piece, a nested one, one found in
depth alone) took their colour from the colour model already, from the pixels their stage chose.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from zendo.scene import Piece, Scene
from zendo.shapes import near_pairs

from .classify import pyramid_verdict
from .colors import TABLE_MM, FrameColors
from .pose import PieceFit, signed_distances
from .towers import carries, shaded_doubts, stands_on_table

RECOLOR_P = 0.99
TRUSTED_P = 0.9
DOUBT_P = 0.5
TOWER_READ_P = 0.5  # both readings this sure, of an upright piece on the table: see `two_colours_doubt`
OWN_MM = 2.0  # a point this close to a piece's solid ...
CLEAR_MM = 1.0  # ... and this much nearer to it than to any other piece's is its own
REACH_MM = 10.0  # pieces farther apart than their bounding spheres and this cannot share a pixel


def own_pixels(piece: Piece, neighbours: list[Piece], table_pts: np.ndarray, up: np.ndarray,
               project: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Image rows and columns of the points on this piece's fitted solid, clear of its
    neighbours (the pieces whose solids could come within reach of it)."""
    h, w = up.shape
    uv = project(piece.vertices)
    x0, y0 = (max(0, int(np.floor(v)) - 2) for v in uv.min(axis=0))
    x1, y1 = min(w, int(np.ceil(uv[:, 0].max())) + 3), min(h, int(np.ceil(uv[:, 1].max())) + 3)
    if x1 <= x0 or y1 <= y0:
        return np.zeros(0, int), np.zeros(0, int)
    ys, xs = np.nonzero(up[y0:y1, x0:x1])
    ys, xs = ys + y0, xs + x0
    pts = table_pts[ys, xs].astype(np.float64)
    mine = signed_distances(piece, pts)
    keep = mine < OWN_MM
    for q in neighbours:
        if not keep.any():
            break
        keep[keep] &= mine[keep] < signed_distances(q, pts[keep]) - CLEAR_MM
    return ys[keep], xs[keep]


def neighbours(pieces: list[Piece]) -> list[list[Piece]]:
    """For each piece, the others whose bounding spheres come within REACH_MM of its own (a
    solid's face-plane distance is no true distance beyond its corners, so with room to spare)."""
    out: list[list[Piece]] = [[] for _ in pieces]
    for i, j in near_pairs(pieces, REACH_MM):
        out[i].append(pieces[j])
        out[j].append(pieces[i])
    return out


def two_colours_doubt(piece: Piece, crop_p: float, got, neighbours: list[Piece]) -> list[dict]:
    """A "stacked" doubt ("where": "on", "why": "colours") on an upright piece on the table whose
    crop the classifier reads as one colour and whose own pixels the colour model reads as
    another, each at least TOWER_READ_P sure, where no neighbour has the crop's colour (the
    crop's window round a small piece is mostly a larger neighbour's: the reason this stage is).

    Why: a tower of one size read as one piece shows one colour on top and the lower pieces'
    colours in bands under it; the crop's reading and the piece's own pixels (on its fitted
    solid, which sits at the tower's foot) can then each be one of them. Fresh 410649 and 411224:
    towers of three smalls (blue on yellow on green; green on blue on blue) read as one small,
    the fit a few millimetres off the axis, so the tower stage's depth test saw through 0.4-0.5
    of the tower; the crop read blue (0.9), the pixels green (0.98, 0.99), and the class doubt
    alone offered only the one piece recoloured: "two or more upright pieces", "touching" and the
    colour rules marked wrong with no flag."""
    if not stands_on_table(piece):  # as the towers stage stacks
        return []
    if got.color == piece.color or got.p < TOWER_READ_P or crop_p < TOWER_READ_P:
        return []
    if any(q.color == piece.color for q in neighbours):
        return []
    return [{"kind": "stacked", "piece": piece.id, "where": "on", "why": "colours"}]


def shade_doubts(piece: Piece, got, neighbours: list[Piece]) -> list[dict]:
    """Class doubts (`"why": "shade"`, towers.shaded_doubts) of every colour but black and the
    piece's own where its own pixels read black (p >= DOUBT_P) and a neighbour rests on its tip:
    those pixels are then a band under the upper piece's rim, in its shadow, as a tower's lower
    band is (the towers stage reads such a band black in every colour too).

    Why: fresh 434930, green, blue and yellow larges one on another, the blue's 50 px band read
    black 0.99 and the piece recoloured black, its crop (the tower's) read yellow; "at least one
    green piece and at least one blue piece" needed the blue and the green unseen under it, and
    with no blue doubt the mark was wrong with no flag."""
    if got.color != "black" or got.p < DOUBT_P or not carries(piece, neighbours):
        return []
    return shaded_doubts(piece, {piece.color})


def check_colors(scene: Scene, fits: list[PieceFit], verdicts, heights: tuple[np.ndarray, np.ndarray],
                 project: Callable[[np.ndarray], np.ndarray], colors: FrameColors
                 ) -> tuple[Scene, list[PieceFit], list[dict]]:
    """The scene and fits with pieces recoloured where the colour model is sure and the
    classifier was not, and class doubts where the colour model reads another colour."""
    if colors.reader is None:
        return scene, fits, []
    table_pts, valid = heights
    up = valid & (table_pts[..., 2] > TABLE_MM)  # the table's own pixels are no piece's
    checked = [(f, v) for f in fits if (v := pyramid_verdict(f, verdicts)) is not None]
    around = dict(zip((f.piece.id for f in fits), neighbours([f.piece for f in fits])))
    readings = colors.read_many([own_pixels(f.piece, around[f.piece.id], table_pts, up, project) for f, _ in checked])
    recolored: dict[str, str] = {}
    doubts: list[dict] = []
    for (f, v), got in zip(checked, readings):
        p = f.piece
        if got is None or got.color == p.color:
            continue
        if got.p >= RECOLOR_P and v.confidence < TRUSTED_P:
            recolored[p.id] = got.color
        elif got.p >= DOUBT_P:
            doubts.append({"kind": "class", "piece": p.id, "color": got.color, "size": p.size, "p": round(got.p, 3)})
        doubts += shade_doubts(p, got, around[p.id])
        doubts += two_colours_doubt(p, v.confidence, got, around[p.id])
    if not recolored:
        return scene, fits, doubts
    scene = replace(scene, pieces=tuple(replace(p, color=recolored.get(p.id, p.color)) for p in scene.pieces))
    fits = [replace(f, piece=replace(f.piece, color=recolored[f.piece.id])) if f.piece.id in recolored else f
            for f in fits]
    return scene, fits, doubts
