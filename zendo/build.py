"""Placing pieces the way players do: upright, flat, stacked, nested, leaning, across tips, pointing.

Each placement returns Pieces in the table frame that rest physically (nothing floats, nothing
crosses another piece by more than the validator allows). The koan builder, the renderer's random
tables and the tests all build koans from these, so "what the builder meant" and "what the
relations engine sees" are checked against each other in one place.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from scipy.spatial import ConvexHull

from .geometry import axis_angle_quat, matrix_to_quat, quat_to_matrix, rotation_between
from .pieces import PYRAMID_SIZES, outer_planes
from .scene import Piece
from .shapes import shell_distance, solid_distance


@dataclass(frozen=True)
class Spec:
    """A piece still to be placed: who it is, not where."""

    id: str
    color: str
    size: str


def _piece(spec: Spec, matrix: np.ndarray, origin) -> Piece:
    q = matrix_to_quat(matrix)
    return Piece(spec.id, spec.color, spec.size, tuple(map(float, origin)), tuple(map(float, q)))


def _rz(deg: float) -> np.ndarray:
    return quat_to_matrix(axis_angle_quat([0, 0, 1], deg))


def _apply(pieces: Sequence[Piece], matrix: np.ndarray, translation) -> list[Piece]:
    return [p.moved(matrix, translation) for p in pieces]


def upright(spec: Spec, xy=(0.0, 0.0), yaw: float = 0.0) -> Piece:
    return _piece(spec, _rz(yaw), (xy[0], xy[1], 0.0))


def lay_down(pieces: Sequence[Piece], face_hint, xy=(0.0, 0.0), heading: float = 0.0) -> list[Piece]:
    """Lay a rigid group on the face of its convex hull nearest `face_hint` (a direction in the
    group's frame that should end up pointing down), turn it so the first piece's ray heads
    along `heading` (degrees from +x), and put the first piece's centroid over `xy`."""
    normal = _resting_face(pieces, np.asarray(face_hint, float))
    laid = _apply(pieces, rotation_between(normal, [0, 0, -1]), [0, 0, 0])
    turn = _rz(heading - laid[0].heading_deg)
    laid = _apply(laid, turn, [0, 0, 0])
    low = min(float(p.vertices[:, 2].min()) for p in laid)
    c = laid[0].centroid
    return _apply(laid, np.eye(3), [xy[0] - c[0], xy[1] - c[1], -low])


def _resting_face(pieces: Sequence[Piece], hint: np.ndarray) -> np.ndarray:
    """The outward normal of the hull facet the group comes to rest on when laid towards `hint`:
    the facet nearest the hint whose support polygon holds the centre of mass (so it won't roll)."""
    pts = np.vstack([p.vertices for p in pieces])
    hull = ConvexHull(pts)
    weights = np.array([p.dims.width**2 for p in pieces])
    com = (np.array([p.centroid for p in pieces]) * weights[:, None]).sum(0)
    com /= weights.sum()
    hint = hint / np.linalg.norm(hint)
    eq = hull.equations
    order = np.argsort(-(eq[:, :3] @ hint))
    for idx in order:
        n = eq[idx, :3]
        if n @ hint < np.cos(np.radians(30)):
            break
        coplanar = [k for k in range(len(eq)) if np.allclose(eq[k], eq[idx], atol=1e-6)]
        proj = com - (n @ com + eq[idx, 3]) * n
        for k in coplanar:
            tri = pts[hull.simplices[k]]
            if _in_triangle(proj, tri):
                return n
    return eq[order[0], :3]


def _in_triangle(p: np.ndarray, tri: np.ndarray) -> bool:
    a, b, c = tri
    v0, v1, v2 = c - a, b - a, p - a
    d00, d01, d02, d11, d12 = v0 @ v0, v0 @ v1, v0 @ v2, v1 @ v1, v1 @ v2
    den = d00 * d11 - d01 * d01
    if abs(den) < 1e-12:
        return False
    u = (d11 * d02 - d01 * d12) / den
    v = (d00 * d12 - d01 * d02) / den
    return u >= -1e-9 and v >= -1e-9 and u + v <= 1 + 1e-9


def face_normal(size: str, face: int = 0) -> np.ndarray:
    return outer_planes(size)[0][face]


def flat(spec: Spec, xy=(0.0, 0.0), heading: float = 0.0) -> Piece:
    """Lying on a triangular face, its ray skimming the table along `heading`."""
    return lay_down([upright(spec)], face_normal(spec.size), xy, heading)[0]


def rest_offset(lower_size: str, upper_size: str) -> float:
    """How far along the lower piece's axis the upper piece's base sits when it rests on the tip.

    Similar shapes touch either tip to tip (the lower piece is steeper) or at the upper piece's
    rim (it is shallower); the smaller slope decides which.
    """
    a, b = PYRAMID_SIZES[lower_size], PYRAMID_SIZES[upper_size]
    return a.height - b.inner_half * min(a.slope, b.slope)


def rest_origin(lower: Piece, size: str) -> np.ndarray:
    """Where a piece of `size` resting coaxially on `lower`'s tip has its base centre."""
    return lower.origin + lower.axis * rest_offset(lower.size, size)


NEST_TOUCH_MM = 0.05  # a piece nested in a lying one rests this far off its wall


def in_cavity(cover: Piece, piece: Piece, down) -> Piece:
    """`piece` coaxial in `cover`'s cavity, their bases in one plane, let down along `down` (a
    direction in the table frame) until it rests on the wall there."""
    inner = replace(cover, id=piece.id, color=piece.color, size=piece.size)
    gap = shell_distance(cover, inner)
    return inner.moved(np.eye(3), np.asarray(down, float) * (gap - NEST_TOUCH_MM))


def cover(lower: Piece, spec: Spec) -> Piece:
    """Put `spec` over `lower`, coaxially: it rests on lower's tip (a tower) or, if it is too big
    and lower is upright on the table, on the table around it (lower is then nested inside)."""
    origin = rest_origin(lower, spec.size)
    piece = _piece(spec, lower.matrix, origin)
    low = float(piece.vertices[:, 2].min())
    if low < 0:
        piece = _piece(spec, lower.matrix, origin + np.array([0, 0, -low]))
    return piece


def tower(specs: Sequence[Spec], xy=(0.0, 0.0), yaw: float = 0.0) -> list[Piece]:
    """An upright stack, bottom first. Pieces too big to rest on the tip below cover it instead."""
    pieces = [upright(specs[0], xy, yaw)]
    for spec in specs[1:]:
        pieces.append(cover(pieces[-1], spec))
    return pieces


def lying_tower(specs: Sequence[Spec], xy=(0.0, 0.0), heading: float = 0.0) -> list[Piece]:
    """A tower on its side: built coaxially, then laid on the hull face under the bottom piece."""
    pieces = [upright(specs[0], (0, 0), 0.0)]
    for spec in specs[1:]:
        a = pieces[-1]
        pieces.append(_piece(spec, a.matrix, rest_origin(a, spec.size)))
    return lay_down(pieces, face_normal(specs[0].size), xy, heading)


def nested_lying(outer: Spec, inner: Spec, xy=(0.0, 0.0), heading: float = 0.0) -> list[Piece]:
    """A smaller piece lying inside a larger one that lies flat: both flat, the inner nested."""
    big = upright(outer)
    down = face_normal(outer.size)
    return lay_down([big, in_cavity(big, upright(inner), down)], down, xy, heading)


def beside(piece: Piece, spec: Spec, heading: float = 0.0, gap: float = 0.0) -> Piece:
    """Upright next to an upright piece, bases edge to edge (touching when gap is 0)."""
    d = (piece.dims.half + PYRAMID_SIZES[spec.size].half + gap)
    h = np.radians(heading)
    yaw = _heading_yaw(piece)
    # square bases share an edge when offset along one of the piece's own axes
    local = np.array([np.cos(h), np.sin(h), 0.0])
    world = _rz(yaw) @ local
    xy = piece.origin[:2] + world[:2] * d
    return upright(spec, xy, yaw)


def _heading_yaw(piece: Piece) -> float:
    x = piece.matrix[:, 0]
    return float(np.degrees(np.arctan2(x[1], x[0])))


def flat_across(supports: Sequence[Piece], spec: Spec, heading: float = 0.0) -> Piece:
    """Lying flat across the tips of upright supports (ungrounded), its face centroid over them."""
    tips = np.array([s.tip for s in supports])
    lying = flat(spec, (0.0, 0.0), heading)
    v = lying.vertices
    face = v[np.abs(v[:, 2]) < 1e-6]
    centre = face.mean(axis=0)
    target = tips.mean(axis=0)
    return lying.moved(np.eye(3), [target[0] - centre[0], target[1] - centre[1], float(tips[:, 2].max())])


def lean_against(target: Piece, spec: Spec, from_heading: float = 0.0, distance: float | None = None) -> Piece:
    """A piece tipped over from upright about one base edge until it rests on `target` (weird).

    It stands `distance` mm (base centre to target's axis) away in direction `from_heading`,
    facing the target, and is tilted towards it; the tilt is found by bisection on contact.
    """
    s = PYRAMID_SIZES[spec.size]
    h = np.radians(from_heading)
    away = np.array([np.cos(h), np.sin(h), 0.0])
    if distance is None:
        distance = target.dims.half + s.half + 0.6 * s.height
    base = target.origin + away * distance
    base[2] = 0.0
    yaw = from_heading + 180.0
    pivot_local = np.array([s.half, 0.0, 0.0])  # the base edge facing the target

    def tilted(angle: float) -> Piece:
        m0 = _rz(yaw)
        pivot = base + m0 @ pivot_local
        tilt = quat_to_matrix(axis_angle_quat(m0 @ np.array([0.0, 1.0, 0.0]), angle))
        m = tilt @ m0
        origin = pivot + tilt @ (base - pivot)
        return _piece(spec, m, origin)

    lo, hi = 0.0, 100.0
    if solid_distance(tilted(hi), target) > 0:
        raise ValueError(f"{spec.id} cannot reach {target.id} to lean on it from {distance:.1f} mm")
    for _ in range(40):
        mid = (lo + hi) / 2
        if shell_distance(tilted(mid), target) > 0:
            lo = mid
        else:
            hi = mid
    return tilted(lo)


def pointing_at(target: Piece, spec: Spec, distance: float = 30.0, from_heading: float = 0.0) -> Piece:
    """A flat piece whose ray skims straight at target's centre from `distance` mm (tip to centre)."""
    h = np.radians(from_heading)
    away = np.array([np.cos(h), np.sin(h)])
    lying = flat(spec, (0.0, 0.0), from_heading + 180.0)
    tip = lying.tip
    want = target.origin[:2] + away * distance
    return lying.moved(np.eye(3), [want[0] - tip[0], want[1] - tip[1], 0.0])


def translate(pieces: Sequence[Piece], dx: float, dy: float) -> list[Piece]:
    return _apply(pieces, np.eye(3), [dx, dy, 0.0])


def turn(pieces: Sequence[Piece], degrees: float, about=(0.0, 0.0)) -> list[Piece]:
    m = _rz(degrees)
    c = np.array([about[0], about[1], 0.0])
    return _apply(pieces, m, c - m @ c)


def turned_about_middle(piece: Piece, degrees: float) -> Piece:
    """The piece turned about the vertical through its centroid: its heading changed, the piece
    where it was (a lying piece's heading read again, or doubted)."""
    return turn([piece], degrees, about=piece.vertices.mean(axis=0)[:2])[0]
