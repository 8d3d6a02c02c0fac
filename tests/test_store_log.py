"""zendo.store: the SQLite game log, its JSON Lines export/import, and what it does with bad files."""
from __future__ import annotations

import io
import json
import sqlite3

import pytest

from zendo.game import Event, Game
from zendo.store import Store, StoreError

from server.testing import small_table

RED = "a koan has the buddha nature if it contains a red piece"


def recorded_game(store: Store) -> tuple[str, Game]:
    gid = store.new_game(title="t", source="test", game_id="g1")
    g = Game(gid)
    g.listeners.append(lambda ev: store.append(gid, ev))
    snap = store.put_image(b"\x89PNG fake", "image/png")
    g.observe(small_table(), snapshot=snap)
    g.set_rule(RED)
    for k in g.active_koans():
        g.mark(k.id)
    g.join("Ann")
    g.start()
    return gid, g


def test_every_event_is_recorded_as_it_happens(tmp_path):
    path = tmp_path / "log.sqlite"
    store = Store(path)
    gid, g = recorded_game(store)
    store.close()
    again = Store(path)  # a fresh connection sees everything: each event was committed
    events = again.events(gid)
    assert [e.to_dict() for e in events] == [e.to_dict() for e in g.events]
    assert Game.replay(events, gid, g.referee).public_state() == g.public_state()
    built = [e for e in events if e.type == "koan_built"]
    assert built and all(e.data["snapshot"] for e in built) and built[0].data["pieces"]
    assert again.image(built[0].data["snapshot"])[0] == b"\x89PNG fake"
    assert any(e.type == "rule_set" and not e.public and e.secret["text"] == RED for e in events)


def test_export_import_round_trip(tmp_path):
    store = Store(tmp_path / "a.sqlite")
    gid, g = recorded_game(store)
    buf = io.StringIO()
    n = store.export_jsonl(buf)
    lines = buf.getvalue().splitlines()
    assert n == len(lines) and json.loads(lines[0])["kind"] == "game"
    assert any(json.loads(x)["kind"] == "image" for x in lines)
    other = Store(tmp_path / "b.sqlite")
    assert other.import_jsonl(lines) == [gid]
    assert [e.to_dict() for e in other.events(gid)] == [e.to_dict() for e in store.events(gid)]
    with pytest.raises(StoreError, match="already in the log"):
        other.import_jsonl(lines)


def test_a_bad_import_names_the_line_and_adds_nothing(tmp_path):
    store = Store(tmp_path / "a.sqlite")
    recorded_game(store)
    buf = io.StringIO()
    store.export_jsonl(buf)
    lines = buf.getvalue().splitlines()
    target = Store(tmp_path / "b.sqlite")
    broken = lines[:3] + ["{not json"] + lines[3:]
    with pytest.raises(StoreError, match=r"line 4: not valid JSON"):
        target.import_jsonl(broken, name="x.jsonl")
    assert target.games() == []
    gap = [x for x in lines if '"seq":2,' not in x]
    with pytest.raises(StoreError, match="numbered"):
        target.import_jsonl(gap)
    with pytest.raises(StoreError, match="line 1: unknown kind"):
        target.import_jsonl(['{"kind": "nonsense"}'])
    with pytest.raises(StoreError, match="before its header"):
        target.import_jsonl([lines[1]])
    assert target.games() == []


def test_a_corrupt_or_foreign_file_is_one_line(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError) as e:
        Store(junk)
    assert "not a readable game log" in str(e.value) and "\n" not in str(e.value)
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE events (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not a readable game log"):
        Store(other)
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)


def test_a_duplicate_event_is_refused_and_the_first_kept(tmp_path):
    store = Store(tmp_path / "a.sqlite")
    gid = store.new_game(game_id="g")
    store.append(gid, Event(1, "player_joined", {"player": "Ann"}))
    with pytest.raises(StoreError):
        store.append(gid, Event(1, "player_joined", {"player": "Bob"}))
    assert store.events(gid)[0].data == {"player": "Ann"}


def test_finished_games_are_flagged(tmp_path):
    store = Store(tmp_path / "a.sqlite")
    gid, g = recorded_game(store)
    assert not store.game(gid)["finished"]
    g.give_up()
    assert store.game(gid)["finished"]
