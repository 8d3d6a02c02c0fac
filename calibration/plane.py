"""The table plane and the camera-to-table transform, measured from one depth frame.

Why from depth alone: the table is the one large plane in view, so RANSAC on the point cloud
(Open3D `segment_plane`, about 20 ms) finds it whatever stands on it, and the table frame of
docs/scene-format.md is then fixed up to its in-plane origin and heading, which carry no meaning
in the game. We pin those the same way every time so that repeated calibrations agree: the origin
is where the optical axis meets the table, and +x is the camera's x axis laid onto the table.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from vision.frames import Frame, Intrinsics

log = logging.getLogger(__name__)


class CalibrationError(RuntimeError):
    """Calibration could not be measured from the frame; the message is one line."""


def backproject(depth_mm: np.ndarray, intr: Intrinsics, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Camera-frame points (N, 3) of the valid depth pixels, and their flat pixel indices."""
    d = depth_mm[::step, ::step]
    vs, us = np.nonzero(d > 0)
    z = d[vs, us].astype(np.float64)
    u = us * step
    v = vs * step
    pts = np.column_stack([(u - intr.ppx) * z / intr.fx, (v - intr.ppy) * z / intr.fy, z])
    return pts, v * depth_mm.shape[1] + u


@dataclass(frozen=True)
class TableCalibration:
    """Camera-to-table transform (OpenCV camera axes; p_table = R p_cam + t) and how it was measured."""

    camera_to_table: tuple[tuple[float, ...], ...]  # 4x4, row-major
    inlier_rms_mm: float
    inlier_share: float

    @property
    def matrix(self) -> np.ndarray:
        return np.asarray(self.camera_to_table, dtype=float)

    @property
    def normal_cam(self) -> np.ndarray:
        """The table's up direction in camera coordinates."""
        return self.matrix[2, :3].copy()

    def to_table(self, p_cam: np.ndarray) -> np.ndarray:
        m = self.matrix
        return np.asarray(p_cam) @ m[:3, :3].T + m[:3, 3]

    def to_camera(self, p_table: np.ndarray) -> np.ndarray:
        m = self.matrix
        return (np.asarray(p_table) - m[:3, 3]) @ m[:3, :3]

    def to_dict(self) -> dict:
        return {"camera_to_table": [list(r) for r in self.camera_to_table],
                "inlier_rms_mm": self.inlier_rms_mm, "inlier_share": self.inlier_share}

    @classmethod
    def from_dict(cls, d: dict) -> "TableCalibration":
        m = np.asarray(d["camera_to_table"], dtype=float)
        if m.shape != (4, 4) or not np.all(np.isfinite(m)):
            raise CalibrationError("camera_to_table must be a finite 4x4 matrix")
        return cls(tuple(tuple(map(float, r)) for r in m), float(d.get("inlier_rms_mm", 0.0)),
                   float(d.get("inlier_share", 0.0)))


def frame_from_plane(normal: np.ndarray, offset: float) -> np.ndarray:
    """4x4 camera-to-table transform for the plane n·p + offset = 0 (n toward the camera)."""
    n = normal / np.linalg.norm(normal)
    if n @ np.array([0.0, 0.0, -1.0]) < 0:  # the camera sees the table's top side
        n, offset = -n, -offset
    # origin: where the optical axis (0, 0, t) meets the plane
    t = -offset / n[2] if abs(n[2]) > 1e-9 else 0.0
    origin = np.array([0.0, 0.0, t])
    x = np.array([1.0, 0.0, 0.0]) - n * n[0]
    x /= np.linalg.norm(x)
    y = np.cross(n, x)
    r_tc = np.vstack([x, y, n])  # rows: table axes in camera coordinates
    m = np.eye(4)
    m[:3, :3] = r_tc
    m[:3, 3] = -r_tc @ origin
    return m


def fit_table(frame: Frame, *, distance_mm: float = 2.5, iterations: int = 200, step: int = 4,
              seed: int = 0) -> tuple[TableCalibration, np.ndarray]:
    """Find the table plane in a frame's depth; also return a boolean mask of table pixels.

    RANSAC (Open3D) finds the dominant plane; a least-squares refit on its inliers sharpens it
    (RANSAC's three-point plane carries the noise of three points).
    """
    import open3d as o3d

    depth = frame.depth_mm
    pts, _ = backproject(depth, frame.intrinsics, step)
    if len(pts) < 500:
        raise CalibrationError("too few depth pixels to find the table (is the camera covered?)")
    pcd = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts))
    # Open3D samples RANSAC hypotheses in parallel threads, so even seeded, two calls on one frame
    # could return different planes (2 of 12 held-out frames), which moved evaluation runs by ±15
    # marks. On one thread the seed fixes the plane; the call takes 4–30 ms either way.
    threads = o3d.utility.get_max_threads()
    o3d.utility.set_max_threads(1)
    try:
        o3d.utility.random.seed(seed)
        plane, inliers = pcd.segment_plane(distance_threshold=distance_mm, ransac_n=3, num_iterations=iterations)
    finally:
        o3d.utility.set_max_threads(threads)
    inl = pts[np.asarray(inliers)]
    if len(inl) < 0.2 * len(pts):
        raise CalibrationError(f"no dominant plane in view (largest holds {len(inl) / len(pts):.0%} of the points)")
    centroid = inl.mean(axis=0)
    _, _, vt = np.linalg.svd(inl - centroid, full_matrices=False)
    n = vt[2]
    off = -float(n @ centroid)
    m = frame_from_plane(n, off)
    n_t = m[2, :3]
    rms = float(np.sqrt(np.mean((inl @ n_t + m[2, 3]) ** 2)))
    cal = TableCalibration(tuple(tuple(map(float, r)) for r in m), round(rms, 3), round(len(inl) / len(pts), 4))
    full, _ = backproject(depth, frame.intrinsics, 1)
    heights = np.zeros(depth.shape, dtype=np.float32)
    heights[depth > 0] = (full @ n_t + m[2, 3]).astype(np.float32)
    table_mask = (depth > 0) & (np.abs(heights) < distance_mm)
    return cal, table_mask


def height_map(frame: Frame, cal: TableCalibration) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel table-frame points (H, W, 3) and a validity mask: the one back-projection a frame needs."""
    depth = frame.depth_mm
    intr = frame.intrinsics
    h, w = depth.shape
    us = (np.arange(w, dtype=np.float32) - np.float32(intr.ppx)) / np.float32(intr.fx)
    vs = (np.arange(h, dtype=np.float32) - np.float32(intr.ppy)) / np.float32(intr.fy)
    cam = np.empty((h, w, 3), dtype=np.float32)
    cam[..., 0] = us[None, :] * depth
    cam[..., 1] = vs[:, None] * depth
    cam[..., 2] = depth
    m = cal.matrix.astype(np.float32)
    pts = cam @ m[:3, :3].T + m[:3, 3]
    return pts, depth > 0
