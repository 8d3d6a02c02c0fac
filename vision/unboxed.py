"""Pieces depth shows that no detection boxed, read by the classifier and fitted.

Why: on the tuning set (seeds 900000-900059) 51 of the 119 visible pieces missed had no
detection near them at all, yet most stand out of the table in depth as a blob no fitted piece
explains (the "missed" doubt). The second-stage classifier reads any box at metric scale, so a
blob's box can be asked what it is.

How: each unexplained blob of at least MIN_BLOB_PX pixels (vision/doubts.py) gets the
classifier's verdict on its box; when it reads a pyramid with p >= MIN_P, or only its colour that
surely (`candidates`: then each size the verdict names), the blob's points, grown down to the
piece's foot (`blob_points`), are fitted as that piece (every hypothesis), and the piece is kept
when the fit is good (RMS under MAX_RMS_MM, free space under MAX_FREE_SPACE; of two sizes, the one
explaining more points). The limits were 2.0 mm and 0.15 until session 16: the truth poses of
two red pieces on a red table (900023, 900027) scored free space 0.09 and 0.13 on such points.
It gets the blob's box as its detection and the verdict, so class and absent doubts treat it
like any other piece, and an "unboxed" doubt (it may be any piece standing there, or none: the
Master hears of it where that changes a mark); a blob that is not read stays a "missed" doubt.
"""
from __future__ import annotations

import numpy as np

from zendo.scene import Piece, Scene

from .classes import PYRAMID_CLASSES
from .detect import Detections
from .doubts import unexplained, unexplained_blobs
from .pose import (
    MIN_POINTS,
    PieceFit,
    PoseConfig,
    consensus,
    fit_piece,
    next_piece_id,
    pixel_box,
    posed,
    rms_of,
    scene_with,
)

MIN_BLOB_PX = 80  # a blob this big (pixels) is worth reading (a small piece shows 60-150)
MIN_P = 0.7  # the classifier must read a pyramid this surely
MAX_RMS_MM = 2.5
MAX_FREE_SPACE = 0.25
GROW_PX = 2  # a blob's points: its pixels grown by this much, down to the table cut (its foot too)
INLIER_MM = 2.0  # between two sizes: the one explaining more points within this (pose.consensus)


def candidates(v) -> list[tuple[str, str]]:
    """The (colour, size) worth fitting to a blob: the verdict's reading when it is sure; when only
    its colour is sure (a red piece on a red table: red large 0.48, red medium 0.41), that colour
    in each size the verdict names, for depth to choose between."""
    if v is None:
        return []
    if v.class_id < len(PYRAMID_CLASSES) and v.confidence >= MIN_P:
        return [tuple(PYRAMID_CLASSES[v.class_id].split("_"))]
    color, p = v.color()
    if color is None or p < MIN_P:
        return []
    named = [PYRAMID_CLASSES[c].split("_") for c in (v.class_id, v.runner_up) if c < len(PYRAMID_CLASSES)]
    return [(c, s) for c, s in named if c == color]


def blob_points(pix: np.ndarray, free: np.ndarray, table_pts: np.ndarray) -> np.ndarray:
    """The blob's points: its pixels grown by GROW_PX, where `free` (above the table cut and
    unexplained). Why: the blob itself is cut at the doubts' height (5 mm) and opened, and a fit
    without a piece's foot drifted (900023: a red large read tilted, free space 0.16)."""
    import cv2

    h, w = free.shape
    y0, x0 = np.maximum(pix.min(axis=0) - GROW_PX, 0)
    y1, x1 = np.minimum(pix.max(axis=0) + GROW_PX + 1, (h, w))
    m = np.zeros((y1 - y0, x1 - x0), np.uint8)
    m[pix[:, 0] - y0, pix[:, 1] - x0] = 1
    m = cv2.dilate(m, np.ones((2 * GROW_PX + 1,) * 2, np.uint8)).astype(bool) & free[y0:y1, x0:x1]
    ys, xs = np.nonzero(m)
    return table_pts[ys + y0, xs + x0].astype(np.float64)


def read_blobs(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights, table,
               cfg: PoseConfig, classifier) -> tuple[Scene, list[PieceFit], Detections, list, list[dict]]:
    """The scene with the pieces the unexplained blobs are (see the module's docstring), and an
    "unboxed" doubt for each: seen in depth only, it may be any piece standing there, or none."""
    if classifier is None:
        return scene, fits, detections, verdicts, []
    table_pts, seen = heights
    pieces, fits = list(scene.pieces), list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    free = unexplained(scene, table_pts, seen & (table_pts[..., 2] > cfg.table_cut_mm))
    for pix in unexplained_blobs(scene, detections, table_pts, seen, free):
        if len(pix) < MIN_BLOB_PX:
            continue
        box = pixel_box(pix)
        v = classifier.read_box(frame, table, box, heights)
        cands = candidates(v)
        if not cands:
            continue
        pts = blob_points(pix, free, table_pts)
        if len(pts) < MIN_POINTS:
            continue
        if len(pts) > cfg.max_points:
            pts = pts[:: int(np.ceil(len(pts) / cfg.max_points))]
        best = _best_fit(cands, pts, frame, table, cfg, v.orientation, next_piece_id(pieces))
        if best is None:
            continue
        piece, rms, fs, name = best
        color, size = piece.color, piece.size
        k = len(detections)
        detections = detections.plus(box, f"{color}_{size}", v.confidence)
        verdicts.append(v)
        pieces.append(piece)
        fits.append(PieceFit(piece, rms, len(pts), fs, f"unboxed {name}", float(v.confidence), k))
    doubts = [{"kind": "unboxed", "piece": p.id} for p in pieces[len(scene.pieces):]]
    if not doubts:
        return scene, fits, detections, verdicts, doubts
    return scene_with(scene, pieces, fits), fits, detections, verdicts, doubts


def _best_fit(cands: list[tuple[str, str]], pts: np.ndarray, frame, table, cfg: PoseConfig, prior, pid: str
              ) -> tuple[Piece, float, float, str] | None:
    """The candidate that fits the blob like a piece (RMS, free space), and of two that do, the one
    that accounts for its points better (`pose.consensus`)."""
    best, best_score = None, -np.inf
    for color, size in cands:
        R, t, _, fs, name = fit_piece(size, pts, frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                      prior=prior)
        piece = posed(Piece(pid, color, size, (0.0, 0.0, 0.0)), R, t)
        rms = rms_of(piece, pts)
        if rms > MAX_RMS_MM or fs > MAX_FREE_SPACE:
            continue
        score = consensus(piece, pts, fs, INLIER_MM, cfg)
        if score > best_score:
            best, best_score = (piece, rms, fs, name), score
    return best
