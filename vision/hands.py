"""A hand (or arm) over the table, found in depth, and the part of the table it hides.

Why: players reach over koans all game long (building, putting stones down, taking a piece back).
Measured with rendered hands (`zendo eval-tracking --make DIR --hands`, docs/perception.md
"Hands over the table"), a hand in view did three kinds of harm: the detector read pieces on the
skin and the sleeve (phantoms, shown once read three frames running), the pieces under the hand
went unread and were dropped, and the pieces at its edge, half hidden, were fitted off their
places and "moved". Each of those raised katsu on a koan nobody touched.

What a hand is here: something wide standing well above the table. No piece is: a pyramid's
cross-section narrows as it rises, and at HAND_ABOVE_MM above the table even a lying large or a
piece across two tips is under 26 mm across, while a palm is 80 mm and an arm 60 mm. So the
pixels standing that high are eroded with a disk of HAND_CORE_MM: where anything survives, the
part standing high it lies in is a hand (with whatever touches it in the picture at that height:
a piece under the hand's edge, which the tracker holds all the same). The frame's later stages
do not read its pixels, no detection on it is fitted, and the tracker holds every piece within
HAND_REACH_MM of the table's part it hides (`hidden`) as it was until the hand has gone.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

HAND_ABOVE_MM = 20.0  # what stands this far above the table and is wide ...
HAND_CORE_MM = 18.0  # ... enough to hold a disk of this radius there is a hand (no piece is)
HAND_EDGE_PX = 6  # the hand's outline grown by this much: flying depth pixels at its edge
HAND_REACH_MM = 25.0  # a piece this near the table's part a hand hides is held too: a finger reaches down
BOX_ON_HAND = 0.3  # a detection box this much on the hand is not a piece


@dataclass(frozen=True)
class Hands:
    """The hands of one frame: their pixels, and the table's part each hides from the camera."""

    mask: np.ndarray  # (H, W) bool: the hands' pixels, outline grown by HAND_EDGE_PX
    footprints: tuple[np.ndarray, ...]  # per hand, a convex polygon (N, 2) on the table, mm

    def to_dict(self) -> list[list[list[float]]]:
        """For the scene's perception block ("hands"): each hand's hidden part as a polygon."""
        return [[[round(float(x), 1), round(float(y), 1)] for x, y in f] for f in self.footprints]


def find_hands(heights: tuple[np.ndarray, np.ndarray], intr, camera_to_table: np.ndarray) -> Hands | None:
    """The hands in a frame's height map (calibration.plane.height_map), or None where there is none."""
    pts, valid = heights
    high = (valid & (pts[..., 2] > HAND_ABOVE_MM)).astype(np.uint8)
    if not high.any():
        return None
    high = cv2.morphologyEx(high, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))  # the depth's holes in a palm
    cam = np.asarray(camera_to_table, float)
    eye = cam[:3, 3]
    few = pts[::4, ::4][high[::4, ::4] > 0]
    if not len(few):
        return None
    r = max(2.0, HAND_CORE_MM * intr.fx / max(float(np.median(np.linalg.norm(few - eye, axis=1))), 1.0))
    # eroded by a disk of radius r, as a distance transform (a fifth of cv2.erode's time with this disk)
    core = cv2.distanceTransform(high, cv2.DIST_L2, 3) > r
    if not core.any():
        return None
    # the whole of each high part a core lies in: an opening alone leaves a sleeve's edges, read as pieces
    n, labels = cv2.connectedComponents(high)
    keep = np.zeros(n, bool)
    keep[np.unique(labels[core])] = True
    keep[0] = False
    shape = keep[labels].astype(np.uint8)
    grown = cv2.dilate(shape, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * HAND_EDGE_PX + 1,) * 2))
    footprints = []
    sub_labels, sub_pts, sub_valid = labels[::2, ::2], pts[::2, ::2], valid[::2, ::2]
    for k in np.flatnonzero(keep):
        where = sub_pts[(sub_labels == k) & sub_valid]
        if len(where) < 3:
            continue
        # the table behind it: each point's line of sight carried down to the table
        s = eye[2] / np.maximum(eye[2] - where[:, 2], 1e-3)
        ground = eye[:2] + (where[:, :2] - eye[:2]) * s[:, None]
        hull = cv2.convexHull(np.vstack([where[:, :2], ground]).astype(np.float32))
        footprints.append(hull.reshape(-1, 2).astype(float))
    if not footprints:
        return None
    return Hands(grown > 0, tuple(footprints))


def off_hands(heights: tuple[np.ndarray, np.ndarray], hands: Hands | None) -> tuple[np.ndarray, np.ndarray]:
    """The height map with the hands' pixels unread: no later stage fits a piece to a hand."""
    if hands is None:
        return heights
    pts, valid = heights
    return pts, valid & ~hands.mask


def boxes_on_hands(boxes: np.ndarray, hands: Hands | None) -> np.ndarray:
    """(N,) bool: detection boxes (x0, y0, x1, y1) BOX_ON_HAND or more on a hand."""
    out = np.zeros(len(boxes), bool)
    if hands is None or not len(boxes):
        return out
    integral = cv2.integral(hands.mask.astype(np.uint8))
    h, w = hands.mask.shape
    for i, (x0, y0, x1, y1) in enumerate(np.asarray(boxes, float)):
        a, b = int(np.clip(np.floor(x0), 0, w)), int(np.clip(np.ceil(x1), 0, w))
        c, d = int(np.clip(np.floor(y0), 0, h)), int(np.clip(np.ceil(y1), 0, h))
        area = (b - a) * (d - c)
        if area <= 0:
            continue
        on = integral[d, b] - integral[c, b] - integral[d, a] + integral[c, a]
        out[i] = on >= BOX_ON_HAND * area
    return out


def hidden(points_xy: np.ndarray, footprints, reach_mm: float = HAND_REACH_MM) -> np.ndarray:
    """(N,) bool: table points within `reach_mm` of a hand's hidden part (footprints as polygons,
    lists or arrays, as `Hands.to_dict` writes them)."""
    pts = np.atleast_2d(np.asarray(points_xy, float))
    out = np.zeros(len(pts), bool)
    for f in footprints:
        poly = np.asarray(f, np.float32).reshape(-1, 1, 2)
        for i, (x, y) in enumerate(pts):
            if not out[i]:
                out[i] = cv2.pointPolygonTest(poly, (float(x), float(y)), True) >= -reach_mm
    return out
