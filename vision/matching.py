"""One-to-one pairing of two sets of pieces (or points) by optimal assignment within a reach.

Why one place: scoring pairs perceived pieces with true ones (`vision.eval.match`) and the
tracker pairs a frame's readings with its tracks (`vision.pipeline.Tracker`); both need the
same two rules, so both take them from here.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zendo.scene import Piece

# a piece of another colour or size is paired this much farther before one of its own class: one
# tower step (5.5 mm between two pieces of a size) and a millimetre or two of fit
CLASS_TIE_MM = 7.0


def pairs_within_reach(a, b, reach: float, penalty: np.ndarray | None = None) -> list[tuple[int, int, float]]:
    """One-to-one pairs (a index, b index, distance) of two point sets by optimal assignment,
    each within `reach` millimetres; `penalty` (millimetres, a row per a, a column per b) is
    added to a pair's cost, not its distance. Pairs beyond reach all cost alike: minimising raw
    distances would pair a point with a far one (dropped below) to shorten another pair, and
    leave a pair within reach unmatched."""
    if not len(a) or not len(b):
        return []
    D = np.linalg.norm(np.asarray(a, float)[:, None] - np.asarray(b, float)[None], axis=2)
    return pairs_of_distances(D, reach, penalty)


def pairs_of_distances(D: np.ndarray, reach: float, penalty: np.ndarray | None = None) -> list[tuple[int, int, float]]:
    """`pairs_within_reach` on a distance matrix already measured (a row per a, a column per b),
    for things that are not points: koans, paired by their nearest pieces."""
    from scipy.optimize import linear_sum_assignment

    D = np.asarray(D, float)
    if not D.size:
        return []
    cost = D if penalty is None else D + penalty
    ri, ci = linear_sum_assignment(np.where(D <= reach, cost, 1e6))
    return [(int(i), int(j), float(D[i, j])) for i, j in zip(ri, ci) if D[i, j] <= reach]


def class_penalty(a: Sequence[Piece], b: Sequence[Piece]) -> np.ndarray:
    """CLASS_TIE_MM for each pair (a row per a, a column per b) of different colour or size."""
    ka = np.array([f"{p.color} {p.size}" for p in a], dtype=object)
    kb = np.array([f"{p.color} {p.size}" for p in b], dtype=object)
    return CLASS_TIE_MM * (ka[:, None] != kb[None, :])
