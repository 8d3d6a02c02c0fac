"""The detector: one `Detections` value passed between stages, a YOLO wrapper, and training.

Why a single value type (after Roboflow's `supervision`): the pose stage, the overlays, the
evaluation and the tests all take the same arrays, so a detector can be swapped (detect, pose
keypoints, segment) without touching anything downstream.

Ultralytics is imported lazily and always offline: YOLO_OFFLINE is set before the import, and a
local font is placed in its config folder because its dataset checks otherwise try to download
Arial.ttf (docs: facts.md).
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from .classes import CLASS_NAMES, PYRAMID_CLASSES
from .nets import SOURCE_KEY, made_from, stamp

log = logging.getLogger(__name__)

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
DEFAULT_WEIGHTS = MODELS_DIR / "zendo-yolo.pt"
FONT_CANDIDATES = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                   "/usr/share/fonts/dejavu/DejaVuSans.ttf")


EDGE_PX = 3  # a box this near the picture's edge is cut by it
# Boxes from here up to the detector's own threshold are kept apart as faint ones (`with_faint`):
# a piece mostly out of view often draws no more (vision.doubts.box_doubts; on the tuning tables
# 23 of the 37 faint pyramid boxes from 0.05 at the picture's edge that nothing else took were pieces)
FAINT_CONF = 0.05


def cut_by_edge(box, shape: tuple[int, int], margin: int = EDGE_PX):
    """Whether a box (x0, y0, x1, y1) comes within `margin` pixels of the edge of a picture of
    `shape` (rows, columns): the picture then shows only part of what it holds. Boxes as rows
    (N x 4) get an answer each."""
    x0, y0, x1, y1 = np.moveaxis(np.asarray(box, dtype=float), -1, 0)
    h, w = shape
    return (x0 <= margin) | (y0 <= margin) | (x1 + 1 >= w - margin) | (y1 + 1 >= h - margin)


class DetectorError(RuntimeError):
    """The detector cannot run (missing weights, broken file); the message is one line."""


def share_inside(box, others) -> np.ndarray:
    """The share of `box` (x0, y0, x1, y1, pixels) that lies inside each of `others` (N x 4, the
    same layout): how much of a detection box a fitted model's projected box covers, or how much
    of one piece's box lies in another's (areas under 1 px count as 1)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    o = np.asarray(others, float).reshape(-1, 4)
    iw = np.clip(np.minimum(o[:, 2], x1) - np.maximum(o[:, 0], x0), 0, None)
    ih = np.clip(np.minimum(o[:, 3], y1) - np.maximum(o[:, 1], y0), 0, None)
    return iw * ih / max((x1 - x0) * (y1 - y0), 1.0)


@dataclass(frozen=True, eq=False)
class Detections:
    """N detections in one image: boxes (xyxy, pixels), class ids, confidences, optional extras.

    keypoints: (N, K, 3) x, y, visibility/confidence in pixels (pyramids: tip, corner0..3).
    masks: (N, H, W) bool instance masks, when the detector segments.
    orientation: (N, 3) p(upright, flat, weird) read from each box's crop by the orientation net
    (vision/classify.py), when one ran; the pose fit takes it as a prior.
    """

    xyxy: np.ndarray
    class_id: np.ndarray
    confidence: np.ndarray
    keypoints: np.ndarray | None = None
    masks: np.ndarray | None = None
    orientation: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.xyxy)
        if self.xyxy.shape != (n, 4) or len(self.class_id) != n or len(self.confidence) != n:
            raise ValueError("Detections: xyxy, class_id and confidence must agree in length")

    def __len__(self) -> int:
        return len(self.xyxy)

    def plus(self, box: np.ndarray, class_name: str, confidence: float) -> "Detections":
        """These detections and one more (a piece a later stage found without the detector)."""
        from .classes import CLASS_ID

        return Detections.merge([self, Detections(np.asarray(box, np.float32)[None], np.array([CLASS_ID[class_name]]),
                                                  np.array([confidence], np.float32))])

    def orientation_read(self, k: int) -> np.ndarray | None:
        """The orientation net's p(upright, flat, weird) for detection k, or None where it read
        nothing: no net, no such detection (a piece a later stage added has index -1), or a box
        it was not asked about (a stone's box holds an even third each)."""
        if self.orientation is None or not 0 <= k < len(self):
            return None
        probs = np.asarray(self.orientation[k], float)
        return None if np.ptp(probs) < 1e-6 else probs

    def __getitem__(self, index) -> "Detections":
        """Select by mask, index array or slice (as in supervision: `d[d.confidence > 0.5]`)."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        return Detections(self.xyxy[index], self.class_id[index], self.confidence[index],
                          None if self.keypoints is None else self.keypoints[index],
                          None if self.masks is None else self.masks[index],
                          None if self.orientation is None else self.orientation[index])

    @classmethod
    def empty(cls) -> "Detections":
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.int64), np.zeros(0, np.float32))

    @classmethod
    def merge(cls, parts: Iterable["Detections"]) -> "Detections":
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        kp = None
        if all(p.keypoints is not None for p in parts):
            kp = np.concatenate([p.keypoints for p in parts])
        orient = None
        read = [p.orientation for p in parts if p.orientation is not None]
        if read:  # a part nobody read gets even odds: no prior
            k = read[0].shape[1]
            orient = np.concatenate([np.full((len(p), k), 1 / k, np.float32) if p.orientation is None
                                     else p.orientation for p in parts])
        return cls(np.concatenate([p.xyxy for p in parts]), np.concatenate([p.class_id for p in parts]),
                   np.concatenate([p.confidence for p in parts]), kp, None, orient)

    @property
    def class_name(self) -> list[str]:
        return [CLASS_NAMES[int(c)] for c in self.class_id]

    @property
    def is_pyramid(self) -> np.ndarray:
        return self.class_id < len(PYRAMID_CLASSES)


# --------------------------------------------------------------------------- Ultralytics, offline


def prepare_ultralytics() -> None:
    """Make Ultralytics safe to import with no network: offline mode and a local font."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    cfg = os.environ.get("YOLO_CONFIG_DIR")
    if not cfg:
        cfg = str(Path(tempfile.gettempdir()) / "zendo-ultralytics")
        os.environ["YOLO_CONFIG_DIR"] = cfg
    Path(cfg).mkdir(parents=True, exist_ok=True)
    for name in ("Arial.ttf", "Arial.Unicode.ttf"):
        target = Path(cfg) / name
        if not target.exists():
            for src in FONT_CANDIDATES:
                if Path(src).is_file():
                    shutil.copyfile(src, target)
                    break


def _yolo():
    prepare_ultralytics()
    # Its first import on a machine writes a settings file and says so on stdout, and its logger's
    # handler keeps the stream it was made with: made while stdout points at stderr, nothing it
    # says lands where our commands write JSON (`zendo eval > EVAL.json` on a fresh machine wrote
    # the banner into the file)
    with contextlib.redirect_stdout(sys.stderr):
        from ultralytics import YOLO

    # after the import: its first import sets its own logger to INFO, which would print export and
    # training chatter
    logging.getLogger("ultralytics").setLevel(logging.WARNING)
    return YOLO


class Detector:
    """A trained YOLO model (detect, pose or segment) that returns Detections.

    On the CPU it runs the ONNX copy of the weights (`export_onnx`) through ONNX Runtime when one
    sits beside the .pt and was exported from these very weights: the same boxes, about twice as
    fast as torch on a 2-core CPU. A stale copy (the .pt retrained since) is ignored, never run.
    """

    def __init__(self, weights: str | Path = DEFAULT_WEIGHTS, *, device: str | None = None, conf: float = 0.25,
                 iou: float = 0.6, imgsz: int = 640, runtime: str = "auto"):
        weights = Path(weights)
        if not weights.is_file():
            raise DetectorError(f"{weights}: no detector weights (train them with `zendo train`)")
        if runtime not in ("auto", "torch", "onnx"):
            raise DetectorError(f"runtime {runtime!r}: not one of auto, torch, onnx")
        self.device = device or ("cuda:0" if _cuda() else "cpu")
        self.runtime = "torch"
        path = weights
        copy = onnx_copy(weights) if runtime != "torch" and self.device == "cpu" and weights.suffix == ".pt" else None
        if weights.suffix == ".onnx":
            self.runtime = "onnx"
        elif copy is not None:
            path, self.runtime = copy, "onnx"
        elif runtime == "onnx":
            raise DetectorError(f"{weights}: no up-to-date ONNX copy beside it (write one with `zendo export-detector`)")
        try:
            self.direct = OnnxFrames(path) if self.runtime == "onnx" else None
            self.model = _yolo()(str(path), task=self.direct.task if self.direct is not None else None)
        except Exception as exc:  # a broken or foreign file
            raise DetectorError(f"{path}: cannot load ({exc.__class__.__name__})") from None
        self.task = self.model.task
        if self.task != "detect":
            self.direct = None  # keypoints and masks: Ultralytics' own post-processing
        self.conf = conf
        self.iou = iou
        self.imgsz = imgsz
        self.weights = weights

    def __call__(self, rgb: np.ndarray) -> Detections:
        return self._run(rgb, self.conf)

    def with_faint(self, rgb: np.ndarray) -> tuple[Detections, Detections]:
        """The detections (confidence at least `conf`) and, apart, the faint ones (FAINT_CONF up
        to `conf`), from one run. The first are exactly what a call gives: non-maximum
        suppression takes boxes by falling confidence, so a fainter box never suppresses a
        surer one."""
        d = self._run(rgb, min(FAINT_CONF, self.conf))
        sure = d.confidence >= self.conf
        return d[sure], d[~sure]

    def _run(self, rgb: np.ndarray, conf: float) -> Detections:
        if self.direct is not None and rgb.shape[:2] == self.direct.frame_hw:
            return self.direct(rgb, conf, self.iou)
        # Ultralytics takes numpy images as BGR (OpenCV order)
        try:
            res = self.model.predict(rgb[..., ::-1], imgsz=self.imgsz, conf=conf, iou=self.iou,
                                     device=self.device, verbose=False, agnostic_nms=True, max_det=300)[0]
        except (TypeError, ValueError, AssertionError) as exc:  # a foreign weights file, a device that is not there
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
            raise DetectorError(f"{self.weights}: the detector cannot run ({first})") from None
        return from_ultralytics(res)

    def warmup(self, shape=(480, 640, 3)) -> None:
        self(np.zeros(shape, np.uint8))


# --------------------------------------------------------------------------- the ONNX copy

ONNX_SOURCE_KEY = SOURCE_KEY  # the .pt's SHA-256 (vision.nets.stamp)
ONNX_FRAME_HW = (480, 640)  # the D435 colour frame (facts.md); 32 divides both, so no letterboxing


class OnnxFrames:
    """The ONNX copy run by ONNX Runtime on a camera frame of its own shape, then Ultralytics' NMS:
    the boxes `YOLO.predict` gives (no letterbox is needed at that shape), without its per-call
    set-up. Why not through Ultralytics: it cannot pass session options, and ONNX Runtime's worker
    threads otherwise spin after each run (vision.nets.cpu_session)."""

    def __init__(self, path: Path):
        from .nets import cpu_session

        self.session = cpu_session(str(path))
        inp = self.session.get_inputs()[0]
        self.input = inp.name
        self.frame_hw = tuple(int(v) for v in inp.shape[2:4])
        self.task = self.session.get_modelmeta().custom_metadata_map.get("task")  # Ultralytics' export metadata

    def __call__(self, rgb: np.ndarray, conf: float, iou: float) -> Detections:
        import torch
        from ultralytics.utils.nms import non_max_suppression

        x = np.ascontiguousarray(rgb.transpose(2, 0, 1)[None], np.float32) / 255.0
        raw = torch.from_numpy(self.session.run(None, {self.input: x})[0])
        p = non_max_suppression(raw, conf, iou, agnostic=True, max_det=300)[0].numpy()
        if len(p) == 0:
            return Detections.empty()
        h, w = self.frame_hw
        xyxy = np.clip(p[:, :4], 0, [w, h, w, h]).astype(np.float32)
        return Detections(xyxy, p[:, 5].astype(np.int64), p[:, 4].astype(np.float32))


def onnx_copy(weights: str | Path) -> Path | None:
    """The .onnx beside `weights` when it was exported from exactly these weights and ONNX Runtime
    is installed; otherwise None (the caller runs the .pt with torch)."""
    weights = Path(weights)
    path = weights.with_suffix(".onnx")
    if not path.is_file():
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    if not made_from(path, weights):
        log.warning("%s: unreadable, or not exported from %s (stale); the detector runs the .pt with torch",
                    path, weights.name)
        return None
    return path


def export_onnx(weights: str | Path, frame_hw: tuple[int, int] = ONNX_FRAME_HW) -> Path:
    """Write `weights` as ONNX beside it (same stem), for ONNX Runtime on the CPU, stamped with the
    .pt's SHA-256 so a later retrain cannot be shadowed by an old copy. Static frame shape: the
    camera's, at native scale like the .pt."""
    import onnx

    weights = Path(weights)
    if not weights.is_file():
        raise DetectorError(f"{weights}: no detector weights to export")
    out = Path(_yolo()(str(weights)).export(format="onnx", imgsz=list(frame_hw), simplify=False, dynamic=False,
                                            opset=17, device="cpu", verbose=False))
    model = onnx.load(str(out))
    stamp(model, weights)
    onnx.save(model, str(out))
    return out


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        return False


def from_ultralytics(res) -> Detections:
    """Convert one Ultralytics `Results` into Detections."""
    b = res.boxes
    if b is None or len(b) == 0:
        return Detections.empty()
    xyxy = b.xyxy.cpu().numpy().astype(np.float32)
    cls = b.cls.cpu().numpy().astype(np.int64)
    conf = b.conf.cpu().numpy().astype(np.float32)
    kp = None
    if getattr(res, "keypoints", None) is not None and res.keypoints.data is not None and len(res.keypoints.data):
        kp = res.keypoints.data.cpu().numpy().astype(np.float32)
        if kp.shape[-1] == 2:
            kp = np.concatenate([kp, np.ones(kp.shape[:-1] + (1,), np.float32)], axis=-1)
    masks = None
    if getattr(res, "masks", None) is not None and res.masks is not None:
        m = res.masks.data.cpu().numpy() > 0.5
        h, w = res.orig_shape
        if m.shape[1:] != (h, w):
            import cv2

            m = np.stack([cv2.resize(x.astype(np.uint8), (w, h), interpolation=cv2.INTER_NEAREST) > 0 for x in m])
        masks = m
    return Detections(xyxy, cls, conf, kp, masks)


# --------------------------------------------------------------------------- training


def train(data_yaml: str | Path, *, task: str = "pose", model: str = "yolo11n", epochs: int = 60, imgsz: int = 640,
          batch: int = 32, device: str | None = None, workers: int = 8, project: str | Path = "runs/zendo",
          name: str = "train", seed: int = 0, fraction: float = 1.0, out: str | Path | None = None, **extra) -> Path:
    """Train from scratch (built from yaml: nothing is downloaded), or go on from a .pt of our
    own, and copy best.pt to `out`.

    Why from scratch: offline machines cannot fetch pretrained weights, and the synthetic domain
    is narrow (18 classes of simple solids on a table), so a nano model learns it quickly.
    """
    YOLO = _yolo()
    suffix = {"detect": "", "pose": "-pose", "segment": "-seg"}[task]
    # a .pt continues training from those weights (fine-tuning on new data); a name builds from
    # yaml. Ultralytics 8.4 throws a loaded .pt's weights away unless pretrained is true.
    going_on = str(model).endswith(".pt")
    net = YOLO(model, task=task) if going_on else YOLO(f"{model}{suffix}.yaml", task=task)
    device = device if device is not None else ("0" if _cuda() else "cpu")
    net.train(data=str(data_yaml), epochs=epochs, imgsz=imgsz, batch=batch, device=device, workers=workers,
              project=str(Path(project).resolve()), name=name, exist_ok=True, seed=seed, amp=False, plots=False,
              pretrained=going_on, fraction=fraction, verbose=False, **extra)
    best = Path(net.trainer.best)
    if not best.is_file():
        best = Path(net.trainer.last)
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(best, out)
        return out
    return best


def _main(argv: list[str] | None = None) -> None:
    """`python -m vision.detect train ...`: the training entry point for machines without `zendo`'s
    other dependencies (the GPU box), so the model card's command runs there unchanged."""
    import argparse
    import json

    from .trainset import materialise

    ap = argparse.ArgumentParser(prog="python -m vision.detect")
    ap.add_argument("command", choices=["train"])
    ap.add_argument("--data", required=True, action="append",
                    help="a folder written by vision.trainset.write_training_set (repeat to join several)")
    ap.add_argument("--task", default="pose", choices=["detect", "pose", "segment"])
    ap.add_argument("--model", default="yolo11n", help="a model name (from scratch) or a .pt to go on from")
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--hours", type=float, default=None, help="train for this long instead (overrides epochs)")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--crop", type=int, default=None, help="train on tiles of this size at native scale (detect)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--device", default=None)
    ap.add_argument("--fraction", type=float, default=1.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--project", default="runs/zendo")
    ap.add_argument("--cache", default=None, choices=[None, "ram", "disk"], help="cache decoded images")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="other Ultralytics train arguments")
    a = ap.parse_args(argv)
    dest = Path(a.project) / (f"data_{a.task}_crop{a.crop}" if a.crop else f"data_{a.task}")
    for root in a.data:
        yaml = materialise(root, a.task, dest, crop=a.crop)
    imgsz = a.crop or a.imgsz
    extra = {"time": a.hours} if a.hours else {}
    if a.cache:
        extra["cache"] = a.cache
    for kv in a.set:
        k, v = kv.split("=", 1)
        try:
            extra[k] = json.loads(v)
        except json.JSONDecodeError:
            extra[k] = v
    out = train(yaml, task=a.task, model=a.model, epochs=a.epochs, imgsz=imgsz, batch=a.batch, device=a.device,
                workers=a.workers, project=a.project, name=a.task, fraction=a.fraction, out=a.out, **extra)
    print(json.dumps({"weights": str(out), "task": a.task}))


if __name__ == "__main__":
    _main()
