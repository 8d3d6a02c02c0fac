"""Benchmark: mark 10,000 koans (facts already computed) with each beginner rule.

Facts are synthetic KoanFacts (1-7 pieces, random colours, sizes, orientations, touching,
pointing, towers, nesting, directions, heights, some predicates borderline) plus a few koans built
with zendo.build and run through the relations engine, so both shapes of facts are exercised.
The figure that matters is seconds per rule for `evaluate` over all koans (aim: under 1 s).
"""
from __future__ import annotations

import random
import time
from itertools import combinations, permutations

from ..facts import DEFAULT_BAND, KoanFacts, PieceAttrs, Predicate
from ..pieces import PYRAMID_SIZES
from .text import BEGINNER_RULES, parse_rule

_COLOURS = ("red", "yellow", "green", "blue")
_SIZES = ("small", "medium", "large")


def synthetic_facts(rng: random.Random, koan_id: str, max_pieces: int = 7) -> KoanFacts:
    """A plausible random koan's facts, with margins (about 1 in 15 predicates borderline)."""
    n = rng.randint(1, max_pieces)
    attrs = []
    preds: list[Predicate] = []

    def margin(unit: str) -> float:
        band = DEFAULT_BAND[unit]
        return rng.uniform(0.05, band) if rng.random() < 1 / 15 else rng.uniform(band, 10 * band)

    for i in range(n):
        pid = f"{koan_id}p{i}"
        size = rng.choice(_SIZES)
        attrs.append(PieceAttrs(pid, rng.choice(_COLOURS), size, PYRAMID_SIZES[size].pips,
                                round(rng.uniform(10, 60), 1)))
        o = rng.choices(("upright", "flat", "weird"), (5, 4, 1))[0]
        preds.append(Predicate("orientation", (pid,), o, margin("deg"), "deg", "weird" if o != "weird" else "flat"))
        preds.append(Predicate("grounded", (pid,), rng.random() < 0.85, margin("mm"), "mm"))
    ids = [a.id for a in attrs]
    for a, b in combinations(ids, 2):
        preds.append(Predicate("touching", (a, b), rng.random() < 0.3, margin("mm"), "mm"))
        same = rng.random() < 0.3
        preds.append(Predicate("same_direction", (a, b), same, margin("deg"), "deg"))
        preds.append(Predicate("opposite_direction", (a, b), not same and rng.random() < 0.2, margin("deg"), "deg"))
        preds.append(Predicate("same_height", (a, b), rng.random() < 0.2, margin("mm"), "mm"))
    for a, b in permutations(ids, 2):
        preds.append(Predicate("pointing", (a, b), rng.random() < 0.15, margin("mm"), "mm",
                               order=rng.uniform(1, 100)))
        if rng.random() < 0.05:
            preds.append(Predicate("stacked", (a, b), True, margin("mm"), "mm"))
        if rng.random() < 0.03:
            preds.append(Predicate("nested", (a, b), True, margin("mm"), "mm"))
    return KoanFacts(koan_id, tuple(attrs), {p.key: p for p in preds}, dict(DEFAULT_BAND))


def built_facts() -> list[KoanFacts]:
    """A handful of real koans through the relations engine (towers, pointing, leaning, gaps)."""
    from ..build import Spec, beside, cover, flat, pointing_at, tower, upright
    from ..relations import koan_facts

    a = upright(Spec("a", "red", "small"))
    koans = [
        [a, beside(a, Spec("b", "blue", "medium"), gap=0.3)],
        [a, pointing_at(a, Spec("c", "green", "large"))],
        tower([Spec("d", "red", "small"), Spec("e", "blue", "small"), Spec("f", "yellow", "small")]),
        [a, cover(a, Spec("g", "yellow", "large"))],
        [flat(Spec("h", "green", "medium")), upright(Spec("i", "green", "small"), (60.0, 0.0))],
    ]
    return [koan_facts(f"built{i}", ps) for i, ps in enumerate(koans)]


def koans(n: int, seed: int = 0) -> list[KoanFacts]:
    rng = random.Random(seed)
    built = built_facts()
    out = [synthetic_facts(rng, f"k{i}") for i in range(n - len(built))]
    return (out + built)[:n] if n >= len(built) else built[:n]


def edge_koan(repeat: int = 3) -> dict:
    """Milliseconds to mark a koan of five pieces at the picture's edge with every beginner rule,
    as the camera reads it: each rule weighs the edge doubt's alternatives (one unseen neighbour,
    rows of two to four going on out of view). Why measured: it is the costliest doubt a koan can
    have, and what the Master's page waits for when such a koan changes. Best of `repeat`, a
    fresh cache each time."""
    from ..build import Spec, flat, upright
    from ..doubts import FactsCache
    from ..facts import PERCEPTION_BAND
    from ..relations import RelationsConfig, koan_facts
    from .marking import mark_perceived

    cfg = RelationsConfig(band=dict(PERCEPTION_BAND))
    pieces = [upright(Spec("p1", "blue", "large"), (0, 0)), flat(Spec("p2", "red", "medium"), (40, 0), 30),
              upright(Spec("p3", "green", "small"), (0, 40)), flat(Spec("p4", "yellow", "small"), (-35, 10), 100),
              upright(Spec("p5", "blue", "medium"), (30, 45))]
    doubts = [{"kind": "edge", "piece": "p1", "toward": [0.0, -1.0]}]
    rules = [parse_rule(t) for t in BEGINNER_RULES]
    best, flagged = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        cache = FactsCache(lambda ps: koan_facts("k1", ps, cfg))
        facts = cache(pieces)
        flagged = sum(mark_perceived(r, facts, pieces, doubts, cache).judgment_call for r in rules)
        best = min(best, time.perf_counter() - t0)
    return {"pieces": len(pieces), "rules": len(rules), "ms": round(best * 1000, 1), "judgment_calls": flagged}


def run(n: int = 10000) -> dict:
    """Seconds to evaluate each beginner rule on n koans; also the white fraction (a sanity check);
    and the time to mark a koan at the picture's edge with all of them (`edge_koan`)."""
    facts = koans(n)
    per_rule = {}
    for text in BEGINNER_RULES:
        rule = parse_rule(text)
        t0 = time.perf_counter()
        whites = sum(rule.evaluate(f) for f in facts)
        per_rule[text] = {"seconds": round(time.perf_counter() - t0, 4), "white": round(whites / len(facts), 3)}
    worst = max(v["seconds"] for v in per_rule.values())
    return {"koans": len(facts), "rules": per_rule, "max_seconds": worst, "under_1s": worst < 1.0,
            "edge_koan": edge_koan(1 if n < 1000 else 3)}


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run(), indent=2))
