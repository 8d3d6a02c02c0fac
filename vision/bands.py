"""The band model: the colour of a tower's lower piece from the pixels the towers stage picks for it.

Why a second colour net: the colour model (vision/colors.py) learnt from the truth masks, where a
band's pixels are all the piece's own, and reads those 99.9 % right. The towers stage cannot take
pixels from a mask: it takes them from depth (the points under the upper piece's rim), and at the
band's 1-2 pixels that mixes in the upper piece, the table and its shadow. On the tuning tables
(seeds 900000-, 920000-, 930000-, 980000-, 990000-) 62 of the stage's 360 band readings named a
colour the truth has not there, most of them black (a yellow band under a black medium, 900011,
read black 0.997 on 18 pixels of which 3 were the band's); the band's own mask pixels read right.
So this net learns from the pixel sets the stage itself picks, in render folders of seeds no
evaluation uses, labelled with the truth colour of the piece the read stands for, and it is told
the colour of the piece beside the band (the one over or under it), whose pixels are most of what
is mixed in.

What it is not: a way to find which pixels are the band's (the towers stage's 3-D question), nor
used outside the towers stage (the nested and lying stages read whole faces with the colour model).
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zendo.pieces import RAINBOW_COLORS

from .colors import MIN_PX, ColorModelError, ColorReading
from .detect import MODELS_DIR
from .nets import load_net, pct, softmax

DEFAULT_BAND_MODEL = MODELS_DIR / "zendo-band.pt"
QUANTILES = (10, 25, 50, 75, 90)
N_FEATURES = 3 * len(QUANTILES) + 3 + 3  # the band's quantiles, the table's colour, the piece beside it
BAND_MODEL_P = 0.5  # the towers stage takes the band model's reading this sure, under a raised piece too
# (the colour model's 0.8 there was set for a model sure of nearly everything it reads)
LABEL_MM = 8.0  # a read stands for the truth piece whose origin is this near the read piece's (training)
STACKED_MM = 3.0  # training reads only tables where two truth pieces stand this near one axis (x, y)


def _mlp():
    from torch import nn

    return nn.Sequential(nn.Linear(N_FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, len(RAINBOW_COLORS)))


def band_features(pixels: np.ndarray, beside: np.ndarray, table: np.ndarray) -> np.ndarray:
    """(N, 3) uint8 band pixels, (M, 3) uint8 pixels of the piece beside it and the table's 0-1
    colour -> the net's input. Where the piece beside shows under MIN_PX pixels its colour is
    taken to be the table's (nothing but the table is mixed in then)."""
    px = pixels.astype(np.float32) / 255
    q = np.percentile(px, QUANTILES, axis=0).ravel()
    table = np.asarray(table, np.float32)
    near = np.median(beside.astype(np.float32) / 255, axis=0) if len(beside) >= MIN_PX else table
    return np.concatenate([q, table, near]).astype(np.float32)


class BandReader:
    """Trained weights -> the colour of a band read beside a piece."""

    def __init__(self, weights: str | Path = DEFAULT_BAND_MODEL):
        weights = Path(weights)
        self.net = load_net(weights, _mlp, "no band model (train it with `zendo train-classifier --task band`)",
                            ColorModelError)
        self.weights = weights

    def probabilities(self, f: np.ndarray) -> np.ndarray:
        return softmax(self.net, np.atleast_2d(f).astype(np.float32), len(RAINBOW_COLORS))

    def read(self, pixels: np.ndarray, beside: np.ndarray, table: np.ndarray) -> ColorReading | None:
        """The band's colour and the runner-up; None for fewer than MIN_PX pixels."""
        return self.read_features(band_features(pixels, beside, table)) if len(pixels) >= MIN_PX else None

    def read_features(self, f: np.ndarray) -> ColorReading:
        """`read` from `band_features` already worked out."""
        p = self.probabilities(f)[0]
        a, b = (int(i) for i in np.argsort(-p)[:2])
        return ColorReading(RAINBOW_COLORS[a], float(p[a]), RAINBOW_COLORS[b], float(p[b]))


def load_band_reader(weights: str | Path | None = None) -> BandReader | None:
    """The committed band model when it is there (bands are read by the colour model when not)."""
    path = Path(weights) if weights else DEFAULT_BAND_MODEL
    if weights is None and not path.is_file():
        return None
    return BandReader(path)


# --------------------------------------------------------------------------- training data


@dataclass(frozen=True)
class BandRead:
    """One band the towers stage read: its features, where the piece it stands for is (the
    perceived table frame) and the least probability the stage takes a reading at."""

    features: np.ndarray
    origin: np.ndarray
    min_p: float


_RECORDING: contextvars.ContextVar[list[BandRead] | None] = contextvars.ContextVar("band_reads", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[BandRead]]:
    """Collect every band the towers stage reads inside the block (the training data)."""
    reads: list[BandRead] = []
    token = _RECORDING.set(reads)
    try:
        yield reads
    finally:
        _RECORDING.reset(token)


def is_recording() -> bool:
    return _RECORDING.get() is not None


def record(features: np.ndarray, origin: np.ndarray, min_p: float) -> None:
    reads = _RECORDING.get()
    if reads is not None:
        reads.append(BandRead(features, np.asarray(origin, float), float(min_p)))


def folder_samples(folder: Path, pipeline_for) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, colour labels, least probabilities) of the bands the pipeline reads on one
    render folder; each labelled with the colour of the truth piece nearest (LABEL_MM) the piece
    it stands for. Where the stage tried a lower piece that is not there, that nearest piece is
    the upper one, so the right reading is the upper one's colour (no piece added). Pieces that
    are not rainbow-coloured label nothing. Tables with no two pieces on one axis (STACKED_MM; 342
    of the 2,400 the committed model learnt from) are not run: the stage reads little there, only
    where it tries a piece that is not there, which the tables with towers hold too. `pipeline_for()`
    gives a fresh Pipeline."""
    import json

    from .eval import perceived_to_truth
    from .frames import RenderFolderSource

    truth = json.loads((folder / "truth.json").read_text())
    pieces = truth["scene"]["pieces"]
    if not pieces:
        return _empty()
    where = np.array([p["position"] for p in pieces], float)
    if not _stacked(where):
        return _empty()
    pipe = pipeline_for()
    with recording() as reads:
        pipe.process(next(iter(RenderFolderSource(folder).frames())))
    if not reads:
        return _empty()
    M = perceived_to_truth(pipe.table().matrix, np.asarray(truth["camera_to_table"]))
    xs, ys, ps = [], [], []
    for r in reads:
        d = np.linalg.norm(where - (M[:3, :3] @ r.origin + M[:3, 3]), axis=1)
        k = int(np.argmin(d))
        if d[k] <= LABEL_MM and pieces[k]["color"] in RAINBOW_COLORS:
            xs.append(r.features)
            ys.append(RAINBOW_COLORS.index(pieces[k]["color"]))
            ps.append(r.min_p)
    return (np.array(xs, np.float32).reshape(-1, N_FEATURES), np.array(ys, np.int64), np.array(ps, np.float32))


def _stacked(where: np.ndarray) -> bool:
    d = np.linalg.norm(where[:, None, :2] - where[None, :, :2], axis=2)
    return bool((d[~np.eye(len(where), dtype=bool)] < STACKED_MM).any())


def _empty():
    return np.zeros((0, N_FEATURES), np.float32), np.zeros(0, np.int64), np.zeros(0, np.float32)


def build_samples(folders: Iterable[Path], pipeline_for, progress: bool = True
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from tqdm import tqdm

    parts = [folder_samples(f, pipeline_for) for f in tqdm(list(folders), desc="band samples", disable=not progress,
                                                           leave=False)]
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return _empty()
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def score(reader: BandReader, x: np.ndarray, y: np.ndarray, min_p: np.ndarray) -> dict:
    """What the towers stage would do with each read: right colour, wrong colour, or no reading
    (under its least probability, at most BAND_MODEL_P), in percent, and the wrong readings'
    confusions."""
    from .nets import confusions

    if len(x) == 0:
        return {"samples": 0}
    P = reader.probabilities(x)
    pred, sure = P.argmax(1), P.max(1) >= np.minimum(min_p, BAND_MODEL_P)
    return {"samples": len(x), "right_pct": pct(sure & (pred == y)), "wrong_pct": pct(sure & (pred != y)),
            "unread_pct": pct(~sure), "confusions": confusions(y[sure], pred[sure], RAINBOW_COLORS)}
