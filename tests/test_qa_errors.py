"""QA pass: bad input on the command line is one line starting with "error:", never a traceback,
and nothing already recorded (a recording, a game log) is touched. One test per bug found."""
from __future__ import annotations

import hashlib
import json
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from zendo.cli import main

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "examples" / "table.json"
DEMO_DB3 = ROOT / "vision" / "data" / "demo.db3"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_one_line_error(res, *words):
    assert res.exit_code != 0, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    text = res.output.strip()
    assert "Traceback" not in text
    last = text.splitlines()[-1]
    assert last.startswith("error: "), text
    assert "Usage:" not in text and "Try '" not in text, text
    for w in words:
        assert w in last, text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_click_usage_errors_are_one_line_naming_the_option():
    assert_one_line_error(run("relations", "--band-mm", "abc", TABLE), "--band-mm")
    assert_one_line_error(run("mark", TABLE), "--rule")
    assert_one_line_error(run("no-such-command"), "no-such-command")


def test_relations_refuses_a_negative_or_nan_band():
    assert_one_line_error(run("relations", TABLE, "--band-mm", "-5"), "--band-mm")
    assert_one_line_error(run("relations", TABLE, "--band-deg", "nan"), "--band-deg")


def test_scene_with_a_position_kilometres_away_is_refused(tmp_path):
    doc = json.loads(TABLE.read_text())
    doc["pieces"][0]["position"] = [1e300, 0.0, 0.0]  # rendering it used to hang
    bad = tmp_path / "far.json"
    bad.write_text(json.dumps(doc))
    assert_one_line_error(run("render", bad, "--out", tmp_path / "out"), "position")


def test_render_refuses_a_non_finite_target(tmp_path):
    assert_one_line_error(run("render", TABLE, "--out", tmp_path / "out", "--target", "nan,0"), "--target")


def test_negative_seed_is_refused_naming_the_option(tmp_path):
    assert_one_line_error(run("render", TABLE, "--out", tmp_path / "out", "--seed", "-1"), "--seed")
    assert_one_line_error(run("record", "--random", "2", "--out", tmp_path / "a.db3", "--seed", "-3"), "--seed")
    assert_one_line_error(run("dataset", "--n", "1", "--seed", "-1", "--out", tmp_path / "ds"), "--seed")


def test_dataset_refuses_an_absurd_image_count(tmp_path):
    assert_one_line_error(run("dataset", "--n", "100000000000", "--seed", "1", "--out", tmp_path / "ds"), "--n")


def test_dataset_caps_workers_at_the_work_there_is(tmp_path, monkeypatch):
    import vision.synth.dataset as ds

    seen = {}

    def fake(out, n, seed, **kw):
        seen.update(kw)
        return {"n": n}

    monkeypatch.setattr(ds, "write_dataset", fake)
    res = run("dataset", "--n", "2", "--seed", "1", "--out", tmp_path / "ds", "--workers", "100000")
    assert res.exit_code == 0, res.output
    assert 1 <= seen["workers"] <= 2  # 100000 worker processes used to hang the machine


def test_detector_with_foreign_weights_is_a_detector_error(tmp_path):
    import numpy as np

    from vision.detect import Detector, DetectorError

    weights = tmp_path / "weights.json"
    weights.write_text("{}")
    det = Detector(weights, device="cpu")
    with pytest.raises(DetectorError, match="weights.json"):
        det(np.zeros((64, 64, 3), np.uint8))


def test_perceive_refuses_a_confidence_outside_0_to_1(tmp_path):
    assert_one_line_error(run("perceive", "demo", "--conf", "5"), "--conf")
    assert_one_line_error(run("eval", "--dataset", tmp_path, "--conf", "-1"), "--conf")


def test_eval_set_with_no_tables_is_refused(tmp_path):
    assert_one_line_error(run("eval-set", "--out", tmp_path / "es", "--n", "0"), "--n")


def test_train_data_refuses_a_negative_seed(tmp_path):
    assert_one_line_error(run("train-data", "--out", tmp_path / "td", "--n-train", "1", "--n-val", "1",
                              "--seed", "-1"), "--seed")


def test_train_on_a_folder_that_is_not_a_training_set(tmp_path):
    assert_one_line_error(run("train", "--data", tmp_path), "not a training set")
    assert_one_line_error(run("train", "--data", tmp_path, "--epochs", "0"), "--epochs")


def test_rulings_must_be_true_or_false(tmp_path):
    rulings = tmp_path / "rulings.json"
    rulings.write_text(json.dumps([{"predicate": "touching", "pieces": ["k1-red", "k1-blue"], "value": "maybe"}]))
    res = run("mark", "--rule", "it contains a red piece", TABLE, "--rulings", rulings)
    assert_one_line_error(res, "rulings.json", "true or false")


def test_counterexample_with_no_colours_is_refused():
    res = run("counterexample", "--rule", "it contains a red piece", "--guess", "it contains a blue piece",
              "--colors", ",,,")
    assert_one_line_error(res, "--colors")


def test_foreign_sqlite_file_is_not_taken_for_a_game_log(tmp_path):
    rec = tmp_path / "demo.db3"
    shutil.copyfile(DEMO_DB3, rec)
    before = digest(rec)
    assert_one_line_error(run("log", "export", rec), "not a readable game log")
    assert_one_line_error(run("serve", "--port", free_port(), "--host", "127.0.0.1", "--log", rec), "not a readable game log")
    assert digest(rec) == before  # the recording used to get the log's tables written into it


def test_log_export_of_an_empty_file_does_not_make_it_a_log(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert_one_line_error(run("log", "export", empty), "not a readable game log")
    assert empty.read_bytes() == b""


def test_log_import_names_a_missing_or_non_utf8_file(tmp_path):
    log = tmp_path / "log.sqlite"
    assert_one_line_error(run("log", "import", tmp_path / "missing.jsonl", log), "missing.jsonl", "no such file")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe\x80")
    assert_one_line_error(run("log", "import", bad, log), "bad.jsonl", "UTF-8")
    assert not log.exists()  # nothing was started for a file that cannot be read


def test_serve_on_a_port_in_use_is_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        res = run("serve", "--host", "127.0.0.1", "--port", port, "--log", tmp_path / "log.sqlite")
    assert_one_line_error(res, f"127.0.0.1:{port}")
    assert_one_line_error(run("serve", "--host", "999.1.1.1", "--port", "5191", "--log", tmp_path / "l.sqlite"),
                          "999.1.1.1")
    assert not (tmp_path / "log.sqlite").exists()  # refused before a game was started in the log


def test_perceive_with_a_non_utf8_calibration_file(tmp_path):
    cal = tmp_path / "cal.json"
    cal.write_bytes(b"\xff\xfe\x80")
    assert_one_line_error(run("perceive", "demo", "--calibration", cal), "cal.json")


def test_serve_with_an_ambiguous_rule_lists_its_readings(tmp_path):
    res = run("serve", "--host", "127.0.0.1", "--port", free_port(), "--log", tmp_path / "log.sqlite",
              "--rule", "all its red pieces are upright")
    assert_one_line_error(res, "more than one way", "if any, are upright")
