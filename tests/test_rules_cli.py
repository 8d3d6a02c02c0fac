"""Clause 6: `zendo rule` and `zendo mark` — JSON out, exit codes 0/2/3/4, one-line errors."""
from __future__ import annotations

import json

from click.testing import CliRunner

from zendo.build import Spec, beside, upright
from zendo.cli import main
from zendo.scene import Scene


def _run(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_clause6_rule_canonical_exit_0():
    code, out = _run("rule", "AKHTBN iff it contains a red piece")
    assert code == 0
    assert json.loads(out) == {"canonical": "A koan has the Buddha-nature if and only if it contains at least one red piece."}


def test_clause6_rule_clarify_exit_3():
    code, out = _run("rule", "it contains two red pieces")
    assert code == 3 and len(json.loads(out)["clarify"]) == 2


def test_clause6_rule_illegal_exit_4():
    code, out = _run("rule", "it contains a piece pointing at a player")
    assert code == 4 and json.loads(out)["illegal"].startswith("No Outside References")


def test_clause6_rule_error_exit_2_with_column():
    code, out = _run("rule", "it contains a red elephant")
    doc = json.loads(out)
    assert code == 2 and doc["at"] == len("it contains a red ") + 1 and "\n" not in doc["error"]


def test_clause6_mark_scene(tmp_path):
    a = upright(Spec("a", "red", "small"))
    b = beside(a, Spec("b", "blue", "medium"), gap=0.3)
    c = upright(Spec("c", "green", "small"), (300.0, 0.0))
    path = tmp_path / "scene.json"
    path.write_text(Scene((a, b, c)).to_json())
    code, out = _run("mark", "--rule", "it contains at least two pieces that are touching each other", str(path))
    assert code == 0, out
    koans = {tuple(k["witnesses"]) or ("none",): k for k in json.loads(out)["koans"]}
    assert len(koans) == 2
    touching = koans[("a", "b")]
    assert touching["mark"] == "white" and touching["judgment_call"] and touching["borderline"][0]["predicate"] == "touching"
    other = koans[("none",)]
    assert other["mark"] == "black" and not other["judgment_call"]
    rulings = tmp_path / "rulings.json"
    rulings.write_text(json.dumps([{"predicate": "touching", "pieces": ["a", "b"], "value": False}]))
    code, out = _run("mark", "--rule", "it contains at least two pieces that are touching each other",
                     "--rulings", str(rulings), str(path))
    assert code == 0 and all(k["mark"] == "black" and not k["judgment_call"] for k in json.loads(out)["koans"])


def test_clause6_mark_bad_scene_one_line_exit_2(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    result = CliRunner().invoke(main, ["mark", "--rule", "it contains a red piece", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
