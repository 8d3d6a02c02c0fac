"""The colour of a handful of pixels (a tower's lower band), read against the table around them.

Why: the crop classifier reads a piece from a 96 mm window, so where one piece shows only as a
band a few millimetres high under another (a tower of two pieces of one size), the window is
the upper piece and so is the reading: on the tuning set 10 of 12 lower pieces the towers stage
added got the upper one's colour. Yet the colour itself is plain in the band's own pixels. A
tiny net reads a pixel set's median and quartiles of R, G, B beside the table's median colour
(the table tells it the light and the white balance, which the renderer randomises); trained on
the truth masks of the classifier's render folders, it reads the pixels of held-out pieces
99.9 % right, bands under 6 mm as well (`zendo eval-classifier`, its "colour" block).

What it is not: a way to find pieces. Which pixels are the piece's is the caller's question
(the towers stage answers it in 3-D).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zendo.pieces import RAINBOW_COLORS

from .detect import MODELS_DIR
from .nets import confusions, load_net, pct, softmax

DEFAULT_COLOR_MODEL = MODELS_DIR / "zendo-colour.pt"
N_FEATURES = 12
TABLE_MM = 1.5  # a point this close to the table plane is the table
BAND_TOP_MM = 6.0  # training: a piece's pixels this low are a band like a tower's
MIN_PX = 5  # fewer pixels than this are not read
TABLE_RING_PX = 12  # the table round a pixel set, read to tell its colour from the table's
TABLE_READ_P = 0.5  # ... which reads as the set's colour at least this surely: the colour may be the table's


class ColorModelError(RuntimeError):
    """The colour model cannot run (missing or foreign weights); the message is one line."""


def _mlp():
    from torch import nn

    return nn.Sequential(nn.Linear(N_FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, len(RAINBOW_COLORS)))


def table_color(rgb: np.ndarray, heights: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The table's median colour (0-1 RGB) over every fourth pixel that lies on the plane."""
    sub = (slice(None, None, 2), slice(None, None, 2))
    on = valid[sub] & (np.abs(heights[sub]) < TABLE_MM)
    if not on.any():
        return np.full(3, 0.5, np.float32)
    return np.median(rgb[sub][on].astype(np.float32) / 255, axis=0)


def features(pixels: np.ndarray, table: np.ndarray) -> np.ndarray:
    """(N, 3) uint8 RGB pixels and the table's colour -> the net's input."""
    px = pixels.astype(np.float32) / 255
    q25, q50, q75 = np.percentile(px, [25, 50, 75], axis=0)
    return np.concatenate([q50, q25, q75, np.asarray(table, np.float32)]).astype(np.float32)


@dataclass(frozen=True)
class ColorReading:
    """What a pixel set reads as, with the runner-up (a class doubt where it is within reach)."""

    color: str
    p: float
    runner_up: str
    runner_up_p: float


class ColorReader:
    """Trained weights -> (colour, probability) of a pixel set."""

    def __init__(self, weights: str | Path = DEFAULT_COLOR_MODEL):
        weights = Path(weights)
        self.net = load_net(weights, lambda state: _mlp(), "no colour model (train it with `zendo train-classifier --task colour`)",
                            ColorModelError)
        self.weights = weights

    def probabilities(self, f: np.ndarray) -> np.ndarray:
        return softmax(self.net, np.atleast_2d(f).astype(np.float32), len(RAINBOW_COLORS))

    def read(self, pixels: np.ndarray, table: np.ndarray) -> ColorReading | None:
        """The pixels' colour and the runner-up; None for fewer than MIN_PX pixels."""
        return self.read_many([pixels], table)[0]

    def read_many(self, pixel_sets: list[np.ndarray], table: np.ndarray) -> list[ColorReading | None]:
        """`read` for several pixel sets in one pass of the net (a frame's pieces: 0.1 ms a set
        less than one at a time)."""
        out: list[ColorReading | None] = [None] * len(pixel_sets)
        todo = [k for k, px in enumerate(pixel_sets) if len(px) >= MIN_PX]
        if not todo:
            return out
        probs = self.probabilities(np.stack([features(pixel_sets[k], table) for k in todo]))
        for k, p in zip(todo, probs):
            a, b = (int(i) for i in np.argsort(-p)[:2])
            out[k] = ColorReading(RAINBOW_COLORS[a], float(p[a]), RAINBOW_COLORS[b], float(p[b]))
        return out


class FrameColors:
    """The colour model on one frame: pixel sets (as image rows and columns) read against the
    frame's table colour, which is measured once, when first needed (2.8 ms: a frame where no
    stage reads a colour does not pay it)."""

    def __init__(self, reader: ColorReader | None, rgb: np.ndarray, heights: tuple[np.ndarray, np.ndarray]):
        self.reader = reader
        self.rgb = rgb
        self.heights = heights
        self._table: np.ndarray | None = None

    def read(self, rows: np.ndarray, cols: np.ndarray) -> ColorReading | None:
        """None without a colour model or for fewer than MIN_PX pixels."""
        return self.read_many([(rows, cols)])[0]

    def read_many(self, pixel_sets: list[tuple[np.ndarray, np.ndarray]]) -> list[ColorReading | None]:
        """`read` for each (rows, cols) set, in one pass of the net."""
        if self.reader is None or all(len(rows) < MIN_PX for rows, _ in pixel_sets):
            return [None] * len(pixel_sets)
        if self._table is None:
            table_pts, valid = self.heights
            self._table = table_color(self.rgb, table_pts[..., 2], valid)
        return self.reader.read_many([self.rgb[rows, cols] for rows, cols in pixel_sets], self._table)

    def like_table(self, reading: ColorReading, box: np.ndarray) -> bool:
        """Whether the table round `box` (grown by TABLE_RING_PX) reads as `reading`'s colour at
        least TABLE_READ_P surely. Why: the pixels at a piece's outline mix its colour with the
        table's and their depth with both, so on a green table a lying piece's outline read green
        0.94-1.0 (tuning table 980034: three green pieces added on it)."""
        table = self._table_pixels(box)
        near = self.read(*table) if table is not None else None
        return near is not None and near.p >= TABLE_READ_P and near.color == reading.color

    def _table_pixels(self, box: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The table's pixels (seen, within TABLE_MM of its plane) in `box` grown by TABLE_RING_PX."""
        table_pts, seen = self.heights
        h, w = seen.shape
        x0, y0 = (max(int(v) - TABLE_RING_PX, 0) for v in box[:2])
        x1, y1 = min(int(box[2]) + TABLE_RING_PX, w), min(int(box[3]) + TABLE_RING_PX, h)
        on = seen[y0:y1, x0:x1] & (np.abs(table_pts[y0:y1, x0:x1, 2]) < TABLE_MM)
        rows, cols = np.nonzero(on)
        return (rows + y0, cols + x0) if len(rows) else None


def load_color_reader(weights: str | Path | None = None) -> ColorReader | None:
    """The committed colour model when it is there (towers then read bands by the crop classifier
    alone, as before, when it is not)."""
    path = Path(weights) if weights else DEFAULT_COLOR_MODEL
    if weights is None and not path.is_file():
        return None
    return ColorReader(path)


# --------------------------------------------------------------------------- training data


SAMPLE_KINDS = ("whole", "fifth", "band")


def folder_samples(folder: Path, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features and colour labels from one render folder's truth mask: per visible piece its
    whole visible part, a random fifth of it (a partly hidden piece) and its pixels under
    BAND_TOP_MM (a tower's band). The table is found from the truth's camera pose, which is
    fine for labels; at run time it comes from calibration. Returns (features, colour labels,
    SAMPLE_KINDS index)."""
    import json

    import cv2

    from calibration.plane import TableCalibration, height_map

    from .frames import RenderFolderSource

    truth = json.loads((folder / "truth.json").read_text())
    frame = next(iter(RenderFolderSource(folder).frames()))
    mask = cv2.imread(str(folder / "mask.png"), cv2.IMREAD_UNCHANGED)
    pts, valid = height_map(frame, TableCalibration(tuple(map(tuple, truth["camera_to_table"])), 0.0, 1.0))
    rgb, heights = frame.color, pts[..., 2]
    table = table_color(rgb, heights, valid)
    xs, ys, kinds = [], [], []
    for o in truth["objects"]:
        if o["kind"] != "piece" or o["color"] not in RAINBOW_COLORS:
            continue
        mine = mask == o["mask_value"]
        label = RAINBOW_COLORS.index(o["color"])
        rows, cols = np.nonzero(mine)
        if len(rows) < MIN_PX:
            continue
        sets = [(0, rgb[rows, cols])]
        if len(rows) >= 2 * MIN_PX:
            pick = rng.choice(len(rows), max(MIN_PX, len(rows) // 5), replace=False)
            sets.append((1, rgb[rows[pick], cols[pick]]))
        band = mine & valid & (heights < BAND_TOP_MM)
        if band.sum() >= MIN_PX:
            sets.append((2, rgb[band]))
        for kind, s in sets:
            xs.append(features(s, table))
            ys.append(label)
            kinds.append(kind)
    return np.array(xs, np.float32).reshape(-1, N_FEATURES), np.array(ys, np.int64), np.array(kinds, np.int64)


def build_samples(folders: Iterable[Path], seed: int = 0, progress: bool = True
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from tqdm import tqdm

    rng = np.random.default_rng(seed)
    parts = [folder_samples(f, rng) for f in tqdm(list(folders), desc="colour samples", disable=not progress, leave=False)]
    if not parts:
        return np.zeros((0, N_FEATURES), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


# --------------------------------------------------------------------------- training


def train(x: np.ndarray, y: np.ndarray, *, epochs: int = 60, batch: int = 256, lr: float = 3e-3, seed: int = 0
          ) -> tuple[dict, list[dict]]:
    """Train from scratch (seconds on a CPU); the final epoch's state dict and a loss history."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    net = _mlp()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    history = []
    for ep in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        tot = 0.0
        for i in range(0, len(X), batch):
            b = perm[i:i + batch]
            loss = F.cross_entropy(net(X[b]), Y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(b)
        history.append({"epoch": ep + 1, "loss": round(tot / max(len(X), 1), 4)})
    return net.state_dict(), history


def score(reader: ColorReader, x: np.ndarray, y: np.ndarray, kinds: np.ndarray) -> dict:
    """Accuracy (overall and per SAMPLE_KINDS) and the confusions of held-out samples."""
    if len(x) == 0:
        return {"samples": 0}
    pred = reader.probabilities(x).argmax(1)
    by_kind = {name: pct(pred[kinds == k] == y[kinds == k]) for k, name in enumerate(SAMPLE_KINDS) if (kinds == k).any()}
    return {"samples": len(x), "accuracy_pct": pct(pred == y), "accuracy_by_kind_pct": by_kind,
            "confusions": confusions(y, pred, RAINBOW_COLORS)}
