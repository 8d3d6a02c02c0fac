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
