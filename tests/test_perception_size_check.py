"""Issue 6, items 2 and 3: a piece the classifier reads as torn between two sizes of one colour is
sized by depth (vision/size_check.py); a surely read piece keeps the classifier's size."""
from __future__ import annotations

from dataclasses import replace

import pytest
from perception_helpers import one_box, render_table

from zendo.build import Spec, upright


def _verdict(read_as: str, p: float, runner_up: str, q: float):
    from vision.classes import CLASS_ID
    from vision.classify import Verdict

    return Verdict(CLASS_ID[read_as], p, CLASS_ID[runner_up], q)


@pytest.fixture(scope="module", params=["large", "medium"])
def rendered(request):
    """One black piece standing alone, of the given size, and the frame's height map."""
    from calibration.plane import height_map

    truth = upright(Spec("a", "black", request.param), (0.0, 0.0), 30)
    r, frame, cal = render_table([truth])
    return truth, r, frame, cal, height_map(frame, cal)


def _checked(rendered, read_size: str, verdict):
    """check_sizes on the piece read as `read_size` (at the truth's base: where a fit of the
    wrong size would put it), with this verdict on its box."""
    from vision.pose import PieceFit, PoseConfig
    from vision.size_check import check_sizes
    from zendo.scene import Scene

    truth, r, frame, cal, heights = rendered
    seen = replace(truth, size=read_size)
    fits = [PieceFit(seen, 3.0, 300, 0.1, "upright", 0.9, 0)]
    det = one_box(r, {"a"}, f"black_{read_size}")
    scene, fits = check_sizes(frame, Scene((seen,)), fits, det, [verdict], heights, cal, PoseConfig())
    return scene.pieces[0], fits[0]


def test_a_piece_read_torn_between_two_sizes_takes_the_size_depth_measures(rendered):
    truth = rendered[0]
    wrong = "medium" if truth.size == "large" else "large"
    piece, fit = _checked(rendered, wrong, _verdict(f"black_{wrong}", 0.5, f"black_{truth.size}", 0.4))
    assert piece.size == truth.size and fit.piece == piece
    assert fit.other_size == wrong  # the classifier's reading stays a class doubt
    assert abs(piece.vertices[:, 2].max() - truth.vertices[:, 2].max()) < 3.0


def test_a_torn_reading_depth_agrees_with_keeps_its_size(rendered):
    truth = rendered[0]
    other = "medium" if truth.size == "large" else "large"
    piece, fit = _checked(rendered, truth.size, _verdict(f"black_{truth.size}", 0.5, f"black_{other}", 0.4))
    assert piece.size == truth.size and fit.other_size is None


@pytest.mark.parametrize("verdict", [("black_{w}", 0.9, "black_{t}", 0.08), ("black_{w}", 0.5, "blue_{t}", 0.4)],
                         ids=["sure", "torn-between-colours"])
def test_a_sure_reading_or_one_torn_between_colours_is_not_sized_by_depth(rendered, verdict):
    truth = rendered[0]
    wrong = "medium" if truth.size == "large" else "large"
    a, p, b, q = verdict
    piece, _ = _checked(rendered, wrong, _verdict(a.format(w=wrong), p, b.format(t=truth.size), q))
    assert piece.size == wrong


def test_a_size_that_fits_only_hovering_above_the_table_is_not_taken(rendered, monkeypatch):
    """A tower of two of one colour (a yellow small on a yellow medium) shows a larger piece's
    outline; a smaller size fitted to it can rise to the points' top and float. A piece standing
    on the table keeps the size it was read as (and with it its covers doubt)."""
    from vision import size_check
    from vision.pose import REST_GROUNDED_MM

    truth = rendered[0]
    other = "medium" if truth.size == "large" else "large"

    def hovering(size, R, t, *args):
        return other, R, t + [0.0, 0.0, REST_GROUNDED_MM + 5.0], 0.0, 0.0

    monkeypatch.setattr(size_check, "choose_size", hovering)
    piece, fit = _checked(rendered, truth.size, _verdict(f"black_{truth.size}", 0.5, f"black_{other}", 0.4))
    assert piece.size == truth.size and fit.other_size is None
