"""The `zendo-scene/1` format: load, validate, save. See docs/scene-format.md (the contract).

A Scene is the one representation of a table that every stage shares: typed in, generated,
rendered or perceived, it is the same object and is checked by the same validator.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .geometry import matrix_to_quat, quat_to_matrix
from .pieces import PIECE_COLORS, PYRAMID_SIZES, STONE_COLORS, outer_vertices, solid_centroid

FORMAT = "zendo-scene/1"
QUAT_TOLERANCE = 1e-3
BELOW_TABLE_TOLERANCE_MM = 0.5
CROSSING_TOLERANCE_MM = 0.5
MAX_COORDINATE_MM = 1e6  # a kilometre: no table is larger, and renderers work in float32


class SceneError(ValueError):
    """A scene that breaks the format; the message is one line naming what is wrong."""


@lru_cache(maxsize=4096)
def _rotation_matrix(rotation: tuple) -> np.ndarray:
    m = quat_to_matrix(rotation)
    m.flags.writeable = False
    return m


@dataclass(frozen=True)
class Piece:
    id: str
    color: str
    size: str
    position: tuple[float, float, float]
    rotation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)

    @cached_property
    def matrix(self) -> np.ndarray:
        """Read-only, and shared by every piece of the same rotation: the perception stages make
        thousands of pieces a frame that differ from a fitted one only by where they stand."""
        return _rotation_matrix(tuple(self.rotation))

    @cached_property
    def origin(self) -> np.ndarray:
        return np.asarray(self.position, dtype=float)

    @cached_property
    def axis(self) -> np.ndarray:
        """The pointing direction: the rotated +z axis."""
        return self.matrix[:, 2].copy()

    @cached_property
    def vertices(self) -> np.ndarray:
        """Outer vertices in the table frame: four base corners, then the tip."""
        return self.to_table(outer_vertices(self.size))

    @property
    def tip(self) -> np.ndarray:
        return self.vertices[4]

    @property
    def centroid(self) -> np.ndarray:
        """The solid's centre of mass in the table frame (a quarter of the way up its axis)."""
        return self.to_table(solid_centroid(self.size)[None, :])[0]

    @property
    def heading_deg(self) -> float:
        """Where its axis points across the table, in degrees from +x."""
        return float(np.degrees(np.arctan2(self.axis[1], self.axis[0])))

    @property
    def pips(self) -> int:
        return PYRAMID_SIZES[self.size].pips

    @property
    def dims(self):
        return PYRAMID_SIZES[self.size]

    def to_table(self, points: np.ndarray) -> np.ndarray:
        return np.asarray(points) @ self.matrix.T + self.origin

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "color": self.color,
            "size": self.size,
            "position": [round(float(v), 4) for v in self.position],
            "rotation": [round(float(v), 7) for v in self.rotation],
        }

    def moved(self, rotation_matrix: np.ndarray, translation) -> "Piece":
        """The same piece after a rigid motion of the table frame (used to move whole koans)."""
        pos = rotation_matrix @ self.origin + np.asarray(translation, float)
        rot = matrix_to_quat(rotation_matrix @ self.matrix)
        return replace(self, position=tuple(map(float, pos)), rotation=tuple(map(float, rot)))


@dataclass(frozen=True)
class Stone:
    id: str
    color: str
    position: tuple[float, float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "color": self.color, "position": [round(float(v), 4) for v in self.position]}


@dataclass(frozen=True)
class Scene:
    pieces: tuple[Piece, ...] = ()
    stones: tuple[Stone, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def piece(self, pid: str) -> Piece:
        for p in self.pieces:
            if p.id == pid:
                return p
        raise KeyError(pid)

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.pieces]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "units": "mm",
            "pieces": [p.to_dict() for p in self.pieces],
            "stones": [s.to_dict() for s in self.stones],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def with_pieces(self, pieces: Iterable[Piece]) -> "Scene":
        return replace(self, pieces=tuple(pieces))


# --------------------------------------------------------------------------- parsing


def _require(obj: dict, key: str, where: str):
    if key not in obj:
        raise SceneError(f"{where}: missing field '{key}'")
    return obj[key]


def _vector(value, n: int, where: str, name: str) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise SceneError(f"{where}: '{name}' must be a list of {n} numbers")
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise SceneError(f"{where}: '{name}' must be a list of {n} numbers") from None
    if not all(np.isfinite(out)):
        raise SceneError(f"{where}: '{name}' holds a non-finite number")
    if name == "position" and max(abs(v) for v in out) > MAX_COORDINATE_MM:
        raise SceneError(f"{where}: 'position' is more than {MAX_COORDINATE_MM:.0f} mm from the table's origin")
    return out


def _piece_from(obj: Any, index: int) -> Piece:
    if not isinstance(obj, dict):
        raise SceneError(f"pieces[{index}] is not an object")
    pid = obj.get("id")
    where = f"piece '{pid}'" if pid is not None else f"pieces[{index}]"
    pid = _require(obj, "id", where)
    if not isinstance(pid, str) or not pid:
        raise SceneError(f"{where}: 'id' must be a non-empty string")
    color = _require(obj, "color", where)
    if color not in PIECE_COLORS:
        raise SceneError(f"{where}: unknown colour '{color}' (expected one of {', '.join(PIECE_COLORS)})")
    size = _require(obj, "size", where)
    if size not in PYRAMID_SIZES:
        raise SceneError(f"{where}: unknown size '{size}' (expected small, medium or large)")
    position = _vector(_require(obj, "position", where), 3, where, "position")
    rotation = _vector(_require(obj, "rotation", where), 4, where, "rotation")
    norm = float(np.linalg.norm(rotation))
    if abs(norm - 1.0) > QUAT_TOLERANCE:
        raise SceneError(f"{where}: rotation is not a unit quaternion (|q| = {norm:.4f})")
    rotation = tuple(v / norm for v in rotation)
    return Piece(pid, color, size, position, rotation)


def piece_from_dict(obj: Any) -> Piece:
    """One piece of a zendo-scene/1 document (a doubt carries its koan's neighbours so)."""
    return _piece_from(obj, 0)


def _stone_from(obj: Any, index: int) -> Stone:
    if not isinstance(obj, dict):
        raise SceneError(f"stones[{index}] is not an object")
    sid = obj.get("id")
    where = f"stone '{sid}'" if sid is not None else f"stones[{index}]"
    sid = _require(obj, "id", where)
    if not isinstance(sid, str) or not sid:
        raise SceneError(f"{where}: 'id' must be a non-empty string")
    color = _require(obj, "color", where)
    if not isinstance(color, str) or not color:
        raise SceneError(f"{where}: 'color' must be a colour name")
    position = _require(obj, "position", where)
    if isinstance(position, (list, tuple)) and len(position) == 2:
        position = list(position) + [0.0]
    return Stone(sid, color, _vector(position, 3, where, "position"))


def scene_from_dict(data: Any, *, check_geometry: bool = True) -> Scene:
    """Parse and validate a decoded zendo-scene/1 document."""
    if not isinstance(data, dict):
        raise SceneError("scene: the document is not a JSON object")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise SceneError(f"scene: 'format' must be '{FORMAT}', got {fmt!r}")
    units = data.get("units", "mm")
    if units != "mm":
        raise SceneError(f"scene: 'units' must be 'mm', got {units!r}")
    raw_pieces = _require(data, "pieces", "scene")
    if not isinstance(raw_pieces, list):
        raise SceneError("scene: 'pieces' must be a list")
    raw_stones = data.get("stones", [])
    if not isinstance(raw_stones, list):
        raise SceneError("scene: 'stones' must be a list")
    pieces = tuple(_piece_from(p, i) for i, p in enumerate(raw_pieces))
    stones = tuple(_stone_from(s, i) for i, s in enumerate(raw_stones))
    extra = {k: v for k, v in data.items() if k not in ("format", "units", "pieces", "stones")}
    scene = Scene(pieces, stones, extra)
    validate(scene, check_geometry=check_geometry)
    return scene


def validate(scene: Scene, *, check_geometry: bool = True) -> None:
    """Raise SceneError naming the offending ids if the scene breaks a rule under 'Validity'."""
    seen: set[str] = set()
    dupes = []
    for ident in [p.id for p in scene.pieces] + [s.id for s in scene.stones]:
        if ident in seen:
            dupes.append(ident)
        seen.add(ident)
    if dupes:
        raise SceneError(f"duplicate id(s): {', '.join(sorted(set(dupes)))}")
    for s in scene.stones:
        if s.color not in STONE_COLORS and s.color not in PIECE_COLORS:
            raise SceneError(f"stone '{s.id}': unknown colour '{s.color}'")
    for p in scene.pieces:
        for name, seq in (("position", p.position), ("rotation", p.rotation)):
            if not all(np.isfinite(seq)):
                raise SceneError(f"piece '{p.id}': '{name}' holds a non-finite number")
        if abs(float(np.linalg.norm(p.rotation)) - 1.0) > QUAT_TOLERANCE:
            raise SceneError(f"piece '{p.id}': rotation is not a unit quaternion")
        if p.color not in PIECE_COLORS:
            raise SceneError(f"piece '{p.id}': unknown colour '{p.color}'")
        if p.size not in PYRAMID_SIZES:
            raise SceneError(f"piece '{p.id}': unknown size '{p.size}'")
    if not check_geometry:
        return
    for p in scene.pieces:
        low = float(p.vertices[:, 2].min())
        if low < -BELOW_TABLE_TOLERANCE_MM:
            raise SceneError(f"piece '{p.id}' reaches {-low:.2f} mm below the table")
    from .shapes import crossing_pairs

    crossings = crossing_pairs(scene.pieces, CROSSING_TOLERANCE_MM)
    if crossings:
        a, b, depth = crossings[0]
        more = f" (and {len(crossings) - 1} more pair(s))" if len(crossings) > 1 else ""
        raise SceneError(f"pieces '{a}' and '{b}' cross each other by {depth:.2f} mm{more}")


def is_valid(scene: Scene) -> bool:
    """`validate` as a yes or no, for code that tries placements until one is valid."""
    try:
        validate(scene)
    except SceneError:
        return False
    return True


def load_scene(path: str | Path, *, check_geometry: bool = True) -> Scene:
    """Read a scene file; every failure is a SceneError with a one-line message."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SceneError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneError(f"{path}: cannot read ({exc.__class__.__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SceneError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    try:
        return scene_from_dict(data, check_geometry=check_geometry)
    except SceneError as exc:
        raise SceneError(f"{path}: {exc}") from None


def save_scene(scene: Scene, path: str | Path) -> None:
    Path(path).write_text(scene.to_json() + "\n", encoding="utf-8")
