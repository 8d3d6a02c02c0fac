"""The dashboard on a camera source: the bundled recording goes through the perception pipeline."""
import time

from server.feed import make_feed
from vision.frames import DEMO_RECORDING
from zendo.koans import split_koans


def test_a_recording_source_is_perceived_into_pieces_and_koans():
    feed = make_feed(str(DEMO_RECORDING))
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
