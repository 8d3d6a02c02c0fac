"""The zendo-scene/1 contract: load, validate (every rule under 'Validity'), save."""
import json

import numpy as np
import pytest

from zendo.build import beside, tower, upright
from zendo.scene import Piece, Scene, SceneError, load_scene, save_scene, scene_from_dict
from helpers import S


def doc(pieces, stones=()):
    return {"format": "zendo-scene/1", "units": "mm", "pieces": list(pieces), "stones": list(stones)}


def piece(pid="a", color="red", size="large", position=(0, 0, 0), rotation=(1, 0, 0, 0)):
    return {"id": pid, "color": color, "size": size, "position": list(position), "rotation": list(rotation)}


def test_the_documented_example_loads():
    scene = scene_from_dict(doc([piece("a"), piece("b", "blue", "small", (60, 0, 0))],
                                [{"id": "s1", "color": "white", "position": [30, -45, 0]}]))
    assert [p.id for p in scene.pieces] == ["a", "b"]
    assert scene.stones[0].color == "white"


def test_save_then_load_gives_the_same_scene(tmp_path):
    pieces = tower([S("a"), S("b", "blue")]) + [upright(S("c", "green", "small"), (80, 0), 30)]
    scene = Scene(tuple(pieces))
    save_scene(scene, tmp_path / "t.json")
    again = load_scene(tmp_path / "t.json")
    assert again.ids == scene.ids
    for p, q in zip(scene.pieces, again.pieces):
        assert p.position == pytest.approx(q.position, abs=1e-3)
        assert p.rotation == pytest.approx(q.rotation, abs=1e-6)


def test_extra_keys_are_allowed_and_ignored():
    d = doc([dict(piece(), note="hello")])
    d["camera"] = {"anything": 1}
    assert scene_from_dict(d).pieces[0].id == "a"


@pytest.mark.parametrize(
    "bad,needle",
    [
        (piece(color="mauve"), "unknown colour 'mauve'"),
        (piece(size="huge"), "unknown size 'huge'"),
        (piece(rotation=(1, 0.1, 0, 0)), "not a unit quaternion"),
    ],
)
def test_unknown_colour_size_or_non_unit_rotation_is_rejected_naming_the_piece(bad, needle):
    with pytest.raises(SceneError) as e:
        scene_from_dict(doc([bad]))
    assert needle in str(e.value) and "'a'" in str(e.value)


def test_a_rotation_off_unit_by_less_than_1e_3_is_accepted():
    scene_from_dict(doc([piece(rotation=(1.0005, 0, 0, 0))]))


def test_duplicate_ids_are_rejected_naming_them():
    with pytest.raises(SceneError, match="duplicate id.*a"):
        scene_from_dict(doc([piece("a"), piece("a", position=(100, 0, 0))]))


@pytest.mark.parametrize("field", ["id", "color", "size", "position", "rotation"])
def test_a_missing_field_is_rejected_naming_it(field):
    p = piece("zz")
    del p[field]
    with pytest.raises(SceneError, match=f"missing field '{field}'"):
        scene_from_dict(doc([p]))


def test_a_piece_below_the_table_by_more_than_half_a_millimetre_is_rejected():
    with pytest.raises(SceneError, match="'a' reaches 0.80 mm below the table"):
        scene_from_dict(doc([piece(position=(0, 0, -0.8))]))
    scene_from_dict(doc([piece(position=(0, 0, -0.4))]))


def test_pieces_whose_shells_cross_by_more_than_half_a_millimetre_are_rejected_naming_both():
    a = upright(S("a"))
    b = beside(a, S("b", "blue"), gap=-1.0)  # bases overlap by 1 mm
    with pytest.raises(SceneError, match="'a' and 'b' cross"):
        scene_from_dict(Scene((a, b)).to_dict())


def test_shells_crossing_by_less_than_half_a_millimetre_are_accepted():
    a = upright(S("a"))
    b = beside(a, S("b", "blue"), gap=-0.3)
    scene_from_dict(Scene((a, b)).to_dict())


def test_a_small_piece_inside_a_large_ones_cavity_does_not_cross_it():
    scene_from_dict(Scene(tuple(tower([S("a", "red", "small"), S("b")]))).to_dict())


def test_unreadable_json_is_a_one_line_error(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text("{not json")
    with pytest.raises(SceneError) as e:
        load_scene(f)
    assert "not valid JSON" in str(e.value) and "\n" not in str(e.value)


def test_wrong_format_tag_is_rejected():
    d = doc([piece()])
    d["format"] = "zendo-scene/2"
    with pytest.raises(SceneError, match="format"):
        scene_from_dict(d)


def test_a_pieces_rotation_matrix_cannot_be_changed_in_place():
    """Pieces of one rotation share their matrix (perception makes thousands a frame), so it is
    read-only: writing into one piece's matrix would move every piece turned the same way."""
    a = Piece("a", "red", "small", (0.0, 0.0, 0.0), (0.9238795, 0.0, 0.0, 0.3826834))
    b = Piece("b", "blue", "large", (50.0, 0.0, 0.0), (0.9238795, 0.0, 0.0, 0.3826834))
    assert a.matrix is b.matrix
    with pytest.raises(ValueError):
        a.matrix[0, 0] = 1.0
    assert np.allclose(a.matrix @ a.matrix.T, np.eye(3))
