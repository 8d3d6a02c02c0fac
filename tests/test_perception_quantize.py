"""Issue 6, item 7 (a frame within 250 ms on this CPU): the crop nets read crops with int8 copies.

`zendo quantize-classifier` writes NAME.int8.onnx beside each crop net's weights, stamped with
the weights' SHA-256; the pipeline reads crops with them where the stamp matches, in float
otherwise. An int8 copy must read what the float net reads, and a stale or broken one must never
be run.
"""
from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from vision.classify import DEFAULT_CLASSIFIER, DEFAULT_ORIENTATION, crops, load_classifier
from vision.quantize import int8_copy, int8_path
from zendo.cli import main


@pytest.fixture(scope="module")
def table_crops():
    """The crops of every visible piece of a rendered table of nine (the classifier's input)."""
    from calibration.plane import height_map
    from tests.perception_helpers import render_table
    from zendo.build import Spec, flat, upright

    specs = [Spec(f"p{i}", c, s) for i, (c, s) in enumerate(
        [("red", "small"), ("yellow", "medium"), ("green", "large"), ("blue", "small"), ("black", "medium"),
         ("red", "large"), ("yellow", "small"), ("green", "medium"), ("blue", "large")])]
    pieces = [(upright if i % 2 else flat)(sp, (-120.0 + 60 * (i % 5), -50.0 + 100 * (i // 5)), 20.0 * i)
              for i, sp in enumerate(specs)]
    r, frame, cal = render_table(pieces)
    pts, valid = height_map(frame, cal)
    boxes = np.array([o.box for o in r.objects if o.box is not None], np.float32)
    return crops(frame.color, frame.depth_mm, pts[..., 2], valid, frame.intrinsics.fx, boxes)


def nets_beside(tmp_path, int8: bool = True):
    """The committed classifier and orientation net copied to tmp_path, with their int8 copies."""
    cls, orient = tmp_path / "cls.pt", tmp_path / "orient.pt"
    shutil.copy(DEFAULT_CLASSIFIER, cls)
    shutil.copy(DEFAULT_ORIENTATION, orient)
    if int8:
        shutil.copy(int8_path(DEFAULT_CLASSIFIER), int8_path(cls))
        shutil.copy(int8_path(DEFAULT_ORIENTATION), int8_path(orient))
    return cls, orient


def test_the_committed_int8_copies_were_made_from_the_committed_weights():
    """A retrained net without a new copy would silently lose the speed: this fails first."""
    assert int8_copy(DEFAULT_CLASSIFIER) is not None
    assert int8_copy(DEFAULT_ORIENTATION) is not None
    assert load_classifier().runtime == "int8"


def test_an_int8_copy_reads_crops_as_the_float_net_does(table_crops):
    fast, slow = load_classifier(), load_classifier(int8=False)
    assert (fast.runtime, slow.runtime) == ("int8", "float")
    p, q = fast.probabilities(table_crops), slow.probabilities(table_crops)
    assert len(p) >= 8
    assert np.array_equal(p.argmax(1), q.argmax(1))
    assert np.abs(p - q).max() < 0.1
    o, w = fast.orientations(table_crops), slow.orientations(table_crops)
    assert np.array_equal(o.argmax(1), w.argmax(1))
    assert np.abs(o - w).max() < 0.1


def test_a_copy_not_made_from_these_weights_is_never_run(tmp_path, caplog):
    cls, orient = nets_beside(tmp_path, int8=False)
    shutil.copy(int8_path(DEFAULT_ORIENTATION), int8_path(cls))  # the orientation net's copy, beside the classifier
    with caplog.at_level(logging.WARNING, logger="vision.quantize"):
        clf = load_classifier(cls, orient)
    assert clf.runtime == "float"
    assert "stale" in caplog.text and "cls.int8.onnx" in caplog.text


def test_an_unreadable_copy_is_never_run(tmp_path, caplog):
    cls, orient = nets_beside(tmp_path)
    int8_path(cls).write_bytes(b"half a download")
    with caplog.at_level(logging.WARNING, logger="vision.quantize"):
        clf = load_classifier(cls, orient)
    assert clf.runtime == "float+int8"  # the orientation net's copy is fine
    assert "unreadable" in caplog.text


def test_quantize_classifier_writes_stamped_copies_the_pipeline_then_reads_with(tmp_path):
    from vision.eval import write_eval_set

    cls, orient = nets_beside(tmp_path, int8=False)
    data = write_eval_set(tmp_path / "data", 2, seed=424242)
    res = CliRunner().invoke(main, ["quantize-classifier", "--data", str(data), "--classifier", str(cls),
                                    "--orientation", str(orient), "--frames", "2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output.strip().splitlines()[-1])
    assert out["frames"] == 2 and out["crops"] > 0
    assert out["classifier"] == str(int8_path(cls)) and out["orientation"] == str(int8_path(orient))
    assert int8_copy(cls) == int8_path(cls) and int8_copy(orient) == int8_path(orient)
    assert load_classifier(cls, orient).runtime == "int8"


def test_quantize_classifier_without_render_folders_says_so_in_one_line(tmp_path):
    res = CliRunner().invoke(main, ["quantize-classifier", "--data", str(tmp_path)])
    assert res.exit_code != 0
    assert "no render folders" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
