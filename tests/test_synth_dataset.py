"""`zendo dataset`: YOLO labels, keypoints, truth, determinism, split seeds (issue 5, clause 5)."""
from __future__ import annotations

import json

import cv2
import numpy as np
from click.testing import CliRunner

from vision.classes import CLASS_NAMES
from vision.synth.dataset import SampleSpec, make_sample
from zendo.cli import main


def _run(*args):
    return CliRunner().invoke(main, ["dataset", *args])


def test_dataset_files_and_labels(tmp_path):
    res = _run("--n", "4", "--seed", "5", "--out", str(tmp_path), "--workers", "1")
    assert res.exit_code == 0, res.output
    for i in range(4):
        name = f"{i:06d}"
        img = cv2.imread(str(tmp_path / "images" / "train" / f"{name}.jpg"))
        assert img.shape == (480, 640, 3)
        boxes = (tmp_path / "labels" / "train" / f"{name}.txt").read_text().split("\n")[:-1]
        poses = (tmp_path / "labels_pose" / "train" / f"{name}.txt").read_text().split("\n")[:-1]
        truth = json.loads((tmp_path / "truth" / "train" / f"{name}.json").read_text())
        assert len(boxes) == len(poses)
        for b, p in zip(boxes, poses):
            fb, fp = b.split(), p.split()
            assert len(fb) == 5 and len(fp) == 5 + 15 and fb == fp[:5]
            assert 0 <= int(fb[0]) < len(CLASS_NAMES)
            assert all(0.0 <= float(v) <= 1.0 for v in fb[1:])
        labelled = [o for o in truth["objects"] if o["box"] and o["visible_px"] >= 12 and o["class_id"] is not None]
        assert len(labelled) == len(boxes)
        assert "scene" in truth and len(truth["camera_to_table"]) == 4
    yaml = (tmp_path / "data.yaml").read_text()
    assert "kpt_shape: [5, 3]" in yaml and "train: images/train" in yaml


def test_labels_agree_with_masks_in_a_sample():
    scene, cam, r = make_sample(SampleSpec(seed=3, index=1))
    for o in r.objects:
        if o.box is None:
            continue
        ys, xs = np.nonzero(r.mask == o.mask_value)
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == o.box
    assert 400 <= cam["height_mm"] <= 900 and 0 <= cam["tilt_deg"] <= 50


def test_dataset_is_deterministic_and_splits_need_different_seeds(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run("--n", "2", "--seed", "8", "--out", str(a), "--workers", "1").exit_code == 0
    assert _run("--n", "2", "--seed", "8", "--out", str(b), "--workers", "2").exit_code == 0
    for sub in ("images/train/000001.jpg", "labels/train/000001.txt", "labels_pose/train/000001.txt"):
        assert (a / sub).read_bytes() == (b / sub).read_bytes()
    res = _run("--n", "2", "--seed", "8", "--out", str(a), "--split", "test", "--workers", "1")
    assert res.exit_code != 0 and "different seed" in res.output
    res = _run("--n", "2", "--seed", "9", "--out", str(a), "--split", "test", "--workers", "1")
    assert res.exit_code == 0
    assert "test: images/test" in (a / "data.yaml").read_text()
