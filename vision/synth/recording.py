"""RealSense recordings (.db3, ROS2 rosbag) of rendered frames, written through pyrealsense2's
own recorder on a `software_device`, so they play back through `rs.pipeline` like a real camera.

The device has a depth sensor (the left IR imager's view, the D435's depth intrinsics) and a
colour sensor, with the factory-like depth-to-colour extrinsics registered, so `rs.align` does
real work on playback.

Why aligned depth came back all zeros in a first try: the software depth sensor had no
`depth_units` option, so every recorded depth frame carries units = 0 (`frame.get_units()` is 0
on playback even though the playback device reports a depth scale of 0.001). `rs.align` turns
each depth value into metres with the frame's units before reprojecting it, so every point lands
at z = 0 and is skipped: the aligned image stays empty. Adding the read-only option
`depth_units` = 0.001 to the depth sensor *before* recording fixes it (raw depth was fine
because it is copied without being scaled). Separately, identical depth and colour intrinsics
with identity extrinsics leave whole rows and columns empty after alignment (rounding of the
half-pixel footprint); real, different intrinsics do not.
"""
from __future__ import annotations

import gc
import json
import logging
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from ..frames import Intrinsics
from .camera import LEFT_IMAGER_IN_COLOR
from .render import Render

log = logging.getLogger(__name__)

DEPTH_UNITS_M = 0.001


def _rs_intrinsics(rs, intr: Intrinsics):
    i = rs.intrinsics()
    i.width, i.height = intr.width, intr.height
    i.fx, i.fy, i.ppx, i.ppy = intr.fx, intr.fy, intr.ppx, intr.ppy
    i.model = rs.distortion.brown_conrady
    i.coeffs = [0.0] * 5
    return i


def write_recording(path: str | Path, renders: Iterable[Render], *, fps: int = 30, truth: dict | None = None) -> int:
    """Write rendered frames (each with `raw_depth`) to a RealSense .db3 recording; returns the
    number of frames. `truth` (JSON-able) is written beside it as <name>.truth.json."""
    import pyrealsense2 as rs

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    it = iter(renders)
    first = next(it, None)
    if first is None:
        raise ValueError("no frames to record")
    if first.raw_depth is None:
        raise ValueError("renders for a recording need raw_depth=True")
    ci, di = first.intrinsics, first.raw_depth_intrinsics

    dev = rs.software_device()
    dev.register_info(rs.camera_info.name, "Intel RealSense D435 (synthetic)")
    dev.register_info(rs.camera_info.serial_number, "000000000000")
    dev.register_info(rs.camera_info.product_line, "D400")
    depth_sensor = dev.add_sensor("Stereo Module")
    color_sensor = dev.add_sensor("RGB Camera")
    ds = rs.video_stream()
    ds.type, ds.index, ds.uid = rs.stream.depth, 0, 0
    ds.width, ds.height, ds.fps, ds.bpp, ds.fmt = di.width, di.height, fps, 2, rs.format.z16
    ds.intrinsics = _rs_intrinsics(rs, di)
    cs = rs.video_stream()
    cs.type, cs.index, cs.uid = rs.stream.color, 0, 1
    cs.width, cs.height, cs.fps, cs.bpp, cs.fmt = ci.width, ci.height, fps, 3, rs.format.rgb8
    cs.intrinsics = _rs_intrinsics(rs, ci)
    depth_profile = depth_sensor.add_video_stream(ds).as_video_stream_profile()
    color_profile = color_sensor.add_video_stream(cs).as_video_stream_profile()
    # the fix: without this option, recorded depth frames carry units 0 and rs.align drops them all
    depth_sensor.add_read_only_option(rs.option.depth_units, DEPTH_UNITS_M)
    ext = rs.extrinsics()
    ext.rotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    ext.translation = [float(v) / 1000.0 for v in LEFT_IMAGER_IN_COLOR]  # p_color = p_depth + t (metres)
    depth_profile.register_extrinsics_to(color_profile, ext)
    dev.create_matcher(rs.matchers.default)

    recorder = rs.recorder(str(path), dev)
    depth_sensor.open(depth_profile)
    color_sensor.open(color_profile)
    queue = rs.frame_queue(64)
    depth_sensor.start(queue)
    color_sensor.start(queue)
    keep = []  # the SDK reads the pixel buffers after on_video_frame returns: hold them all to the end
    n = 0
    delivered = 0
    try:
        for k, r in enumerate(_chain(first, it)):
            ts = k * 1000.0 / fps
            depth = np.ascontiguousarray(r.raw_depth)
            color = np.ascontiguousarray(r.color)
            keep += [depth, color]
            f = rs.software_video_frame()
            f.pixels, f.bpp, f.stride = depth, 2, di.width * 2
            f.timestamp, f.domain, f.frame_number = ts, rs.timestamp_domain.hardware_clock, k + 1
            f.depth_units = DEPTH_UNITS_M
            f.profile = depth_profile
            depth_sensor.on_video_frame(f)
            g = rs.software_video_frame()
            g.pixels, g.bpp, g.stride = color, 3, ci.width * 3
            g.timestamp, g.domain, g.frame_number = ts, rs.timestamp_domain.hardware_clock, k + 1
            g.profile = color_profile
            color_sensor.on_video_frame(g)
            n += 1
            # lockstep: the software sensors drop a frame that arrives while the last one is still
            # being dispatched, so wait for this pair to come through before feeding the next
            deadline = time.monotonic() + 5.0
            while delivered < 2 * n and time.monotonic() < deadline:
                delivered += _drain(queue, wait_ms=50)
        if delivered < 2 * n:
            log.warning("recording %s: %d of %d frames came through", path, delivered, 2 * n)
    finally:
        depth_sensor.stop(); color_sensor.stop()
        depth_sensor.close(); color_sensor.close()
        del recorder, depth_sensor, color_sensor, depth_profile, color_profile, dev, queue
        gc.collect()  # the recorder finishes the file in its destructor: make that happen now
        del keep
    _wait_until_written(path, 2 * n)
    if truth is not None:
        truth_path(path).write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    log.info("wrote %d frames to %s", n, path)
    return n


def _wait_until_written(path: Path, images: int, timeout_s: float = 10.0) -> None:
    """Return once the file holds every image message, so a reader never sees half a recording."""
    from ..frames import recorded_images

    deadline = time.monotonic() + timeout_s
    count = None
    while time.monotonic() < deadline:
        count = recorded_images(path)
        if count is not None and count >= images:
            return
        gc.collect()
        time.sleep(0.05)
    raise RuntimeError(f"{path}: the recorder wrote {count or 0} of {images} images")


def _drain(queue, wait_ms: int) -> int:
    """Take every frame the sensors have delivered so far (waiting up to wait_ms for the first)."""
    ok, _ = queue.try_wait_for_frame(wait_ms)
    if not ok:
        return 0
    count = 1
    while True:
        ok, _ = queue.try_wait_for_frame(0)
        if not ok:
            return count
        count += 1


def _chain(first, rest):
    yield first
    yield from rest


def truth_path(recording: str | Path) -> Path:
    p = Path(recording)
    return p.with_name(p.stem + ".truth.json")
