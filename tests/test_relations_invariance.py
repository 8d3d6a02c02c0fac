"""The rulebook's test of a fair rule: "rotating any individual koan, or even moving it into another
room, should not cause its status to change". No relation may change when a whole koan moves."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from zendo.build import (
    beside, flat, flat_across, lean_against, lying_tower, nested_lying, pointing_at, tower, turn, translate, upright,
)
from zendo.relations import koan_facts
from helpers import S

SIZES = ["small", "medium", "large"]
COLORS = ["red", "yellow", "green", "blue"]


@st.composite
def koans(draw):
    c = lambda: draw(st.sampled_from(COLORS))  # noqa: E731
    z = lambda: draw(st.sampled_from(SIZES))  # noqa: E731
    kind = draw(st.sampled_from(["tower", "pointing", "lean", "across", "nested", "lying", "beside", "mixed"]))
    h = draw(st.floats(0, 360))
    if kind == "tower":
        return tower([S(f"p{i}", c(), z()) for i in range(draw(st.integers(1, 4)))], yaw=h)
    if kind == "pointing":
        t = upright(S("t", c(), z()), (0, 0), yaw=h)
        return [t, pointing_at(t, S("p", c(), z()), distance=draw(st.floats(22, 40)), from_heading=h)]
    if kind == "lean":
        t = upright(S("t", c(), "large"))
        return [t, lean_against(t, S("l", c(), draw(st.sampled_from(["small", "medium"]))), from_heading=h)]
    if kind == "across":
        s1 = upright(S("s1", c(), "small"))
        s2 = upright(S("s2", c(), "small"), (0, 14))
        return [s1, s2, flat_across([s1, s2], S("top", c(), "large"), heading=90)]
    if kind == "nested":
        return nested_lying(S("o", c(), "large"), S("i", c(), draw(st.sampled_from(["small", "medium"]))), heading=h)
    if kind == "lying":
        size = z()
        return lying_tower([S("a", c(), size), S("b", c(), size)], heading=h)
    if kind == "beside":
        a = upright(S("a", c(), z()))
        return [a, beside(a, S("b", c(), z()), heading=draw(st.sampled_from([0, 90, 180, 270])), gap=draw(st.sampled_from([0.0, 2.0])))]
    a = flat(S("a", c(), z()), (0, 0), heading=h)
    b = upright(S("b", c(), z()), (45, 10))
    return [a, b] + tower([S("c", c(), z()), S("d", c(), z())], (-10, 50))


def signature(facts):
    """Every decision of a koan, with values only: what a rule could see."""
    return {k: p.value for k, p in facts.predicates.items() if abs(p.margin) > 1e-6}, facts.towers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(koans(), st.floats(0, 360), st.floats(-1000, 1000), st.floats(-1000, 1000))
def test_moving_or_turning_a_whole_koan_changes_none_of_its_relations(pieces, angle, dx, dy):
    before = koan_facts("k", pieces)
    moved = translate(turn(pieces, angle), dx, dy)
    after = koan_facts("k", moved)
    values_before, towers_before = signature(before)
    values_after, towers_after = signature(after)
    common = values_before.keys() & values_after.keys()
    assert {k: values_before[k] for k in common} == {k: values_after[k] for k in common}
    assert towers_before == towers_after
    for a in before.ids:
        assert before.pointed_at(a) == after.pointed_at(a)
        assert before.orientation(a) == after.orientation(a)
    # margins move by no more than rounding
    for k in common:
        assert np.isclose(before.predicates[k].margin, after.predicates[k].margin, atol=1e-3) or abs(before.predicates[k].margin) > 1e5
