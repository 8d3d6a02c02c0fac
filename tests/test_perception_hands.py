"""A hand over the table (vision/hands.py): found in depth, nothing on it read as a piece, and what
it hides held by the tracker until it has gone."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tests.perception_helpers import one_box, perceive_one_frame, render_table
from vision.detect import Detections
from vision.hands import Hands, boxes_on_hands, find_hands, hidden
from vision.pipeline import PipelineConfig, Tracker
from vision.synth.hands import hand_props
from zendo.build import Spec, flat, flat_across, tower, upright
from zendo.scene import Scene, Stone

SKIN, SLEEVE = (214, 160, 124), (40, 60, 120)
KOAN = tower([Spec("a", "red", "large"), Spec("b", "blue", "large"), Spec("c", "green", "large")], (0, 0))


def _hand_over(xy, above_mm: float, reach=(1.0, 0.3)):
    return hand_props((xy[0], xy[1], above_mm), reach, SKIN, SLEEVE)


def _heights(frame, cal):
    from calibration.plane import height_map

    return height_map(frame, cal)


def _pixels(r, ids) -> np.ndarray:
    return np.isin(r.mask, [k for k, i in enumerate(r.instance_ids, start=1) if i in ids])


def test_a_hand_reaching_over_a_koan_is_found_and_hides_the_koan():
    apart = upright(Spec("d", "yellow", "large"), (60, -120))
    r, frame, cal = render_table([*KOAN, apart], props=_hand_over((0, 0), 85.0))
    assert {o.id for o in r.objects} == {"a", "b", "c", "d"}  # drawn, with depth, but never a label
    hands = find_hands(_heights(frame, cal), frame.intrinsics, cal.matrix)
    assert hands is not None
    assert hands.mask[_pixels(r, ("hand", "sleeve"))].mean() > 0.97  # the hand's and the sleeve's pixels
    assert not hands.mask[_pixels(r, ("d",))].any()  # not a piece standing apart
    assert hidden(np.array([[0.0, 0.0]]), hands.to_dict()).tolist() == [True]
    assert hidden(np.array([[60.0, -120.0]]), hands.to_dict()).tolist() == [False]


def test_no_piece_is_a_hand_not_a_tower_of_three_larges_nor_a_piece_across_two_tips():
    a = upright(Spec("a", "red", "large"), (80, 0))
    b = upright(Spec("b", "red", "large"), (110, 0))
    across = flat_across([a, b], Spec("x", "yellow", "large"), heading=90.0)
    lying = flat(Spec("l", "black", "large"), (-80, 40), 30.0)
    r, frame, cal = render_table([*KOAN, a, b, across, lying])
    assert find_hands(_heights(frame, cal), frame.intrinsics, cal.matrix) is None


def test_a_detection_box_mostly_on_a_hand_is_not_a_piece():
    mask = np.zeros((100, 100), bool)
    mask[:, :50] = True
    hands = Hands(mask, ())
    on = boxes_on_hands(np.array([[10, 10, 40, 40], [60, 10, 90, 40], [35, 10, 75, 40]], float), hands)
    assert on.tolist() == [True, False, True]  # the third is 15 of 40 columns on it: over the 30 % line


def test_the_pipeline_fits_nothing_to_a_hand_and_says_where_it_is():
    piece = upright(Spec("p", "red", "large"), (100, -100))
    r, frame, cal = render_table([piece], props=_hand_over((60, 40), 70.0))
    ys, xs = np.nonzero(r.mask == r.instance_ids.index("hand") + 1)  # the hand has no label: boxed from its mask
    hand_box = np.array([[xs.min(), ys.min(), xs.max(), ys.max()]], np.float32)
    det = one_box(r, {"p"}, "red_large")
    det = Detections(np.vstack([det.xyxy, hand_box]), np.array([det.class_id[0]] * 2), np.array([0.9, 0.9], np.float32))
    res = perceive_one_frame(frame, cal, det)
    assert [p.color for p in res.scene.pieces] == ["red"]  # the piece, and nothing on the hand
    assert res.scene.extra["perception"]["hands"]


def _track(tracker: Tracker, pieces, t_ms: float, hands=None, stones=()):
    extra = {"perception": {"hands": hands}} if hands else {}
    return tracker.update(Scene(tuple(pieces), tuple(stones), extra), 0, t_ms)


FOOTPRINT = [[[-30.0, -30.0], [30.0, -30.0], [30.0, 30.0], [-30.0, 30.0]]]
PIECE = upright(Spec("r1", "red", "small"), (0, 0))


def test_a_piece_a_hand_hides_is_held_as_long_as_the_hand_stays():
    tr = Tracker(PipelineConfig())
    for k in range(12):
        _track(tr, [PIECE], k * 167.0)
    for k in range(12, 60):  # eight seconds under a hand, never read
        scene, _, _ = _track(tr, [], k * 167.0, FOOTPRINT)
    assert [p.id for p in scene.pieces] == ["p1"]


def test_a_piece_gone_when_the_hand_leaves_is_dropped_as_one_unread_is():
    cfg = PipelineConfig()
    tr = Tracker(cfg)
    for k in range(12):
        _track(tr, [PIECE], k * 167.0)
    for k in range(12, 20):
        _track(tr, [], k * 167.0, FOOTPRINT)
    shown = []
    for k in range(20, 20 + cfg.lost_at_rest_frames):
        scene, _, _ = _track(tr, [], k * 167.0)
        shown.append(len(scene.pieces))
    assert shown[:-1] == [1] * (cfg.lost_at_rest_frames - 1) and shown[-1] == 0


def test_a_reading_under_a_hand_neither_moves_a_piece_nor_shows_a_new_one():
    tr = Tracker(PipelineConfig())
    for k in range(12):
        _track(tr, [PIECE], k * 167.0)
    knocked = replace(flat(Spec("r1", "red", "small"), (4, 3), 50.0), id="r1")
    phantom = upright(Spec("g", "yellow", "large"), (15, -10))
    for k in range(12, 30):
        scene, _, _ = _track(tr, [knocked, phantom], k * 167.0, FOOTPRINT)
    (p,) = scene.pieces
    assert p.id == "p1" and np.allclose(p.axis, PIECE.axis)


def test_a_stone_a_hand_hides_stays_on_the_table_shown():
    tr = Tracker(PipelineConfig())
    stone = Stone("s1", "white", (10.0, 0.0, 0.0))
    far = Stone("s2", "black", (200.0, 0.0, 0.0))
    _track(tr, [PIECE], 0.0, stones=(stone, far))
    scene, _, _ = _track(tr, [PIECE], 167.0, FOOTPRINT, stones=(far,))
    assert sorted(s.color for s in scene.stones) == ["black", "white"]
    scene, _, _ = _track(tr, [PIECE], 333.0, stones=(far,))
    assert [s.color for s in scene.stones] == ["black"]  # the hand gone, the stone with it


def test_a_reading_beyond_the_hand_of_a_piece_it_holds_goes_to_no_other_piece():
    """A held piece's reading from just beyond the hand's reach must not be taken by its
    neighbour's track (a black small shown as the green large beside it)."""
    tr = Tracker(PipelineConfig())
    under = upright(Spec("u", "green", "large"), (0, 0))
    beside = upright(Spec("b", "black", "small"), (40, 0))
    for k in range(12):
        _track(tr, [under, beside], k * 167.0)
    edge = [[[-60.0, -30.0], [-10.0, -30.0], [-10.0, 30.0], [-60.0, 30.0]]]  # reaches `under`, not `beside`
    seen_off = replace(under, position=(22.0, 0.0, 0.0))  # the held piece, half hidden, read off its place
    for k in range(12, 30):
        scene, _, _ = _track(tr, [seen_off, beside], k * 167.0, edge)
    assert sorted((p.color, p.size) for p in scene.pieces) == [("black", "small"), ("green", "large")]


def test_the_master_is_told_while_a_hand_is_over_the_table_and_not_after():
    from zendo.game import Game

    g = Game("t")
    g.observe(Scene((PIECE,), (), {"perception": {"hands": FOOTPRINT}}))
    assert g.master_state()["hands_in_view"] == 1
    g.observe(Scene((PIECE,), ()))
    assert g.master_state()["hands_in_view"] == 0


def test_the_master_is_told_which_koans_a_hand_hides():
    from zendo.game import Game

    tr, g = Tracker(PipelineConfig()), Game("t")
    far = upright(Spec("f", "blue", "large"), (200, 0))
    for k in range(12):
        scene, _, _ = _track(tr, [PIECE, far], k * 167.0)
        g.observe(scene)
    red = next(p.id for p in scene.pieces if p.color == "red")
    scene, _, _ = _track(tr, [far], 12 * 167.0, FOOTPRINT)
    assert scene.extra["perception"]["held"] == [red]
    g.observe(scene)
    assert g.master_state()["hands_over"] == [g.koan_of_piece(red).id]
    scene, _, _ = _track(tr, [PIECE, far], 13 * 167.0)
    g.observe(scene)
    assert g.master_state()["hands_over"] == []
