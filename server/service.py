"""The one object the views talk to: a game, its table feed and its log, kept in step under a lock.

Every request first `sync()`s: if the table changed, the game observes the new scene (new koans
with a snapshot image, katsu, stones read). Every game event is written to the store the moment
it is emitted. Views get two kinds of state: `student_state()` (built only from the game's public
state and the feed's geometry) and `master_state()`.
"""
from __future__ import annotations

import threading
from typing import Any

from zendo.game import BLACK, WHITE, Game, GameError, Referee
from zendo.relations import RelationsConfig
from zendo.store import Store

from .feed import FeedError, SceneFeed, TableFeed
from .render import jpeg_bytes, koan_outline, koan_picture


class TableService:
    def __init__(self, feed: TableFeed, store: Store, game_id: str | None = None, referee: Referee | None = None,
                 rule: str | None = None, auto_mark: bool = False, source: str = "demo"):
        self.lock = threading.RLock()
        self.feed = feed
        self.store = store
        self.game_id = store.new_game(title="Zendo", source=source, game_id=game_id)
        self.game = Game(self.game_id, referee, relations=RelationsConfig(band=dict(feed.judgment_band)))
        self.game.listeners.append(lambda ev: self.store.append(self.game_id, ev))
        self.auto_mark = auto_mark
        self._seen = None
        self._jpeg: tuple[int, bytes] | None = None
        self._suggestions: dict[int, dict] = {}
        self.sync()
        if rule:
            self.game.set_rule(rule)

    # ------------------------------------------------------------------ table
    def sync(self) -> None:
        with self.lock:
            v = self.feed.version()
            if v == self._seen:
                return
            scene = self.feed.scene()
            known = {pid for k in self.game.active_koans() for pid in k.piece_ids}
            snapshot = None
            if any(p.id not in known for p in scene.pieces):
                snapshot = self.store.put_image(self.image_jpeg(), "image/jpeg")
            self.game.observe(scene, snapshot=snapshot)
            self._seen = v

    def image_jpeg(self) -> bytes:
        with self.lock:
            iv = self.feed.image_version()
            if self._jpeg is None or self._jpeg[0] != iv:
                self._jpeg = (iv, jpeg_bytes(self.feed.image_png()))
            return self._jpeg[1]

    def overlay(self, master: bool = False) -> dict:
        """Pixel geometry of pieces, stones and koans; marks only as public as the viewer may see."""
        with self.lock:
            self.sync()
            out = self.feed.outlines()
            koan_of = {pid: k.id for k in self.game.active_koans() for pid in k.piece_ids}
            polys: dict[str, list] = {}
            for p in out["pieces"]:
                p["koan"] = koan_of.get(p["id"])
                if p["koan"]:
                    polys.setdefault(p["koan"], []).append(p["polygon"])
            audit = {r["koan"]: r for r in self.game.master_state()["audit"]} if master else {}
            koans = []
            for k in self.game.active_koans():
                if k.id not in polys:
                    continue
                row = {"id": k.id, "outline": koan_outline(polys[k.id]), "mark": k.mark}
                if master and k.id in audit:
                    a = audit[k.id]
                    row.update(proposed=a["proposed"], judgment_call=a["judgment_call"],
                               problems=a["problems"], borderline=len(a["borderline"]))
                koans.append(row)
            out["koans"] = koans
            out["version"] = self.feed.version()
            return out

    # ------------------------------------------------------------------ states
    def student_state(self, player: str | None) -> dict:
        with self.lock:
            self.sync()
            st = self.game.public_state()
            me = self.game.players.get(player) if player else None
            mondo = self.game.mondo
            st["me"] = None if me is None else {
                "name": me.name, "stones": me.stones, "my_turn": self.game.turn == me.name,
                "voted": mondo.votes.get(me.name) if mondo is not None and mondo.open else None,
                "can_build": self.can_build(me.name),
            }
            st["table_version"] = self.feed.version()
            st["image_version"] = self.feed.image_version()
            st["editable"] = self.feed.editable
            return st

    def master_state(self) -> dict:
        with self.lock:
            self.sync()
            st = self.game.master_state()
            st["game_id"] = self.game_id
            st["auto_mark"] = self.auto_mark
            st["table_version"] = self.feed.version()
            st["image_version"] = self.feed.image_version()
            st["editable"] = self.feed.editable
            st["feed"] = {"label": self.feed.label, "status": self.feed.status()}
            st["suggestions"] = {str(k): v for k, v in self._suggestions.items()}
            return st

    def can_build(self, player: str) -> bool:
        g = self.game
        if not self.feed.editable or g.phase != "playing" or g.turn != player:
            return False
        return not g.built_this_turn()

    # ------------------------------------------------------------------ table edits (demo)
    def _editable(self) -> SceneFeed:
        if not isinstance(self.feed, SceneFeed):
            raise GameError("this table is a camera: build koans with your hands")
        return self.feed

    def build(self, player: str | None, name: str, seed: int | None = None) -> str:
        """Put a catalogue koan on the demo table (a student on their turn, or the Master)."""
        from .demo import CATALOGUE, build_koan

        with self.lock:
            self.sync()
            feed = self._editable()
            if name != "random" and name not in CATALOGUE:
                raise GameError("no such koan in the catalogue")
            if player is not None and not self.can_build(player):
                raise GameError("you can build one koan on your own turn")
            seed = seed if seed is not None else len(self.game.events)
            try:
                feed.place(build_koan(name, seed))
            except FeedError as exc:
                raise GameError(str(exc)) from None
            before = set(self.game.koans)
            self.sync()
            new = [k for k in self.game.koans if k not in before]
            return new[0] if new else ""

    def place_scene(self, pieces) -> str:
        with self.lock:
            feed = self._editable()
            before = set(self.game.koans)
            try:
                feed.place(list(pieces))
            except FeedError as exc:
                raise GameError(str(exc)) from None
            self.sync()
            new = [k for k in self.game.koans if k not in before]
            return new[0] if new else ""

    def break_down(self, koan_id: str) -> None:
        with self.lock:
            self.sync()
            feed = self._editable()
            feed.remove(self.game.koan(koan_id).piece_ids)
            self.sync()

    def disturb(self, koan_id: str) -> None:
        with self.lock:
            self.sync()
            feed = self._editable()
            try:
                feed.disturb(self.game.koan(koan_id).piece_ids, seed=len(self.game.events))
            except FeedError as exc:
                raise GameError(str(exc)) from None
            self.sync()

    def restore(self, katsu_id: int) -> None:
        with self.lock:
            self.sync()
            feed = self._editable()
            k = self.game._katsu(katsu_id)
            feed.restore(k.before)
            self.sync()

    def put_stone(self, koan_id: str, color: str) -> None:
        """The Master puts a stone on the demo table by hand (to try the audit)."""
        with self.lock:
            if color not in (WHITE, BLACK):
                raise GameError("a marking stone is white or black")
            feed = self._editable()
            feed.put_stone(self.game.koan(koan_id).piece_ids, color)
            self.sync()

    # ------------------------------------------------------------------ marking
    def mark(self, koan_id: str, color: str | None = None) -> str:
        with self.lock:
            self.sync()
            color = self.game.mark(koan_id, color)
            self._stone(koan_id, color)
            return color

    def _stone(self, koan_id: str, color: str) -> None:
        if isinstance(self.feed, SceneFeed):
            self.feed.put_stone(self.game.koan(koan_id).piece_ids, color)
            self.sync()

    def call(self, player: str, koan_id: str, call: str) -> None:
        """A student says "Master" or "Mondo" about the koan they built."""
        with self.lock:
            self.sync()
            if self.game.turn != player:
                raise GameError("it is not your turn")
            if call == "master":
                self.game.request_master(player, koan_id)
                if self.auto_mark:
                    self.mark(koan_id)
            elif call == "mondo":
                self.game.start_mondo(koan_id, player)
            else:
                raise GameError("say Master or Mondo")

    def reveal(self, color: str | None = None) -> dict:
        with self.lock:
            self.sync()
            out = self.game.reveal_mondo(color)
            self._stone(self.game.mondo.koan_id, out["mark"])
            return out

    # ------------------------------------------------------------------ guesses
    def suggest(self, guess_id: int) -> dict:
        with self.lock:
            self.sync()
            result = self.game.suggest_counterexample(guess_id, self.feed.scene())
            self._suggestions[guess_id] = result
            return result

    def suggestion_picture(self, guess_id: int) -> bytes:
        s = self._suggestions.get(guess_id) or {}
        sc = s.get("scene") or {}
        if not sc.get("pieces"):
            raise GameError("no counterexample to draw")
        return koan_picture(sc["pieces"], sc.get("stones"))

    def place_suggestion(self, guess_id: int) -> str:
        """Build the suggested counterexample on the demo table."""
        from zendo.scene import scene_from_dict

        with self.lock:
            s = self._suggestions.get(guess_id) or {}
            if s.get("on_table"):
                raise GameError(f"the counterexample is already on the table: koan {s['on_table']}")
            sc = s.get("scene")
            if not sc:
                raise GameError("ask for a counterexample first")
            pieces = scene_from_dict({"format": "zendo-scene/1", "units": "mm", "pieces": sc["pieces"]}).pieces
            return self.place_scene(pieces)

    def katsu_picture(self, katsu_id: int, which: str) -> bytes:
        for k in self.game.katsu:
            if k.id == katsu_id:
                return koan_picture(k.before if which == "before" else k.after)
        raise GameError("no such katsu alert")

    def koan_picture(self, koan_id: str) -> bytes:
        rec = self.game.koans.get(koan_id)
        if rec is None:
            raise GameError("no such koan")
        return koan_picture(rec.pieces)

    def act(self, fn, *args: Any, **kw: Any):
        with self.lock:
            self.sync()
            out = fn(*args, **kw)
            self.sync()
            return out
