"""One test per clause of the rulebook's TERMINOLOGY section (seed 001), on hand-built koans."""
import numpy as np
import pytest

from zendo.build import (
    beside, flat, flat_across, lean_against, lying_tower, nested_lying, pointing_at, tower, translate, upright,
)
from zendo.facts import DEFAULT_BAND
from zendo.relations import RelationsConfig
from helpers import S, facts_of


# ---------------------------------------------------------------- colour, size, pips

def test_colour_size_and_pips_are_the_pieces_own():
    f = facts_of(upright(S("a", "green", "medium")), upright(S("b", "blue", "small"), (40, 0)))
    assert (f.color("a"), f.size("a"), f.pips("a")) == ("green", "medium", 2)
    assert (f.color("b"), f.size("b"), f.pips("b")) == ("blue", "small", 1)


# ---------------------------------------------------------------- orientation

def test_a_piece_pointing_straight_up_is_upright():
    assert facts_of(upright(S("a"))).orientation("a") == "upright"


def test_a_piece_on_its_triangular_side_is_flat():
    assert facts_of(flat(S("a"), heading=37)).orientation("a") == "flat"


def test_a_piece_leaning_against_another_is_weird():
    base = upright(S("a"))
    f = facts_of(base, lean_against(base, S("b", "blue", "medium")))
    assert f.orientation("b") == "weird"


def test_a_piece_lying_nested_inside_another_is_still_flat():
    outer, inner = nested_lying(S("a"), S("b", "blue", "small"))
    f = facts_of(outer, inner)
    assert f.orientation("b") == "flat" and not f.grounded("b")


def test_a_piece_lying_across_the_tips_of_upright_pieces_is_still_flat():
    s1, s2 = upright(S("s1", "blue", "small")), upright(S("s2", "blue", "small"), (0, 14))
    f = facts_of(s1, s2, flat_across([s1, s2], S("top", "yellow"), heading=90))
    assert f.orientation("top") == "flat"


def test_upright_flat_and_weird_are_mutually_exclusive():
    base = upright(S("a"))
    f = facts_of(base, lean_against(base, S("b", "blue", "medium")), flat(S("c", "green"), (-60, 0)))
    assert sorted(f.orientation(p) for p in "abc") == ["flat", "upright", "weird"]


# ---------------------------------------------------------------- grounded

def test_a_piece_touching_the_playing_surface_is_grounded():
    assert facts_of(upright(S("a"))).grounded("a")


def test_the_upper_pieces_of_a_tower_are_ungrounded():
    f = facts_of(tower([S("a"), S("b", "blue"), S("c", "green")]))
    assert [f.grounded(p) for p in "abc"] == [True, False, False]


def test_grounded_is_independent_of_orientation():
    s1, s2 = upright(S("s1", "blue", "small")), upright(S("s2", "blue", "small"), (0, 14))
    f = facts_of(s1, s2, flat_across([s1, s2], S("top", "yellow"), heading=90), flat(S("low", "green"), (60, 0)))
    assert f.orientation("top") == f.orientation("low") == "flat"
    assert not f.grounded("top") and f.grounded("low")


# ---------------------------------------------------------------- touching

def test_pieces_side_by_side_are_touching():
    a = upright(S("a"))
    assert facts_of(a, beside(a, S("b", "blue", "small"))).touching("a", "b")


def test_touching_is_symmetric():
    a = upright(S("a"))
    f = facts_of(a, beside(a, S("b", "blue", "small")))
    assert f.touching("a", "b") and f.touching("b", "a")


def test_pieces_two_millimetres_apart_are_not_touching():
    a = upright(S("a"))
    f = facts_of(a, beside(a, S("b", "blue"), gap=2.0))
    assert not f.touching("a", "b")
    assert f.borderline() == []


def test_a_gap_of_three_tenths_of_a_millimetre_is_a_borderline_touch():
    a = upright(S("a"))
    f = facts_of(a, beside(a, S("b", "blue"), gap=0.3))
    p = f.predicate("touching", "a", "b")
    assert p.is_borderline(DEFAULT_BAND) and p.unit == "mm"
    assert p.margin == pytest.approx(0.5 - 0.3, abs=0.02)


def test_stacked_pieces_touch():
    f = facts_of(tower([S("a"), S("b", "blue")]))
    assert f.touching("a", "b")


# ---------------------------------------------------------------- pointing

def test_a_flat_pieces_ray_skims_the_table_to_the_piece_ahead():
    target = upright(S("t", "blue"))
    f = facts_of(target, pointing_at(target, S("p", "red", "small"), distance=30))
    assert f.pointed_at("p") == ["t"]


def test_a_skimming_ray_meets_a_piece_in_the_plane_of_its_base():
    target = upright(S("t", "blue"))
    f = facts_of(target, pointing_at(target, S("p", "red", "small"), distance=30))
    assert f.predicate("pointing", "p", "t").margin > 5  # crossed well inside the base square


def test_the_pointing_ray_passes_through_pieces_and_orders_them_first_second():
    near = upright(S("near", "blue", "small"), (0, 0))
    far = upright(S("far", "green", "small"), (-30, 0))
    f = facts_of(near, far, pointing_at(near, S("p", "red", "small"), distance=25, from_heading=0))
    assert f.pointed_at("p") == ["near", "far"]


def test_an_upright_pieces_ray_goes_up_through_the_pieces_stacked_on_it():
    f = facts_of(tower([S("a"), S("b", "blue"), S("c", "green")]))
    assert f.pointed_at("a") == ["b", "c"]
    assert f.pointed_at("b") == ["c"]
    assert f.pointed_at("c") == []


def test_an_upright_piece_does_not_point_at_its_neighbour():
    a = upright(S("a"))
    f = facts_of(a, beside(a, S("b", "blue")))
    assert f.pointed_at("a") == [] and f.pointed_at("b") == []


def test_a_skimming_ray_passes_under_a_piece_raised_off_the_table():
    s1, s2 = upright(S("s1", "blue", "small")), upright(S("s2", "blue", "small"), (0, 14))
    top = flat_across([s1, s2], S("top", "yellow"), heading=90)
    # a flat piece to the side, pointing under the raised piece's overhang but between the supports
    probe = pointing_at(top, S("p", "green", "small"), distance=30, from_heading=180)
    f = facts_of(s1, s2, top, probe)
    assert "top" not in f.pointed_at("p")


def test_a_ray_that_misses_to_the_side_points_at_nothing():
    target = upright(S("t", "blue", "small"))
    p = pointing_at(target, S("p", "red", "small"), distance=30)
    (p,) = translate([p], 0, 12)  # slide the pointer sideways: the ray passes beside the target
    f = facts_of(target, p)
    assert f.pointed_at("p") == []
    assert f.predicate("pointing", "p", "t").margin < 0


def test_pointing_is_not_symmetric():
    target = upright(S("t", "blue"))
    f = facts_of(target, pointing_at(target, S("p", "red", "small"), distance=30))
    assert f.points_at("p", "t") and not f.points_at("t", "p")


def test_a_leaning_piece_points_at_the_piece_it_leans_on():
    base = upright(S("a"))
    f = facts_of(base, lean_against(base, S("b", "blue", "medium")))
    assert f.points_at("b", "a")


# ---------------------------------------------------------------- towers

def test_a_three_piece_tower_is_one_tower_not_two():
    f = facts_of(tower([S("a"), S("b", "blue"), S("c", "green")]))
    assert f.towers == [["a", "b", "c"]]


def test_towers_are_ordered_bottom_to_top():
    f = facts_of(tower([S("x", "green"), S("y", "blue"), S("z", "red")]))
    assert f.towers == [["x", "y", "z"]]


def test_single_pieces_are_towers_and_every_piece_is_in_exactly_one():
    f = facts_of(tower([S("a"), S("b", "blue")]), upright(S("c", "green"), (50, 0)), flat(S("d", "red", "small"), (-50, 0)))
    assert sorted(map(tuple, f.towers)) == [("a", "b"), ("c",), ("d",)]
    members = [p for t in f.towers for p in t]
    assert sorted(members) == ["a", "b", "c", "d"]


def test_a_tower_lying_on_its_side_is_still_a_tower():
    f = facts_of(lying_tower([S("a", "red", "medium"), S("b", "blue", "medium")], heading=40))
    assert f.towers == [["a", "b"]]
    assert f.orientation("b") == "flat"


def test_a_smaller_piece_on_a_larger_tip_is_a_tower():
    f = facts_of(tower([S("a", "red", "large"), S("b", "blue", "small")]))
    assert f.towers == [["a", "b"]]


def test_pieces_merely_touching_do_not_form_a_tower():
    a = upright(S("a"))
    f = facts_of(a, beside(a, S("b", "blue")))
    assert sorted(map(tuple, f.towers)) == [("a",), ("b",)]


# ---------------------------------------------------------------- nesting

def test_a_small_piece_covered_by_a_large_one_is_nested_not_touching_not_a_tower():
    f = facts_of(tower([S("small", "red", "small"), S("large", "blue", "large")]))
    assert f.nested_in("small", "large")
    assert not f.touching("small", "large")
    assert sorted(map(tuple, f.towers)) == [("large",), ("small",)]


def test_pieces_of_a_tower_are_not_nested_in_each_other():
    f = facts_of(tower([S("a"), S("b", "blue"), S("c", "green")]))
    assert not any(f.nested_in(i, o) for i in "abc" for o in "abc" if i != o)


# ---------------------------------------------------------------- height

def test_the_top_of_a_piece_is_its_height():
    f = facts_of(upright(S("a")), upright(S("b", "blue", "small"), (50, 0)))
    assert f.top("a") == pytest.approx(44.5) and f.top("b") == pytest.approx(25.4)


def test_highest_and_lowest_pieces():
    f = facts_of(tower([S("a"), S("b", "blue")]), upright(S("c", "green", "small"), (50, 0)))
    assert f.highest() == ["b"] and f.lowest() == ["c"]
    assert f.higher("a", "c") and not f.higher("c", "a")


def test_pieces_of_one_height_are_both_highest_and_lowest():
    f = facts_of(upright(S("a")), upright(S("b", "blue"), (50, 0)))
    assert f.highest() == ["a", "b"] and f.lowest() == ["a", "b"]
    assert f.same_height("a", "b")


# ---------------------------------------------------------------- direction

def test_upright_pieces_point_in_the_same_direction():
    f = facts_of(upright(S("a")), upright(S("b", "blue"), (50, 0), yaw=30))
    assert f.same_direction("a", "b") and not f.opposite_direction("a", "b")


def test_flat_pieces_facing_each_other_point_in_opposite_directions():
    f = facts_of(flat(S("a"), (0, 0), heading=0), flat(S("b", "blue"), (90, 0), heading=180))
    assert f.opposite_direction("a", "b") and not f.same_direction("a", "b")


def test_flat_pieces_at_right_angles_point_in_different_directions():
    f = facts_of(flat(S("a"), (0, 0), heading=0), flat(S("b", "blue"), (0, 60), heading=90))
    assert not f.same_direction("a", "b") and not f.opposite_direction("a", "b")


# ---------------------------------------------------------------- margins and the band

def test_every_predicate_carries_a_margin_in_mm_or_degrees():
    base = upright(S("d", "yellow"), (70, 0))
    f = facts_of(tower([S("a"), S("b", "blue")]), base, lean_against(base, S("c", "green", "medium"), from_heading=0))
    assert f.predicates
    for p in f.predicates.values():
        assert p.unit in ("mm", "deg") and np.isfinite(p.margin)
        assert (p.margin >= 0) == bool(p.value) or p.name == "orientation"


def test_the_judgment_band_is_configurable():
    a = upright(S("a"))
    b = beside(a, S("b", "blue"), gap=0.3)
    assert facts_of(a, b).borderline()
    assert facts_of(a, b, cfg=RelationsConfig(band={"mm": 0.1, "deg": 3.0})).borderline() == []


def test_a_ray_that_hits_the_table_bends_to_skim_along_it():
    from zendo.relations import RelationsConfig, pointing_ray

    s1, s2 = upright(S("s1", "blue", "small")), upright(S("s2", "blue", "small"), (14, 0))
    top = flat_across([s1, s2], S("top", "yellow"), heading=0)  # raised, its ray dipping to the table
    ray = pointing_ray(top, RelationsConfig())
    assert ray.skim_start is not None and ray.leg_length > 50
    ahead = ray.skim_start[:2] + ray.skim_direction[:2] * 25
    f = facts_of(s1, s2, top, upright(S("far", "green", "small"), tuple(ahead)))
    assert f.points_at("top", "far")
    assert f.predicate("pointing", "top", "far").order > ray.leg_length


def test_a_camera_judges_a_pointing_call_close_where_a_small_turn_of_the_pointer_would_change_it():
    """A lying piece's heading is read a few degrees off (a small's 2.7 at the median, 9 at the
    p90), and a target met far along the ray moves by more than the "mm" band: fresh 411686, a
    black small 7 degrees off "pointing" at a large 29 mm away, 4.9 mm clear, a mark wrong with
    no flag. Near the tip the "mm" band alone decides."""
    from zendo.build import turned_about_middle
    from zendo.facts import PERCEPTION_BAND

    cfg = RelationsConfig(band=dict(PERCEPTION_BAND))
    target = upright(S("t", "blue", "small"))
    for distance, aside, close in ((70.0, 10.2, True), (12.0, 11.7, False)):  # missing by 3 mm, by 4.5
        (p,) = translate([pointing_at(target, S("p", "red", "small"), distance=distance)], 0, aside)
        call = facts_of(target, p, cfg=cfg).predicate("pointing", "p", "t")
        assert not call.value and PERCEPTION_BAND["mm"] < -call.margin < 5.0
        turns = [facts_of(target, turned_about_middle(p, s * PERCEPTION_BAND["aim_deg"]), cfg=cfg)
                 .predicate("pointing", "p", "t").value for s in (-1, 1)]
        assert any(turns) is close
        assert call.is_borderline(cfg.band) is close
        assert not call.is_borderline(DEFAULT_BAND)
    up = facts_of(tower([S("a"), S("b", "blue")]), cfg=cfg).predicate("pointing", "a", "b")
    assert up.value and up.lever == 0.0  # an upright piece's ray goes straight up whichever way it is turned


def test_a_camera_judges_close_whether_an_upright_piece_points_at_a_piece_resting_on_its_tip():
    """Whether the ray up from a tip meets a piece resting on it or leaning on it turns on
    millimetres of both poses (the raised piece's heading, the upright one's place): over 2,460
    cached tables every one of the 28 such calls a camera made "pointing" was not so (fresh
    424840: a yellow small across two smalls' tips, fitted 110 degrees off, met 4.6 mm inside;
    in truth 2.5 mm clear). Met within TIP_REACH_MM of the tip, the band's "tip_mm" decides; a
    piece farther up is judged as any other."""
    import numpy as np

    from zendo.facts import PERCEPTION_BAND, TIP_REACH_MM

    cfg = RelationsConfig(band=dict(PERCEPTION_BAND))
    standing = upright(S("p", "blue", "small"))
    lift = float(standing.tip[2])

    def call(dx: float, above: float = 0.0):
        resting = flat(S("q", "red", "small"), (dx, 0.0), 0.0).moved(np.eye(3), [0.0, 0.0, lift + above])
        return facts_of(standing, resting, cfg=cfg).predicate("pointing", "p", "q")

    inside, clear, middle = call(-10.0), call(12.0), call(0.0)
    assert inside.value and PERCEPTION_BAND["mm"] < inside.margin < PERCEPTION_BAND["tip_mm"]
    assert not clear.value and PERCEPTION_BAND["mm"] < -clear.margin < PERCEPTION_BAND["tip_mm"]
    assert inside.order <= TIP_REACH_MM and clear.order <= TIP_REACH_MM
    assert inside.is_borderline(cfg.band) and clear.is_borderline(cfg.band)
    assert not inside.is_borderline(DEFAULT_BAND) and not clear.is_borderline(DEFAULT_BAND)
    assert middle.value and not middle.is_borderline(cfg.band)  # the tip well under it
    far_up = call(-10.0, above=30.0)
    assert far_up.value and far_up.order > TIP_REACH_MM and not far_up.is_borderline(cfg.band)


def test_a_camera_judges_close_a_pointing_call_that_a_small_lying_pieces_usual_heading_error_would_change():
    """A quarter of lying smalls are read more than 4.7 degrees off (tuning tables, after the
    heading stage), so a call a turn that size would change is close: fresh 423224, a black small
    "pointing" at a blue large 34 mm along the ray, 6.2 mm clear; 9 degrees off in truth."""
    import math

    from zendo.build import turned_about_middle
    from zendo.facts import PERCEPTION_BAND

    cfg = RelationsConfig(band=dict(PERCEPTION_BAND))
    target = upright(S("t", "blue", "large"))
    (p,) = translate([pointing_at(target, S("p", "black", "small"), distance=34.0)], 0, 18.0)
    call = facts_of(target, p, cfg=cfg).predicate("pointing", "p", "t")
    assert not call.value and 2.0 + call.lever * math.sin(math.radians(4.0)) < -call.margin
    assert any(facts_of(target, turned_about_middle(p, s * 4.7), cfg=cfg).predicate("pointing", "p", "t").value
               for s in (-1, 1))
    assert call.is_borderline(cfg.band)
