"""The game log: every event of every game in one SQLite file (stdlib sqlite3), plus snapshot images.

One row per event, written and committed the moment it happens (WAL journal), so a crash loses
nothing already recorded. Export and import are JSON Lines: a header line per game, one line per
event, one line per image (base64). A corrupt or foreign file is a `StoreError` with a one-line
message; an import that fails part-way changes nothing (one transaction).
"""
from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import IO, Iterable, Iterator

from .game import Event

SCHEMA_VERSION = 1
FORMAT = "zendo-log/1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    finished INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    game TEXT NOT NULL REFERENCES games(id),
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    type TEXT NOT NULL,
    public INTEGER NOT NULL,
    data TEXT NOT NULL,
    secret TEXT NOT NULL,
    PRIMARY KEY (game, seq)
);
CREATE TABLE IF NOT EXISTS images (
    digest TEXT PRIMARY KEY,
    mime TEXT NOT NULL,
    bytes BLOB NOT NULL
);
"""

FINISHING = {"guess_won", "game_abandoned"}


class StoreError(Exception):
    """A game log that cannot be read or written; the message is one line."""


def _locked(fn):
    def wrapper(self, *a, **kw):
        with self.lock:
            return fn(self, *a, **kw)
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


class Store:
    def __init__(self, path: str | Path = ":memory:", *, create: bool = True):
        """Open (or, with create, start) a game log; another program's SQLite file is refused untouched."""
        self.path = str(path)
        self.lock = threading.RLock()
        if self.path != ":memory:":
            p = Path(self.path)
            if p.exists() and p.is_dir():
                raise StoreError(f"{p}: is a folder, not a game log")
            if not create and not p.is_file():  # before connecting: SQLite would make an empty file
                raise StoreError(f"{p}: no such file")
            p.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if (tables or not create) and "meta" not in tables:
                self.db.close()
                raise StoreError(f"{self.path}: not a readable game log"
                                 + (" (an SQLite file of another program)" if tables else " (no game log here)"))
            self.db.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif row[0] != str(SCHEMA_VERSION):
                raise StoreError(f"{self.path}: game log schema {row[0]} is not supported (expected {SCHEMA_VERSION})")
            self.db.execute("SELECT game, seq, ts, type, public, data, secret FROM events LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a readable game log ({_one_line(exc)})") from None

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ games
    @_locked
    def new_game(self, title: str = "", source: str = "", game_id: str | None = None) -> str:
        gid = game_id or time.strftime("%Y%m%d-%H%M%S") + "-" + hashlib.sha1(str(time.time_ns()).encode()).hexdigest()[:6]
        with self._tx():
            self.db.execute("INSERT INTO games (id, created, title, source) VALUES (?, ?, ?, ?)",
                            (gid, time.time(), title, source))
        return gid

    @_locked
    def games(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT g.id, g.created, g.title, g.source, g.finished, COUNT(e.seq) FROM games g "
            "LEFT JOIN events e ON e.game = g.id GROUP BY g.id ORDER BY g.created DESC").fetchall()
        return [{"id": r[0], "created": r[1], "title": r[2], "source": r[3], "finished": bool(r[4]), "events": r[5]}
                for r in rows]

    def game(self, game_id: str) -> dict | None:
        for g in self.games():
            if g["id"] == game_id:
                return g
        return None

    # ------------------------------------------------------------------ events
    @_locked
    def append(self, game_id: str, ev: Event) -> None:
        try:
            with self._tx():
                self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (game_id, ev.seq, ev.ts, ev.type, int(ev.public),
                                 json.dumps(ev.data, separators=(",", ":")),
                                 json.dumps(ev.secret, separators=(",", ":"))))
                if ev.type in FINISHING:
                    self.db.execute("UPDATE games SET finished = 1 WHERE id = ?", (game_id,))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"event {ev.seq} of game {game_id}: {_one_line(exc)}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot record the event ({_one_line(exc)})") from None

    @_locked
    def events(self, game_id: str) -> list[Event]:
        try:
            rows = self.db.execute("SELECT seq, ts, type, public, data, secret FROM events WHERE game = ? ORDER BY seq",
                                   (game_id,)).fetchall()
            return [Event(r[0], r[2], json.loads(r[4]), json.loads(r[5]), bool(r[3]), r[1]) for r in rows]
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            raise StoreError(f"{self.path}: game {game_id} cannot be read ({_one_line(exc)})") from None

    # ------------------------------------------------------------------ images
    @_locked
    def put_image(self, data: bytes, mime: str = "image/png") -> str:
        digest = hashlib.sha256(data).hexdigest()[:32]
        with self._tx():
            self.db.execute("INSERT OR IGNORE INTO images VALUES (?, ?, ?)", (digest, mime, sqlite3.Binary(data)))
        return digest

    @_locked
    def image(self, digest: str) -> tuple[bytes, str] | None:
        row = self.db.execute("SELECT bytes, mime FROM images WHERE digest = ?", (digest,)).fetchone()
        return (bytes(row[0]), row[1]) if row else None

    # ------------------------------------------------------------------ JSON Lines
    @_locked
    def export_jsonl(self, out: IO[str], game_ids: Iterable[str] | None = None) -> int:
        """Write games as JSON Lines; returns the number of lines written."""
        ids = list(game_ids) if game_ids is not None else [g["id"] for g in reversed(self.games())]
        n = 0
        for gid in ids:
            g = self.game(gid)
            if g is None:
                raise StoreError(f"no game '{gid}' in {self.path}")
            out.write(json.dumps({"format": FORMAT, "kind": "game", "game": gid, "created": g["created"],
                                  "title": g["title"], "source": g["source"], "finished": g["finished"]}) + "\n")
            n += 1
            digests = []
            for ev in self.events(gid):
                out.write(json.dumps({"kind": "event", "game": gid, **ev.to_dict()}, separators=(",", ":")) + "\n")
                n += 1
                snap = ev.data.get("snapshot") if isinstance(ev.data, dict) else None
                if isinstance(snap, str):
                    digests.append(snap)
                for key in ("before_image", "after_image"):
                    if isinstance(ev.secret.get(key), str):
                        digests.append(ev.secret[key])
            for d in dict.fromkeys(digests):
                img = self.image(d)
                if img is not None:
                    out.write(json.dumps({"kind": "image", "digest": d, "mime": img[1],
                                          "base64": base64.b64encode(img[0]).decode("ascii")}) + "\n")
                    n += 1
        return n

    @_locked
    def import_jsonl(self, lines: Iterable[str], name: str = "input") -> list[str]:
        """Read games written by export_jsonl. All or nothing: a bad line names its number and
        nothing is added. A game id already in the log is refused (nothing is overwritten)."""
        games: dict[str, dict] = {}
        events: list[tuple] = []
        images: list[tuple] = []
        for n, line in enumerate(_lines(lines), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise StoreError(f"{name}, line {n}: not valid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise StoreError(f"{name}, line {n}: not a JSON object")
            kind = rec.get("kind")
            try:
                if kind == "game":
                    if rec.get("format") != FORMAT:
                        raise StoreError(f"{name}, line {n}: format must be '{FORMAT}'")
                    gid = _text(rec, "game")
                    if gid in games or self.game(gid) is not None:
                        raise StoreError(f"{name}, line {n}: game '{gid}' is already in the log")
                    games[gid] = rec
                elif kind == "event":
                    gid = _text(rec, "game")
                    if gid not in games:
                        raise StoreError(f"{name}, line {n}: event of game '{gid}' before its header line")
                    ev = Event.from_dict(rec)
                    if not isinstance(rec.get("data", {}), dict) or not isinstance(rec.get("secret", {}), dict):
                        raise StoreError(f"{name}, line {n}: 'data' and 'secret' must be objects")
                    events.append((gid, ev))
                elif kind == "image":
                    raw = base64.b64decode(_text(rec, "base64"), validate=True)
                    images.append((_text(rec, "digest"), str(rec.get("mime", "image/png")), raw))
                else:
                    raise StoreError(f"{name}, line {n}: unknown kind {kind!r}")
            except StoreError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise StoreError(f"{name}, line {n}: {_one_line(exc) or 'malformed record'}") from None
        seqs: dict[str, int] = {}
        for gid, ev in events:
            if ev.seq != seqs.get(gid, 0) + 1:
                raise StoreError(f"{name}: game '{gid}' events are not numbered 1, 2, 3 ... (saw {ev.seq})")
            seqs[gid] = ev.seq
        try:
            with self._tx():
                for gid, g in games.items():
                    self.db.execute("INSERT INTO games (id, created, title, source, finished) VALUES (?, ?, ?, ?, ?)",
                                    (gid, float(g.get("created", time.time())), str(g.get("title", "")),
                                     str(g.get("source", "")), int(bool(g.get("finished")))))
                for gid, ev in events:
                    self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                                    (gid, ev.seq, ev.ts, ev.type, int(ev.public), json.dumps(ev.data),
                                     json.dumps(ev.secret)))
                for d, mime, raw in images:
                    self.db.execute("INSERT OR IGNORE INTO images VALUES (?, ?, ?)", (d, mime, sqlite3.Binary(raw)))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: import failed, nothing was added ({_one_line(exc)})") from None
        return list(games)

    # ------------------------------------------------------------------ helpers
    def _tx(self):
        return _Tx(self.db)


class _Tx:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, et, ev, tb):
        if et is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
        return False


def _lines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        yield line.rstrip("\n")


def _text(rec: dict, key: str) -> str:
    v = rec.get(key)
    if not isinstance(v, str) or not v:
        raise ValueError(f"'{key}' must be a non-empty string")
    return v


def _one_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else exc.__class__.__name__
