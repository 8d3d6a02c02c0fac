"""A piece taken away is told at once (vision/seen.py): where the tracker's piece stood, depth shows
bare table, and a piece unread there two frames running is gone; a piece the detector only missed
still shows in depth and is kept as long as before."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tests.perception_helpers import one_box, render_table
from vision.detect import Detections
from vision.frames import Frame
from vision.pipeline import Pipeline, PipelineConfig, Tracker
from vision.seen import SeenDepth
from vision.synth.hands import hand_props
from zendo.build import Spec, flat, upright
from zendo.scene import Scene

TAKEN = upright(Spec("t", "red", "small"), (0, 0))
LYING = flat(Spec("l", "green", "small"), (-70, 30), 20.0)
STAYS = flat(Spec("s", "blue", "medium"), (70, 0), 40.0)
FRAME_MS = 167.0  # the dashboard's 6 frames a second


def _seen(pieces, props=()) -> SeenDepth:
    _, frame, cal = render_table(pieces, props=props)
    return SeenDepth.of(frame, cal)


def test_where_a_piece_stands_its_place_is_not_bare():
    assert np.all(_seen([TAKEN, LYING, STAYS]).bare([TAKEN, LYING, STAYS]) < 0.4)  # its lowest edge touches the table


def test_where_a_piece_was_taken_away_its_place_is_bare_table():
    bare = _seen([STAYS]).bare([TAKEN, LYING, STAYS])
    assert np.all(bare[:2] > 0.9) and bare[2] < 0.4


def test_a_place_a_hand_hides_is_not_bare():
    hand = hand_props((0.0, 0.0, 70.0), (1.0, 0.3), (214, 160, 124), (40, 60, 120))
    assert _seen([STAYS], props=hand).bare([TAKEN])[0] < 0.4


def test_where_depth_dropped_out_a_place_is_not_judged():
    seen = _seen([STAYS])
    blind = replace(seen, depth=np.zeros_like(seen.depth))
    assert np.isnan(blind.bare([TAKEN, STAYS])).all()


def _at_rest(tr: Tracker, seen: SeenDepth) -> int:
    for k in range(12):  # two seconds read: at rest, as a marked koan's pieces are
        tr.update(Scene((TAKEN, STAYS), ()), k, k * FRAME_MS, seen)
    return 12


def test_a_piece_unread_where_the_table_shows_bare_is_gone_in_two_frames():
    tr = Tracker(PipelineConfig())
    k = _at_rest(tr, _seen([TAKEN, STAYS]))
    after = _seen([STAYS])
    shown = [len(tr.update(Scene((STAYS,), ()), k + j, (k + j) * FRAME_MS, after)[0].pieces) for j in range(2)]
    assert shown == [2, 1]


def test_a_piece_the_detector_misses_where_it_stands_is_kept_as_long_as_before():
    cfg = PipelineConfig()
    tr = Tracker(cfg)
    seen = _seen([TAKEN, STAYS])
    k = _at_rest(tr, seen)
    shown = [len(tr.update(Scene((STAYS,), ()), k + j, (k + j) * FRAME_MS, seen)[0].pieces)
             for j in range(cfg.lost_at_rest_frames)]
    assert shown == [2] * (cfg.lost_at_rest_frames - 1) + [1]


def test_the_pipeline_hands_each_frame_s_depth_to_its_tracker():
    """End to end: a piece read for two seconds, then taken away (the detector reads nothing
    there), is off the tracked table in the second frame without it."""
    r_before, frame_before, cal = render_table([TAKEN, STAYS])
    _, frame_after, _ = render_table([STAYS])
    boxes = one_box(r_before, {"t"}, "red_small")
    nothing = Detections(np.zeros((0, 4), np.float32), np.zeros(0, int), np.zeros(0, np.float32))
    frames = [(frame_before, boxes)] * 12 + [(frame_after, nothing)] * 2
    state = {}
    pipe = Pipeline(detector=lambda rgb: state["det"], calibration=cal)
    shown = []
    for k, (f, det) in enumerate(frames):
        state["det"] = det
        res = pipe.process(Frame(f.color, f.depth, f.intrinsics, k * FRAME_MS, k))
        shown.append(sorted(p.color for p in res.tracked.pieces if p.color == "red"))
    assert shown[11] == ["red"] and shown[12] == ["red"] and shown[13] == []
