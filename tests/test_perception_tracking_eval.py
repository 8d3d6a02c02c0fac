"""`zendo eval-tracking` (vision/track_eval.py): what the tracked table showed, frame by frame,
against a still table's truth: extra pieces, renamed pieces, false katsu in the game."""
from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from vision.track_eval import MARK_AT_MS, StreamScore
from zendo.build import Spec, upright
from zendo.cli import main
from zendo.scene import Scene, Stone

PIECES = (upright(Spec("a", "red", "large"), (0, 0)), upright(Spec("b", "blue", "small"), (30, 0)))


def _truth() -> dict:
    scene = Scene(PIECES, (Stone("s1", "white", (0, -40, 0)),))
    return {"scene": scene.to_dict(), "camera_to_table": np.eye(4).tolist(),
            "objects": [{"id": p.id, "kind": "piece", "visible_px": 500} for p in PIECES]}


def _frame(pieces, t_ms: float = 0.0, events=()):
    scene = Scene(tuple(pieces), (Stone("s1", "white", (0, -40, 0)),))
    return SimpleNamespace(tracked=scene, scene=scene, events=tuple(events), timestamp_ms=t_ms)


def test_a_piece_where_no_true_piece_stands_is_counted_extra_on_the_table_shown():
    score = StreamScore(_truth())
    ghost = upright(Spec("g", "green", "medium"), (200, 0))
    score.add(_frame(PIECES + (ghost,)), np.eye(4))
    t = score.tallies()
    assert t["shown_extra"] == 1 and t["shown_found"] == 2 and t["shown_class_ok"] == 2


def test_a_true_piece_shown_under_another_id_is_an_id_change():
    score = StreamScore(_truth())
    score.add(_frame(PIECES), np.eye(4))
    score.add(_frame((replace(PIECES[0], id="p9"), PIECES[1])), np.eye(4))
    assert score.tallies()["id_changes"] == 1


def test_a_piece_read_in_another_colour_counts_against_colour_and_size():
    score = StreamScore(_truth())
    score.add(_frame((replace(PIECES[0], color="yellow"), PIECES[1])), np.eye(4))
    t = score.tallies()
    assert t["shown_paired"] == 2 and t["shown_class_ok"] == 1


def test_a_katsu_the_game_raises_on_a_still_table_after_the_master_marked_is_false():
    """The Master marks every koan once the table has settled; a piece then vanishing from the
    tracked table makes the game raise katsu, which on a still table is always false."""
    score = StreamScore(_truth())
    score.add(_frame(PIECES, 0.0), np.eye(4))
    score.add(_frame(PIECES, MARK_AT_MS), np.eye(4))  # marked here
    score.add(_frame(PIECES, MARK_AT_MS + 167), np.eye(4))
    assert score.tallies()["game_katsu"] == 0
    score.add(_frame(PIECES[:1], MARK_AT_MS + 333), np.eye(4))
    assert score.tallies()["game_katsu"] == 1


def test_a_change_on_a_cameras_still_table_is_told_to_the_master_alone_and_counted_apart():
    """The tracked table carries its perception block; with no hand near the koan the game tells
    the Master alone, which is no false katsu at the table but is counted as what it is."""
    def cam(pieces, t_ms):
        f = _frame(pieces, t_ms)
        f.tracked = replace(f.tracked, extra={"perception": {"doubts": [], "hands": [], "held": []}})
        return f

    score = StreamScore(_truth())
    for t_ms in (0.0, MARK_AT_MS, MARK_AT_MS + 167):
        score.add(cam(PIECES, t_ms), np.eye(4))
    score.add(cam(PIECES[:1], MARK_AT_MS + 333), np.eye(4))
    t = score.tallies()
    assert t["game_katsu"] == 0 and t["game_katsu_master_only"] == 1


def test_zendo_eval_tracking_records_still_tables_and_scores_them(tmp_path):
    out = tmp_path / "rec"
    res = CliRunner().invoke(main, ["eval-tracking", "--make", str(out), "--n", "1", "--frames", "3", "--seed", "7",
                                    "--no-classifier"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert doc["recordings"] == 1 and doc["frames"] == 3 and doc["confirm_frames"] == 3
    assert doc["read"]["recall_visible"] > 50.0 and doc["shown"]["recall_visible"] > 50.0
    assert len(list(out.glob("*.db3"))) == 1 and len(list(out.glob("*.truth.json"))) == 1


def test_a_recording_without_its_truth_is_named_in_one_line(tmp_path):
    rec = tmp_path / "lone.db3"
    rec.write_bytes(b"SQLite format 3\x00")
    res = CliRunner().invoke(main, ["eval-tracking", str(rec)])
    assert res.exit_code != 0
    assert "lone.truth.json" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_folder_without_recordings_is_refused_in_one_line(tmp_path):
    res = CliRunner().invoke(main, ["eval-tracking", str(tmp_path)])
    assert res.exit_code != 0 and "no .db3 recording" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_the_bundled_recording_tracked_shows_no_extra_piece_and_raises_no_false_katsu():
    """The demo recording, tracked over its 12 frames with the committed weights: each frame
    alone reads a piece too many now and then (one in 133 here), the table shown never does, its
    five koans all settle, and the game, marking them once settled, raises no katsu."""
    from vision.frames import DEMO_RECORDING
    from vision.track_eval import run_track_eval

    doc = run_track_eval([DEMO_RECORDING], progress=False)
    rec = doc["per_recording"][0]
    assert rec["shown_extra"] == 0 and rec["shown_found"] == rec["visible"]
    assert rec["settled"] == rec["koans"] == 5
    assert rec["game_frames_marked"] >= 2 and doc["game_false_katsu"] == 0


# --------------------------------------------------------------------------- a hand over a koan

C = upright(Spec("c", "green", "small"), (200, 0))  # a koan of its own, far off


def _hand_truth(change: str, after_pieces) -> dict:
    """Two koans marked at MARK_AT_MS; a hand over k1 from frame 18, its change in frame 24."""
    koans = [{"id": "k1", "pieces": ["a", "b"]}, {"id": "k2", "pieces": ["c"]}]
    before = Scene((*PIECES, C), (Stone("s1", "white", (0, -40, 0)),), {"koans": koans})
    after = Scene(tuple(after_pieces), before.stones, {"koans": koans})
    objects = lambda s: [{"id": p.id, "kind": "piece", "visible_px": 500} for p in s.pieces]  # noqa: E731
    return {"scene": {**before.to_dict(), "koans": koans}, "camera_to_table": np.eye(4).tolist(),
            "objects": objects(before), "fps": 6,
            "after": {"scene": {**after.to_dict(), "koans": koans}, "objects": objects(after)},
            "hand": {"koan": "k1", "change": change, "piece": "b", "enter": 18, "over": 21, "change_frame": 24,
                     "leave": 30, "gone": 33}}


def _play(score, frames):
    for k, pieces in enumerate(frames):
        score.add(_frame(pieces, k * 1000.0 / 6), np.eye(4))
    return score.tallies()


def test_the_first_katsu_on_the_hands_koan_after_its_change_is_true_and_timed_from_the_change():
    score = StreamScore(_hand_truth("take", (PIECES[0], C)))
    t = _play(score, [(*PIECES, C)] * 30 + [(PIECES[0], C)] * 10)  # the piece shown gone 6 frames after the change
    assert t["game_katsu"] == t["game_katsu_true"] == 1
    h = t["hand"]
    assert h["raised"] and h["raised_after_ms"] == pytest.approx(1000.0) and h["told"] == "take" and h["told_right"]
    assert h["open_at_end"]


def test_a_katsu_before_the_change_is_false_and_a_marked_koan_gone_whole_is_counted():
    score = StreamScore(_hand_truth("take", (PIECES[0], C)))
    # k2 vanishes whole (broken down, not katsu), then k1's piece two frames before the change
    t = _play(score, [(*PIECES, C)] * 20 + [PIECES] * 2 + [PIECES[:1]] * 10)
    assert t["game_marked_broken"] == 1
    assert t["game_katsu"] == 1 and t["game_katsu_true"] == 0 and t["hand"]["raised"] is False


def test_a_katsu_where_the_hand_only_passed_is_false():
    score = StreamScore(_hand_truth("pass", (*PIECES, C)))
    t = _play(score, [(*PIECES, C)] * 30 + [(PIECES[0], C)] * 10)
    assert t["game_katsu"] == 1 and t["game_katsu_true"] == 0 and "raised" not in t["hand"]


def test_a_change_the_game_never_raised_is_counted_missed():
    score = StreamScore(_hand_truth("take", (PIECES[0], C)))
    t = _play(score, [(*PIECES, C)] * 40)
    assert t["game_katsu"] == 0 and t["hand"]["raised"] is False


def test_what_the_master_is_told_is_read_from_the_poses_not_the_ids():
    from vision.track_eval import _what_changed

    a, b = PIECES
    moved = replace(b, id="p9", position=(b.position[0] + 20, b.position[1], b.position[2]))
    d = lambda *ps: [p.to_dict() for p in ps]  # noqa: E731
    assert _what_changed(d(a, b), d(a, moved)) == "knock"  # tracked afresh under a new id: moved all the same
    assert _what_changed(d(a, b), d(a)) == "take"
    assert _what_changed(d(a), d(a, b)) == "add"
    assert _what_changed(d(a, b), d(a, moved, C)) == "more"


def test_hands_recordings_need_make_and_enough_frames_said_in_one_line(tmp_path):
    res = CliRunner().invoke(main, ["eval-tracking", "--hands", str(tmp_path)])
    assert res.exit_code != 0 and "--make" in res.output and len(res.output.strip().splitlines()) == 1
    res = CliRunner().invoke(main, ["eval-tracking", "--make", str(tmp_path / "r"), "--hands", "--frames", "20"])
    assert res.exit_code != 0 and "48 frames" in res.output and len(res.output.strip().splitlines()) == 1


def test_a_change_to_a_koan_whose_false_alert_is_still_open_is_told_by_the_alerts_update():
    score = StreamScore(_hand_truth("take", (PIECES[0], C)))
    ghost = upright(Spec("g", "green", "medium"), (0, 30))
    # a phantom joins k1 before the change (a false katsu, left open), then the hand's piece goes
    t = _play(score, [(*PIECES, C)] * 12 + [(*PIECES, C, ghost)] * 18 + [(PIECES[0], C, ghost)] * 5)
    assert t["game_katsu"] == 1 and t["game_katsu_true"] == 0
    assert t["hand"]["raised"] and t["hand"]["raised_after_ms"] == pytest.approx(1000.0)


def test_recordings_scored_by_worker_processes_are_each_read_whole_with_the_settings_given():
    """`zendo eval-tracking --workers 2`: each recording read whole by one worker, with the
    tracker's settings given (here --confirm 1, which shows the demo recording's phantoms; the
    default, 3 sightings, shows none). Not figure for figure the one process's: on a busy
    machine the .db3 playback hands a frame it lost over last (vision.frames), which moves when
    a koan settles (a CI run saw 1500 against 1583 ms); the same pool scoring render folders,
    which play back alike every time, gives every figure (test_perception_parallel)."""
    from vision.frames import DEMO_RECORDING
    from vision.track_eval import run_track_eval

    one = run_track_eval([DEMO_RECORDING, DEMO_RECORDING], progress=False, confirm_frames=1)
    two = run_track_eval([DEMO_RECORDING, DEMO_RECORDING], progress=False, confirm_frames=1, workers=2)
    assert one.pop("workers") == 1 and two.pop("workers") == 2
    assert two["recordings"] == 2 and two["confirm_frames"] == 1
    for alone, shared in zip(one["per_recording"], two["per_recording"]):
        for key in ("recording", "frames", "visible"):  # what a recording holds, whatever the order
            assert shared[key] == alone[key], key
        assert shared["frames"] == 12 and shared["shown_extra"] > 0
