"""The one evaluator: a rule's AST compiled to closures over KoanFacts (never geometry).

Compilation happens once per node (cached), so evaluating a rule on a koan is a handful of
Python calls and dictionary look-ups: the counterexample search calls `evaluate` millions of
times and relies on it being fast and pure. Witnesses (which pieces made the mark so) are a
second, slower walk used only when a koan is actually marked.
"""
from __future__ import annotations

import operator
from functools import lru_cache
from itertools import combinations
from typing import Callable

from ..facts import KoanFacts
from .ast import (FOUR_COLOURS, SIZE_RANK, SIZES, All, And, Cmp, CountOf, Desc, EachOf, EachOther, Is,
                  KindsOf, Majority, Not, NotF, Num, Or, Parity, PipsOf, Plurality, Rel, Same)

OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, ">": operator.gt, "<": operator.lt}


def _rel_fn(rel: str) -> Callable[[KoanFacts, str, str], bool]:
    """rel(f, x, y): is x `rel` to y? Only the facts API is used."""
    if rel == "touching":
        return lambda f, x, y: f.touching(x, y)
    if rel == "points_at":
        return lambda f, x, y: f.points_at(x, y)
    if rel == "pointed_by":
        return lambda f, x, y: f.points_at(y, x)
    if rel == "stacked_on":
        return lambda f, x, y: f.stacked_on(x, y)
    if rel == "under":
        return lambda f, x, y: f.stacked_on(y, x)
    if rel == "tower_with":
        return lambda f, x, y: x != y and y in f.tower_of(x)
    if rel == "nested_in":
        return lambda f, x, y: f.nested_in(x, y)
    if rel == "same_direction":
        return lambda f, x, y: x != y and f.same_direction(x, y)
    if rel == "opposite_direction":
        return lambda f, x, y: f.opposite_direction(x, y)
    if rel == "different_direction":
        return lambda f, x, y: x != y and not f.same_direction(x, y)
    if rel == "higher":
        return lambda f, x, y: f.higher(x, y)
    if rel == "lower":
        return lambda f, x, y: f.higher(y, x)
    if rel == "same_height":
        return lambda f, x, y: x != y and f.same_height(x, y)
    if rel == "larger":
        return lambda f, x, y: SIZE_RANK[f.size(x)] > SIZE_RANK[f.size(y)]
    if rel == "smaller":
        return lambda f, x, y: SIZE_RANK[f.size(x)] < SIZE_RANK[f.size(y)]
    if rel == "same_colour":
        return lambda f, x, y: x != y and f.color(x) == f.color(y)
    if rel == "same_size":
        return lambda f, x, y: x != y and f.size(x) == f.size(y)
    raise ValueError(f"unknown relation {rel!r}")


#: "pointing at each other" means mutually; other relations need only hold one way round.
MUTUAL = frozenset({"points_at", "pointed_by"})

#: The facts predicates each relation reads (for finding which borderline calls matter).
REL_READS = {
    "touching": {"touching"}, "points_at": {"pointing"}, "pointed_by": {"pointing"},
    "stacked_on": {"stacked"}, "under": {"stacked"}, "tower_with": {"stacked"}, "nested_in": {"nested"},
    "same_direction": {"same_direction"}, "different_direction": {"same_direction"},
    "opposite_direction": {"opposite_direction"}, "higher": {"same_height"}, "lower": {"same_height"},
    "same_height": {"same_height"}, "larger": set(), "smaller": set(), "same_colour": set(), "same_size": set(),
}


# ----------------------------------------------------------------------------- filters


@lru_cache(maxsize=None)
def compile_filter(flt) -> Callable:
    """fn(f, memo, x, group) -> bool; group is the described set an "each other" refers to."""
    if isinstance(flt, Is):
        k, v = flt.kind, flt.value
        if k == "color":
            return lambda f, m, x, g: f.attrs[x].color == v
        if k == "size":
            return lambda f, m, x, g: f.attrs[x].size == v
        if k == "pips":
            return lambda f, m, x, g: f.attrs[x].pips == v
        if k == "orientation":
            return lambda f, m, x, g: f.orientation(x) == v
        if k == "grounded":
            return lambda f, m, x, g: f.grounded(x) == v
        raise ValueError(k)
    if isinstance(flt, NotF):
        inner = compile_filter(flt.inner)
        return lambda f, m, x, g: not inner(f, m, x, g)
    if isinstance(flt, Rel):
        r, target, cmp, n = _rel_fn(flt.rel), compile_desc(flt.target), OPS[flt.op], flt.n
        if flt.op == ">=" and n == 1:
            return lambda f, m, x, g: any(y != x and r(f, x, y) for y in target(f, m))
        return lambda f, m, x, g: cmp(sum(1 for y in target(f, m) if y != x and r(f, x, y)), n)
    if isinstance(flt, EachOther):
        r = _rel_fn(flt.rel)
        if flt.rel in MUTUAL:
            return lambda f, m, x, g: any(y != x and r(f, x, y) and r(f, y, x) for y in g)
        return lambda f, m, x, g: any(y != x and (r(f, x, y) or r(f, y, x)) for y in g)
    raise TypeError(flt)


def _split(filters):
    plain = tuple(compile_filter(x) for x in filters if not _uses_group(x))
    grouped = tuple(compile_filter(x) for x in filters if _uses_group(x))
    return plain, grouped


def _uses_group(flt) -> bool:
    return isinstance(flt, EachOther) or (isinstance(flt, NotF) and _uses_group(flt.inner))


def _apply(f, m, ids, plain, grouped):
    if plain:
        ids = [x for x in ids if all(p(f, m, x, ids) for p in plain)]
    if grouped:
        base = ids
        ids = [x for x in base if all(p(f, m, x, base) for p in grouped)]
    return ids


def _superlative(sup: str):
    if sup in ("largest", "smallest"):
        pick = max if sup == "largest" else min

        def fn(f, ids):
            if not ids:
                return ids
            best = pick(SIZE_RANK[f.attrs[x].size] for x in ids)
            return [x for x in ids if SIZE_RANK[f.attrs[x].size] == best]
        return fn
    if sup == "highest":
        return lambda f, ids: [a for a in ids if not any(f.higher(b, a) for b in ids)]
    if sup == "lowest":
        return lambda f, ids: [a for a in ids if not any(f.higher(a, b) for b in ids)]
    raise ValueError(sup)


@lru_cache(maxsize=None)
def compile_desc(d: Desc) -> Callable:
    """fn(f, memo) -> list of piece ids in koan order, memoised per evaluation."""
    pre_plain, pre_grouped = _split(d.pre)
    post_plain, post_grouped = _split(d.post)
    sup = _superlative(d.sup) if d.sup else None
    if not d.pre and sup is None:
        return lambda f, m: f.ids

    def fn(f, m):
        hit = m.get(d)
        if hit is not None:
            return hit
        ids = _apply(f, m, list(f.ids), pre_plain, pre_grouped)
        if sup is not None:
            ids = _apply(f, m, sup(f, ids), post_plain, post_grouped)
        m[d] = ids
        return ids
    return fn


# ----------------------------------------------------------------------------- conditions


@lru_cache(maxsize=None)
def compile_quantity(q) -> Callable:
    if isinstance(q, Num):
        n = q.n
        return lambda f, m: n
    d = compile_desc(q.desc)
    if isinstance(q, CountOf):
        return lambda f, m: len(d(f, m))
    if isinstance(q, PipsOf):
        return lambda f, m: sum(f.attrs[x].pips for x in d(f, m))
    if isinstance(q, KindsOf):
        attr = "color" if q.prop == "color" else "size"
        return lambda f, m: len({getattr(f.attrs[x], attr) for x in d(f, m)})
    raise TypeError(q)


def _same(prop: str):
    if prop == "color":
        return lambda f, ids: len({f.attrs[x].color for x in ids}) <= 1
    if prop == "size":
        return lambda f, ids: len({f.attrs[x].size for x in ids}) <= 1
    if prop == "orientation":
        return lambda f, ids: len({f.orientation(x) for x in ids}) <= 1
    if prop == "direction":
        return lambda f, ids: all(f.same_direction(a, b) for a, b in combinations(ids, 2))
    raise ValueError(prop)


@lru_cache(maxsize=None)
def compile_cond(c) -> Callable:
    """fn(f, memo) -> bool."""
    if isinstance(c, Cmp):
        left, right, op = compile_quantity(c.left), compile_quantity(c.right), OPS[c.op]
        if isinstance(c.left, CountOf) and isinstance(c.right, Num) and c.op == ">=" and c.right.n == 1:
            d = compile_desc(c.left.desc)
            return lambda f, m: bool(d(f, m))
        return lambda f, m: op(left(f, m), right(f, m))
    if isinstance(c, Parity):
        q, odd = compile_quantity(c.q), c.odd
        return lambda f, m: (q(f, m) % 2 == 1) == odd
    if isinstance(c, All):
        d, n = compile_desc(c.desc), c.at_least
        if isinstance(c.pred, Same):
            same = _same(c.pred.prop)

            def all_same(f, m):
                ids = d(f, m)
                return len(ids) >= n and same(f, ids)
            return all_same
        p = compile_filter(c.pred)

        def all_fn(f, m):
            ids = d(f, m)
            return len(ids) >= n and all(p(f, m, x, ids) for x in ids)
        return all_fn
    if isinstance(c, EachOf):
        d = compile_desc(c.desc)
        if c.prop == "color":
            want = frozenset(FOUR_COLOURS)
            return lambda f, m: want <= {f.attrs[x].color for x in d(f, m)}
        want = frozenset(SIZES)
        return lambda f, m: want <= {f.attrs[x].size for x in d(f, m)}
    if isinstance(c, Majority):
        d, p = compile_desc(c.whole), compile_filter(c.part)

        def majority(f, m):
            ids = d(f, m)
            return 2 * sum(1 for x in ids if p(f, m, x, ids)) > len(ids)
        return majority
    if isinstance(c, Plurality):
        prop, value = c.prop, c.value

        def plurality(f, m):
            counts: dict = {}
            for x in f.ids:
                v = f.orientation(x) if prop == "orientation" else getattr(f.attrs[x], prop)
                counts[v] = counts.get(v, 0) + 1
            mine = counts.pop(value, 0)
            return mine > max(counts.values(), default=0)
        return plurality
    if isinstance(c, And):
        parts = tuple(compile_cond(x) for x in c.items)
        return lambda f, m: all(p(f, m) for p in parts)
    if isinstance(c, Or):
        parts = tuple(compile_cond(x) for x in c.items)
        return lambda f, m: any(p(f, m) for p in parts)
    if isinstance(c, Not):
        inner = compile_cond(c.inner)
        return lambda f, m: not inner(f, m)
    raise TypeError(c)


# ----------------------------------------------------------------------------- witnesses


def _partners(flt, f, m, x, group) -> set[str]:
    """The other pieces that made a relational filter true for x (pointed-at pieces, ...)."""
    if isinstance(flt, Rel) and compile_filter(flt)(f, m, x, group):
        r = _rel_fn(flt.rel)
        return {y for y in compile_desc(flt.target)(f, m) if y != x and r(f, x, y)}
    if isinstance(flt, EachOther) and compile_filter(flt)(f, m, x, group):
        r = _rel_fn(flt.rel)
        return {y for y in group if y != x and (r(f, x, y) or r(f, y, x))}
    return set()


def desc_witnesses(d: Desc, f: KoanFacts, m: dict) -> set[str]:
    ids = compile_desc(d)(f, m)
    out = set(ids)
    for x in ids:
        for flt in d.pre + d.post:
            out |= _partners(flt, f, m, x, ids)
    return out


def _quantity_witnesses(q, f, m) -> set[str]:
    return set() if isinstance(q, Num) else desc_witnesses(q.desc, f, m)


def witnesses(c, f: KoanFacts, m: dict | None = None) -> set[str]:
    """The pieces that made condition c come out the way it did on f."""
    m = {} if m is None else m
    value = compile_cond(c)(f, m)
    if isinstance(c, (Cmp,)):
        return _quantity_witnesses(c.left, f, m) | _quantity_witnesses(c.right, f, m)
    if isinstance(c, Parity):
        return _quantity_witnesses(c.q, f, m)
    if isinstance(c, All):
        ids = compile_desc(c.desc)(f, m)
        if value or isinstance(c.pred, Same) or len(ids) < c.at_least:
            return desc_witnesses(c.desc, f, m) if value or len(ids) >= c.at_least else set()
        p = compile_filter(c.pred)
        return {x for x in ids if not p(f, m, x, ids)}
    if isinstance(c, EachOf):
        return desc_witnesses(c.desc, f, m)
    if isinstance(c, Majority):
        ids = compile_desc(c.whole)(f, m)
        p = compile_filter(c.part)
        return {x for x in ids if p(f, m, x, ids)}
    if isinstance(c, Plurality):
        return {x for x in f.ids if (f.orientation(x) if c.prop == "orientation" else getattr(f.attrs[x], c.prop)) == c.value}
    if isinstance(c, (And, Or)):
        want_all = (isinstance(c, And) and value) or (isinstance(c, Or) and not value)
        out: set[str] = set()
        for x in c.items:
            if want_all or compile_cond(x)(f, m) == value:
                out |= witnesses(x, f, m)
        return out
    if isinstance(c, Not):
        return witnesses(c.inner, f, m)
    raise TypeError(c)


# ----------------------------------------------------------------------------- what a rule reads


def reads(node) -> frozenset[str]:
    """Names of the facts predicates a node can read: only their borderline calls can matter."""
    out: set[str] = set()

    def walk(n):
        if isinstance(n, Is):
            if n.kind in ("orientation", "grounded"):
                out.add(n.kind)
        elif isinstance(n, (Rel, EachOther)):
            out.update(REL_READS[n.rel])
            if isinstance(n, Rel):
                walk(n.target)
        elif isinstance(n, Same):
            out.update({"orientation": {"orientation"}, "direction": {"same_direction"}}.get(n.prop, set()))
        elif isinstance(n, Desc):
            if n.sup in ("highest", "lowest"):
                out.add("same_height")
            for x in n.pre + n.post:
                walk(x)
        elif isinstance(n, Plurality):
            if n.prop == "orientation":
                out.add("orientation")
        elif hasattr(n, "__dataclass_fields__"):
            for name in n.__dataclass_fields__:
                v = getattr(n, name)
                for item in (v if isinstance(v, tuple) else (v,)):
                    if hasattr(item, "__dataclass_fields__"):
                        walk(item)
    walk(node)
    return frozenset(out)
