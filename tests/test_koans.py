"""Splitting a table into koans (20 mm apart, shell to shell) and giving stones to their koan."""
from zendo.build import beside, tower, upright
from zendo.koans import split_koans
from zendo.scene import Scene, Stone
from helpers import S


def test_pieces_within_twenty_millimetres_form_one_koan():
    a = upright(S("a"))
    b = beside(a, S("b", "blue"), gap=19.0)
    assert [k.piece_ids for k in split_koans(Scene((a, b)))] == [("a", "b")]


def test_pieces_further_than_twenty_millimetres_apart_are_separate_koans():
    a = upright(S("a"))
    b = beside(a, S("b", "blue"), gap=21.0)
    assert [k.piece_ids for k in split_koans(Scene((a, b)))] == [("a",), ("b",)]


def test_a_chain_of_close_pieces_is_one_koan():
    a = upright(S("a"))
    b = beside(a, S("b"), gap=15)
    c = beside(b, S("c"), gap=15)
    assert len(split_koans(Scene((a, b, c)))) == 1


def test_a_marking_stone_belongs_to_the_nearest_koan():
    pieces = tower([S("a"), S("b", "blue")], (0, 0)) + [upright(S("c", "green"), (200, 0))]
    stones = (Stone("w", "white", (30, 0, 0)), Stone("k", "black", (170, 5, 0)))
    koans = split_koans(Scene(tuple(pieces), stones))
    assert [(k.piece_ids, k.stone_ids) for k in koans] == [(("a", "b"), ("w",)), (("c",), ("k",))]


def test_koans_named_in_the_scene_keep_their_names():
    scene = Scene((upright(S("a")), upright(S("b"), (200, 0))), extra={"koans": [{"id": "first", "pieces": ["a"]}]})
    assert [k.id for k in split_koans(scene)] == ["first", "k2"]


def test_generated_koan_names_never_repeat_a_declared_name():
    scene = Scene((upright(S("a")), upright(S("b"), (200, 0)), upright(S("c"), (400, 0))),
                  extra={"koans": [{"id": "k1", "pieces": ["b"]}]})
    names = [k.id for k in split_koans(scene)]
    assert len(set(names)) == 3 and names[1] == "k1"
