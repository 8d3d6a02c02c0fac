"""The rule language's one AST, and its one canonical English rendering.

Every way of saying a rule (English, Spanish, synonyms, word order) parses to these frozen,
hashable nodes; `render` turns a node back into the single canonical wording, chosen so that
parsing it gives the same node again (parse(render(r)) == r is tested).

Pieces are described by `Desc` (a noun phrase: filters, optionally a superlative); conditions
are booleans over the koan (`Cmp`, `Parity`, `All`, `EachOf`, `Majority`, `Plurality`, `And`,
`Or`, `Not`). `Amb` only lives between the transformer and `parse_rule`: it holds the readings
of a wording that does not say which one it means (seed 001's "mu").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

# ----------------------------------------------------------------------------- vocabulary

COLOURS = ("red", "yellow", "green", "blue", "black", "orange", "cyan", "purple", "white", "clear")
#: "each of the four colours" in the rulebook means the standard Zendo colours.
FOUR_COLOURS = ("red", "yellow", "green", "blue")
SIZES = ("small", "medium", "large")
SIZE_RANK = {"small": 1, "medium": 2, "large": 3}
ORIENTATIONS = ("upright", "flat", "weird")
SUPERLATIVES = ("largest", "smallest", "highest", "lowest")

#: Relations between two pieces, with their canonical participle phrase.
REL_PHRASE = {
    "touching": "touching",
    "points_at": "pointing at",
    "pointed_by": "pointed at by",
    "stacked_on": "stacked on",
    "under": "stacked under",
    "tower_with": "in a tower with",
    "nested_in": "nested in",
    "same_direction": "pointing in the same direction as",
    "opposite_direction": "pointing in the opposite direction to",
    "different_direction": "pointing in a different direction from",
    "higher": "higher than",
    "lower": "lower than",
    "same_height": "at the same height as",
    "larger": "larger than",
    "smaller": "smaller than",
    "same_colour": "the same colour as",
    "same_size": "the same size as",
}

NUM_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
             "eleven", "twelve")


def num_text(n: int) -> str:
    return NUM_WORDS[n] if 0 <= n < len(NUM_WORDS) else str(n)


# ----------------------------------------------------------------------------- filters


@dataclass(frozen=True)
class Is:
    """A property of one piece: kind is colour, size, orientation, grounded or pips."""

    kind: str
    value: Union[str, bool, int]


@dataclass(frozen=True)
class Rel:
    """The piece is `rel` to (op n) pieces of `target` (other than itself)."""

    rel: str
    target: "Desc"
    op: str = ">="
    n: int = 1


@dataclass(frozen=True)
class EachOther:
    """The piece is `rel` to another piece of the same described set ("touching each other")."""

    rel: str


@dataclass(frozen=True)
class NotF:
    inner: "Filter"


Filter = Union[Is, Rel, EachOther, NotF]


def neg_filter(f: Filter) -> Filter:
    """Negation with the obvious normalisations, so equal meanings get equal nodes."""
    if isinstance(f, NotF):
        return f.inner
    if isinstance(f, Is) and f.kind == "grounded":
        return Is("grounded", not f.value)
    return NotF(f)


def _fkey(f) -> str:
    return repr(f)


def norm_filters(fs) -> tuple:
    return tuple(sorted(set(fs), key=_fkey))


@dataclass(frozen=True)
class Desc:
    """A described set of pieces of the koan.

    pre: filters on the koan's pieces; sup: then keep the largest/smallest/highest/lowest of those;
    post: then filter those. Without a superlative everything lives in pre (normalised).
    """

    pre: tuple = ()
    sup: str | None = None
    post: tuple = ()

    @staticmethod
    def make(pre=(), sup: str | None = None, post=()) -> "Desc":
        if sup is None:
            return Desc(norm_filters(tuple(pre) + tuple(post)), None, ())
        return Desc(norm_filters(pre), sup, norm_filters(post))

    @property
    def may_be_empty(self) -> bool:
        """A koan always has one piece at least, and its largest (etc.) pieces always exist."""
        return bool(self.pre or self.post)


ALL = Desc()


def is_adjectival(f: Filter) -> bool:
    """Filters said before the noun ("small red non-upright ungrounded pieces")."""
    if isinstance(f, Is):
        return f.kind in ("color", "size", "orientation") or (f.kind == "grounded" and f.value is False)
    if isinstance(f, NotF) and isinstance(f.inner, Is):
        return f.inner.kind in ("color", "size", "orientation")
    return False


# ----------------------------------------------------------------------------- conditions


@dataclass(frozen=True)
class CountOf:
    desc: Desc


@dataclass(frozen=True)
class PipsOf:
    desc: Desc


@dataclass(frozen=True)
class KindsOf:
    """How many different colours (or sizes) the described pieces have."""

    prop: str  # "color" | "size"
    desc: Desc


@dataclass(frozen=True)
class Num:
    n: int


Quantity = Union[CountOf, PipsOf, KindsOf, Num]


@dataclass(frozen=True)
class Cmp:
    left: Quantity
    op: str  # one of >= <= == > <
    right: Quantity


@dataclass(frozen=True)
class Parity:
    q: Quantity
    odd: bool


@dataclass(frozen=True)
class Same:
    """A group property: all the same colour / size / orientation, or pointing the same way."""

    prop: str  # color | size | orientation | direction


@dataclass(frozen=True)
class All:
    """Every piece of desc satisfies pred (a Filter or Same), and there are at least `at_least`."""

    desc: Desc
    pred: Union[Filter, Same]
    at_least: int = 0

    @staticmethod
    def make(desc: Desc, pred, at_least: int) -> "All":
        if not desc.may_be_empty and at_least == 1:
            at_least = 0
        if isinstance(pred, Same) and pred.prop == "direction" and at_least == 1 and not desc.may_be_empty:
            at_least = 0
        return All(desc, pred, at_least)


@dataclass(frozen=True)
class EachOf:
    """At least one piece of each of the four colours (or each of the three sizes)."""

    prop: str
    desc: Desc = ALL


@dataclass(frozen=True)
class Majority:
    """More than half of the pieces of `whole` satisfy `part`."""

    whole: Desc
    part: Filter


@dataclass(frozen=True)
class Plurality:
    """More pieces with this value (of the property) than with any other value."""

    prop: str
    value: str


@dataclass(frozen=True)
class And:
    items: tuple


@dataclass(frozen=True)
class Or:
    items: tuple


@dataclass(frozen=True)
class Not:
    inner: "Cond"


@dataclass(frozen=True)
class Amb:
    """A wording with several complete readings; never inside a finished Rule."""

    readings: tuple


Cond = Union[Cmp, Parity, All, EachOf, Majority, Plurality, And, Or, Not, Amb]


def make_and(items) -> "Cond":
    out = []
    for it in items:
        out.extend(it.items if isinstance(it, And) else [it])
    return out[0] if len(out) == 1 else And(tuple(out))


def make_or(items) -> "Cond":
    out = []
    for it in items:
        out.extend(it.items if isinstance(it, Or) else [it])
    return out[0] if len(out) == 1 else Or(tuple(out))


def make_not(c: Cond) -> Cond:
    return c.inner if isinstance(c, Not) else Not(c)


# ----------------------------------------------------------------------------- rendering

_SIZE_ORDER = {"size": 0, "color": 1, "orientation": 2, "grounded": 3}
OP_QUANT = {">=": "at least", "<=": "at most", "==": "exactly", ">": "more than", "<": "fewer than"}
OP_QUANTITY = {">=": "at least", "<=": "at most", "==": "equal to", ">": "greater than", "<": "less than"}
PRED_ADJ = {"grounded": {True: "touching the table", False: "ungrounded"}}


def _adj_word(f: Filter) -> str:
    if isinstance(f, NotF):
        return "non-" + str(f.inner.value)
    if f.kind == "grounded":
        return "ungrounded"
    return str(f.value)


def _adj_key(f: Filter):
    inner = f.inner if isinstance(f, NotF) else f
    return (_SIZE_ORDER.get(inner.kind, 9), isinstance(f, NotF), str(inner.value))


def render_target(t: Desc, op: str, n: int) -> str:
    adjs = " ".join(_adj_word(f) for f in sorted(t.pre, key=_adj_key))
    if op == ">=" and n == 1:
        if not adjs:
            return "another piece"
        return ("an " if adjs[0] in "aeiou" else "a ") + adjs + " piece"
    if op == "==" and n == 0:
        head = "no"
    else:
        head = f"{OP_QUANT[op]} {num_text(n)}"
    noun = "piece" if n == 1 else "pieces"
    return " ".join(x for x in (head, adjs, noun) if x)


def render_pred(f, plural: bool) -> str:
    """A filter or group property said after "is"/"are"."""
    if isinstance(f, Same):
        return "pointing in the same direction" if f.prop == "direction" else f"the same {_prop_word(f.prop)}"
    if isinstance(f, Is):
        if f.kind == "grounded":
            return PRED_ADJ["grounded"][f.value]
        if f.kind == "pips":
            return f"with {num_text(f.value)} {'pip' if f.value == 1 else 'pips'}"
        return str(f.value)
    if isinstance(f, Rel):
        return f"{REL_PHRASE[f.rel]} {render_target(f.target, f.op, f.n)}"
    if isinstance(f, EachOther):
        return f"{REL_PHRASE[f.rel]} each other"
    if isinstance(f, NotF):
        return "not " + render_pred(f.inner, plural)
    raise TypeError(f)


def _prop_word(prop: str) -> str:
    return {"color": "colour", "size": "size", "orientation": "orientation"}[prop]


def render_np(d: Desc, plural: bool) -> str:
    """The noun phrase without a determiner: 'large red pieces touching a blue piece'."""
    noun = "pieces" if plural else "piece"
    be = "are" if plural else "is"
    if d.sup is None:
        adjs = [f for f in d.pre if is_adjectival(f)]
        rest = [f for f in d.pre if not is_adjectival(f)]
        words = [_adj_word(f) for f in sorted(adjs, key=_adj_key)] + [noun]
        if rest:
            words.append(" and ".join(render_pred(f, plural) for f in rest))
        return " ".join(words)
    words = [d.sup] + [_adj_word(f) for f in sorted(d.pre, key=_adj_key)] + [noun]
    if d.post:
        parts = []
        for f in d.post:
            if is_adjectival(f) or (isinstance(f, NotF) and is_adjectival(neg_filter(f))):
                parts.append(f"that {be} {render_pred(f, plural)}")
            else:
                parts.append(render_pred(f, plural))
        words.append(" and ".join(parts))
    return " ".join(words)


def _count_np(op: str, n: int, d: Desc) -> str:
    if op == "==" and n == 0:
        return "no " + render_np(d, True)
    return f"{OP_QUANT[op]} {num_text(n)} {render_np(d, n != 1)}"


def _its(d: Desc) -> str:
    return "its " + render_np(d, True)


def render_quantity(q: Quantity) -> str:
    if isinstance(q, Num):
        return num_text(q.n)
    if isinstance(q, CountOf):
        return "the number of " + _its(q.desc)
    if isinstance(q, PipsOf):
        return "its pip count" if q.desc == ALL else "the pip count of " + _its(q.desc)
    if isinstance(q, KindsOf):
        word = "colours" if q.prop == "color" else "sizes"
        return f"the number of {word}" + ("" if q.desc == ALL else " among " + _its(q.desc))
    raise TypeError(q)


def _contains_part(c: Cond) -> str | None:
    """The words after "it contains" when a condition is said that way, else None."""
    if isinstance(c, Cmp) and isinstance(c.left, CountOf):
        if isinstance(c.right, Num):
            return _count_np(c.op, c.right.n, c.left.desc)
        if isinstance(c.right, CountOf):
            a, b = render_np(c.left.desc, True), render_np(c.right.desc, True)
            return {">": f"more {a} than {b}", "<": f"fewer {a} than {b}",
                    "==": f"the same number of {a} as {b}", ">=": f"at least as many {a} as {b}",
                    "<=": f"at most as many {a} as {b}"}[c.op]
    if isinstance(c, Cmp) and isinstance(c.left, KindsOf) and c.left.desc == ALL and isinstance(c.right, Num):
        word = "colours" if c.left.prop == "color" else "sizes"
        if c.op == "==" and c.right.n == 0:
            return f"no {word}"
        return f"{OP_QUANT[c.op]} {num_text(c.right.n)} {word if c.right.n != 1 else word[:-1]}"
    if isinstance(c, Parity) and isinstance(c.q, CountOf):
        return f"an {'odd' if c.odd else 'even'} number of {render_np(c.q.desc, True)}"
    if isinstance(c, Parity) and isinstance(c.q, KindsOf) and c.q.desc == ALL:
        return f"an {'odd' if c.odd else 'even'} number of {'colours' if c.q.prop == 'color' else 'sizes'}"
    if isinstance(c, EachOf) and c.desc == ALL:
        return ("at least one piece of each of the four colours" if c.prop == "color"
                else "at least one piece of each of the three sizes")
    if isinstance(c, Plurality):
        return f"more {c.value} pieces than pieces of any other {_prop_word(c.prop)}"
    return None


def render_cond(c: Cond) -> str:
    if isinstance(c, And):
        return _render_junction(c.items, "and", lambda x: isinstance(x, Or))
    if isinstance(c, Or):
        return _render_junction(c.items, "or", lambda x: False)
    if isinstance(c, Not):
        inner = render_cond(c.inner)
        if isinstance(c.inner, (And, Or)):
            inner = f"({inner})"
        return "it is not the case that " + inner
    part = _contains_part(c)
    if part is not None:
        return "it contains " + part
    if isinstance(c, Cmp):
        words = OP_QUANT if isinstance(c.right, Num) else OP_QUANTITY
        rhs = f"{words[c.op]} {render_quantity(c.right)}"
        return f"{render_quantity(c.left)} is {rhs}"
    if isinstance(c, Parity):
        return f"{render_quantity(c.q)} is {'odd' if c.odd else 'even'}"
    if isinstance(c, All):
        return _render_all(c)
    if isinstance(c, Majority):
        return f"more than half of {_its(c.whole)} are {render_pred(c.part, True)}"
    if isinstance(c, Amb):
        raise ValueError("an ambiguous condition has no single rendering")
    raise TypeError(c)


def _render_junction(items, word: str, needs_parens) -> str:
    out: list[str] = []
    prev_contains = False
    for it in items:
        part = _contains_part(it)
        if part is not None and prev_contains:
            out.append(f" {word} {part}")
            continue
        text = render_cond(it)
        if needs_parens(it):
            text = f"({text})"
        out.append(text if not out else f" {word} {text}")
        prev_contains = part is not None
    return "".join(out)


def bare_all_is_ambiguous(desc: Desc, pred) -> bool:
    """Seed 001's problem cases: "all its red pieces are upright" (there may be none) and
    "all its pieces point in the same direction" (there may be only one)."""
    natural = All.make(desc, pred, 2 if _pairwise(pred) else 1)
    western = All.make(desc, pred, 0)
    return natural != western


def _pairwise(pred) -> bool:
    return isinstance(pred, Same) and pred.prop == "direction"


def _render_all(c: All) -> str:
    np_ = render_np(c.desc, True)
    pred = render_pred(c.pred, True)
    if not bare_all_is_ambiguous(c.desc, c.pred) and c == All.make(c.desc, c.pred, 0):
        return f"all its {np_} are {pred}"
    if c.at_least == 0:
        return f"all its {np_}, if any, are {pred}"
    if c.at_least == 1:
        head = f"at least one {render_np(c.desc, False)}"
    else:
        head = f"at least {num_text(c.at_least)} {np_}"
    return f"it contains {head} and they are all {pred}"


def render_rule(cond: Cond, negated: bool) -> str:
    head = "A koan does not have the Buddha-nature" if negated else "A koan has the Buddha-nature"
    return f"{head} if and only if {render_cond(cond)}."
