"""Issue 6, items 2 and 3: the band model, which reads a tower's lower band from the pixels the
towers stage picks in depth (a mix of the band, the upper piece and the table), told the colour
of the piece beside it; trained on the stage's own reads of tables no evaluation uses
(vision/bands.py).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from perception_helpers import broken_weights, render_table

from vision import bands
from vision.bands import N_FEATURES, BandReader, band_features, recording
from vision.colors import MIN_PX, ColorModelError, ColorReading, FrameColors
from zendo.build import Spec, tower, upright
from zendo.scene import Scene

TABLE = np.array([0.2, 0.4, 0.6], np.float32)


def test_band_features_are_the_bands_quantiles_the_tables_colour_and_the_piece_besides():
    px = np.array([[0, 0, 0], [100, 100, 100], [200, 200, 200], [255, 0, 0], [50, 50, 50]], np.uint8)
    beside = np.full((MIN_PX, 3), 255, np.uint8)
    f = band_features(px, beside, TABLE)
    assert f.shape == (N_FEATURES,)
    assert f[6] == pytest.approx(100 / 255)  # the median's red: the third of five quantiles
    assert f[15:18].tolist() == pytest.approx(TABLE.tolist())
    assert f[18:].tolist() == pytest.approx([1.0, 1.0, 1.0])


def test_a_piece_beside_that_shows_too_little_counts_as_the_table():
    f = band_features(np.full((MIN_PX, 3), 90, np.uint8), np.zeros((MIN_PX - 1, 3), np.uint8), TABLE)
    assert f[18:].tolist() == pytest.approx(TABLE.tolist())


class _Reader:
    """A colour or band model that reads everything as one colour, and keeps what it was given."""

    def __init__(self, color: str):
        self.color, self.seen = color, []

    def read(self, pixels, *rest):
        self.seen.append((pixels, *rest))
        return ColorReading(self.color, 0.9, "black", 0.1)

    def read_features(self, f):
        self.seen.append(f)
        return ColorReading(self.color, 0.9, "black", 0.1)


def _frame_colors(colour_model, band_model):
    rgb = np.zeros((20, 20, 3), np.uint8)
    rgb[:, 10:] = 200  # the piece beside the band: columns 10 on
    heights = (np.zeros((20, 20, 3), np.float32), np.ones((20, 20), bool))
    return FrameColors(colour_model, rgb, heights, band_model)


BAND = np.array([[r, c] for r in range(3) for c in range(3)])
BESIDE = np.array([[r, 15] for r in range(MIN_PX)])


def test_a_band_is_read_by_the_band_model_beside_the_piece_over_it():
    colour, band = _Reader("black"), _Reader("yellow")
    got = _frame_colors(colour, band).read_band(BAND, BESIDE, np.zeros(3), 0.8)
    assert got.color == "yellow" and colour.seen == []
    assert band.seen[0][18:].tolist() == pytest.approx([200 / 255] * 3)  # the piece beside: columns 10 on


def test_without_a_band_model_the_colour_model_reads_the_band():
    colour = _Reader("black")
    assert _frame_colors(colour, None).read_band(BAND, BESIDE, np.zeros(3), 0.8).color == "black"
    assert _frame_colors(None, _Reader("yellow")).read_band(BAND, BESIDE, np.zeros(3), 0.8) is None


def test_a_band_of_fewer_pixels_than_the_minimum_is_not_read():
    assert _frame_colors(_Reader("black"), _Reader("yellow")).read_band(BAND[:MIN_PX - 1], BESIDE, np.zeros(3),
                                                                        0.8) is None


def test_reads_are_recorded_only_inside_a_recording():
    fc = _frame_colors(_Reader("black"), None)
    fc.read_band(BAND, BESIDE, np.array([1.0, 2.0, 0.0]), 0.5)
    with recording() as reads:
        fc.read_band(BAND, BESIDE, np.array([1.0, 2.0, 0.0]), 0.5)
    fc.read_band(BAND, BESIDE, np.array([1.0, 2.0, 0.0]), 0.5)
    assert len(reads) == 1
    assert reads[0].origin.tolist() == [1.0, 2.0, 0.0] and reads[0].min_p == 0.5
    assert reads[0].features.shape == (N_FEATURES,)


def test_a_missing_or_broken_band_model_is_a_one_line_error(tmp_path):
    with pytest.raises(ColorModelError, match="no band model"):
        BandReader(tmp_path / "none.pt")
    with pytest.raises(ColorModelError, match="cannot load"):
        BandReader(broken_weights(tmp_path))


def test_the_towers_stage_reads_a_same_size_towers_band_and_records_where_its_lower_piece_stands():
    from vision.pipeline import Pipeline

    truth = tower([Spec("a", "yellow", "medium"), Spec("b", "black", "medium")], (0, 0), 20)
    r, frame, cal = render_table(truth)
    with recording() as reads:
        Pipeline(calibration=cal).process(frame)
    assert reads, "the towers stage read no band"
    origins = np.array([x.origin for x in reads])
    assert np.linalg.norm(origins[:, :2] - origins[0, :2], axis=1).max() < 10  # all at the one tower
    assert {x.min_p for x in reads} <= {0.5, 0.8}


def _tower_tables(root):
    """Two render folders of same-size towers (what the band model learns from)."""
    from vision.eval import write_render_folder
    from vision.synth import CameraPose, color_intrinsics, render

    scenes = [tower([Spec("a", "yellow", "medium"), Spec("b", "black", "medium")], (0, 0), 20)
              + [upright(Spec("c", "red", "small"), (70, 10), 0)],
              tower([Spec("d", "blue", "large"), Spec("e", "green", "large")], (-30, 20), 40)]
    for i, pieces in enumerate(scenes):
        scene = Scene(tuple(pieces), ())
        write_render_folder(scene, render(scene, CameraPose.looking_at(550, 25, (0, 0, 0), 15), color_intrinsics(),
                                          seed=i), root / f"t{i}")
    return root


def test_train_classifier_trains_the_band_model_on_the_towers_stages_own_reads(tmp_path):
    from zendo.cli import main

    data = _tower_tables(tmp_path / "towers")
    out = tmp_path / "band.pt"
    res = CliRunner().invoke(main, ["train-classifier", "--task", "band", "--data", str(data), "--epochs", "200",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output.strip().splitlines()[-1])
    assert doc["frames"] == 2 and doc["samples"] >= 2
    assert doc["train"]["samples"] == doc["samples"]
    assert doc["train"]["right_pct"] + doc["train"]["wrong_pct"] + doc["train"]["unread_pct"] == pytest.approx(100)
    assert BandReader(out).read(np.full((MIN_PX, 3), 200, np.uint8), np.zeros((0, 3), np.uint8), TABLE) is not None


def test_train_classifier_band_says_so_when_no_table_has_a_tower(tmp_path):
    from vision.eval import write_render_folder
    from vision.synth import CameraPose, color_intrinsics, render
    from zendo.cli import main

    scene = Scene((upright(Spec("c", "red", "small"), (0, 0), 0),), ())
    write_render_folder(scene, render(scene, CameraPose.looking_at(550, 25, (0, 0, 0), 15), color_intrinsics(), seed=1),
                        tmp_path / "plain" / "t0")
    res = CliRunner().invoke(main, ["train-classifier", "--task", "band", "--data", str(tmp_path / "plain"),
                                    "--out", str(tmp_path / "b.pt")])
    assert res.exit_code != 0 and "read no band" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["train-classifier", "--task", "band", "--data", str(tmp_path / "plain"),
                                    "--from", str(broken_weights(tmp_path))])
    assert res.exit_code != 0 and "trains from scratch" in res.output
