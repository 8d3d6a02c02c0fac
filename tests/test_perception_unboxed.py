"""Issue 6, item 3: a piece no detection boxed is still found, from depth and the classifier.

Half the visible pieces the detector missed on the tuning tables had no box near them, yet stood
out of the table in depth. vision/unboxed.py asks the classifier what each such blob is and fits
it; the piece carries an "unboxed" doubt, since only depth saw it.
"""
from __future__ import annotations

import numpy as np

from perception_helpers import doubts_of, perceive_one_frame, render_table
from vision.detect import Detections
from zendo.build import Spec, flat, upright


def test_a_piece_the_detector_did_not_box_is_found_in_depth():
    truth = upright(Spec("a", "yellow", "large"), (10, 0), 20)
    r, frame, cal = render_table([truth])
    res = perceive_one_frame(frame, cal, Detections.empty())
    assert len(res.scene.pieces) == 1
    p = res.scene.pieces[0]
    assert (p.color, p.size) == ("yellow", "large")
    assert np.linalg.norm(p.origin - truth.origin) < 3.0 and p.axis[2] > np.cos(np.radians(5))
    assert doubts_of(res, "unboxed") == [{"kind": "unboxed", "piece": p.id}]
    assert doubts_of(res, "missed") == []  # the blob is read: no longer "something unread"


def test_a_boxed_piece_leaves_no_blob_to_read():
    from vision.classes import CLASS_ID

    truth = flat(Spec("a", "blue", "medium"), (0, 0), 30)
    r, frame, cal = render_table([truth])
    det = Detections(np.array([r.objects[0].box], np.float32), np.array([CLASS_ID["blue_medium"]]),
                     np.array([0.9], np.float32))
    res = perceive_one_frame(frame, cal, det)
    assert len(res.scene.pieces) == 1 and doubts_of(res, "unboxed") == []


def _verdict(top: str, p: float, second: str, p2: float):
    from vision.classes import CLASS_ID
    from vision.classify import Verdict

    return Verdict(CLASS_ID[top], p, CLASS_ID[second], p2)


def test_a_blob_read_surely_is_fitted_as_that_piece_alone():
    from vision.unboxed import candidates

    assert candidates(_verdict("green_small", 0.9, "green_medium", 0.05)) == [("green", "small")]


def test_a_blob_whose_colour_is_sure_but_not_its_size_is_fitted_in_both_sizes_named():
    from vision.unboxed import candidates

    assert candidates(_verdict("red_large", 0.48, "red_medium", 0.41)) == [("red", "large"), ("red", "medium")]


def test_a_blob_whose_colour_is_unsure_is_not_read():
    from vision.unboxed import candidates

    assert candidates(_verdict("red_small", 0.4, "blue_small", 0.35)) == []


def test_depth_picks_the_size_of_a_blob_the_classifier_is_torn_about():
    """A red piece on a red table: the classifier is sure of red, torn between sizes, and wrong
    first. Fitting both, the large explains the points the medium leaves out."""
    from vision.classify import load_classifier
    from vision.pipeline import Pipeline

    truth = upright(Spec("a", "red", "large"), (10, 0), 20)
    r, frame, cal = render_table([truth])
    cls = load_classifier()
    cls.read_box = lambda *a, **k: _verdict("red_medium", 0.48, "red_large", 0.41)
    res = Pipeline(detector=lambda rgb: Detections.empty(), calibration=cal, classifier=cls).process(frame)
    assert [(p.color, p.size) for p in res.scene.pieces] == [("red", "large")]
    assert np.linalg.norm(res.scene.pieces[0].origin - truth.origin) < 3.0


def test_a_blobs_points_reach_down_to_the_pieces_foot():
    """The blob is cut 5 mm above the table; the fit takes its foot too (grown down to the table cut)."""
    from calibration.plane import height_map
    from vision.doubts import MISSED_HEIGHT_MM, unexplained, unexplained_blobs
    from vision.pose import TABLE_CUT_MM
    from vision.unboxed import blob_points
    from zendo.scene import Scene

    r, frame, cal = render_table([upright(Spec("a", "yellow", "large"), (10, 0), 20)])
    table_pts, seen = height_map(frame, cal)
    (pix,) = unexplained_blobs(Scene((), ()), Detections.empty(), table_pts, seen)
    assert table_pts[pix[:, 0], pix[:, 1], 2].min() > MISSED_HEIGHT_MM
    pts = blob_points(pix, unexplained(Scene((), ()), table_pts, seen & (table_pts[..., 2] > TABLE_CUT_MM)), table_pts)
    assert pts[:, 2].min() < MISSED_HEIGHT_MM and len(pts) > len(pix)
