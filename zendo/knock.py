"""What a hand does to a koan by accident or on purpose: knock one piece, take one away, put one
more beside it. Each returns the changed table, still valid (nothing crosses) and still one koan
where the change keeps it so.

Why here and not in the dashboard: the demo table's "knock over" button and the synthetic
recordings that measure katsu (`zendo eval-tracking --make DIR --hands`) must disturb a koan the
same way, so what the camera is measured on is what the demo shows.
"""
from __future__ import annotations

import numpy as np

from .build import Spec, beside, flat, upright
from .koans import split_koans
from .pieces import SIZES
from .scene import Piece, Scene, is_valid
from .shapes import point_solid_distance, shell_distance


class KnockError(ValueError):
    """No disturbance of that kind fits the koan (no room, or every try crosses a piece)."""


def still_one_koan(scene: Scene, ids) -> bool:
    """The pieces `ids` are one koan of `scene`, with no other piece joined to them."""
    want = set(ids)
    for k in split_koans(scene):
        if set(k.piece_ids) & want:
            return set(k.piece_ids) == want
    return False


def bears(scene: Scene, piece: Piece) -> bool:
    """Another piece rests on `piece` (touches it and stands higher): taking it away or moving it
    would leave that one in the air."""
    low = float(piece.vertices[:, 2].min())
    return any(q.id != piece.id and float(q.vertices[:, 2].min()) > low + 1.0 and shell_distance(piece, q) < 1.0
               for q in scene.pieces)


def covered(scene: Scene, piece: Piece) -> bool:
    """`piece` lies inside another (nested under it, or in a lying one's cavity): no hand gets at
    it without moving that one, and no camera sees it go."""
    c = piece.centroid
    return any(q.id != piece.id and point_solid_distance(c, q) == 0.0 for q in scene.pieces)


def _free(scene: Scene, ids) -> list[str]:
    """The pieces of `ids` a hand can reach: none rests on them and none covers them."""
    return [i for i in ids if not bears(scene, scene.piece(i)) and not covered(scene, scene.piece(i))]


def knock(scene: Scene, ids, rng: np.random.Generator, tries: int = 40) -> tuple[Scene, str]:
    """One piece of the koan `ids` knocked: it slides and turns where it stands, or tips over flat,
    so that the koan is disturbed as the game judges it (not the whole koan slid and turned,
    `zendo.game.same_arrangement`: a koan of one piece lying on the table cannot be). Returns
    the table and the piece's id."""
    from .game import same_arrangement

    ids = [p.id for p in scene.pieces if p.id in set(ids)]
    if not ids:
        raise KnockError("that koan is not on the table")
    reach = _free(scene, ids) or ids
    for attempt in range(tries):
        pid = reach[int(rng.integers(len(reach)))]
        p = scene.piece(pid)
        if attempt % 2 == 0:
            q = flat(Spec(p.id, p.color, p.size), tuple(p.origin[:2] + rng.uniform(-12, 12, 2)),
                     float(rng.uniform(0, 360)))
        else:
            ang = np.radians(rng.uniform(25, 60))
            m = np.array([[np.cos(ang), -np.sin(ang), 0], [np.sin(ang), np.cos(ang), 0], [0, 0, 1.0]])
            q = p.moved(m, [0.0, 0.0, 0.0])
            q = q.moved(np.eye(3), np.r_[p.origin[:2] - q.origin[:2] + rng.uniform(-15, 15, 2), 0.0])
            low = float(q.vertices[:, 2].min())
            q = q.moved(np.eye(3), [0.0, 0.0, -low])
        trial = scene.with_pieces(q if x.id == pid else x for x in scene.pieces)
        if is_valid(trial) and still_one_koan(trial, ids) and not same_arrangement(
                [scene.piece(i).to_dict() for i in ids], [trial.piece(i).to_dict() for i in ids]):
            return trial, pid
    raise KnockError("could not disturb that koan without breaking the table or only sliding it whole")


def take_away(scene: Scene, ids, rng: np.random.Generator) -> tuple[Scene, str]:
    """One piece of the koan `ids` that bears no other and lies in none taken off the table. The
    koan must keep a piece and stay one koan."""
    ids = [p.id for p in scene.pieces if p.id in set(ids)]
    free = _free(scene, ids) if len(ids) > 1 else []
    for pid in [free[i] for i in rng.permutation(len(free))]:
        trial = scene.with_pieces(x for x in scene.pieces if x.id != pid)
        if still_one_koan(trial, [i for i in ids if i != pid]):
            return trial, pid
    raise KnockError("no piece of that koan can be taken away and leave it one koan")


def add_beside(scene: Scene, ids, rng: np.random.Generator, new_id: str, color: str,
               tries: int = 40) -> tuple[Scene, str]:
    """A new piece put upright beside a grounded piece of the koan `ids`, touching it or a few
    millimetres off, and nowhere near another koan."""
    ids = [p.id for p in scene.pieces if p.id in set(ids)]
    grounded = [scene.piece(i) for i in ids if float(scene.piece(i).vertices[:, 2].min()) < 0.5]
    if not grounded:
        raise KnockError("that koan has no piece on the table to put one beside")
    for _ in range(tries):
        at = grounded[int(rng.integers(len(grounded)))]
        spec = Spec(new_id, color, SIZES[int(rng.integers(3))])
        if abs(float(at.matrix[2, 2])) > 0.99:  # an upright piece: edge to edge along one of its axes
            q = beside(at, spec, heading=float(rng.choice([0, 90, 180, 270])), gap=float(rng.uniform(0, 4)))
        else:  # a lying one: anywhere round it
            h = rng.uniform(0, 2 * np.pi)
            reach = float(np.linalg.norm(at.vertices[:, :2] - at.origin[:2], axis=1).max())
            q = upright(spec, tuple(at.vertices[:, :2].mean(axis=0) + (reach + 8) * np.array([np.cos(h), np.sin(h)])),
                        float(rng.uniform(0, 90)))
        trial = scene.with_pieces([*scene.pieces, q])
        if is_valid(trial) and still_one_koan(trial, [*ids, new_id]):
            return trial, new_id
    raise KnockError("no room beside that koan for another piece")
