"""What a hand does to a koan (zendo/knock.py), as the demo's knock-over button and the recordings
with hands both do it: every change stays a valid table, and each is a change the game sees."""
from __future__ import annotations

import numpy as np
import pytest

from zendo.build import Spec, flat, tower, upright
from zendo.game import same_arrangement
from zendo.knock import KnockError, add_beside, bears, knock, still_one_koan, take_away
from zendo.scene import Scene, validate

TOWER = tower([Spec("a", "red", "large"), Spec("b", "blue", "medium")], (0, 0))
KOAN = Scene((*TOWER, upright(Spec("c", "green", "small"), (30, 0))), ())
IDS = ["a", "b", "c"]


def _dicts(scene: Scene, ids) -> list[dict]:
    return [scene.piece(i).to_dict() for i in ids]


@pytest.mark.parametrize("seed", range(6))
def test_a_knocked_koan_is_valid_still_one_koan_and_disturbed_as_the_game_sees_it(seed):
    after, pid = knock(KOAN, IDS, np.random.default_rng(seed))
    validate(after)
    assert still_one_koan(after, IDS) and pid in IDS
    assert not same_arrangement(_dicts(KOAN, IDS), _dicts(after, IDS))


def test_a_koan_of_one_piece_lying_cannot_be_knocked_it_only_slides_whole():
    lone = Scene((flat(Spec("x", "red", "small"), (0, 0), 10.0),), ())
    with pytest.raises(KnockError):
        knock(lone, ["x"], np.random.default_rng(0))


def test_a_piece_bearing_another_is_never_taken_away():
    assert bears(KOAN, KOAN.piece("a")) and not bears(KOAN, KOAN.piece("b"))
    for seed in range(8):
        after, pid = take_away(KOAN, IDS, np.random.default_rng(seed))
        assert pid in ("b", "c") and pid not in {p.id for p in after.pieces}
        validate(after)


def test_a_koan_of_one_piece_has_none_to_take_away():
    with pytest.raises(KnockError):
        take_away(Scene((upright(Spec("x", "red", "small"), (0, 0)),), ()), ["x"], np.random.default_rng(0))


def test_a_piece_put_beside_a_koan_joins_it():
    after, pid = add_beside(KOAN, IDS, np.random.default_rng(3), "n", "yellow")
    validate(after)
    assert pid == "n" and still_one_koan(after, [*IDS, "n"])
    assert after.piece("n").color == "yellow"
