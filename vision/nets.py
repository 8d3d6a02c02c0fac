"""Loading, running and scoring the small second-stage nets: the crop classifier, the orientation
net (vision/classify.py) and the colour model (vision/colors.py).

Why one place: each is a torch module saved as {"state_dict", "meta"} by `save`, loaded with a
one-line error naming the file when it is missing or foreign, read through a softmax, and scored
with the same percentages and confusion counts.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def load_net(weights: Path, build: Callable, missing: str, error: type[Exception]):
    """The net `build(state_dict)` makes (it may read its shape from the saved weights), with
    those weights, in eval mode; else `error` in one line: "<file>: <missing>" when there is no
    file, "<file>: cannot load (...)" when it is not one."""
    import torch

    if not weights.is_file():
        raise error(f"{weights}: {missing}")
    try:
        blob = torch.load(weights, map_location="cpu", weights_only=True)
        net = build(blob["state_dict"])
        net.load_state_dict(blob["state_dict"])
    except Exception as exc:  # a broken or foreign file
        raise error(f"{weights}: cannot load ({exc.__class__.__name__})") from None
    return net.eval()


SOURCE_KEY = "zendo_source_sha256"  # the metadata an ONNX copy carries: the SHA-256 of the weights it was made from


def sha256(path: str | Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def stamp(model, weights: str | Path) -> None:
    """Mark an ONNX model (onnx.ModelProto) as made from `weights`."""
    entry = model.metadata_props.add()
    entry.key, entry.value = SOURCE_KEY, sha256(weights)


def made_from(copy: str | Path, weights: str | Path) -> bool:
    """Whether the ONNX file `copy` was stamped as made from exactly these weights. Why a stamp:
    a copy beside retrained weights must never be run in their place. False for a file that
    cannot be read (a broken copy, or no onnx package)."""
    try:
        import onnx

        meta = {p.key: p.value for p in onnx.load(str(copy), load_external_data=False).metadata_props}
    except Exception:  # noqa: BLE001 - no onnx package, or a broken file: there is no usable copy
        return False
    return meta.get(SOURCE_KEY) == sha256(weights)


SESSION_THREADS: int | None = None  # ONNX Runtime's threads per session; None: its default (the cores)


def cpu_session(model):
    """An ONNX Runtime session on the CPU for a model (a path or serialized bytes), its worker
    threads not spinning after a run: by default they do, and take the second core of a 2-core
    machine from the numpy stages that follow (the crop nets ran 11 ms alone, 66 ms right after a
    detection)."""
    import onnxruntime

    opts = onnxruntime.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if SESSION_THREADS:
        opts.intra_op_num_threads = SESSION_THREADS
    return onnxruntime.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def export_onnx(net, sample: np.ndarray) -> bytes:
    """`net` as a serialized ONNX graph with a free batch dimension, exported in memory (the
    TorchScript exporter: no onnxscript needed)."""
    import io
    import warnings

    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notes
        torch.onnx.export(net, (torch.as_tensor(sample),), buf, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=17, dynamo=False)
    return buf.getvalue()


class OnnxRunner:
    """A loaded net run by ONNX Runtime on the CPU: exported in memory from the module itself, so
    there is no second file to go stale, or its int8 copy (vision.quantize) where one made from
    these very weights sits beside them. Why: on the classifier's batches of a dozen 48 x 48 crops
    float ONNX is twice torch's speed on a 2-core CPU (12 against 25 ms a batch), int8 three times
    float's, and the pipeline reads every frame twice (class, orientation). Called like the
    module: a tensor in, logits out. `kind`: "int8" or "float"."""

    def __init__(self, net, sample: np.ndarray, int8: Path | None = None):
        self.kind = "float" if int8 is None else "int8"
        self.session = cpu_session(export_onnx(net, sample) if int8 is None else str(int8))

    def __call__(self, x):
        import torch

        x = np.ascontiguousarray(torch.as_tensor(x).numpy(), np.float32)
        return torch.from_numpy(self.session.run(None, {"x": x})[0])


def cpu_runner(net, sample: np.ndarray, int8: Path | None = None):
    """`OnnxRunner(net)` (on the int8 copy `int8` when given) where ONNX Runtime and the exporter
    work; the torch module itself where they do not (an install without them, a torch whose
    legacy exporter is gone): same logits."""
    try:
        return OnnxRunner(net, sample, int8)
    except Exception as exc:  # noqa: BLE001 - any failure leaves the torch path, which always works
        log.info("small nets run on torch (%s)", exc.__class__.__name__)
        return net


class DeviceRunner:
    """A loaded net run by torch on a GPU (`device`, "cuda:0"), its logits back on the host. Why:
    with the detector on a GPU the crop nets' int8 copies were the one other network left on the
    host's CPU. Measured on an H100 box (models/BENCH-H100.json) the classify lap went 13-14 ->
    12.4-12.7 ms: cutting the crops, which stays on the host, is most of it. The module is copied
    so that the loaded net stays on the CPU for anything else that runs it."""

    def __init__(self, net, device: str):
        import copy

        import torch

        self.device = torch.device(device)
        self.kind = f"torch {self.device}"
        self.net = copy.deepcopy(net).to(self.device).eval()

    def __call__(self, x):
        import torch

        return self.net(torch.as_tensor(x).to(self.device)).float().cpu()


def runner_kind(runner) -> str:
    """How a net reads crops: "int8" or "float" (ONNX Runtime), "torch" (on the CPU) or "torch
    cuda:0" (DeviceRunner)."""
    return getattr(runner, "kind", "torch")


def softmax(net, x, n_out: int) -> np.ndarray:
    """Class probabilities per input row (a tensor, or what `torch.as_tensor` takes)."""
    import torch

    if len(x) == 0:
        return np.zeros((0, n_out), np.float32)
    with torch.inference_mode():
        return torch.softmax(net(torch.as_tensor(x)), dim=1).numpy()


def save(state_dict: dict, path: str | Path, meta: dict) -> Path:
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": state_dict, "meta": meta}, path)
    return path


def pct(m) -> float | None:
    """The share of True in m, in percent (None when m is empty)."""
    return round(100.0 * float(np.mean(m)), 2) if np.size(m) else None


def confusions(truth: np.ndarray, pred: np.ndarray, names: Sequence[str], top: int | None = None) -> dict[str, int]:
    """"truth->read" counts of the wrong readings, most frequent first."""
    wrong = truth != pred
    counts = Counter(f"{names[a]}->{names[b]}" for a, b in zip(truth[wrong], pred[wrong]))
    return dict(counts.most_common(top))
