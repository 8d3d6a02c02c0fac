"""Issue 6, item 3 ("handle ... nested pieces"): a piece lying nested inside another.

Lying flat, the pair shows the outer piece's faces and, where its open base faces the camera, the
inner piece's base inside the outer's rim; the detector draws one box round both and depth cannot
tell (the bases share a plane). vision/nested.py has the classifier read the inner piece's base.
"""
from __future__ import annotations

import numpy as np
import pytest
from perception_helpers import doubts_of, one_box, perceive_one_frame, render_table

from zendo.build import Spec, flat, nested_lying

TOWARDS_CAMERA = 90.0  # the camera stands on the -y side: a ray heading +y shows its base


def nested_pieces(result):
    return [f.piece for f in result.fits if f.hypothesis == "nested"]


def test_a_small_piece_nested_in_a_lying_large_one_is_read_through_its_base():
    truth = nested_lying(Spec("a", "blue", "large"), Spec("b", "red", "small"), (0, 0), TOWARDS_CAMERA)
    r, frame, cal = render_table(truth)
    res = perceive_one_frame(frame, cal, one_box(r, {"a", "b"}, "blue_large"))
    inner = nested_pieces(res)
    assert len(inner) == 1 and (inner[0].color, inner[0].size) == ("red", "small")
    assert np.linalg.norm(inner[0].origin - truth[1].origin) < 5.0
    assert len({p.id for p in res.scene.pieces}) == len(res.scene.pieces) == 2
    fit = next(f for f in res.fits if f.hypothesis == "nested")
    assert 0 <= fit.detection < len(res.detections)  # its base's box: class doubts read it


def test_a_lying_piece_with_nothing_inside_gets_no_nested_piece():
    truth = [flat(Spec("a", "blue", "large"), (0, 0), TOWARDS_CAMERA)]
    r, frame, cal = render_table(truth)
    res = perceive_one_frame(frame, cal, one_box(r, {"a"}, "blue_large"))
    assert nested_pieces(res) == [] and len(res.scene.pieces) == 1


@pytest.mark.parametrize("inner_color,heading", [("blue", TOWARDS_CAMERA), ("red", -TOWARDS_CAMERA)],
                         ids=["of-the-outers-colour", "base-facing-away"])
def test_a_nested_piece_the_camera_cannot_tell_is_left_to_the_covers_doubt(inner_color, heading):
    truth = nested_lying(Spec("a", "blue", "large"), Spec("b", inner_color, "small"), (0, 0), heading)
    r, frame, cal = render_table(truth)
    res = perceive_one_frame(frame, cal, one_box(r, {"a", "b"}, "blue_large"))
    assert nested_pieces(res) == []
    assert [d["piece"] for d in doubts_of(res, "covers")] == [res.scene.pieces[0].id]
