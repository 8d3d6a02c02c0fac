"""Where the dashboard's table comes from: `TableFeed`.

A feed gives the current Scene, the current image and the pixel outline of every piece (for
overlays and for tapping pieces). Views only ever talk to a feed, so the perception pipeline
(frames -> Scene) plugs in by handing `FrameFeed` a `perceive` function, without touching views.

- `SceneFeed`: a known scene (the demo table, a scene JSON), drawn by the synthetic camera or from
  above. It is editable: the demo lets players put koans down, the Master put stones beside them,
  break koans down, and knock one over (katsu) or restore it.
- `FrameFeed`: frames from vision.frames (RealSense, .db3 recording); the scene comes from the
  perception pipeline when there is one, otherwise the table shows as an image with no pieces.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import replace
from typing import Callable

import numpy as np

from zendo.facts import DEFAULT_BAND, PERCEPTION_BAND
from zendo.game import HAND_WINDOW_S
from zendo.koans import split_koans
from zendo.scene import Piece, Scene, SceneError, Stone, validate

from .render import CameraView, Picture, TopDownView, piece_outlines, scene_bounds

log = logging.getLogger(__name__)


class FeedError(ValueError):
    """A table change the feed refuses (no room, pieces would cross); one line."""


CAMERA_BAND = PERCEPTION_BAND  # a camera's table is judged with the perception band (zendo/facts.py)


class TableFeed:
    """The interface views use. Subclasses fill in `scene`, `picture` and the versions."""

    editable = False
    label = "table"
    #: How close to a decision boundary counts as a judgment call. Exact scenes use the relations
    #: engine's default; a camera's scenes carry its measured error, so they get a wider band.
    judgment_band: dict = dict(DEFAULT_BAND)

    _scene: Scene
    _version: int

    def scene(self) -> Scene:
        return self._scene

    def version(self) -> int:
        """Bumps whenever the scene changes."""
        return self._version

    def image_version(self) -> int:
        """Bumps whenever the image changes (a camera: every frame it keeps)."""
        return self.version()

    def picture(self) -> Picture:  # pragma: no cover - interface
        raise NotImplementedError

    def image_png(self) -> bytes:
        return self.picture().png

    def outlines(self) -> dict:
        """{'size': [w, h], 'pieces': [{id, color, size, polygon, center, tip}], 'stones': [...]}"""
        pic = self.picture()
        return {"size": [pic.width, pic.height], **piece_outlines(self.scene(), pic.project)}

    def status(self) -> str | None:
        """A line for the Master about the feed itself (None when all is well)."""
        return None

    def close(self) -> None:
        pass


class SceneFeed(TableFeed):
    """A table known exactly (the demo, a scene file), editable from the dashboard."""

    editable = True

    def __init__(self, scene: Scene, view: str = "camera", bounds=None, label: str = "demo table"):
        from .demo import TABLE_BOUNDS

        self._scene = scene
        self._version = 1
        self._lock = threading.RLock()
        self._cache: tuple[int, Picture] | None = None
        self.label = label
        b = bounds or _union(TABLE_BOUNDS, scene_bounds(scene, 30.0)) if scene.pieces else (bounds or TABLE_BOUNDS)
        self.bounds = b
        self.view = _make_view(view, b)
        self._next_id = 1 + max([_num(p.id) for p in scene.pieces] + [_num(s.id) for s in scene.stones] + [0])

    # -------------------------------------------------------------- TableFeed
    def picture(self) -> Picture:
        with self._lock:
            if self._cache is None or self._cache[0] != self._version:
                self._cache = (self._version, self.view.draw(self._scene))
            return self._cache[1]

    # -------------------------------------------------------------- editing
    def _set(self, scene: Scene) -> None:
        try:
            validate(scene)
        except SceneError as exc:
            raise FeedError(str(exc)) from None
        self._scene = scene
        self._version += 1

    def _new_id(self, prefix: str) -> str:
        self._next_id += 1
        return f"{prefix}{self._next_id - 1}"

    def place(self, pieces: list[Piece]) -> list[str]:
        """Put a koan down in the first free slot; returns the new piece ids."""
        from .demo import slots

        with self._lock:
            centre = np.mean([p.vertices[:, :2].mean(axis=0) for p in pieces], axis=0)
            for xy in slots():
                if self._free(xy):
                    moved = [p.moved(np.eye(3), [xy[0] - centre[0], xy[1] - centre[1], 0.0]) for p in pieces]
                    moved = [replace(p, id=self._new_id("p")) for p in moved]
                    self._set(replace(self._scene, pieces=self._scene.pieces + tuple(moved)))
                    return [p.id for p in moved]
            raise FeedError("no free place on the table: break an old koan down first")

    def _free(self, xy, radius: float = 62.0) -> bool:
        for p in self._scene.pieces:
            if np.linalg.norm(p.vertices[:, :2] - np.asarray(xy), axis=1).min() < radius:
                return False
        return all(np.linalg.norm(np.subtract(s.position[:2], xy)) > radius for s in self._scene.stones)

    def remove(self, piece_ids) -> None:
        """Break a koan down: its pieces and the stones beside it leave the table."""
        with self._lock:
            ids = set(piece_ids)
            stones = set(self._stones_of(ids))
            self._set(Scene(tuple(p for p in self._scene.pieces if p.id not in ids),
                            tuple(s for s in self._scene.stones if s.id not in stones)))

    def _stones_of(self, piece_ids: set[str]) -> list[str]:
        for k in split_koans(self._scene):
            if set(k.piece_ids) & piece_ids:
                return list(k.stone_ids)
        return []

    def put_stone(self, piece_ids, color: str) -> None:
        """The Master puts a marking stone beside a koan (replacing any stone already there)."""
        with self._lock:
            ids = set(piece_ids)
            old = set(self._stones_of(ids))
            pieces = [p for p in self._scene.pieces if p.id in ids]
            if not pieces:
                raise FeedError("that koan is not on the table")
            v = np.vstack([p.vertices for p in pieces])[:, :2]
            others = [p.vertices[:, :2] for p in self._scene.pieces if p.id not in ids]
            rest = np.vstack(others) if others else np.empty((0, 2))
            (x0, y0), (x1, y1) = v.min(axis=0), v.max(axis=0)
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            best, best_room = None, -1.0
            for pos in ((cx, y0 - 22), (cx, y1 + 22), (x0 - 22, cy), (x1 + 22, cy)):  # in front first
                mine = float(np.linalg.norm(v - pos, axis=1).min())
                room = float(np.linalg.norm(rest - pos, axis=1).min()) if len(rest) else 1e9
                if room > mine and room > best_room:
                    best, best_room = pos, room
                if best is not None and room > 3 * mine:
                    break
            pos = best or (cx, y0 - 22)
            stone = Stone(self._new_id("s"), color, (float(pos[0]), float(pos[1]), 0.0))
            self._set(Scene(self._scene.pieces, tuple(s for s in self._scene.stones if s.id not in old) + (stone,)))

    def disturb(self, piece_ids, seed: int = 0) -> str:
        """Knock one piece of a koan (katsu): it slides and turns, or tips over (zendo.knock)."""
        from zendo.knock import KnockError, knock

        with self._lock:
            try:
                scene, pid = knock(self._scene, piece_ids, np.random.default_rng(seed))
            except KnockError as exc:
                raise FeedError(str(exc)) from None
            self._set(scene)
            return pid

    def restore(self, pieces: list[dict]) -> None:
        """Put pieces back exactly where they were (after a katsu)."""
        from zendo.scene import scene_from_dict

        with self._lock:
            back = scene_from_dict({"format": "zendo-scene/1", "pieces": pieces}, check_geometry=False).pieces
            ids = {p.id for p in back}
            self._set(Scene(tuple(p for p in self._scene.pieces if p.id not in ids) + back, self._scene.stones))


class RecentHands:
    """The hands a camera's feed read in the last HAND_WINDOW_S, each with when (`time.time`, the
    game's clock), its footprints and the pieces it held, for the scene's perception block
    ("hands_seen"). Why: the game looks at the table only when a page asks (about once a second),
    and a hand's visit can fall between two looks; katsu is called to everyone only where a hand
    came near the koan (zendo.game), so a missed visit would keep a real knock from the students."""

    def __init__(self, window_s: float = HAND_WINDOW_S):
        self.window_s = window_s
        self._seen: deque[dict] = deque()

    def scene_with(self, scene: Scene, now: float) -> Scene:
        """`scene` with the hands read since `now - window_s` (this one's included)."""
        per = scene.extra.get("perception")
        if per is None:
            return scene
        if per.get("hands") or per.get("held"):
            self._seen.append({"at": round(now, 3), "hands": per.get("hands") or [], "held": per.get("held") or []})
        while self._seen and now - self._seen[0]["at"] > self.window_s:
            self._seen.popleft()
        if not self._seen:
            return scene
        return replace(scene, extra={**scene.extra, "perception": {**per, "hands_seen": list(self._seen)}})


class FrameFeed(TableFeed):
    """Frames from a camera or a recording; the scene from `perceive(frame)` when given.

    `perceive(frame) -> (Scene, project)` where project maps (N, 3) table mm to (N, 2) pixels; it
    is where vision's frames -> Scene pipeline plugs in.
    """

    judgment_band = CAMERA_BAND

    def __init__(self, spec: str, perceive: Callable | None = None, every: int = 5):
        """`every`: read every n-th frame (a perceiver with a `stream` that reads frames in
        several processes keeps up with more of them)."""
        from vision.frames import open_source

        self.label = spec
        self.source = open_source(spec)
        self.perceive = perceive if perceive is not None else _default_perceiver()
        self.every = every
        self._scene = Scene()
        self._project = lambda p: np.zeros((len(np.atleast_2d(p)), 2))
        self._png: bytes | None = None
        self._size = (640, 480)
        self._version = 1
        self._image_version = 0
        self._status = None if self.perceive else "no perception pipeline yet: the table shows as a picture only"
        self._hands = RecentHands()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="frame-feed")
        self._thread.start()

    def _run(self) -> None:
        from .render import png_bytes

        try:
            for frame, out in self._perceived(self._frames()):
                png = png_bytes(frame.color)
                scene, project = self._scene, self._project
                if isinstance(out, Exception):  # keep the feed alive, tell the Master
                    first = str(out).splitlines()[0] if str(out) else out.__class__.__name__
                    self._status = f"perception failed on frame {frame.index}: {first}"
                elif out is not None:
                    scene, project = out if isinstance(out, tuple) else (out, self._project)
                    scene = self._hands.scene_with(scene, time.time())
                with self._lock:
                    if scene.to_dict() != self._scene.to_dict():
                        self._version += 1
                    self._scene, self._project = scene, project
                    self._png, self._size = png, (frame.color.shape[1], frame.color.shape[0])
                    self._image_version += 1
        except Exception as exc:  # noqa: BLE001
            what = "perception" if getattr(exc, "stops_perception", False) else "the camera"
            self._status = f"{what} stopped: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}"
            log.warning("frame feed stopped: %s", exc)

    def _frames(self):
        """Every `every`-th frame of the source, until the feed is closed."""
        for n, frame in enumerate(self.source.frames()):
            if self._stop.is_set():
                return
            if n % self.every == 0:
                yield frame

    def _perceived(self, frames):
        """Each frame with its reading: (Scene, project) or a Scene, the exception it raised, or
        None with no perceiver. Through the perceiver's `stream` when it has one (frames read
        in several processes at once come back in order), else one call per frame."""
        if self.perceive is None:
            return ((f, None) for f in frames)
        stream = getattr(self.perceive, "stream", None)
        if callable(stream):
            return stream(frames)
        return ((f, _reading(self.perceive, f)) for f in frames)

    def image_version(self) -> int:
        return self._image_version

    def picture(self) -> Picture:
        with self._lock:
            png = self._png
            if png is None:
                from PIL import Image
                import io

                buf = io.BytesIO()
                Image.new("RGB", self._size, (40, 40, 40)).save(buf, format="PNG")
                png = buf.getvalue()
            return Picture(png, self._size[0], self._size[1], self._project)

    def status(self) -> str | None:
        return self._status

    def close(self) -> None:
        self._stop.set()
        try:
            self.source.close()
        except Exception:  # noqa: BLE001
            pass


def _reading(perceive: Callable, frame):
    """perceive(frame), or the exception it raised."""
    try:
        return perceive(frame)
    except Exception as exc:  # noqa: BLE001 - the feed tells the Master and goes on
        return exc


def _default_perceiver(workers: int = 1):
    """vision.pipeline's frames -> Scene perceiver (a fresh tracker per feed), if vision is
    installed; with workers > 1, one that reads frames in that many processes at once."""
    try:
        from vision import pipeline  # type: ignore[attr-defined]
    except ImportError:
        return None
    make = getattr(pipeline, "make_perceiver", None)
    return make(workers) if callable(make) else None


def make_feed(source: str = "demo", view: str = "camera", workers: int = 1) -> TableFeed:
    """'demo' (the demo table, drawn by the synthetic camera), a scene .json, or a frame source
    ('realsense', a .db3 recording). `workers`: processes reading a frame source's frames at
    once; with several, every frame is read, not every fifth."""
    from .demo import initial_table

    known = source == "demo" or source.lower().endswith(".json")
    if known and workers > 1:  # a known table is drawn, not perceived: say so rather than ignore it
        log.info("--workers %d has nothing to do: %s is a known table, drawn, not read by the camera pipeline",
                 workers, source)
    if source == "demo":
        return SceneFeed(initial_table(), view=view)
    if source.lower().endswith(".json"):
        from zendo.scene import load_scene

        return SceneFeed(load_scene(source), view=view, label=source)
    if workers > 1:
        return FrameFeed(source, perceive=_default_perceiver(workers), every=1)
    return FrameFeed(source)


def _make_view(view: str, bounds):
    if view == "camera":
        try:
            return CameraView(bounds)
        except ImportError:
            log.info("vision.synth is not available: drawing the table from above")
    return TopDownView(bounds)


def _union(a, b):
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _num(ident: str) -> int:
    digits = "".join(ch for ch in ident if ch.isdigit())
    return int(digits) if digits and len(digits) < 9 else 0
