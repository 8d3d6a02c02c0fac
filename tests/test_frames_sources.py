"""Frame sources and RealSense recordings (issue 5, clauses 3, 4, 6, 7)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from vision.frames import DEMO_RECORDING, DEMO_TABLE, Frame, FrameSourceError, open_source
from vision.synth import CameraPose, color_intrinsics, render
from vision.synth.demo import demo_table
from vision.synth.recording import truth_path, write_recording
from zendo.cli import main
from zendo.scene import load_scene

POSE = CameraPose.looking_at(500, 25)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    scene = demo_table()
    intr = color_intrinsics(640, 480)
    renders = [render(scene, POSE, intr, seed=[7, i], raw_depth=True) for i in range(3)]
    path = tmp_path_factory.mktemp("rec") / "t.db3"
    n = write_recording(path, renders, fps=15, truth={"hello": 1})
    return path, renders, n


def test_recording_round_trips_frames_and_intrinsics(recording):
    path, renders, n = recording
    src = open_source(str(path))
    frames = list(src.frames())
    src.close()
    assert n == 3 and len(frames) == 3
    assert sorted(f.index for f in frames) == [0, 1, 2]
    frames.sort(key=lambda f: f.timestamp_ms)  # a frame the SDK lost is re-read after the others
    for k, (f, r) in enumerate(zip(frames, renders)):
        assert isinstance(f, Frame)
        assert np.array_equal(f.color, r.color)  # colour is stored losslessly
        assert f.timestamp_ms == pytest.approx(k * 1000 / 15, abs=1e-3)
    ci = renders[0].intrinsics
    fi = frames[0].intrinsics
    assert (fi.width, fi.height) == (ci.width, ci.height)
    for a in ("fx", "fy", "ppx", "ppy"):
        assert getattr(fi, a) == pytest.approx(getattr(ci, a), abs=1e-3)
    assert fi.depth_scale_mm == pytest.approx(1.0)
    assert json.loads(truth_path(path).read_text()) == {"hello": 1}


def test_aligned_depth_is_not_empty_and_matches_the_colour_view(recording):
    """rs.align maps the depth camera's view (other intrinsics, 15 mm away) onto colour pixels."""
    path, renders, _ = recording
    src = open_source(str(path))
    f = next(iter(src.frames()))
    src.close()
    assert f.depth.shape == (480, 640) and f.depth.dtype == np.uint16
    truth = renders[0].depth_true
    ok = (f.depth > 0) & (truth > 0)
    assert ok.mean() > 0.9
    err = np.abs(f.depth[ok].astype(float) - truth[ok])
    assert np.median(err) < 2.0  # the noise model at 0.5-0.6 m, not a misalignment
    # pieces land where the colour camera sees them: depth on piece pixels is nearer than the table
    piece = (renders[0].mask > 0) & ok
    assert np.median(np.abs(f.depth[piece].astype(float) - truth[piece])) < 4.0


def test_demo_recording_ships_and_plays():
    assert DEMO_RECORDING.is_file() and DEMO_RECORDING.stat().st_size <= 10 * 1024 * 1024
    load_scene(DEMO_TABLE)
    src = open_source("demo")
    frames = list(src.frames())
    src.close()
    assert len(frames) >= 10
    assert frames[0].color.shape == (480, 640, 3) and (frames[0].depth > 0).mean() > 0.9


def test_synthetic_source_from_a_scene_file(tmp_path):
    src = open_source(str(DEMO_TABLE))
    frames = list(src.frames())
    assert len(frames) == 10 and frames[3].index == 3
    assert not np.array_equal(frames[0].depth, frames[1].depth)  # fresh sensor noise each frame
    assert np.array_equal(frames[0].color.shape, (480, 640, 3))


def test_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.db3"
    bad.write_bytes(b"not a recording at all")
    for spec in (str(tmp_path / "missing.db3"), str(bad), str(tmp_path / "nothing.xyz"), "realsense"):
        try:
            src = open_source(spec)
        except FrameSourceError as exc:
            assert "\n" not in str(exc) and str(exc)
        else:  # only a live camera, if one is plugged in, may open
            assert spec == "realsense"
            src.close()
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(FrameSourceError):
        open_source(str(broken))


def test_cli_render_writes_the_camera_files(tmp_path):
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["render", str(DEMO_TABLE), "--out", str(out), "--camera-height", "450",
                                    "--tilt", "20", "--seed", "4"])
    assert res.exit_code == 0, res.output
    cam = json.loads((out / "camera.json").read_text())
    assert set(cam) == {"width", "height", "fx", "fy", "ppx", "ppy", "depth_units"}
    truth = json.loads((out / "truth.json").read_text())
    m = np.array(truth["camera_to_table"])
    assert m[2, 3] == pytest.approx(450)
    import cv2

    depth = cv2.imread(str(out / "depth.png"), cv2.IMREAD_UNCHANGED)
    mask = cv2.imread(str(out / "mask.png"), cv2.IMREAD_UNCHANGED)
    assert depth.dtype == np.uint16 and 300 < np.median(depth[depth > 0]) < 700
    assert set(int(v) for v in np.unique(mask)) - {0} <= set(int(k) for k in truth["mask_values"])
    frame = next(iter(open_source(str(out)).frames()))  # a render folder is a frame source too
    assert np.array_equal(frame.depth, depth)


def test_cli_record_random_table(tmp_path):
    out = tmp_path / "rand.db3"
    res = CliRunner().invoke(main, ["record", "--random", "2", "--out", str(out), "--frames", "2", "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert len(list(open_source(str(out)).frames())) == 2
    assert "scene" in json.loads(truth_path(out).read_text())


def test_cli_errors_are_one_line(tmp_path):
    r = CliRunner()
    for args in (["render", str(tmp_path / "none.json"), "--out", str(tmp_path / "o")],
                 ["record", "--random", "2", "--out", str(tmp_path / "x.bag")],
                 ["render", str(DEMO_TABLE), "--out", str(tmp_path / "o"), "--tilt", "95"]):
        res = r.invoke(main, args)
        assert res.exit_code != 0 and "Traceback" not in res.output
        assert res.output.strip().startswith("error:") and len(res.output.strip().splitlines()) == 1


def test_a_frame_pair_delivered_in_two_halves_is_aligned_like_rs_align(recording):
    """The syncer can hand over depth and colour of one instant separately; such a pair is
    re-projected in numpy, and must agree with rs.align on a pair that came whole."""
    path, renders, n = recording
    src = open_source(str(path))
    try:
        ok, frameset = src._pipe.try_wait_for_frames(5000)
        assert ok
        raw = frameset.get_depth_frame()
        depth = np.asanyarray(raw.get_data()).copy()
        by_rs = np.asanyarray(src._align.process(frameset).get_depth_frame().get_data()).copy()
        ours = src._depth_to_color(depth, raw.get_units(), by_rs.shape[1], by_rs.shape[0])
    finally:
        src.close()
    both = (by_rs > 0) & (ours > 0)
    assert both.sum() > 0.8 * (by_rs > 0).sum()  # covers what rs.align covers
    diff = np.abs(by_rs[both].astype(int) - ours[both].astype(int))
    assert np.median(diff) <= 1 and np.percentile(diff, 99) <= 5  # same depths (mm), edges included
