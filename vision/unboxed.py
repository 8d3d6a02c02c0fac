"""Pieces depth shows that no detection boxed, read by the classifier and fitted.

Why: on the tuning set (seeds 900000-900059) 51 of the 119 visible pieces missed had no
detection near them at all, yet most stand out of the table in depth as a blob no fitted piece
explains (the "missed" doubt). The second-stage classifier reads any box at metric scale, so a
blob's box can be asked what it is.

How: each unexplained blob of at least MIN_BLOB_PX pixels (vision/doubts.py) gets the
classifier's verdict on its box; when it reads a pyramid with p >= MIN_P, the blob's points are
fitted as that piece (every hypothesis), and the piece is kept when the fit is good (RMS under
MAX_RMS_MM, free space under MAX_FREE_SPACE). It gets the blob's box as its detection and the
verdict, so class and absent doubts treat it like any other piece, and an "unboxed" doubt (it
may be any piece standing there, or none: the Master hears of it where that changes a mark); a
blob that is not read stays a "missed" doubt.
"""
from __future__ import annotations

import numpy as np

from zendo.scene import Piece, Scene

from .classes import PYRAMID_CLASSES
from .detect import Detections
from .doubts import unexplained_blobs
from .pose import (
    MIN_POINTS,
    PieceFit,
    PoseConfig,
    fit_piece,
    next_piece_id,
    pixel_box,
    posed,
    rms_of,
    scene_with,
)

MIN_BLOB_PX = 80  # a blob this big (pixels) is worth reading (a small piece shows 60-150)
MIN_P = 0.7  # the classifier must read a pyramid this surely
MAX_RMS_MM = 2.0
MAX_FREE_SPACE = 0.15


def read_blobs(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights, table,
               cfg: PoseConfig, classifier) -> tuple[Scene, list[PieceFit], Detections, list, list[dict]]:
    """The scene with the pieces the unexplained blobs are (see the module's docstring), and an
    "unboxed" doubt for each: seen in depth only, it may be any piece standing there, or none."""
    if classifier is None:
        return scene, fits, detections, verdicts, []
    table_pts, seen = heights
    pieces, fits = list(scene.pieces), list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    for pix in unexplained_blobs(scene, detections, table_pts, seen):
        if len(pix) < MIN_BLOB_PX:
            continue
        box = pixel_box(pix)
        v = classifier.read_box(frame, table, box, heights)
        if v is None or v.class_id >= len(PYRAMID_CLASSES) or v.confidence < MIN_P:
            continue
        color, size = PYRAMID_CLASSES[v.class_id].split("_")
        pts = table_pts[pix[:, 0], pix[:, 1]].astype(np.float64)
        if len(pts) < MIN_POINTS:
            continue
        if len(pts) > cfg.max_points:
            pts = pts[:: int(np.ceil(len(pts) / cfg.max_points))]
        R, t, _, fs, name = fit_piece(size, pts, frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                      prior=v.orientation)
        piece = posed(Piece(next_piece_id(pieces), color, size, (0.0, 0.0, 0.0)), R, t)
        rms = rms_of(piece, pts)
        if rms > MAX_RMS_MM or fs > MAX_FREE_SPACE:
            continue
        k = len(detections)
        detections = detections.plus(box, f"{color}_{size}", v.confidence)
        verdicts.append(v)
        pieces.append(piece)
        fits.append(PieceFit(piece, rms, len(pts), fs, f"unboxed {name}", float(v.confidence), k))
    doubts = [{"kind": "unboxed", "piece": p.id} for p in pieces[len(scene.pieces):]]
    if not doubts:
        return scene, fits, detections, verdicts, doubts
    return scene_with(scene, pieces, fits), fits, detections, verdicts, doubts

