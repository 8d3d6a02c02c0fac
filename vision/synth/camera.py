"""A D435-like camera: where it stands over the table and what its lenses are.

Poses use OpenCV camera axes (x right, y down, z forward) and the table frame of
docs/scene-format.md (mm, z up, table top z = 0). `CameraPose.matrix` is the camera-to-table
transform: p_table = R @ p_cam + t.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..frames import Intrinsics

#: Distance between the two IR imagers of a D435 (mm).
BASELINE_MM = 50.0
#: Where the left IR imager (the depth camera's origin) sits in colour-camera coordinates (mm).
#: The colour camera is about 15 mm on the far side of the left imager from the right imager.
LEFT_IMAGER_IN_COLOR = np.array([15.0, 0.0, 0.0])
RIGHT_IMAGER_IN_COLOR = LEFT_IMAGER_IN_COLOR + np.array([BASELINE_MM, 0.0, 0.0])

# Factory-calibration-like intrinsics (close to a real unit's, deliberately not perfectly centred).
_COLOR = {
    (640, 480): (615.3, 615.6, 321.2, 241.9),
    (848, 480): (609.8, 610.1, 425.4, 241.9),
}
_DEPTH = {
    (640, 480): (384.6, 384.6, 319.4, 239.1),
    (848, 480): (424.2, 424.2, 423.3, 239.1),
}


def color_intrinsics(width: int = 640, height: int = 480) -> Intrinsics:
    """The colour camera at one of the D435's modes (640x480, 848x480), or scaled for others."""
    if (width, height) in _COLOR:
        return Intrinsics(width, height, *_COLOR[(width, height)])
    return Intrinsics(640, 480, *_COLOR[(640, 480)]).scaled(width, height)


def depth_intrinsics(width: int = 640, height: int = 480) -> Intrinsics:
    """The depth (left IR) camera: a wider field of view (about 87 x 58 degrees at 848x480)."""
    if (width, height) in _DEPTH:
        return Intrinsics(width, height, *_DEPTH[(width, height)])
    return Intrinsics(848, 480, *_DEPTH[(848, 480)]).scaled(width, height)


@dataclass(frozen=True)
class CameraPose:
    """Camera-to-table rigid transform (rotation columns: camera x right, y down, z forward)."""

    rotation: np.ndarray  # 3x3
    position: np.ndarray  # 3, mm in the table frame

    @classmethod
    def looking_at(cls, height_mm: float, tilt_deg: float, target=(0.0, 0.0, 0.0), yaw_deg: float = 0.0) -> "CameraPose":
        """A camera `height_mm` above the table top, tilted `tilt_deg` from looking straight down,
        aimed at `target`. It stands on the side of the target given by yaw (yaw 0: on the -y side,
        so +y is 'up' in the image and +x is to the right)."""
        if not 0.0 <= tilt_deg < 89.0:
            raise ValueError(f"tilt must be in [0, 89) degrees, got {tilt_deg}")
        target = np.asarray(target, dtype=float)
        drop = height_mm - target[2]
        if drop <= 0:
            raise ValueError(f"camera height {height_mm} mm is not above the target")
        yaw = np.radians(yaw_deg)
        right = np.array([np.cos(yaw), np.sin(yaw), 0.0])
        back = np.array([np.sin(yaw), -np.cos(yaw), 0.0])
        position = target + back * drop * np.tan(np.radians(tilt_deg))
        position[2] = height_mm
        forward = target - position
        forward /= np.linalg.norm(forward)
        right = right - forward * (right @ forward)
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        return cls(np.column_stack([right, down, forward]), position)

    @property
    def matrix(self) -> np.ndarray:
        """4x4 camera-to-table transform."""
        m = np.eye(4)
        m[:3, :3] = self.rotation
        m[:3, 3] = self.position
        return m

    def to_table(self, p_cam: np.ndarray) -> np.ndarray:
        return np.asarray(p_cam) @ self.rotation.T + self.position

    def to_camera(self, p_table: np.ndarray) -> np.ndarray:
        return (np.asarray(p_table) - self.position) @ self.rotation

    def offset(self, p_cam) -> "CameraPose":
        """The pose of a rigidly attached camera whose origin is at `p_cam` in this camera's frame
        (same orientation): the D435's IR imagers beside its colour camera."""
        return CameraPose(self.rotation, self.to_table(np.asarray(p_cam, dtype=float)))

    def project(self, p_table: np.ndarray, intr: Intrinsics) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates (N, 2) and depth z (N,) of table-frame points."""
        pc = self.to_camera(np.atleast_2d(p_table))
        z = pc[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = np.column_stack([intr.fx * pc[:, 0] / z + intr.ppx, intr.fy * pc[:, 1] / z + intr.ppy])
        return uv, z
