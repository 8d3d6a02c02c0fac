"""Tight-lipped counterexamples: a near copy of a koan already on the table.

Seed 001: a tight-lipped Master builds counterexamples "which give away as little as possible".
A koan that differs from one the students have already studied by a single recolouring, resizing,
turning, added or removed piece tells them only about that one change. Closeness is the number of
edits; one geometric edit (anything but a recolouring) plus recolourings keeps the search small.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Sequence

import numpy as np

from .. import build
from ..build import Spec
from ..facts import KoanFacts
from ..koans import Koan, split_koans
from ..pieces import PYRAMID_SIZES, SIZES
from ..relations import koan_facts, table_facts
from ..scene import Piece, Scene, is_valid
from .search import (Counterexample, SearchConfig, _mark_step, mark_name, place_on_table, stable_mark)
from .stash import Stash
from .vocab import GROUP_GAP_MM, describe_piece


@dataclass(frozen=True)
class Variant:
    """A table koan after some edits: its pieces, the edits in words, and whether geometry moved."""

    pieces: tuple[Piece, ...]
    edits: tuple[str, ...]
    geometric: bool


def _free(pid: str, f: KoanFacts) -> bool:
    """A piece on the table that nothing rests on: safe to resize, turn or take away."""
    if not f.grounded(pid) or f.orientation(pid) == "weird":
        return False
    return not _supports(pid, f)


def _supports(pid: str, f: KoanFacts) -> bool:
    """Whether another piece may rest on this one (it touches it and is off the table or leaning)."""
    return any(f.touching(pid, q) and (not f.grounded(q) or f.orientation(q) == "weird") for q in f.ids if q != pid)


_TOWARDS = {0.0: "right", 90.0: "top", 180.0: "left", 270.0: "bottom"}


def _centroid_xy(p: Piece) -> tuple[float, float]:
    c = p.vertices.mean(axis=0)
    return float(c[0]), float(c[1])


def _name(p: Piece) -> str:
    return f"the {p.size} {p.color} pyramid ({p.id})"


def recolourings(pieces: Sequence[Piece], palette: Sequence[str]) -> Iterator[Variant]:
    for i, p in enumerate(pieces):
        for c in palette:
            if c != p.color:
                new = list(pieces)
                new[i] = replace(p, color=c)
                yield Variant(tuple(new), (f"use a {p.size} {c} pyramid in place of {_name(p)}",), False)


def geometric_edits(pieces: Sequence[Piece], f: KoanFacts, palette: Sequence[str]) -> Iterator[Variant]:
    """Resize, turn (upright <-> flat), remove, or add one piece: each one physical edit."""
    by_id = {p.id: p for p in pieces}
    for i, p in enumerate(pieces):
        if not _free(p.id, f):
            continue
        orient = f.orientation(p.id)
        for s in SIZES:
            if s == p.size:
                continue
            spec = Spec(p.id, p.color, s)
            if orient == "upright":
                q = build.upright(spec, (p.origin[0], p.origin[1]), 0.0)
                q = replace(q, rotation=p.rotation)
            else:
                q = build.flat(spec, _centroid_xy(p), p.heading_deg)
            yield _swap(pieces, i, q, f"use a {s} {p.color} pyramid in place of {_name(p)}, placed the same way")
        spec = Spec(p.id, p.color, p.size)
        if orient == "upright":
            for h in (0.0, 90.0, 180.0, 270.0):
                q = build.flat(spec, (p.origin[0], p.origin[1]), h)
                yield _swap(pieces, i, q, f"lay {_name(p)} flat where it stood, its tip towards the "
                                          f"{_TOWARDS[h]} of the picture")
        elif orient == "flat":
            q = build.upright(spec, _centroid_xy(p))
            yield _swap(pieces, i, q, f"stand {_name(p)} upright where it lay")
        if len(pieces) > 1:
            yield Variant(tuple(q for q in pieces if q.id != p.id), (f"leave out {_name(p)}",), True)
    new_id = _fresh_id(by_id)
    v = np.vstack([p.vertices for p in pieces])
    lo, hi = v.min(axis=0), v.max(axis=0)
    for c in palette:
        for s in SIZES:
            spec = Spec(new_id, c, s)
            half = PYRAMID_SIZES[s].half
            for orient in ("upright", "flat"):
                if orient == "upright":
                    q = build.upright(spec, (hi[0] + GROUP_GAP_MM + half, (lo[1] + hi[1]) / 2))
                else:
                    q = build.flat(spec, (0.0, 0.0), 90.0)
                    qv = q.vertices
                    q = build.translate([q], hi[0] + GROUP_GAP_MM - float(qv[:, 0].min()),
                                        (lo[1] + hi[1]) / 2 - float(qv[:, 1].mean()))[0]
                yield Variant(tuple(pieces) + (q,), (f"add {describe_piece(c, s)} ({new_id}) {orient}, about "
                                                     f"{GROUP_GAP_MM:.0f} mm to the right of the koan, touching nothing",),
                              True)
            for p in pieces:
                if f.orientation(p.id) == "upright" and f.grounded(p.id) and not _supports(p.id, f) \
                        and not any(f.nested_in(p.id, o) for o in f.ids):
                    q = build.cover(p, spec)
                    what = "stack it on the tip of" if PYRAMID_SIZES[s].height <= p.dims.height else "put it over"
                    yield Variant(tuple(pieces) + (q,), (f"add {describe_piece(c, s)} ({new_id}): {what} {_name(p)}",), True)


def _swap(pieces: Sequence[Piece], i: int, q: Piece, text: str) -> Variant:
    new = list(pieces)
    new[i] = q
    return Variant(tuple(new), (text,), True)


def _fresh_id(by_id) -> str:
    k = 1
    while f"n{k}" in by_id:
        k += 1
    return f"n{k}"


def _valid(pieces: Sequence[Piece]) -> bool:
    """Physically valid (no crossing, nothing under the table) and still one koan."""
    scene = Scene(tuple(pieces))
    return is_valid(scene) and len(split_koans(scene)) == 1


def _geometric(pieces: Sequence[Piece], f: KoanFacts, palette: Sequence[str]) -> Iterator[tuple[Variant, KoanFacts]]:
    for v in geometric_edits(pieces, f, palette):
        if _valid(v.pieces):
            yield v, koan_facts(f.koan_id, v.pieces)


def phases(koans: Sequence[tuple[Koan, Sequence[Piece], KoanFacts]], palette: Sequence[str],
           max_edits: int) -> Iterator[tuple[Koan, Variant, KoanFacts]]:
    """Edits of the table's koans, fewest first and, at equal count, cheapest to check first:
    recolourings (no geometry), then one physical edit, then a second edit that recolours.
    Why this order: a recolouring needs no new geometry, so a big table answers in milliseconds
    whenever one will do."""
    singles: list[tuple[Koan, tuple[Piece, ...], Variant, KoanFacts]] = []
    for k, pieces, f in koans:
        for v in recolourings(tuple(pieces), palette):
            item = (k, v, _recolour_facts(f, v.pieces))
            singles.append((k, tuple(pieces), v, item[2]))
            yield item
    for k, pieces, f in koans:
        for v, vf in _geometric(tuple(pieces), f, palette):
            item = (k, v, vf)
            singles.append((k, tuple(pieces), v, vf))
            yield item
    if max_edits < 2:
        return
    for k, base, v1, f1 in singles:
        for v2 in recolourings(v1.pieces, palette):
            changed = sum(a != b for a, b in zip(base, v2.pieces)) if not v1.geometric else 2
            if changed < 2:  # recoloured the same piece twice: one edit, tried already
                continue
            yield k, Variant(v2.pieces, v1.edits + v2.edits, True), _recolour_facts(f1, v2.pieces)


def _recolour_facts(f: KoanFacts, pieces: Sequence[Piece]) -> KoanFacts:
    colours = {p.id: p.color for p in pieces}
    return replace(f, pieces=tuple(replace(a, color=colours[a.id]) for a in f.pieces))


def tight_search(rule, guess, table: Scene, stash: Stash, cfg: SearchConfig) -> tuple[Counterexample | None, int]:
    """The fewest-edit copy of a table koan that the rule and guess mark differently, and how many
    koans were tried. Every piece of the copy must come from the stash (the original stays)."""
    palette = cfg.palette or stash.colors
    koans, facts = table_facts(table)
    # the biggest koans first: at equal edits, a copy of a busier koan gives away less
    order = sorted(zip(koans, facts), key=lambda kf: -len(kf[0].piece_ids))
    tried = 0
    best = None
    for k, v, vf in phases([(k, k.pieces(table), f) for k, f in order], palette, cfg.max_edits):
        tried += 1
        if not stash.allows((p.color, p.size) for p in v.pieces):
            continue
        if bool(rule.evaluate(vf)) == bool(guess.evaluate(vf)):
            continue
        border = [p.key for p in vf.borderline()]
        r, g = stable_mark(rule, vf, border), stable_mark(guess, vf, border)
        if r is not None and g is not None and r != g:
            best = (len(v.edits), k, v, r, g)
            break
    if best is None:
        return None, tried
    n, k, v, r, g = best
    scene, names = place_on_table(v.pieces, table, r)
    said = ", ".join(f"{describe_piece(p.color, p.size)} ({p.id})" for p in k.pieces(table))
    steps = [f"Build a copy of koan {k.id} ({said}) with fresh pieces from the stash, arranged the same "
             f"way, in the free space shown."]
    steps += [f"Change {i + 1}: {e}." for i, e in enumerate(v.edits)]
    renamed = {old: new for old, new in names.items() if old != new}
    if renamed:
        steps.append("In the picture the copy's pieces are named " +
                     ", ".join(f"{new} (for {old})" for old, new in renamed.items()) + ".")
    steps.append(_mark_step(r, g))
    return Counterexample(None, scene, mark_name(r), mark_name(g), tuple(steps), "tight-lipped",
                          f"koan {k.id} with {n} edit(s)", edits=n), tried
