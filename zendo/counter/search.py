"""Finding the koan that disproves a guess, without the three mistakes of seed 001.

1. A koan already on the table that the rule and the guess mark differently is named first
   (seed 000: "If any koan on the table contradicts your guess, the Master should point this out").
2. A built koan is accepted only when the rule and the guess mark it differently, and both marks
   stay the same whichever way its borderline predicates are called: it never rests on a
   judgment call, and it never comes out "white by the guess and white by the rule too".
3. Both ways of disproving are tried at every size: white by the rule and black by the guess, or
   black by the rule and white by the guess; the search does not stop at the first direction.

Styles (seed 001, "Helpful Masters and Tight-Lipped Masters"): *helpful* is the smallest, plainest
koan of the builder's vocabulary; *tight-lipped* is a copy of a koan already on the table with as
few edits as possible (recolour, resize, reorient, add or remove one piece), so it tells the
students little they did not know. When nothing is found the answer says exactly how far the
search went: it never claims a guess is right without that bound.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from itertools import combinations, permutations, product
from typing import Any, Iterator, Protocol, Sequence

import numpy as np

from ..build import translate
from ..facts import KoanFacts
from ..koans import split_koans
from ..pieces import PIECE_COLORS
from ..relations import table_facts
from ..scene import Piece, Scene, Stone
from .stash import Stash
from .vocab import Geometry, build_steps, geometry, recolored, shape_label, shapes

STYLES = ("helpful", "tight-lipped")
DEFAULT_MAX_PIECES = 4
#: A koan with more borderline predicates than this is never offered (2^k what-ifs to check).
MAX_BORDERLINE = 6
#: Free space between the table's koans and the proposed one (the rules: koans are set apart).
KOAN_SPACING_MM = 60.0


class Evaluable(Protocol):
    def evaluate(self, facts: KoanFacts) -> bool: ...


def mark_name(value: bool) -> str:
    return "white" if value else "black"


def stable_mark(rule: Evaluable, facts: KoanFacts, borderline: Sequence[tuple] = ()) -> bool | None:
    """The rule's verdict if no judgment call can change it, else None.

    Why every combination: a rule can hinge on two borderline calls together (touching A-B and
    B-C), so flipping them one at a time is not enough.
    """
    value = bool(rule.evaluate(facts))
    if not borderline:
        return value
    if len(borderline) > MAX_BORDERLINE:
        return None
    for r in range(1, len(borderline) + 1):
        for keys in combinations(borderline, r):
            if bool(rule.evaluate(facts.flipped(keys))) != value:
                return None
    return value


def named_colors(rules: Sequence[Any], palette: Sequence[str]) -> tuple[str, ...] | None:
    """Colours the rules name, read from their canonical text; None if a rule has no text.

    Colours neither rule names are interchangeable (swapping yellow and green in a koan changes
    neither verdict when neither rule mentions them), so the search tries one colouring of each
    pattern of unnamed colours instead of all of them.
    """
    named: set[str] = set()
    for r in rules:
        canon = getattr(r, "canonical", None)
        if not callable(canon):
            return None
        try:
            text = str(canon()).lower()
        except Exception:  # noqa: BLE001 - no text, no shortcut
            return None
        named |= {c for c in PIECE_COLORS if re.search(rf"\b{c}\b", text)}
    return tuple(c for c in palette if c in named)


def symmetry_holds(rules: Sequence[Evaluable], named: Sequence[str], palette: Sequence[str]) -> bool:
    """Spot-check that swapping unnamed colours changes no verdict, on every colouring of a few
    small koans. Why: the shortcut trusts the canonical text to name every colour a rule depends
    on; a rule like "each of the four colours" with a five-colour stash would break that."""
    free = [c for c in palette if c not in named]
    if len(free) < 2:
        return True
    swap = {free[i]: free[(i + 1) % len(free)] for i in range(len(free))}
    for shape in shapes(1)[:2] + shapes(2)[:1] + shapes(3)[:1] + shapes(4)[:1]:
        geo = geometry(shape)
        for cols in product(palette, repeat=len(geo.pieces)):
            _, f1 = recolored(geo, cols)
            _, f2 = recolored(geo, [swap.get(c, c) for c in cols])
            if any(bool(r.evaluate(f1)) != bool(r.evaluate(f2)) for r in rules):
                return False
    return True


def symbolic_colorings(n: int, palette: Sequence[str], named: Sequence[str] | None) -> Iterator[tuple]:
    """Colourings of n pieces with unnamed colours as placeholders 0, 1, ... in order of first use."""
    if named is None:
        named = tuple(palette)
    free = len([c for c in palette if c not in named])

    def rec(prefix: tuple, used: int):
        if len(prefix) == n:
            yield prefix
            return
        for c in named:
            yield from rec(prefix + (c,), used)
        for u in range(min(used + 1, free)):
            yield from rec(prefix + (u,), max(used, u + 1))

    yield from rec((), 0)


def concrete(symbolic: tuple, sizes: Sequence[str], palette: Sequence[str], named: Sequence[str] | None,
             stash: Stash) -> tuple[str, ...] | None:
    """A stash-feasible colouring of this pattern, or None when the stash cannot supply one."""
    free = [c for c in palette if named is not None and c not in named]
    k = len({s for s in symbolic if isinstance(s, int)})
    for choice in permutations(free, k):
        cols = tuple(choice[s] if isinstance(s, int) else s for s in symbolic)
        if stash.allows(zip(cols, sizes)):
            return cols
    return None


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Counterexample:
    """A koan that disproves the guess: on the table already, or to be built from the stash."""

    on_table: str | None
    scene: Scene
    rule_mark: str
    guess_mark: str
    instructions: tuple[str, ...]
    style: str
    how: str  # what it is: the table koan, the vocabulary shape, or the edits to a table koan
    edits: int | None = None
    judgment_calls: tuple[dict, ...] = ()  # only for a table koan that rests on one
    notes: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def found(self) -> bool:
        return True

    @property
    def pieces(self) -> int:
        return len(self.scene.pieces)

    def svg(self) -> str:
        from .picture import koan_svg

        return koan_svg(self.scene, title=self.how)

    def to_dict(self, with_svg: bool = True) -> dict:
        doc = {
            "found": True,
            "on_table": self.on_table,
            "scene": self.scene.to_dict(),
            "rule_mark": self.rule_mark,
            "guess_mark": self.guess_mark,
            "instructions": list(self.instructions),
            "pieces": self.pieces,
            "style": self.style,
            "how": self.how,
        }
        if self.edits is not None:
            doc["edits"] = self.edits
        if self.judgment_calls:
            doc["judgment_calls"] = list(self.judgment_calls)
        if self.notes:
            doc["notes"] = list(self.notes)
        if with_svg:
            doc["svg"] = self.svg()
        return doc


@dataclass(frozen=True)
class NotFound:
    """No koan found: `searched` says exactly what was tried, so nobody reads it as 'the guess is right'."""

    searched: str
    notes: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def found(self) -> bool:
        return False

    def to_dict(self, with_svg: bool = True) -> dict:
        doc = {"found": False, "searched": self.searched}
        if self.notes:
            doc["notes"] = list(self.notes)
        return doc


@dataclass(frozen=True)
class SearchConfig:
    """How far to look. The defaults reach every beginner-rule pair in well under a second."""

    max_pieces: int = DEFAULT_MAX_PIECES
    max_edits: int = 2
    palette: tuple[str, ...] | None = None  # default: the stash's colours
    use_symmetry: bool = True


# ----------------------------------------------------------------------------- the table


def check_table(rule: Evaluable, guess: Evaluable, table: Scene) -> tuple[Counterexample | None, list[str]]:
    """A koan on the table the two rules mark differently (judgment-free ones first), and notes
    on koans whose marking stone disagrees with the rule."""
    koans, facts = table_facts(table)
    best = None
    notes = []
    stone_color = {s.id: s.color for s in table.stones}
    for k, f in zip(koans, facts):
        border = [p.key for p in f.borderline()]
        r_raw, g_raw = bool(rule.evaluate(f)), bool(guess.evaluate(f))
        marks = {stone_color[s] for s in k.stone_ids if stone_color[s] in ("white", "black")}
        if len(marks) == 1 and mark_name(r_raw) not in marks:
            notes.append(f"koan {k.id} carries a {marks.pop()} stone but the rule marks it {mark_name(r_raw)}")
        r, g = stable_mark(rule, f, border), stable_mark(guess, f, border)
        sub = Scene(k.pieces(table), tuple(s for s in table.stones if s.id in k.stone_ids))
        if r is not None and g is not None and r != g:
            if best is None or best.judgment_calls:
                best = _table_result(k.id, sub, r, g, ())
            if not best.judgment_calls:
                break
        elif r_raw != g_raw and best is None:
            calls = tuple(p.to_dict() for p in f.borderline())
            best = _table_result(k.id, sub, r_raw, g_raw, calls)
    return best, notes


def _table_result(kid: str, sub: Scene, r: bool, g: bool, calls: tuple) -> Counterexample:
    say = [f"Point at koan {kid}, already on the table: the guess marks it {mark_name(g)}, but it is "
           f"{mark_name(r)}. No new koan is needed; the student may take the guessing stone back or "
           f"change the guess."]
    if calls:
        say.append("This rests on a judgment call (see judgment_calls): rule on it first.")
    return Counterexample(kid, sub, mark_name(r), mark_name(g), tuple(say), "table", f"koan {kid} on the table",
                          judgment_calls=calls)


# ----------------------------------------------------------------------------- helpful


@dataclass
class _Count:
    shapes: int = 0
    koans: int = 0


def vocabulary_search(rule: Evaluable, guess: Evaluable, stash: Stash, cfg: SearchConfig,
                      count: _Count | None = None) -> tuple[Geometry, tuple[str, ...], bool, bool] | None:
    """The plainest vocabulary koan of the fewest pieces that the two rules mark differently.

    Smallest first: every shape and colouring of n pieces is tried before any of n + 1, and in
    each one both directions count, so the koan found has the fewest pieces the vocabulary allows.
    """
    count = count if count is not None else _Count()
    palette = cfg.palette or stash.colors
    named: tuple[str, ...] | None = None
    for n in range(1, cfg.max_pieces + 1):
        if n == 3 and cfg.use_symmetry:  # below 3 pieces trying every colouring is cheaper than checking
            named = named_colors([rule, guess], palette)
            if named is not None and not symmetry_holds([rule, guess], named, palette):
                named = None
        for shape in shapes(n):
            geo = geometry(shape)
            count.shapes += 1
            sizes = [p.size for p in geo.pieces]
            for sym in symbolic_colorings(n, palette, named):
                cols = concrete(sym, sizes, palette, named, stash) if named is not None else (
                    sym if stash.allows(zip(sym, sizes)) else None)
                if cols is None:
                    continue
                count.koans += 1
                _, facts = recolored(geo, cols)
                if bool(rule.evaluate(facts)) == bool(guess.evaluate(facts)):
                    continue
                r, g = stable_mark(rule, facts, geo.borderline), stable_mark(guess, facts, geo.borderline)
                if r is not None and g is not None and r != g:
                    return geo, cols, r, g
    return None


def _vocabulary_result(geo: Geometry, cols, r: bool, g: bool, table: Scene | None, style: str,
                       notes: Sequence[str] = ()) -> Counterexample:
    pieces, _ = recolored(geo, cols)
    scene, names = place_on_table(pieces, table, r)
    steps = build_steps(geo.shape, [replace(p, id=names[p.id]) for p in pieces])
    steps.append(_mark_step(r, g))
    return Counterexample(None, scene, mark_name(r), mark_name(g), tuple(steps), style,
                          f"{len(pieces)}-piece koan: {shape_label(geo.shape)}", notes=tuple(notes))


def _mark_step(r: bool, g: bool) -> str:
    return (f"Mark it with a {mark_name(r)} stone. Ask the student first: \"According to your guess, this "
            f"koan is {mark_name(g)}, correct?\"")


def place_on_table(pieces: Sequence[Piece], table: Scene | None, mark: bool | None = None) -> tuple[Scene, dict[str, str]]:
    """The koan moved to free space right of the table's koans, ids made unique, with its stone.

    Why a stone: the Master marks the new koan at once, and a scene with the stone is what the
    table will look like (the stone goes in front, nearest to this koan)."""
    taken = set(table.ids) | {s.id for s in table.stones} if table is not None else set()
    names = {p.id: (p.id if p.id not in taken else f"new-{p.id}") for p in pieces}
    while set(names.values()) & taken:
        names = {k: f"new-{v}" for k, v in names.items()}
    moved = [replace(p, id=names[p.id]) for p in pieces]
    v = np.vstack([p.vertices for p in moved])
    if table is not None and table.pieces:
        tv = np.vstack([p.vertices for p in table.pieces])
        dx = float(tv[:, 0].max()) + KOAN_SPACING_MM - float(v[:, 0].min())
        dy = float(tv[:, 1].mean()) - float(v[:, 1].mean())
        moved = translate(moved, dx, dy)
    stones: tuple[Stone, ...] = ()
    if mark is not None:
        v = np.vstack([p.vertices for p in moved])
        sid = "new-mark"
        while sid in taken:
            sid = "new-" + sid
        stones = (Stone(sid, mark_name(mark), (float(v[:, 0].mean()), float(v[:, 1].min()) - 25.0, 0.0)),)
    return Scene(tuple(moved), stones), names


# ----------------------------------------------------------------------------- entry point


def find_counterexample(rule: Evaluable, guess: Evaluable, table: Scene | None = None, style: str = "helpful",
                        stash: Stash | None = None, config: SearchConfig | None = None,
                        check_table_koans: bool = True) -> Counterexample | NotFound:
    """The koan the Master should show to disprove `guess` under the secret `rule`.

    `table` is the scene on the table (its koans are checked first and its pieces are not in the
    stash); `style` is "helpful" or "tight-lipped".
    """
    if style not in STYLES:
        raise ValueError(f"unknown style '{style}' (expected helpful or tight-lipped)")
    t0 = time.perf_counter()
    cfg = config or SearchConfig()
    stash = stash or Stash.for_table(table)
    notes: list[str] = []
    table_part = ""
    if table is not None and table.pieces:
        hit, notes = check_table(rule, guess, table)
        if hit is not None and check_table_koans:
            return replace(hit, notes=tuple(notes), seconds=time.perf_counter() - t0)
        table_part = f"the {len(split_koans(table))} koan(s) on the table, "
    tight_part = ""
    if style == "tight-lipped" and table is not None and table.pieces:
        from .tight import tight_search

        hit, tried = tight_search(rule, guess, table, stash, cfg)
        if hit is not None:
            return replace(hit, notes=tuple(notes), seconds=time.perf_counter() - t0)
        tight_part = f"{tried} koans within {cfg.max_edits} edit(s) of a table koan, "
        notes.append(f"no koan within {cfg.max_edits} edits of a table koan disproves the guess: "
                     f"this is the plainest one instead")
    count = _Count()
    found = vocabulary_search(rule, guess, stash, cfg, count)
    if found is not None:
        res = _vocabulary_result(*found, table, style, notes)
        return replace(res, seconds=time.perf_counter() - t0)
    if style == "helpful" and table is not None and table.pieces:
        # the vocabulary stops at a few pieces; a near copy of a table koan can be larger
        from .tight import tight_search

        hit, tried = tight_search(rule, guess, table, stash, cfg)
        if hit is not None:
            notes.append(f"no koan of up to {cfg.max_pieces} pieces in the vocabulary disproves the guess: "
                         f"this is a near copy of a table koan instead")
            return replace(hit, style=style, notes=tuple(notes), seconds=time.perf_counter() - t0)
        tight_part = f"{tried} koans within {cfg.max_edits} edit(s) of a table koan, "
    return NotFound(searched_text(cfg, stash, table_part + tight_part, count), tuple(notes),
                    time.perf_counter() - t0)


def searched_text(cfg: SearchConfig, stash: Stash, prefix: str, count: _Count) -> str:
    from .vocab import BIG_KOAN_GROUPS, GROUPS

    small = min(cfg.max_pieces, 3)
    text = (f"{prefix}every koan of 1 to {small} pieces in the builder's vocabulary "
            f"({', '.join(GROUPS)}; groups set apart in a row)")
    if cfg.max_pieces > 3:
        big = "4" if cfg.max_pieces == 4 else f"4 to {cfg.max_pieces}"
        text += f" and every koan of {big} separate pieces ({' or '.join(BIG_KOAN_GROUPS)} each), "
    else:
        text += ", "
    text += (f"in every colouring the stash allows ({stash.describe()}): {count.shapes} shapes, "
             f"{count.koans} koans up to swapping colours neither rule names. None is marked differently "
             f"by the rule and the guess without a judgment call; a larger koan might still be.")
    return text
