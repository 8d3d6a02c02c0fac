"""Issue 6, items 2 and 3: the colour of a few pixels, which is how a tower's lower piece, seen
only as a band under the upper one, gets its own colour rather than the upper one's.

The crop classifier reads a 96 mm window, mostly the upper piece there; the colour model reads the
band's own pixels against the table's colour (vision/colors.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from perception_helpers import broken_weights, eval_classifier_block, render_table, train_on_two_rendered_tables

from vision.classify import DEFAULT_CLASSIFIER, ClassifierError, PieceClassifier
from vision.colors import (
    BAND_TOP_MM,
    DEFAULT_COLOR_MODEL,
    MIN_PX,
    ColorModelError,
    ColorReader,
    features,
    table_color,
)
from zendo.build import Spec, tower, upright

needs_model = pytest.mark.skipif(not DEFAULT_COLOR_MODEL.is_file(), reason="the committed colour model is not there")


def pixels_of(r, piece_id: str, where=None) -> np.ndarray:
    """The rendered truth-mask pixels of one piece (optionally only where `where` holds)."""
    k = r.instance_ids.index(piece_id) + 1
    m = r.mask == k
    return r.color[m & where] if where is not None else r.color[m]


def heights_of(r) -> np.ndarray:
    from calibration.plane import TableCalibration, height_map
    from vision.frames import Frame

    cal = TableCalibration(tuple(tuple(map(float, row)) for row in r.camera_to_table), 0.0, 1.0)
    pts, valid = height_map(Frame(r.color, r.depth, r.intrinsics, 0.0, 0), cal)
    return pts[..., 2], valid


@needs_model
def test_the_colour_model_reads_a_piece_of_every_colour_from_its_pixels():
    colors = ("red", "yellow", "green", "blue", "black")
    truth = [upright(Spec(c, c, "medium"), (-100 + 50 * i, 20 * (i % 2)), 15 * i) for i, c in enumerate(colors)]
    r, _, _ = render_table(truth)
    h, valid = heights_of(r)
    table = table_color(r.color, h, valid)
    reader = ColorReader()
    for c in colors:
        got = reader.read(pixels_of(r, c), table)
        assert got is not None and got.color == c, (c, got)
        assert got.runner_up != c and got.p + got.runner_up_p <= 1.0 + 1e-6


@needs_model
def test_a_towers_lower_band_reads_as_the_lower_pieces_colour():
    truth = tower([Spec("a", "yellow", "medium"), Spec("b", "black", "medium")], (0, 0), 20)
    r, _, _ = render_table(truth)
    h, valid = heights_of(r)
    band = pixels_of(r, "a", h < BAND_TOP_MM)
    assert len(band) >= MIN_PX
    assert ColorReader().read(band, table_color(r.color, h, valid)).color == "yellow"


@needs_model
def test_fewer_pixels_than_the_minimum_are_not_read():
    assert ColorReader().read(np.full((MIN_PX - 1, 3), 200, np.uint8), np.full(3, 0.5, np.float32)) is None


def test_features_are_the_pixels_quartiles_beside_the_tables_colour():
    px = np.array([[0, 0, 0], [100, 100, 100], [200, 200, 200], [255, 0, 0], [50, 50, 50]], np.uint8)
    f = features(px, np.array([0.1, 0.2, 0.3], np.float32))
    assert f.shape == (12,)
    assert f[0] == pytest.approx(100 / 255) and f[9:].tolist() == pytest.approx([0.1, 0.2, 0.3])


def test_a_missing_or_broken_colour_model_is_a_one_line_error(tmp_path):
    with pytest.raises(ColorModelError, match="no colour model"):
        ColorReader(tmp_path / "none.pt")
    with pytest.raises(ClassifierError, match="cannot load"):
        PieceClassifier(DEFAULT_CLASSIFIER, colors=broken_weights(tmp_path))


def test_train_classifier_trains_the_colour_model_from_truth_masks(tmp_path):
    data, out, doc = train_on_two_rendered_tables(tmp_path, "colour", seed=424244, epochs=200)
    assert doc["frames"] == 2 and doc["samples"] > 20
    scored = eval_classifier_block(data, "--colour", out, "colour")
    assert scored["samples"] == doc["samples"]  # the same pixel sets, another random fifth
    assert scored["accuracy_pct"] > 80.0  # its own training pixels, after 200 epochs
    assert set(scored["accuracy_by_kind_pct"]) <= {"whole", "fifth", "band"}


@needs_model
def test_a_frames_table_colour_is_measured_once_and_only_when_a_colour_is_read(monkeypatch):
    """The towers and nested stages share one FrameColors per frame: a frame where nothing reads a
    colour does not pay for the table's median, one where both do pays once."""
    from vision import colors

    truth = [upright(Spec("a", "green", "medium"), (0, 0), 0)]
    r, _, _ = render_table(truth)
    calls = []
    real = colors.table_color
    monkeypatch.setattr(colors, "table_color", lambda *a: calls.append(1) or real(*a))
    fc = colors.FrameColors(ColorReader(), r.color, (np.zeros((*r.depth.shape, 3), np.float32), r.depth > 0))
    rows, cols = np.nonzero(r.mask == 1)
    assert fc.read(rows[:MIN_PX - 1], cols[:MIN_PX - 1]) is None and calls == []
    assert fc.read(rows, cols).color == "green" and fc.read(rows, cols).color == "green"
    assert calls == [1]
    assert colors.FrameColors(None, r.color, fc.heights).read(rows, cols) is None
