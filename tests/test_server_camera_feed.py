"""The dashboard on a camera source: the bundled recording goes through the perception pipeline."""
import time

import pytest

from server.feed import make_feed
from vision.frames import DEMO_RECORDING
from zendo.koans import split_koans


@pytest.mark.parametrize("workers", [1, 2])
def test_a_recording_source_is_perceived_into_pieces_and_koans(workers):
    """One frame at a time, or frames read by two worker processes at once (`serve --workers`)."""
    feed = make_feed(str(DEMO_RECORDING), workers=workers)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(feed.scene().pieces) < 8:
            time.sleep(0.5)
        scene = feed.scene()
        assert feed.status() is None
        assert len(scene.pieces) >= 8  # 12 on the table; pieces hidden under others cannot be seen
        assert len(split_koans(scene)) >= 4
        picture = feed.picture()
        assert picture.png[:8] == b"\x89PNG\r\n\x1a\n"
        # the projection puts the perceived pieces inside the image
        for p in scene.pieces:
            u, v = picture.project(p.tip[None, :])[0]
            assert 0 <= u < picture.width and 0 <= v < picture.height
    finally:
        feed.close()


def test_a_camera_table_is_judged_with_the_cameras_wider_band():
    from server.feed import CAMERA_BAND, SceneFeed
    from server.service import TableService
    from zendo.build import Spec, beside, upright
    from zendo.scene import Scene
    from zendo.facts import DEFAULT_BAND
    from zendo.store import Store

    class StillCamera(SceneFeed):
        judgment_band = dict(CAMERA_BAND)

    a = upright(Spec("a", "red", "large"))
    table = Scene((a, beside(a, Spec("b", "blue", "large"), gap=1.5)))  # 1.5 mm apart: clearly apart to exact
    rule = "A koan has the Buddha-nature if and only if it contains at least two pieces that are touching each other."
    exact = TableService(SceneFeed(table), Store(":memory:"), rule=rule)
    camera = TableService(StillCamera(table), Store(":memory:"), rule=rule)
    assert exact.game.relations.band == DEFAULT_BAND and camera.game.relations.band == CAMERA_BAND
    (k,) = [k.id for k in exact.game.active_koans()]
    assert not exact.game.proposed(k).judgment_call
    (k,) = [k.id for k in camera.game.active_koans()]
    assert camera.game.proposed(k).judgment_call  # within the camera's error of touching


def test_workers_on_a_known_table_are_said_to_have_nothing_to_do(caplog):
    """`serve --workers` reads a camera's frames; the demo table is drawn, so the option is told
    to do nothing rather than silently dropped."""
    import logging

    from server.feed import SceneFeed

    with caplog.at_level(logging.INFO, logger="server.feed"):
        feed = make_feed("demo", workers=4)
    assert isinstance(feed, SceneFeed)
    assert any("--workers 4 has nothing to do" in r.getMessage() for r in caplog.records)


def test_perception_workers_that_cannot_start_are_told_as_perception_stopping(tmp_path):
    """The Master reads that perception stopped and why, not that the camera did."""
    from server.feed import FrameFeed
    from vision.parallel import StreamPerceiver

    feed = FrameFeed(str(DEMO_RECORDING), perceive=StreamPerceiver(2, weights=tmp_path / "gone.pt"), every=1)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and feed.status() is None:
            time.sleep(0.2)
        assert feed.status() == f"perception stopped: {tmp_path / 'gone.pt'}: no detector weights"
    finally:
        feed.close()


def test_a_camera_feed_hands_on_the_hands_it_read_in_the_last_seconds():
    """The game looks at the table about once a second; a hand's visit between two looks must
    still reach it (zendo.game calls katsu only where a hand came near)."""
    from dataclasses import replace

    from server.feed import RecentHands
    from server.testing import small_table
    from zendo.game import HAND_WINDOW_S

    hand = [[0.0, 0.0], [80.0, 0.0], [80.0, 80.0]]
    table = small_table()
    cam = lambda **per: replace(table, extra={"perception": {"doubts": [], "hands": [], "held": [], **per}})  # noqa: E731
    recent = RecentHands()
    assert "hands_seen" not in recent.scene_with(cam(), 10.0).extra["perception"]  # none yet
    recent.scene_with(cam(hands=[hand], held=["r1"]), 11.0)
    later = recent.scene_with(cam(), 11.0 + HAND_WINDOW_S - 0.5).extra["perception"]["hands_seen"]
    assert later == [{"at": 11.0, "hands": [hand], "held": ["r1"]}]
    assert "hands_seen" not in recent.scene_with(cam(), 11.0 + HAND_WINDOW_S + 0.5).extra["perception"]
    assert recent.scene_with(table, 12.0) is table  # no camera's table: nothing to add


def test_the_recording_feed_passes_a_hand_read_once_to_the_frames_after_it():
    from dataclasses import replace

    from server.feed import FrameFeed
    from server.testing import small_table

    hand = [[0.0, 0.0], [80.0, 0.0], [80.0, 80.0]]
    first = []

    def perceive(frame):
        per = {"doubts": [], "hands": [] if first else [hand], "held": []}
        first.append(frame.index)
        return replace(small_table(), extra={"perception": per})

    feed = FrameFeed(str(DEMO_RECORDING), perceive=perceive, every=1)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(first) < 3:
            time.sleep(0.05)
        per = feed.scene().extra["perception"]
        assert len(first) >= 3 and per["hands"] == [] and [s["hands"] for s in per["hands_seen"]] == [[hand]]
    finally:
        feed.close()
