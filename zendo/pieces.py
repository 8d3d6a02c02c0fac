"""Looney pyramid geometry: the single place where sizes, pips, colours and the shell live.

Every other module (relations, the koan builder, the renderer, pose fitting) asks this one for
vertices, planes and walls, so a better measurement of real pieces changes one constant here.
Coordinates are in the piece frame of docs/scene-format.md: the base square in z = 0 centred
on the origin, edges parallel to x and y, the tip at (0, 0, h).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import hypot

import numpy as np

#: Wall thickness of the hollow shell (mm). One constant, to be replaced by a measurement.
WALL_MM = 1.5

#: The Rainbow stash colours the assistant plays with by default.
RAINBOW_COLORS = ("red", "yellow", "green", "blue", "black")
#: Every pyramid colour the scene format accepts.
PIECE_COLORS = RAINBOW_COLORS + ("orange", "cyan", "purple", "white", "clear")
STONE_COLORS = ("white", "black", "green")
SIZES = ("small", "medium", "large")

#: Nominal sRGB of each colour (used by the renderer and the overlays).
COLOR_RGB: dict[str, tuple[int, int, int]] = {
    "red": (200, 30, 40),
    "yellow": (240, 200, 30),
    "green": (40, 160, 70),
    "blue": (30, 80, 200),
    "black": (30, 30, 35),
    "orange": (240, 120, 30),
    "cyan": (40, 190, 210),
    "purple": (120, 50, 160),
    "white": (235, 235, 235),
    "clear": (210, 220, 225),
}


@dataclass(frozen=True)
class PyramidSize:
    """Dimensions of one Looney pyramid size and the derived cavity."""

    name: str
    pips: int
    width: float  # base edge (mm)
    height: float  # base to tip (mm)

    @property
    def half(self) -> float:
        return self.width / 2.0

    @property
    def slope(self) -> float:
        """Height gained per mm moved in from a base edge (h / (w/2)); nearly equal for all sizes."""
        return self.height / self.half

    @property
    def face_inset(self) -> float:
        """How far the cavity's tip sits below the outer tip: the wall offset along the axis."""
        return WALL_MM * hypot(self.height, self.half) / self.half

    @property
    def inner_height(self) -> float:
        return self.height - self.face_inset

    @property
    def inner_half(self) -> float:
        """Half-width of the cavity's opening at the base."""
        return self.inner_height / self.slope

    @property
    def face_tilt_deg(self) -> float:
        """Angle between a triangular face and the base (about 74 degrees)."""
        return float(np.degrees(np.arctan2(self.height, self.half)))

    @property
    def bounding_radius(self) -> float:
        """Radius of a sphere about the piece origin that holds the whole piece."""
        return max(self.height, hypot(self.half, self.half))


PYRAMID_SIZES: dict[str, PyramidSize] = {
    "small": PyramidSize("small", 1, 14.3, 25.4),
    "medium": PyramidSize("medium", 2, 19.8, 34.9),
    "large": PyramidSize("large", 3, 25.4, 44.5),
}

_CORNER_SIGNS = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)  # counter-clockwise


def larger_sizes(size: str) -> tuple[str, ...]:
    """The sizes above `size`, smallest first (what a piece read as `size` may be where the
    camera saw only part of it)."""
    return SIZES[SIZES.index(size) + 1:]


@cache
def outer_vertices(size: str) -> np.ndarray:
    """(5, 3): the four base corners counter-clockwise, then the tip."""
    s = PYRAMID_SIZES[size]
    base = np.column_stack([_CORNER_SIGNS * s.half, np.zeros(4)])
    return np.vstack([base, [0.0, 0.0, s.height]])


@cache
def inner_vertices(size: str) -> np.ndarray:
    """(5, 3): the cavity's four base corners, then the cavity's tip (the tip's underside)."""
    s = PYRAMID_SIZES[size]
    base = np.column_stack([_CORNER_SIGNS * s.inner_half, np.zeros(4)])
    return np.vstack([base, [0.0, 0.0, s.inner_height]])


@cache
def outer_planes(size: str) -> tuple[np.ndarray, np.ndarray]:
    """Outward unit normals (5, 3) and offsets (5,) with n·p <= d inside the solid pyramid.

    Rows 0-3 are the triangular faces (face i spans corners i and i+1), row 4 is the base.
    """
    v = outer_vertices(size)
    normals, offsets = [], []
    for i in range(4):
        a, b, tip = v[i], v[(i + 1) % 4], v[4]
        n = np.cross(b - a, tip - a)
        n /= np.linalg.norm(n)
        normals.append(n)
        offsets.append(float(n @ a))
    normals.append(np.array([0.0, 0.0, -1.0]))
    offsets.append(0.0)
    return np.array(normals), np.array(offsets)


@cache
def inner_planes(size: str) -> tuple[np.ndarray, np.ndarray]:
    """The cavity as half-spaces (same layout as outer_planes): the faces offset by WALL_MM."""
    n, d = outer_planes(size)
    d = d.copy()
    d[:4] -= WALL_MM
    return n, d


@cache
def wall_vertices(size: str) -> tuple[np.ndarray, ...]:
    """The shell as four convex walls, each the hull of six points.

    Each wall lies between an outer face and its offset inner face; neighbouring walls meet on
    the diagonal planes that hold both the outer and inner edges, so the four hulls tile the shell
    exactly and contact with the shell is contact with one of them.
    """
    o, i = outer_vertices(size), inner_vertices(size)
    return tuple(
        np.array([o[k], o[(k + 1) % 4], o[4], i[k], i[(k + 1) % 4], i[4]]) for k in range(4)
    )


@cache
def solid_centroid(size: str) -> np.ndarray:
    """Centroid of the solid pyramid (a quarter of the way up the axis)."""
    return np.array([0.0, 0.0, PYRAMID_SIZES[size].height / 4.0])


@cache
def volume_samples(size: str, per_axis: int = 7) -> np.ndarray:
    """Points spread evenly through the solid pyramid (piece frame), for volume fractions."""
    s = PYRAMID_SIZES[size]
    g = (np.arange(per_axis) + 0.5) / per_axis
    xs, ys, zs = np.meshgrid(g * 2 - 1, g * 2 - 1, g, indexing="ij")
    pts = np.column_stack([xs.ravel() * s.half, ys.ravel() * s.half, zs.ravel() * s.height])
    inside = np.maximum(np.abs(pts[:, 0]), np.abs(pts[:, 1])) <= s.half * (1 - pts[:, 2] / s.height)
    return pts[inside]


@cache
def surface_samples(size: str, per_face: int = 40) -> np.ndarray:
    """Points spread over the four outer faces (piece frame), for the free-space test."""
    v = outer_vertices(size)
    rng = np.random.default_rng(0)
    out = []
    for i in range(4):
        a, b, tip = v[i], v[(i + 1) % 4], v[4]
        r1, r2 = rng.random(per_face), rng.random(per_face)
        s = np.sqrt(r1)
        out.append((1 - s)[:, None] * tip + (s * (1 - r2))[:, None] * a + (s * r2)[:, None] * b)
    return np.vstack(out)


def pips(size: str) -> int:
    return PYRAMID_SIZES[size].pips
