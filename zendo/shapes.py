"""Exact distances between pieces, through coal (the maintained successor of FCL).

Why coal: touching, nesting, koan membership and the validator all need the signed distance
between convex solids (GJK for the gap, EPA for how deep two shells cross). coal computes one in
about 3 microseconds from C++, exactly, where sampling meshes would be slow and approximate.
A piece's shell is four convex walls (pieces.wall_vertices); its solid is one convex pyramid.
"""
from __future__ import annotations

from functools import cache
from typing import Sequence

import coal
import numpy as np

from .pieces import outer_vertices, wall_vertices
from .scene import Piece

_REQUEST = coal.DistanceRequest()


def _convex(points: np.ndarray):
    vec = coal.StdVec_Vec3s()
    for p in np.asarray(points, dtype=float):
        vec.append(p)
    return coal.ConvexBase.convexHull(vec, False, "")


@cache
def _solid(size: str):
    return _convex(outer_vertices(size))


@cache
def _walls(size: str):
    return tuple(_convex(w) for w in wall_vertices(size))


def _transform(piece: Piece):
    tf = coal.Transform3s()
    tf.setRotation(np.ascontiguousarray(piece.matrix))
    tf.setTranslation(np.ascontiguousarray(piece.origin))
    return tf


def _signed(g1, t1, g2, t2) -> float:
    res = coal.DistanceResult()
    return float(coal.distance(g1, t1, g2, t2, _REQUEST, res))


def bounding_sphere(piece: Piece) -> tuple[np.ndarray, float]:
    v = piece.vertices
    centre = v.mean(axis=0)
    return centre, float(np.linalg.norm(v - centre, axis=1).max())


def solid_distance(a: Piece, b: Piece) -> float:
    """Signed distance between the solid outer pyramids (negative: they overlap by that much)."""
    return _signed(_solid(a.size), _transform(a), _solid(b.size), _transform(b))


def shell_distance(a: Piece, b: Piece) -> float:
    """Signed distance between the hollow shells: the gap, or minus the deepest crossing."""
    ta, tb = _transform(a), _transform(b)
    return min(_signed(wa, ta, wb, tb) for wa in _walls(a.size) for wb in _walls(b.size))


def near_pairs(pieces: Sequence[Piece], reach: float) -> list[tuple[int, int]]:
    """Index pairs whose bounding spheres come within `reach` mm: the only ones worth measuring."""
    if len(pieces) < 2:
        return []
    spheres = [bounding_sphere(p) for p in pieces]
    centres = np.array([c for c, _ in spheres])
    radii = np.array([r for _, r in spheres])
    d = np.linalg.norm(centres[:, None, :] - centres[None, :, :], axis=2) - radii[:, None] - radii[None, :]
    ii, jj = np.nonzero(np.triu(d <= reach, k=1))
    return list(zip(ii.tolist(), jj.tolist()))


def crossing_pairs(pieces: Sequence[Piece], tolerance: float) -> list[tuple[str, str, float]]:
    """Pairs of pieces whose shells cross by more than `tolerance` mm, deepest first."""
    out = []
    for i, j in near_pairs(pieces, 0.0):
        d = shell_distance(pieces[i], pieces[j])
        if -d > tolerance:
            out.append((pieces[i].id, pieces[j].id, -d))
    return sorted(out, key=lambda t: -t[2])


def point_solid_distance(point, piece: Piece) -> float:
    """Distance from a point (a stone's centre, say) to a piece's solid, exact (zero inside)."""
    sphere = coal.Sphere(1e-9)
    tf = coal.Transform3s()
    tf.setTranslation(np.asarray(point, dtype=float))
    return max(0.0, _signed(sphere, tf, _solid(piece.size), _transform(piece)))


__all__ = [
    "bounding_sphere",
    "crossing_pairs",
    "near_pairs",
    "point_solid_distance",
    "shell_distance",
    "solid_distance",
]
