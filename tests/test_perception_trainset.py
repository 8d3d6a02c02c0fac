"""Detector training sets: tiles cut at native scale keep every piece's pixel size and its label."""
from __future__ import annotations

import numpy as np
import pytest

from vision.trainset import CROP_KEEP_PX2, crop_boxes, materialise, tile_origins


def test_tiles_cover_the_whole_frame_with_equal_overlaps():
    assert tile_origins(640, 320) == [0, 320]
    assert tile_origins(480, 320) == [0, 160]
    assert tile_origins(700, 320) == [0, 190, 380]
    assert tile_origins(200, 320) == [0]


def test_a_box_inside_a_tile_moves_into_the_tiles_pixels():
    assert crop_boxes([(3, 400.0, 200.0, 420.0, 230.0)], 320, 160, 320) == [(3, 80.0, 40.0, 100.0, 70.0)]


def test_a_box_outside_a_tile_is_not_in_it():
    assert crop_boxes([(3, 10.0, 10.0, 30.0, 40.0)], 320, 160, 320) == []


def test_a_piece_cut_by_a_tile_border_keeps_the_part_inside():
    (c, u0, v0, u1, v1), = crop_boxes([(5, 300.0, 10.0, 340.0, 40.0)], 320, 0, 320)
    assert (c, u0, v0, u1, v1) == (5, 0.0, 10.0, 20.0, 40.0)


def test_a_sliver_of_a_piece_at_a_tile_border_is_not_asked_for():
    rows = [(5, 300.0, 10.0, 322.0, 40.0)]  # 2 px of a 22 px wide box
    assert crop_boxes(rows, 320, 0, 320) == []
    assert 2 * 30 < CROP_KEEP_PX2


def test_cropped_set_has_tiles_at_native_scale_with_their_labels(tmp_path):
    import cv2

    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)
    for split in ("train", "val"):
        (tmp_path / "images" / split).mkdir(parents=True)
        (tmp_path / "labels_detect" / split).mkdir(parents=True)
        cv2.imwrite(str(tmp_path / "images" / split / "a.jpg"), img)
        # one piece at pixels (400..420, 200..230): only in the tiles at x 320 (y 0 and y 160)
        (tmp_path / "labels_detect" / split / "a.txt").write_text(
            f"7 {410 / 640:.6f} {215 / 480:.6f} {20 / 640:.6f} {30 / 480:.6f}\n")
    yaml = materialise(tmp_path, "detect", tmp_path / "out", crop=320)
    tiles = sorted(p.name for p in (tmp_path / "out" / "images" / "train").glob("*.jpg"))
    assert tiles == ["a_0_0.jpg", "a_0_160.jpg", "a_320_0.jpg", "a_320_160.jpg"]
    assert cv2.imread(str(tmp_path / "out" / "images" / "train" / "a_320_160.jpg")).shape == (320, 320, 3)
    labels = {p.stem: p.read_text().split() for p in (tmp_path / "out" / "labels" / "train").glob("*.txt")}
    assert labels["a_0_0"] == [] and labels["a_0_160"] == []
    c, cx, cy, w, h = labels["a_320_160"]
    assert c == "7" and float(cx) * 320 == pytest.approx(90, abs=0.01) and float(cy) * 320 == pytest.approx(55, abs=0.01)
    assert float(w) * 320 == pytest.approx(20, abs=0.01) and float(h) * 320 == pytest.approx(30, abs=0.01)
    assert "val: images/val" in yaml.read_text()


def test_only_the_detect_task_is_cropped(tmp_path):
    with pytest.raises(ValueError, match="detect"):
        materialise(tmp_path, "pose", tmp_path / "out", crop=320)
