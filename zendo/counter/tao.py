"""Zendo-Tao (seed 002): which rules survive the marked koans, and a koan that splits two of them.

In Zendo-Tao every player is Master and student: a turn posts a rule "consistent with all marked
koans", marks the open koan against it, and builds "a koan that distinguishes between your two
remaining, viable rules". This module answers the two questions a player (or referee) needs:
which of these rules are still viable, and what koan would two of them mark differently.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any, Sequence

from ..facts import KoanFacts
from ..koans import Koan
from ..relations import table_facts
from ..scene import Scene
from .search import Counterexample, NotFound, SearchConfig, find_counterexample, mark_name, stable_mark
from .stash import Stash


@dataclass(frozen=True)
class MarkedKoan:
    koan: Koan
    facts: KoanFacts
    mark: bool | None  # None: no marking stone yet (the open koan)


def marked_koans(table: Scene) -> list[MarkedKoan]:
    """Each koan with its stone: white is True, black False, none (or both) None."""
    colour = {s.id: s.color for s in table.stones}
    koans, facts = table_facts(table)
    out = []
    for k, f in zip(koans, facts):
        marks = {colour[s] for s in k.stone_ids if colour[s] in ("white", "black")}
        out.append(MarkedKoan(k, f, (marks.pop() == "white") if len(marks) == 1 else None))
    return out


@dataclass(frozen=True)
class Viability:
    """How one rule fares: contradicted koans, koans where only a judgment call saves it, open marks."""

    consistent: bool
    contradicted_by: tuple[str, ...]
    needs_judgment_call: tuple[str, ...]
    open_marks: tuple[tuple[str, str], ...]


def _could_match(rule, f: KoanFacts, want: bool) -> bool:
    """Whether some ruling on the koan's borderline predicates gives the wanted mark."""
    from itertools import combinations as comb

    keys = [p.key for p in f.borderline()]
    for r in range(1, min(len(keys), 6) + 1):
        for ks in comb(keys, r):
            if bool(rule.evaluate(f.flipped(ks))) == want:
                return True
    return False


def viability(rule, koans: Sequence[MarkedKoan]) -> Viability:
    bad, calls, open_marks = [], [], []
    for mk in koans:
        if mk.mark is None:
            v = stable_mark(rule, mk.facts, [p.key for p in mk.facts.borderline()])
            open_marks.append((mk.koan.id, mark_name(bool(rule.evaluate(mk.facts))) if v is None else mark_name(v)))
            continue
        if bool(rule.evaluate(mk.facts)) == mk.mark:
            continue
        (calls if _could_match(rule, mk.facts, mk.mark) else bad).append(mk.koan.id)
    return Viability(not bad, tuple(bad), tuple(calls), tuple(open_marks))


def split_koan(rule_a, rule_b, table: Scene | None = None, style: str = "helpful", stash: Stash | None = None,
               config: SearchConfig | None = None) -> Counterexample | NotFound:
    """A koan from the stash that rule_a and rule_b mark differently (the table's koans are all
    marked alike by two viable rules, so they are not searched)."""
    res = find_counterexample(rule_a, rule_b, table, style, stash, config, check_table_koans=False)
    if isinstance(res, NotFound):
        return res
    steps = list(res.instructions[:-1]) + [
        f"Leave it unmarked: the first rule marks it {res.rule_mark}, the second {res.guess_mark}."]
    return replace(res, instructions=tuple(steps))


def tao_report(rules: Sequence[tuple[str, Any]], table: Scene, style: str = "helpful",
               stash: Stash | None = None, config: SearchConfig | None = None) -> dict:
    """The `zendo tao` document: viability of each rule and a koan splitting two viable ones."""
    koans = marked_koans(table)
    doc: dict = {"koans": [{"id": mk.koan.id, "mark": None if mk.mark is None else mark_name(mk.mark)}
                           for mk in koans], "rules": []}
    viable = []
    for i, (text, rule) in enumerate(rules):
        v = viability(rule, koans)
        canon = getattr(rule, "canonical", None)
        doc["rules"].append({"index": i, "rule": text, "canonical": str(canon()) if callable(canon) else text,
                             "consistent": v.consistent, "contradicted_by": list(v.contradicted_by),
                             "needs_judgment_call": list(v.needs_judgment_call), "open": dict(v.open_marks)})
        if v.consistent:
            viable.append(i)
    doc["viable"] = viable
    doc["split"] = None
    for i, j in combinations(viable, 2):
        res = split_koan(rules[i][1], rules[j][1], table, style, stash, config)
        if isinstance(res, Counterexample):
            d = res.to_dict(with_svg=False)
            doc["split"] = {"rules": [i, j], "marks": {str(i): res.rule_mark, str(j): res.guess_mark},
                            "scene": d["scene"], "pieces": d["pieces"], "instructions": d["instructions"]}
            break
        doc.setdefault("unsplit", []).append({"rules": [i, j], "searched": res.searched})
    if len(viable) < 2:
        doc["note"] = f"{len(viable)} viable rule(s): Zendo-Tao needs two that a new koan can split"
    return doc
