"""The Flask app through its test client: every route, the Master's token, CSRF, limits, errors."""
from __future__ import annotations

import json

import pytest

from server.testing import JsonClient, make_app

RED = "a koan has the buddha nature if it contains a red piece"
TOKEN = "master-token-for-tests"


@pytest.fixture()
def app():
    return make_app(RED)


@pytest.fixture()
def master(app):
    return JsonClient(app).master()


def student(app, name):
    c = JsonClient(app)
    r = c.post("/join", {"name": name})
    assert r.status_code == 200, r.get_json()
    return c


def playing(app, master, names=("Ann", "Bob")):
    assert master.post("/master/api/mark-all").status_code == 200
    studs = [student(app, n) for n in names]
    assert master.post("/master/api/start").status_code == 200
    return studs


def test_pages_render(app, master):
    c = app.test_client()
    for url in ("/", "/replay/", "/qr.svg"):
        assert c.get(url).status_code == 200, url
    assert b"Join the game" in c.get("/").data
    assert c.get("/qr.svg").mimetype == "image/svg+xml"
    assert master.get("/master").status_code == 200
    assert b"Secret rule" in master.get("/master").data
    assert master.get("/master/replay/").status_code == 200


def test_master_routes_need_the_token(app):
    c = app.test_client()
    for url in ("/master", "/master/api/state", "/master/api/overlay", "/master/api/image.jpg", "/master/log.jsonl",
                "/master/replay/", "/master/api/koan/k1.png"):
        r = c.get(url)
        assert r.status_code == 403, url
        assert RED not in r.get_data(as_text=True)
    assert c.get("/master?token=wrong").status_code == 403
    r = c.get(f"/master?token={TOKEN}")
    assert r.status_code == 302 and r.location.endswith("/master")  # the token leaves the address bar
    assert c.get("/master/api/state").status_code == 200
    assert c.get("/master/api/state").get_json()["rule_text"] == RED


def test_master_token_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ZENDO_MASTER_TOKEN", "from-env")
    app = make_app(RED, MASTER_TOKEN=None)
    assert app.config["MASTER_TOKEN"] == "from-env"
    monkeypatch.delenv("ZENDO_MASTER_TOKEN")
    a, b = make_app(RED, MASTER_TOKEN=None), make_app(RED, MASTER_TOKEN=None)
    assert a.config["MASTER_TOKEN"] != b.config["MASTER_TOKEN"] and len(a.config["MASTER_TOKEN"]) >= 20


def test_posts_without_the_csrf_token_are_refused_and_change_nothing(app):
    c = app.test_client()
    r = c.post("/join", json={"name": "Eve"})
    assert r.status_code == 400 and "reload" in r.get_json()["error"]
    r = c.post("/join", data={"name": "Eve"})
    assert r.status_code == 400 and b"reload" in r.data
    assert app.extensions["zendo"].game.players == {}
    m = app.test_client()
    m.get(f"/master?token={TOKEN}")
    assert m.post("/master/api/mark", json={"koan": "k1"}).status_code == 400
    assert app.extensions["zendo"].game.koans["k1"].mark is None


def test_join_by_form_and_by_json(app):
    c = JsonClient(app)
    r = c.client.post("/join", data={"name": "Ann", "csrf_token": c.token})
    assert r.status_code == 302
    assert c.get("/api/state").get_json()["me"]["name"] == "Ann"
    assert c.post("/leave").status_code == 200
    assert c.get("/api/state").get_json()["me"] is None


def test_size_limits_and_bad_input_get_clear_messages(app, master):
    c = JsonClient(app)
    big = c.post("/join", {"name": "x" * 100_000})
    assert big.status_code == 413 and "too large" in big.get_json()["error"]
    assert c.post("/join", {"name": "x" * 300})
    long = c.post("/join", {"name": "x" * 300})
    assert long.status_code == 400 and "too long" in long.get_json()["error"]
    r = c.client.post("/api/ask", data="not json", headers={"X-CSRFToken": c.token, "Content-Type": "application/json"})
    assert r.status_code == 400 and "error" in r.get_json()
    assert c.post("/api/ask", {"kind": "telepathy", "a": "r1", "b": "y1"}).get_json()["error"] == "unknown question"
    assert c.post("/api/vote", {"vote": "white"}).status_code == 400  # not joined: told to join
    assert "join" in c.post("/api/vote", {"vote": "white"}).get_json()["error"]
    r = master.post("/master/api/ruling", {"koan": "k2", "key": "touching", "value": 3})
    assert r.status_code == 400
    assert c.get("/nowhere").status_code == 404
    assert c.get("/api/nowhere").get_json()["error"] == "there is nothing here"
    # nothing recorded was lost along the way
    assert app.extensions["zendo"].store.events(app.extensions["zendo"].game_id)


def test_rule_problems_come_back_to_the_master(master):
    app2 = make_app(None)
    m = JsonClient(app2).master()
    r = m.post("/master/api/rule", {"text": "the largest piece is red"})
    assert r.status_code == 400 and r.get_json()["problem"]["kind"] == "ambiguous"
    r = m.post("/master/api/rule", {"text": "contains red"})
    assert r.get_json()["problem"]["kind"] == "syntax" and r.get_json()["problem"]["column"] >= 1
    r = m.post("/master/api/rule", {"text": RED})
    assert r.status_code == 200 and "at least one red piece" in r.get_json()["canonical"]


def test_a_short_game_through_the_api(app, master):
    ann, bob = playing(app, master)
    st = ann.get("/api/state").get_json()
    assert st["phase"] == "playing" and st["turn"] == "Ann" and st["me"]["can_build"]
    assert bob.post("/api/build", {"koan": "lone-red"}).status_code == 400  # not Bob's turn
    kid = ann.post("/api/build", {"koan": "lone-red"}).get_json()["koan"]
    assert ann.post("/api/build", {"koan": "lone-red"}).status_code == 400  # one koan a turn
    assert ann.post("/api/call", {"koan": kid, "call": "mondo"}).status_code == 200
    assert ann.post("/api/vote", {"vote": "white"}).status_code == 200
    assert bob.post("/api/vote", {"vote": "black"}).status_code == 200
    ms = master.get("/master/api/state").get_json()
    assert ms["mondo_ready"] and ms["mondo_votes"] == {"Ann": "white", "Bob": "black"}
    out = master.post("/master/api/mondo/reveal").get_json()
    assert out["awarded"] == ["Ann"]
    stones = {k["id"]: k["stones"] for k in ann.get("/api/state").get_json()["koans"]}
    assert stones[kid] == ["white"]  # the demo table shows the stone the Master put down
    g = ann.post("/api/guess", {"text": "a koan has the buddha nature if it contains a large piece"}).get_json()
    assert g["status"] == "ready"
    assert ann.post(f"/api/guess/{g['guess']}/official").status_code == 200
    sug = master.post(f"/master/api/guess/{g['guess']}/suggest").get_json()
    assert sug["found"] and sug["instructions"]
    if not sug.get("on_table"):
        assert master.get(f"/master/api/guess/{g['guess']}/suggestion.png").mimetype == "image/png"
        placed = master.post(f"/master/api/guess/{g['guess']}/place").get_json()["koan"]
        assert master.post("/master/api/mark", {"koan": placed}).status_code == 200
        ce = placed
    else:
        ce = sug["on_table"]
    assert master.post(f"/master/api/guess/{g['guess']}/disprove", {"koan": ce}).status_code == 200
    assert ann.post("/api/end-turn").get_json()["turn"] == "Bob"
    kid2 = bob.post("/api/build", {"koan": "flat-yellow"}).get_json()["koan"]
    assert bob.post("/api/call", {"koan": kid2, "call": "master"}).status_code == 200
    assert master.get("/master/api/state").get_json()["requests"][0]["koan"] == kid2
    assert master.post("/master/api/mark", {"koan": kid2}).get_json()["mark"] == "black"
    assert bob.post("/api/end-turn").status_code == 200
    kid3 = ann.post("/api/build", {"koan": "apart-red-blue"}).get_json()["koan"]
    ann.post("/api/call", {"koan": kid3, "call": "mondo"})
    ann.post("/api/vote", {"vote": "white"})
    bob.post("/api/vote", {"vote": "white"})
    assert master.post("/master/api/mondo/reveal").get_json()["awarded"] == ["Ann", "Bob"]
    w = ann.post("/api/guess", {"text": RED}).get_json()
    assert w["status"] == "ready"
    ann.post(f"/api/guess/{w['guess']}/official")
    nf = master.post(f"/master/api/guess/{w['guess']}/suggest").get_json()
    assert nf["found"] is False and nf["searched"]
    assert master.post(f"/master/api/guess/{w['guess']}/won").status_code == 200
    st = bob.get("/api/state").get_json()
    assert st["phase"] == "finished" and st["winner"] == "Ann" and st["rule"]["text"] == RED
    # the finished game can be replayed by anyone, and exported by the Master
    gid = app.extensions["zendo"].game_id
    assert bob.get("/replay/").status_code == 200 and gid.encode() in bob.get("/replay/").data
    assert bob.get(f"/replay/{gid}").status_code == 200
    steps = bob.get(f"/replay/{gid}/events.json").get_json()["steps"]
    assert steps[-1]["text"].startswith("Ann wins")
    snap = next(s for s in steps if s["snapshot"])
    assert bob.get(f"/replay/{gid}/image/{snap['snapshot']}").mimetype == "image/jpeg"
    assert bob.get(f"/replay/{gid}/koan/{snap['at']}/k1.png").mimetype == "image/png"
    assert bob.get(f"/replay/{gid}/image/{'0' * 32}").status_code == 404
    log = master.get("/master/log.jsonl")
    assert log.mimetype == "application/x-ndjson"
    kinds = [json.loads(x)["kind"] for x in log.get_data(as_text=True).splitlines()]
    assert kinds[0] == "game" and "event" in kinds and "image" in kinds
    assert master.get(f"/master/replay/{gid}").status_code == 200
    msteps = master.get(f"/master/replay/{gid}/events.json").get_json()["steps"]
    assert len(msteps) > len(steps) and any(s["type"] == "rule_set" for s in msteps)
    assert master.get(f"/master/replay/{gid}/koan/{msteps[-1]['seq']}/k1.png").status_code == 200


def test_questions_by_tap_and_by_words(app, master):
    (ann,) = playing(app, master, ("Ann",))
    r = ann.post("/api/ask", {"kind": "pointing", "a": "y1", "b": "r1"}).get_json()
    assert r["answer"].startswith("Yes") and "small yellow" in r["answer"]
    r = ann.post("/api/ask", {"text": "Master, is the small yellow pointing at the large red?"}).get_json()
    assert r["answer"].startswith("Yes")
    r = ann.post("/api/ask", {"text": "which pieces touch this one?", "selected": ["b1"]}).get_json()
    assert "small green" in r["answer"]
    r = ann.post("/api/ask", {"text": "is it touching the table", "selected": ["r1"]}).get_json()
    assert r["answer"].startswith("Yes")
    r = ann.post("/api/ask", {"text": "is the purple one touching the red one?"}).get_json()
    assert r["unclear"] and "no purple piece" in r["answer"]
    r = ann.post("/api/ask", {"text": "what is the meaning of life"}).get_json()
    assert r["unclear"]
    assert ann.post("/api/ask", {"text": "x", "selected": "r1"}).status_code == 400


def test_overlay_and_images(app, master):
    c = app.test_client()
    ov = c.get("/api/overlay").get_json()
    assert ov["size"][0] > 100 and {p["id"] for p in ov["pieces"]} == {"r1", "y1", "b1", "g1"}
    assert all(len(p["polygon"]) >= 3 and p["koan"] for p in ov["pieces"])
    assert {k["id"] for k in ov["koans"]} == {"k1", "k2"} and all(k["mark"] is None for k in ov["koans"])
    assert c.get("/api/image.jpg").mimetype == "image/jpeg"
    mov = master.get("/master/api/overlay").get_json()
    assert {k["id"]: k["proposed"] for k in mov["koans"]} == {"k1": "white", "k2": "black"}
    assert master.get("/master/api/image.jpg").mimetype == "image/jpeg"
    assert master.get("/master/api/koan/k1.png").mimetype == "image/png"


def test_demo_table_controls_katsu_and_the_audit(app, master):
    playing(app, master, ("Ann",))
    assert master.post("/master/api/demo/stone", {"koan": "k2", "color": "white"}).status_code == 200
    audit = {a["koan"]: a for a in master.get("/master/api/state").get_json()["audit"]}
    assert any("the rule says black" in p for p in audit["k2"]["problems"])
    assert master.post("/master/api/demo/disturb", {"koan": "k1"}).status_code == 200
    st = master.get("/master/api/state").get_json()
    k = [x for x in st["katsu_detail"] if x["open"]][0]
    assert master.get(f"/master/api/katsu/{k['id']}/before.png").mimetype == "image/png"
    assert master.get(f"/master/api/katsu/{k['id']}/after.png").mimetype == "image/png"
    assert master.get(f"/master/api/katsu/{k['id']}/sideways.png").status_code == 404
    assert app.test_client().get("/api/state").get_json()["katsu"][0]["koan"] == "k1"
    assert k["public"] is True and master.post(f"/master/api/katsu/{k['id']}/call").status_code == 400  # the demo's is called
    assert master.post(f"/master/api/katsu/{k['id']}/restore").status_code == 200
    assert not [x for x in master.get("/master/api/state").get_json()["katsu_detail"] if x["open"]]
    master.post("/master/api/demo/disturb", {"koan": "k1"})
    k2 = [x for x in master.get("/master/api/state").get_json()["katsu_detail"] if x["open"]][0]
    assert master.post(f"/master/api/katsu/{k2['id']}/accept").status_code == 200
    assert master.post("/master/api/demo/remove", {"koan": "k2"}).status_code == 200
    assert "k2" not in {k["id"] for k in app.test_client().get("/api/state").get_json()["koans"]}
    assert master.post("/master/api/demo/build", {"koan": "tower-red"}).status_code == 200
    assert master.post("/master/api/demo/build", {"koan": "no-such"}).status_code == 400
    assert master.post("/master/api/auto-mark", {"on": True}).get_json()["auto_mark"] is True
    assert master.post("/master/api/end-turn").status_code == 200
    assert master.post("/master/api/give-up").status_code == 200
    assert app.test_client().get("/api/state").get_json()["rule"]["text"] == RED


def test_master_starts_a_mondo_and_rules_on_a_borderline_call(app, master):
    ann, = playing(app, master, ("Ann",))
    kid = ann.post("/api/build", {"koan": "lone-blue-small"}).get_json()["koan"]
    assert master.post("/master/api/mondo/start", {"koan": kid}).status_code == 200
    assert master.post("/master/api/mondo/start", {"koan": kid}).status_code == 400
    assert master.post("/master/api/mondo/reveal", {"color": "white"}).get_json()["mark"] == "white"
    assert master.post("/master/api/ruling", {"koan": "k2", "key": ["touching", "b1", "g1"], "value": False}).status_code == 200
    assert ann.post("/api/ask", {"kind": "touching", "a": "b1", "b": "g1"}).get_json()["answer"].startswith("No")


def test_unexpected_errors_say_nothing_of_the_secret(app, master, monkeypatch):
    svc = app.extensions["zendo"]

    def boom(*a, **k):
        raise RuntimeError(f"internal detail {RED}")

    monkeypatch.setattr(svc, "student_state", boom)
    r = app.test_client().get("/api/state")
    assert r.status_code == 500 and "nothing already recorded was lost" in r.get_json()["error"]
    assert RED not in r.get_data(as_text=True) and "internal detail" not in r.get_data(as_text=True)


def test_serve_and_log_commands_are_registered(tmp_path):
    from click.testing import CliRunner

    from zendo.cli import main

    runner = CliRunner()
    assert "--source" in runner.invoke(main, ["serve", "--help"]).output
    store_path = tmp_path / "log.sqlite"
    app = make_app(RED, LOG_PATH=str(store_path))
    JsonClient(app).post("/join", {"name": "Ann"})
    gid = app.extensions["zendo"].game_id
    out = tmp_path / "out.jsonl"
    r = runner.invoke(main, ["log", "export", str(store_path), str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["log", "import", str(out), str(tmp_path / "new.sqlite")])
    assert r.exit_code == 0 and gid in r.output
    r = runner.invoke(main, ["log", "import", str(out), str(tmp_path / "new.sqlite")])
    assert r.exit_code == 2 and "already in the log" in r.output
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 200)
    r = runner.invoke(main, ["log", "export", str(bad)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "error:" in r.output
    r = runner.invoke(main, ["serve", "--source", str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and "no such file" in r.output
