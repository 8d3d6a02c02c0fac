"""QA pass on the dashboard: odd input from students. One test per bug found."""
from __future__ import annotations

from server.testing import JsonClient, make_app

RED = "a koan has the buddha nature if it contains a red piece"


def test_names_and_guesses_refuse_bidi_controls():
    """A right-to-left override (U+202E) in a name turned every line it was shown in around, on
    every student's phone ("Zoë ‮ evil's turn" read "Zoë nrut s'live"); the same for a guess."""
    app = make_app(RED)
    c = JsonClient(app)
    r = c.post("/join", {"name": "Zoë \u202eevil"})
    assert r.status_code == 400
    assert "U+202E" in r.get_json()["error"]
    assert c.get("/api/state").get_json()["players"] == []
    ok = c.post("/join", {"name": "Zoë 👩\u200d💻"})  # a joiner inside an emoji is fine
    assert ok.status_code == 200, ok.get_json()

    from zendo.game import GameError, _clean

    try:
        _clean("it contains a red piece\u2066", 500, "your guess")
    except GameError as exc:
        assert "U+2066" in str(exc)
    else:
        raise AssertionError("a guess with an isolate control was accepted")


def test_a_lone_surrogate_in_a_name_is_refused_and_pages_still_render():
    """'{"name": "ab\\ud800c"}' was accepted, and then the student's page could not be encoded (500)."""
    app = make_app(RED)
    c = JsonClient(app)
    r = c.client.post("/join", data='{"name": "ab\\ud800c"}',
                      headers={"Content-Type": "application/json", "X-CSRFToken": c.token})
    assert r.status_code == 400
    assert "U+D800" in r.get_json()["error"]
    assert c.get("/").status_code == 200
    assert c.get("/api/state").get_json()["players"] == []


def test_deeply_nested_json_is_a_400_not_a_500():
    app = make_app(RED)
    c = JsonClient(app)
    r = c.client.post("/join", data="[" * 60000,
                      headers={"Content-Type": "application/json", "X-CSRFToken": c.token})
    assert r.status_code == 400
    assert r.get_json() == {"error": "send a JSON object"}


def test_a_damaged_log_is_reported_as_unreadable_not_unwritable():
    """A game whose events no longer parse answered "the game log could not be written"."""
    from zendo.store import Store

    store = Store(":memory:")
    app = make_app(RED, STORE=store)
    gid = app.extensions["zendo"].game_id
    store.db.execute("UPDATE events SET data = '{bad' WHERE game = ?", (gid,))
    m = JsonClient(app).master()
    r = m.get(f"/master/replay/{gid}/events.json")
    assert r.status_code == 500
    assert "could not be read" in r.get_json()["error"]


def test_long_unbroken_names_wrap_instead_of_widening_the_phone_page():
    """A 40-letter name with no space made the students' page 674 px wide on a 390 px phone."""
    app = make_app(RED)
    css = app.test_client().get("/static/zendo.css").get_data(as_text=True)
    body_rule = next(line for line in css.split("}") if line.strip().startswith("body"))
    assert "overflow-wrap: anywhere" in body_rule
