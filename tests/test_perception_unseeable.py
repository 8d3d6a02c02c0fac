"""Issue 6, item 3: a piece the camera saw is not where no camera could see it.

Looney pyramids are hollow, so a large one can be set over a small one, but then its walls hide
the small one entirely. A piece fitted standing on the table inside an upright larger one was
therefore never seen there: its box was a tower's band or a neighbour, fitted in the wrong place.
Pieces up a tower, and pieces nested in a lying one (which show through its open base), are seen.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vision.pose import PieceFit, drop_unseeable
from zendo.build import Spec, beside, nested_lying, tower, upright
from zendo.scene import Scene

ROOT = Path(__file__).resolve().parent.parent


def fitted(*pieces) -> tuple[Scene, list[PieceFit]]:
    fits = [PieceFit(p, 0.8, 200, 0.0, "upright", 0.9, k) for k, p in enumerate(pieces)]
    return Scene(tuple(pieces), ()), fits


def kept_ids(*pieces) -> list[str]:
    scene, fits = drop_unseeable(*fitted(*pieces))
    assert [f.piece.id for f in fits] == [p.id for p in scene.pieces]
    return [p.id for p in scene.pieces]


def test_a_piece_seen_cannot_stand_inside_an_upright_larger_one():
    large = upright(Spec("a", "red", "large"), (0, 0), 10)
    assert kept_ids(large, upright(Spec("b", "yellow", "medium"), (2.0, -1.5), 30)) == ["a"]
    assert kept_ids(upright(Spec("c", "blue", "small"), (-3.0, 2.0), 0), large) == ["a"]


def test_the_upper_pieces_of_a_tower_are_seen():
    pieces = tower([Spec("a", "red", "large"), Spec("b", "yellow", "medium"), Spec("c", "blue", "small")], (5, 5), 20)
    assert kept_ids(*pieces) == ["a", "b", "c"]


def test_a_piece_nested_in_a_lying_one_shows_through_its_base():
    pieces = nested_lying(Spec("a", "red", "large"), Spec("b", "green", "small"), (0, 0), 40)
    assert kept_ids(*pieces) == ["a", "b"]


def test_a_smaller_piece_standing_beside_a_larger_one_is_seen():
    large = upright(Spec("a", "red", "large"), (0, 0), 0)
    assert kept_ids(large, beside(large, Spec("b", "blue", "small"), heading=0.0, gap=1.0)) == ["a", "b"]


def test_two_pieces_of_one_size_in_one_place_are_left_to_the_duplicate_check():
    a = upright(Spec("a", "red", "medium"), (0, 0), 0)
    assert kept_ids(a, upright(Spec("b", "blue", "medium"), (1.0, 0), 0)) == ["a", "b"]


def test_the_bundled_recording_shows_every_piece_where_a_true_piece_is():
    """The three-piece tower's middle piece, boxed on its own, was fitted standing inside the
    tower's red large: a piece where there was none."""
    from vision.eval import match, to_truth_frame
    from vision.frames import open_source
    from vision.pipeline import Pipeline
    from zendo.scene import scene_from_dict

    pipe, res = Pipeline(), None
    for frame in open_source(str(ROOT / "vision" / "data" / "demo.db3")).frames():
        res = pipe.process(frame)
    truth = json.loads((ROOT / "vision" / "data" / "demo.truth.json").read_text())
    true = scene_from_dict(truth["scene"], check_geometry=False).pieces
    seen = to_truth_frame(res.tracked, pipe.table().matrix, np.asarray(truth["camera_to_table"]))
    assert len(seen.pieces) >= 10
    paired = {i for i, _, _ in match(seen, list(true))}  # one perceived piece to one true piece, within reach
    assert [(p.color, p.size) for i, p in enumerate(seen.pieces) if i not in paired] == []
