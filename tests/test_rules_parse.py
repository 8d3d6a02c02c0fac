"""Clause 1 (coverage, errors) and clause 2 (one AST, one canonical English, round trips)."""
from __future__ import annotations

import random

import pytest

from zendo.rules import (BEGINNER_RULES, BEGINNER_RULES_ES, EXAMPLE_RULES, EXAMPLE_RULES_ES, Rule,
                         RuleAmbiguous, RuleSyntaxError, parse_rule)
from zendo.rules import ast as A

COVERAGE = [
    "AKHTBN iff it contains more red pieces than blue pieces",
    "A koan has the Buddha-nature if it contains the same number of yellow pieces as green pieces",
    "A koan has the Buddha-nature unless it contains a red piece",
    "A koan does not have the Buddha-nature if it contains a blue piece; otherwise it does",
    "it contains no pieces touching the table",
    "it contains zero green pieces",
    "it contains exactly three flat pieces",
    "it contains more than two upright pieces",
    "it contains fewer than three pieces",
    "it contains at most two red pieces",
    "it contains two or more upright pieces",
    "it contains an even number of red pieces",
    "all its pieces are upright",
    "every piece is standing",
    "none of its red pieces are upright",
    "its pip count is odd",
    "the pip count of its red pieces touching a blue piece is at least 5",
    "the pip count of its red pieces is greater than the pip count of its blue pieces",
    "it contains exactly two colours",
    "the number of sizes among its upright pieces is exactly two",
    "it contains a red piece or a blue piece",
    "(it contains a red piece or it contains a blue piece) and it contains no green pieces",
    "it is not the case that it contains a red piece",
    "it contains a red piece unless it contains a blue piece",
    "exactly three pieces touch the table",
    "it contains a grounded piece and an ungrounded piece",
    "it contains a lying piece that points at a standing piece",
    "it contains a red piece stacked on a blue piece",
    "it contains a piece in a tower with a green piece",
    "it contains a small piece nested in a large piece",
    "it contains a piece pointing in the same direction as a red piece",
    "it contains a piece pointing in the opposite direction to a red piece",
    "it contains a piece pointing in a different direction from a red piece",
    "it contains a red piece higher than a blue piece",
    "it contains a red piece lower than a blue piece",
    "it contains a red piece larger than a blue piece",
    "it contains a red piece smaller than a blue piece",
    "it contains a non-upright red piece",
    "it contains a piece with three pips",
    "all its largest pieces are red",
    "all its smallest pieces are flat",
    "more than half of its pieces are red",
    "it contains more red pieces than pieces of any other colour",
    "a red piece touches a blue piece",
    "it contains a piece pointing at at least two other pieces",
    "all its pieces are the same orientation",
    "it contains one or more red pieces and they're all upright",
    "all its red pieces, if any, are upright",
    "it contains at least one piece of each size",
]


@pytest.mark.parametrize("text", BEGINNER_RULES + EXAMPLE_RULES)
def test_clause1_english_seed_rules_parse_exactly_as_worded(text):
    assert isinstance(parse_rule(text), Rule)


@pytest.mark.parametrize("es,en", list(zip(BEGINNER_RULES_ES + EXAMPLE_RULES_ES, BEGINNER_RULES + EXAMPLE_RULES)))
def test_clause1_spanish_seed_rules_parse_and_mean_the_same(es, en):
    assert parse_rule(es) == parse_rule(en)


def test_clause1_beginner_rule_meanings():
    r = [parse_rule(t).cond for t in BEGINNER_RULES]
    assert r[3] == A.Cmp(A.CountOf(A.Desc((A.Is("color", "red"),))), ">=", A.Num(1))
    assert r[9] == A.Cmp(A.CountOf(A.ALL), "==", A.Num(2))
    assert r[10] == A.Cmp(A.CountOf(A.Desc((A.Is("orientation", "upright"),))), ">=", A.Num(2))
    assert r[14] == A.Cmp(A.CountOf(A.Desc((A.EachOther("touching"),))), ">=", A.Num(2))
    assert parse_rule(EXAMPLE_RULES[2]).negated


@pytest.mark.parametrize("text", COVERAGE)
def test_clause1_vocabulary_parses_and_round_trips(text):
    rule = parse_rule(text)
    assert parse_rule(rule.canonical()) == rule


def test_clause1_synonyms_mean_the_same():
    assert parse_rule("it contains a standing piece") == parse_rule("it contains an upright piece")
    assert parse_rule("it contains a lying piece") == parse_rule("it contains a flat piece")
    assert parse_rule("a red piece touches a blue piece") == parse_rule("it contains a red piece touching a blue piece")
    assert parse_rule("it contains a red piece that points at a blue piece") == \
        parse_rule("it contains a red piece pointing at a blue piece")
    assert parse_rule("AKHTBN iff it contains a red piece") == \
        parse_rule("A koan has the Buddha-nature if and only if it contains at least one red piece.")
    assert parse_rule("it contains a medium yellow piece") == parse_rule("it contains a yellow medium piece")


def test_clause1_error_says_where_parsing_stopped_and_what_could_come_next():
    with pytest.raises(RuleSyntaxError) as e:
        parse_rule("A koan has the Buddha-nature if it contains a purple elephant")
    assert e.value.column == len("A koan has the Buddha-nature if it contains a purple ") + 1
    assert "'piece'" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(RuleSyntaxError) as e:
        parse_rule("A koan has the Buddha-nature if it contains at least")
    assert "'one'" in str(e.value) and e.value.column == len("A koan has the Buddha-nature if it contains at least") + 1
    with pytest.raises(RuleSyntaxError) as e:
        parse_rule("it contains red pieces pieces")
    assert e.value.column == len("it contains red pieces ") + 1


def test_clause1_spanish_error_column_points_into_the_spanish():
    with pytest.raises(RuleSyntaxError) as e:
        parse_rule("contiene al menos una pieza elefante")
    assert e.value.column == len("contiene al menos una pieza ") + 1


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("text", BEGINNER_RULES + EXAMPLE_RULES + BEGINNER_RULES_ES + EXAMPLE_RULES_ES)
def test_clause2_round_trip_seed_rules(text):
    rule = parse_rule(text)
    assert parse_rule(rule.canonical()) == rule
    assert parse_rule(rule.canonical()).canonical() == rule.canonical()


def _random_desc(rng, depth=0, sup_ok=True):
    adjs = [A.Is("color", rng.choice(A.COLOURS[:4])), A.Is("size", rng.choice(A.SIZES)),
            A.Is("orientation", rng.choice(A.ORIENTATIONS)), A.Is("grounded", rng.random() < 0.5),
            A.NotF(A.Is("orientation", "upright"))]
    fs = rng.sample(adjs, rng.randint(0, 2))
    if depth == 0 and rng.random() < 0.5:
        rel = rng.choice(sorted(A.REL_PHRASE))
        target = A.Desc.make(rng.sample(adjs[:3], rng.randint(0, 1)))
        op, n = rng.choice([(">=", 1), (">=", 2), ("==", 0), ("==", 1), ("<=", 2)])
        f = A.Rel(rel, target, op, n) if rng.random() < 0.8 else A.EachOther(rel)
        fs.append(A.neg_filter(f) if rng.random() < 0.2 else f)
    if sup_ok and rng.random() < 0.2:
        return A.Desc.make([x for x in fs if A.is_adjectival(x)], rng.choice(A.SUPERLATIVES),
                           [x for x in fs if not A.is_adjectival(x)])
    return A.Desc.make(fs)


def _random_cond(rng, depth=0):
    k = rng.randrange(9 if depth < 2 else 7)
    d = _random_desc(rng)
    if k == 0:
        return A.Cmp(A.CountOf(d), rng.choice(list(A.OP_QUANT)), A.Num(rng.randint(0, 4)))
    if k == 1:
        return A.Cmp(A.CountOf(_random_desc(rng, sup_ok=False)), rng.choice(list(A.OP_QUANT)),
                     A.CountOf(_random_desc(rng, sup_ok=False)))
    if k == 2:
        return A.Parity(rng.choice([A.CountOf(d), A.PipsOf(d), A.KindsOf("color", d)]), rng.random() < 0.5)
    if k == 3:
        return A.Cmp(rng.choice([A.PipsOf(d), A.KindsOf("size", d)]), rng.choice(list(A.OP_QUANT)), A.Num(rng.randint(1, 9)))
    if k == 4:
        pred = rng.choice([A.Same("color"), A.Same("direction"), A.Is("orientation", "flat"),
                           A.Rel("touching", A.Desc.make([A.Is("color", "red")]))])
        return A.All.make(d, pred, rng.randint(0, 2))
    if k == 5:
        return rng.choice([A.Majority(A.Desc.make([A.Is("size", "large")]), A.Is("color", "blue")),
                           A.Plurality("color", "green"), A.EachOf("color"), A.EachOf("size")])
    if k == 6:
        return A.Cmp(A.PipsOf(d), rng.choice(list(A.OP_QUANT)), A.PipsOf(_random_desc(rng)))
    items = [_random_cond(rng, depth + 1) for _ in range(rng.randint(2, 3))]
    if k == 7:
        return A.make_and(items)
    return A.make_or(items) if rng.random() < 0.7 else A.make_not(A.make_or(items))


def test_clause2_parse_render_is_identity_on_random_rules():
    rng = random.Random(3)
    failures = []
    for _ in range(400):
        rule = Rule(_random_cond(rng), rng.random() < 0.3)
        try:
            back = parse_rule(rule.canonical())
        except (RuleSyntaxError, RuleAmbiguous) as e:
            failures.append((rule.canonical(), str(e)))
            continue
        if back != rule:
            failures.append((rule.canonical(), back.canonical()))
    assert not failures, failures[:3]


def test_clause2_rule_is_frozen_and_hashable():
    a, b = parse_rule(BEGINNER_RULES[0]), parse_rule(BEGINNER_RULES[0])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(Exception):
        a.negated = True
