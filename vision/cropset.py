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

import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .classify import CHANNELS, CROP_PX

log = logging.getLogger(__name__)

ONE_THREAD = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


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
        return CropSet(*(np.concatenate([getattr(s, k) for s in sets]) for k in ("x", "y", "o", "seeds")))


def empty() -> CropSet:
    return CropSet(np.zeros((0, CHANNELS, CROP_PX, CROP_PX), np.uint8), np.zeros(0, np.int64),
                   np.zeros(0, np.int64), np.zeros(0, np.int64))


def cut_table(seed: int, detector, scratch: Path) -> CropSet:
    """One freshly rendered table's crops (vision.classify.folder_examples), its folder deleted."""
    from .classify import folder_examples
    from .eval import write_render_folder
    from .trainset import render_example

    scene, _, render = render_example(seed)
    folder = write_render_folder(scene, render, scratch / f"{seed:07d}")
    try:
        x, y, o = folder_examples(folder, detector, np.random.default_rng([seed, 1]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return CropSet(x, y, o, np.full(len(y), seed, np.int64))


def cut_share(worker: int, workers: int, seed: int, tables: int, device: str | None, det_conf: float,
              deadline: float | None) -> CropSet:
    """The tables seed + worker, seed + worker + workers, ... (of `tables`), until the deadline
    (a time.time()) if there is one. Runs in a worker process with one thread for each library:
    the processes are the parallelism."""
    import cv2
    import torch

    from .detect import Detector

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    detector = Detector(conf=det_conf, device=device)
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    parts = []
    with tempfile.TemporaryDirectory(prefix="zendo-crops-", dir=base) as scratch:
        for k in range(worker, tables, workers):
            if deadline is not None and time.time() >= deadline:
                break
            parts.append(cut_table(seed + k, detector, Path(scratch)))
    return CropSet.joined(parts) if parts else empty()


def _one_thread() -> None:
    for k in ONE_THREAD:
        os.environ[k] = "1"


def _share(args) -> CropSet:
    return cut_share(*args)


def cut(seed: int, tables: int, *, workers: int = 1, device: str | None = None, det_conf: float = 0.05,
        minutes: float | None = None) -> CropSet:
    """The crops of tables seed .. seed + tables - 1, cut by `workers` processes; with `minutes`,
    each worker stops taking tables when the time is up (the seeds cut are in the set)."""
    deadline = time.time() + 60 * minutes if minutes else None
    jobs = [(w, workers, seed, tables, device, det_conf, deadline) for w in range(workers)]
    if workers == 1:
        parts = [_share(jobs[0])]
    else:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(workers, initializer=_one_thread) as pool:
            parts = pool.map(_share, jobs)
    out = CropSet.joined(parts)
    order = np.argsort(out.seeds, kind="stable")  # table order, whoever cut them
    return CropSet(out.x[order], out.y[order], out.o[order], out.seeds[order])
