"""`zendo relations SCENE.json`: the JSON contract, and one-line errors for bad input."""
import json

from click.testing import CliRunner

from zendo.cli import main
from zendo.examples import example_table
from zendo.scene import save_scene


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_relations_prints_the_documented_json(tmp_path):
    path = tmp_path / "table.json"
    save_scene(example_table(), path)
    result = run("relations", str(path))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc) >= {"koans", "pieces", "touching", "pointing", "towers", "same_direction",
                        "opposite_direction", "nested", "borderline"}
    assert doc["pieces"]["k1-red"] == {"koan": "k1", "color": "red", "size": "large", "pips": 3,
                                       "orientation": "upright", "grounded": True, "top_mm": 44.5}
    assert ["k1-red", "k1-blue"] in doc["towers"]
    assert doc["pointing"]["k1-yellow"] == ["k1-red"]
    assert set(doc["pointing"]) == set(doc["pieces"])  # every piece, even those pointing at nothing
    assert ["k3-large", "k3-small"] in doc["nested"]
    assert {"predicate": "touching", "pieces": ["k5-a", "k5-b"], "value": True, "margin": 0.2,
            "unit": "mm"} in doc["borderline"]


def test_each_touching_pair_is_listed_once(tmp_path):
    path = tmp_path / "table.json"
    save_scene(example_table(), path)
    doc = json.loads(run("relations", str(path)).output)
    pairs = [tuple(sorted(p)) for p in doc["touching"]]
    assert len(pairs) == len(set(pairs))


def test_relations_are_reported_within_a_koan_only(tmp_path):
    path = tmp_path / "table.json"
    save_scene(example_table(), path)
    doc = json.loads(run("relations", str(path)).output)
    koan_of = {p: v["koan"] for p, v in doc["pieces"].items()}
    for a, targets in doc["pointing"].items():
        assert all(koan_of[t] == koan_of[a] for t in targets)
    for a, b in doc["touching"]:
        assert koan_of[a] == koan_of[b]


def test_the_band_option_changes_what_is_borderline(tmp_path):
    path = tmp_path / "table.json"
    save_scene(example_table(), path)
    doc = json.loads(run("relations", str(path), "--band-mm", "0.1").output)
    assert not [b for b in doc["borderline"] if b["predicate"] == "touching"]


def test_an_invalid_scene_is_a_one_line_error_not_a_traceback(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "zendo-scene/1", "units": "mm", "pieces": [
        {"id": "x", "color": "mauve", "size": "large", "position": [0, 0, 0], "rotation": [1, 0, 0, 0]}]}))
    result = run("relations", str(path))
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: {path}: piece 'x': unknown colour 'mauve' (expected one of red, yellow, green, blue, black, orange, cyan, purple, white, clear)"]


def test_a_missing_file_is_a_one_line_error(tmp_path):
    result = run("relations", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and result.output.strip().endswith("no such file")
