"""Frames and where they come from: a live RealSense, a recording (.db3), a synthetic table.

Every source yields the same `Frame`: RGB colour, depth in the colour camera's pixels (aligned),
the colour intrinsics. A recording plays through the very `rs.pipeline` + `rs.align` code a live
camera uses, so what works on the bundled demo recording works on the table.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator, Protocol

import numpy as np

log = logging.getLogger(__name__)

DATA_DIR = Path(__file__).parent / "data"
DEMO_RECORDING = DATA_DIR / "demo.db3"
DEMO_TABLE = DATA_DIR / "demo_table.json"


class FrameSourceError(RuntimeError):
    """A source that cannot be opened or read; the message is one line."""


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of the colour camera (pixels), and millimetres per depth unit."""

    width: int
    height: int
    fx: float
    fy: float
    ppx: float
    ppy: float
    depth_scale_mm: float = 1.0

    def to_dict(self) -> dict:
        return {
            "width": self.width, "height": self.height, "fx": self.fx, "fy": self.fy,
            "ppx": self.ppx, "ppy": self.ppy, "depth_scale_mm": self.depth_scale_mm,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Intrinsics":
        return cls(int(d["width"]), int(d["height"]), float(d["fx"]), float(d["fy"]),
                   float(d["ppx"]), float(d["ppy"]), float(d.get("depth_scale_mm", 1.0)))

    @property
    def matrix(self) -> np.ndarray:
        return np.array([[self.fx, 0, self.ppx], [0, self.fy, self.ppy], [0, 0, 1.0]])

    def scaled(self, width: int, height: int) -> "Intrinsics":
        sx, sy = width / self.width, height / self.height
        return Intrinsics(width, height, self.fx * sx, self.fy * sy, (self.ppx + 0.5) * sx - 0.5,
                          (self.ppy + 0.5) * sy - 0.5, self.depth_scale_mm)


@dataclass(frozen=True)
class Frame:
    color: np.ndarray  # H x W x 3 uint8 RGB
    depth: np.ndarray  # H x W uint16, depth units (mm by default), aligned to colour
    intrinsics: Intrinsics
    timestamp_ms: float
    index: int

    @cached_property
    def depth_mm(self) -> np.ndarray:
        """Depth as float millimetres (0 where the camera has no depth); computed once per frame,
        since every stage reads it (a frame never changes)."""
        return self.depth.astype(np.float32) * np.float32(self.intrinsics.depth_scale_mm)


class FrameSource(Protocol):
    def frames(self) -> Iterator[Frame]: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- RealSense


def _rs():
    try:
        import pyrealsense2 as rs
    except ImportError as exc:  # pragma: no cover - it is a dependency
        raise FrameSourceError(f"pyrealsense2 cannot be imported ({exc})") from None
    return rs


def _to_rgb(frame, rs) -> np.ndarray:
    img = np.asanyarray(frame.get_data())
    fmt = frame.get_profile().format()
    if fmt == rs.format.rgb8:
        return img.copy()
    if fmt == rs.format.bgr8:
        return img[..., ::-1].copy()
    if fmt in (rs.format.rgba8, rs.format.bgra8):
        rgb = img[..., :3]
        return (rgb if fmt == rs.format.rgba8 else rgb[..., ::-1]).copy()
    if fmt == rs.format.yuyv:
        import cv2

        return cv2.cvtColor(img.reshape(img.shape[0], -1, 2), cv2.COLOR_YUV2RGB_YUYV)
    raise FrameSourceError(f"unsupported colour format {fmt}")


@dataclass(frozen=True)
class _DepthToColor:
    """Depth re-projected into the colour camera, as rs.align does, for the rare frame pair the
    syncer delivers in two halves (rs.align needs both halves in one frameset)."""

    depth_k: tuple[float, float, float, float]  # fx, fy, ppx, ppy of the depth camera
    color_k: tuple[float, float, float, float]
    rotation: tuple[float, ...]  # 3x3 row-major, depth -> colour
    translation: tuple[float, float, float]  # metres

    @classmethod
    def from_profiles(cls, depth_profile, color_profile) -> "_DepthToColor":
        di, ci = depth_profile.get_intrinsics(), color_profile.get_intrinsics()
        ext = depth_profile.get_extrinsics_to(color_profile)
        rot = np.asarray(ext.rotation, float).reshape(3, 3).T  # librealsense stores it column-major
        return cls((di.fx, di.fy, di.ppx, di.ppy), (ci.fx, ci.fy, ci.ppx, ci.ppy),
                   tuple(rot.ravel()), tuple(float(v) for v in ext.translation))

    def __call__(self, depth: np.ndarray, units_m: float, width: int, height: int) -> np.ndarray:
        fx, fy, cx, cy = self.depth_k
        v, u = np.nonzero(depth)
        raw = depth[v, u]
        z = raw.astype(float) * (units_m or 0.001)
        pts = np.column_stack([(u - cx) / fx * z, (v - cy) / fy * z, z])
        pts = pts @ np.asarray(self.rotation).reshape(3, 3).T + np.asarray(self.translation)
        gx, gy, gcx, gcy = self.color_k
        out = np.zeros((height, width), dtype=np.uint16)
        ok = pts[:, 2] > 0
        pts, raw = pts[ok], raw[ok]
        # each depth pixel covers about (colour f / depth f) colour pixels: splat a small square
        reach = max(1, int(np.ceil(gx / fx)))
        cu = np.floor(gx * pts[:, 0] / pts[:, 2] + gcx - (reach - 1) / 2).astype(int)
        cv = np.floor(gy * pts[:, 1] / pts[:, 2] + gcy - (reach - 1) / 2).astype(int)
        order = np.argsort(-raw)  # far first, so nearer surfaces overwrite them
        cu, cv, raw = cu[order], cv[order], raw[order]
        for du in range(reach):
            for dv in range(reach):
                uu, vv = cu + du, cv + dv
                inside = (uu >= 0) & (uu < width) & (vv >= 0) & (vv < height)
                out[vv[inside], uu[inside]] = raw[inside]
        return out


def recorded_images(path: Path, stream: str = "") -> int | None:
    """How many images a .db3 recording holds (it is SQLite), of one stream ("Color", "Depth")
    or all; None if the file cannot tell."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT count(*) FROM messages m JOIN topics t ON t.id = m.topic_id "
                                  "WHERE t.name LIKE ?", (f"%{stream}%/image/data%",)).fetchone()[0])
    except sqlite3.Error:
        return None


class RealSensePipelineSource:
    """Frames from an `rs.pipeline`: a live camera or a recording played back through it.

    Depth is aligned to colour with `rs.align`. A recording is read frame by frame (not in real
    time) and ends at its last frame; a live camera runs until closed.
    """

    def __init__(self, path: str | Path | None = None, *, width: int = 640, height: int = 480, fps: int = 30,
                 timeout_ms: int = 2000):
        rs = _rs()
        self._rs = rs
        self.path = Path(path) if path is not None else None
        self.timeout_ms = timeout_ms
        config = rs.config()
        if self.path is not None:
            if not self.path.is_file():
                raise FrameSourceError(f"{self.path}: no such recording")
            with open(self.path, "rb") as fh:
                head = fh.read(16)
            if not head.startswith(b"SQLite format 3") and not self.path.suffix == ".bag":
                raise FrameSourceError(f"{self.path}: not a RealSense recording (.db3 is an SQLite file)")
            config.enable_device_from_file(str(self.path), repeat_playback=False)
        else:
            if len(rs.context().query_devices()) == 0:
                raise FrameSourceError("no RealSense camera is connected")
            config.enable_stream(rs.stream.depth, width, height, rs.format.z16, fps)
            config.enable_stream(rs.stream.color, width, height, rs.format.rgb8, fps)
        self._config = config
        try:
            profile = self._start()
        except RuntimeError as exc:
            where = str(self.path) if self.path else "RealSense"
            raise FrameSourceError(f"{where}: cannot start ({str(exc).splitlines()[0] if str(exc) else 'error'})") from None
        self._running = True
        self._align = rs.align(rs.stream.color)
        try:
            color_profile = profile.get_stream(rs.stream.color).as_video_stream_profile()
            depth_profile = profile.get_stream(rs.stream.depth).as_video_stream_profile()
        except RuntimeError:
            self.close()
            raise FrameSourceError(f"{self.path or 'RealSense'}: needs both a depth and a colour stream") from None
        self._depth_to_color = _DepthToColor.from_profiles(depth_profile, color_profile)
        ci = color_profile.get_intrinsics()
        try:
            units_m = profile.get_device().first_depth_sensor().get_depth_scale()
        except RuntimeError:
            units_m = 0.001
        self.intrinsics = Intrinsics(ci.width, ci.height, ci.fx, ci.fy, ci.ppx, ci.ppy, round(units_m * 1000.0, 6))

    def frames(self) -> Iterator[Frame]:
        """Every frame. For a recording, a frame the SDK's syncer lost on a busy machine (it happens,
        rarely, in non-real-time playback) is read in a second pass through the same pipeline and
        comes after the others; the recording itself says how many frames it holds."""
        if self.path is None:
            yield from self._play(set(), 0)
            return
        expected = recorded_images(self.path, "Color")
        seen: set[float] = set()
        for _ in range(3):
            for frame in self._play(seen, len(seen)):
                seen.add(round(frame.timestamp_ms, 3))
                yield frame
            if not self._running or expected is None or len(seen) >= expected:
                return
            log.info("%s: %d of %d frames came through; reading the missing ones again", self.path, len(seen), expected)
            self._restart()

    def _start(self):
        """A fresh rs.pipeline on the config; a recording plays as fast as it is read."""
        self._pipe = self._rs.pipeline()
        profile = self._pipe.start(self._config)
        self._playback = None
        if self.path is not None:
            self._playback = profile.get_device().as_playback()
            self._playback.set_real_time(False)
        return profile

    def _restart(self) -> None:
        try:
            self._pipe.stop()
        except RuntimeError:
            pass
        self._start()

    def _play(self, skip: set[float], index: int) -> Iterator[Frame]:
        rs = self._rs
        stalls = 0
        pending: dict[str, tuple] = {}
        while self._running:
            ok, frameset = self._pipe.try_wait_for_frames(self.timeout_ms)
            if not ok:
                if self.path is not None:
                    stalls += 1
                    if stalls <= 5 and self._still_playing():
                        continue  # a busy machine, not the end: the file has frames left
                    return  # end of the recording
                raise FrameSourceError("RealSense: no frames arrived (camera unplugged?)")
            stalls = 0
            raw_depth, raw_color = frameset.get_depth_frame(), frameset.get_color_frame()
            if raw_depth and raw_color:
                pending.clear()
                if round(float(raw_color.get_timestamp()), 3) in skip:
                    continue
                aligned = self._align.process(frameset)
                depth, color = aligned.get_depth_frame(), aligned.get_color_frame()
                yield self._frame(_to_rgb(color, rs), np.asanyarray(depth.get_data()).copy(),
                                  depth.get_units(), float(color.get_timestamp()), index)
                index += 1
                continue
            # The syncer sometimes hands over depth and colour of one instant separately (a busy
            # machine replaying a file); pair them by timestamp instead of dropping the frame.
            for kind, f in (("depth", raw_depth), ("color", raw_color)):
                if f:
                    data = _to_rgb(f, rs) if kind == "color" else np.asanyarray(f.get_data()).copy()
                    pending[kind] = (float(f.get_timestamp()), data, f.get_units() if kind == "depth" else 0.0)
            if "depth" in pending and "color" in pending and abs(pending["depth"][0] - pending["color"][0]) < 1.0:
                (ts, color_rgb, _), (_, depth_raw, units) = pending.pop("color"), pending.pop("depth")
                if round(ts, 3) in skip:
                    continue
                h, w = color_rgb.shape[:2]
                yield self._frame(color_rgb, self._depth_to_color(depth_raw, units, w, h), units, ts, index)
                index += 1

    def _frame(self, color: np.ndarray, depth: np.ndarray, units_m: float, ts: float, index: int) -> Frame:
        units_mm = round(units_m * 1000.0, 6)
        intr = self.intrinsics
        if units_mm > 0 and abs(units_mm - intr.depth_scale_mm) > 1e-9:
            intr = Intrinsics(intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy, units_mm)
        return Frame(color, depth, intr, ts, index)

    def _still_playing(self) -> bool:
        """A wait that times out before the end of a file is the machine being slow, not the end.

        Non-real-time playback only moves as fast as it is read; under load a frame can take longer
        than the timeout, which used to end a recording early (a flaky two-frame read in CI)."""
        rs = self._rs
        try:
            playing = self._playback.current_status() == rs.playback_status.playing
            return playing and self._playback.get_position() < self._playback.get_duration().total_seconds() * 1e9
        except (RuntimeError, AttributeError):
            return False

    def close(self) -> None:
        if self._running:
            self._running = False
            try:
                self._pipe.stop()
            except RuntimeError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------- files and synthesis


def render_folder_intrinsics(folder: str | Path) -> Intrinsics:
    """A `zendo render` folder's camera intrinsics, once its three files are there: the cheap half
    of reading one (no image decoded), for commands that check many folders before their work.
    A one-line error names the file and what is wrong with it."""
    folder = Path(folder)
    for name in ("camera.json", "color.png", "depth.png"):
        # checked before OpenCV reads them: it prints its own warning for a missing image
        if not (folder / name).is_file():
            raise FrameSourceError(f"{folder}: not a render folder (missing {name})")
    try:
        cam = json.loads((folder / "camera.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        raise FrameSourceError(f"{folder}: camera.json is not JSON") from None
    try:
        return Intrinsics(int(cam["width"]), int(cam["height"]), float(cam["fx"]), float(cam["fy"]),
                          float(cam["ppx"]), float(cam["ppy"]), float(cam.get("depth_units", 0.001)) * 1000.0)
    except KeyError as exc:
        raise FrameSourceError(f"{folder}: camera.json has no {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError):
        raise FrameSourceError(f"{folder}: camera.json's intrinsics are not numbers") from None


class RenderFolderSource:
    """One frame from a `zendo render` folder (color.png, depth.png, camera.json)."""

    def __init__(self, folder: str | Path):
        import cv2

        self.folder = Path(folder)
        intr = render_folder_intrinsics(self.folder)
        color = cv2.imread(str(self.folder / "color.png"), cv2.IMREAD_COLOR)
        depth = cv2.imread(str(self.folder / "depth.png"), cv2.IMREAD_UNCHANGED)
        problem = ("color.png is not an image" if color is None else
                   "depth.png is not an image" if depth is None else
                   "depth.png is not 16-bit depth" if depth.dtype != np.uint16 or depth.ndim != 2 else
                   "color.png and depth.png differ in size" if color.shape[:2] != depth.shape else None)
        if problem:
            raise FrameSourceError(f"{self.folder}: {problem}")
        self._frame = Frame(color[..., ::-1].copy(), depth, intr, 0.0, 0)

    def frames(self) -> Iterator[Frame]:
        yield self._frame

    def close(self) -> None:
        pass


class SyntheticSource:
    """Frames rendered from a scene: the camera stands still, every frame has fresh sensor noise."""

    def __init__(self, scene, *, n_frames: int | None = 10, width: int = 640, height: int = 480,
                 camera_height_mm: float = 600.0, tilt_deg: float = 30.0, seed: int = 0, fps: float = 30.0):
        from .synth import CameraPose, color_intrinsics

        self.scene = scene
        self.n_frames = n_frames
        self.pose = CameraPose.looking_at(camera_height_mm, tilt_deg)
        self.intrinsics = color_intrinsics(width, height)
        self.seed = seed
        self.fps = fps
        self._closed = False

    def frames(self) -> Iterator[Frame]:
        from .synth import Appearance, render

        appearance = Appearance.sample(np.random.default_rng([self.seed, 0xA99]))
        i = 0
        while not self._closed and (self.n_frames is None or i < self.n_frames):
            r = render(self.scene, self.pose, self.intrinsics, seed=[self.seed, i], appearance=appearance)
            yield Frame(r.color, r.depth, self.intrinsics, i * 1000.0 / self.fps, i)
            i += 1

    def close(self) -> None:
        self._closed = True


def open_source(spec: str) -> FrameSource:
    """'demo', 'realsense', a .db3 recording, a scene JSON (synthetic) or a render folder."""
    if spec == "demo":
        if not DEMO_RECORDING.is_file():
            raise FrameSourceError(f"{DEMO_RECORDING}: the demo recording is missing (make it with `zendo record --demo`)")
        return RealSensePipelineSource(DEMO_RECORDING)
    if spec == "realsense":
        return RealSensePipelineSource(None)
    path = Path(spec)
    if path.is_dir():
        return RenderFolderSource(path)
    if path.suffix.lower() in (".db3", ".bag"):
        return RealSensePipelineSource(path)
    if path.suffix.lower() == ".json":
        from zendo.scene import SceneError, load_scene

        try:
            scene = load_scene(path)
        except SceneError as exc:
            raise FrameSourceError(str(exc)) from None
        return SyntheticSource(scene)
    if not path.exists():
        raise FrameSourceError(f"{spec}: no such file, and not 'demo' or 'realsense'")
    raise FrameSourceError(f"{spec}: not a frame source (expected .db3, scene .json, a render folder, 'demo' or 'realsense')")
