"""The demo table: a starting table (two initial koans), and a shelf of koans players can "build"
on it from the dashboard, since no hands reach into a synthetic world.

The starting table is vision/data/demo_table.json when the vision area has made it, otherwise the
two koans below. Catalogue koans are built from zendo.build placements around the origin and put
down in a free slot of a grid, each piece renamed so ids stay unique on the table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from zendo.build import (Spec, beside, flat, lean_against, lying_tower, nested_lying, pointing_at, tower, translate,
                         turn, upright)
from zendo.scene import Piece, Scene, load_scene

SLOT_MM = 125.0
COLUMNS, ROWS = 4, 3
TABLE_BOUNDS = (-SLOT_MM * COLUMNS / 2 - 20, -SLOT_MM * ROWS / 2 - 20, SLOT_MM * COLUMNS / 2 + 20,
                SLOT_MM * ROWS / 2 + 20)


def slots() -> list[tuple[float, float]]:
    """Koan places, in the order a Master would fill them: the middle row first."""
    xs = [SLOT_MM * (c - (COLUMNS - 1) / 2) for c in range(COLUMNS)]
    ys = [SLOT_MM * (r - (ROWS - 1) / 2) for r in range(ROWS)]
    order = sorted(range(ROWS), key=lambda r: abs(r - (ROWS - 1) / 2))
    return [(x, ys[r] + 10.0) for r in order for x in xs]


def _s(pid, color, size):
    return Spec(pid, color, size)


def _lone(color, size):
    return lambda: [upright(_s("a", color, size))]


def _pointing(a_color, a_size, b_color, b_size):
    def build():
        t = upright(_s("a", b_color, b_size))
        return [t, pointing_at(t, _s("b", a_color, a_size), distance=30, from_heading=200)]
    return build


def _touching(a, b):
    def build():
        x = upright(_s("a", *a), (-10, 0))
        return [x, beside(x, _s("b", *b), gap=0.0)]
    return build


def _apart(*specs):
    def build():
        return [upright(_s(chr(97 + i), c, z), (-35 + 35 * i, 0)) for i, (c, z) in enumerate(specs)]
    return build


def _tower(*specs):
    return lambda: tower([_s(chr(97 + i), c, z) for i, (c, z) in enumerate(specs)])


def _flat(color, size, heading=30):
    return lambda: [flat(_s("a", color, size), (0, 0), heading)]


def _lean(target, leaner):
    def build():
        t = upright(_s("a", *target))
        return [t, lean_against(t, _s("b", *leaner), from_heading=160)]
    return build


def _nested(outer, inner):
    return lambda: nested_lying(_s("a", *outer), _s("b", *inner), heading=20)


def _same_way(a, b):
    def build():
        return [flat(_s("a", *a), (-10, -22), 60), flat(_s("b", *b), (-10, 22), 60)]
    return build


#: Name -> (description, builder). Builders place pieces around the origin.
CATALOGUE: dict[str, tuple[str, Callable[[], list[Piece]]]] = {
    "lone-red": ("a large red pyramid, upright", _lone("red", "large")),
    "lone-blue-small": ("a small blue pyramid, upright", _lone("blue", "small")),
    "flat-yellow": ("a medium yellow pyramid lying flat", _flat("yellow", "medium")),
    "flat-green": ("a large green pyramid lying flat", _flat("green", "large", 120)),
    "red-points-blue": ("a small red lying flat, pointing at a large blue", _pointing("red", "small", "blue", "large")),
    "green-points-yellow": ("a medium green lying flat, pointing at a medium yellow",
                            _pointing("green", "medium", "yellow", "medium")),
    "touch-red-green": ("a medium red and a medium green touching", _touching(("red", "medium"), ("green", "medium"))),
    "touch-blue-yellow": ("a large blue and a small yellow touching", _touching(("blue", "large"), ("yellow", "small"))),
    "apart-three": ("a small yellow, a medium blue and a large green, apart",
                    _apart(("yellow", "small"), ("blue", "medium"), ("green", "large"))),
    "apart-red-blue": ("a small red and a small blue, apart", _apart(("red", "small"), ("blue", "small"))),
    "tower-green-yellow": ("a tower: large green under a medium yellow", _tower(("green", "large"), ("yellow", "medium"))),
    "tower-red": ("a tower: large red, medium blue, small red", _tower(("red", "large"), ("blue", "medium"), ("red", "small"))),
    "lean-yellow-on-blue": ("a small yellow leaning on a large blue", _lean(("blue", "large"), ("yellow", "small"))),
    "nested-blue-red": ("a small red nested in a large blue, lying flat", _nested(("blue", "large"), ("red", "small"))),
    "same-way": ("two flat pyramids, green and blue, pointing the same way",
                 _same_way(("green", "medium"), ("blue", "large"))),
    "lying-tower": ("a tower of yellow on green, lying on its side",
                    lambda: lying_tower([_s("a", "green", "large"), _s("b", "yellow", "medium")], heading=10)),
}


def catalogue_list() -> list[dict]:
    return [{"name": k, "description": v[0]} for k, v in CATALOGUE.items()]


def initial_table() -> Scene:
    """The demo's starting table: vision's demo table if present, else two initial koans."""
    try:
        from vision.frames import DEMO_TABLE
    except Exception:  # noqa: BLE001 - the vision area is optional for the dashboard
        DEMO_TABLE = None
    if DEMO_TABLE is not None and Path(DEMO_TABLE).is_file():
        return load_scene(DEMO_TABLE)
    s = slots()
    k1 = _at(_pointing("yellow", "small", "red", "large")(), s[1], "p", 1)
    k2 = _at(_touching(("blue", "medium"), ("green", "small"))(), s[2], "p", 3)
    return Scene(tuple(k1 + k2))


def _at(pieces: list[Piece], xy, prefix: str, start: int) -> list[Piece]:
    from dataclasses import replace

    centre = np.mean([p.vertices[:, :2].mean(axis=0) for p in pieces], axis=0)
    moved = translate(pieces, xy[0] - centre[0], xy[1] - centre[1])
    return [replace(p, id=f"{prefix}{start + i}") for i, p in enumerate(moved)]


def build_koan(name: str, seed: int | None = None) -> list[Piece]:
    """Pieces of a catalogue koan (or 'random': a koan drawn by vision.synth) around the origin."""
    if name == "random":
        from vision.synth import random_table

        rng = np.random.default_rng(seed)
        sc = random_table(rng, 1, stone_probability=0.0, max_pieces=4)
        pieces = list(sc.pieces)
        c = np.mean([p.origin[:2] for p in pieces], axis=0)
        return translate(pieces, -c[0], -c[1])
    if name not in CATALOGUE:
        raise KeyError(name)
    pieces = CATALOGUE[name][1]()
    if seed is not None:  # a little variety: turn the koan on the table
        pieces = turn(pieces, float(np.random.default_rng(seed).uniform(0, 360)))
    return pieces
