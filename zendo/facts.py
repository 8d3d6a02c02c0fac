"""Koan facts: what the rule language evaluates. Pure data, no geometry.

Every geometric decision is a `Predicate` that carries its margin: the signed distance (mm or
degrees) from its decision boundary, positive on the side that was decided. A predicate whose
margin lies inside the judgment band is borderline, and `KoanFacts.with_values` lets the marking
code ask "what if this borderline call went the other way?" without touching geometry again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import combinations
from typing import Callable, Iterable, Iterator, Mapping, Sequence

#: Default judgment band: a predicate this close to its boundary is a judgment call.
DEFAULT_BAND = {"mm": 0.4, "deg": 3.0}
#: The band for tables a camera perceived: about twice the pipeline's median position / axis
#: error on held-out renders (docs/perception.md). The dashboard and the evaluation both use it.
#: "aim_deg": a pointing call is close, besides, where a turn of the pointing piece by this much
#: about its middle would change it (the lateral miss within `Predicate.lever` x sin(aim_deg) more):
#: a camera reads a lying small's heading 2.4 degrees off at the median, 4.7 at the p75, 8.7 at the
#: p90 (tuning tables, session 77), so a target met far along the ray moves by more than the "mm"
#: band alone. 4 degrees until session 77, under the smalls' p75: fresh 423224, a black small 9
#: degrees off "pointing" at a blue large 34 mm along, 6.2 mm clear where 5.8 was close, a mark
#: wrong with no flag. At 5, right marks flagged rose 16 of 20,575 on the tuning tables.
#: "tip_mm": whether an upright piece points at a piece met within TIP_REACH_MM of its tip (one
#: resting on the tip or leaning on it) is close within this many mm: it turns on millimetres of
#: both poses, the raised piece's heading and the upright one's place, which a camera reads worst.
#: Over 2,460 cached tables (tuning, held-out, 424000-, 424600-; session 79) all 28 such calls
#: read "pointing" were not so, met 0.1-4.6 mm inside where the truth was 2.5-8 mm clear (fresh
#: 424840: a yellow small across two smalls' tips, 110 degrees off). At 5, right marks flagged
#: rose 46.32 -> 46.48 % on the tuning and held-out tables; 424600-'s unflagged 8 -> 6.
PERCEPTION_BAND = {"mm": 2.0, "deg": 4.0, "aim_deg": 5.0, "tip_mm": 5.0}
TIP_REACH_MM = 10.0  # a target met this near an upright piece's tip rests on it or leans on it

PredicateKey = tuple  # (name, *piece ids)

#: Predicates between two pieces whose arguments are unordered.
SYMMETRIC = frozenset({"touching", "same_direction", "opposite_direction", "same_height"})


def key(name: str, *args: str) -> PredicateKey:
    if name in SYMMETRIC:
        args = tuple(sorted(args))
    return (name, *args)


@dataclass(frozen=True)
class Predicate:
    """One decided fact with its margin and the value it would take across the boundary."""

    name: str
    args: tuple[str, ...]
    value: bool | str
    margin: float
    unit: str  # "mm" or "deg"
    alternative: bool | str | None = None
    order: float = 0.0  # for pointing: distance along the ray where the target is met
    lever: float = 0.0  # for pointing by a piece not upright: mm from its middle, about which its heading turns, to there

    @property
    def key(self) -> PredicateKey:
        return (self.name, *self.args)

    def is_borderline(self, band: Mapping[str, float]) -> bool:
        """Within the band of its unit; a pointing call also within what a turn of the band's
        "aim_deg" moves the ray where the target is met (`lever`): a heading off by a few degrees
        misses by more the farther the target; and an upright piece's call (its ray has no lever)
        at a target met within TIP_REACH_MM of its tip, within the band's "tip_mm"."""
        aim = self.lever * math.sin(math.radians(band.get("aim_deg", 0.0))) if self.lever else 0.0
        close = band.get(self.unit, 0.0) + aim
        if self.name == "pointing" and not self.lever and self.order <= TIP_REACH_MM:
            close = max(close, band.get("tip_mm", 0.0))
        return abs(self.margin) < close

    def flipped(self) -> "Predicate":
        alt = (not self.value) if self.alternative is None else self.alternative
        return replace(self, value=alt, alternative=self.value, margin=-self.margin)

    def to_dict(self) -> dict:
        return {
            "predicate": self.name,
            "pieces": list(self.args),
            "value": self.value,
            "margin": round(float(self.margin), 3),
            "unit": self.unit,
        }


class LazyPredicates(Mapping):
    """A koan's predicates, each group worked out the first time one of its names is asked for.

    Why: a rule reads few of them ("no green pieces" none at all, "a piece pointing at another"
    only the pointing ones), while marking a camera's koan asks the rule about dozens of
    alternative koans, and their pointing rays, nestings and tower links are nearly all of what
    that costs. Iterating (or comparing) works every group out, in the order the groups were
    given, so the whole mapping reads as the one dict an eager `koan_facts` would have built."""

    def __init__(self, first: Iterable[Predicate],
                 groups: Sequence[tuple[Iterable[str], Callable[["LazyPredicates"], Iterable[Predicate]]]]):
        self._first = {p.key: p for p in first}
        self._work = [work for _, work in groups]
        self._where = {n: i for i, (names, _) in enumerate(groups) for n in names}
        self._done: dict[int, dict] = {}
        self._whole: dict | None = None

    def _group(self, i: int) -> dict:
        got = self._done.get(i)
        if got is None:
            got = self._done[i] = {p.key: p for p in self._work[i](self)}
        return got

    def _of_name(self, name: str) -> dict:
        i = self._where.get(name)
        return self._first if i is None else self._group(i)

    def named(self, name: str) -> list[Predicate]:
        """Every predicate of one name, working out only its group."""
        return [p for p in self._of_name(name).values() if p.name == name]

    def __getitem__(self, k: PredicateKey) -> Predicate:
        return self._of_name(k[0])[k]

    def get(self, k: PredicateKey, default=None):  # a rule asks many a predicate that is absent
        return self._of_name(k[0]).get(k, default)

    def __contains__(self, k) -> bool:
        return k in self._of_name(k[0])

    def _all(self) -> dict:
        if self._whole is None:
            self._whole = dict(self._first)
            for i in range(len(self._work)):
                self._whole.update(self._group(i))
        return self._whole

    def __iter__(self) -> Iterator[PredicateKey]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"LazyPredicates({self._all()!r})"


class FlippedPredicates(Mapping):
    """A koan's predicates with a few decided the other way, the rest read from the mapping
    underneath as asked for.

    Why not a copy: copying a `LazyPredicates` works out every group, and marking asks, of each
    of dozens of alternative koans, whether one borderline call flipped would change the mark;
    the rule reads one or two groups of each."""

    def __init__(self, base: Mapping[PredicateKey, Predicate], flipped: Mapping[PredicateKey, Predicate]):
        self._base = base
        self._flipped = dict(flipped)

    def named(self, name: str) -> list[Predicate]:
        return [self._flipped.get(p.key, p) for p in named(self._base, name)]

    def __getitem__(self, k: PredicateKey) -> Predicate:
        return self._flipped[k] if k in self._flipped else self._base[k]

    def get(self, k: PredicateKey, default=None):
        got = self._flipped.get(k)
        return got if got is not None else self._base.get(k, default)

    def __contains__(self, k) -> bool:
        return k in self._flipped or k in self._base

    def __iter__(self) -> Iterator[PredicateKey]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


def named(predicates: Mapping[PredicateKey, Predicate], name: str) -> list[Predicate]:
    """The predicates of one name in a koan's mapping, lazy or not."""
    if hasattr(predicates, "named"):  # LazyPredicates, FlippedPredicates: work out only that group
        return predicates.named(name)
    return [p for p in predicates.values() if p.name == name]


@dataclass(frozen=True)
class PieceAttrs:
    """What a piece is, independent of any decision: these never flip."""

    id: str
    color: str
    size: str
    pips: int
    top_mm: float


@dataclass(frozen=True)
class KoanFacts:
    koan_id: str
    pieces: tuple[PieceAttrs, ...]
    predicates: Mapping[PredicateKey, Predicate]
    band: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BAND))

    # ----------------------------------------------------------------- lookup
    @cached_property
    def ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.pieces)

    @cached_property
    def attrs(self) -> dict[str, PieceAttrs]:
        return {p.id: p for p in self.pieces}

    def predicate(self, name: str, *args: str) -> Predicate | None:
        return self.predicates.get(key(name, *args))

    def _value(self, name: str, *args: str, default=False):
        p = self.predicates.get(key(name, *args))
        return default if p is None else p.value

    # ------------------------------------------------------- piece properties
    def orientation(self, pid: str) -> str:
        return self._value("orientation", pid, default="upright")

    def grounded(self, pid: str) -> bool:
        return bool(self._value("grounded", pid))

    def color(self, pid: str) -> str:
        return self.attrs[pid].color

    def size(self, pid: str) -> str:
        return self.attrs[pid].size

    def pips(self, pid: str) -> int:
        return self.attrs[pid].pips

    def top(self, pid: str) -> float:
        return self.attrs[pid].top_mm

    # ------------------------------------------------------------- relations
    def touching(self, a: str, b: str) -> bool:
        return a != b and bool(self._value("touching", a, b))

    def touching_pairs(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in combinations(self.ids, 2) if self.touching(a, b)]

    def points_at(self, a: str, b: str) -> bool:
        return a != b and bool(self._value("pointing", a, b))

    def pointed_at(self, a: str) -> list[str]:
        """Pieces a's ray meets, first to last."""
        hits = [p for p in named(self.predicates, "pointing") if p.args[0] == a and p.value]
        return [p.args[1] for p in sorted(hits, key=lambda p: (p.order, p.args[1]))]

    def stacked_on(self, upper: str, lower: str) -> bool:
        """upper sits directly on lower's tip (one link of a tower)."""
        return bool(self._value("stacked", lower, upper))

    def nested_in(self, inner: str, outer: str) -> bool:
        return bool(self._value("nested", outer, inner))

    def same_direction(self, a: str, b: str) -> bool:
        return a == b or bool(self._value("same_direction", a, b))

    def opposite_direction(self, a: str, b: str) -> bool:
        return a != b and bool(self._value("opposite_direction", a, b))

    def same_height(self, a: str, b: str) -> bool:
        return a == b or bool(self._value("same_height", a, b))

    def higher(self, a: str, b: str) -> bool:
        return not self.same_height(a, b) and self.top(a) > self.top(b)

    def highest(self) -> list[str]:
        return [a for a in self.ids if not any(self.higher(b, a) for b in self.ids)]

    def lowest(self) -> list[str]:
        return [a for a in self.ids if not any(self.higher(a, b) for b in self.ids)]

    @cached_property
    def towers(self) -> list[list[str]]:
        """Maximal chains of stacked links, bottom to top; a lone piece is a tower of one."""
        return towers_from_links(self.ids, named(self.predicates, "stacked"))

    def tower_of(self, pid: str) -> list[str]:
        for t in self.towers:
            if pid in t:
                return t
        return [pid]

    # -------------------------------------------------------- judgment calls
    def borderline(self, band: Mapping[str, float] | None = None, names: Iterable[str] | None = None
                   ) -> list[Predicate]:
        """The predicates inside the band, closest first; of these names only, where given (a
        lazy koan then works out only their groups)."""
        band = self.band if band is None else band
        preds = (self.predicates.values() if names is None
                 else (p for n in set(names) for p in named(self.predicates, n)))
        return sorted(
            (p for p in preds if p.is_borderline(band)),
            key=lambda p: (abs(p.margin) / max(band.get(p.unit, 1.0), 1e-9), p.key),
        )

    def with_values(self, overrides: Mapping[PredicateKey, bool | str]) -> "KoanFacts":
        """The same koan with some predicates decided differently (a ruling, or a what-if)."""
        preds = dict(self.predicates)
        for k, v in overrides.items():
            p = preds.get(k)
            if p is not None and p.value != v:
                preds[k] = p.flipped() if (p.alternative is None or p.alternative == v) else replace(p, value=v)
        return replace(self, predicates=preds)

    def flipped(self, keys: Iterable[PredicateKey]) -> "KoanFacts":
        """The same koan with these predicates decided the other way (`FlippedPredicates`)."""
        preds = self.predicates
        return replace(self, predicates=FlippedPredicates(preds, {k: preds[k].flipped() for k in keys if k in preds}))


def towers_from_links(ids: Iterable[str], predicates: Iterable[Predicate]) -> list[list[str]]:
    """Maximal chains of true 'stacked' links over `ids`, bottom to top; every piece in exactly one.

    Each piece has at most one piece directly on it and one under it; where the geometry offers
    two, the link with the larger margin wins.
    """
    ids = list(ids)
    above: dict[str, str] = {}
    below: dict[str, str] = {}
    links = sorted((p for p in predicates if p.name == "stacked" and p.value), key=lambda p: -p.margin)
    for p in links:
        lower, upper = p.args
        if lower in above or upper in below:
            continue
        above[lower] = upper
        below[upper] = lower
    towers, placed = [], set()
    for pid in ids:
        if pid in below or pid in placed:
            continue
        chain = [pid]
        while chain[-1] in above and above[chain[-1]] not in placed and above[chain[-1]] not in chain:
            chain.append(above[chain[-1]])
        placed.update(chain)
        towers.append(chain)
    for pid in ids:  # a cycle cannot happen physically; keep every piece in one tower anyway
        if pid not in placed:
            towers.append([pid])
            placed.add(pid)
    return towers
