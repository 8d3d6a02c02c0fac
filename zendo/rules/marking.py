"""Marking a koan by a rule, and telling the Master when the mark is a judgment call.

A mark is a judgment call when deciding some borderline predicates (those inside the judgment
band: "is that red piece just barely pointing at that blue piece?") the other way, alone or
together, would change it. Only predicates the rule can read are considered (a colour rule never
rests on a touching call). The search is bounded: with up to SUBSET_LIMIT relevant borderline
predicates every subset is tried (at most 2^10 = 1024 evaluations); beyond that only single
predicates and pairs. The predicates reported are those of the smallest flips that change the
mark. The Master's rulings (Predicate.key → value) are applied first and are never borderline again.

A camera's koan (`mark_perceived`) is also a judgment call where a perception doubt's alternative
koan is marked otherwise, or marked the same only by a call inside the band that one flip would
change (the alternative is read by the same camera as the koan).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Mapping, Sequence

from ..doubts import FactsOf, describe, doubt_flips
from ..facts import KoanFacts
from ..scene import Piece
from .rule import Rule

#: Up to this many relevant borderline predicates, every subset is flipped; above, singles and pairs.
SUBSET_LIMIT = 10


@dataclass(frozen=True)
class Mark:
    koan_id: str
    mark: str  # "white" | "black"
    judgment_call: bool
    borderline: list = field(default_factory=list)  # Predicate.to_dict() of the calls that could flip it
    witnesses: list = field(default_factory=list)  # piece ids that made the mark so
    doubts: list = field(default_factory=list)  # perception doubts (zendo.doubts) that could flip it

    def __hash__(self) -> int:
        return hash((self.koan_id, self.mark, self.judgment_call, tuple(self.witnesses)))

    def to_dict(self) -> dict:
        out = {"id": self.koan_id, "mark": self.mark, "judgment_call": self.judgment_call,
               "borderline": list(self.borderline), "witnesses": list(self.witnesses)}
        if self.doubts:  # only a perceived koan has doubts; an exact one keeps the plain shape
            out["doubts"] = list(self.doubts)
        return out


def _key(k) -> tuple:
    return tuple(k) if isinstance(k, (list, tuple)) else (k,)


def mark(rule: Rule, facts: KoanFacts, rulings: Mapping[tuple, bool | str] | None = None) -> Mark:
    """White or black by the rule, with witnesses, and whether it rests on a judgment call."""
    ruled = {_key(k): v for k, v in (rulings or {}).items()}
    if ruled:
        facts = facts.with_values(ruled)
    white = rule.evaluate(facts)
    candidates = _candidates(rule, facts, ruled)
    flips = _changing_flips(rule, facts, candidates, white)
    involved = {k for flip in flips for k in flip}
    borderline = [p.to_dict() for p in candidates if p.key in involved]
    return Mark(facts.koan_id, "white" if white else "black", bool(flips), borderline, rule.witnesses(facts))


def mark_perceived(rule: Rule, facts: KoanFacts, pieces: Sequence[Piece], doubts: Sequence[Mapping],
                   facts_of: FactsOf,
                   rulings: Mapping[tuple, bool | str] | None = None) -> Mark:
    """`mark`, and also a judgment call when a perception doubt (zendo.doubts) would change it.
    A doubt the Master has ruled on (its `doubt_key` in `rulings`) no longer counts."""
    m = mark(rule, facts, rulings)
    if not doubts:
        return m
    ruled = {_key(k) for k in (rulings or {})}
    white = m.mark == "white"

    def differs(alt: KoanFacts) -> bool:
        return rule.evaluate(alt) != white or _one_call_flips(rule, alt, _candidates(rule, alt, ruled), white)

    flips = doubt_flips(differs, pieces, doubts, facts_of, settled=ruled)
    if not flips:
        return m
    return replace(m, judgment_call=True, doubts=[{**d, "text": describe(d)} for d in flips])


def _candidates(rule: Rule, facts: KoanFacts, ruled) -> list:
    """The borderline predicates the rule reads that the Master has not ruled on."""
    return [p for p in facts.borderline(names=rule.reads()) if p.key not in ruled]


def _one_call_flips(rule: Rule, facts: KoanFacts, candidates, white: bool) -> bool:
    """Whether deciding one of these borderline calls the other way marks the koan other than
    `white`.

    Why a doubt's alternative is asked this too: the koan a doubt proposes is read from the same
    camera, so its close calls are as close as the reading's own. Fresh 433462 and 432735: false
    yellow smalls (one, and two) read inside a lying yellow large that carried a tower, each with
    an "absent" doubt, the large fitted 1.3 mm over the table where it lay on it; without the
    smalls only that call made "an ungrounded piece" so, and no flip of the reading itself (the
    smalls float) nor of the alternative alone (the large floats) told the Master. One call at a time, not pairs: a
    doubt's alternatives are many, and pairs of calls in each cost more than the rest of marking."""
    return any(rule.evaluate(facts.flipped((p.key,))) != white for p in candidates)


def _changing_flips(rule: Rule, facts: KoanFacts, candidates, white: bool) -> list[frozenset]:
    """Minimal sets of borderline predicates whose flip changes the mark (bounded search)."""
    keys = [p.key for p in candidates]
    if not keys:
        return []
    max_size = len(keys) if len(keys) <= SUBSET_LIMIT else 2
    found: list[frozenset] = []
    for size in range(1, max_size + 1):
        for combo in combinations(keys, size):
            s = frozenset(combo)
            if any(f <= s for f in found):
                continue  # a smaller flip already changes it; this one is not minimal
            if rule.evaluate(facts.flipped(combo)) != white:
                found.append(s)
    return found
