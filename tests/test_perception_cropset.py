"""Issue 6, item 2 (the detector's second stage, trained on the synthetic data sets): crop sets cut
straight from rendered tables (`zendo cut-crops`), and training from them on any device
(`zendo train-classifier --crops --device --minutes`).

Why: the crop nets learnt more from more tables than a CPU could hold as render folders (session
53), so tables are rendered and cut in worker processes into one file, and a GPU trains on it.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from vision.classify import BACKGROUND, CHANNELS, CROP_PX, N_CLASSES, PieceClassifier
from vision.cropset import CropSet, CropSetError, cut
from zendo.cli import main

SEED = 424260


@pytest.fixture(scope="module")
def two_tables():
    return cut(SEED, 2)


def test_a_crop_set_holds_each_tables_crops_labels_and_seed(two_tables):
    cs = two_tables
    assert len(cs) > 20 and cs.x.shape == (len(cs), CHANNELS, CROP_PX, CROP_PX) and cs.x.dtype == np.uint8
    assert set(np.unique(cs.seeds)) == {SEED, SEED + 1} and cs.tables == 2
    assert ((cs.y >= 0) & (cs.y < N_CLASSES)).all()
    assert (cs.o[cs.y == BACKGROUND] == -1).all()  # "not a piece" has no orientation
    assert list(cs.seeds) == sorted(cs.seeds)  # in table order


def test_a_crop_set_is_a_function_of_its_seeds_whichever_worker_cut_it(two_tables):
    again = cut(SEED, 2, workers=2)
    for k in ("x", "y", "o", "seeds"):
        assert np.array_equal(getattr(again, k), getattr(two_tables, k)), k


def test_the_orientation_net_learns_from_pyramid_crops_only(two_tables):
    x, o = two_tables.for_task("orientation")
    assert len(x) == int((two_tables.o >= 0).sum()) < len(two_tables) and (o >= 0).all()
    x, y = two_tables.for_task("class")
    assert len(x) == len(two_tables) and np.array_equal(y, two_tables.y)


def test_a_crop_set_comes_back_from_its_file_as_it_was_saved(two_tables, tmp_path):
    back = CropSet.load(two_tables.save(tmp_path / "set"))
    for k in ("x", "y", "o", "seeds"):
        assert np.array_equal(getattr(back, k), getattr(two_tables, k)), k


def test_a_file_that_is_not_a_crop_set_is_named_in_one_line(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(CropSetError, match="bad.npz: not a crop set"):
        CropSet.load(bad)
    with pytest.raises(CropSetError, match="no such crop set"):
        CropSet.load(tmp_path / "none.npz")
    res = CliRunner().invoke(main, ["train-classifier", "--crops", str(bad), "--epochs", "1"])
    assert res.exit_code == 2 and "bad.npz: not a crop set" in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_train_classifier_learns_from_crop_sets(two_tables, tmp_path):
    data = two_tables.save(tmp_path / "train.npz")
    out = tmp_path / "cls.pt"
    res = CliRunner().invoke(main, ["train-classifier", "--crops", str(data), "--val-crops", str(data),
                                    "--epochs", "1", "--batch", "64", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output.strip().splitlines()[-1])
    assert doc["frames"] == 2 and doc["crops"] == len(two_tables) and "val_accuracy_pct" in doc["last"]
    clf = PieceClassifier(out)
    assert clf.runtime == "int8"  # its int8 copy came with it
    assert clf.probabilities(two_tables.x[:3]).shape == (3, N_CLASSES)


def test_minutes_train_as_many_epochs_as_fit_in_them(two_tables, monkeypatch):
    """Twenty timed steps that take 0.1 s, ten steps an epoch, a tenth spare: 0.6 s holds ten epochs."""
    import vision.classify as classify

    ticks = iter(np.arange(0.0, 100.0, 0.1))
    monkeypatch.setattr(classify.time, "perf_counter", lambda: float(next(ticks)))
    x, y = two_tables.x[:20], two_tables.y[:20]
    import torch

    X, Y = torch.from_numpy(np.repeat(x, 32, axis=0)), torch.from_numpy(np.repeat(y, 32))
    assert classify.epochs_within(0.01, 640, 64, N_CLASSES, True, X, Y, "cpu") == 10
    assert classify.epochs_within(0.001, 640, 64, N_CLASSES, True, X, Y, "cpu") == 1  # never none


def test_a_device_torch_cannot_use_is_one_line(two_tables, tmp_path):
    data = two_tables.save(tmp_path / "train.npz")
    res = CliRunner().invoke(main, ["train-classifier", "--crops", str(data), "--device", "gpu7"])
    assert res.exit_code == 2 and res.output.startswith("error: --device gpu7:")
    assert len(res.output.strip().splitlines()) == 1


def test_cut_crops_writes_the_set_and_says_what_it_holds(tmp_path):
    out = tmp_path / "c.npz"
    res = CliRunner().invoke(main, ["cut-crops", "--out", str(out), "--seed", str(SEED + 5), "--tables", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output.strip().splitlines()[-1])
    cs = CropSet.load(out)
    assert doc["tables"] == 1 and doc["seeds"] == [SEED + 5, SEED + 5] and doc["count"] == len(cs) > 5


def test_minutes_leave_the_run_as_the_epochs_they_fit_would_make_it(two_tables, monkeypatch):
    """Timing the device must not draw from the run's seed: --minutes that fit two epochs train
    the very net --epochs 2 does."""
    import torch

    import vision.classify as classify

    x, y = two_tables.x[:64], two_tables.y[:64]
    by_epochs, _ = classify.train(x, y, epochs=2, batch=32, progress=False)
    ticks = iter(np.arange(0.0, 100.0, 0.1))  # 20 timed steps in 0.1 s: 0.011 s an epoch of two steps
    monkeypatch.setattr(classify.time, "perf_counter", lambda: float(next(ticks)))
    by_minutes, history = classify.train(x, y, minutes=0.0275 / 60, batch=32, progress=False)
    assert len(history) == 2
    assert all(torch.equal(by_epochs[k], by_minutes[k]) for k in by_epochs)
