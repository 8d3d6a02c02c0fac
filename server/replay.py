"""Stepping through a recorded game: one step per event, each with a sentence and the state after it.

Students replay finished games from public events only; the Master sees every event with its
secret part (proposed marks, judgment calls, rulings, hidden votes).
"""
from __future__ import annotations

from zendo.game import Event, Game, GameError
from zendo.store import Store

from .render import koan_picture


class _NoRules:
    """Replays never re-mark anything: what was decided is in the events."""

    def parse(self, text):  # pragma: no cover - not reached by replay
        raise GameError("replays do not read rules")


def describe(ev: Event, master: bool) -> str:
    d, s = ev.data, ev.secret
    t = ev.type
    who = d.get("player") or "someone"
    if t == "rule_set":
        return f"The Master sets the rule: {s.get('text')!r} (read as: {s.get('canonical')})"
    if t == "player_joined":
        return f"{who} joins the game"
    if t == "game_started":
        return f"The game starts; {d.get('turn') or 'the first student'} goes first"
    if t == "turn":
        return f"It is {who}'s turn"
    if t == "koan_built":
        by = f" by {d['built_by']}" if d.get("built_by") else ""
        n = len(d.get("pieces", []))
        return f"Koan {d['koan']} is built{by} ({n} piece{'' if n == 1 else 's'})"
    if t == "koan_changed":
        return f"Koan {d['koan']} is changed while still unmarked"
    if t == "koan_moved":
        return f"Koan {d['koan']} is moved along the table"
    if t == "koan_removed":
        return f"Koan {d['koan']} is broken down"
    if t == "stones_read":
        return f"Stones beside {d['koan']}: {', '.join(d['stones']) or 'none'}"
    if t == "master_called":
        return f"{who} says \"Master\" for koan {d['koan']}"
    if t == "koan_marked":
        text = f"The Master marks koan {d['koan']} {d['mark']}" + (" (a correction)" if d.get("correction") else "")
        if master and s:
            text += f" [rule: {s.get('proposed')}{', judgment call' if s.get('judgment_call') else ''}]"
        return text
    if t == "mondo_started":
        return f"Mondo on koan {d['koan']}" + (f", called by {d['player']}" if d.get("player") else "")
    if t == "mondo_vote":
        return f"{who} votes" + (f" {s.get('vote')}" if master else "")
    if t == "mondo_revealed":
        votes = ", ".join(f"{p}: {v}" for p, v in sorted(d.get("votes", {}).items()))
        won = ", ".join(d.get("awarded") or []) or "nobody"
        text = f"Mondo revealed ({votes}); koan {d['koan']} is {d['mark']}; guessing stone to {won}"
        if master and s.get("judgment_call"):
            text += " [judgment call]"
        return text
    if t == "guess_stated":
        extra = {"unclear": " (needs clarifying)", "contradicted": " (contradicted by a koan on the table)",
                 "ready": ""}.get(d.get("status"), "")
        return f"{who} guesses: {d.get('text')!r}{extra}"
    if t == "guess_official":
        return f"{who}'s guess is official: {d.get('reading')!r}"
    if t == "guess_withdrawn":
        return f"{who} withdraws a guess"
    if t == "counterexample_suggested":
        r = s.get("result", {})
        return f"Counterexample suggested for guess {s.get('guess')}: " + (
            (f"koan {r['on_table']} on the table" if r.get("on_table") else "a new koan") if r.get("found")
            else "none found")
    if t == "guess_disproved":
        return f"Koan {d['koan']} ({d['mark']}) disproves {who}'s guess (the guess says {d.get('guess_says')})"
    if t == "guess_won":
        return f"{who} wins! The rule was: {d.get('rule')!r}"
    if t == "game_abandoned":
        return f"The students give up. The rule was: {d.get('rule')!r}"
    if t == "question":
        return f"{d.get('player') or 'A student'} asks; the Master answers: {d.get('answer')}"
    if t == "ruling":
        return f"The Master rules on {s.get('koan')}: {' '.join(map(str, s.get('key', [])))} = {s.get('value')}"
    if t == "katsu" and not ev.public:  # zendo.game: no hand came near it
        return f"Koan {d['koan']} reads differently now; no hand came near it (told to the Master alone)"
    if t == "katsu" or (t == "katsu_changed" and s.get("called")):
        return f"Katsu! Koan {d['koan']} was disturbed"
    if t == "katsu_changed":
        return f"Koan {d['koan']} is disturbed further"
    if t == "katsu_resolved":
        return f"Koan {d['koan']} is {'restored' if d.get('how') == 'restored' else 'taken as it now stands'}"
    return t.replace("_", " ")


def replay_steps(store: Store, gid: str, master: bool) -> dict:
    events = store.events(gid)
    game = Game(gid, _NoRules())
    steps = []
    for ev in events:
        game.apply(ev)
        if not ev.public and not master:
            continue
        st = game.public_state()
        step = {
            "n": len(steps) + 1,
            "type": ev.type,
            "text": describe(ev, master),
            "ts": ev.ts,
            "seq": ev.seq if master else None,
            "snapshot": ev.data.get("snapshot") if ev.type == "koan_built" else None,
            "koans": [{"id": k["id"], "mark": k["mark"]} for k in st["koans"]],
            "players": st["players"],
            "phase": st["phase"],
            "turn": st["turn"],
        }
        if master:
            step["secret"] = ev.secret
            step["public"] = ev.public
        steps.append(step)
    # pictures of koans are asked for by step: students count public steps only (no gaps that
    # would show where secret events were)
    for step in steps:
        step["at"] = step["seq"] if master else step["n"]
    return {"game": gid, "steps": steps}


def public_step_seq(store: Store, gid: str, n: int) -> int:
    seqs = [ev.seq for ev in store.events(gid) if ev.public]
    if not 1 <= n <= len(seqs):
        raise GameError("no such step")
    return seqs[n - 1]


def public_digests(store: Store, gid: str) -> set[str]:
    return {ev.data["snapshot"] for ev in store.events(gid)
            if ev.public and ev.type == "koan_built" and isinstance(ev.data.get("snapshot"), str)}


def koan_png(store: Store, gid: str, seq: int, kid: str) -> bytes:
    game = Game.replay(store.events(gid), gid, _NoRules(), upto=seq)
    rec = game.koans.get(kid)
    if rec is None:
        raise GameError("no such koan at that point of the game")
    return koan_picture(rec.pieces)
