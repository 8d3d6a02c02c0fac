"""Issue 6, items 2 and 3: a piece the classifier reads as torn towards a smaller size of its
colour is sized by depth (vision/size_check.py); a surely read piece, or one torn towards a
larger size, keeps the classifier's size. A piece the picture's edge cuts may be made larger by
depth, never smaller."""
from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest
from perception_helpers import one_box, render_table

from zendo.build import Spec, upright

LARGER = {"small": "medium", "medium": "large"}


def _verdict(read_as: str, p: float, runner_up: str, q: float):
    from vision.classes import CLASS_ID
    from vision.classify import Verdict

    return Verdict(CLASS_ID[read_as], p, CLASS_ID[runner_up], q)


AT_THE_EDGE_MM = 305.0  # x of a piece the picture's right edge cuts (a large shows 421 of its ~760 pixels)


@cache
def _rendered(size: str, x: float = 0.0):
    """One black piece of this size standing alone at (x, 0), and the frame's height map."""
    from calibration.plane import height_map

    truth = upright(Spec("a", "black", size), (x, 0.0), 30)
    r, frame, cal = render_table([truth])
    return truth, r, frame, cal, height_map(frame, cal)


def _checked(truth_size: str, read_size: str, verdict, x: float = 0.0):
    """check_sizes on the piece read as `read_size` (at the truth's base: where a fit of the
    wrong size would put it), with this verdict on its box."""
    from vision.pose import PieceFit, PoseConfig
    from vision.size_check import check_sizes
    from zendo.scene import Scene

    truth, r, frame, cal, heights = _rendered(truth_size, x)
    seen = replace(truth, size=read_size)
    fits = [PieceFit(seen, 3.0, 300, 0.1, "upright", 0.9, 0)]
    det = one_box(r, {"a"}, f"black_{read_size}")
    scene, fits = check_sizes(frame, Scene((seen,)), fits, det, [verdict], heights, cal, PoseConfig())
    return scene.pieces[0], fits[0]


@pytest.mark.parametrize("size", ["small", "medium"])
def test_a_piece_read_torn_towards_a_smaller_size_takes_it_where_depth_measures_it(size):
    wrong = LARGER[size]
    piece, fit = _checked(size, wrong, _verdict(f"black_{wrong}", 0.5, f"black_{size}", 0.4))
    truth = _rendered(size)[0]
    assert piece.size == size and fit.piece == piece
    assert fit.other_size == wrong  # the classifier's reading stays a class doubt
    assert abs(piece.vertices[:, 2].max() - truth.vertices[:, 2].max()) < 3.0


def test_a_torn_reading_depth_agrees_with_keeps_its_size():
    piece, fit = _checked("medium", "medium", _verdict("black_medium", 0.5, "black_small", 0.4))
    assert piece.size == "medium" and fit.other_size is None


def test_a_reading_torn_towards_a_larger_size_is_not_sized_by_depth():
    """More of the box's points explained by a larger solid may be a missed neighbour's points."""
    piece, fit = _checked("large", "medium", _verdict("black_medium", 0.5, "black_large", 0.4))
    assert piece.size == "medium" and fit.other_size is None


@pytest.mark.parametrize("verdict", [("black_large", 0.9, "black_medium", 0.08),
                                     ("black_large", 0.5, "blue_medium", 0.4)],
                         ids=["sure", "torn-between-colours"])
def test_a_sure_reading_or_one_torn_between_colours_is_not_sized_by_depth(verdict):
    piece, _ = _checked("medium", "large", _verdict(*verdict))
    assert piece.size == "large"


def test_a_size_that_fits_only_hovering_above_the_table_is_not_taken(monkeypatch):
    """A tower of two of one colour (a yellow small on a yellow medium) shows a larger piece's
    outline; a smaller size fitted to it can rise to the points' top and float. A piece standing
    on the table keeps the size it was read as (and with it its covers doubt)."""
    from vision import size_check
    from vision.pose import REST_GROUNDED_MM

    def hovering(size, R, t, *args):
        return "medium", R, t + [0.0, 0.0, REST_GROUNDED_MM + 5.0], 0.0, 0.0

    monkeypatch.setattr(size_check, "choose_size", hovering)
    piece, fit = _checked("medium", "large", _verdict("black_large", 0.5, "black_medium", 0.4))
    assert piece.size == "large" and fit.other_size is None


def test_a_piece_the_pictures_edge_cuts_read_too_small_takes_the_larger_size_depth_measures():
    """The crop holds part of the piece, and the part of a large piece in view looks like a
    medium whole; depth measures the part in view in millimetres (its tip stands 44.5 mm up)."""
    from vision.detect import cut_by_edge

    r = _rendered("large", AT_THE_EDGE_MM)[1]
    assert cut_by_edge(next(o.box for o in r.objects if o.id == "a"), r.color.shape[:2])
    piece, fit = _checked("large", "medium", _verdict("black_medium", 0.95, "black_small", 0.03), AT_THE_EDGE_MM)
    assert piece.size == "large" and fit.other_size == "medium"


def test_a_piece_in_full_view_read_surely_keeps_its_size_where_depth_measures_larger():
    piece, fit = _checked("large", "medium", _verdict("black_medium", 0.95, "black_small", 0.03))
    assert piece.size == "medium" and fit.other_size is None


def test_a_piece_the_pictures_edge_cuts_is_never_made_smaller_by_depth(monkeypatch):
    """Beyond the edge no camera saw through, so nothing in depth speaks against the larger
    size there: a smaller size that explains the part in view is the cut's own illusion."""
    from vision import size_check

    monkeypatch.setattr(size_check, "choose_size", lambda size, R, t, *a: ("medium", R, t, 0.0, 0.0))
    piece, fit = _checked("large", "large", _verdict("black_large", 0.95, "black_medium", 0.03), AT_THE_EDGE_MM)
    assert piece.size == "large" and fit.other_size is None


def test_a_size_the_classifier_is_sure_of_and_depth_measures_otherwise_is_a_judgment_call():
    """Behind the classifier, depth's own size reading is a doubt, not a verdict: a medium the
    classifier surely reads small (no runner-up worth a doubt) keeps the classifier's size and
    carries a class doubt naming the size depth measured (three mediums on the held-out tables
    910000- were read small this surely and marked wrong with no flag)."""
    import numpy as np

    from vision.classes import CLASS_ID
    from vision.classify import N_CLASSES
    from vision.classify import load_classifier
    from vision.pipeline import Pipeline

    truth, r, frame, cal, _ = _rendered("medium")
    cls = load_classifier()

    def sure_small(x):
        p = np.full((len(x), N_CLASSES), 0.01 / (N_CLASSES - 1), np.float32)
        p[:, CLASS_ID["black_small"]] = 0.99
        return p

    cls.probabilities = cls.read_once = sure_small  # the detector's box and every later probe
    det = one_box(r, {"a"}, "black_medium")
    res = Pipeline(detector=lambda rgb: det, calibration=cal, classifier=cls).process(frame)
    # (the medium's height reads as a tower of two smalls; both stay small)
    assert res.scene.pieces and {p.size for p in res.scene.pieces} == {"small"}
    doubts = [d for d in res.scene.extra["perception"]["doubts"] if d["kind"] == "class"]
    assert [(d["color"], d["size"]) for d in doubts if d["size"] != "small"] == [("black", "medium")]
    # the rest are the tower's lower small, its shaded band read black: it may be any colour
    lower = min(res.scene.pieces, key=lambda q: q.origin[2])
    banded = [d for d in doubts if d["size"] == "small"]
    assert {d["piece"] for d in banded} == {lower.id}
    assert sorted(d["color"] for d in banded) == ["blue", "green", "red", "yellow"]
