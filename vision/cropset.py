"""The crop nets' training data cut straight from freshly rendered tables, in worker processes.

Why: the classifier and the orientation net were under-fitted on the 2,400 render folders the
2-core CPU could make and hold (training accuracy about level with validation), and more tables
were the lever (session 53: 5,256 more took held-out crops' colour x size from 97.0 to 97.2-97.6 %).
Rendering a table and cutting its crops is CPU work, about 0.65 s a table on one core, so it is
spread over processes; render folders are written to a scratch folder and deleted once cut, so a
set of 300,000 crops takes 4 GB in one file instead of 5,000 folders of PNGs.

A crop set is a function of its seeds: every table is rendered from its own seed and its jittered
boxes are drawn from a generator seeded by that seed, whichever worker cut it.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .classify import CHANNELS, CROP_PX


class CropSetError(RuntimeError):
    """A crop set that cannot be read or made; the message is one line."""


@dataclass(frozen=True)
class CropSet:
    """Crops (N, CHANNELS, CROP_PX, CROP_PX) uint8 with the classifier output each shows, the
    orientation index as the rulebook reads its piece (-1 for "not a piece" and stones), and the
    seeds of the tables they were cut from."""

    x: np.ndarray
    y: np.ndarray
    o: np.ndarray
    seeds: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    @property
    def tables(self) -> int:
        """How many tables the crops came from (a table with no crops is not counted)."""
        return len(np.unique(self.seeds))

    def for_task(self, task: str) -> tuple[np.ndarray, np.ndarray]:
        """(crops, labels) one net learns from: the orientation net from pyramid crops only."""
        if task == "class":
            return self.x, self.y
        keep = self.o >= 0
        return self.x[keep], self.o[keep]

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:  # np.savez would append .npz to a name without it
            np.savez(f, x=self.x, y=self.y, o=self.o, seeds=self.seeds)
        return path

    @staticmethod
    def load(path: str | Path) -> "CropSet":
        path = Path(path)
        try:
            with np.load(path) as d:
                cs = CropSet(d["x"], d["y"], d["o"], d["seeds"])
        except FileNotFoundError:
            raise CropSetError(f"{path}: no such crop set (make one with `zendo cut-crops`)") from None
        except Exception as exc:  # noqa: BLE001 - a truncated or foreign file
            raise CropSetError(f"{path}: not a crop set ({exc.__class__.__name__})") from None
        n = len(cs.y)
        if cs.x.shape[1:] != (CHANNELS, CROP_PX, CROP_PX) or cs.x.dtype != np.uint8 or len(cs.x) != n or len(cs.o) != n:
            raise CropSetError(f"{path}: not a crop set (crops {cs.x.shape} {cs.x.dtype}, {n} labels)")
        return cs

    @staticmethod
    def joined(sets: list["CropSet"]) -> "CropSet":
        """The sets one after another (none: an empty set)."""
        if not sets:
            return CropSet(np.zeros((0, CHANNELS, CROP_PX, CROP_PX), np.uint8), np.zeros(0, np.int64),
                           np.zeros(0, np.int64), np.zeros(0, np.int64))
        return CropSet(*(np.concatenate([getattr(s, k) for s in sets]) for k in ("x", "y", "o", "seeds")))


def cut_table(seed: int, detector) -> CropSet:
    """One freshly rendered table's crops (vision.classify.folder_examples), cut from a render
    folder that lives only while they are cut (in memory where /dev/shm is): the very crops
    `zendo train-classifier --data` cuts from `zendo eval-set`'s folder of that seed."""
    from .classify import folder_examples
    from .eval import write_render_folder
    from .trainset import render_example

    scene, _, render = render_example(seed)
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="zendo-crops-", dir=base) as scratch:
        folder = write_render_folder(scene, render, Path(scratch) / f"{seed:07d}")
        x, y, o = folder_examples(folder, detector, np.random.default_rng([seed, 1]))
    return CropSet(x, y, o, np.full(len(y), seed, np.int64))


def cut_table_task(pipeline, seed: int) -> CropSet:
    """One table cut with a pipeline's detector: a module-level task, so that the worker
    processes of vision.parallel can run it."""
    return cut_table(seed, pipeline.detector)


def cut(seed: int, tables: int, *, workers: int = 1, device: str | None = None, det_conf: float = 0.05,
        minutes: float | None = None) -> CropSet:
    """The crops of tables seed .. seed + tables - 1 in table order, cut by `workers` processes
    (vision.parallel.run_each: each with its own detector and its share of the cores); with
    `minutes`, no table is begun once the time is up (the seeds cut are in the set)."""
    from .detect import Detector
    from .parallel import run_each
    from .pipeline import Pipeline

    detector = Detector(conf=det_conf, device=device)
    deadline = time.time() + 60 * minutes if minutes else None

    def seeds():
        for s in range(seed, seed + tables):
            if deadline is not None and time.time() >= deadline:
                return
            yield s

    local = lambda: Pipeline(detector, classifier=None)  # noqa: E731 - the one-process reader
    return CropSet.joined(list(run_each(cut_table_task, seeds(), workers, detector, None, det_conf, local)))
