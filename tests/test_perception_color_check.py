"""Issue 6, items 3 and 7: each piece's colour read again from its own pixels once the poses are
final (vision/color_check.py). The crop classifier reads a window round the box, which beside a
larger neighbour is mostly the neighbour; the colour model reads the piece's own pixels."""
from __future__ import annotations

from dataclasses import replace

import pytest
from perception_helpers import render_table

from zendo.build import Spec, upright


@pytest.fixture(scope="module")
def small_beside_large():
    """A blue small standing 8 mm from a green large, perceived exactly (the truth's poses)."""
    from calibration.plane import height_map
    from vision.colors import FrameColors, load_color_reader
    from vision.detect import Detections
    from vision.pipeline import Pipeline
    from zendo.scene import Scene

    small = upright(Spec("a", "blue", "small"), (0.0, 0.0), 0)
    large = upright(Spec("b", "green", "large"), (14.3 / 2 + 25.4 / 2 + 8.0, 0.0), 0)
    r, frame, cal = render_table([small, large])
    heights = height_map(frame, cal)
    project = Pipeline(detector=lambda rgb: Detections.empty(), calibration=cal, classifier=None).projector(frame.intrinsics)
    colors = FrameColors(load_color_reader(), frame.color, heights)
    return Scene((small, large)), heights, project, colors


def _fits(scene, small_read_as: str):
    from vision.pose import PieceFit

    small, large = scene.pieces
    return [PieceFit(replace(small, color=small_read_as), 1.0, 100, 0.0, "upright", 0.9, 0),
            PieceFit(large, 1.0, 300, 0.0, "upright", 0.9, 1)]


def _verdicts(small_class: str, p: float):
    from vision.classes import CLASS_ID
    from vision.classify import Verdict

    return [Verdict(CLASS_ID[small_class], p, CLASS_ID["blue_small"], 1.0 - p),
            Verdict(CLASS_ID["green_large"], 0.99, CLASS_ID["green_medium"], 0.01)]


def _checked(small_beside_large, read_as: str, p: float, verdicts=True):
    from vision.color_check import check_colors

    scene, heights, project, colors = small_beside_large
    fits = _fits(scene, read_as)
    seen = replace(scene, pieces=tuple(f.piece for f in fits))
    return check_colors(seen, fits, _verdicts(f"{read_as}_small", p) if verdicts else None, heights, project, colors)


def test_a_piece_read_in_its_neighbours_colour_by_an_unsure_classifier_takes_its_own_pixels_colour(small_beside_large):
    scene, fits, doubts = _checked(small_beside_large, "green", 0.6)
    assert [(p.id, p.color) for p in scene.pieces] == [("a", "blue"), ("b", "green")]
    assert [f.piece.color for f in fits] == ["blue", "green"]
    assert doubts == []  # the classifier's reading stays a class doubt through its verdict


def test_a_sure_classifier_keeps_its_colour_and_the_pixels_reading_is_a_class_doubt(small_beside_large):
    scene, fits, doubts = _checked(small_beside_large, "green", 0.95)
    assert [p.color for p in scene.pieces] == ["green", "green"]
    assert [(d["kind"], d["piece"], d["color"], d["size"]) for d in doubts] == [("class", "a", "blue", "small")]


def test_a_piece_whose_own_pixels_agree_is_left_alone(small_beside_large):
    scene, fits, doubts = _checked(small_beside_large, "blue", 0.6)
    assert [p.color for p in scene.pieces] == ["blue", "green"] and doubts == []


def test_a_piece_no_classifier_verdict_stands_behind_is_not_read_again(small_beside_large):
    """A tower's lower piece or a nested one took its colour from its stage's own pixels."""
    scene, fits, doubts = _checked(small_beside_large, "green", 0.6, verdicts=False)
    assert [p.color for p in scene.pieces] == ["green", "green"] and doubts == []


def test_a_pieces_own_pixels_are_on_its_solid_and_clear_of_its_neighbour(small_beside_large):
    from vision.color_check import CLEAR_MM, OWN_MM, own_pixels
    from vision.pose import signed_distances

    scene, (table_pts, valid), project, _ = small_beside_large
    small, large = scene.pieces
    up = valid & (table_pts[..., 2] > 1.5)
    rows, cols = own_pixels(small, [large], table_pts, up, project)
    alone_rows, _ = own_pixels(small, [], table_pts, up, project)
    assert 30 < len(rows) <= len(alone_rows)
    pts = table_pts[rows, cols].astype(float)
    assert (signed_distances(small, pts) < OWN_MM).all()
    assert (signed_distances(small, pts) < signed_distances(large, pts) - CLEAR_MM).all()


def test_a_piece_whose_picture_and_own_pixels_read_two_colours_may_be_a_tower_of_its_size():
    """Fresh 411224 and 410649: towers of three smalls read as one small (the fit a few mm off
    the axis, so the tower stage's depth test saw through 0.4-0.5 of any tower there); the crop
    read blue (0.9), the piece's own pixels green (0.99): the class doubt alone offered only the
    one piece recoloured, and "two or more upright pieces", "touching" and the colour rules were
    marked wrong with no flag."""
    from vision.color_check import TOWER_READ_P, two_colours_doubt
    from vision.colors import ColorReading
    from zendo.build import flat
    from zendo.doubts import describe
    from zendo.relations import RelationsConfig, koan_facts
    from zendo.rules import mark_perceived, parse_rule

    small = upright(Spec("a", "blue", "small"), (0.0, 0.0), 0)
    green = ColorReading("green", 0.986, "blue", 0.01)
    (d,) = two_colours_doubt(small, 0.899, green, [])
    assert d == {"kind": "stacked", "piece": "a", "where": "on", "why": "colours"}
    assert describe(d) == "another piece of a's size may be stacked on it: its picture and its own pixels read two colours"
    facts = lambda ps: koan_facts("k", list(ps), RelationsConfig())
    m = mark_perceived(parse_rule("it contains two or more upright pieces"), facts([small]), [small], [d], facts)
    assert m.mark == "black" and m.judgment_call
    assert two_colours_doubt(small, TOWER_READ_P - 0.1, green, []) == []  # the crop is unsure of its colour
    assert two_colours_doubt(small, 0.899, replace(green, p=TOWER_READ_P - 0.1), []) == []  # the pixels are
    assert two_colours_doubt(small, 0.899, replace(green, color="blue"), []) == []  # they agree
    lying = flat(Spec("a", "blue", "small"), (0.0, 0.0), 0)
    assert two_colours_doubt(lying, 0.899, green, []) == []  # only an upright piece stacks so
    blue_beside = upright(Spec("b", "blue", "large"), (30.0, 0.0), 0)
    assert two_colours_doubt(small, 0.899, green, [blue_beside]) == []  # the crop read the neighbour


def test_a_piece_read_black_under_the_rim_of_the_piece_on_it_may_be_any_colour():
    """Fresh 434930: green, blue and yellow larges one on another, read as a black large (the
    blue's 50 px band, read black 0.99) with the yellow on it and the green unseen. Under a rim
    any colour darkens to black, so the piece may be any other colour, and such a doubt is
    taken together with a piece another doubt adds: "at least one green piece and at least one
    blue piece" is a judgment call, naming both."""
    from vision.color_check import DOUBT_P, shade_doubts
    from vision.colors import ColorReading
    from zendo.build import tower
    from zendo.doubts import describe
    from zendo.relations import RelationsConfig, koan_facts
    from zendo.rules import mark_perceived, parse_rule

    lower, upper = tower([Spec("a", "black", "large"), Spec("b", "yellow", "large")])
    black = ColorReading("black", 0.99, "blue", 0.005)
    doubts = shade_doubts(lower, black, [upper])
    assert sorted(d["color"] for d in doubts) == ["blue", "green", "red", "yellow"]
    assert all(d["why"] == "shade" and d["size"] == "large" and d["piece"] == "a" for d in doubts)
    assert describe(doubts[0]).endswith("it was read black in the shadow of the piece on it")
    assert shade_doubts(upper, black, [lower]) == []  # nothing rests on the top piece
    assert shade_doubts(lower, replace(black, color="blue"), [upper]) == []  # read in a colour
    assert shade_doubts(lower, replace(black, p=DOUBT_P - 0.1), [upper]) == []  # hardly read at all
    assert shade_doubts(replace(lower, color="yellow"), black, [upper])[0]["color"] != "yellow"  # the crop's stays its own
    held = {"kind": "held", "piece": "a", "height_mm": 4.1}  # the fit floats: a piece may stand under it
    facts = lambda ps: koan_facts("k", list(ps), RelationsConfig())
    rule = parse_rule("it contains at least one green piece and at least one blue piece")
    koan = [lower, upper]
    for alone in ([held], doubts):
        assert not mark_perceived(rule, facts(koan), koan, alone, facts).judgment_call
    m = mark_perceived(rule, facts(koan), koan, [held, *doubts], facts)
    assert m.mark == "black" and m.judgment_call and {d["kind"] for d in m.doubts} == {"class", "held"}
