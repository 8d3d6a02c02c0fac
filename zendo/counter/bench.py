"""Benchmark (issue 4, clause 6): every ordered pair of distinct beginner rules, rule vs guess.

Reports the share disproved, median and worst time per pair, and the pieces in the koans, with a
check that none uses more pieces than needed: for each koan of k pieces, the whole vocabulary of
k - 1 pieces is searched again and must hold no counterexample.
"""
from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any, Sequence

from .search import SearchConfig, find_counterexample, vocabulary_search
from .stash import Stash
from .vocab import geometry


def beginner_rules() -> list[tuple[str, Any]]:
    from ..rules import BEGINNER_RULES, parse_rule

    return [(text, parse_rule(text)) for text in BEGINNER_RULES]


def run(rules: Sequence[tuple[str, Any]] | None = None, style: str = "helpful", with_table: bool = True) -> dict:
    """The figures for the README (times include the first, cold call that builds the geometry cache)."""
    rules = list(rules) if rules is not None else beginner_rules()
    stash = Stash.full()
    geometry.cache_clear()  # the worst time includes building the vocabulary's geometry
    times, pieces, failed, not_minimal = [], [], [], []
    for ti, (rt, rule) in enumerate(rules):
        for gi, (gt, guess) in enumerate(rules):
            if ti == gi:
                continue
            t0 = time.perf_counter()
            res = find_counterexample(rule, guess, None, style, stash)
            times.append(time.perf_counter() - t0)
            if not res.found:
                failed.append([rt, gt])
                continue
            pieces.append(res.pieces)
            if res.pieces > 1 and vocabulary_search(rule, guess, stash, SearchConfig(max_pieces=res.pieces - 1)):
                not_minimal.append([rt, gt])
    pairs = len(times)
    doc = {
        "pairs": pairs,
        "disproved": pairs - len(failed),
        "share_disproved": round((pairs - len(failed)) / pairs, 4) if pairs else None,
        "median_ms": round(statistics.median(times) * 1000, 2) if times else None,
        "worst_ms": round(max(times) * 1000, 2) if times else None,
        "total_s": round(sum(times), 2),
        "median_pieces": statistics.median(pieces) if pieces else None,
        "max_pieces": max(pieces) if pieces else None,
        "pieces_histogram": {str(k): v for k, v in sorted(Counter(pieces).items())},
        "more_pieces_than_needed": len(not_minimal),
        "not_disproved": failed,
        "style": style,
    }
    if with_table:
        doc["tight_lipped_on_example_table"] = _tight_on_example(rules, stash)
    return doc


def _tight_on_example(rules: Sequence[tuple[str, Any]], stash: Stash) -> dict:
    """Tight-lipped search against the bundled example table, for the pairs no koan on it disproves."""
    from ..examples import example_table
    from .search import check_table

    table = example_table()
    stash = Stash.for_table(table, stash.colors)
    times, edits, failed, on_table = [], [], 0, 0
    for ti, (_, rule) in enumerate(rules):
        for gi, (_, guess) in enumerate(rules):
            if ti == gi:
                continue
            if check_table(rule, guess, table)[0] is not None:
                on_table += 1
                continue
            t0 = time.perf_counter()
            res = find_counterexample(rule, guess, table, "tight-lipped", stash)
            times.append(time.perf_counter() - t0)
            if res.found and res.edits is not None:
                edits.append(res.edits)
            elif not res.found:
                failed += 1
    return {
        "disproved_by_a_table_koan": on_table,
        "pairs_searched": len(times),
        "not_disproved": failed,
        "median_ms": round(statistics.median(times) * 1000, 2) if times else None,
        "worst_ms": round(max(times) * 1000, 2) if times else None,
        "edits_histogram": {str(k): v for k, v in sorted(Counter(edits).items())},
    }
