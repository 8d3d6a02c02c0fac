"""Counterexamples (issue 4): the koan that disproves a student's guess, built from the stash.

`find_counterexample(rule, guess, table)` checks the koans on the table first, then builds the
smallest koan the rule and the guess mark differently (either way round), helpful or
tight-lipped; `tao` does the same between two rules of Zendo-Tao and says which rules survive the
marked koans. Rules are anything with `evaluate(facts) -> bool` (zendo.rules.Rule).
"""
from .search import Counterexample, NotFound, SearchConfig, find_counterexample, stable_mark
from .stash import Stash

__all__ = ["Counterexample", "NotFound", "SearchConfig", "Stash", "find_counterexample", "stable_mark"]
