"""A bundled example table built from the placements, for the README, the CLI and the benchmark."""
from __future__ import annotations

from .build import Spec, beside, flat, flat_across, lean_against, nested_lying, pointing_at, tower, translate, upright
from .scene import Scene, Stone


def example_table() -> Scene:
    """Five koans that exercise every terminology clause, with marking stones beside two of them."""
    k1 = tower([Spec("k1-red", "red", "large"), Spec("k1-blue", "blue", "medium")], (0, 0))
    k1.append(pointing_at(k1[0], Spec("k1-yellow", "yellow", "small"), distance=28, from_heading=0))
    base = upright(Spec("k2-green", "green", "large"), (150, 0))
    k2 = [base, lean_against(base, Spec("k2-red", "red", "medium"), from_heading=180)]
    k3 = tower([Spec("k3-small", "yellow", "small"), Spec("k3-large", "blue", "large")], (300, 0))
    s1, s2 = upright(Spec("k4-s1", "green", "small"), (0, 150)), upright(Spec("k4-s2", "blue", "small"), (0, 164))
    k4 = [s1, s2, flat_across([s1, s2], Spec("k4-top", "red", "large"), heading=90)]
    a = upright(Spec("k5-a", "yellow", "medium"), (150, 150))
    k5 = [a, beside(a, Spec("k5-b", "red", "medium"), gap=0.3)]
    k5 += translate(nested_lying(Spec("k5-out", "green", "large"), Spec("k5-in", "blue", "small"), heading=90), 150, 95)
    k6 = [flat(Spec("k6-flat", "blue", "large"), (300, 150), heading=45)]
    stones = (Stone("w1", "white", (40, -40, 0)), Stone("b1", "black", (190, -40, 0)))
    return Scene(tuple(k1 + k2 + k3 + k4 + k5 + k6), stones)


def grid_table(n_koans: int = 10) -> Scene:
    """n copies of a 6-piece koan on a grid (the 60-piece benchmark table)."""
    pieces = []
    for n in range(n_koans):
        x, y = (n % 5) * 220.0, (n // 5) * 220.0
        t = tower([Spec(f"{n}a", "red", "large"), Spec(f"{n}b", "blue", "large")], (x, y))
        p = pointing_at(t[0], Spec(f"{n}c", "yellow", "small"), distance=28, from_heading=0)
        u = upright(Spec(f"{n}d", "green", "medium"), (x, y - 40))
        side = beside(u, Spec(f"{n}e", "red", "small"), heading=180)
        lean = lean_against(u, Spec(f"{n}f", "blue", "small"), from_heading=-90)
        pieces += t + [p, u, side, lean]
    return Scene(tuple(pieces))
