"""Helpers shared by the perception stage tests: a rendered table, a detector that reads several
pieces as one box, and the whole pipeline on one frame with those boxes."""
from __future__ import annotations

import numpy as np

from vision.detect import Detections
from vision.frames import Frame
from zendo.scene import Scene


def render_table(pieces, seed=5, appearance=None, props=(), stones=()):
    from calibration.plane import TableCalibration
    from vision.synth import Appearance, CameraPose, color_intrinsics, render

    r = render(Scene(tuple(pieces), tuple(stones)), CameraPose.looking_at(550, 25, (0, 0, 0), 15), color_intrinsics(),
               seed=seed, appearance=appearance or Appearance(), props=tuple(props))
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


def train_on_two_rendered_tables(tmp_path, task: str, seed: int, epochs: int) -> tuple:
    """`zendo train-classifier --task TASK` on two fresh render folders: (data folder, weights
    path, the command's closing JSON)."""
    import json

    from click.testing import CliRunner

    from vision.eval import write_eval_set
    from zendo.cli import main

    data = write_eval_set(tmp_path / task, 2, seed=seed)
    out = tmp_path / f"{task}.pt"
    res = CliRunner().invoke(main, ["train-classifier", "--task", task, "--data", str(data),
                                    "--epochs", str(epochs), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return data, out, json.loads(res.output.strip().splitlines()[-1])


def eval_classifier_block(data, option: str, weights, block: str) -> dict:
    """One block of `zendo eval-classifier --dataset DATA OPTION WEIGHTS`'s JSON."""
    import json

    from click.testing import CliRunner

    from zendo.cli import main

    res = CliRunner().invoke(main, ["eval-classifier", "--dataset", str(data), option, str(weights)])
    assert res.exit_code == 0, res.output
    return json.loads(res.output[res.output.index("{"):])[block]


def broken_weights(tmp_path):
    """A weights file that is not a model (a truncated download, a foreign file)."""
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model")
    return bad


def worker_that_dies(pipeline, item):
    """A worker task (vision.parallel.FramePool.run) whose process ends at once, as a worker
    killed by the system would."""
    import os

    os._exit(3)
