"""A piece whose fit explains its depth very poorly is fitted again to the points of its own colour.

Why: a box round a small piece lying up on two others' tips also holds those pieces' points and
the points of pieces missed under it, and the fit to all of them puts the small piece on the
table 20-40 mm from where it lies (RMS 15-30 mm). Dropping such fits loses the true piece they
stand for (tuning sets: 27 more wrong marks), and fitting them to the box's unexplained points
does not move them (those points still mix several pieces, 7 to 47 mm high). So the unexplained
points are split into clusters in space (Open3D's DBSCAN) and the colour model reads each
cluster's pixels; the piece is fitted to the cluster that reads its own colour.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from zendo.scene import Scene

from .pose import MIN_POINTS, PieceFit, PoseConfig, fit_piece, own_box_points, posed, rms_of, scene_with

POOR_RMS_MM = 11.0  # a fit this poor is fitted again (15 until session 40)
BETTER = 0.5  # kept where its RMS on the cluster is under this share of the old pose's there
CLUSTER_MM = 3.0  # DBSCAN's reach: points of one piece lie within a few millimetres of each other
COLOR_P = 0.6  # the colour model must read the cluster as the piece's colour this surely


def _clusters(pts: np.ndarray) -> list[np.ndarray]:
    import open3d as o3d

    pc = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts))
    labels = np.asarray(pc.cluster_dbscan(eps=CLUSTER_MM, min_points=5))
    return [np.nonzero(labels == k)[0] for k in range(int(labels.max()) + 1)] if len(labels) else []


def refit_poor(frame, scene: Scene, fits: list[PieceFit], detections, heights, table, cfg: PoseConfig,
               colors) -> tuple[Scene, list[PieceFit]]:
    """The scene and fits with each very poor fit fitted again to the cluster of its box's
    unexplained points that reads its colour, where that explains them at least twice as well."""
    table_pts, seen = heights
    up = seen & (table_pts[..., 2] > cfg.table_cut_mm)
    pieces, fits = list(scene.pieces), list(fits)
    changed = False
    for i, f in enumerate(fits):
        if f.n_points <= 0 or f.rms_mm <= POOR_RMS_MM:
            continue
        pts, pix = own_box_points(detections, f, pieces, table_pts, up)
        if len(pts) < MIN_POINTS:
            continue
        p = f.piece
        best = None
        for idx in _clusters(pts):
            if len(idx) < MIN_POINTS:
                continue
            read = colors.read(pix[idx, 0], pix[idx, 1])
            ours = read is not None and read.color == p.color and read.p >= COLOR_P
            if ours and (best is None or len(idx) > len(best)):
                best = idx
        if best is None:
            continue
        cl = pts[best]
        R, t, _, fs, name = fit_piece(p.size, cl, frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                      prior=detections.orientation_read(f.detection))
        new = posed(p, R, t)
        rms = rms_of(new, cl)
        if rms >= BETTER * rms_of(p, cl):
            continue
        k = next(j for j, q in enumerate(pieces) if q.id == p.id)
        pieces[k] = new
        fits[i] = replace(f, piece=new, rms_mm=rms, n_points=len(cl), free_space=fs, hypothesis=f"refit {name}")
        changed = True
    return (scene_with(scene, pieces, fits), fits) if changed else (scene, fits)
