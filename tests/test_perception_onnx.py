"""The detector's ONNX copy: what the CPU runs, the same boxes as the weights it came from, and
never a copy of other weights."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from tests.perception_helpers import render_table
from vision.detect import DEFAULT_WEIGHTS, ONNX_SOURCE_KEY, Detector, DetectorError, onnx_copy
from zendo.build import Spec, flat, tower, upright
from zendo.cli import main


@pytest.fixture(scope="module")
def frame_rgb():
    pieces = [upright(Spec("a", "red", "large"), (-60, 20), 10), flat(Spec("b", "blue", "medium"), (0, -40), 30),
              upright(Spec("c", "yellow", "small"), (60, 30), 0), flat(Spec("d", "green", "large"), (40, -50), 200)]
    pieces += tower([Spec("e", "black", "large"), Spec("f", "red", "small")], (-40, -60), 20)
    r, _, _ = render_table(pieces, seed=11)
    return r.color


def _restamp(path, value: str) -> None:
    import onnx

    model = onnx.load(str(path))
    for p in model.metadata_props:
        if p.key == ONNX_SOURCE_KEY:
            p.value = value
    onnx.save(model, str(path))


def test_the_committed_weights_have_an_up_to_date_onnx_copy_and_the_cpu_runs_it():
    assert onnx_copy(DEFAULT_WEIGHTS) == DEFAULT_WEIGHTS.with_suffix(".onnx")
    assert Detector(device="cpu").runtime == "onnx"


def test_the_onnx_copy_finds_the_same_boxes_as_the_weights(frame_rgb):
    torch_det = Detector(device="cpu", runtime="torch")(frame_rgb)
    onnx_det = Detector(device="cpu", runtime="onnx")(frame_rgb)
    assert len(torch_det) >= 4
    assert len(onnx_det) == len(torch_det)
    order_t, order_o = np.argsort(torch_det.xyxy[:, 0]), np.argsort(onnx_det.xyxy[:, 0])
    assert (torch_det.class_id[order_t] == onnx_det.class_id[order_o]).all()
    assert np.abs(torch_det.xyxy[order_t] - onnx_det.xyxy[order_o]).max() < 0.05
    assert np.abs(torch_det.confidence[order_t] - onnx_det.confidence[order_o]).max() < 1e-3


@pytest.mark.parametrize("runtime", ["onnx", "torch"])
def test_the_faint_boxes_come_apart_from_the_very_boxes_a_plain_call_gives(frame_rgb, runtime):
    """vision.doubts.box_doubts reads the faint ones; nothing else may change."""
    from vision.detect import FAINT_CONF

    det = Detector(device="cpu", runtime=runtime, conf=0.9)  # high, so that some boxes fall under it
    sure, faint = det.with_faint(frame_rgb)
    plain = det(frame_rgb)
    assert len(faint) >= 1 and len(sure) == len(plain)
    assert (sure.xyxy == plain.xyxy).all() and (sure.class_id == plain.class_id).all()
    assert (sure.confidence == plain.confidence).all()
    assert ((faint.confidence >= FAINT_CONF - 1e-6) & (faint.confidence < 0.9)).all()


def test_a_copy_exported_from_other_weights_is_never_run(tmp_path):
    shutil.copyfile(DEFAULT_WEIGHTS, tmp_path / "w.pt")
    shutil.copyfile(DEFAULT_WEIGHTS.with_suffix(".onnx"), tmp_path / "w.onnx")
    assert Detector(tmp_path / "w.pt", device="cpu").runtime == "onnx"
    _restamp(tmp_path / "w.onnx", "0" * 64)  # as if w.pt had been retrained since
    assert onnx_copy(tmp_path / "w.pt") is None
    assert Detector(tmp_path / "w.pt", device="cpu").runtime == "torch"
    with pytest.raises(DetectorError, match="no up-to-date ONNX copy"):
        Detector(tmp_path / "w.pt", device="cpu", runtime="onnx")


def test_export_detector_writes_a_copy_stamped_with_its_weights(tmp_path):
    shutil.copyfile(DEFAULT_WEIGHTS, tmp_path / "w.pt")
    res = CliRunner().invoke(main, ["export-detector", "--weights", str(tmp_path / "w.pt")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1]) == {"onnx": str(tmp_path / "w.onnx")}
    assert res.output.count("\n") == 1  # only the JSON line: Ultralytics' export chatter stays off stdout
    assert onnx_copy(tmp_path / "w.pt") == tmp_path / "w.onnx"


def test_exporting_missing_weights_is_one_line(tmp_path):
    res = CliRunner().invoke(main, ["export-detector", "--weights", str(tmp_path / "none.pt")])
    assert res.exit_code != 0
    assert "none.pt: no detector weights to export" in res.output
    assert "Traceback" not in res.output


def test_the_crop_nets_read_the_same_under_onnx_runtime_as_under_torch(frame_rgb):
    """The classifier and the orientation net run as ONNX on the CPU (nets.OnnxRunner), made from
    the loaded modules: in float, the same probabilities as the modules themselves, crop for crop
    (their int8 copies are held to the float nets in tests/test_perception_quantize.py)."""
    from vision.classify import CHANNELS, CROP_PX, N_CLASSES, N_ORIENTATIONS, load_classifier, to_tensor
    from vision.nets import OnnxRunner, softmax

    clf = load_classifier(None, int8=False)
    assert isinstance(clf._runner(clf.net), OnnxRunner) and isinstance(clf._runner(clf.orient_net), OnnxRunner)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (7, CHANNELS, CROP_PX, CROP_PX), dtype=np.uint8)
    x[:, :3, 8:40, 8:40] = frame_rgb[200:232, 300:332].transpose(2, 0, 1)
    assert np.abs(clf.read_once(x) - softmax(clf.net, to_tensor(x), N_CLASSES)).max() < 1e-4
    assert np.abs(clf.orientations(x) - softmax(clf.orient_net, to_tensor(x), N_ORIENTATIONS)).max() < 1e-4
    assert clf.probabilities(x[:0]).shape == (0, N_CLASSES)


def test_on_a_gpu_the_crop_nets_read_with_torch_on_it_the_same_as_the_modules(frame_rgb):
    """With the detector on a GPU the crop nets leave the CPU (nets.DeviceRunner): torch on that
    device, in float, the same probabilities as the loaded modules. Here the device is the CPU,
    the one torch device CI has; the pipeline's choice of device is the test below."""
    from vision.classify import CHANNELS, CROP_PX, N_CLASSES, load_classifier, to_tensor
    from vision.nets import DeviceRunner, runner_kind, softmax

    clf = load_classifier(None)
    x = np.random.default_rng(1).integers(0, 256, (5, CHANNELS, CROP_PX, CROP_PX), dtype=np.uint8)
    x[:, :3, 8:40, 8:40] = frame_rgb[200:232, 300:332].transpose(2, 0, 1)
    run = DeviceRunner(clf.net, "cpu")
    assert runner_kind(run) == "torch cpu"
    assert np.abs(softmax(run, to_tensor(x), N_CLASSES) - softmax(clf.net, to_tensor(x), N_CLASSES)).max() < 1e-5
    assert run.net is not clf.net  # the loaded module stays where it was


def test_the_pipeline_puts_the_crop_nets_on_the_detectors_device_and_keeps_them_on_a_cpu():
    from vision.classify import load_classifier
    from vision.pipeline import Pipeline

    class Recorder:
        def __init__(self):
            self.devices, self.colors = [], None

        def run_on(self, device):
            self.devices.append(device)

    class GpuDetector:
        device = "cuda:0"

    rec = Recorder()
    Pipeline(GpuDetector(), classifier=rec)
    assert rec.devices == ["cuda:0"]
    clf = load_classifier(None)
    before = clf.runtime
    Pipeline(Detector(DEFAULT_WEIGHTS, device="cpu"), classifier=clf)
    assert clf.runtime == before == "int8"


def test_the_crop_nets_go_to_a_gpu_once_however_many_pipelines_share_the_classifier(monkeypatch):
    """`zendo eval` hands one classifier to a pipeline per frame: the nets are copied to the
    detector's GPU the first time only. (CI has no GPU: the copy is stood in for.)"""
    import torch

    import vision.classify as classify

    made = []

    class Copy:
        def __init__(self, net, device):
            self.device, self.kind = torch.device(device), f"torch {device}"
            made.append(net)

    monkeypatch.setattr(classify, "DeviceRunner", Copy)
    clf = classify.load_classifier(None)
    clf.run_on("cuda:0")
    clf.run_on("cuda:0")
    assert len(made) == 2 and clf.runtime == "torch cuda:0"  # the classifier and the orientation net, once
    clf.run_on("cuda:1")
    assert len(made) == 4


def test_zendo_train_writes_the_onnx_copy_beside_the_weights(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["train-data", "--out", str(tmp_path / "set"), "--n-train", "2", "--n-val", "1",
                               "--seed", "5", "--workers", "1"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["train", "--data", str(tmp_path / "set"), "--epochs", "1", "--imgsz", "160",
                               "--batch", "2", "--device", "cpu", "--out", str(tmp_path / "w.pt"),
                               "--project", str(tmp_path / "runs")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1]) == {"onnx": str(tmp_path / "w.onnx")}
    assert onnx_copy(tmp_path / "w.pt") == tmp_path / "w.onnx"
    assert Detector(tmp_path / "w.pt", device="cpu").runtime == "onnx"
