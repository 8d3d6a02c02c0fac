"""Clauses 5 and 7: marking hand-built koans (both marks for every seed rule), witnesses, judgment calls."""
from __future__ import annotations

import pytest

from zendo.rules.samples import BEGINNER_KOANS, EXAMPLE_KOANS, koan, pointer_koan, row, touching_koan, up
from zendo.rules import (BEGINNER_RULES, BEGINNER_RULES_ES, EXAMPLE_RULES, EXAMPLE_RULES_ES, Mark, mark,
                         parse_rule)
from zendo.rules.bench import run, synthetic_facts

CASES = [(t, w, b) for t, (w, b) in zip(BEGINNER_RULES, BEGINNER_KOANS)] + \
        [(t, w, b) for t, (w, b) in zip(BEGINNER_RULES_ES, BEGINNER_KOANS)] + \
        [(t, w, b) for t, (w, b) in zip(EXAMPLE_RULES, EXAMPLE_KOANS)] + \
        [(t, w, b) for t, (w, b) in zip(EXAMPLE_RULES_ES, EXAMPLE_KOANS)]


@pytest.mark.parametrize("text,white,black", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_clause7_every_seed_rule_reaches_both_marks(text, white, black):
    rule = parse_rule(text)
    w, b = mark(rule, white()), mark(rule, black())
    assert (w.mark, b.mark) == ("white", "black")
    assert not w.judgment_call and not b.judgment_call


def test_clause5_witnesses_name_the_pieces_that_made_it_so():
    pointing = parse_rule(BEGINNER_RULES[11])
    m = mark(pointing, pointer_koan())
    assert m.mark == "white" and set(m.witnesses) == {"a", "c"}
    red = parse_rule("it contains at least one red piece")
    f = row(("red", "small"), ("blue", "small"), ("red", "large"))
    assert red.witnesses(f) == ["p0", "p2"]
    no_green = parse_rule(BEGINNER_RULES[6])
    m = mark(no_green, row(("green", "small"), ("red", "small")))
    assert m.mark == "black" and m.witnesses == ["p0"]
    flat = parse_rule(BEGINNER_RULES[2])
    assert flat.witnesses(BEGINNER_KOANS[2][1]()) == ["u"]  # the upright piece spoiled it


def test_clause5_mark_to_dict_matches_cli_json():
    m = mark(parse_rule(BEGINNER_RULES[0]), row(("red", "small")))
    assert isinstance(m, Mark)
    assert set(m.to_dict()) == {"id", "mark", "judgment_call", "borderline", "witnesses"}


def test_clause7_touching_on_a_03mm_gap_is_a_judgment_call_colour_is_not():
    f = touching_koan(gap=0.3)
    touching = mark(parse_rule(BEGINNER_RULES[14]), f)
    assert touching.mark == "white" and touching.judgment_call
    assert [(b["predicate"], b["pieces"]) for b in touching.borderline] == [("touching", ["a", "b"])]
    colour = mark(parse_rule(BEGINNER_RULES[3]), f)
    assert colour.mark == "white" and not colour.judgment_call and colour.borderline == []


def test_clause5_a_clear_touch_is_not_a_judgment_call():
    assert not mark(parse_rule(BEGINNER_RULES[14]), touching_koan(gap=0.0)).judgment_call


def test_clause5_rulings_are_used_and_no_longer_borderline():
    f = touching_koan(gap=0.3)
    rule = parse_rule(BEGINNER_RULES[14])
    ruled = mark(rule, f, {("touching", "a", "b"): False})
    assert ruled.mark == "black" and not ruled.judgment_call and ruled.borderline == []
    kept = mark(rule, f, {("touching", "a", "b"): True})
    assert kept.mark == "white" and not kept.judgment_call


def test_clause5_borderline_calls_that_only_flip_the_mark_together_are_found():
    """Two 0.3 mm gaps: 'a piece touching another piece' stays white if either touch goes, not if both do."""
    from zendo.build import Spec, beside
    a = up("a")
    f = koan(a, beside(a, Spec("b", "blue", "small"), gap=0.3), beside(a, Spec("c", "green", "small"), 180.0, gap=0.3))
    rule = parse_rule("it contains a piece touching another piece")
    m = mark(rule, f)
    assert m.mark == "white" and m.judgment_call
    assert sorted(tuple(b["pieces"]) for b in m.borderline) == [("a", "b"), ("a", "c")]
    one_ruled = mark(rule, f, {("touching", "a", "b"): True})
    assert not one_ruled.judgment_call and one_ruled.borderline == []


def test_clause5_evaluate_reads_facts_only_and_is_pure():
    import random
    rng = random.Random(1)
    facts = [synthetic_facts(rng, f"s{i}") for i in range(200)]
    for text in BEGINNER_RULES:
        rule = parse_rule(text)
        first = [rule.evaluate(f) for f in facts]
        assert first == [rule.evaluate(f) for f in facts]
        assert 0 < sum(first) < len(first) or text.endswith("four colors.")


def test_clause8_bench_reports_seconds_per_beginner_rule():
    report = run(n=60)
    assert report["koans"] == 60
    assert set(report["rules"]) == set(BEGINNER_RULES)
    assert all(v["seconds"] >= 0 for v in report["rules"].values())
    edge = report["edge_koan"]
    assert edge["rules"] == len(BEGINNER_RULES) and edge["ms"] > 0
    assert 0 < edge["judgment_calls"] < edge["rules"]  # the edge doubt changes some marks, not all


# ----------------------------------------------------------------------------- facts a rule reads


def _counting(monkeypatch, *names):
    """Count calls to zendo.relations' predicate functions while a test asks a koan's facts."""
    import zendo.relations as rel

    calls = {n: 0 for n in names}
    for n in names:
        real = getattr(rel, n)

        def counted(*a, _n=n, _real=real, **k):
            calls[_n] += 1
            return _real(*a, **k)
        monkeypatch.setattr(rel, n, counted)
    return calls


def _pointing_koan():
    from zendo.build import flat, upright
    from helpers import S, facts_of

    return facts_of(flat(S("a", "red", "small"), (0, 0), heading=0), upright(S("b", "blue", "large"), (60, 0)),
                    upright(S("c", "green", "medium"), (0, 70)))


def test_a_rule_that_reads_colours_works_out_no_ray_tower_or_touch(monkeypatch):
    """Marking a camera's koan asks the rule about dozens of alternative koans: a colour rule
    must not pay for the geometry it never reads."""
    calls = _counting(monkeypatch, "pointing", "stacked", "nested", "touching")
    f = _pointing_koan()
    assert parse_rule("it contains at least one red piece").evaluate(f)
    assert f.orientation("b") == "upright" and f.grounded("a")
    assert calls == {"pointing": 0, "stacked": 0, "nested": 0, "touching": 0}
    assert f.points_at("a", "b")
    assert calls["pointing"] == 3 and calls["touching"] == 0  # one ray per piece, and nothing else


def test_a_koans_facts_read_whole_are_every_predicate_in_one_order(monkeypatch):
    f = _pointing_koan()
    names = [k[0] for k in f.predicates]
    assert names[:6] == ["orientation", "grounded"] * 3
    groups = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
    assert groups[-1] == "pointing" and groups.index("nested") < groups.index("touching") < groups.index("pointing")
    assert f.predicates == dict(f.predicates) and len(f.predicates) == len(names)
    assert ("pointing", "a", "b") in f.predicates and f.predicates[("pointing", "a", "b")].value


def test_a_close_call_decided_the_other_way_works_out_only_what_the_rule_reads(monkeypatch):
    """A doubt's alternative is asked whether one close call flipped would change its mark
    (zendo.rules.marking): flipping a call, and finding the close ones of the names a rule reads,
    must leave the rays, towers and touches of a rule that reads none of them unworked."""
    calls = _counting(monkeypatch, "pointing", "stacked", "nested", "touching")
    f = _pointing_koan()
    grounded = f.predicate("grounded", "a")
    flipped = f.flipped([grounded.key])
    assert not flipped.grounded("a") and f.grounded("a") and flipped.grounded("b")
    close = f.borderline(band={"mm": 1.0, "deg": 0.0}, names=["grounded"])  # each 0.5 mm inside the line
    assert [p.args for p in close] == [("a",), ("b",), ("c",)] and grounded in close
    assert calls == {"pointing": 0, "stacked": 0, "nested": 0, "touching": 0}
    assert flipped.points_at("a", "b") and calls["pointing"] == 3
    assert dict(flipped.predicates)[grounded.key].value is False and len(flipped.predicates) == len(f.predicates)
