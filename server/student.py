"""The students' side: join by name, see the table, ask about koans, build (demo), call Master or
Mondo, vote, guess, and replay finished games. Nothing here reads the Master's state: every
response is built from `Game.public_state()`, public event data and the table's geometry.
"""
from __future__ import annotations

import io

from flask import Blueprint, Response, abort, current_app, jsonify, redirect, render_template, request, session, url_for

from zendo.game import QUESTIONS, GameError

from .app import body, field, service
from .questions import QuestionUnclear, parse_question

bp = Blueprint("student", __name__)


def me() -> str | None:
    name = session.get("player")
    return name if name and name in service().game.players else None


def need_me() -> str:
    name = me()
    if name is None:
        raise GameError("join the game first (enter your name)")
    return name


@bp.get("/")
def index():
    svc = service()
    return render_template("student.html", player=me(), questions=QUESTIONS, editable=svc.feed.editable,
                           students_url=students_url())


@bp.post("/join")
def join():
    data = body()
    name = field(data, "name", limit=200)
    player = service().act(service().game.join, name)
    session["player"] = player.name
    if request.is_json:
        return jsonify({"player": player.name})
    return redirect(url_for("student.index"))


@bp.post("/leave")
def leave():
    session.pop("player", None)
    if request.is_json:
        return jsonify({"ok": True})
    return redirect(url_for("student.index"))


@bp.get("/api/state")
def state():
    return jsonify(service().student_state(me()))


@bp.get("/api/overlay")
def overlay():
    return jsonify(service().overlay(master=False))


@bp.get("/api/image.jpg")
def image():
    return Response(service().image_jpeg(), mimetype="image/jpeg")


@bp.get("/api/catalogue")
def catalogue():
    from .demo import catalogue_list

    return jsonify({"editable": service().feed.editable, "koans": catalogue_list()})


@bp.post("/api/ask")
def ask():
    """Tap two pieces and pick a question, or send the words asked aloud / typed."""
    svc = service()
    data = body()
    player = me()
    with svc.lock:
        svc.sync()
        if data.get("text"):
            text = field(data, "text", limit=300)
            sel = data.get("selected") or []
            if not isinstance(sel, list) or len(sel) > 2 or not all(isinstance(s, str) and len(s) < 64 for s in sel):
                raise GameError("'selected' must be up to two piece labels")
            pieces = _public_pieces()
            try:
                q = parse_question(text, pieces, sel)
            except QuestionUnclear as exc:
                return jsonify({"answer": _cap(str(exc)) + ("" if str(exc).endswith("?") else "."), "unclear": True})
            kind, a, b = q.kind, q.a, q.b
        else:
            kind = field(data, "kind", limit=40)
            a = field(data, "a", limit=64)
            b = field(data, "b", required=False, limit=64)
        out = svc.game.ask(player, kind, a, b)
        return jsonify({"answer": out["answer"], "kind": kind, "pieces": [a] + ([b] if b else [])})


def _public_pieces() -> list[dict]:
    g = service().game
    out = []
    for k in g.active_koans():
        for p in k.pieces:
            out.append({"id": p["id"], "color": p["color"], "size": p["size"], "koan": k.id})
    return out


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


@bp.post("/api/build")
def build():
    data = body()
    svc = service()
    koan = svc.build(need_me(), field(data, "koan", limit=60))
    return jsonify({"koan": koan})


@bp.post("/api/call")
def call():
    data = body()
    svc = service()
    svc.call(need_me(), field(data, "koan", limit=20), field(data, "call", limit=10))
    return jsonify({"ok": True})


@bp.post("/api/vote")
def vote():
    data = body()
    svc = service()
    svc.act(svc.game.vote, need_me(), field(data, "vote", limit=10))
    return jsonify({"ok": True})


@bp.post("/api/guess")
def guess():
    data = body()
    svc = service()
    g = svc.act(svc.game.state_guess, need_me(), field(data, "text", limit=500),
                field(data, "reading", required=False, limit=500))
    return jsonify({"guess": g.id, "status": g.status, "problem": g.problem, "contradicted_by": g.contradicted_by,
                    "reading": g.reading})


@bp.post("/api/guess/<int:gid>/official")
def official(gid: int):
    svc = service()
    g = svc.act(svc.game.make_official, gid, need_me())
    return jsonify({"guess": g.id, "status": g.status})


@bp.post("/api/guess/<int:gid>/withdraw")
def withdraw(gid: int):
    svc = service()
    svc.act(svc.game.withdraw, gid, need_me())
    return jsonify({"ok": True})


@bp.post("/api/end-turn")
def end_turn():
    svc = service()
    nxt = svc.act(svc.game.end_turn, need_me())
    return jsonify({"turn": nxt})


@bp.get("/qr.svg")
def qr():
    import segno

    buf = io.BytesIO()
    segno.make(students_url(), error="m").save(buf, kind="svg", scale=6, border=2, dark="#222", light="#fff")
    return Response(buf.getvalue(), mimetype="image/svg+xml")


def students_url() -> str:
    return current_app.config.get("PUBLIC_URL") or request.host_url


# ------------------------------------------------------------------ replay of finished games


@bp.get("/replay/")
def replays():
    games = [g for g in service().store.games() if g["finished"]]
    return render_template("replay_list.html", games=games, master=False)


def _finished(gid: str) -> dict:
    g = service().store.game(gid)
    if g is None or not g["finished"]:
        abort(404)
    return g


@bp.get("/replay/<gid>")
def replay(gid: str):
    g = _finished(gid)
    return render_template("replay.html", game=g, events_url=url_for("student.replay_events", gid=gid), master=False)


@bp.get("/replay/<gid>/events.json")
def replay_events(gid: str):
    from .replay import replay_steps

    _finished(gid)
    return jsonify(replay_steps(service().store, gid, master=False))


@bp.get("/replay/<gid>/image/<digest>")
def replay_image(gid: str, digest: str):
    from .replay import public_digests

    _finished(gid)
    if digest not in public_digests(service().store, gid):
        abort(404)
    img = service().store.image(digest)
    if img is None:
        abort(404)
    return Response(img[0], mimetype=img[1])


@bp.get("/replay/<gid>/koan/<int:seq>/<kid>.png")
def replay_koan(gid: str, seq: int, kid: str):
    from .replay import koan_png, public_step_seq

    _finished(gid)
    return Response(koan_png(service().store, gid, public_step_seq(service().store, gid, seq), kid),
                    mimetype="image/png")
