"""Random game tables: 1-8 koans of 1-6 pieces, built with the placements players use
(zendo.build), checked by the scene validator, with marking stones beside koans."""
from __future__ import annotations

from collections import Counter

import numpy as np

from zendo import build
from zendo.build import Spec
from zendo.pieces import RAINBOW_COLORS, SIZES
from zendo.scene import Piece, Scene, SceneError, Stone, validate
from zendo.shapes import point_solid_distance, shell_distance

from .world import STONE_DIAMETER_MM

#: Copies of each colour x size on a table: five Rainbow stashes.
STASHES = 5
KOAN_SPACING_MM = 45.0  # clear space between koans' footprints (the rules want them apart; > 20 mm)

PLACEMENTS = ("upright", "flat", "tower", "nested", "lying_tower", "nested_lying", "leaning", "touching",
              "pointing", "across")


class _Stash:
    def __init__(self, rng: np.random.Generator, colors=RAINBOW_COLORS):
        self.rng = rng
        self.colors = colors
        self.used: Counter = Counter()
        self.n = 0

    def take(self, size: str | None = None, color: str | None = None) -> Spec:
        for _ in range(50):
            c = color or self.colors[int(self.rng.integers(len(self.colors)))]
            s = size or SIZES[int(self.rng.integers(3))]
            if self.used[(c, s)] < STASHES:
                break
        self.used[(c, s)] += 1
        self.n += 1
        return Spec(f"p{self.n}", c, s)

    def give_back(self, specs) -> None:
        for sp in specs:
            self.used[(sp.color, sp.size)] -= 1


def _group(kind: str, stash: _Stash, rng: np.random.Generator) -> list[Piece]:
    """One placement, built around the origin."""
    yaw = float(rng.uniform(0, 360))
    if kind == "upright":
        return [build.upright(stash.take(), (0, 0), yaw)]
    if kind == "flat":
        return [build.flat(stash.take(), (0, 0), yaw)]
    if kind == "tower":
        n = int(rng.integers(2, 4))
        sizes = sorted(rng.choice(SIZES, n), key=SIZES.index, reverse=bool(rng.random() < 0.7))
        return build.tower([stash.take(s) for s in sizes], (0, 0), yaw)
    if kind == "nested":  # a larger piece over a smaller upright one
        small, big = sorted(rng.choice(3, 2, replace=False))
        return build.tower([stash.take(SIZES[small]), stash.take(SIZES[big])], (0, 0), yaw)
    if kind == "lying_tower":
        n = int(rng.integers(2, 4))
        sizes = sorted(rng.choice(SIZES, n), key=SIZES.index, reverse=True)
        return build.lying_tower([stash.take(s) for s in sizes], (0, 0), yaw)
    if kind == "nested_lying":
        small, big = sorted(rng.choice(3, 2, replace=False))
        return build.nested_lying(stash.take(SIZES[big]), stash.take(SIZES[small]), (0, 0), yaw)
    if kind == "leaning":
        target = build.upright(stash.take(SIZES[int(rng.integers(1, 3))]), (0, 0), yaw)
        return [target, build.lean_against(target, stash.take(), from_heading=float(rng.uniform(0, 360)))]
    if kind == "touching":
        a = build.upright(stash.take(), (0, 0), yaw)
        b = build.beside(a, stash.take(), heading=float(rng.choice([0, 90, 180, 270])),
                         gap=float(rng.choice([0.0, 0.0, rng.uniform(0.1, 4.0)])))
        return [a, b]
    if kind == "pointing":
        target = build.upright(stash.take(), (0, 0), yaw)
        reach = target.dims.half * 1.42  # tip within ~15 mm of the target's solid: one koan
        return [target, build.pointing_at(target, stash.take(), distance=float(reach + rng.uniform(4, 15)),
                                          from_heading=float(rng.uniform(0, 360)))]
    if kind == "across":
        s = stash.take()
        a = build.upright(s, (0, 0), yaw)
        b = build.beside(a, stash.take(s.size), heading=0.0, gap=float(rng.uniform(2, 6)))
        return [a, b, build.flat_across([a, b], stash.take("small" if s.size != "small" else "small"),
                                        heading=yaw + 90.0)]
    raise ValueError(kind)


def _footprint(pieces) -> tuple[np.ndarray, float]:
    pts = np.vstack([p.vertices[:, :2] for p in pieces])
    c = (pts.min(0) + pts.max(0)) / 2
    return c, float(np.linalg.norm(pts - c, axis=1).max())


def _koan(stash: _Stash, rng: np.random.Generator, n_pieces: int) -> list[Piece]:
    """A koan of about n_pieces: placements side by side, within 20 mm of each other."""
    pieces: list[Piece] = []
    tries = 0
    while len(pieces) < n_pieces and tries < 30:
        tries += 1
        left = n_pieces - len(pieces)
        kinds = [k for k in PLACEMENTS if _size_of(k) <= left]
        weights = np.array([_WEIGHTS[k] for k in kinds], float)
        kind = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
        before = stash.n
        try:
            group = _group(kind, stash, rng)
        except (ValueError, SceneError):
            continue
        if not pieces:
            pieces = group
            continue
        c0, r0 = _footprint(pieces)
        c1, r1 = _footprint(group)
        for _ in range(12):
            ang = rng.uniform(0, 2 * np.pi)
            dist = r0 + r1 + rng.uniform(-0.3 * min(r0, r1), 12.0)
            off = c0 + dist * np.array([np.cos(ang), np.sin(ang)]) - c1
            moved = build.translate(group, float(off[0]), float(off[1]))
            gaps = [shell_distance(a, b) for a in pieces for b in moved]
            if min(gaps) > 0.6 and min(gaps) < 18.0:
                pieces = pieces + moved
                break
        else:
            stash.give_back([Spec(p.id, p.color, p.size) for p in group])
            stash.n = before
    return pieces


_SIZE = {"upright": 1, "flat": 1, "tower": 2, "nested": 2, "lying_tower": 2, "nested_lying": 2, "leaning": 2,
         "touching": 2, "pointing": 2, "across": 3}
_WEIGHTS = {"upright": 3, "flat": 2.5, "tower": 1.5, "nested": 1, "lying_tower": 0.7, "nested_lying": 0.7,
            "leaning": 1, "touching": 1.2, "pointing": 1.2, "across": 0.6}


def _size_of(kind: str) -> int:
    return _SIZE[kind]


def _rename(pieces, start: int) -> list[Piece]:
    from dataclasses import replace

    return [replace(p, id=f"p{start + i}") for i, p in enumerate(pieces)]


def random_table(rng: np.random.Generator, n_koans: int, *, area_mm: tuple[float, float] | None = None,
                 stone_probability: float = 0.7, max_pieces: int = 6) -> Scene:
    """A valid table of `n_koans` koans (1-`max_pieces` pieces each) around the origin, with
    marking stones beside about `stone_probability` of them. The scene's extra 'koans' lists
    which pieces form which koan. `area_mm` (width, depth) bounds the koan centres; by default
    it grows with the number of koans."""
    if not 1 <= n_koans <= 12:
        raise ValueError(f"n_koans must be 1..12, got {n_koans}")
    if area_mm is None:
        side = 130.0 * np.sqrt(n_koans) + 60.0
        area_mm = (side * 1.3, side)
    for _attempt in range(20):
        stash = _Stash(rng)
        koans: list[list[Piece]] = []
        placed: list[tuple[np.ndarray, float]] = []
        for _ in range(n_koans):
            n = int(rng.integers(1, max_pieces + 1))
            group = _koan(stash, rng, n)
            if not group:
                continue
            c, r = _footprint(group)
            group = build.turn(group, float(rng.uniform(0, 360)), about=tuple(c))
            c, r = _footprint(group)
            for _ in range(200):
                target = rng.uniform(-0.5, 0.5, 2) * np.asarray(area_mm)
                if all(np.linalg.norm(target - pc) > r + pr + KOAN_SPACING_MM for pc, pr in placed):
                    group = build.translate(group, float(target[0] - c[0]), float(target[1] - c[1]))
                    placed.append((target, r))
                    koans.append(group)
                    break
        if len(koans) < n_koans:
            area_mm = (area_mm[0] * 1.15, area_mm[1] * 1.15)
            continue
        pieces: list[Piece] = []
        declared = []
        for ki, group in enumerate(koans, start=1):
            group = _rename(group, len(pieces) + 1)
            declared.append({"id": f"k{ki}", "pieces": [p.id for p in group]})
            pieces.extend(group)
        stones = _stones(rng, koans, pieces, stone_probability)
        scene = Scene(tuple(pieces), tuple(stones), {"koans": declared})
        try:
            validate(scene)
        except SceneError:
            continue
        from zendo.koans import split_koans

        if len(split_koans(scene)) != len(declared):
            continue  # a placement left a piece more than 20 mm from its koan: draw again
        return scene
    raise RuntimeError("could not build a valid random table")  # pragma: no cover


def _stones(rng, koans, all_pieces, probability) -> list[Stone]:
    stones = []
    for ki, group in enumerate(koans, start=1):
        if rng.random() >= probability:
            continue
        colour = "white" if rng.random() < 0.5 else "black"
        if rng.random() < 0.1:
            colour = "green"
        c, r = _footprint(group)
        for _ in range(40):
            ang = rng.uniform(0, 2 * np.pi)
            pos = np.array([*(c + (r + rng.uniform(10, 25)) * np.array([np.cos(ang), np.sin(ang)])), 0.0])
            own = min(point_solid_distance(pos, p) for p in group)
            others = [point_solid_distance(pos, p) for p in all_pieces if p not in group]
            clear = own > STONE_DIAMETER_MM / 2 + 2.0 and (not others or min(others) > own + 15.0)
            clear = clear and all(np.linalg.norm(pos[:2] - np.array(s.position[:2])) > STONE_DIAMETER_MM + 2 for s in stones)
            if clear:
                stones.append(Stone(f"s{len(stones) + 1}", colour, tuple(float(v) for v in pos)))
                break
    return stones
