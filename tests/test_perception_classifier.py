"""Issue 6, item 2 (colour x size): the second-stage classifier on metric-scale crops.

Why it exists: in one image a near medium piece and a far large one look alike; a crop cut to a
fixed size in millimetres, with a height channel, does not. These tests pin the crop geometry,
the way verdicts rewrite Detections, errors, the committed weights on a rendered table, and a
one-epoch training smoke run.
"""
from __future__ import annotations

import json

from dataclasses import replace

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from perception_helpers import broken_weights, eval_classifier_block, train_on_two_rendered_tables

from vision.classes import CLASS_ID
from vision.classify import (
    BACKGROUND,
    CROP_MM,
    CROP_PX,
    DEFAULT_CLASSIFIER,
    FIRST_STONE,
    N_CLASSES,
    N_ORIENTATIONS,
    PIECE_P,
    ClassifierError,
    PieceClassifier,
    classifier_output,
    crops,
    is_stone_output,
)
from vision.detect import Detections
from zendo.build import Spec, flat, upright
from zendo.cli import main
from zendo.scene import Scene

FX = 600.0


def square_scene(side_px: int, depth_mm: float, height_mm: float = 20.0):
    """An image with one square object standing height_mm above the table, seen at depth_mm."""
    h, w = 480, 640
    rgb = np.full((h, w, 3), 90, np.uint8)
    depth = np.full((h, w), depth_mm, np.float32)
    heights = np.zeros((h, w), np.float32)
    y0, x0 = 240 - side_px // 2, 320 - side_px // 2
    rgb[y0:y0 + side_px, x0:x0 + side_px] = (200, 30, 30)
    heights[y0:y0 + side_px, x0:x0 + side_px] = height_mm
    box = np.array([[x0, y0, x0 + side_px, y0 + side_px]], np.float32)
    return rgb, depth, heights, np.ones((h, w), bool), box


def test_a_crop_shows_a_piece_at_its_size_in_millimetres_whatever_its_distance():
    near = crops(*square_scene(40, 500.0)[:4], FX, square_scene(40, 500.0)[4])
    far = crops(*square_scene(20, 1000.0)[:4], FX, square_scene(20, 1000.0)[4])
    a_near, a_far = (near[0, 3] > 0).sum(), (far[0, 3] > 0).sum()
    assert abs(int(a_near) - int(a_far)) <= 0.15 * a_near
    # 40 px at 500 mm is 40 * 500 / 600 = 33 mm: that share of the CROP_MM window
    side = np.sqrt(a_near) / CROP_PX * CROP_MM
    assert side == pytest.approx(40 * 500 / FX, rel=0.1)


def test_a_crop_carries_height_in_half_millimetres_and_marks_its_box():
    x = crops(*square_scene(30, 600.0, height_mm=25.0)[:4], FX, square_scene(30, 600.0)[4])[0]
    assert x.shape == (6, CROP_PX, CROP_PX)
    c = CROP_PX // 2
    assert x[3, c, c] == 50  # 25 mm in 0.5 mm steps
    assert x[5, c, c] == 255 and x[5, 0, 0] == 0  # inside the detection box, and not
    assert tuple(x[:3, c, c]) == (200, 30, 30)


class FixedNet(torch.nn.Module):
    """Returns the same logits for every crop: to test what a verdict does to Detections."""

    def __init__(self, rows):
        super().__init__()
        self.rows = torch.tensor(rows, dtype=torch.float32)

    def forward(self, x):
        return self.rows[: len(x)]


def classifier_saying(*classes, orientations=None) -> PieceClassifier:
    """A classifier whose net reads `classes` (one per crop) and, given `orientations` (one
    ORIENTATIONS index per crop), whose orientation net reads those."""
    clf = object.__new__(PieceClassifier)
    rows = []
    for c in classes:
        r = [-5.0] * N_CLASSES
        r[c] = 5.0
        rows.append(r)
    clf.net, clf.background_p, clf.weights = FixedNet(rows), 0.6, "fixed"
    clf.turns_below_p = 0.0  # its rows go with the crops in order, so a turned crop has none: read once
    clf.orient_net = None
    if orientations is not None:
        clf.orient_net = FixedNet([[5.0 if i == o else -5.0 for i in range(N_ORIENTATIONS)] for o in orientations])
    return clf


def frame_and_table():
    from calibration.plane import fit_table
    from vision.frames import Frame
    from vision.synth import Appearance, CameraPose, color_intrinsics, render

    scene = Scene((upright(Spec("a", "red", "large"), (0, 0), 0),))
    r = render(scene, CameraPose.looking_at(550, 20, (0, 0, 0), 0), color_intrinsics(), seed=1, appearance=Appearance())
    frame = Frame(r.color, r.depth, r.intrinsics, 0.0, 0)
    return frame, fit_table(frame)[0]


def test_a_verdict_rewrites_a_pyramids_class_and_a_stones_colour():
    frame, table = frame_and_table()
    det = Detections(np.array([[300, 200, 340, 240], [100, 100, 120, 120]], np.float32),
                     np.array([CLASS_ID["red_medium"], CLASS_ID["stone_white"]]), np.array([0.9, 0.8], np.float32))
    out, verdicts = classifier_saying(CLASS_ID["red_large"], classifier_output(CLASS_ID["stone_green"])
                                      ).refine(frame, table, det)
    assert out.class_name == ["red_large", "stone_green"]
    assert verdicts[0].class_id == CLASS_ID["red_large"] and is_stone_output(verdicts[1].class_id)


def test_a_pyramid_detection_stays_a_pyramid_whatever_stone_the_classifier_reads():
    frame, table = frame_and_table()
    det = Detections(np.array([[300, 200, 340, 240]], np.float32), np.array([CLASS_ID["black_small"]]),
                     np.array([0.9], np.float32))
    rows = [[-5.0] * N_CLASSES]
    rows[0][classifier_output(CLASS_ID["stone_black"])] = 5.0
    rows[0][CLASS_ID["black_small"]] = 2.0
    clf = classifier_saying(0)
    clf.net = FixedNet(rows)
    out, verdicts = clf.refine(frame, table, det)
    assert out.class_name == ["black_small"] and verdicts[0].class_id == CLASS_ID["black_small"]


def test_a_stone_the_classifier_reads_as_a_pyramid_becomes_that_pyramid():
    frame, table = frame_and_table()
    det = Detections(np.array([[100, 100, 120, 120]], np.float32), np.array([CLASS_ID["stone_black"]]),
                     np.array([0.9], np.float32))
    out, verdicts = classifier_saying(CLASS_ID["black_small"]).refine(frame, table, det)
    assert out.class_name == ["black_small"] and verdicts[0].pyramid_p >= PIECE_P
    assert verdicts[0].stone_box  # the detector's word stays on it (vision.doubts.stone_box_doubts)
    boxed_a_pyramid = replace(det, class_id=np.array([CLASS_ID["black_small"]]))
    assert not classifier_saying(CLASS_ID["black_small"]).refine(frame, table, boxed_a_pyramid)[1][0].stone_box


def test_a_stone_the_classifier_calls_nothing_stays_a_stone():
    """A marking stone says where a koan is: only the detector's word on it can drop it."""
    frame, table = frame_and_table()
    det = Detections(np.array([[100, 100, 120, 120]], np.float32), np.array([CLASS_ID["stone_white"]]),
                     np.array([0.9], np.float32))
    out, _ = classifier_saying(BACKGROUND).refine(frame, table, det)
    assert out.class_name == ["stone_white"]


def test_a_classifier_saved_before_stones_were_learnt_is_widened_to_go_on_from(tmp_path):
    from vision.classify import _net, load_start
    from vision.nets import save

    path = save(_net(BACKGROUND + 1).state_dict(), tmp_path / "old-cls.pt", {})
    state = load_start(path, N_CLASSES, "classifier", "zendo train-classifier")
    w = [v for k, v in state.items() if k.endswith(".weight") and v.ndim == 2][-1]
    assert w.shape[0] == N_CLASSES and torch.equal(w[FIRST_STONE], w[BACKGROUND])


def test_training_crops_hold_the_stones_labelled_as_stones(tmp_path):
    from vision.classify import folder_examples
    from vision.eval import write_eval_set

    folder = sorted(p.parent for p in write_eval_set(tmp_path / "one", 1, seed=424243).rglob("truth.json"))[0]
    truth = json.loads((folder / "truth.json").read_text())
    stones = {classifier_output(CLASS_ID[f"stone_{o['color']}"]) for o in truth["objects"]
              if o["kind"] == "stone" and o["visible_px"] >= 12}
    no_boxes = lambda rgb: Detections(np.zeros((0, 4), np.float32), np.zeros(0, int), np.zeros(0, np.float32))  # noqa: E731
    x, y, o = folder_examples(folder, no_boxes, np.random.default_rng(0))
    assert stones and stones <= set(y.tolist())
    assert (o[y >= FIRST_STONE] == -1).all()  # stones teach the orientation net nothing


def test_a_detection_the_classifier_calls_nothing_is_dropped():
    frame, table = frame_and_table()
    det = Detections(np.array([[300, 200, 340, 240]], np.float32), np.array([CLASS_ID["red_medium"]]),
                     np.array([0.3], np.float32))
    out, verdicts = classifier_saying(BACKGROUND).refine(frame, table, det)
    assert len(out) == 0 and verdicts == []


def test_the_orientation_net_reading_goes_with_each_detection_to_the_pose_fit():
    frame, table = frame_and_table()
    det = Detections(np.array([[300, 200, 340, 240], [100, 100, 120, 120]], np.float32),
                     np.array([CLASS_ID["red_medium"], CLASS_ID["stone_white"]]), np.array([0.9, 0.8], np.float32))
    out, verdicts = classifier_saying(CLASS_ID["red_large"], classifier_output(CLASS_ID["stone_white"]),
                                      orientations=[1, 0]).refine(frame, table, det)
    assert np.argmax(verdicts[0].orientation) == 1 and verdicts[0].orientation[1] > 0.99
    assert out.orientation.shape == (2, N_ORIENTATIONS)
    assert out.orientation[0, 1] > 0.99
    assert np.allclose(out.orientation[1], 1 / 3)  # a stone gets even odds: no prior
    assert np.allclose(out[[1, 0]].orientation[1], out.orientation[0])  # selection keeps rows with boxes


def test_without_an_orientation_net_detections_carry_no_orientation():
    frame, table = frame_and_table()
    det = Detections(np.array([[300, 200, 340, 240]], np.float32), np.array([CLASS_ID["red_medium"]]),
                     np.array([0.9], np.float32))
    out, verdicts = classifier_saying(CLASS_ID["red_large"]).refine(frame, table, det)
    assert out.orientation is None and verdicts[0].orientation is None


def test_merged_detections_give_a_part_nobody_read_even_odds():
    read = Detections(np.zeros((1, 4), np.float32), np.array([0]), np.ones(1, np.float32),
                      orientation=np.array([[0.9, 0.05, 0.05]], np.float32))
    found = Detections(np.zeros((1, 4), np.float32), np.array([1]), np.ones(1, np.float32))
    merged = Detections.merge([read, found])
    assert np.allclose(merged.orientation, [[0.9, 0.05, 0.05], [1 / 3, 1 / 3, 1 / 3]])
    assert Detections.merge([found, found]).orientation is None


def test_missing_classifier_weights_are_one_line(tmp_path):
    with pytest.raises(ClassifierError, match="no classifier weights"):
        PieceClassifier(tmp_path / "none.pt")
    with pytest.raises(ClassifierError, match="cannot load"):
        PieceClassifier(broken_weights(tmp_path))


def test_perceive_names_a_missing_classifier_in_one_line(tmp_path):
    res = CliRunner().invoke(main, ["perceive", "demo", "--classifier", str(tmp_path / "none.pt")])
    assert res.exit_code != 0 and "no classifier weights" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


@pytest.mark.skipif(not DEFAULT_CLASSIFIER.is_file(), reason="the committed classifier is not there")
def test_the_committed_classifier_reads_colour_and_size_of_a_rendered_table():
    from calibration.plane import fit_table
    from vision.frames import Frame
    from vision.synth import Appearance, CameraPose, color_intrinsics, render

    pieces = (upright(Spec("a", "red", "large"), (-70, 20), 10), flat(Spec("b", "blue", "medium"), (0, -40), 30),
              upright(Spec("c", "yellow", "small"), (60, 30), 0), flat(Spec("d", "green", "large"), (40, -70), 200),
              upright(Spec("e", "black", "medium"), (-40, -70), 45), upright(Spec("f", "red", "small"), (10, 60), 5))
    r = render(Scene(pieces), CameraPose.looking_at(600, 25, (0, 0, 0), 15), color_intrinsics(), seed=5,
               appearance=Appearance())
    frame = Frame(r.color, r.depth, r.intrinsics, 0.0, 0)
    objs = [o for o in r.objects if o.box is not None and o.class_id is not None and o.class_id < BACKGROUND]
    det = Detections(np.array([o.box for o in objs], np.float32), np.array([o.class_id for o in objs]),
                     np.ones(len(objs), np.float32))
    out, _ = PieceClassifier().refine(frame, fit_table(frame)[0], det)
    assert len(out) == len(objs) == 6
    right = sum(int(a == b) for a, b in zip(out.class_id, det.class_id))
    assert right >= 5, f"{right}/6: {out.class_name} vs {det.class_name}"


def test_train_classifier_runs_one_epoch_on_rendered_folders(tmp_path):
    from vision.eval import write_eval_set

    data = write_eval_set(tmp_path / "cls", 2, seed=424242)
    out = tmp_path / "cls.pt"
    res = CliRunner().invoke(main, ["train-classifier", "--data", str(data), "--epochs", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output.strip().splitlines()[-1])
    assert doc["frames"] == 2 and doc["crops"] > 10
    clf = PieceClassifier(out)
    assert clf.probabilities(np.zeros((3, 6, CROP_PX, CROP_PX), np.uint8)).shape == (3, N_CLASSES)
    assert doc["int8"] == str(tmp_path / "cls.int8.onnx") and clf.runtime == "int8"  # its int8 copy, up to date


def test_train_classifier_trains_the_orientation_net_for_one_epoch(tmp_path):
    data, out, doc = train_on_two_rendered_tables(tmp_path, "orientation", seed=424243, epochs=1)
    assert doc["frames"] == 2 and doc["crops"] > 10
    assert PieceClassifier(DEFAULT_CLASSIFIER, orientation=out).runtime == "int8"  # its int8 copy came with it
    p = PieceClassifier(DEFAULT_CLASSIFIER, orientation=out).orientations(np.zeros((3, 6, CROP_PX, CROP_PX), np.uint8))
    assert p.shape == (3, N_ORIENTATIONS) and np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    scored = eval_classifier_block(data, "--orientation", out, "orientation")
    assert scored["crops"] > 5 and 0.0 <= scored["accuracy_pct"] <= 100.0
    assert set(scored["accuracy_by_truth_pct"]) == {"upright", "flat", "weird"}


def test_missing_orientation_weights_are_one_line(tmp_path):
    with pytest.raises(ClassifierError, match="no orientation weights"):
        PieceClassifier(DEFAULT_CLASSIFIER, orientation=tmp_path / "none.pt")


def test_train_classifier_goes_on_from_the_given_weights(tmp_path):
    """--from starts from those weights (fine-tuning on crops of a new detector's boxes), not
    from a fresh net: with a vanishing learning rate the convolutions stay the committed ones."""
    import torch

    from vision.classify import DEFAULT_CLASSIFIER
    from vision.eval import write_eval_set

    data = write_eval_set(tmp_path / "cls", 2, seed=424244)
    out = tmp_path / "tuned.pt"
    res = CliRunner().invoke(main, ["train-classifier", "--data", str(data), "--epochs", "1", "--lr", "1e-9",
                                    "--from", str(DEFAULT_CLASSIFIER), "--out", str(out)])
    assert res.exit_code == 0, res.output

    def convs(path):
        state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
        return [v for k, v in state.items() if v.ndim == 4]

    for before, after in zip(convs(DEFAULT_CLASSIFIER), convs(out)):
        assert torch.allclose(before.float(), after.float(), atol=1e-5)  # the committed file keeps float16


def test_train_classifier_refuses_weights_it_cannot_go_on_from(tmp_path):
    from tests.perception_helpers import broken_weights
    from vision.classify import DEFAULT_CLASSIFIER

    data = tmp_path / "none"
    data.mkdir()
    res = CliRunner().invoke(main, ["train-classifier", "--data", str(data), "--from", str(broken_weights(tmp_path))])
    assert res.exit_code != 0 and "bad.pt: cannot load" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["train-classifier", "--task", "colour", "--data", str(data),
                                    "--from", str(DEFAULT_CLASSIFIER)])
    assert res.exit_code != 0 and "--from: the colour model trains from scratch" in res.output


def test_eval_classifier_scores_stones_apart_from_pyramids():
    """`zendo eval-classifier` says how often a stone crop is read as a stone, and how often a
    pyramid is read as one (which would lose a piece)."""
    from vision.classify import score

    stone = classifier_output(CLASS_ID["stone_green"])
    y = np.array([CLASS_ID["red_small"], CLASS_ID["green_small"], stone, stone, BACKGROUND])
    clf = classifier_saying(CLASS_ID["red_small"], stone, stone, CLASS_ID["green_small"], BACKGROUND)
    out = score(clf, np.zeros((5, 6, CROP_PX, CROP_PX), np.uint8), y)
    assert out["pyramid_crops"] == 2 and out["stone_crops"] == 2 and out["background_crops"] == 1
    assert out["stone_recall_pct"] == 50.0 and out["pyramids_called_stone_pct"] == 50.0
    assert out["color_size_accuracy_pct"] == 50.0 and out["background_recall_pct"] == 100.0


@pytest.mark.parametrize("command", [["train-classifier", "--epochs", "1", "--data"], ["eval-classifier", "--dataset"],
                                     ["train-classifier", "--task", "colour", "--epochs", "1", "--data"]])
def test_a_broken_render_folder_in_the_training_data_is_named_in_one_line(tmp_path, command):
    from vision.eval import write_eval_set

    data = write_eval_set(tmp_path / "cls", 2, seed=424243)
    broken = sorted(p.parent for p in data.glob("*/truth.json"))[1]
    (broken / "truth.json").write_text("{")
    res = CliRunner().invoke(main, command + [str(data)])
    assert res.exit_code == 2 and res.output.startswith("error:") and len(res.output.strip().splitlines()) == 1
    assert f"{broken.name}/truth.json: not JSON" in res.output
    (broken / "truth.json").write_text('{"scene": {"format": "zendo-scene/1", "pieces": []}, "objects": [], '
                                       '"camera_to_table": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}')
    (broken / "depth.png").unlink()
    res = CliRunner().invoke(main, command + [str(data)])
    assert res.exit_code == 2 and "missing depth.png" in res.output and len(res.output.strip().splitlines()) == 1


def random_crop_set(tmp_path, n: int = 40):
    """A crop set file of random crops with random labels: enough to run a training epoch on."""
    from vision.cropset import CropSet

    rng = np.random.default_rng(5)
    x = rng.integers(0, 255, (n, 6, CROP_PX, CROP_PX), dtype=np.uint8)
    crop_set = CropSet(x, rng.integers(0, N_CLASSES, n), rng.integers(0, N_ORIENTATIONS, n), np.zeros(n, np.int64))
    return crop_set.save(tmp_path / "crops.npz")


def test_a_saved_net_is_rebuilt_with_its_own_widths(tmp_path):
    """A classifier trained wider or narrower than the committed one loads as it was trained: its
    widths are read from its weights, not assumed."""
    from vision.classify import _net, channels_of
    from vision.nets import save

    path = save(_net(N_CLASSES, (8, 8, 16, 16, 32)).state_dict(), tmp_path / "narrow.pt", {})
    clf = PieceClassifier(path, int8=False)
    assert channels_of(clf.net.state_dict()) == (8, 8, 16, 16, 32)
    assert clf.probabilities(np.zeros((2, 6, CROP_PX, CROP_PX), np.uint8)).shape == (2, N_CLASSES)


def test_training_from_scratch_builds_the_committed_nets_widths(tmp_path):
    """`zendo train-classifier` with no --channels makes the nets the committed weights are: the
    wide classifier, the narrow orientation net (so the model card's command reproduces them)."""
    from vision.classify import DEFAULT_ORIENTATION, channels_of

    crops_file = random_crop_set(tmp_path)
    for task, committed in (("class", DEFAULT_CLASSIFIER), ("orientation", DEFAULT_ORIENTATION)):
        out = tmp_path / f"{task}.pt"
        res = CliRunner().invoke(main, ["train-classifier", "--task", task, "--crops", str(crops_file),
                                        "--epochs", "1", "--out", str(out)])
        assert res.exit_code == 0, res.output
        saved = torch.load(out, weights_only=True)
        want = channels_of(torch.load(committed, weights_only=True)["state_dict"])
        assert channels_of(saved["state_dict"]) == want and saved["meta"]["channels"] == list(want)


def test_train_classifier_trains_the_widths_asked_for(tmp_path):
    from vision.classify import channels_of

    out = tmp_path / "narrow.pt"
    res = CliRunner().invoke(main, ["train-classifier", "--crops", str(random_crop_set(tmp_path)), "--epochs", "1",
                                    "--channels", "8,8,16,16,32", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert channels_of(torch.load(out, weights_only=True)["state_dict"]) == (8, 8, 16, 16, 32)


@pytest.mark.parametrize("extra, says", [(["--channels", "8,8,16"], "--channels 8,8,16: give 5 filter counts"),
                                         (["--channels", "8,x,8,8,8"], "give 5 filter counts"),
                                         (["--channels", "8,8,8,8,8", "--from", str(DEFAULT_CLASSIFIER)],
                                          "the --from net's widths are 48,64,128,192,256")])
def test_train_classifier_names_widths_it_cannot_train_in_one_line(tmp_path, extra, says):
    res = CliRunner().invoke(main, ["train-classifier", "--crops", str(random_crop_set(tmp_path)), *extra])
    assert res.exit_code != 0 and says in res.output and "Traceback" not in res.output



def test_refine_keeps_the_boxes_it_dropped_with_the_pyramids_share_of_their_reading():
    """What the classifier drops as "not a piece" may still be one (vision.doubts.box_doubts):
    the box comes back apart, its confidence the pyramids' share of the reading."""
    frame, table = frame_and_table()
    det = Detections(np.array([[300, 200, 340, 240], [100, 100, 120, 120]], np.float32),
                     np.array([CLASS_ID["black_small"], CLASS_ID["red_medium"]]), np.array([0.3, 0.9], np.float32))
    p = np.full(N_CLASSES, 0.05 / (N_CLASSES - 2))
    p[BACKGROUND], p[CLASS_ID["black_small"]] = 0.75, 0.2
    clf = classifier_saying(CLASS_ID["red_medium"], CLASS_ID["red_medium"])
    clf.net = FixedNet([np.log(p).tolist(), clf.net.rows[1].tolist()])
    out, verdicts, dropped = clf.refine_keeping_dropped(frame, table, det)
    assert out.class_name == ["red_medium"] and len(verdicts) == 1
    assert len(dropped) == 1 and dropped.xyxy[0].tolist() == [300, 200, 340, 240]
    assert dropped.confidence[0] == pytest.approx(p[:BACKGROUND].sum(), abs=1e-3)
    assert clf.refine(frame, table, det)[0].class_name == out.class_name


def test_the_faint_stone_boxes_come_back_with_the_pyramids_share_of_their_reading():
    """A small piece lying flat on a table near its colour may draw only a faint stone's box
    (fresh 411428, a black stone at 0.18 that the classifier read as pyramids 0.91): each faint
    stone box comes back with the pyramids' share as its confidence; faint pyramid boxes do not."""
    frame, table = frame_and_table()
    faint = Detections(np.array([[300, 200, 340, 240], [100, 100, 120, 120]], np.float32),
                       np.array([CLASS_ID["red_small"], CLASS_ID["stone_black"]]), np.array([0.2, 0.18], np.float32))
    p = np.full(N_CLASSES, 0.09 / (N_CLASSES - 2))
    p[CLASS_ID["black_small"]], p[CLASS_ID["stone_black"]] = 0.85, 0.06
    clf = classifier_saying(CLASS_ID["stone_black"])
    clf.net = FixedNet([np.log(p).tolist()])
    read = clf.read_faint_stones(frame, table, faint)
    assert read.class_name == ["stone_black"] and read.xyxy[0].tolist() == [100, 100, 120, 120]
    assert read.confidence[0] == pytest.approx(p[:BACKGROUND].sum(), abs=1e-3)
    assert len(clf.read_faint_stones(frame, table, faint[np.array([0])])) == 0



def test_the_detectors_boxes_are_read_with_turns_and_a_later_stages_probe_once():
    """`refine` reads the detector's boxes as `probabilities` does (unsure crops again in their
    quarter turns); a tower's band, a nest's rim or a blob (`read_box`) is read in one pass,
    as its stage's thresholds were set."""
    frame, table = frame_and_table()
    box = np.array([300, 200, 340, 240], np.float32)
    det = Detections(box[None], np.array([CLASS_ID["red_medium"]]), np.array([0.9], np.float32))
    clf = classifier_saying(CLASS_ID["red_medium"])

    def saying(name):
        def read(x):
            p = np.full((len(x), N_CLASSES), 0.01, np.float32)
            p[:, CLASS_ID[name]] = 1.0 - 0.01 * (N_CLASSES - 1)
            return p
        return read

    clf.probabilities, clf.read_once = saying("blue_large"), saying("green_small")
    assert clf.refine(frame, table, det)[0].class_name == ["blue_large"]
    assert clf.read_box(frame, table, box).class_id == CLASS_ID["green_small"]
