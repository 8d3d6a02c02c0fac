"""Splitting a table into koans, and giving each marking stone to its koan.

The rules say koans never touch and are set apart; docs/scene-format.md makes that concrete:
pieces within KOAN_GAP_MM of each other (solid to solid) belong to one koan.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scene import Piece, Scene, Stone
from .shapes import near_pairs, point_solid_distance, solid_distance

KOAN_GAP_MM = 20.0


@dataclass(frozen=True)
class Koan:
    id: str
    piece_ids: tuple[str, ...]
    stone_ids: tuple[str, ...] = ()

    def pieces(self, scene: Scene) -> tuple[Piece, ...]:
        wanted = set(self.piece_ids)
        return tuple(p for p in scene.pieces if p.id in wanted)


def components(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    """The connected groups of n items joined by `edges` (index pairs), each sorted, in order of
    their first item."""
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def stone_owner(stone: Stone, koans: list[Koan], scene: Scene) -> str | None:
    """The koan whose nearest piece is closest to the stone (a marking stone belongs to it)."""
    best, best_d = None, np.inf
    for k in koans:
        for p in k.pieces(scene):
            d = point_solid_distance(stone.position, p)
            if d < best_d:
                best, best_d = k.id, d
    return best


def split_koans(scene: Scene, gap_mm: float = KOAN_GAP_MM) -> list[Koan]:
    """Koans in the order of their first piece in the scene, named k1, k2, ... unless the scene
    names them itself (an extra 'koans' list of {"id", "pieces"} is honoured when it agrees with
    the geometry, so recorded games keep their koan names)."""
    pieces = scene.pieces
    edges = [(i, j) for i, j in near_pairs(pieces, gap_mm) if solid_distance(pieces[i], pieces[j]) <= gap_mm]
    groups = components(len(pieces), edges)
    names = _declared_names(scene)
    groups_ids = [tuple(pieces[i].id for i in g) for g in groups]
    used = {names[frozenset(ids)] for ids in groups_ids if frozenset(ids) in names}
    koans = []
    for position, ids in enumerate(groups_ids, start=1):
        name = names.get(frozenset(ids))
        if name is None:  # k<position>, or the next k<n> that no declared koan already uses
            counter = position
            while f"k{counter}" in used:
                counter += 1
            name = f"k{counter}"
            used.add(name)
        koans.append(Koan(name, ids))
    owners: dict[str, list[str]] = {k.id: [] for k in koans}
    for s in scene.stones:
        owner = stone_owner(s, koans, scene)
        if owner is not None:
            owners[owner].append(s.id)
    return [Koan(k.id, k.piece_ids, tuple(owners[k.id])) for k in koans]


def _declared_names(scene: Scene) -> dict[frozenset, str]:
    declared = scene.extra.get("koans")
    out: dict[frozenset, str] = {}
    if isinstance(declared, list):
        for k in declared:
            if isinstance(k, dict) and isinstance(k.get("id"), str) and isinstance(k.get("pieces"), list):
                out[frozenset(map(str, k["pieces"]))] = k["id"]
    return out
