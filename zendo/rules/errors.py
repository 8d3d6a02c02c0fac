"""The rule language's errors: each a ValueError with a one-line message (CLI-safe)."""
from __future__ import annotations


class RuleError(ValueError):
    """Any rule the assistant cannot take as given; str() is one line."""

    def __str__(self) -> str:
        return " ".join(super().__str__().split())


class RuleSyntaxError(RuleError):
    """The wording is not in the language: where parsing stopped (1-based column) and what could come next."""

    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.message = message
        self.column = column


class RuleAmbiguous(RuleError):
    """The wording has several complete readings (seed 001's "mu"): the person must choose one."""

    def __init__(self, readings: list[str]):
        super().__init__("the rule can be read " + str(len(readings)) + " ways: " + " | ".join(readings))
        self.readings = list(readings)


class RuleIllegal(RuleError):
    """The rule refers to something outside the koan; `restriction` quotes the rule it breaks."""

    def __init__(self, restriction: str, name: str = ""):
        super().__init__(f"illegal rule: {restriction}")
        self.restriction = restriction
        self.name = name
