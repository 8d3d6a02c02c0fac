"""The TERMINOLOGY section of the rulebook, computed from geometry, each answer with its margin.

Thresholds live in `RelationsConfig`; docs/relations.md explains each choice. Margins are signed
distances from the decision boundary, positive on the decided side, in mm or degrees.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations, permutations
from typing import Mapping, Sequence

import numpy as np

from .facts import DEFAULT_BAND, KoanFacts, LazyPredicates, PieceAttrs, Predicate, towers_from_links
from .geometry import angle_deg, hull_signed_distance
from .koans import Koan, split_koans
from .pieces import PYRAMID_SIZES, inner_planes, outer_planes, volume_samples
from .scene import Piece, Scene
from .shapes import bounding_sphere, near_pairs, shell_distance

_EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (1, 4), (2, 4), (3, 4)]
_FAR = 1e6


@dataclass(frozen=True)
class RelationsConfig:
    """Decision thresholds (where a predicate flips) and the judgment band (how close is close)."""

    touch_gap_mm: float = 0.5  # shells closer than this touch
    ground_gap_mm: float = 0.5  # a piece whose lowest point is this close to z = 0 is grounded
    orientation_deg: float = 10.0  # upright / flat within this many degrees
    direction_deg: float = 15.0  # same direction within; opposite beyond 180 minus this
    stack_tip_mm: float = 1.0  # tip to the underside of the tip above, for a tower link
    stack_angle_deg: float = 15.0  # axes of a tower link agree within this
    same_height_mm: float = 1.0  # tops closer than this are at the same height
    band: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BAND))


# ----------------------------------------------------------------------------- per piece


def piece_planes(piece: Piece, cavity: bool = False) -> tuple[np.ndarray, np.ndarray]:
    n, d = (inner_planes if cavity else outer_planes)(piece.size)
    nt = n @ piece.matrix.T
    return nt, d + nt @ piece.origin


def orientation_angles(size: str, rotations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rotation (H, 3, 3) of a piece of `size`: degrees of its axis from straight up, and of
    its lowest side face from facing straight down. Batched because pose fitting reads the
    orientation of every hypothesis it scores (vision.pose)."""
    up = np.degrees(np.arccos(np.clip(rotations[:, 2, 2], -1.0, 1.0)))
    face_z = (rotations @ outer_planes(size)[0][:4].T)[:, 2, :]  # table z of each side face's normal
    flat = np.degrees(np.arccos(np.clip(-face_z.min(axis=1), -1.0, 1.0)))
    return up, flat


def orientation(piece: Piece, cfg: RelationsConfig) -> Predicate:
    up, flat = orientation_angles(piece.size, piece.matrix[None])
    up_angle, flat_angle = float(up[0]), float(flat[0])
    up_m = cfg.orientation_deg - up_angle
    flat_m = cfg.orientation_deg - flat_angle
    if up_m >= 0:
        return Predicate("orientation", (piece.id,), "upright", up_m, "deg", "weird")
    if flat_m >= 0:
        return Predicate("orientation", (piece.id,), "flat", flat_m, "deg", "weird")
    alt = "upright" if up_m > flat_m else "flat"
    return Predicate("orientation", (piece.id,), "weird", min(-up_m, -flat_m), "deg", alt)


def grounded(piece: Piece, cfg: RelationsConfig) -> Predicate:
    low = float(piece.vertices[:, 2].min())
    margin = cfg.ground_gap_mm - low
    return Predicate("grounded", (piece.id,), margin >= 0, margin, "mm")


# ----------------------------------------------------------------------------- pointing


def _clip_to_slab(verts: np.ndarray, origin: np.ndarray, direction: np.ndarray, t0: float, t1: float) -> np.ndarray:
    """The solid's vertices and edge crossings that lie between t0 and t1 along the ray."""
    t = (verts - origin) @ direction
    keep = [verts[i] for i in range(len(verts)) if t0 - 1e-9 <= t[i] <= t1 + 1e-9]
    for i, j in _EDGES:
        for bound in (t0, t1):
            if np.isfinite(bound) and (t[i] - bound) * (t[j] - bound) < 0:
                s = (bound - t[i]) / (t[j] - t[i])
                keep.append(verts[i] + s * (verts[j] - verts[i]))
    return np.array(keep) if keep else np.empty((0, 3))


def _segment_hit(origin, direction, t0, t1, target: Piece) -> tuple[float, float] | None:
    """(lateral margin, entry distance) of a 3-D ray segment against a solid pyramid."""
    pts = _clip_to_slab(target.vertices, origin, direction, t0, t1)
    if len(pts) == 0:
        return None
    u = np.cross(direction, [0.0, 0.0, 1.0])
    if np.linalg.norm(u) < 1e-6:
        u = np.cross(direction, [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(direction, u)
    rel = pts - origin
    margin = hull_signed_distance(np.column_stack([rel @ u, rel @ v]))
    entry = _entry_distance(origin, direction, target, t0)
    return margin, max(t0, entry)


def _entry_distance(origin, direction, target: Piece, t0: float) -> float:
    """Where the ray line enters the solid (Cyrus-Beck); the closest approach if it misses."""
    n, d = piece_planes(target)
    num = d - n @ origin
    den = n @ direction
    t_in, t_out = -np.inf, np.inf
    for nu, de in zip(num, den):
        if abs(de) < 1e-12:
            continue
        t = nu / de
        if de < 0:
            t_in = max(t_in, t)
        else:
            t_out = min(t_out, t)
    if t_in <= t_out and np.isfinite(t_in):
        return float(t_in)
    return float((target.vertices.mean(axis=0) - origin) @ direction)


def _footprint(target: Piece, height: float) -> np.ndarray:
    """The part of a piece at table height (z <= height), projected onto the table."""
    v = target.vertices
    pts = [v[i, :2] for i in range(5) if v[i, 2] <= height]
    for i, j in _EDGES:
        zi, zj = v[i, 2] - height, v[j, 2] - height
        if zi * zj < 0:
            s = zi / (zi - zj)
            pts.append((v[i] + s * (v[j] - v[i]))[:2])
    return np.array(pts)


@dataclass(frozen=True)
class PointingRay:
    """The pointing ray of a piece: a straight leg from the tip, then a skim along the table."""

    tip: np.ndarray
    direction: np.ndarray
    leg_length: float  # distance to where it meets the table (inf if it never does)
    skim_start: np.ndarray | None
    skim_direction: np.ndarray | None


def pointing_ray(piece: Piece, cfg: RelationsConfig) -> PointingRay:
    tip, d = piece.tip, piece.axis
    if d[2] < -1e-9:
        leg = max(0.0, float(tip[2]) / -float(d[2]))
    elif tip[2] <= cfg.ground_gap_mm and d[2] <= 1e-9:
        leg = 0.0
    else:
        return PointingRay(tip, d, np.inf, None, None)
    start = tip + leg * d
    start = np.array([start[0], start[1], 0.0])
    flat = np.array([d[0], d[1], 0.0])
    norm = float(np.linalg.norm(flat))
    skim = flat / norm if norm > 1e-6 else None
    return PointingRay(tip, d, leg, start if skim is not None else None, skim)


def pointing(piece: Piece, others: Sequence[Piece], grounded_ids: set[str], cfg: RelationsConfig,
             upright: bool) -> list[Predicate]:
    """Is `piece` pointing at each of `others`, with the lateral margin (mm) and order along the ray.
    `upright`: the piece's orientation, as `koan_facts` read it."""
    ray = pointing_ray(piece, cfg)
    # a heading is read about the piece's middle, and only a piece not standing upright has one
    # (an upright one's ray goes straight up whichever way it is turned)
    reach = 0.0 if upright else float(np.linalg.norm(ray.tip - piece.vertices.mean(axis=0)))
    out = []
    for target in others:
        best: tuple[float, float] | None = None
        centre, radius = bounding_sphere(target)
        rel = centre - ray.tip
        along = float(rel @ ray.direction)
        miss = float(np.linalg.norm(rel - along * ray.direction)) - radius
        if along + radius < 0:
            best = (-_FAR, _FAR)  # wholly behind the tip
        elif miss <= 2 * max(cfg.band.values()):
            best = _segment_hit(ray.tip, ray.direction, 0.0, ray.leg_length, target)
        else:
            best = (-miss, along)
        if ray.skim_direction is not None:
            skim = _skim_hit(ray, target, grounded_ids, cfg)
            if skim is not None and (best is None or skim[0] > best[0]):
                best = skim
        if best is None:
            best = (-_FAR, _FAR)
        margin, order = best
        lever = max(0.0, reach + order) if order < _FAR and not upright else 0.0
        out.append(Predicate("pointing", (piece.id, target.id), margin >= 0, margin, "mm", order=order, lever=lever))
    return out


def _skim_hit(ray: PointingRay, target: Piece, grounded_ids: set[str], cfg: RelationsConfig):
    """A skimming ray meets every grounded piece it crosses at table height."""
    start, e = ray.skim_start, ray.skim_direction
    if target.id not in grounded_ids:
        low = float(target.vertices[:, 2].min())
        return (-(low - cfg.ground_gap_mm) if low > cfg.ground_gap_mm else -_FAR, _FAR)
    fp = _footprint(target, cfg.ground_gap_mm)
    if len(fp) == 0:
        return None
    rel = fp - start[:2]
    along = rel @ e[:2]
    if along.max() < -1e-9:
        return None  # behind the bend
    lateral = rel @ np.array([-e[1], e[0]])
    ahead = along >= -1e-9
    lat = lateral[ahead] if ahead.any() else lateral
    if len(fp) >= 2 and ahead.sum() < len(fp):
        # include where footprint edges cross the bend line so only the part ahead counts
        idx = np.argsort(along)
        lat = np.concatenate([lat, np.interp([0.0], along[idx], lateral[idx])])
    margin = min(float(lat.max()), float(-lat.min()))
    return margin, ray.leg_length + max(0.0, float(along.min()))


# ----------------------------------------------------------------------------- pairs


def touching(a: Piece, b: Piece, cfg: RelationsConfig, near: bool) -> Predicate:
    if near:
        gap = shell_distance(a, b)
    else:
        (ca, ra), (cb, rb) = bounding_sphere(a), bounding_sphere(b)
        gap = float(np.linalg.norm(ca - cb)) - ra - rb
    margin = cfg.touch_gap_mm - max(gap, 0.0)
    return Predicate("touching", tuple(sorted((a.id, b.id))), margin >= 0, margin, "mm")


def stacked(lower: Piece, upper: Piece, cfg: RelationsConfig) -> Predicate:
    """A tower link: lower's tip fully touching the underside of upper's tip, axes aligned."""
    inner_tip = upper.to_table(np.array([[0.0, 0.0, PYRAMID_SIZES[upper.size].inner_height]]))[0]
    dist = float(np.linalg.norm(lower.tip - inner_tip))
    ang = angle_deg(lower.axis, upper.axis)
    m_mm = cfg.stack_tip_mm - dist
    m_deg = cfg.stack_angle_deg - ang
    margin, unit = min((m_mm, "mm"), (m_deg, "deg"), key=lambda m: m[0] / cfg.band.get(m[1], 1.0))
    value = m_mm >= 0 and m_deg >= 0
    return Predicate("stacked", (lower.id, upper.id), value, margin, unit)


def nested(outer: Piece, inner: Piece, cfg: RelationsConfig, same_tower: bool) -> Predicate:
    """inner lies inside outer's cavity: at least half of its volume is in the cavity.

    The margin is the median depth (mm) of the inner piece's volume inside the cavity, so it is
    zero exactly when half the piece is in. Pieces of one tower are never nested in each other.
    """
    n, d = piece_planes(outer, cavity=True)
    pts = inner.to_table(volume_samples(inner.size))
    depth = float(np.median((d[None, :] - pts @ n.T).min(axis=1)))
    if same_tower:
        depth = min(depth, -_FAR)
    return Predicate("nested", (outer.id, inner.id), depth >= 0, depth, "mm")


def direction_vector(piece: Piece, orient: str) -> np.ndarray:
    """Where a piece points, as players compare directions: a flat piece by its heading along the
    table (its axis dips 16 degrees, which nobody counts), any other piece by its axis."""
    if orient == "flat":
        flat = np.array([piece.axis[0], piece.axis[1], 0.0])
        if np.linalg.norm(flat) > 1e-9:
            return flat / np.linalg.norm(flat)
    return piece.axis


def directions(a: Piece, b: Piece, da: np.ndarray, db: np.ndarray, cfg: RelationsConfig) -> tuple[Predicate, Predicate]:
    ang = angle_deg(da, db)
    ids = tuple(sorted((a.id, b.id)))
    same = cfg.direction_deg - ang
    opp = ang - (180.0 - cfg.direction_deg)
    return (
        Predicate("same_direction", ids, same >= 0, same, "deg"),
        Predicate("opposite_direction", ids, opp >= 0, opp, "deg"),
    )


def same_height(a: Piece, b: Piece, cfg: RelationsConfig) -> Predicate:
    diff = abs(float(a.vertices[:, 2].max() - b.vertices[:, 2].max()))
    margin = cfg.same_height_mm - diff
    return Predicate("same_height", tuple(sorted((a.id, b.id))), margin >= 0, margin, "mm")


# ----------------------------------------------------------------------------- koans


def koan_facts(koan_id: str, pieces: Sequence[Piece], cfg: RelationsConfig | None = None) -> KoanFacts:
    """Every predicate of the koan. Each piece's orientation and groundedness are worked out at
    once; tower links, nestings, the pairs' relations and the pointing rays only when a rule asks
    for one of them (`LazyPredicates`), in this order, so that the whole reads as it always has."""
    cfg = cfg or RelationsConfig()
    pieces = tuple(pieces)
    own: list[Predicate] = []
    for p in pieces:
        own.append(orientation(p, cfg))
        own.append(grounded(p, cfg))
    grounded_ids = {p.args[0] for p in own if p.name == "grounded" and p.value}
    orient = {p.args[0]: p.value for p in own if p.name == "orientation"}

    def links(_) -> list[Predicate]:
        out = []
        for lower, upper in permutations(pieces, 2):
            link = stacked(lower, upper, cfg)
            if link.value or link.is_borderline(cfg.band):
                out.append(link)
        return out

    def nests(preds: LazyPredicates) -> list[Predicate]:
        tower_of = {pid: n for n, t in enumerate(towers_from_links([p.id for p in pieces], preds.named("stacked")))
                    for pid in t}
        return [nested(outer, inner, cfg, tower_of[inner.id] == tower_of[outer.id])
                for outer, inner in permutations(pieces, 2)
                if PYRAMID_SIZES[inner.size].height <= PYRAMID_SIZES[outer.size].height + 1e-6]

    def pairs(_) -> list[Predicate]:
        near = {(pieces[i].id, pieces[j].id) for i, j in near_pairs(pieces, cfg.touch_gap_mm + 2 * cfg.band["mm"])}
        dirs = {p.id: direction_vector(p, orient[p.id]) for p in pieces}
        out = []
        for a, b in combinations(pieces, 2):
            out.append(touching(a, b, cfg, (a.id, b.id) in near or (b.id, a.id) in near))
            out.extend(directions(a, b, dirs[a.id], dirs[b.id], cfg))
            out.append(same_height(a, b, cfg))
        return out

    def rays(_) -> list[Predicate]:
        return [pr for p in pieces
                for pr in pointing(p, [q for q in pieces if q.id != p.id], grounded_ids, cfg, orient[p.id] == "upright")]

    preds = LazyPredicates(own, [(("stacked",), links), (("nested",), nests),
                                 (("touching", "same_direction", "opposite_direction", "same_height"), pairs),
                                 (("pointing",), rays)])
    attrs = tuple(
        PieceAttrs(p.id, p.color, p.size, p.pips, round(float(p.vertices[:, 2].max()), 3)) for p in pieces
    )
    return KoanFacts(koan_id, attrs, preds, dict(cfg.band))


def table_facts(scene: Scene, cfg: RelationsConfig | None = None) -> tuple[list[Koan], list[KoanFacts]]:
    cfg = cfg or RelationsConfig()
    koans = split_koans(scene)
    return koans, [koan_facts(k.id, k.pieces(scene), cfg) for k in koans]


def relations_report(scene: Scene, cfg: RelationsConfig | None = None) -> dict:
    """The JSON document `zendo relations` prints (issue 2's contract)."""
    cfg = cfg or RelationsConfig()
    koans, facts = table_facts(scene, cfg)
    report: dict = {"koans": [], "pieces": {}, "touching": [], "pointing": {}, "towers": [],
                    "same_direction": [], "opposite_direction": [], "nested": [], "borderline": []}
    for k, f in zip(koans, facts):
        report["koans"].append({"id": k.id, "pieces": list(k.piece_ids), "stones": list(k.stone_ids),
                                "highest": f.highest(), "lowest": f.lowest()})
        for a in f.pieces:
            report["pieces"][a.id] = {
                "koan": k.id, "color": a.color, "size": a.size, "pips": a.pips,
                "orientation": f.orientation(a.id), "grounded": f.grounded(a.id), "top_mm": a.top_mm,
            }
        report["touching"] += [list(p) for p in f.touching_pairs()]
        for a in f.ids:
            report["pointing"][a] = f.pointed_at(a)
        report["towers"] += f.towers
        for a, b in combinations(f.ids, 2):
            if f.same_direction(a, b):
                report["same_direction"].append(sorted([a, b]))
            if f.opposite_direction(a, b):
                report["opposite_direction"].append(sorted([a, b]))
        for o in f.ids:
            for i in f.ids:
                if o != i and f.nested_in(i, o):
                    report["nested"].append([o, i])
        report["borderline"] += [p.to_dict() for p in f.borderline(cfg.band)]
    return report
