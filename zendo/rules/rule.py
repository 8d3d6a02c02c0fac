"""The Rule value: one condition, evaluated on facts, rendered canonically, parsed from text."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..facts import KoanFacts
from . import ast as A
from .evaluate import compile_cond, reads, witnesses


@dataclass(frozen=True)
class Rule:
    """A koan has the Buddha-nature iff `cond` holds (or, when `negated`, iff it does not).

    `negated` keeps the Master's negative form ("does not have ... if ...; otherwise it does",
    "... unless ...") so the canonical wording reads the way it was meant.
    """

    cond: object
    negated: bool = False
    _fn: Callable = field(init=False, repr=False, compare=False, hash=False, default=None)
    _reads: frozenset = field(init=False, repr=False, compare=False, hash=False, default=frozenset())

    def __post_init__(self) -> None:
        if A.Amb in {type(x) for x in _walk(self.cond)}:
            raise ValueError("a Rule cannot hold an ambiguous condition")
        object.__setattr__(self, "_fn", compile_cond(self.cond))
        object.__setattr__(self, "_reads", reads(self.cond))  # marking asks it of every alternative koan

    def evaluate(self, facts: KoanFacts) -> bool:
        """True when the koan has the Buddha-nature (white). Pure; reads facts only."""
        return self._fn(facts, {}) != self.negated

    def canonical(self) -> str:
        return A.render_rule(self.cond, self.negated)

    def witnesses(self, facts: KoanFacts) -> list[str]:
        """The pieces that made the mark so, in koan order."""
        found = witnesses(self.cond, facts, {})
        return [pid for pid in facts.ids if pid in found]

    def reads(self) -> frozenset[str]:
        """Names of the facts predicates (touching, pointing, ...) this rule depends on."""
        return self._reads

    def __str__(self) -> str:
        return self.canonical()


def _walk(node):
    yield node
    if isinstance(node, (A.And, A.Or)):
        for x in node.items:
            yield from _walk(x)
    elif isinstance(node, A.Not):
        yield from _walk(node.inner)
    elif isinstance(node, A.Amb):
        for x in node.readings:
            yield from _walk(x)
