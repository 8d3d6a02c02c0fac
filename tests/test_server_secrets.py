"""Nothing a student can reach carries the secret rule, a judgment call, or a mark not yet public.

Two checks: a crawl of every student route (pages, JSON, images, errors, the polled live state)
looking for the secret's words; and a differential check: two games with different secret rules
and different judgment calls, played the same way in public, must look byte-for-byte the same to
students.
"""
from __future__ import annotations

import re

from server.testing import JsonClient, make_app
from zendo.scene import Scene

TOUCH = "a koan has the buddha nature if it contains at least one piece touching another piece"
RED = "a koan has the buddha nature if it contains a red piece"
FORBIDDEN = ("judgment", "borderline", "ruling", "proposed", "witness", "secret", "margin", "rule_text",
             "canonical", "touching another piece", "at least one red piece")

#: Every student POST route, with a payload that exercises it. A new route must be added here.
POSTS = {
    "student.join": ("/join", {"name": "Cy"}),
    "student.leave": ("/leave", {}),
    "student.ask": ("/api/ask", {"kind": "touching", "a": "b1", "b": "g1"}),
    "student.build": ("/api/build", {"koan": "lone-blue-small"}),
    "student.call": ("/api/call", {"koan": "k1", "call": "master"}),
    "student.vote": ("/api/vote", {"vote": "white"}),
    "student.guess": ("/api/guess", {"text": "a koan has the buddha nature if it contains a blue piece"}),
    "student.official": ("/api/guess/1/official", {}),
    "student.withdraw": ("/api/guess/1/withdraw", {}),
    "student.end_turn": ("/api/end-turn", {}),
}


def student_get_urls(app, gid: str, digest: str) -> list[str]:
    urls = []
    values = {"gid": gid, "digest": digest, "seq": "1", "kid": "k1", "filename": "student.js"}
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("master.") or "GET" not in rule.methods:
            continue
        url = rule.rule
        for arg in rule.arguments:
            url = re.sub(r"<(?:[a-z]+:)?%s>" % arg, values[arg], url)
        urls.append(url)
    for name in ("common.js", "master.js", "zendo.css", "replay.js"):
        urls.append(f"/static/{name}")
    urls += ["/api/nowhere", "/replay/nope", "/master-ish"]
    return urls


def student_posts_cover_every_route(app) -> None:
    posts = {r.endpoint for r in app.url_map.iter_rules() if "POST" in r.methods and not r.endpoint.startswith("master.")}
    assert posts == set(POSTS), f"crawl these POST routes too: {posts ^ set(POSTS)}"


def set_up(rule: str):
    """A game mid-play: initial koans marked in public the same way whatever the rule, a Mondo
    under way with hidden votes, and an unmarked koan on the table."""
    app = make_app(rule, GAME_ID="same-game")
    master = JsonClient(app).master()
    master.post("/master/api/mark", {"koan": "k1", "color": "white"})
    master.post("/master/api/mark", {"koan": "k2", "color": "black"})
    ann, bob = JsonClient(app), JsonClient(app)
    ann.post("/join", {"name": "Ann"})
    bob.post("/join", {"name": "Bob"})
    master.post("/master/api/start")
    ann.post("/api/ask", {"kind": "touching", "a": "b1", "b": "g1"})  # the borderline pair
    ann.post("/api/ask", {"text": "which pieces touch the medium blue?"})
    k3 = ann.post("/api/build", {"koan": "lone-red"}).get_json()["koan"]
    ann.post("/api/call", {"koan": k3, "call": "mondo"})
    ann.post("/api/vote", {"vote": "white"})
    ann.post("/api/end-turn")
    k4 = master.post("/master/api/demo/build", {"koan": "touch-red-green"}).get_json()["koan"]
    return app, master, ann, bob, k3, k4


def crawl(app, client) -> dict[str, bytes]:
    svc = app.extensions["zendo"]
    snap = next(e.data["snapshot"] for e in svc.game.events if e.type == "koan_built")
    out = {}
    for url in student_get_urls(app, svc.game_id, snap):
        r = client.get(url)
        out[url] = r.data
    return out


def normalise(body: bytes) -> bytes:
    return re.sub(rb'(csrf[-_]token"? (?:content|value)=")[^"]+', rb"\1X", body)


def test_every_student_route_is_free_of_the_secret():
    app, master, ann, bob, k3, k4 = set_up(TOUCH)
    student_posts_cover_every_route(app)
    svc = app.extensions["zendo"]
    # the Master sees a judgment call on k2 and proposed marks for the unmarked koans
    audit = {a["koan"]: a for a in master.get("/master/api/state").get_json()["audit"]}
    assert audit["k2"]["borderline"] and audit[k4]["proposed"] == "white"
    bodies = crawl(app, ann)
    bodies.update({f"bob {u}": b for u, b in crawl(app, bob).items()})
    # ... and every student POST, including ones refused
    for endpoint, (url, payload) in POSTS.items():
        for who in (bob, ann):
            r = who.post(url, payload)
            bodies[f"POST {url}"] = r.data
    bodies["bad ask"] = ann.post("/api/ask", {"kind": "touching", "a": "b1", "b": "nope"}).data
    bodies["no csrf"] = app.test_client().post("/api/ask", json={"kind": "touching"}).data
    assert len(bodies) > 25
    for url, body in bodies.items():
        text = body.decode("utf-8", "replace").lower()
        # static files are code anyone may read (the Master's script names its own panels): they
        # must not carry the game's secret, but may use the words
        words = (TOUCH, "touching another piece") if "/static/" in url else FORBIDDEN + (TOUCH,)
        for word in words:
            assert word not in text, f"{url} mentions {word!r}"
    # hidden Mondo votes are not in any student's state before the reveal
    st = bob.get("/api/state").get_json()
    assert st["mondo"]["open"] and st["mondo"]["votes"] is None and st["mondo"]["voted"] == ["Ann"]
    # the unmarked koans show no mark anywhere
    for doc in (st, ann.get("/api/overlay").get_json()):
        marks = {k["id"]: k["mark"] for k in doc["koans"]}
        assert marks[k3] is None and marks[k4] is None
    assert svc.game.koans[k4].mark is None


def test_students_cannot_tell_two_secret_rules_apart():
    """Same public play, different secret rules and judgment calls: identical student views."""
    a = set_up(TOUCH)
    b = set_up(RED)
    ma = a[1]  # game A's mark of k2 rests on a judgment call; game B's does not
    rows = {r["koan"]: r for r in ma.get("/master/api/state").get_json()["audit"]}
    assert rows["k2"]["borderline"]
    ca, cb = crawl(a[0], a[2]), crawl(b[0], b[2])
    assert ca.keys() == cb.keys()
    for url in ca:
        assert normalise(ca[url]) == normalise(cb[url]), f"{url} differs between the two secret rules"
    # the Master's views do differ
    assert ma.get("/master/api/state").get_json()["rule_text"] != b[1].get("/master/api/state").get_json()["rule_text"]


def test_a_finished_games_replay_keeps_judgment_calls_and_rulings_secret():
    app, master, ann, bob, k3, k4 = set_up(TOUCH)
    master.post("/master/api/ruling", {"koan": "k2", "key": ["touching", "b1", "g1"], "value": True})
    master.post("/master/api/give-up")
    gid = app.extensions["zendo"].game_id
    steps = ann.get(f"/replay/{gid}/events.json").get_json()["steps"]
    text = str(steps).lower()
    assert "the rule was" in text  # told at the end
    for word in ("judgment", "ruling", "rules on", "borderline", "secret", "votes white"):
        assert word not in text
    assert all(s["seq"] is None for s in steps)
    assert [s["at"] for s in steps] == list(range(1, len(steps) + 1))  # no gaps where secret events were


def test_a_change_told_to_the_master_alone_stays_out_of_a_students_replay():
    """A marked koan a camera reads differently with no hand near it is the Master's alone
    (zendo.game): in a replay students never see it, the Master reads it for what it was."""
    from dataclasses import replace

    from server.replay import replay_steps
    from server.testing import small_table
    from zendo.game import Game
    from zendo.store import Store

    def camera(scene):
        return replace(scene, extra={"perception": {"doubts": [], "hands": [], "held": []}})

    store = Store()
    gid = store.new_game(title="t")
    g = Game(gid)
    g.listeners.append(lambda ev: store.append(gid, ev))
    g.observe(camera(small_table()))
    g.set_rule(RED)
    g.mark("k1")
    sc = small_table()
    g.observe(camera(Scene(tuple(p for p in sc.pieces if p.id != "y1"), sc.stones)))
    assert [k["public"] for k in g.master_state()["katsu_detail"]] == [False]
    students = " ".join(s["text"] for s in replay_steps(store, gid, master=False)["steps"])
    master = " ".join(s["text"] for s in replay_steps(store, gid, master=True)["steps"])
    assert "reads differently" not in students and "Katsu" not in students and "disturbed" not in students
    assert "Koan k1 reads differently now; no hand came near it" in master
