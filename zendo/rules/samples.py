"""Hand-built koans for each seed rule, one it marks white and one black (tests, demos, counterexamples).

Each is a KoanFacts from real pieces placed with zendo.build and run through the relations engine,
so what the builder meant and what the rules see are checked together.
"""
from __future__ import annotations

from ..build import Spec, beside, flat, pointing_at, tower, upright
from ..relations import koan_facts

_n = [0]


def koan(*pieces):
    _n[0] += 1
    return koan_facts(f"k{_n[0]}", list(pieces))


def up(pid, colour="red", size="small", x=0.0):
    return upright(Spec(pid, colour, size), (x, 0.0))


def lying(pid, colour="red", size="small", x=0.0):
    return flat(Spec(pid, colour, size), (x, 0.0))


def row(*specs, kind=up):
    """Pieces 80 mm apart: nothing touches, nothing points at anything."""
    return koan(*[kind(f"p{i}", c, s, 80.0 * i) for i, (c, s) in enumerate(specs)])


def pointer_koan():
    a = up("a", "red", "small")
    return koan(a, pointing_at(a, Spec("c", "green", "large")))


def tower_koan():
    return koan(*tower([Spec("d", "red", "small"), Spec("e", "blue", "small")]))


def touching_koan(gap=0.0, colours=("red", "blue")):
    a = up("a", colours[0], "small")
    return koan(a, beside(a, Spec("b", colours[1], "medium"), gap=gap))


#: For each beginner rule (seed 001 order): a koan it marks white and one it marks black.
BEGINNER_KOANS = [
    (lambda: row(("red", "small"), ("red", "large")), lambda: row(("red", "small"), ("blue", "small"))),
    (lambda: row(("red", "small"), ("blue", "small")), lambda: row(("red", "small"), ("red", "large"))),
    (lambda: row(("red", "small"), ("blue", "large"), kind=lying), lambda: koan(lying("f"), up("u", x=80.0))),
    (lambda: row(("red", "small")), lambda: row(("blue", "small"))),
    (lambda: row(("blue", "small"), ("red", "large")), lambda: row(("blue", "medium"))),
    (lambda: row(("red", "small"), ("yellow", "small"), ("green", "small"), ("blue", "small")),
     lambda: row(("red", "small"), ("yellow", "small"), ("green", "small"))),
    (lambda: row(("red", "small")), lambda: row(("green", "small"))),
    (lambda: row(("red", "small")), lambda: row(("red", "large"))),
    (lambda: row(("yellow", "medium")), lambda: row(("yellow", "small"), ("red", "medium"))),
    (lambda: row(("red", "small"), ("red", "small")), lambda: row(("red", "small"), ("red", "small"), ("red", "small"))),
    (lambda: row(("red", "small"), ("blue", "small")), lambda: koan(up("u"), lying("f", x=80.0))),
    (pointer_koan, lambda: row(("red", "small"), ("green", "large"))),
    (tower_koan, lambda: row(("red", "small"))),
    (lambda: row(("green", "small"), ("blue", "small")), lambda: row(("green", "small"), ("red", "small"))),
    (touching_koan, lambda: row(("red", "small"), ("blue", "medium"))),
]

#: The three example rules of seed 000, same shape.
EXAMPLE_KOANS = [
    (lambda: row(("green", "small")), lambda: row(("red", "small"))),
    (pointer_koan, lambda: row(("red", "small"), ("green", "large"))),
    (lambda: row(("red", "small"), ("red", "small")), lambda: row(("red", "small"), ("blue", "small"), ("green", "small"))),
]
