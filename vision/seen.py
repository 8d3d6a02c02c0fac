"""What the depth camera saw where a track's piece should be: is its place bare table now?

Why the tracker asks: a piece the detector stops reading is dropped only after a run of frames
unread (`PipelineConfig.lost_at_rest_frames`, 2.5 s at the dashboard's 6 frames a second),
because the detector misses real pieces now and then and a marked koan that loses one raises
katsu. Depth tells the two apart. Where a piece was taken away, the pixels its surface would
cover show the table; where it is still there they show the piece, and where something hides it
(a neighbour, a hand) they show that. So a track unread whose place shows bare table two frames
running is gone then, and a piece taken away is told two frames after the hand has gone, not
fifteen.

Why the height of what is seen and not the pose fit's free-space test (how far in front of the
depth seen the surface would lie): a track's pose is the mean of its readings and may sit a few
millimetres off the piece, so half the surface of a piece still there lay in front of the depth
seen, as much as for a small piece taken away (shares 0.52-0.62 against 0.51-0.74 on the hand
recordings 570000-). What stands above the table there does not depend on the pose being exact:
0.52-0.84 of the pixels for pieces still there, 0.00-0.28 for pieces taken away.

Where depth dropped out (black pieces, the picture's edge) the place is not judged, and the track
is dropped by the frame count as before. A piece taken from on top of another shows that other,
not the table, and is dropped by the frame count too.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from zendo.pieces import surface_samples
from zendo.scene import Piece

from .frames import Frame, Intrinsics

#: a pixel whose seen point stands this far above the table shows something, not the table (mm;
#: stereo depth at 60-75 cm scatters about a millimetre)
ABOVE_TABLE_MM = 3.0
#: a place is judged only where this share of the piece's surface samples lands on depth
MIN_VALID_SHARE = 0.3


@dataclass(frozen=True, eq=False)
class SeenDepth:
    """One frame's depth with the table plane and camera it was seen under: all the tracker needs
    to test a place (kept as the camera's integer depth, half the size of millimetres in floats,
    since a stream read by worker processes sends one per frame)."""

    depth: np.ndarray  # H x W uint16, depth units
    intrinsics: Intrinsics
    table: object  # calibration.plane.TableCalibration

    @classmethod
    def of(cls, frame: Frame, table) -> "SeenDepth":
        return cls(frame.depth, frame.intrinsics, table)

    @cached_property
    def depth_mm(self) -> np.ndarray:
        return self.depth.astype(np.float32) * np.float32(self.intrinsics.depth_scale_mm)

    def bare(self, pieces: list[Piece]) -> np.ndarray:
        """(N,) per piece, the share of the pixels its surface would cover (one per surface
        sample) whose seen point lies within `ABOVE_TABLE_MM` of the table: 1 where the camera
        sees only table there; NaN where under `MIN_VALID_SHARE` of them have depth."""
        out = np.full(len(pieces), np.nan)
        intr, depth = self.intrinsics, self.depth_mm
        hgt, wid = depth.shape
        for k, p in enumerate(pieces):
            s = surface_samples(p.size) @ p.matrix.T + p.origin
            cam = np.asarray(self.table.to_camera(s))
            zs = np.where(cam[:, 2] > 1, cam[:, 2], 1.0)
            u = np.round(intr.fx * cam[:, 0] / zs + intr.ppx).astype(int)
            v = np.round(intr.fy * cam[:, 1] / zs + intr.ppy).astype(int)
            inside = (cam[:, 2] > 1) & (u >= 0) & (u < wid) & (v >= 0) & (v < hgt)
            u, v = u[inside], v[inside]
            z = depth[v, u].astype(float)
            u, v, z = u[z > 0], v[z > 0], z[z > 0]
            if len(z) < MIN_VALID_SHARE * len(s):
                continue
            seen = np.column_stack([(u - intr.ppx) * z / intr.fx, (v - intr.ppy) * z / intr.fy, z])
            out[k] = float(np.mean(np.asarray(self.table.to_table(seen))[:, 2] <= ABOVE_TABLE_MM))
        return out
