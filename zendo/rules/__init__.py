"""The rule language: parse the Master's rule or a student's guess, mark koans by it.

    from zendo.rules import parse_rule, mark
    rule = parse_rule("A koan has the Buddha-nature if and only if it contains at least one red piece.")
    mark(rule, facts)  # -> Mark(koan_id, "white"/"black", judgment_call, borderline, witnesses)

docs/rules.md describes the language, its readings ("mu") and the legality checks.
"""
from __future__ import annotations

from .errors import RuleAmbiguous, RuleError, RuleIllegal, RuleSyntaxError
from .rule import Rule
from .text import BEGINNER_RULES, BEGINNER_RULES_ES, EXAMPLE_RULES, EXAMPLE_RULES_ES, parse_rule
from .marking import Mark, mark, mark_perceived

__all__ = [
    "parse_rule", "mark", "mark_perceived", "Rule", "Mark", "RuleError", "RuleSyntaxError", "RuleAmbiguous", "RuleIllegal",
    "BEGINNER_RULES", "BEGINNER_RULES_ES", "EXAMPLE_RULES", "EXAMPLE_RULES_ES",
]
