"""A piece whose crop the classifier reads as torn towards a smaller size of its colour is sized by depth.

Why: the classifier reads size from a metric crop, and near a neighbour or half hidden it can be
torn (tuning tables: black medium 0.49 against black large 0.43). Depth measures millimetres:
fitted in each size, the right one explains the most of the piece's points without putting
plastic where the camera saw through (`pose.choose_size`). Depth as the size's judge for every
piece cost 2 points of colour x size on the tuning tables (its own errors on pieces the crop
reads surely), so it is asked only where the crop is torn: the classifier's runner-up is the same
colour in a smaller size with p >= TORN_P, and the reading itself under SURE_P. Only smaller: the
evidence against a larger size is direct (plastic where the camera saw through), while "a larger
size explains more of the box's points" is weak, since the extra points may be a missed
neighbour's. Of the pieces depth resized on three 60-table sets (900000-, 920000-, 930000-), 8 of
9 made smaller were right and 9 of 18 made larger (3 more matched no piece at all). A piece standing on
the table keeps its size where the other one would hover above it: a smaller size fitted to a
tower of two (a yellow small on a yellow medium reads as one large) rises to the points' top and
floats, and read as the large piece it was, its covers doubt still tells the Master.

A piece whose box the picture's edge cuts is sized by depth too, towards a larger size only: the
crop holds part of the piece, and the part of a large piece in view looks like a smaller piece
whole, while depth's case for a smaller size there is the same illusion in millimetres (the
larger size's plastic beyond the edge is where no camera saw through). On the five tuning sets,
depth let resize cut pieces either way made 4 larger (3 of them right) and 2 smaller (both wrong).
"""
from __future__ import annotations

from dataclasses import replace

from zendo.pieces import PYRAMID_SIZES, larger_sizes
from zendo.scene import Scene

from .classes import PYRAMID_CLASSES
from .detect import cut_by_edge
from .pose import (MIN_POINTS, REST_GROUNDED_MM, PieceFit, PoseConfig, choose_size, own_box_points, posed, rms_of,
                   scene_with)

TORN_P = 0.15
SURE_P = 0.8


def torn_towards_smaller(v) -> str | None:
    """The smaller size a verdict is torn towards, or None."""
    if v is None or v.class_id >= len(PYRAMID_CLASSES) or v.runner_up >= len(PYRAMID_CLASSES):
        return None
    color, size = PYRAMID_CLASSES[v.class_id].split("_")
    color2, size2 = PYRAMID_CLASSES[v.runner_up].split("_")
    if color2 != color or v.runner_up_p < TORN_P or v.confidence >= SURE_P:
        return None
    return size2 if PYRAMID_SIZES[size2].height < PYRAMID_SIZES[size].height else None


def sizes_for_depth(v, box, shape: tuple[int, int]) -> frozenset[str]:
    """The sizes depth may give a piece the classifier read as `v` (a pyramid) in `box`: the
    smaller one its reading is torn towards, and each larger one where the picture's edge cuts
    the box."""
    size = PYRAMID_CLASSES[v.class_id].split("_")[1]
    larger = larger_sizes(size) if cut_by_edge(box, shape) else ()
    return frozenset(larger) | {torn_towards_smaller(v)} - {None}


def check_sizes(frame, scene: Scene, fits: list[PieceFit], detections, verdicts, heights, table, cfg: PoseConfig
                ) -> tuple[Scene, list[PieceFit]]:
    """The scene and fits with each piece torn towards a smaller size, or cut by the picture's
    edge, refitted in the size depth prefers where that is one `sizes_for_depth` allows and the
    piece still stands where it stood."""
    if verdicts is None:
        return scene, fits
    table_pts, seen = heights
    up = seen & (table_pts[..., 2] > cfg.table_cut_mm)
    pieces, fits = list(scene.pieces), list(fits)
    changed = False
    for i, f in enumerate(fits):
        v = verdicts[f.detection] if 0 <= f.detection < len(verdicts) else None
        if (v is None or v.class_id >= len(PYRAMID_CLASSES) or f.hypothesis == "none"
                or PYRAMID_CLASSES[v.class_id] != f"{f.piece.color}_{f.piece.size}"):
            continue  # no pyramid read, not fitted, or a later stage's piece
        allowed = sizes_for_depth(v, detections.xyxy[f.detection], frame.color.shape[:2])
        if not allowed:
            continue  # neither torn nor cut
        pts, _ = own_box_points(detections, f, pieces, table_pts, up)
        if len(pts) < MIN_POINTS:
            continue
        p = f.piece
        best, R, t, _, fs = choose_size(p.size, p.matrix, p.origin, pts, frame.depth_mm, table.to_camera,
                                        frame.intrinsics, cfg)
        if best not in allowed:
            continue
        new = posed(replace(p, size=best), R, t)
        if float(p.vertices[:, 2].min()) <= REST_GROUNDED_MM < float(new.vertices[:, 2].min()):
            continue  # the other size explains the points only hovering: a tower, or the read size
        k = next(j for j, q in enumerate(pieces) if q.id == p.id)
        pieces[k] = new
        fits[i] = replace(f, piece=new, free_space=fs, rms_mm=rms_of(new, pts), other_size=p.size)
        changed = True
    return (scene_with(scene, pieces, fits), fits) if changed else (scene, fits)

