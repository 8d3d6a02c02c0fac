"""A piece nested in a lying one, read through the lying piece's open base.

Why: players lay a smaller piece inside a larger one; lying flat, the pair shows the outer
piece's faces and, where its base faces the camera, the inner piece's base inside the outer's
rim. Depth cannot tell (the bases share a plane), and the detector draws one box round both, so
on the tuning set (seeds 900000-900059) 12 of the 20 inner pieces showing at least 60 pixels were
missed. Their colour is plain to see, though, and the second-stage classifier reads any box at
metric scale.

How: for each medium or large piece lying on the table with its base towards the camera, each
smaller piece it could hold is placed in its cavity as it rests there (`zendo.doubts.nested_inside`,
against the lower wall: the covers doubt's geometry) and the classifier reads the box of that
piece's base in the image. A reading of that size, of a colour other than the outer piece's, with
p >= MIN_P is added; the best one per outer piece. A base a few pixels across leaves the
classifier torn between sizes (900006: red small 0.54, red medium 0.33), so a reading down to
SEEN_P also counts where the colour model (vision/colors.py) reads the same colour in the base's
own pixels. An inner piece of the outer's own colour cannot be told from the outer's cavity and
stays a covers doubt, as before.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from zendo.doubts import lies_low, nested_inside
from zendo.pieces import PYRAMID_SIZES, SIZES
from zendo.scene import Scene

from .classes import PYRAMID_CLASSES
from .colors import FrameColors
from .detect import Detections
from .pose import PieceFit, next_piece_id, scene_with

MIN_P = 0.7  # the classifier must read the inner piece this surely,
SEEN_P = 0.3  # or this surely where the colour model reads the same colour in its base's pixels
SEEN_COLOR_P = 0.8  # this surely (tuning sets: 4 and 5 more inner pieces found, 1 false one on each)
MIN_BASE_PX = 40.0  # the inner piece's base must cover this many pixels' box to be read
ALREADY_MM = 12.0  # a fitted piece this close to the nested place is that piece, found already


def _base_box(piece, project) -> np.ndarray:
    uv = project(piece.vertices[:4])
    return np.array([uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max(), uv[:, 1].max()], np.float32)


def _candidates(scene: Scene, camera_at: np.ndarray, project, shape) -> list[tuple[int, object, np.ndarray]]:
    """(outer index, inner piece, its base's box) for every place a piece could be nested and seen."""
    h, w = shape
    out = []
    for i, p in enumerate(scene.pieces):
        if p.size == "small" or not lies_low(p):
            continue
        if float(-p.axis @ (p.origin - camera_at)) >= 0:
            continue  # the open base faces away from the camera
        for s in SIZES:
            if PYRAMID_SIZES[s].height >= PYRAMID_SIZES[p.size].height:
                continue
            q = nested_inside(p, s, "inner", against_wall=True)
            if any(j != i and np.linalg.norm(o.origin - q.origin) < ALREADY_MM for j, o in enumerate(scene.pieces)):
                continue
            box = _base_box(q, project)
            if box[0] < 0 or box[1] < 0 or box[2] > w or box[3] > h:
                continue
            if (box[2] - box[0]) * (box[3] - box[1]) < MIN_BASE_PX:
                continue
            out.append((i, q, box))
    return out


def _base_color(colors: FrameColors, q, project) -> str | None:
    """The colour the colour model reads SEEN_COLOR_P surely in the pixels of the inner piece's
    base (its projected outline, a pixel in from the edge, where the outer's rim shows), or None."""
    import cv2

    poly = np.round(project(q.vertices[:4])).astype(np.int32)
    h, w = colors.rgb.shape[:2]
    x0, y0 = np.clip(poly.min(axis=0) - 1, 0, (w, h))  # the outline's box, a pixel wider: the
    x1, y1 = np.clip(poly.max(axis=0) + 2, 0, (w, h))  # erosion reads the same as on the frame
    if x1 <= x0 or y1 <= y0:
        return None  # out of the picture: no pixels to read
    m = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.fillConvexPoly(m, poly - (x0, y0), 1)
    rows, cols = np.nonzero(cv2.erode(m, np.ones((3, 3), np.uint8)))
    got = colors.read(rows + y0, cols + x0)
    return got.color if got is not None and got.p >= SEEN_COLOR_P else None


def find_nested(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights, table,
                project, classifier, colors: FrameColors) -> tuple[Scene, list[PieceFit], Detections, list]:
    """The scene with the nested pieces the classifier reads through lying pieces' bases; each
    gets its base's box as its detection and the verdict (so class doubts treat it like any
    other piece). `colors`: the frame's colour model, shared with the towers stage."""
    if classifier is None:
        return scene, fits, detections, verdicts
    cands = _candidates(scene, table.matrix[:3, 3], project, frame.depth_mm.shape)
    if not cands:
        return scene, fits, detections, verdicts
    probe = Detections(np.stack([b for _, _, b in cands]), np.zeros(len(cands), int), np.ones(len(cands), np.float32))
    read = classifier.verdicts(frame, table, probe, heights)
    best: dict[int, tuple] = {}  # outer index -> (inner piece, its base's box, verdict, colour)
    for (i, q, box), v in zip(cands, read):
        if v is None or v.class_id >= len(PYRAMID_CLASSES) or v.confidence < SEEN_P:
            continue
        color, size = PYRAMID_CLASSES[v.class_id].split("_")
        if size != q.size or color == scene.pieces[i].color:
            continue
        if v.confidence < MIN_P and _base_color(colors, q, project) != color:
            continue
        if i not in best or v.confidence > best[i][2].confidence:
            best[i] = (q, box, v, color)
    if not best:
        return scene, fits, detections, verdicts
    pieces, fits = list(scene.pieces), list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    for i in sorted(best):
        q, box, v, color = best[i]
        outer = fits[i]
        piece = replace(q, id=next_piece_id(pieces), color=color)
        k = len(detections)
        detections = detections.plus(box, f"{color}_{q.size}", v.confidence)
        verdicts.append(v)
        pieces.append(piece)
        # no depth points of its own (the outer's walls hide it): its pose is the outer's cavity's
        fits.append(PieceFit(piece, outer.rms_mm, 0, outer.free_space, "nested", float(v.confidence), k))
    return scene_with(scene, pieces, fits), fits, detections, verdicts
