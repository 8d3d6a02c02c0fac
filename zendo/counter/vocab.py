"""The koan builder's vocabulary: small groups of pieces placed the way players place them.

A counterexample koan is a row of *groups* (a lone upright piece, a tower, a piece pointing at
another, a piece lying across two tips ...) set about GROUP_GAP_MM apart, close enough to be one
koan and far enough that nothing between groups touches or points. Every group is built with
zendo.build, so the koan is physically valid, and each group carries `intent`: the relations it is
meant to have, which the tests check against zendo.relations. Geometry depends only on sizes, so
the facts of a shape (groups + sizes) are computed once and re-coloured for every colouring.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import product
from typing import Callable, Sequence

import numpy as np

from .. import build
from ..build import Spec
from ..facts import KoanFacts
from ..koans import split_koans
from ..pieces import PYRAMID_SIZES, SIZES
from ..relations import koan_facts
from ..scene import Piece, Scene, SceneError, validate

#: Space between neighbouring groups: clearly apart (touching needs 0.5 mm) yet one koan (< 20 mm).
GROUP_GAP_MM = 10.0
#: Tip to target for a pointing piece: plainly not touching, yet well within one koan.
POINT_GAP_MM = 12.0
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _bigger(a: str, b: str) -> bool:
    return PYRAMID_SIZES[a].height > PYRAMID_SIZES[b].height


def _beside(p: Sequence[Spec]) -> list[Piece]:
    a = build.upright(p[0])
    return [a, build.beside(a, p[1])]


def _point(p: Sequence[Spec]) -> list[Piece]:
    a = build.upright(p[0])
    return [a, build.pointing_at(a, p[1], a.dims.half + POINT_GAP_MM, 90.0)]


def _lean(p: Sequence[Spec]) -> list[Piece]:
    a = build.upright(p[0])
    return [a, build.lean_against(a, p[1], 90.0)]


def _across(p: Sequence[Spec]) -> list[Piece]:
    """Supports no bigger than the lying piece: a smaller one would rest on one tip and tip over."""
    a = build.upright(p[0])
    b = build.beside(a, p[1])
    return [a, b, build.flat_across([a, b], p[2], heading=0.0)]


@dataclass(frozen=True)
class Group:
    """One placement pattern. `say` turns piece descriptions into build steps in plain English;
    `intent` lists relations (by piece index) the group is meant to have, checked by the tests."""

    name: str
    n: int
    cost: int  # plainness: 0 is the plainest thing on a table (one upright piece)
    sizes_ok: Callable[[tuple[str, ...]], bool]
    build: Callable[[Sequence[Spec]], list[Piece]]
    say: Callable[[Sequence[str]], list[str]]
    intent: tuple[tuple, ...]

    def size_tuples(self) -> list[tuple[str, ...]]:
        return [s for s in product(SIZES, repeat=self.n) if self.sizes_ok(s)]


def _ordered(s: tuple[str, ...]) -> bool:
    """Interchangeable pieces (side by side): one size order only, to avoid duplicate shapes."""
    return list(s) == sorted(s, key=SIZES.index)


GROUPS: dict[str, Group] = {
    g.name: g
    for g in [
        Group("upright", 1, 0, lambda s: True, lambda p: [build.upright(p[0])],
              lambda d: [f"Stand {d[0]} upright."],
              (("orientation", 0, "upright"), ("grounded", 0, True))),
        Group("flat", 1, 1, lambda s: True, lambda p: [build.flat(p[0], heading=90.0)],
              lambda d: [f"Lay {d[0]} flat on one of its faces, pointing at nothing."],
              (("orientation", 0, "flat"), ("grounded", 0, True))),
        Group("beside", 2, 2, _ordered,
              _beside,
              lambda d: [f"Stand {d[0]} upright and {d[1]} upright right beside it, the two bases edge "
                         f"to edge so they touch."],
              (("touching", 0, 1, True), ("orientation", 0, "upright"), ("orientation", 1, "upright"),
               ("grounded", 1, True))),
        Group("tower", 2, 3, lambda s: not _bigger(s[1], s[0]), lambda p: build.tower(p),
              lambda d: [f"Stand {d[0]} upright and stack {d[1]} on its tip (a two-piece tower)."],
              (("tower", 0, 1), ("grounded", 1, False), ("touching", 0, 1, True))),
        Group("nest", 2, 3, lambda s: _bigger(s[1], s[0]), lambda p: build.tower(p),
              lambda d: [f"Stand {d[0]} upright and put {d[1]} over it, so {d[0]} is hidden nested "
                         f"inside {d[1]}, which stands on the table."],
              (("nested", 1, 0, True), ("grounded", 1, True), ("orientation", 1, "upright"))),
        Group("point", 2, 3, lambda s: True,
              _point,
              lambda d: [f"Stand {d[0]} upright; lay {d[1]} flat with its tip about "
                         f"{POINT_GAP_MM:.0f} mm from {d[0]}, pointing straight at its centre, not "
                         f"touching it."],
              (("pointing", 1, 0, True), ("touching", 0, 1, False), ("orientation", 1, "flat"))),
        Group("lean", 2, 4, lambda s: True,
              _lean,
              lambda d: [f"Stand {d[0]} upright; stand {d[1]} a little way off and tip it over "
                         f"until it leans against {d[0]} (neither upright nor flat)."],
              (("touching", 0, 1, True), ("orientation", 1, "weird"))),
        Group("flat_nest", 2, 4, lambda s: _bigger(s[0], s[1]),
              lambda p: build.nested_lying(p[0], p[1], heading=90.0),
              lambda d: [f"Lay {d[0]} flat and slide {d[1]}, also lying flat, into its hollow "
                         f"(nested inside it)."],
              (("nested", 0, 1, True), ("orientation", 0, "flat"), ("orientation", 1, "flat"))),
        Group("tower3", 3, 4, lambda s: not _bigger(s[1], s[0]) and not _bigger(s[2], s[1]),
              lambda p: build.tower(p),
              lambda d: [f"Stand {d[0]} upright, stack {d[1]} on its tip and {d[2]} on the tip of "
                         f"{d[1]} (a three-piece tower)."],
              (("tower", 0, 1, 2), ("grounded", 2, False))),
        Group("across", 3, 5, lambda s: s[0] == s[1] and not _bigger(s[0], s[2]),
              _across,
              lambda d: [f"Stand {d[0]} and {d[1]} upright side by side, bases touching; lay {d[2]} "
                         f"flat across their two tips, resting on both, off the table."],
              (("grounded", 2, False), ("orientation", 2, "flat"), ("touching", 0, 2, True),
               ("touching", 1, 2, True))),
    ]
}

#: Groups allowed in koans of 4 or more pieces (keeps the largest level small enough to search).
BIG_KOAN_GROUPS = ("upright", "flat")

Shape = tuple[tuple[str, tuple[str, ...]], ...]  # ((group name, sizes), ...) in layout order


def shapes(n: int, groups: Sequence[str] | None = None) -> list[Shape]:
    """Every shape of exactly n pieces, plainest first (sum of group costs, then fewer groups)."""
    if groups is None:
        groups = tuple(GROUPS) if n <= 3 else BIG_KOAN_GROUPS
    items = [(g, s) for g in groups for s in GROUPS[g].size_tuples()]
    out: list[Shape] = []

    def extend(start: int, left: int, acc: list):
        if left == 0:
            out.append(tuple(acc))
            return
        for i in range(start, len(items)):
            g, s = items[i]
            if GROUPS[g].n <= left:
                extend(i, left - GROUPS[g].n, acc + [items[i]])

    extend(0, n, [])
    return sorted(out, key=lambda sh: (shape_cost(sh), len(sh), [(g, [SIZES.index(x) for x in s]) for g, s in sh]))


def shape_cost(shape: Shape) -> int:
    return sum(GROUPS[g].cost for g, _ in shape)


def shape_label(shape: Shape) -> str:
    return " + ".join(f"{g}({'/'.join(s)})" for g, s in shape)


@dataclass(frozen=True)
class Geometry:
    """A shape built in neutral colours: its pieces (ids A, B, ...), facts and judgment calls."""

    shape: Shape
    pieces: tuple[Piece, ...]
    facts: KoanFacts
    borderline: tuple[tuple, ...]  # predicate keys inside the judgment band
    group_of: tuple[int, ...]  # group index of each piece


@lru_cache(maxsize=None)
def geometry(shape: Shape) -> Geometry:
    """Place the groups left to right GROUP_GAP_MM apart, centred on the origin, and measure."""
    pieces: list[Piece] = []
    group_of: list[int] = []
    cursor = 0.0
    k = 0
    for gi, (g, sizes) in enumerate(shape):
        specs = [Spec(LETTERS[k + i], "red", s) for i, s in enumerate(sizes)]
        k += len(sizes)
        placed = GROUPS[g].build(specs)
        xs = np.vstack([p.vertices for p in placed])[:, 0]
        placed = build.translate(placed, cursor - float(xs.min()), 0.0)
        cursor += float(xs.max() - xs.min()) + GROUP_GAP_MM
        pieces += placed
        group_of += [gi] * len(placed)
    allx = np.vstack([p.vertices for p in pieces])[:, 0]
    pieces = build.translate(pieces, -(float(allx.min()) + float(allx.max())) / 2, 0.0)
    facts = koan_facts("candidate", pieces)
    return Geometry(shape, tuple(pieces), facts, tuple(p.key for p in facts.borderline()), tuple(group_of))


def check_geometry(geo: Geometry) -> None:
    """Raise SceneError unless the shape is a valid scene forming exactly one koan."""
    scene = Scene(geo.pieces)
    validate(scene)
    koans = split_koans(scene)
    if len(koans) != 1:
        raise SceneError(f"{shape_label(geo.shape)} falls apart into {len(koans)} koans")


def recolored(geo: Geometry, colors: Sequence[str]) -> tuple[tuple[Piece, ...], KoanFacts]:
    """The shape's pieces and facts with these colours (colour never changes geometry)."""
    pieces = tuple(replace(p, color=c) for p, c in zip(geo.pieces, colors))
    attrs = tuple(replace(a, color=c) for a, c in zip(geo.facts.pieces, colors))
    return pieces, replace(geo.facts, pieces=attrs)


def describe_piece(color: str, size: str) -> str:
    return f"a {size} {color} pyramid"


def build_steps(shape: Shape, pieces: Sequence[Piece]) -> list[str]:
    """Plain-English build steps for a vocabulary koan, naming pieces by colour, size and letter."""
    steps: list[str] = []
    k = 0
    for g, sizes in shape:
        group = pieces[k:k + len(sizes)]
        k += len(sizes)
        steps += GROUPS[g].say([f"{describe_piece(p.color, p.size)} ({p.id})" for p in group])
    if len(shape) > 1:
        steps.append(f"Set these {len(shape)} groups in a row about {GROUP_GAP_MM:.0f} mm apart: close "
                     f"enough to be one koan, with nothing touching or pointing between groups.")
    return steps
