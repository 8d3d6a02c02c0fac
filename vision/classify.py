"""Second stage: each pyramid detection re-classified (colour x size, or "not a piece") from a
metric-scale crop of colour and height.

Why a second stage (as ChessCog classifies each square after finding the board): in a single
2-D image a near medium piece and a far large one look alike, which is the detector's main
confusion. After calibration every pixel has a height above the table, so a crop resampled to a
fixed size *in millimetres* (CROP_MM at the piece's depth) shows the piece at its true size, and
a height channel shows how tall it stands. A small CNN reads that; it trains on the CPU in
minutes (crops are 48 x 48), separately from the detector, and is evaluated on its own
(`zendo eval-classifier`) and in the pipeline (`zendo eval`).

Input channels (uint8 on disk, scaled here): R, G, B; height above the table (0.5 mm steps);
depth valid; inside the detection box (which of the pieces in the crop is meant).
Output: 15 pyramid classes (vision.classes order), BACKGROUND (a false detection), then the three
marking stones (white, black, green). Why stones: the detector alone tells a stone from a small
pyramid lying flat, and when it calls a piece a stone its koan vanishes without a doubt (930043,
960000-); the classifier without stone crops read true stones as small pyramids (p up to 0.98),
so it could not be the second witness until it had seen them.
"""
from __future__ import annotations

import json
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from .classes import CLASS_ID, PYRAMID_CLASSES, STONE_CLASSES
from .colors import DEFAULT_COLOR_MODEL, ColorModelError, ColorReader
from .detect import MODELS_DIR, Detections
from .nets import DeviceRunner, confusions, cpu_runner, load_net, pct, runner_kind, softmax

log = logging.getLogger(__name__)

DEFAULT_CLASSIFIER = MODELS_DIR / "zendo-cls.pt"
DEFAULT_ORIENTATION = MODELS_DIR / "zendo-orient.pt"  # the orientation net, read from the same crops
N_ORIENTATIONS = 3  # upright, flat, weird (vision.pose.ORIENTATIONS)
CROP_MM = 96.0  # side of the window at the piece's depth: a large piece lying flat fits
CROP_PX = 48
HEIGHT_STEP_MM = 0.5
BACKGROUND = len(PYRAMID_CLASSES)
FIRST_STONE = BACKGROUND + 1  # the classifier's stone outputs follow "not a piece"
N_CLASSES = FIRST_STONE + len(STONE_CLASSES)
CHANNELS = 6
PIECE_P = 0.5  # a "stone" the classifier reads as pyramids with this share becomes the likeliest one
TURNS_BELOW_P = 0.9  # a crop read less surely than this is read again in its three quarter turns
STONE_TALL_MM = 10.0  # a marking stone is about 6 mm tall; more than this in the middle of its box is a pyramid


class ClassifierError(RuntimeError):
    """The classifier cannot run (missing or foreign weights); the message is one line."""


# --------------------------------------------------------------------------- outputs


def is_stone_output(out: int) -> bool:
    return out >= FIRST_STONE


def detector_class(out: int) -> int:
    """The detector's class id (vision.classes) of a classifier output that names a thing."""
    if out == BACKGROUND:
        raise ValueError("not a piece has no detector class")
    return out - 1 if is_stone_output(out) else out


def classifier_output(class_id: int) -> int:
    """The classifier output of a detector class id: stones sit one further on, past BACKGROUND."""
    return class_id + 1 if class_id >= len(PYRAMID_CLASSES) else class_id


# --------------------------------------------------------------------------- crops


def box_depth_mm(depth_mm: np.ndarray, heights: np.ndarray, box) -> float:
    """The camera distance of what the box shows: median depth of its points above the table
    (the piece), or of all its valid points when nothing stands up (a piece seen edge-on)."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    h, w = depth_mm.shape
    x0, x1 = max(0, x0), min(w, max(x1, x0 + 1))
    y0, y1 = max(0, y0), min(h, max(y1, y0 + 1))
    d = depth_mm[y0:y1, x0:x1]
    up = (d > 0) & (heights[y0:y1, x0:x1] > 2.5)
    if up.sum() >= 5:
        return float(np.median(d[up]))
    if (d > 0).any():
        return float(np.median(d[d > 0]))
    return float(np.median(depth_mm[depth_mm > 0])) if (depth_mm > 0).any() else 600.0


def crops(rgb: np.ndarray, depth_mm: np.ndarray, heights: np.ndarray, valid: np.ndarray, fx: float,
          boxes: np.ndarray) -> np.ndarray:
    """(N, CHANNELS, CROP_PX, CROP_PX) uint8: each box's window of CROP_MM, centred on the box."""
    import cv2

    n = len(boxes)
    out = np.zeros((n, CHANNELS, CROP_PX, CROP_PX), np.uint8)
    if n == 0:
        return out
    hq = np.clip(np.where(valid, heights, 0.0) / HEIGHT_STEP_MM, 0, 255).astype(np.uint8)
    val = valid.astype(np.uint8) * 255
    h, w = depth_mm.shape
    for i, box in enumerate(boxes):
        x0, y0, x1, y1 = (float(v) for v in box)
        z = box_depth_mm(depth_mm, heights, box)
        side_px = CROP_MM * fx / max(z, 1.0)  # the window's side in image pixels
        s = CROP_PX / side_px  # image px -> crop px
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        M = np.array([[s, 0, CROP_PX / 2 - s * cx], [0, s, CROP_PX / 2 - s * cy]], np.float32)
        size = (CROP_PX, CROP_PX)
        c = cv2.warpAffine(rgb, M, size, flags=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        out[i, :3] = c.transpose(2, 0, 1)
        out[i, 3] = cv2.warpAffine(hq, M, size, flags=cv2.INTER_NEAREST, borderValue=0)
        out[i, 4] = cv2.warpAffine(val, M, size, flags=cv2.INTER_NEAREST, borderValue=0)
        bx0, by0 = s * (x0 - cx) + CROP_PX / 2, s * (y0 - cy) + CROP_PX / 2
        bx1, by1 = s * (x1 - cx) + CROP_PX / 2, s * (y1 - cy) + CROP_PX / 2
        out[i, 5, max(0, int(by0)):max(0, int(np.ceil(by1))), max(0, int(bx0)):max(0, int(np.ceil(bx1)))] = 255
    return out


def stands_tall(heights: np.ndarray, valid: np.ndarray, box) -> bool:
    """Whether the middle of a box stands higher than a marking stone can (STONE_TALL_MM)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    cx, cy, hw, hh = (x0 + x1) / 2, (y0 + y1) / 2, max((x1 - x0) / 4, 1.0), max((y1 - y0) / 4, 1.0)
    ys, xs = slice(max(0, int(cy - hh)), int(np.ceil(cy + hh))), slice(max(0, int(cx - hw)), int(np.ceil(cx + hw)))
    h = heights[ys, xs][valid[ys, xs]]
    return len(h) >= 5 and float(np.median(h)) > STONE_TALL_MM


# --------------------------------------------------------------------------- the network


NET_CHANNELS = (24, 32, 64, 96, 128)  # filters per convolution, first to last: the orientation net's
WIDE_CHANNELS = (48, 64, 128, 192, 256)  # the classifier's since session 54 (MODEL_CARD.md)


def _net(n_out: int = N_CLASSES, channels: Sequence[int] = NET_CHANNELS):
    """The crop net: five 3x3 convolutions (`channels` filters each) and three poolings over the
    48 x 48 crop, then a linear layer. Why `channels`: a wider net is the lever when the committed
    one is near its ceiling (trained on a GPU, twice the filters read colour x size 0.1-1.1 points
    better on each of ten sets' crops, for 5-6 ms more a frame on a 2-core CPU); a saved net's
    own widths are read back from its weights (`channels_of`)."""
    import torch.nn as nn

    def block(a, b):
        return [nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True)]

    c1, c2, c3, c4, c5 = channels
    return nn.Sequential(
        *block(CHANNELS, c1), *block(c1, c2), nn.MaxPool2d(2),  # 24
        *block(c2, c3), nn.MaxPool2d(2),  # 12
        *block(c3, c4), nn.MaxPool2d(2),  # 6
        *block(c4, c5), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Dropout(0.2), nn.Linear(c5, n_out),
    )


def channels_of(state: Mapping) -> tuple[int, ...]:
    """A saved crop net's filters per convolution, read from its weights."""
    convs = tuple(int(v.shape[0]) for v in state.values() if getattr(v, "ndim", 0) == 4)
    return convs if len(convs) == len(NET_CHANNELS) else NET_CHANNELS


def to_tensor(x: np.ndarray):
    """uint8 crops -> float tensor: colour and masks to 0..1, height to units of 50 mm."""
    import torch

    return _scaled(torch.from_numpy(np.ascontiguousarray(x)))


@dataclass(frozen=True)
class Verdict:
    """The classifier's reading of one detection."""

    class_id: int  # 0..14 a pyramid class, BACKGROUND for "not a piece"
    confidence: float
    runner_up: int
    runner_up_p: float
    orientation: tuple[float, float, float] | None = None  # p(upright, flat, weird), with an orientation net
    pyramid_p: float = 1.0  # the pyramids' share of the whole reading, before `verdicts` narrowed it
    stone_box: bool = False  # the detector boxed it as a stone (vision.doubts.stone_box_doubts)

    def color(self) -> tuple[str | None, float]:
        """The colour read, with its probability summed over sizes (a stage that found the piece in
        depth knows its size), or (None, 0) when neither reading is a pyramid."""
        p: dict[str, float] = {}
        for cid, prob in ((self.class_id, self.confidence), (self.runner_up, self.runner_up_p)):
            if cid < len(PYRAMID_CLASSES):
                c = PYRAMID_CLASSES[cid].split("_")[0]
                p[c] = p.get(c, 0.0) + prob
        if not p:
            return None, 0.0
        c = max(p, key=p.get)
        return c, p[c]


def pyramid_verdict(fit, verdicts: Sequence["Verdict | None"] | None) -> "Verdict | None":
    """The classifier's verdict on the box a piece was fitted from, where it read a pyramid there;
    None for a piece a later stage added from no box of its own, or a box not read as a pyramid."""
    if verdicts is None or not 0 <= fit.detection < len(verdicts):
        return None
    v = verdicts[fit.detection]
    return v if v is not None and v.class_id < len(PYRAMID_CLASSES) else None


class PieceClassifier:
    """Trained weights -> probabilities per crop; `refine` rewrites a frame's Detections."""

    turns_below_p: float = TURNS_BELOW_P  # `probabilities`' second look; 0 reads every crop once

    def __init__(self, weights: str | Path = DEFAULT_CLASSIFIER, *, background_p: float = 0.6,
                 orientation: str | Path | None = None, colors: str | Path | None = None, int8: bool = True):
        """`int8`: read crops with the nets' int8 copies where up-to-date ones sit beside the
        weights (vision.quantize); False reads them in float (to measure what int8 costs)."""
        from .quantize import int8_copy

        weights = Path(weights)
        self.net = _load_net(weights, N_CLASSES, "classifier", "zendo train-classifier")
        self.weights = weights
        self.background_p = background_p
        self.orient_weights = Path(orientation) if orientation else None
        self.orient_net = (_load_net(Path(orientation), N_ORIENTATIONS, "orientation",
                                          "zendo train-classifier --task orientation")
                           if orientation else None)
        try:  # the colour model reads a few pixels' colour (towers' bands)
            self.colors = ColorReader(colors) if colors else None
        except ColorModelError as exc:
            raise ClassifierError(str(exc)) from None
        sample = np.zeros((1, CHANNELS, CROP_PX, CROP_PX), np.float32)
        sources = ((self.net, weights), (self.orient_net, self.orient_weights))
        self._runners = {id(n): (n, cpu_runner(n, sample, int8_copy(w) if int8 else None))
                         for n, w in sources if n is not None}

    @property
    def runtime(self) -> str:
        """How the classifier reads crops ("int8", "float" or "torch"; the orientation net's after
        a "+" where it differs), for benchmarks and evaluations to say what they measured."""
        kinds = [runner_kind(self._runner(n)) for n in (self.net, self.orient_net) if n is not None]
        return "+".join(dict.fromkeys(kinds))

    def run_on(self, device: str) -> None:
        """Read crops with torch on `device` (a GPU the detector runs on) from now on, in float:
        the int8 copies are for ONNX Runtime on a CPU. A "cpu" device keeps the runners made at
        load time, and nets already there stay (`zendo eval` hands one classifier to a pipeline
        per frame: copying the nets to the GPU each time would be work for nothing)."""
        import torch

        if not str(device).startswith("cuda"):
            return
        there = torch.device(device)
        self._runners = {key: (net, run if getattr(run, "device", None) == there else DeviceRunner(net, device))
                         for key, (net, run) in self._runners.items()}

    def _runner(self, net):
        """What runs `net` on a frame's crops: the nets.cpu_runner made at load time for the nets
        loaded from weights (`_net`, whose graph holds for any batch), `net` itself for any other
        (a net put in place later runs on torch)."""
        got = getattr(self, "_runners", {}).get(id(net))
        return got[1] if got is not None and got[0] is net else net

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities per crop: `read_once`, and for each crop read less surely than
        `turns_below_p` (TURNS_BELOW_P) the mean over it and its three quarter turns.

        Why: the net learnt with quarter turns, so each turn is a second look at the same piece,
        and its errors sit where it is unsure (crops it reads at 0.9 or more: 99.8 % right). On
        the crops of 200 tables each that training never saw (433600-, 433000-), turning every
        crop took colour x size from 97.65 to 98.01 % and from 97.89 to 98.10 % at four times
        the net's cost; turning only the unsure ones (7-8 % of crops) gave 98.00 and 98.10 %."""
        p = self.read_once(x)
        unsure = np.nonzero(p.max(axis=1) < self.turns_below_p)[0]
        if len(unsure):
            turned = np.concatenate([np.rot90(x[unsure], k, axes=(2, 3)) for k in (1, 2, 3)])
            q = self.read_once(turned).reshape(3, len(unsure), -1)
            p[unsure] = (p[unsure] + q.sum(axis=0)) / 4
        return p

    def read_once(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities per crop from one pass of the net, crops as they are."""
        return softmax(self._runner(self.net), to_tensor(x), N_CLASSES)

    def orientations(self, x: np.ndarray) -> np.ndarray:
        """p(upright, flat, weird) per crop; needs an orientation net (`orient_net`)."""
        if self.orient_net is None:
            raise ClassifierError("no orientation net loaded (models/zendo-orient.pt)")
        return softmax(self._runner(self.orient_net), to_tensor(x), N_ORIENTATIONS)

    def verdicts(self, frame, table, detections: Detections, heights=None, turns: bool = False
                 ) -> list[Verdict | None]:
        """One verdict per detection, narrowed to the question its detection asks. A pyramid
        detection: which pyramid, or nothing. Not which stone: on the tuning tables the detector
        called no stone a pyramid, and the two pyramid boxes the classifier gave stones over half
        its reading were true pieces (a yellow small in a tower, a black large half hidden). A
        "stone": which pyramid, when the pyramids hold at least PIECE_P of the reading (a small
        pyramid lying flat seen from above can pass for a stone) or its middle stands taller than
        a stone can (`stands_tall`); else which stone, or nothing. `heights`: the frame's
        `height_map` when the caller has it already. `turns`: read unsure crops again in their
        quarter turns (`probabilities`), as the detector's own boxes are read (`refine`); a
        later stage's probe (a tower's band, a nest's rim, a blob, `read_box`) is read once.

        Why not the probes: their thresholds were set on the single reading, and their crops are
        unsure by nature. Turned as well, fresh 434200- lost 16 true pieces (9 of them a nest's
        inner piece or a tower's) against 4 gained."""
        out: list[Verdict | None] = [None] * len(detections)
        if len(detections) == 0:
            return out
        x, heights, valid = self._crops(frame, table, detections, heights)
        p = self.probabilities(x) if turns else self.read_once(x)
        pyramid_p = p[:, :BACKGROUND].sum(axis=1)
        asks_pyramid = [bool(detections.is_pyramid[k]) or pyramid_p[k] >= PIECE_P
                        or stands_tall(heights, valid, detections.xyxy[k]) for k in range(len(detections))]
        rows = np.nonzero(asks_pyramid)[0]  # only a pyramid's crop has an orientation worth reading
        po = dict(zip(rows, self.orientations(x[rows]))) if self.orient_net is not None and len(rows) else {}
        for k in range(len(detections)):
            q = p[k].copy()
            if detections.is_pyramid[k]:
                q[FIRST_STONE:] = 0.0
            elif asks_pyramid[k]:
                q[BACKGROUND:] = 0.0  # a pyramid stands there: the question is only which
            else:
                q[:BACKGROUND] = 0.0  # the detector's stone stands; which stone, or nothing
            q /= max(float(q.sum()), 1e-9)
            order = np.argsort(-q)
            a, b = int(order[0]), int(order[1])
            o = po.get(k)
            out[k] = Verdict(a, float(q[a]), b, float(q[b]), None if o is None else tuple(float(v) for v in o),
                             float(pyramid_p[k]), not bool(detections.is_pyramid[k]))
        return out

    def read_box(self, frame, table, box: np.ndarray, heights=None) -> Verdict | None:
        """The verdict on one box that no detection drew (a piece found in depth by the towers
        or pairs stage)."""
        probe = Detections(np.asarray(box, np.float32)[None], np.array([0]), np.ones(1, np.float32))
        return self.verdicts(frame, table, probe, heights)[0]

    def refine(self, frame, table, detections: Detections, heights=None) -> tuple[Detections, list[Verdict | None]]:
        """Pyramid detections get the classifier's colour x size; confident "not a piece" ones go;
        a "stone" becomes the pyramid it reads when it stands too tall for a stone or the
        pyramids' share is at least PIECE_P, and else takes the stone colour it reads."""
        refined, verdicts, _ = self.refine_keeping_dropped(frame, table, detections, heights)
        return refined, verdicts

    def refine_keeping_dropped(self, frame, table, detections: Detections, heights=None
                               ) -> tuple[Detections, list[Verdict | None], Detections]:
        """`refine`, and the pyramid boxes it dropped as "not a piece", each with the pyramids'
        share of its reading as its confidence: where that share is not small, the box may hold a
        piece after all (vision.doubts.box_doubts)."""
        v = self.verdicts(frame, table, detections, heights, turns=True)
        cls = detections.class_id.copy()
        conf = detections.confidence.copy()
        keep = np.ones(len(detections), bool)
        for k, vk in enumerate(v):
            if vk is None:
                continue
            if not detections.is_pyramid[k]:  # a "stone": the pyramid or the stone read (never dropped)
                if vk.class_id != BACKGROUND:
                    cls[k] = detector_class(vk.class_id)
                continue
            if vk.class_id == BACKGROUND:
                if vk.confidence >= self.background_p:
                    keep[k] = False
                    continue
                cls[k], p = vk.runner_up, vk.runner_up_p  # unsure it is nothing: its best pyramid class
            else:
                cls[k], p = vk.class_id, vk.confidence
            conf[k] = min(float(conf[k]), p) if p < 0.5 else float(conf[k])
        orient = None
        if self.orient_net is not None:  # stones were not read for it: even odds, no prior
            orient = np.array([vk.orientation if vk is not None and vk.orientation is not None
                               else (1 / N_ORIENTATIONS,) * N_ORIENTATIONS for vk in v], np.float32)
        refined = replace(detections, class_id=cls, confidence=conf, orientation=orient)[keep]
        dropped = replace(detections, confidence=np.array([0.0 if vk is None else vk.pyramid_p for vk in v],
                                                          np.float32))[~keep]
        return refined, [vk for vk, kk in zip(v, keep) if kk], dropped

    def read_faint_stones(self, frame, table, faint: Detections, heights=None) -> Detections:
        """The stone boxes among the detector's faint ones, each with the pyramids' share of the
        classifier's reading as its confidence: a small piece lying flat on a table near its own
        colour may draw only a faint stone's box, and the crop still reads it as a pyramid
        (vision.doubts.box_doubts). Only shares are read (no orientation): a handful a frame."""
        stones = faint[~faint.is_pyramid]
        if len(stones) == 0:
            return stones
        share = self.probabilities(self._crops(frame, table, stones, heights)[0])[:, :BACKGROUND].sum(axis=1)
        return replace(stones, confidence=np.asarray(share, np.float32))

    @staticmethod
    def _crops(frame, table, detections: Detections, heights=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The classifier's crops of `detections`, and the frame's table heights and validity
        they were cut from (`heights`: the frame's `height_map` when the caller has it already)."""
        from calibration.plane import height_map

        pts, valid = heights if heights is not None else height_map(frame, table)
        z = pts[..., 2]
        return crops(frame.color, frame.depth_mm, z, valid, frame.intrinsics.fx, detections.xyxy), z, valid


def widened(state: dict, n_out: int = N_CLASSES) -> dict:
    """A classifier state dict with `n_out` outputs from one with fewer (the 16-output classifier
    from before stones were learnt): the new outputs start as copies of "not a piece", the nearest
    thing they had been read as, so training goes on from what the old net knew."""
    import torch

    key = next(k for k in reversed(list(state)) if k.endswith(".weight") and state[k].ndim == 2)
    bias = key[: -len("weight")] + "bias"
    w, b = state[key], state[bias]
    extra = n_out - w.shape[0]
    if extra <= 0:
        return state
    out = dict(state)
    out[key] = torch.cat([w, w[BACKGROUND:BACKGROUND + 1].repeat(extra, 1)])
    out[bias] = torch.cat([b, b[BACKGROUND:BACKGROUND + 1].repeat(extra)])
    return out


def load_start(weights: Path, n_out: int, what: str, how: str) -> dict:
    """The state dict training goes on from: the saved net's, widened when it is a classifier
    saved with fewer outputs (`widened`)."""
    import torch

    try:
        return _load_net(weights, n_out, what, how).state_dict()
    except ClassifierError as first:
        if n_out != N_CLASSES:
            raise
        try:
            net = _net(n_out)  # the older classifiers were all of the first width
            net.load_state_dict(widened(torch.load(weights, map_location="cpu", weights_only=True)["state_dict"], n_out))
        except Exception:  # noqa: BLE001 - not an older classifier either: the first error says why
            raise first from None
        return net.state_dict()


def _load_net(weights: Path, n_out: int, what: str, how: str):
    """A saved net in eval mode, or a one-line ClassifierError naming the file."""
    return load_net(weights, lambda state: _net(n_out, channels_of(state)), f"no {what} weights (train them with `{how}`)", ClassifierError)


@contextmanager
def all_cores():
    """Torch on every core for the block. Why: running the detector leaves torch on
    cpu_count - 1 threads (Ultralytics' setting), one on a 2-core machine, where training then
    ran 1.5-1.8 times slower (an epoch of 2,560 crops: 9.4-11.5 s against 6.3-6.5 s). Not used for reading a frame's crops: there `zendo bench pipeline` measured
    it 10 ms faster and `zendo eval` 5-8 ms slower (interleaved runs), so the frame keeps the
    detector's setting."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def load_classifier(weights: str | Path | None = None, orientation: str | Path | None = None,
                    colors: str | Path | None = None, int8: bool = True) -> PieceClassifier | None:
    """The committed classifier when it is there (the pipeline runs without it, on the detector's
    classes alone, when it is not), with the committed orientation net and colour model when
    those are there."""
    path = Path(weights) if weights else DEFAULT_CLASSIFIER
    if weights is None and not path.is_file():
        return None
    if orientation is None and DEFAULT_ORIENTATION.is_file():
        orientation = DEFAULT_ORIENTATION
    if colors is None and DEFAULT_COLOR_MODEL.is_file():
        colors = DEFAULT_COLOR_MODEL
    return PieceClassifier(path, orientation=orientation, colors=colors, int8=int8)


# --------------------------------------------------------------------------- training data


def folder_examples(folder: Path, detector, rng: np.random.Generator, jitter: int = 2
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Crops and labels from one render folder with truth.json: the detector's boxes, pyramids and
    stones (labelled by the truth box they overlap, or BACKGROUND), and each visible truth box with
    a few jittered copies (boxes a detector might draw). Labels: the classifier output, and the
    orientation index of vision.pose.ORIENTATIONS as the rulebook reads the truth piece (-1 for
    BACKGROUND and stones)."""
    import torch
    from torchvision.ops import box_iou

    from calibration.plane import fit_table, height_map
    from zendo.relations import RelationsConfig, orientation
    from zendo.scene import scene_from_dict

    from .frames import RenderFolderSource
    from .pose import ORIENTATIONS

    frame = next(iter(RenderFolderSource(folder).frames()))
    truth = json.loads((folder / "truth.json").read_text())
    pieces = {p.id: p for p in scene_from_dict(truth["scene"], check_geometry=False).pieces}
    objs = [o for o in truth["objects"] if o["visible_px"] >= 12]
    tboxes = np.array([o["box"] for o in objs], np.float32).reshape(-1, 4)
    tcls = np.array([_truth_output(o) for o in objs])
    rel = RelationsConfig()
    tori = [ORIENTATIONS.index(orientation(pieces[o["id"]], rel).value) if o["kind"] == "piece" else -1 for o in objs]
    table, _ = fit_table(frame)
    pts, valid = height_map(frame, table)
    boxes, labels, orients = [], [], []
    det = detector(frame.color)
    if len(det):
        iou = box_iou(torch.from_numpy(det.xyxy), torch.from_numpy(tboxes)).numpy()
        for k in range(len(det)):
            j = int(np.argmax(iou[k])) if iou.shape[1] else -1
            best = float(iou[k, j]) if j >= 0 else 0.0
            if best >= 0.5 and tcls[j] >= 0:
                boxes.append(det.xyxy[k]); labels.append(int(tcls[j])); orients.append(tori[j])
            elif best < 0.2:
                boxes.append(det.xyxy[k]); labels.append(BACKGROUND); orients.append(-1)
    for j in range(len(tboxes)):
        if tcls[j] < 0:
            continue
        w = max(tboxes[j, 2] - tboxes[j, 0], 2.0)
        h = max(tboxes[j, 3] - tboxes[j, 1], 2.0)
        for _ in range(jitter):
            d = rng.normal(0, 0.08, 4) * np.array([w, h, w, h])
            boxes.append(tboxes[j] + d); labels.append(int(tcls[j])); orients.append(tori[j])
    if not boxes:
        return np.zeros((0, CHANNELS, CROP_PX, CROP_PX), np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
    x = crops(frame.color, frame.depth_mm, pts[..., 2], valid, frame.intrinsics.fx, np.array(boxes, np.float32))
    return x, np.array(labels, np.int64), np.array(orients, np.int64)


def _truth_output(obj: dict) -> int:
    """The classifier output a truth object should be read as; -1 for one it has no class for (a
    Xeno colour)."""
    name = f"stone_{obj['color']}" if obj["kind"] == "stone" else f"{obj['color']}_{obj['size']}"
    return classifier_output(CLASS_ID[name]) if name in CLASS_ID else -1


def build_examples(folders: Iterable[Path], detector, seed: int = 0, progress: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every folder's crops with their class and orientation labels (folder_examples)."""
    rng = np.random.default_rng(seed)
    folders = list(folders)
    if progress:
        from tqdm import tqdm

        folders = tqdm(folders, desc="crops", leave=False)
    xs, ys, os_ = [], [], []
    for f in folders:
        x, y, o = folder_examples(Path(f), detector, rng)
        xs.append(x); ys.append(y); os_.append(o)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(os_)


def render_folders(root: str | Path) -> list[Path]:
    """Every render folder with truth under root (any depth), in name order."""
    return sorted(p.parent for p in Path(root).rglob("truth.json"))


# --------------------------------------------------------------------------- training


def _augment(x, rng_t, turns: bool = True):
    """Flips and quarter turns (a piece looks the same turned, the crop is square) and a colour
    jitter of the whole crop (lighting, white balance). Without `turns` only mirror flips: which
    way is up in the image is what tells an upright piece from one lying down. The draws come from
    `rng_t` on the CPU whatever device the crops are on, so a CPU run is the same as before
    training could run on a GPU."""
    import torch

    if turns:
        k = int(torch.randint(0, 4, (1,), generator=rng_t))
        x = torch.rot90(x, k, dims=(2, 3))
    if bool(torch.randint(0, 2, (1,), generator=rng_t)):
        x = torch.flip(x, dims=(3,))
    gain = 1.0 + 0.15 * (torch.rand((x.shape[0], 3, 1, 1), generator=rng_t) - 0.5) * 2
    x[:, :3] = (x[:, :3] * gain.to(x.device)).clamp(0, 1)
    return x


def _scaled(t):
    """A uint8 crop tensor, on any device, as the nets read it (`to_tensor` for numpy crops)."""
    t = t.float()
    t[:, :3] /= 255.0
    t[:, 3] *= HEIGHT_STEP_MM / 50.0
    t[:, 4:] /= 255.0
    return t


def train(x: np.ndarray, y: np.ndarray, *, epochs: int = 12, batch: int = 128, lr: float = 3e-3, seed: int = 0,
          val: tuple[np.ndarray, np.ndarray] | None = None, progress: bool = True, n_out: int = N_CLASSES,
          turns: bool = True, start: dict | None = None, device: str = "cpu", minutes: float | None = None,
          channels: Sequence[int] | None = None) -> tuple[dict, list[dict]]:
    """Train from scratch, or go on from `start` (a state dict); returns the state dict of the
    final epoch and a per-epoch history. `n_out`, `turns`: the orientation net has three outputs
    and learns without quarter turns. `device`: where the crops and the net live (a GPU holds
    300,000 crops as uint8 in 4 GB and reads them in bfloat16). `minutes`: as many epochs as fit
    in that time, measured on the device before the schedule is set (it replaces `epochs`).
    `channels`: the net's widths from scratch (default: WIDE_CHANNELS for the classifier,
    NET_CHANNELS for the orientation net); going on from `start`, its own."""
    if start is not None:
        channels = channels_of(start)
    elif channels is None:
        channels = WIDE_CHANNELS if n_out == N_CLASSES else NET_CHANNELS
    with all_cores():
        return _train(x, y, epochs, batch, lr, seed, val, progress, n_out, turns, start, device, minutes, channels)


def _on(device: str, net):
    """The net on the device; channels-last where that is a GPU (cuDNN's faster layout)."""
    import torch

    net = net.to(device)
    return net.to(memory_format=torch.channels_last) if device != "cpu" else net


def _step(net, opt, xb, yb, device: str, sched=None):
    """One optimiser step; bfloat16 autocast on a GPU. Returns the loss on the device (no sync)."""
    import torch
    import torch.nn.functional as F

    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=device != "cpu"):
        loss = F.cross_entropy(net(xb), yb, label_smoothing=0.05)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    return loss.detach()


def epochs_within(minutes: float, n: int, batch: int, n_out: int, turns: bool, X, Y, device: str,
                  channels: Sequence[int] = NET_CHANNELS) -> int:
    """How many epochs of n crops fit in `minutes` on this device: 20 steps of a throwaway net
    timed after 5 to warm up, with a tenth spare for the validation after each epoch."""
    import torch

    probe = _on(device, _net(n_out, channels))
    opt = torch.optim.AdamW(probe.parameters(), lr=1e-6)
    g = torch.Generator().manual_seed(1)
    t0 = 0.0
    for i in range(25):
        if i == 5:
            _sync(device)
            t0 = time.perf_counter()
        idx = torch.randint(0, len(Y), (batch,), generator=g).to(device)
        _step(probe, opt, _augment(_scaled(X[idx]), g, turns), Y[idx], device)
    _sync(device)
    per_epoch = (time.perf_counter() - t0) / 20 * int(np.ceil(n / batch)) * 1.1
    return max(1, int(60 * minutes / max(per_epoch, 1e-9)))


def _sync(device: str) -> None:
    import torch

    if device != "cpu":
        torch.cuda.synchronize(device)


def _train(x, y, epochs, batch, lr, seed, val, progress, n_out, turns, start, device, minutes,
           channels: Sequence[int]) -> tuple[dict, list[dict]]:
    import torch

    X = torch.from_numpy(np.ascontiguousarray(x)).to(device)  # uint8: on the CPU, no copy
    Y = torch.from_numpy(np.asarray(y, np.int64)).to(device)
    if minutes is not None:  # before the seed: the probe's draws leave the run as --epochs would make it
        epochs = epochs_within(minutes, len(x), batch, n_out, turns, X, Y, device, channels)
        log.info("%d epochs fit in %.1f minutes on %s", epochs, minutes, device)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    net = _net(n_out, channels)
    if start is not None:
        net.load_state_dict(start)
    net = _on(device, net)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    steps = epochs * int(np.ceil(len(x) / batch))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(steps, 1))
    history = []
    for ep in range(epochs):
        net.train()
        perm = torch.randperm(len(x), generator=g).to(device)
        tot = torch.zeros((), device=device)
        it = range(0, len(x), batch)
        if progress:
            from tqdm import tqdm

            it = tqdm(it, desc=f"epoch {ep + 1}/{epochs}", leave=False)
        for i in it:
            idx = perm[i:i + batch]
            tot += _step(net, opt, _augment(_scaled(X[idx]), g, turns), Y[idx], device, sched) * len(idx)
        row = {"epoch": ep + 1, "loss": round(float(tot) / max(len(x), 1), 4)}
        if val is not None:
            row["val_accuracy_pct"] = round(100 * accuracy(net, *val), 2)
        history.append(row)
        log.info("classifier %s", row)
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    return state, history


def accuracy(net, x: np.ndarray, y: np.ndarray, batch: int = 512) -> float:
    import torch

    net.eval()
    device = next(net.parameters()).device
    right = 0
    with torch.inference_mode():
        for i in range(0, len(x), batch):
            xb = _scaled(torch.from_numpy(np.ascontiguousarray(x[i:i + batch])).to(device))
            right += int((net(xb).argmax(1).cpu().numpy() == y[i:i + batch]).sum())
    return right / max(len(x), 1)


def score(clf: PieceClassifier, x: np.ndarray, y: np.ndarray, sure: float = 0.9) -> dict:
    """The classifier's own figures on labelled crops: accuracy on pyramids (colour x size, colour,
    size), on false detections, and how far its confidence can be trusted (accuracy above `sure`)."""
    p = clf.probabilities(x)
    pred = p.argmax(1)
    top = p.max(1)
    pyr = y < BACKGROUND
    bg = y == BACKGROUND
    stone = y >= FIRST_STONE
    names = PYRAMID_CLASSES + ("background",) + STONE_CLASSES
    colour = lambda c: np.array([names[i].split("_")[0] for i in c])  # noqa: E731
    size = lambda c: np.array([names[i].split("_")[-1] for i in c])  # noqa: E731
    return {
        "crops": int(len(y)), "pyramid_crops": int(pyr.sum()), "background_crops": int(bg.sum()),
        "stone_crops": int(stone.sum()),
        "color_size_accuracy_pct": pct(pred[pyr] == y[pyr]),
        "color_accuracy_pct": pct(colour(pred[pyr]) == colour(y[pyr])),
        "size_accuracy_pct": pct(size(pred[pyr]) == size(y[pyr])),
        "background_recall_pct": pct(pred[bg] == BACKGROUND),
        "pyramids_called_background_pct": pct(pred[pyr] == BACKGROUND),
        "stone_recall_pct": pct(pred[stone] >= FIRST_STONE),
        "stone_color_accuracy_pct": pct(pred[stone] == y[stone]),
        "pyramids_called_stone_pct": pct(pred[pyr] >= FIRST_STONE),
        f"share_above_{sure}_pct": pct(top >= sure),
        f"accuracy_above_{sure}_pct": pct((pred == y)[top >= sure]),
        "top_confusions": confusions(y[~bg], pred[~bg], names, top=8),
    }


def score_orientation(clf: PieceClassifier, x: np.ndarray, o: np.ndarray, sure: float = 0.9) -> dict:
    """The orientation net's own figures on pyramid crops: accuracy overall and per true
    orientation, its confusions, and how far its confidence can be trusted."""
    from .pose import ORIENTATIONS

    p = clf.orientations(x)
    pred = p.argmax(1)
    top = p.max(1)
    return {
        "crops": int(len(o)), "accuracy_pct": pct(pred == o),
        "accuracy_by_truth_pct": {name: pct(pred[o == i] == i) for i, name in enumerate(ORIENTATIONS)},
        f"share_above_{sure}_pct": pct(top >= sure),
        f"accuracy_above_{sure}_pct": pct((pred == o)[top >= sure]),
        "confusions": confusions(o, pred, ORIENTATIONS),
    }
