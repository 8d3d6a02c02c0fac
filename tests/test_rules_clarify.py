"""Clauses 3 and 4: "mu" (every complete reading listed) and illegal rules (the restriction broken)."""
from __future__ import annotations

import pytest

from zendo.rules.samples import row
from zendo.rules import RuleAmbiguous, RuleIllegal, mark, parse_rule

AMBIGUOUS = {
    "A koan has the Buddha-nature if all its red pieces are upright": 2,
    "A koan has the Buddha-nature if all of its pieces are pointing in the same direction": 2,
    "A koan has the Buddha-nature if its largest piece is green": 3,
    "the largest piece is red": 3,
    "the majority of its pieces are red": 2,
    "it contains a plurality of blue pieces": 2,
    "it contains two upright pieces": 2,
    "the red piece is upright": 4,
    "todas sus piezas rojas son verticales": 2,
    "la pieza más grande es roja": 3,
}


@pytest.mark.parametrize("text,n", AMBIGUOUS.items())
def test_clause3_mu_lists_every_reading_each_unambiguous(text, n):
    with pytest.raises(RuleAmbiguous) as e:
        parse_rule(text)
    readings = e.value.readings
    assert len(readings) == n == len(set(readings))
    rules = [parse_rule(r) for r in readings]  # each parses, no further question
    assert [r.canonical() for r in rules] == readings
    assert len(set(rules)) == n


def test_clause3_natural_and_western_readings_mark_an_empty_referent_differently():
    with pytest.raises(RuleAmbiguous) as e:
        parse_rule("A koan has the Buddha-nature if all its red pieces are upright")
    natural, western = (parse_rule(r) for r in e.value.readings)
    no_red = row(("blue", "small"))
    assert mark(natural, no_red).mark == "black" and mark(western, no_red).mark == "white"


def test_clause3_any_vs_all_of_the_largest_pieces():
    with pytest.raises(RuleAmbiguous) as e:
        parse_rule("its largest piece is green")
    all_, any_, unique = (parse_rule(r) for r in e.value.readings)
    two_largest = row(("green", "large"), ("red", "large"))
    assert (all_.evaluate(two_largest), any_.evaluate(two_largest), unique.evaluate(two_largest)) == (False, True, False)


def test_clause3_single_piece_direction_readings():
    with pytest.raises(RuleAmbiguous) as e:
        parse_rule("all its pieces point in the same direction")
    natural, western = (parse_rule(r) for r in e.value.readings)
    one = row(("red", "small"))
    assert not natural.evaluate(one) and western.evaluate(one)


def test_clause3_unambiguous_wordings_are_not_questioned():
    parse_rule("all its pieces are the same colour")
    parse_rule("all its largest pieces are red")
    parse_rule("it contains at least one red piece and they are all upright")
    parse_rule("all its red pieces, if any, are upright")
    parse_rule("more than half of its pieces are red")


ILLEGAL = {
    "A koan has the Buddha-nature if it contains a piece pointing at a player": "players",
    "it contains a piece pointing at me": "players",
    "it contains a piece pointing north": "absolute direction",
    "it contains a piece pointing toward the window": "absolute direction",
    "it contains the same number of pieces as any other koan on the table": "other koans",
    "it contains more pieces than the previous koan": "other koans",
    "it contains a piece that was placed first": "time",
    "it contains a piece which used to be red": "time",
    "it contains a piece touching a marking stone": "stones",
    "it contains a piece touching the edge of the table": "table",
    "it contains a piece on the pattern of the tablecloth": "table",
    "contiene una pieza apuntando a un jugador": "players",
    "contiene una pieza que toca una piedra": "stones",
}


@pytest.mark.parametrize("text,name", ILLEGAL.items())
def test_clause4_illegal_rules_are_refused_with_the_restriction(text, name):
    with pytest.raises(RuleIllegal) as e:
        parse_rule(text)
    assert e.value.name == name
    assert "You may not" in e.value.restriction or "may not" in e.value.restriction.lower() \
        or "no puede" in e.value.restriction.lower() or "no están" in e.value.restriction


def test_clause4_restriction_is_in_the_seeds_words():
    seed = open("/work/shared/seeds/000_7f7a9f3898eff0e9.txt", encoding="utf-8").read() \
        if __import__("os").path.exists("/work/shared/seeds/000_7f7a9f3898eff0e9.txt") else None
    with pytest.raises(RuleIllegal) as e:
        parse_rule("it contains a piece touching a marking stone")
    assert e.value.restriction.startswith("No References to Stones")
    if seed is not None:
        body = e.value.restriction.split(": ", 1)[1]
        assert body in seed


def test_clause4_touching_the_table_is_legal():
    parse_rule("it contains exactly three pieces touching the table")
