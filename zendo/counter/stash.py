"""The pieces the Master can build with: the stash minus what is already on the table.

Seed 000: "If, when building a counterexample koan, the Master wants to use pieces that are not
available, the Master will tell everyone which pieces are needed". The search only proposes
koans the stash can supply, so the Master never has to break a koan down to build one.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..pieces import SIZES
from ..scene import Scene

#: The default colours of the counterexample stash (issue 4: five trios per colour).
DEFAULT_COLORS = ("red", "yellow", "green", "blue")
DEFAULT_TRIOS = 5


@dataclass(frozen=True)
class Stash:
    """How many pieces of each (colour, size) are free to build with."""

    counts: tuple[tuple[tuple[str, str], int], ...]
    colors: tuple[str, ...] = field(default=DEFAULT_COLORS)

    @classmethod
    def full(cls, colors: Iterable[str] = DEFAULT_COLORS, trios: int = DEFAULT_TRIOS) -> "Stash":
        colors = tuple(colors)
        return cls(tuple(((c, s), trios) for c in colors for s in SIZES), colors)

    @classmethod
    def for_table(cls, table: Scene | None, colors: Iterable[str] = DEFAULT_COLORS,
                  trios: int = DEFAULT_TRIOS) -> "Stash":
        """The full stash less every piece standing on the table."""
        stash = cls.full(colors, trios)
        if table is None:
            return stash
        return stash.without((p.color, p.size) for p in table.pieces)

    def count(self, color: str, size: str) -> int:
        return dict(self.counts).get((color, size), 0)

    def without(self, used: Iterable[tuple[str, str]]) -> "Stash":
        taken = Counter(used)
        return Stash(tuple((k, max(0, n - taken.get(k, 0))) for k, n in self.counts), self.colors)

    def allows(self, needed: Iterable[tuple[str, str]]) -> bool:
        """Whether the stash holds all of these (colour, size) pieces at once."""
        have = dict(self.counts)
        return all(have.get(k, 0) >= n for k, n in Counter(needed).items())

    def missing(self, needed: Iterable[tuple[str, str]]) -> list[str]:
        have = dict(self.counts)
        return [f"{n - have.get(k, 0)} {k[1]} {k[0]}" for k, n in sorted(Counter(needed).items())
                if have.get(k, 0) < n]

    def describe(self) -> str:
        total = sum(n for _, n in self.counts)
        return f"{total} pieces in {', '.join(self.colors)}"
