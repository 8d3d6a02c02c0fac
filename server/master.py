"""The Master's dashboard (token required): the secret rule, proposed marks, judgment calls, the
audit of stones read against marks, counterexamples, katsu, Mondo control, the demo table, and
the full game log (export, replay).

The Master's link is /master?token=...; a right token puts a signed mark in the session (and the
page redirects to drop the token from the address bar), a wrong one is refused.
"""
from __future__ import annotations

import hashlib
import hmac
import io

from flask import (Blueprint, Response, abort, current_app, jsonify, redirect, render_template, request, session,
                   url_for)

from zendo.game import QUESTIONS, GameError

from .app import body, field, service

bp = Blueprint("master", __name__, url_prefix="/master")


@bp.before_request
def guard():
    token = request.args.get("token")
    want = current_app.config["MASTER_DIGEST"]
    if token is not None:
        if hmac.compare_digest(hashlib.sha256(token.encode()).hexdigest(), want):
            session["master"] = want
            if request.method == "GET" and request.endpoint == "master.index":
                return redirect(url_for("master.index"))
            return None
        abort(403)
    if not hmac.compare_digest(str(session.get("master", "")), want):
        abort(403)
    return None


@bp.get("", strict_slashes=False)
def index():
    from .demo import catalogue_list
    from .student import students_url

    svc = service()
    return render_template("master.html", editable=svc.feed.editable, catalogue=catalogue_list(),
                           students_url=students_url(), questions=QUESTIONS, game_id=svc.game_id)


@bp.get("/api/state")
def state():
    return jsonify(service().master_state())


@bp.get("/api/overlay")
def overlay():
    return jsonify(service().overlay(master=True))


@bp.get("/api/image.jpg")
def image():
    return Response(service().image_jpeg(), mimetype="image/jpeg")


@bp.post("/api/rule")
def rule():
    """Set the secret rule. A rule the language cannot take comes back with why (and, for an
    ambiguous one, the readings to choose from)."""
    from zendo.game import RuleProblem

    data = body()
    svc = service()
    try:
        canonical = svc.act(svc.game.set_rule, field(data, "text", limit=500))
    except RuleProblem as exc:
        return jsonify({"error": str(exc), "problem": exc.info}), 400
    return jsonify({"canonical": canonical})


@bp.post("/api/start")
def start():
    svc = service()
    svc.act(svc.game.start)
    return jsonify({"ok": True})


@bp.post("/api/mark")
def mark():
    data = body()
    color = field(data, "color", required=False, limit=10)
    return jsonify({"mark": service().mark(field(data, "koan", limit=20), color)})


@bp.post("/api/mark-all")
def mark_all():
    """Mark every unmarked koan by the rule (setting up the initial koans)."""
    svc = service()
    with svc.lock:
        svc.sync()
        done = {}
        for k in svc.game.active_koans():
            if k.mark is None and not svc.game._in_mondo(k.id):
                done[k.id] = svc.mark(k.id)
    return jsonify({"marked": done})


@bp.post("/api/mondo/start")
def mondo_start():
    data = body()
    svc = service()
    svc.act(svc.game.start_mondo, field(data, "koan", limit=20), None)
    return jsonify({"ok": True})


@bp.post("/api/mondo/reveal")
def mondo_reveal():
    data = body()
    return jsonify(service().reveal(field(data, "color", required=False, limit=10)))


def names_key(data: dict, longest: int, what: str) -> list[str]:
    """A posted key: a short list of short names (a predicate's, or a doubt's)."""
    key = data.get("key")
    if not isinstance(key, list) or not 1 <= len(key) <= longest or not all(isinstance(k, str) and len(k) < 64 for k in key):
        raise GameError(f"'key' must be a {what} key (a list of names)")
    return key


@bp.post("/api/ruling")
def ruling():
    data = body()
    key = names_key(data, 4, "predicate")
    if "value" not in data or not isinstance(data["value"], (bool, str)):
        raise GameError("'value' must be true, false or a name")
    svc = service()
    svc.act(svc.game.rule_on, field(data, "koan", limit=20), key, data["value"])
    return jsonify({"ok": True})


@bp.post("/api/doubt")
def doubt():
    """The Master settles one of the camera's doubts about a koan (they have looked)."""
    data = body()
    key = names_key(data, 3, "doubt")
    svc = service()
    svc.act(svc.game.settle_doubt, field(data, "koan", limit=20), key)
    return jsonify({"ok": True})


@bp.post("/api/auto-mark")
def auto_mark():
    data = body()
    service().auto_mark = bool(data.get("on"))
    return jsonify({"auto_mark": service().auto_mark})


@bp.post("/api/end-turn")
def end_turn():
    svc = service()
    return jsonify({"turn": svc.act(svc.game.end_turn)})


@bp.post("/api/give-up")
def give_up():
    svc = service()
    svc.act(svc.game.give_up)
    return jsonify({"ok": True})


# ------------------------------------------------------------------ guesses


@bp.post("/api/guess/<int:gid>/suggest")
def suggest(gid: int):
    r = dict(service().suggest(gid))
    return jsonify(r)


@bp.get("/api/guess/<int:gid>/suggestion.png")
def suggestion_png(gid: int):
    return Response(service().suggestion_picture(gid), mimetype="image/png")


@bp.post("/api/guess/<int:gid>/place")
def place(gid: int):
    return jsonify({"koan": service().place_suggestion(gid)})


@bp.post("/api/guess/<int:gid>/disprove")
def disprove(gid: int):
    data = body()
    svc = service()
    svc.act(svc.game.disprove, gid, field(data, "koan", limit=20))
    return jsonify({"ok": True})


@bp.post("/api/guess/<int:gid>/won")
def won(gid: int):
    svc = service()
    svc.act(svc.game.declare_won, gid)
    return jsonify({"ok": True})


# ------------------------------------------------------------------ katsu


@bp.post("/api/katsu/<int:kid>/accept")
def katsu_accept(kid: int):
    svc = service()
    svc.act(svc.game.katsu_accept, kid)
    return jsonify({"ok": True})


@bp.post("/api/katsu/<int:kid>/call")
def katsu_call(kid: int):
    svc = service()
    svc.act(svc.game.katsu_call, kid)
    return jsonify({"ok": True})


@bp.post("/api/katsu/<int:kid>/restore")
def katsu_restore(kid: int):
    service().restore(kid)
    return jsonify({"ok": True})


@bp.get("/api/katsu/<int:kid>/<which>.png")
def katsu_png(kid: int, which: str):
    if which not in ("before", "after"):
        abort(404)
    return Response(service().katsu_picture(kid, which), mimetype="image/png")


@bp.get("/api/koan/<kid>.png")
def koan_png(kid: str):
    return Response(service().koan_picture(kid), mimetype="image/png")


@bp.get("/api/snapshot/<digest>")
def snapshot(digest: str):
    img = service().store.image(digest)
    if img is None:
        abort(404)
    return Response(img[0], mimetype=img[1])


# ------------------------------------------------------------------ the demo table


@bp.post("/api/demo/build")
def demo_build():
    data = body()
    return jsonify({"koan": service().build(None, field(data, "koan", limit=60))})


@bp.post("/api/demo/remove")
def demo_remove():
    data = body()
    service().break_down(field(data, "koan", limit=20))
    return jsonify({"ok": True})


@bp.post("/api/demo/disturb")
def demo_disturb():
    data = body()
    service().disturb(field(data, "koan", limit=20))
    return jsonify({"ok": True})


@bp.post("/api/demo/stone")
def demo_stone():
    data = body()
    service().put_stone(field(data, "koan", limit=20), field(data, "color", limit=10))
    return jsonify({"ok": True})


# ------------------------------------------------------------------ the game log


@bp.get("/log.jsonl")
def export_log():
    buf = io.StringIO()
    gid = request.args.get("game") or service().game_id
    service().store.export_jsonl(buf, [gid])
    return Response(buf.getvalue(), mimetype="application/x-ndjson",
                    headers={"Content-Disposition": f"attachment; filename=zendo-{gid}.jsonl"})


@bp.get("/replay/")
def replays():
    return render_template("replay_list.html", games=service().store.games(), master=True)


@bp.get("/replay/<gid>")
def replay(gid: str):
    g = service().store.game(gid)
    if g is None:
        abort(404)
    return render_template("replay.html", game=g, events_url=url_for("master.replay_events", gid=gid), master=True)


@bp.get("/replay/<gid>/events.json")
def replay_events(gid: str):
    from .replay import replay_steps

    if service().store.game(gid) is None:
        abort(404)
    return jsonify(replay_steps(service().store, gid, master=True))


@bp.get("/replay/<gid>/koan/<int:seq>/<kid>.png")
def replay_koan(gid: str, seq: int, kid: str):
    from .replay import koan_png as png

    return Response(png(service().store, gid, seq, kid), mimetype="image/png")


@bp.get("/replay/<gid>/image/<digest>")
def replay_image(gid: str, digest: str):
    return snapshot(digest)
