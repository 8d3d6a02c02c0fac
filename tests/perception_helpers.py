"""Helpers shared by the perception stage tests: a rendered table, a detector that reads several
pieces as one box, and the whole pipeline on one frame with those boxes."""
from __future__ import annotations

import numpy as np

from vision.detect import Detections
from vision.frames import Frame
from zendo.scene import Scene


def render_table(pieces, seed=5):
    from calibration.plane import TableCalibration
    from vision.synth import Appearance, CameraPose, color_intrinsics, render

    r = render(Scene(tuple(pieces), ()), CameraPose.looking_at(550, 25, (0, 0, 0), 15), color_intrinsics(),
               seed=seed, appearance=Appearance())
    frame = Frame(r.color, r.depth, r.intrinsics, 0.0, 0)
    cal = TableCalibration(tuple(tuple(map(float, row)) for row in r.camera_to_table), 0.0, 1.0)
    return r, frame, cal


def one_box(r, ids, read_as: str) -> Detections:
    """One detection round the given pieces (a detector reading them as one), of class `read_as`."""
    from vision.classes import CLASS_ID

    boxes = np.array([o.box for o in r.objects if o.id in ids and o.box is not None], np.float32)
    box = np.array([[boxes[:, 0].min(), boxes[:, 1].min(), boxes[:, 2].max(), boxes[:, 3].max()]], np.float32)
    return Detections(box, np.array([CLASS_ID[read_as]]), np.array([0.9], np.float32))


def perceive_one_frame(frame, cal, det: Detections):
    """The whole pipeline (committed classifier, every stage) on one frame, with these detections
    standing in for the detector's: a FrameResult."""
    from vision.pipeline import Pipeline

    return Pipeline(detector=lambda rgb: det, calibration=cal).process(frame)


def doubts_of(result, kind: str) -> list[dict]:
    return [d for d in result.scene.extra["perception"]["doubts"] if d["kind"] == kind]
