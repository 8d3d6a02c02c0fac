"""The state of one game of Zendo: pure domain, no Flask, no SQLite.

Everything that happens is an `Event`; the game's state is the fold of its events, so the game log
(zendo.store) can rebuild any game and the replay page can step through one. Each event has a
public part (`data`: what every student at the table may know) and a secret part (`secret`: the
rule, proposed marks, judgment calls, rulings, hidden Mondo votes). Student-facing code reads only
`public_state()` and public event data; the version counter it sees moves only on public events,
so not even the existence of a secret event reaches a student.

Seed 000 is the rulebook: turns (build a koan, say "Master" or "Mondo", optionally guess), Mondo
with hidden votes and guessing stones, guesses that must be clarified and checked against the
koans on the table before they become official, silent judgment calls, katsu, Master's mistakes.
"""
from __future__ import annotations

import json
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .doubts import FactsCache, describe as describe_doubt, doubt_key, doubts_for
from .facts import KoanFacts, Predicate
from .geometry import hull_signed_distance
from .koans import split_koans
from .relations import RelationsConfig, koan_facts
from .scene import Piece, Scene, scene_from_dict

WHITE, BLACK = "white", "black"
MARKS = (WHITE, BLACK)

#: A marked koan whose pieces move by more than this (after the best move of the whole koan
#: along the table) has been disturbed: katsu.
KATSU_MM = 3.0

#: On a camera's table a marked koan read differently is katsu, called to everyone, only where a
#: hand came within HAND_NEAR_MM of it (its footprint on the table, or holding one of its pieces)
#: in the HAND_WINDOW_S before; otherwise the Master alone is told. Why: nothing but a hand moves
#: a piece, and on still tables every change the camera reads is its own (a piece read late, one
#: dropped, a class vote turned: 7 false katsu on 4 of 12 recordings of 10 s, 550000-). A hand
#: putting a piece down within the koan gap covers that spot; the window spans the tracker's
#: confirmation after the hand has gone: on 580000- every change was raised with 2 s, one missed
#: with 1 s (docs/perception.md, "Katsu and hands").
HAND_NEAR_MM = 45.0
HAND_WINDOW_S = 3.0

MAX_NAME = 40
MAX_TEXT = 500


class GameError(ValueError):
    """A request the game refuses; the message is one line, safe to show to whoever asked."""


# ----------------------------------------------------------------------------- events


@dataclass(frozen=True)
class Event:
    seq: int
    type: str
    data: dict  # public: any student may see it
    secret: dict = field(default_factory=dict)  # the Master's eyes only
    public: bool = True  # False: the event's very existence is the Master's business
    ts: float = 0.0

    def to_dict(self) -> dict:
        return {"seq": self.seq, "ts": self.ts, "type": self.type, "public": self.public,
                "data": self.data, "secret": self.secret}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Event":
        return cls(int(d["seq"]), str(d["type"]), dict(d.get("data") or {}), dict(d.get("secret") or {}),
                   bool(d.get("public", True)), float(d.get("ts", 0.0)))


# ----------------------------------------------------------------------------- rules adapter


@dataclass(frozen=True)
class Verdict:
    """A proposed mark, as the Master sees it."""

    mark: str
    judgment_call: bool
    borderline: list
    witnesses: list
    doubts: list = field(default_factory=list)  # perception doubts (zendo.doubts) the mark rests on


class RuleProblem(GameError):
    """A rule or guess the rule language cannot take as it stands; `info` says why, for the author."""

    def __init__(self, message: str, info: dict):
        super().__init__(message)
        self.info = info


class Referee:
    """The rule language, behind one small door (zendo.rules is imported on first use)."""

    def _rules(self):
        try:
            from . import rules
        except ModuleNotFoundError as exc:  # pragma: no cover - only before the rules area lands
            raise GameError("the rule language is not installed") from exc
        return rules

    def parse(self, text: str):
        r = self._rules()
        try:
            return r.parse_rule(text)
        except r.RuleSyntaxError as exc:
            col = getattr(exc, "column", None)
            msg = getattr(exc, "message", None) or str(exc)
            raise RuleProblem(f"could not read that: {msg}", {"kind": "syntax", "message": msg, "column": col}) from None
        except r.RuleAmbiguous as exc:
            readings = [str(x) for x in getattr(exc, "readings", [])]
            raise RuleProblem("that can be read more than one way", {"kind": "ambiguous", "readings": readings}) from None
        except r.RuleIllegal as exc:
            why = str(getattr(exc, "restriction", "") or exc)
            raise RuleProblem(f"that is not a legal rule: {why}", {"kind": "illegal", "restriction": why}) from None
        except r.RuleError as exc:
            raise RuleProblem(f"could not read that: {exc}", {"kind": "syntax", "message": str(exc), "column": None}) from None

    def canonical(self, rule) -> str:
        try:
            return str(rule.canonical())
        except Exception:  # noqa: BLE001 - a display nicety only
            return str(rule)

    def evaluate(self, rule, facts: KoanFacts) -> bool:
        return bool(rule.evaluate(facts))

    def mark(self, rule, facts: KoanFacts, rulings: Mapping, pieces=(), doubts=(), facts_of=None) -> Verdict:
        r = self._rules()
        if doubts and facts_of is not None:
            m = r.mark_perceived(rule, facts, list(pieces), list(doubts), facts_of, rulings=dict(rulings) or None)
        else:
            m = r.mark(rule, facts, rulings=dict(rulings) or None)
        return Verdict(str(m.mark), bool(m.judgment_call), list(getattr(m, "borderline", []) or []),
                       [str(w) for w in (getattr(m, "witnesses", []) or [])], list(getattr(m, "doubts", []) or []))


# ----------------------------------------------------------------------------- records


@dataclass
class Player:
    name: str
    stones: int = 0  # guessing stones


@dataclass
class KoanRecord:
    id: str
    pieces: list[dict]  # piece dicts, zendo-scene/1
    built_by: str | None = None
    mark: str | None = None  # the public mark
    marked_via: str | None = None
    stones_read: list[str] = field(default_factory=list)  # stone colours the camera sees beside it
    snapshot: str | None = None  # digest of the image taken when it appeared
    active: bool = True
    counterexample_for: int | None = None
    judged: bool = False  # the Master's eyes only: its mark rested on a judgment call when made
    doubts: list[dict] = field(default_factory=list)  # the camera's doubts about it (zendo.doubts), Master only

    @property
    def piece_ids(self) -> tuple[str, ...]:
        return tuple(p["id"] for p in self.pieces)

    def scene(self) -> Scene:
        return scene_from_dict({"format": "zendo-scene/1", "units": "mm", "pieces": self.pieces}, check_geometry=False)


@dataclass
class Mondo:
    koan_id: str
    votes: dict[str, str] = field(default_factory=dict)
    open: bool = True
    mark: str | None = None
    winners: list[str] = field(default_factory=list)


@dataclass
class Guess:
    id: int
    player: str
    text: str
    status: str = "stated"  # stated, unclear, contradicted, ready, official, disproved, won, withdrawn
    reading: str | None = None  # the text as the rule language took it (after clarifying)
    problem: dict | None = None
    contradicted_by: list[dict] = field(default_factory=list)
    counterexample: str | None = None  # koan id


@dataclass
class Katsu:
    id: int
    koan_id: str
    before: list[dict]
    after: list[dict]
    open: bool = True
    how: str | None = None
    public: bool = True  # False: no hand came near, so only the Master was told (the camera may have misread it)


def _piece_dicts(pieces: Iterable[Piece]) -> list[dict]:
    return [p.to_dict() for p in pieces]


def same_arrangement(before: list[dict], after: list[dict], tol: float = KATSU_MM) -> bool:
    """True if `after` is `before` moved as a whole along the table (slid and turned)."""
    if sorted(p["id"] for p in before) != sorted(p["id"] for p in after):
        return False
    b = {p["id"]: p for p in before}
    a = {p["id"]: p for p in after}
    ids = sorted(b)
    pb = np.vstack([_verts(b[i]) for i in ids])
    pa = np.vstack([_verts(a[i]) for i in ids])
    if np.abs(pb[:, 2] - pa[:, 2]).max() > tol:
        return False
    cb, ca = pb[:, :2].mean(axis=0), pa[:, :2].mean(axis=0)
    h = (pb[:, :2] - cb).T @ (pa[:, :2] - ca)
    u, _, vt = np.linalg.svd(h)
    r = vt.T @ u.T
    if np.linalg.det(r) < 0:  # a reflection is not a move
        vt[-1] *= -1
        r = vt.T @ u.T
    moved = (pb[:, :2] - cb) @ r.T + ca
    return float(np.linalg.norm(moved - pa[:, :2], axis=1).max()) <= tol


def _verts(piece: dict) -> np.ndarray:
    p = Piece(piece["id"], piece["color"], piece["size"], tuple(piece["position"]), tuple(piece["rotation"]))
    return p.vertices


def _key_out(key) -> list:
    return list(key)


def _key_in(key) -> tuple:
    return tuple(key)


_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _clean(text: Any, limit: int, what: str) -> str:
    if not isinstance(text, str):
        raise GameError(f"{what} must be text")
    text = " ".join(text.split())
    if not text:
        raise GameError(f"{what} is empty")
    odd = next((c for c in text if unicodedata.category(c) in ("Cc", "Cs") or c in _BIDI_CONTROLS), None)
    if odd is not None:  # a right-to-left override turns every line it is shown in around; a lone
        # surrogate (sent as a JSON escape) cannot be written out as UTF-8 and broke the pages
        raise GameError(f"{what} contains an invisible control character (U+{ord(odd):04X})")
    if len(text) > limit:
        raise GameError(f"{what} is too long (at most {limit} characters)")
    return text


# ----------------------------------------------------------------------------- the game


class Game:
    """One game. Mutating methods validate, then emit events; `apply` is the only place state changes."""

    def __init__(self, game_id: str = "game", referee: Referee | None = None,
                 relations: RelationsConfig | None = None, clock: Callable[[], float] = time.time):
        self.id = game_id
        self.referee = referee or Referee()
        self.relations = relations or RelationsConfig()
        self.clock = clock
        self.listeners: list[Callable[[Event], None]] = []
        self.events: list[Event] = []
        self.public_version = 0
        # state
        self.phase = "setup"  # setup -> playing -> finished
        self.rule_text: str | None = None
        self._rule = None
        self.rulings: dict[str, dict[tuple, Any]] = {}  # koan id -> predicate key -> value
        self.players: dict[str, Player] = {}
        self.order: list[str] = []
        self.turn: str | None = None
        self.koans: dict[str, KoanRecord] = {}
        self._verdicts: dict[tuple, Verdict] = {}  # `_verdict_key` -> proposed mark
        self._alternatives: dict[tuple, FactsCache] = {}  # (koan id, its pieces) -> its doubts' alternatives' facts
        self.loose_doubts: list[dict] = []  # the camera's latest "missed" doubts far from every koan (not logged)
        self.hands_in_view = 0  # hands the camera sees over the table now (vision/hands.py; not logged)
        self.hands_over: list[str] = []  # the koans whose pieces a hand hides now, held as they were (not logged)
        self._hand_seen: dict[str, float] = {}  # koan id -> when a hand last came near it (clock; not logged)
        self._hands_read_to = float("-inf")  # the newest of a feed's "hands_seen" already read (not logged)
        self.koan_count = 0
        self.mondo: Mondo | None = None
        self.requests: list[dict] = []  # "Master!" calls waiting for a mark
        self.guesses: list[Guess] = []
        self.katsu: list[Katsu] = []
        self.winner: str | None = None
        self.answers: list[dict] = []
        self._facts: dict[str, KoanFacts] = {}

    # ------------------------------------------------------------------ plumbing
    def emit(self, type_: str, data: dict | None = None, secret: dict | None = None, public: bool = True) -> Event:
        ev = Event(len(self.events) + 1, type_, data or {}, secret or {}, public, round(self.clock(), 3))
        self.apply(ev)
        for fn in self.listeners:
            fn(ev)
        return ev

    @classmethod
    def replay(cls, events: Iterable[Event | Mapping], game_id: str = "game", referee: Referee | None = None,
               upto: int | None = None) -> "Game":
        g = cls(game_id, referee)
        for ev in events:
            ev = ev if isinstance(ev, Event) else Event.from_dict(ev)
            if upto is not None and ev.seq > upto:
                break
            g.apply(ev)
        return g

    def apply(self, ev: Event) -> None:
        handler = getattr(self, f"_on_{ev.type}", None)
        if handler is None:
            raise GameError(f"unknown event type '{ev.type}'")
        handler(ev.data, ev.secret)
        self.events.append(ev)
        if ev.public:
            self.public_version += 1

    # ------------------------------------------------------------------ secret rule
    @property
    def rule(self):
        if self._rule is None and self.rule_text:
            self._rule = self.referee.parse(self.rule_text)
        return self._rule

    def set_rule(self, text: str) -> str:
        """Parse and set the secret rule (setup only). Returns its canonical reading."""
        text = _clean(text, MAX_TEXT, "the rule")
        if self.phase == "finished":
            raise GameError("the game is over")
        if self.phase == "playing" and self.rule_text:
            raise GameError("the rule cannot change once the game has started")
        rule = self.referee.parse(text)
        canonical = self.referee.canonical(rule)
        self.emit("rule_set", {}, {"text": text, "canonical": canonical}, public=False)
        return canonical

    def _on_rule_set(self, data, secret):
        self.rule_text = secret["text"]
        self._rule = None

    def canonical_rule(self) -> str | None:
        return self.referee.canonical(self.rule) if self.rule_text else None

    # ------------------------------------------------------------------ players and turns
    def join(self, name: str) -> Player:
        name = _clean(name, MAX_NAME, "your name")
        if name in self.players:
            return self.players[name]
        if self.phase == "finished":
            raise GameError("the game is over")
        self.emit("player_joined", {"player": name})
        return self.players[name]

    def _on_player_joined(self, data, secret):
        self.players[data["player"]] = Player(data["player"])
        self.order.append(data["player"])
        if self.phase == "playing" and self.turn is None:
            self.turn = data["player"]

    def start(self) -> None:
        if self.phase != "setup":
            raise GameError("the game has already started")
        if not self.rule_text:
            raise GameError("set the secret rule first")
        active = [k for k in self.koans.values() if k.active]
        if any(k.mark is None for k in active):
            raise GameError("mark the initial koans first")
        self.emit("game_started", {"turn": self.order[0] if self.order else None})

    def _on_game_started(self, data, secret):
        self.phase = "playing"
        self.turn = data.get("turn")

    def end_turn(self, by: str | None = None) -> str | None:
        self._playing()
        if by is not None and by != self.turn:
            raise GameError("it is not your turn")
        if not self.order:
            return None
        i = self.order.index(self.turn) if self.turn in self.order else -1
        nxt = self.order[(i + 1) % len(self.order)]
        self.emit("turn", {"player": nxt, "after": self.turn})
        return nxt

    def _on_turn(self, data, secret):
        self.turn = data["player"]

    def built_this_turn(self) -> bool:
        """Has the student whose turn it is already built their koan this turn?"""
        for ev in reversed(self.events):
            if ev.type in ("turn", "game_started"):
                return False
            if ev.type == "koan_built" and ev.data.get("built_by") == self.turn and self.turn is not None:
                return True
        return False

    def _playing(self) -> None:
        if self.phase == "finished":
            raise GameError("the game is over")
        if self.phase != "playing":
            raise GameError("the game has not started yet")

    # ------------------------------------------------------------------ the table
    def observe(self, scene: Scene, snapshot: str | None = None) -> list[Event]:
        """Bring the koans in line with what the table shows: new koans, koans changed while still
        unmarked, koans broken down, katsu on marked koans, stones beside each koan."""
        out: list[Event] = []
        groups = split_koans(scene)
        perception = scene.extra.get("perception")
        self._note_hands(perception)
        seen_doubts = list((perception or {}).get("doubts", []))
        # places the camera saw something it could not read, away from every koan: the Master's eyes only
        self.loose_doubts = [d for d in seen_doubts if d["kind"] == "missed" and not doubts_for(scene.pieces, [d])]
        self.hands_in_view = len((perception or {}).get("hands") or ())

        def doubts(pieces: list[dict]) -> dict:
            """The camera's doubts about these pieces: secret, the Master's alone."""
            if not seen_doubts:
                return {}
            return {"doubts": doubts_for([by_id[p["id"]] for p in pieces if p["id"] in by_id], seen_doubts)}

        owner = {pid: k.id for k in self.koans.values() if k.active for pid in k.piece_ids}
        by_id = {p.id: p for p in scene.pieces}
        stone_color = {s.id: s.color for s in scene.stones}
        now: dict[str, list[dict]] = {}  # known koan -> every piece now in a group it shares
        group_koan: list[str | None] = []
        for g in groups:
            pieces = _piece_dicts(by_id[i] for i in g.piece_ids)
            owners = sorted({owner[i] for i in g.piece_ids if i in owner}, key=_koan_order)
            group_koan.append(owners[0] if owners else None)
            for k in owners:
                now.setdefault(k, []).extend(pieces)
        merged = {k for n, g in enumerate(groups) for k in now if k != group_koan[n]
                  and any(p["id"] in self.koans[k].piece_ids for p in _piece_dicts(by_id[i] for i in g.piece_ids))
                  and self.koans[k].mark is None and not self._in_mondo(k)}
        for k in sorted(merged, key=_koan_order):  # an unbuilt koan run into another one joins it
            out.append(self.emit("koan_removed", {"koan": k}))
            now.pop(k)
        for k, pieces in now.items():
            rec = self.koans[k]
            if rec.mark is None and not self._in_mondo(k):
                if not _same_pieces(rec.pieces, pieces):  # still being built, or rebuilt: no katsu
                    out.append(self.emit("koan_changed", {"koan": k, "pieces": pieces}, doubts(pieces)))
            else:
                out.extend(self._check_disturbed(rec, pieces, by_hand=perception is None or self._touched(k)))
        for n, g in enumerate(groups):
            kid = group_koan[n]
            if kid is None:
                pieces = _piece_dicts(by_id[i] for i in g.piece_ids)
                out.append(self.emit("koan_built", {"koan": self._next_koan_id(), "pieces": pieces,
                                                    "built_by": self.turn if self.phase == "playing" else None,
                                                    "snapshot": snapshot}, doubts(pieces)))
                kid = out[-1].data["koan"]
                group_koan[n] = kid
            stones = sorted(stone_color[s] for s in g.stone_ids)
            if stones != self.koans[kid].stones_read and kid == (group_koan[n]):
                out.append(self.emit("stones_read", {"koan": kid, "stones": stones}))
        for rec in list(self.koans.values()):
            if rec.active and rec.id not in now and rec.id not in group_koan:
                out.append(self.emit("koan_removed", {"koan": rec.id}))
        held = set((perception or {}).get("held") or ())
        self.hands_over = sorted((k.id for k in self.koans.values() if k.active and held & set(k.piece_ids)),
                                 key=_koan_order)
        return out

    def _note_hands(self, perception: Mapping | None) -> None:
        """When a hand last came near each active koan: a camera's hands (their footprints on the
        table, vision/hands.py) within HAND_NEAR_MM of its pieces, or holding one of them. A
        feed's "hands_seen" (server.feed.RecentHands) holds every hand it read in the last
        HAND_WINDOW_S, this scene's among them, each with when; a sighting is read once, for the
        feed sends it again with every scene until it is that old."""
        if not perception:
            return
        kept = perception.get("hands_seen")
        if kept is None:
            sightings = [{"at": self.clock(), "hands": perception.get("hands") or (), "held": perception.get("held") or ()}]
        else:
            sightings = [s for s in kept if float(s["at"]) > self._hands_read_to]
            self._hands_read_to = max([self._hands_read_to, *(float(s["at"]) for s in kept)])
        sightings = [s for s in sightings if s["hands"] or s["held"]]
        if not sightings:
            return
        koans = [(rec.id, set(rec.piece_ids), rec.scene().pieces) for rec in self.active_koans()]
        for seen in sightings:
            at, held = float(seen["at"]), set(seen["held"])
            feet = [np.asarray(f, float).reshape(-1, 2) for f in seen["hands"] if len(f)]
            for kid, ids, pieces in koans:
                if held & ids or any(_near(pieces, f) for f in feet):
                    self._hand_seen[kid] = max(self._hand_seen.get(kid, at), at)

    def _touched(self, koan_id: str) -> bool:
        """A hand came near the koan in the last HAND_WINDOW_S."""
        seen = self._hand_seen.get(koan_id)
        return seen is not None and self.clock() - seen <= HAND_WINDOW_S

    def _check_disturbed(self, rec: KoanRecord, now: list[dict], by_hand: bool = True) -> list[Event]:
        """Katsu on a marked koan whose pieces changed; called to everyone only `by_hand` (a hand
        came near it, or the table is no camera's), else told to the Master alone."""
        open_k = self.open_katsu(rec.id)
        if _same_pieces(rec.pieces, now):
            if open_k:
                return [self.emit("katsu_resolved", {"katsu": open_k.id, "koan": rec.id, "how": "restored"},
                                  public=open_k.public)]
            return []
        if same_arrangement(rec.pieces, now):
            ev = [self.emit("koan_moved", {"koan": rec.id, "pieces": now})]
            if open_k:
                ev.append(self.emit("katsu_resolved", {"katsu": open_k.id, "koan": rec.id, "how": "restored"},
                                    public=open_k.public))
            return ev
        if open_k:
            if _same_pieces(open_k.after, now):
                return []
            called = by_hand and not open_k.public  # a hand has come since: now everyone is told
            return [self.emit("katsu_changed", {"katsu": open_k.id, "koan": rec.id},
                              {"after": now, **({"called": True} if called else {})}, public=open_k.public or by_hand)]
        return [self.emit("katsu", {"katsu": len(self.katsu) + 1, "koan": rec.id},
                          {"before": rec.pieces, "after": now, **({} if by_hand else {"no_hand": True})},
                          public=by_hand)]

    def open_katsu(self, koan_id: str) -> Katsu | None:
        for k in self.katsu:
            if k.open and k.koan_id == koan_id:
                return k
        return None

    def _next_koan_id(self) -> str:
        return f"k{self.koan_count + 1}"

    def _on_koan_built(self, data, secret):
        self.koan_count += 1
        rec = KoanRecord(data["koan"], list(data["pieces"]), data.get("built_by"), snapshot=data.get("snapshot"),
                         doubts=list(secret.get("doubts", [])))
        if data.get("counterexample_for") is not None:
            rec.counterexample_for = data["counterexample_for"]
        self.koans[rec.id] = rec
        self._facts.pop(rec.id, None)

    def _on_koan_changed(self, data, secret):
        self.koans[data["koan"]].pieces = list(data["pieces"])
        self.koans[data["koan"]].doubts = list(secret.get("doubts", []))
        self.rulings.pop(data["koan"], None)
        self._facts.pop(data["koan"], None)

    def _on_koan_moved(self, data, secret):
        self.koans[data["koan"]].pieces = list(data["pieces"])
        self._facts.pop(data["koan"], None)

    def _on_koan_removed(self, data, secret):
        rec = self.koans[data["koan"]]
        rec.active = False
        for k in self.katsu:
            if k.koan_id == rec.id and k.open:
                k.open, k.how = False, "broken down"
        self.requests = [r for r in self.requests if r["koan"] != rec.id]

    def _on_stones_read(self, data, secret):
        self.koans[data["koan"]].stones_read = list(data["stones"])

    def _on_katsu(self, data, secret):
        self.katsu.append(Katsu(data["katsu"], data["koan"], secret.get("before", []), secret.get("after", []),
                                public=not secret.get("no_hand")))

    def _on_katsu_changed(self, data, secret):
        for k in self.katsu:
            if k.id == data["katsu"]:
                k.after = secret.get("after", k.after)
                k.public = k.public or bool(secret.get("called"))

    def katsu_accept(self, katsu_id: int) -> None:
        """The Master takes the disturbed koan as it now stands (the koan keeps its mark: audit it)."""
        k = self._katsu(katsu_id)
        self.emit("katsu_resolved", {"katsu": k.id, "koan": k.koan_id, "how": "accepted"}, {"pieces": k.after},
                  public=k.public)

    def katsu_call(self, katsu_id: int) -> None:
        """The Master calls katsu on a change told to them alone (they looked: it was disturbed)."""
        k = self._katsu(katsu_id)
        if k.public:
            raise GameError(f"katsu {k.id} has been called already")
        self.emit("katsu_changed", {"katsu": k.id, "koan": k.koan_id}, {"after": k.after, "called": True})

    def _katsu(self, katsu_id: int) -> Katsu:
        for k in self.katsu:
            if k.id == katsu_id and k.open:
                return k
        raise GameError("no such katsu alert")

    def _on_katsu_resolved(self, data, secret):
        for k in self.katsu:
            if k.id == data["katsu"]:
                k.open, k.how = False, data["how"]
        if data["how"] == "accepted" and "pieces" in secret:
            self.koans[data["koan"]].pieces = list(secret["pieces"])
            self._facts.pop(data["koan"], None)

    def active_koans(self) -> list[KoanRecord]:
        return [k for k in self.koans.values() if k.active]

    def koan(self, koan_id: str) -> KoanRecord:
        rec = self.koans.get(koan_id)
        if rec is None or not rec.active:
            raise GameError(f"there is no koan '{koan_id}' on the table")
        return rec

    def koan_of_piece(self, piece_id: str) -> KoanRecord:
        for k in self.active_koans():
            if piece_id in k.piece_ids:
                return k
        raise GameError("that piece is not part of any koan")

    # ------------------------------------------------------------------ facts, marks, rulings
    def facts(self, koan_id: str, with_rulings: bool = True) -> KoanFacts:
        rec = self.koan(koan_id)
        f = self._facts.get(koan_id)
        if f is None:
            f = koan_facts(koan_id, rec.scene().pieces, self.relations)
            self._facts[koan_id] = f
        if with_rulings and self.rulings.get(koan_id):
            f = f.with_values(self.rulings[koan_id])
        return f

    def proposed(self, koan_id: str) -> Verdict | None:
        """The mark the secret rule gives this koan under the Master's rulings (None before a rule)."""
        if not self.rule_text:
            return None
        rec = self.koan(koan_id)
        memo = self._verdict_key(rec)
        if memo not in self._verdicts:
            if len(self._verdicts) > 256:
                self._verdicts.clear()
            self._verdicts[memo] = self.referee.mark(
                self.rule, self.facts(koan_id, with_rulings=False), self.rulings.get(koan_id, {}),
                rec.scene().pieces, rec.doubts, self._alternatives_facts(rec))
        return self._verdicts[memo]

    def _alternatives_facts(self, rec: KoanRecord) -> FactsCache:
        """The facts of the koan's doubts' alternatives, kept while its pieces stay as they are:
        a ruling or a settled doubt weighs the same alternatives again, and working out their
        facts is nearly all of that (a koan at the picture's edge has dozens)."""
        key = (rec.id, json.dumps(rec.pieces, sort_keys=True, default=str))
        cache = self._alternatives.get(key)
        if cache is None:
            if len(self._alternatives) > 64:
                self._alternatives.clear()
            cache = self._alternatives[key] = FactsCache(
                lambda ps, kid=rec.id: koan_facts(kid, list(ps), self.relations))
        return cache

    def _verdict_key(self, rec: KoanRecord) -> tuple:
        """What a proposed mark rests on: the rule, the koan's pieces and the camera's doubts about
        it, and the Master's rulings on it. Why not simply the events so far: on a camera's table
        every event (another koan settling, a student joining) would weigh every koan's doubts
        again, and a koan at the picture's edge has up to 36 alternative shapes to read (about
        0.25-0.7 s on a 2-core CPU); between its own changes a koan's mark is read from here."""
        ruled = tuple(sorted((repr(k), repr(v)) for k, v in self.rulings.get(rec.id, {}).items()))
        return (rec.id, self.rule_text, json.dumps(rec.pieces, sort_keys=True, default=str),
                json.dumps(rec.doubts, sort_keys=True, default=str), ruled)

    def borderline(self, koan_id: str) -> list[Predicate]:
        return self.facts(koan_id, with_rulings=False).borderline()

    def rule_on(self, koan_id: str, key: Iterable, value: Any, by: str = "master") -> None:
        """The Master's silent ruling on a borderline predicate of one koan."""
        self.koan(koan_id)
        k = _key_in(key)
        pred = self.facts(koan_id, with_rulings=False).predicates.get(k)
        if pred is None:
            raise GameError("that koan has no such predicate")
        allowed = {pred.value, pred.alternative if pred.alternative is not None else (not pred.value)}
        if value not in allowed:
            raise GameError("that is not a possible value of the predicate")
        self.emit("ruling", {}, {"koan": koan_id, "key": _key_out(k), "value": value, "by": by}, public=False)

    def settle_doubt(self, koan_id: str, key: Iterable, by: str = "master") -> None:
        """The Master has looked: this doubt of the camera's about the koan no longer makes a
        judgment call (e.g. "nothing is under p3")."""
        rec = self.koan(koan_id)
        k = _key_in(key)
        if k not in {doubt_key(d) for d in rec.doubts}:
            raise GameError("the camera has no such doubt about that koan")
        self.emit("ruling", {}, {"koan": koan_id, "key": _key_out(k), "value": "settled", "by": by}, public=False)

    def _on_ruling(self, data, secret):
        self.rulings.setdefault(secret["koan"], {})[_key_in(secret["key"])] = secret["value"]

    def _pins(self, koan_id: str, keys: Iterable[tuple] | None = None) -> list[dict]:
        """Borderline predicates not yet ruled on, fixed at the value the table shows: once an
        answer or a mark has relied on a value, every later answer and mark keeps to it."""
        f = self.facts(koan_id, with_rulings=False)
        ruled = self.rulings.get(koan_id, {})
        wanted = None if keys is None else set(keys)
        out = []
        for p in f.borderline():
            if p.key in ruled or (wanted is not None and p.key not in wanted):
                continue
            out.append({"koan": koan_id, "key": _key_out(p.key), "value": p.value})
        return out

    def _apply_pins(self, secret: Mapping) -> None:
        for pin in secret.get("pins", []):
            self.rulings.setdefault(pin["koan"], {})[_key_in(pin["key"])] = pin["value"]

    # ------------------------------------------------------------------ marking
    def request_master(self, player: str | None, koan_id: str) -> None:
        """A student says "Master": the koan waits for the Master's mark."""
        self._playing()
        rec = self.koan(koan_id)
        if rec.mark is not None:
            raise GameError(f"koan {koan_id} is already marked")
        if self._in_mondo(koan_id):
            raise GameError(f"koan {koan_id} is in a Mondo")
        if any(r["koan"] == koan_id for r in self.requests):
            return
        self.emit("master_called", {"koan": koan_id, "player": player})

    def _on_master_called(self, data, secret):
        self.requests.append({"koan": data["koan"], "player": data.get("player")})

    def mark(self, koan_id: str, color: str | None = None, via: str = "master") -> str:
        """Put a marking stone beside a koan. color None: the rule's proposed mark."""
        rec = self.koan(koan_id)
        if self.phase == "finished":
            raise GameError("the game is over")
        if self._in_mondo(koan_id):
            raise GameError(f"koan {koan_id} is in a Mondo: reveal it instead")
        verdict = self.proposed(koan_id)
        color = _chosen_mark(color, verdict)
        secret = self._verdict_secret(koan_id, verdict)
        self.emit("koan_marked", {"koan": koan_id, "mark": color, "via": via,
                                  "correction": rec.mark is not None}, secret)
        return color

    def _verdict_secret(self, koan_id: str, verdict: Verdict | None) -> dict:
        if verdict is None:
            return {"pins": self._pins(koan_id)}
        return {"proposed": verdict.mark, "judgment_call": verdict.judgment_call,
                "borderline": _jsonable(verdict.borderline), "witnesses": verdict.witnesses,
                "doubts": _jsonable(verdict.doubts), "pins": self._pins(koan_id)}

    def _on_koan_marked(self, data, secret):
        rec = self.koans[data["koan"]]
        rec.mark, rec.marked_via = data["mark"], data["via"]
        rec.judged = bool(secret.get("judgment_call"))
        self.requests = [r for r in self.requests if r["koan"] != rec.id]
        self._apply_pins(secret)

    def _in_mondo(self, koan_id: str) -> bool:
        return self.mondo is not None and self.mondo.open and self.mondo.koan_id == koan_id

    # ------------------------------------------------------------------ Mondo
    def start_mondo(self, koan_id: str, player: str | None = None) -> None:
        self._playing()
        rec = self.koan(koan_id)
        if rec.mark is not None:
            raise GameError(f"koan {koan_id} is already marked")
        if self.mondo is not None and self.mondo.open:
            raise GameError("a Mondo is already under way")
        if not self.players:
            raise GameError("a Mondo needs students")
        self.emit("mondo_started", {"koan": koan_id, "player": player})

    def _on_mondo_started(self, data, secret):
        self.mondo = Mondo(data["koan"])
        self.requests = [r for r in self.requests if r["koan"] != data["koan"]]

    def vote(self, player: str, color: str) -> None:
        self._playing()
        if self.mondo is None or not self.mondo.open:
            raise GameError("there is no Mondo to vote in")
        if player not in self.players:
            raise GameError("join the game first")
        if color not in MARKS:
            raise GameError("vote white or black")
        self.emit("mondo_vote", {"koan": self.mondo.koan_id, "player": player}, {"vote": color})

    def _on_mondo_vote(self, data, secret):
        self.mondo.votes[data["player"]] = secret["vote"]

    def mondo_ready(self) -> bool:
        return self.mondo is not None and self.mondo.open and set(self.players) <= set(self.mondo.votes)

    def reveal_mondo(self, color: str | None = None) -> dict:
        """Reveal every vote together, mark the koan, give a guessing stone to each right answer."""
        if self.mondo is None or not self.mondo.open:
            raise GameError("there is no Mondo to reveal")
        kid = self.mondo.koan_id
        verdict = self.proposed(kid)
        color = _chosen_mark(color, verdict)
        votes = dict(self.mondo.votes)
        winners = sorted(p for p, v in votes.items() if v == color)
        self.emit("mondo_revealed", {"koan": kid, "mark": color, "votes": votes, "awarded": winners},
                  self._verdict_secret(kid, verdict))
        return {"mark": color, "votes": votes, "awarded": winners}

    def _on_mondo_revealed(self, data, secret):
        self.mondo.open = False
        self.mondo.mark = data["mark"]
        self.mondo.winners = list(data["awarded"])
        rec = self.koans[data["koan"]]
        rec.mark, rec.marked_via = data["mark"], "mondo"
        rec.judged = bool(secret.get("judgment_call"))
        for p in data["awarded"]:
            if p in self.players:
                self.players[p].stones += 1
        self._apply_pins(secret)

    # ------------------------------------------------------------------ guesses
    def state_guess(self, player: str, text: str, reading: str | None = None) -> Guess:
        """A student states a guess; it is read by the rule language, clarified, and checked
        against the marked koans on the table. Nothing is spent until it is made official."""
        self._playing()
        if player not in self.players:
            raise GameError("join the game first")
        if self.players[player].stones < 1:
            raise GameError("you need a guessing stone to guess (win one in a Mondo)")
        text = _clean(text, MAX_TEXT, "your guess")
        read = _clean(reading, MAX_TEXT, "the reading") if reading else text
        problem, contradicted = None, []
        try:
            rule = self.referee.parse(read)
        except RuleProblem as exc:
            problem = exc.info
        else:
            contradicted = self._contradictions(rule)
        status = "unclear" if problem else ("contradicted" if contradicted else "ready")
        gid = len(self.guesses) + 1
        self.emit("guess_stated", {"guess": gid, "player": player, "text": text, "reading": read,
                                   "status": status, "problem": problem, "contradicted_by": contradicted})
        return self.guesses[-1]

    def _contradictions(self, rule) -> list[dict]:
        """Marked koans on the table that the guess marks the other way (seed 000: the Master points
        these out before the guess is official)."""
        out = []
        for rec in self.active_koans():
            if rec.mark is None:
                continue
            says = WHITE if self.referee.evaluate(rule, self.facts(rec.id)) else BLACK
            if says != rec.mark:
                out.append({"koan": rec.id, "mark": rec.mark, "guess_says": says})
        return out

    def _on_guess_stated(self, data, secret):
        self.guesses.append(Guess(data["guess"], data["player"], data["text"], data["status"], data.get("reading"),
                                  data.get("problem"), list(data.get("contradicted_by") or [])))

    def guess(self, guess_id: int) -> Guess:
        for g in self.guesses:
            if g.id == guess_id:
                return g
        raise GameError("no such guess")

    def make_official(self, guess_id: int, player: str | None = None) -> Guess:
        g = self.guess(guess_id)
        self._playing()
        if player is not None and g.player != player:
            raise GameError("that is not your guess")
        if g.status != "ready":
            raise GameError({"unclear": "clarify the guess first", "contradicted": "a koan on the table contradicts that guess"}
                            .get(g.status, "that guess cannot be made official now"))
        if self.players[g.player].stones < 1:
            raise GameError("you need a guessing stone to guess")
        if any(x.status == "official" for x in self.guesses):
            raise GameError("the Master is still answering another guess")
        self.emit("guess_official", {"guess": g.id, "player": g.player, "reading": g.reading})
        return g

    def _on_guess_official(self, data, secret):
        g = self.guess(data["guess"])
        g.status = "official"
        self.players[g.player].stones -= 1

    def withdraw(self, guess_id: int, player: str | None = None) -> None:
        g = self.guess(guess_id)
        if player is not None and g.player != player:
            raise GameError("that is not your guess")
        if g.status not in ("stated", "unclear", "contradicted", "ready"):
            raise GameError("that guess can no longer be withdrawn")
        self.emit("guess_withdrawn", {"guess": g.id, "player": g.player})

    def _on_guess_withdrawn(self, data, secret):
        self.guess(data["guess"]).status = "withdrawn"

    def suggest_counterexample(self, guess_id: int, scene: Scene) -> dict:
        """The counterexample engine's proposal for an official guess (Master only; recorded)."""
        g = self.guess(guess_id)
        if g.status != "official":
            raise GameError("only an official guess gets a counterexample")
        try:
            from . import counter
        except ModuleNotFoundError:
            result = {"found": False, "searched": "the counterexample engine is not installed"}
        else:
            result = _call_counter(counter, self.rule, self.referee.parse(g.reading or g.text), scene)
            if result.get("on_table"):  # the engine names table koans its own way: use ours
                ids = [p["id"] for p in (result.get("scene") or {}).get("pieces", [])]
                mine = [k.id for k in self.active_koans() if set(ids) & set(k.piece_ids)]
                result["on_table"] = mine[0] if mine else result["on_table"]
        self.emit("counterexample_suggested", {}, {"guess": g.id, "result": {k: v for k, v in result.items() if k != "svg"}},
                  public=False)
        return result

    def _on_counterexample_suggested(self, data, secret):
        pass

    def disprove(self, guess_id: int, koan_id: str) -> None:
        """The Master answers an official guess with a koan (built and marked) that disproves it."""
        g = self.guess(guess_id)
        if g.status != "official":
            raise GameError("that guess is not official")
        rec = self.koan(koan_id)
        if rec.mark is None:
            raise GameError(f"mark koan {koan_id} first")
        says = WHITE if self.referee.evaluate(self.referee.parse(g.reading or g.text), self.facts(koan_id)) else BLACK
        self.emit("guess_disproved", {"guess": g.id, "player": g.player, "koan": koan_id, "mark": rec.mark,
                                      "guess_says": says},
                  {"disproves": says != rec.mark})

    def _on_guess_disproved(self, data, secret):
        g = self.guess(data["guess"])
        g.status, g.counterexample = "disproved", data["koan"]
        self.koans[data["koan"]].counterexample_for = g.id

    def declare_won(self, guess_id: int) -> None:
        """The Master cannot disprove the official guess: the student has won; the rule is told."""
        g = self.guess(guess_id)
        if g.status != "official":
            raise GameError("that guess is not official")
        self.emit("guess_won", {"guess": g.id, "player": g.player, "reading": g.reading,
                                "rule": self.rule_text, "canonical": self.canonical_rule()})

    def _on_guess_won(self, data, secret):
        g = self.guess(data["guess"])
        g.status = "won"
        self.winner = data["player"]
        self.phase = "finished"

    def give_up(self) -> None:
        """The students give up; the Master tells the rule (Advice for Masters: "Yes, Tell")."""
        if self.phase == "finished":
            raise GameError("the game is over")
        self.emit("game_abandoned", {"rule": self.rule_text, "canonical": self.canonical_rule()})

    def _on_game_abandoned(self, data, secret):
        self.phase = "finished"

    # ------------------------------------------------------------------ questions about koans
    def ask(self, player: str | None, kind: str, a: str, b: str | None = None) -> dict:
        """Answer a question about the physical features of the koans. Borderline or not, the answer
        is worded the same and takes the same path (one event, pins folded into its secret part)."""
        if kind not in QUESTIONS:
            raise GameError("unknown question")
        two = QUESTIONS[kind]["pieces"] == 2
        if two and (b is None or a == b):
            raise GameError("pick two different pieces")
        ka = self.koan_of_piece(a)
        kb = self.koan_of_piece(b) if two else ka
        keys: list[tuple] = []
        if ka.id != kb.id:
            answer, value = (f"Those pieces are in different koans ({ka.id} and {kb.id}), so no.", False)
        else:
            f = self.facts(ka.id)
            answer, value, keys = _answer(kind, f, a, b)
        pins = self._pins(ka.id, keys) if keys else []
        self.emit("question", {"player": player, "kind": kind, "pieces": [a] + ([b] if two else []),
                               "koan": ka.id, "answer": answer, "value": value}, {"pins": pins})
        return {"answer": answer, "value": value}

    def _on_question(self, data, secret):
        self.answers.append({k: data[k] for k in ("player", "kind", "pieces", "answer")})
        del self.answers[:-50]
        self._apply_pins(secret)

    # ------------------------------------------------------------------ views
    def public_state(self) -> dict:
        """Everything a student may see. No rule, no proposed mark, no judgment call, no hidden vote."""
        mondo = None
        if self.mondo is not None:
            mondo = {"koan": self.mondo.koan_id, "open": self.mondo.open,
                     "voted": sorted(self.mondo.votes) if self.mondo.open else None,
                     "votes": None if self.mondo.open else dict(self.mondo.votes),
                     "mark": self.mondo.mark, "awarded": self.mondo.winners}
        finished_rule = None
        if self.phase == "finished":
            for ev in reversed(self.events):
                if ev.type in ("guess_won", "game_abandoned"):
                    finished_rule = {"text": ev.data.get("rule"), "canonical": ev.data.get("canonical")}
                    break
        return {
            "version": self.public_version,
            "phase": self.phase,
            "turn": self.turn,
            "players": [{"name": n, "stones": self.players[n].stones} for n in self.order],
            "koans": [{"id": k.id, "pieces": k.piece_ids, "mark": k.mark, "built_by": k.built_by,
                       "stones": k.stones_read, "counterexample_for": k.counterexample_for}
                      for k in self.active_koans()],
            "requests": [dict(r) for r in self.requests],
            "mondo": mondo,
            "guesses": [_public_guess(g) for g in self.guesses[-20:]],
            "katsu": [{"id": k.id, "koan": k.koan_id, "open": k.open} for k in self.katsu if k.open and k.public],
            "answers": list(self.answers[-10:]),
            "winner": self.winner,
            "rule": finished_rule,
        }

    def master_state(self) -> dict:
        """The public state plus the secret: rule, proposed marks, judgment calls, audit."""
        st = self.public_state()
        st["version"] = len(self.events)
        st["rule_text"] = self.rule_text
        st["rule_canonical"] = self.canonical_rule() if self.rule_text else None
        votes = dict(self.mondo.votes) if self.mondo is not None else {}
        st["mondo_votes"] = votes
        st["mondo_ready"] = self.mondo_ready()
        audit = []
        for rec in self.active_koans():
            row: dict = {"koan": rec.id, "mark": rec.mark, "stones": rec.stones_read, "proposed": None,
                         "judgment_call": False, "judged": rec.judged, "borderline": [], "witnesses": [], "problems": [],
                         "doubts": []}
            try:
                v = self.proposed(rec.id)
            except Exception as exc:  # noqa: BLE001 - the Master sees what went wrong
                row["problems"].append(f"cannot mark: {exc}")
                v = None
            if v is not None:
                row.update(proposed=v.mark, judgment_call=v.judgment_call, witnesses=v.witnesses,
                           doubts=[{**d, "key": list(doubt_key(d))} for d in v.doubts])
            ruled = self.rulings.get(rec.id, {})
            # which close calls could change the proposed mark: the dashboard shows those and folds
            # the rest away (on a camera's table every piece is a close call on "grounded")
            flips = {(b["predicate"], *b["pieces"]) for b in v.borderline} if v is not None else set()
            for p in self.borderline(rec.id):
                alt = p.alternative if p.alternative is not None else (not p.value)
                row["borderline"].append({**p.to_dict(), "key": _key_out(p.key), "alternative": alt,
                                          "ruled": ruled.get(p.key, None), "is_ruled": p.key in ruled,
                                          "changes_mark": p.key in flips})
            row["problems"] += _audit_problems(rec, row["proposed"])
            audit.append(row)
        st["audit"] = audit
        st["camera_doubts"] = [{**d, "text": describe_doubt(d)} for d in self.loose_doubts]
        st["hands_in_view"] = self.hands_in_view
        st["hands_over"] = self.hands_over
        st["katsu_detail"] = [{"id": k.id, "koan": k.koan_id, "open": k.open, "how": k.how, "public": k.public,
                               "before": k.before, "after": k.after} for k in self.katsu]
        st["guesses"] = [{**_public_guess(g), "official": g.status == "official"} for g in self.guesses[-20:]]
        return st


def _near(pieces: Iterable[Piece], foot: np.ndarray) -> bool:
    """Some piece's corner or tip lies within HAND_NEAR_MM of a hand's footprint (a convex polygon)."""
    return any(hull_signed_distance(foot - v[:2]) >= -HAND_NEAR_MM for p in pieces for v in p.vertices)


def _same_pieces(before: list[dict], after: list[dict], tol: float = 0.05) -> bool:
    if sorted(p["id"] for p in before) != sorted(p["id"] for p in after):
        return False
    a = {p["id"]: p for p in after}
    for p in before:
        q = a[p["id"]]
        if p["color"] != q["color"] or p["size"] != q["size"]:
            return False
        if np.abs(np.subtract(p["position"], q["position"])).max() > tol:
            return False
        if np.abs(np.subtract(p["rotation"], q["rotation"])).max() > 1e-3 and \
                np.abs(np.add(p["rotation"], q["rotation"])).max() > 1e-3:
            return False
    return True


def _koan_order(koan_id: str):
    return (len(koan_id), koan_id)


def _audit_problems(rec: KoanRecord, proposed: str | None) -> list[str]:
    """Seed 000, Master's Mistakes: a mismarked koan is called out as soon as it is noticed."""
    out = []
    marks_read = [s for s in rec.stones_read if s in MARKS]
    if proposed and rec.mark and rec.mark != proposed:
        out.append(f"mismarked: recorded {rec.mark}, the rule says {proposed}")
    if proposed and marks_read and any(s != proposed for s in marks_read):
        out.append(f"mismarked on the table: the stone beside it is {', '.join(marks_read)}, the rule says {proposed}")
    if rec.mark and marks_read and any(s != rec.mark for s in marks_read):
        out.append(f"the stone on the table ({', '.join(marks_read)}) differs from the recorded mark ({rec.mark})")
    if len(set(marks_read)) > 1:
        out.append("both a white and a black stone beside it")
    return out


def _public_guess(g: Guess) -> dict:
    return {"id": g.id, "player": g.player, "text": g.text, "reading": g.reading, "status": g.status,
            "problem": g.problem, "contradicted_by": g.contradicted_by, "counterexample": g.counterexample}


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, np.generic):
        return x.item()
    if hasattr(x, "to_dict"):
        return _jsonable(x.to_dict())
    return str(x)


def _call_counter(counter, rule, guess, scene: Scene) -> dict:
    fn = getattr(counter, "find_counterexample", None)
    if not callable(fn):
        return {"found": False, "searched": "the counterexample engine offers no search function"}
    result = fn(rule, guess, scene)
    doc = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    return _jsonable(doc)


# ----------------------------------------------------------------------------- questions

QUESTIONS = {
    "touching": {"pieces": 2, "label": "Touching?"},
    "pointing": {"pieces": 2, "label": "Pointing at?"},
    "same_direction": {"pieces": 2, "label": "Same direction?"},
    "touching_which": {"pieces": 1, "label": "Which pieces touch it?"},
    "pointing_which": {"pieces": 1, "label": "What does it point at?"},
    "grounded": {"pieces": 1, "label": "Touching the table?"},
}


def describe(f: KoanFacts, pid: str) -> str:
    return f"the {f.size(pid)} {f.color(pid)} piece ({pid})"


def _answer(kind: str, f: KoanFacts, a: str, b: str | None) -> tuple[str, bool | list, list[tuple]]:
    from .facts import key as k

    A = describe(f, a)
    if kind == "touching":
        v = f.touching(a, b)
        return (f"{'Yes' if v else 'No'}, {A} is {'' if v else 'not '}touching {describe(f, b)}.", v, [k("touching", a, b)])
    if kind == "pointing":
        v = f.points_at(a, b)
        return (f"{'Yes' if v else 'No'}, {A} is {'' if v else 'not '}pointing at {describe(f, b)}.", v, [k("pointing", a, b)])
    if kind == "same_direction":
        v = f.same_direction(a, b)
        return (f"{'Yes' if v else 'No'}, {A} and {describe(f, b)} {'point' if v else 'do not point'} in the same direction.",
                v, [k("same_direction", a, b)])
    others = [o for o in f.ids if o != a]
    if kind == "touching_which":
        hits = [o for o in others if f.touching(a, o)]
        text = (f"{_cap(A)} is touching {_join([describe(f, o) for o in hits])}." if hits
                else f"No piece is touching {A}.")
        return text, hits, [k("touching", a, o) for o in others]
    if kind == "pointing_which":
        hits = [o for o in f.pointed_at(a)]
        text = (f"{_cap(A)} is pointing at {_join([describe(f, o) for o in hits])}." if hits
                else f"{_cap(A)} is not pointing at any piece.")
        return text, hits, [k("pointing", a, o) for o in others]
    if kind == "grounded":
        v = f.grounded(a)
        return (f"{'Yes' if v else 'No'}, {A} is {'' if v else 'not '}touching the table.", v, [k("grounded", a)])
    raise GameError("unknown question")


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _chosen_mark(color: str | None, verdict) -> str:
    """The Master's explicit mark, or else the rule's; either way a real mark."""
    if color is None:
        if verdict is None:
            raise GameError("set the secret rule first")
        color = verdict.mark
    if color not in MARKS:
        raise GameError("a mark is white or black")
    return color
