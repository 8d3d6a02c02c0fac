"""zendo.game: a game of Zendo as events (seed 000: turns, Mondo, guesses, judgment calls, katsu)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from zendo.build import Spec, upright
from zendo.game import HAND_WINDOW_S, Event, Game, GameError
from zendo.scene import Scene

from server.testing import small_table

RED = "a koan has the buddha nature if it contains a red piece"
TOUCH = "a koan has the buddha nature if it contains at least one piece touching another piece"


def game_on(table: Scene | None = None, rule: str = RED) -> Game:
    g = Game("t")
    g.observe(table or small_table())
    g.set_rule(rule)
    return g


def started(rule: str = RED, players=("Ann", "Bob")) -> Game:
    g = game_on(rule=rule)
    for k in g.active_koans():
        g.mark(k.id)
    for p in players:
        g.join(p)
    g.start()
    return g


def with_koan(g: Game, *pieces) -> Scene:
    sc = small_table()
    return Scene(sc.pieces + tuple(pieces), sc.stones)


def test_the_audit_tells_which_close_calls_could_change_the_mark():
    touch_rule = {r["koan"]: r for r in game_on(rule=TOUCH).master_state()["audit"]}["k2"]
    red_rule = {r["koan"]: r for r in game_on(rule=RED).master_state()["audit"]}["k2"]
    touching = [b for b in touch_rule["borderline"] if b["predicate"] == "touching"]
    assert touching and all(b["changes_mark"] for b in touching)
    same_call = [b for b in red_rule["borderline"] if b["predicate"] == "touching"]
    assert same_call and not any(b["changes_mark"] for b in same_call)  # colour alone decides red


def test_observe_splits_the_table_into_koans_and_reads_stones():
    g = Game("t")
    g.observe(small_table())
    ks = g.active_koans()
    assert [k.id for k in ks] == ["k1", "k2"]
    assert set(ks[0].piece_ids) == {"r1", "y1"} and ks[0].stones_read == ["white"]
    assert ks[1].stones_read == []


def test_proposed_marks_and_the_judgment_call_are_for_the_master_only():
    g = game_on(rule=TOUCH)
    assert g.proposed("k2").mark == "white" and g.proposed("k2").judgment_call
    master = g.master_state()
    row = {r["koan"]: r for r in master["audit"]}["k2"]
    assert row["judgment_call"] and row["borderline"][0]["predicate"] == "touching"
    public = json.dumps(g.public_state())
    for secret in ("touching", "judgment", "borderline", "proposed", "Buddha", g.rule_text):
        assert secret not in public


def test_the_stone_read_against_the_rule_calls_out_a_mismarked_koan():
    g = game_on(rule=TOUCH)  # k1 carries a white stone, but the touching rule marks it black
    row = {r["koan"]: r for r in g.master_state()["audit"]}["k1"]
    assert any("mismarked on the table" in p for p in row["problems"])
    g.mark("k1", "white")  # the Master records the wrong mark
    row = {r["koan"]: r for r in g.master_state()["audit"]}["k1"]
    assert any(p.startswith("mismarked: recorded white") for p in row["problems"])
    g.mark("k1")  # ... and fixes it as soon as it is noticed
    assert g.koans["k1"].mark == "black"
    assert g.events[-1].data["correction"] is True


def test_start_needs_a_rule_and_marked_initial_koans():
    g = Game("t")
    g.observe(small_table())
    with pytest.raises(GameError, match="rule"):
        g.start()
    g.set_rule(RED)
    with pytest.raises(GameError, match="mark the initial koans"):
        g.start()


def test_turns_go_round_in_joining_order():
    g = started()
    assert g.turn == "Ann"
    with pytest.raises(GameError, match="not your turn"):
        g.end_turn("Bob")
    assert g.end_turn("Ann") == "Bob"
    assert g.end_turn() == "Ann"


def test_mondo_votes_stay_hidden_until_revealed_and_right_answers_win_a_stone():
    g = started()
    g.observe(with_koan(g, upright(Spec("n1", "red", "small"), (0.0, 120.0))))
    new = g.active_koans()[-1]
    assert new.built_by == "Ann" and new.mark is None
    g.start_mondo(new.id, "Ann")
    g.vote("Ann", "white")
    g.vote("Bob", "black")
    pub = g.public_state()
    assert pub["mondo"]["voted"] == ["Ann", "Bob"] and pub["mondo"]["votes"] is None
    assert "white" not in json.dumps(pub["mondo"]) and "black" not in json.dumps(pub["mondo"])
    out = g.reveal_mondo()
    assert out == {"mark": "white", "votes": {"Ann": "white", "Bob": "black"}, "awarded": ["Ann"]}
    assert g.players["Ann"].stones == 1 and g.players["Bob"].stones == 0
    assert g.koans[new.id].mark == "white"


def test_a_guess_is_read_clarified_and_checked_against_the_koans_before_it_is_official():
    g = started()
    g.players["Ann"].stones = 2  # as if won in Mondos
    with pytest.raises(GameError, match="guessing stone"):
        g.state_guess("Bob", "a koan has the buddha nature if it contains a blue piece")
    bad = g.state_guess("Ann", "contains a red")
    assert bad.status == "unclear" and bad.problem["kind"] == "syntax" and bad.problem["column"]
    amb = g.state_guess("Ann", "the largest piece is red")
    assert amb.status == "unclear" and len(amb.problem["readings"]) >= 2
    ill = g.state_guess("Ann", "a koan has the buddha nature if a piece is pointing at the player")
    assert ill.problem["kind"] == "illegal"
    no = g.state_guess("Ann", "a koan has the buddha nature if it contains a blue piece")
    assert no.status == "contradicted" and {"koan": "k2", "mark": "black", "guess_says": "white"} in no.contradicted_by
    with pytest.raises(GameError, match="contradicts"):
        g.make_official(no.id, "Ann")
    clar = g.state_guess("Ann", "the largest piece is red", reading=amb.problem["readings"][1])
    assert clar.status == "ready"
    assert g.players["Ann"].stones == 2  # nothing spent before it is official
    g.make_official(clar.id, "Ann")
    assert g.players["Ann"].stones == 1


def test_counterexample_disproves_and_an_undisprovable_guess_wins():
    g = started()
    g.players["Ann"].stones = 2
    wrong = g.state_guess("Ann", "a koan has the buddha nature if it contains a large piece")
    # k2 (medium blue, small green) is black and has no large piece: consistent; k1 white, has one
    assert wrong.status == "ready", wrong.contradicted_by
    g.make_official(wrong.id, "Ann")
    suggestion = g.suggest_counterexample(wrong.id, small_table())
    assert suggestion["found"] and suggestion["rule_mark"] != suggestion["guess_mark"]
    assert any(e.type == "counterexample_suggested" and not e.public for e in g.events)
    g.observe(with_koan(g, upright(Spec("n1", "red", "small"), (0.0, 120.0))))
    kid = g.active_koans()[-1].id
    g.mark(kid)
    g.disprove(wrong.id, kid)
    assert g.guess(wrong.id).status == "disproved" and g.koans[kid].counterexample_for == wrong.id
    right = g.state_guess("Ann", RED)
    g.make_official(right.id, "Ann")
    g.declare_won(right.id)
    pub = g.public_state()
    assert pub["phase"] == "finished" and pub["winner"] == "Ann" and pub["rule"]["text"] == RED
    with pytest.raises(GameError, match="over"):
        g.state_guess("Bob", RED)


def test_answers_keep_to_the_masters_rulings_and_never_say_borderline():
    g = game_on(rule=TOUCH)
    a = g.ask("Ann", "touching", "b1", "g1")  # 0.3 mm apart: borderline, decided "touching"
    b = g.ask("Ann", "touching", "r1", "y1")  # clear
    assert a["answer"].startswith("Yes") and "borderline" not in a["answer"].lower()
    assert b["answer"].startswith(("Yes", "No"))
    # the answer pinned the value; a later ruling the other way is the Master's to make, and then answers follow it
    assert g.rulings["k2"][("touching", "b1", "g1")] is True
    g.rule_on("k2", ["touching", "b1", "g1"], False)
    assert g.ask("Ann", "touching", "b1", "g1")["answer"].startswith("No")
    assert g.proposed("k2").mark == "black"
    # the same kind of event, public part alike, whether or not the question was borderline
    qa, qb = [e for e in g.events if e.type == "question"][:2]
    assert qa.public and qb.public and set(qa.data) == set(qb.data)


def test_questions_about_pieces_in_different_koans_or_the_same_piece():
    g = game_on()
    assert "different koans" in g.ask(None, "touching", "r1", "b1")["answer"]
    with pytest.raises(GameError, match="two different"):
        g.ask(None, "touching", "r1", "r1")
    with pytest.raises(GameError, match="not part of any koan"):
        g.ask(None, "grounded", "nope")
    assert "r1" in g.ask(None, "pointing_which", "y1")["answer"]


def test_katsu_on_a_marked_koan_and_its_restoring():
    g = started()
    sc = small_table()
    red = sc.piece("r1")
    knocked = replace(red, position=(red.position[0] + 9.0, red.position[1] + 4.0, 0.0))
    g.observe(sc.with_pieces(knocked if p.id == "r1" else p for p in sc.pieces))
    k = g.open_katsu("k1")
    assert k is not None and k.before[0]["id"] in {"r1", "y1"}
    assert g.public_state()["katsu"] == [{"id": k.id, "koan": "k1", "open": True}]
    g.observe(sc)  # the Master puts it back
    assert g.open_katsu("k1") is None and g.katsu[-1].how == "restored"


def _camera(scene: Scene, hands=(), held=()) -> Scene:
    """The scene as a camera's tracked table gives it: a perception block, with hands' footprints."""
    return replace(scene, extra={"perception": {"doubts": [], "hands": [list(map(list, h)) for h in hands],
                                                "held": list(held)}})


def _square(x: float, y: float, half: float = 40.0):
    return [(x - half, y - half), (x + half, y - half), (x + half, y + half), (x - half, y + half)]


def _knocked(sc: Scene) -> Scene:
    red = sc.piece("r1")
    knocked = replace(red, position=(red.position[0] + 9.0, red.position[1] + 4.0, 0.0))
    return sc.with_pieces(knocked if p.id == "r1" else p for p in sc.pieces)


def _camera_game(clock):
    g = Game("t", clock=lambda: clock[0])
    g.observe(_camera(small_table()))
    g.set_rule(RED)
    for k in g.active_koans():
        g.mark(k.id)
    return g


def test_a_marked_koan_a_camera_reads_changed_with_no_hand_near_is_told_to_the_master_alone():
    """Nothing but a hand moves a piece: on a still table a change is the camera's own reading (a
    piece read late, or dropped), so no one calls katsu; the Master sees it and may."""
    clock = [100.0]
    g = _camera_game(clock)
    (ev,) = [e for e in g.observe(_camera(_knocked(small_table()))) if e.type == "katsu"]
    assert not ev.public and g.public_state()["katsu"] == []
    (k,) = g.master_state()["katsu_detail"]
    assert k["open"] and k["koan"] == "k1" and k["public"] is False
    restored = [e for e in g.observe(_camera(small_table())) if e.type == "katsu_resolved"]
    assert g.open_katsu("k1") is None and [e.public for e in restored] == [False]  # it clears as quietly


def test_katsu_is_called_to_everyone_where_a_hand_came_near_the_koan_just_before():
    clock = [100.0]
    g = _camera_game(clock)
    g.observe(_camera(small_table(), hands=[_square(-60.0, 90.0)]))  # over the table, 50 mm from k1's red
    clock[0] += HAND_WINDOW_S - 1.0  # the hand has gone; the tracker shows the change since
    (ev,) = [e for e in g.observe(_camera(_knocked(small_table()))) if e.type == "katsu"]
    assert ev.public and g.public_state()["katsu"] == [{"id": ev.data["katsu"], "koan": "k1", "open": True}]


def test_a_hand_holding_a_koans_piece_is_near_it():
    clock = [100.0]
    g = _camera_game(clock)
    g.observe(_camera(small_table(), held=["y1"]))
    assert [e.public for e in g.observe(_camera(_knocked(small_table()))) if e.type == "katsu"] == [True]


@pytest.mark.parametrize("where, later", [((-60.0, 200.0), 0.5), ((-60.0, 90.0), HAND_WINDOW_S + 0.5)],
                         ids=["a hand far off", "a hand long gone"])
def test_a_hand_far_from_the_koan_or_long_gone_calls_no_katsu(where, later):
    clock = [100.0]
    g = _camera_game(clock)
    g.observe(_camera(small_table(), hands=[_square(*where)]))
    clock[0] += later
    assert [e.public for e in g.observe(_camera(_knocked(small_table()))) if e.type == "katsu"] == [False]


def test_a_masters_notice_a_hand_then_changes_further_is_called_as_katsu():
    clock = [100.0]
    g = _camera_game(clock)
    g.observe(_camera(_knocked(small_table())))  # the Master's alone
    sc = small_table()
    gone = Scene(tuple(p for p in _knocked(sc).pieces if p.id != "y1"), sc.stones)
    g.observe(_camera(gone, hands=[_square(-60.0, 30.0)]))
    assert g.public_state()["katsu"] and g.master_state()["katsu_detail"][0]["public"] is True
    assert Game.replay([e.to_dict() for e in g.events]).public_state()["katsu"] == g.public_state()["katsu"]


@pytest.mark.parametrize("ago, called", [(2.0, True), (HAND_WINDOW_S + 1.0, False)])
def test_a_hand_the_feed_read_between_two_looks_of_the_game_counts_when_it_was_read(ago, called):
    """The game looks at the table when a page asks; the feed hands on what it read meanwhile."""
    clock = [100.0]
    g = _camera_game(clock)
    seen = [{"at": clock[0] - ago, "hands": [_square(-60.0, 90.0)], "held": []}]
    knocked = _camera(_knocked(small_table()))
    knocked.extra["perception"]["hands_seen"] = seen
    assert [e.public for e in g.observe(knocked) if e.type == "katsu"] == [called]


def test_the_master_who_looked_calls_katsu_on_a_change_told_to_them_alone():
    clock = [100.0]
    g = _camera_game(clock)
    g.observe(_camera(_knocked(small_table())))
    (k,) = g.master_state()["katsu_detail"]
    g.katsu_call(k["id"])
    assert g.public_state()["katsu"] == [{"id": k["id"], "koan": "k1", "open": True}] and g.events[-1].public
    with pytest.raises(GameError, match="called already"):
        g.katsu_call(k["id"])


def test_moving_a_whole_koan_is_not_katsu():
    from zendo.build import translate, turn

    g = started()
    sc = small_table()
    k1 = [p for p in sc.pieces if p.id in ("r1", "y1")]
    moved = turn(translate(k1, 5.0, 40.0), 30.0, about=(-55.0, 40.0))
    g.observe(Scene(tuple(moved) + tuple(p for p in sc.pieces if p.id not in ("r1", "y1")), sc.stones))
    assert g.open_katsu("k1") is None
    assert g.events[-1].type in ("koan_moved", "stones_read")


def test_an_unmarked_koan_may_change_freely_and_a_broken_down_koan_leaves():
    g = started()
    sc = small_table()
    n1 = upright(Spec("n1", "red", "small"), (0.0, 120.0))
    g.observe(Scene(sc.pieces + (n1,), sc.stones))
    kid = g.active_koans()[-1].id
    n2 = upright(Spec("n2", "blue", "small"), (20.0, 120.0))
    g.observe(Scene(sc.pieces + (n1, n2), sc.stones))
    assert set(g.koans[kid].piece_ids) == {"n1", "n2"} and not g.katsu
    g.observe(sc)
    assert not g.koans[kid].active


def test_replay_rebuilds_the_same_state_from_events():
    g = started()
    g.ask("Ann", "touching", "b1", "g1")
    events = [e.to_dict() for e in g.events]
    again = Game.replay(json.loads(json.dumps(events)), "t", g.referee)
    assert again.public_state() == g.public_state()
    assert again.rulings == g.rulings
    assert Event.from_dict(events[0]) == g.events[0]


def test_the_public_version_moves_only_on_public_events():
    g = game_on(rule=TOUCH)
    v = g.public_state()["version"]
    g.rule_on("k2", ["touching", "b1", "g1"], False)
    assert g.public_state()["version"] == v
    assert g.master_state()["version"] == len(g.events)


def test_names_and_texts_are_limited_and_cleaned():
    g = game_on()
    with pytest.raises(GameError, match="empty"):
        g.join("   ")
    with pytest.raises(GameError, match="too long"):
        g.join("x" * 41)
    assert g.join("  Ann   Lee ").name == "Ann Lee"
