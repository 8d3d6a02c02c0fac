"""The Flask application factory: `create_app(config)`.

Blueprints per audience: `student` (the table's public face: join, ask, vote, guess, replay of
finished games) and `master` (token only: the secret rule, proposed marks, judgment calls, audit,
counterexamples, katsu, Mondo control, the full game log). Everything is bundled: no CDN, no web
fonts. Errors never carry exception text; the game's own refusals (GameError) are one safe line.
"""
from __future__ import annotations

import hashlib
import logging
import os
import secrets
from typing import Any, Mapping

from flask import Flask, jsonify, render_template, request
from flask_wtf.csrf import CSRFError, CSRFProtect
from werkzeug.exceptions import HTTPException

from zendo.game import GameError
from zendo.store import Store, StoreError

log = logging.getLogger(__name__)

csrf = CSRFProtect()

DEFAULTS: dict[str, Any] = {
    "SOURCE": "demo",  # demo | realsense | FILE.db3 | scene.json
    "WORKERS": 1,  # processes reading a camera's frames at once (vision/parallel.py)
    "VIEW": "camera",  # camera (vision.synth render) | topdown (drawing)
    "RULE": None,  # the secret rule at start
    "MASTER_TOKEN": None,  # default: $ZENDO_MASTER_TOKEN, else random
    "LOG_PATH": ":memory:",  # the SQLite game log
    "AUTO_MARK": False,  # mark a koan as soon as a student says "Master"
    "PUBLIC_URL": None,  # the students' link for the QR code (default: the request's host)
    "MAX_CONTENT_LENGTH": 64 * 1024,  # no request body is larger than this
    "WTF_CSRF_TIME_LIMIT": None,  # a game can last an evening
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_HTTPONLY": True,
    "FEED": None,  # an injected TableFeed (tests)
    "REFEREE": None,  # an injected zendo.game.Referee (tests)
    "STORE": None,  # an injected Store
    "GAME_ID": None,  # the new game's id in the log (default: time and a random suffix)
}


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    app.config["SECRET_KEY"] = os.environ.get("ZENDO_SECRET_KEY") or secrets.token_hex(32)
    if config:
        app.config.update(config)
    if not app.config["MASTER_TOKEN"]:
        app.config["MASTER_TOKEN"] = os.environ.get("ZENDO_MASTER_TOKEN") or secrets.token_urlsafe(18)
    app.config["MASTER_DIGEST"] = hashlib.sha256(str(app.config["MASTER_TOKEN"]).encode()).hexdigest()
    csrf.init_app(app)

    from .feed import make_feed
    from .service import TableService

    store = app.config["STORE"] or Store(app.config["LOG_PATH"])
    feed = app.config["FEED"] or make_feed(app.config["SOURCE"], app.config["VIEW"], app.config["WORKERS"])
    app.extensions["zendo"] = TableService(feed, store, game_id=app.config["GAME_ID"], referee=app.config["REFEREE"], rule=app.config["RULE"],
                                           auto_mark=app.config["AUTO_MARK"], source=str(app.config["SOURCE"]))

    from . import master, student

    app.register_blueprint(student.bp)
    app.register_blueprint(master.bp)
    _errors(app)

    @app.after_request
    def _headers(resp):
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")  # the Master's token never leaves in a Referer
        resp.headers.setdefault("Cache-Control", "no-store")
        return resp

    return app


def wants_json() -> bool:
    p = request.path
    return p.startswith("/api/") or p.startswith("/master/api/") or p.endswith(".json") or \
        request.is_json or "application/json" in request.headers.get("Accept", "")


def _errors(app: Flask) -> None:
    def reply(status: int, message: str):
        if wants_json():
            return jsonify({"error": message}), status
        return render_template("error.html", status=status, message=message), status

    @app.errorhandler(GameError)
    def _game(exc):
        return reply(400, str(exc).splitlines()[0] if str(exc) else "that cannot be done now")

    @app.errorhandler(StoreError)
    def _store(exc):
        log.error("game log: %s", exc)
        return reply(500, "the game log could not be read or written; nothing already recorded was lost")

    @app.errorhandler(CSRFError)
    def _csrf(exc):
        return reply(400, "this page is out of date (its security token is missing or expired): reload it")

    @app.errorhandler(413)
    def _too_big(exc):
        return reply(413, f"that is too large (at most {app.config['MAX_CONTENT_LENGTH'] // 1024} KB)")

    @app.errorhandler(HTTPException)
    def _http(exc):
        messages = {400: "that request could not be understood", 403: "this page is for the Master only",
                    404: "there is nothing here", 405: "that is not allowed here"}
        msg = exc.description if getattr(exc, "zendo", False) else messages.get(exc.code, exc.name)
        return reply(exc.code or 500, msg)

    @app.errorhandler(Exception)
    def _any(exc):
        log.exception("unexpected error on %s", request.path)
        return reply(500, "something went wrong; nothing already recorded was lost")


def service():
    from flask import current_app

    return current_app.extensions["zendo"]


def body() -> dict:
    """The JSON object a POST sent (or its form fields); a clear 400 otherwise."""
    try:
        data = request.get_json(silent=True) if request.is_json else request.form.to_dict()
    except RecursionError:  # JSON nested thousands deep (64 KB of '[') is not a request either
        data = None
    if not isinstance(data, dict):
        raise GameError("send a JSON object")
    return data


def field(data: dict, name: str, kind=str, required: bool = True, limit: int = 500):
    v = data.get(name)
    if v is None or v == "":
        if required:
            raise GameError(f"'{name}' is missing")
        return None
    if kind is int:
        try:
            return int(v)
        except (TypeError, ValueError):
            raise GameError(f"'{name}' must be a whole number") from None
    if kind is str:
        if not isinstance(v, str):
            raise GameError(f"'{name}' must be text")
        if len(v) > limit:
            raise GameError(f"'{name}' is too long (at most {limit} characters)")
        return v
    return v
