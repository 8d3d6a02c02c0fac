"""A stream's frames read by several processes at once, then tracked in order (`perceive_stream`).

Why across frames and not within one: a frame's perception is a chain of stages that each need
the one before (detection, the crop nets, the fit, towers, nests, doubts …), mostly Python and
small numpy arrays that hold the interpreter's lock, so one frame does not spread over cores;
frames do. Each worker process holds a whole `Pipeline` (its own detector and crop nets, on the
GPU when there is one) and reads the frames handed to it alone; the caller's process keeps the
tracker, which needs the frames in their order and costs a couple of milliseconds. A frame
still takes one worker the whole chain, so its latency is the sequential pipeline's; what rises
is how many frames a second a camera's stream is read at (`python -m vision.bench --workers`).
The scenes are the sequential pipeline's, frame for frame: no stage keeps state between
frames, and the tracker sees the same frames in the same order.

Why "spawn": CUDA cannot be used in a forked child of a process that has touched it, and a
spawned worker starts from a clean interpreter on every platform.
"""
from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

class WorkerError(RuntimeError):
    """A perception worker could not start or stopped; the message is one line. `stops_perception`
    tells a feed (server.feed.FrameFeed) that perception stopped, not the camera."""

    stops_perception = True


@dataclass(frozen=True)
class FrameFailure:
    """A frame whose reading raised in its worker: which frame, and why in one line."""

    frame_index: int
    message: str


def one_line(exc: BaseException) -> str:
    """An exception as one line: its kind and its message's first line."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{exc.__class__.__name__}: {first}" if first else exc.__class__.__name__


@dataclass(frozen=True)
class WorkerSetup:
    """What each worker builds its pipeline from: plain values, since they cross to a fresh
    process. `classifier`: "default" (the committed crop nets), None (the detector's classes
    alone) or a weights path. `threads`: each worker's share of the cores for torch, ONNX
    Runtime and OpenCV, so that the workers do not all spin on every core at once."""

    weights: str
    device: str | None = None
    conf: float = 0.25
    classifier: str | None = "default"
    threads: int = 1


def default_threads(workers: int) -> int:
    """The cores each of `workers` workers gets (at least one)."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


_PIPELINE = None  # the worker process's own Pipeline (set by _start)
_FAILED: str | None = None  # why it could not be built, in one line


def _start(setup: WorkerSetup) -> None:
    """Build the worker's pipeline once, when its process starts. A failure is kept, not raised:
    raised here it would print a traceback and leave the caller a pool that says only that a
    process ended; kept, each task the worker is given answers with the reason in one line."""
    global _FAILED
    _end_with_parent()
    try:
        _build(setup)
    except Exception as exc:  # noqa: BLE001 - any failure must reach the caller, as one line
        _FAILED = one_line(exc)


def _end_with_parent() -> None:
    """End this worker once the process that started it is gone. Why: a `zendo eval` or dashboard
    stopped by a signal it does not catch (`kill`, `timeout`, a service manager's stop) leaves its
    workers to init, and each sat idle holding its pipeline (1.2 GB here) until the machine
    restarted. A spawned process holds its parent's sentinel (`multiprocessing.parent_process`,
    on every platform), which a daemon thread waits on."""
    import multiprocessing
    import threading

    parent = multiprocessing.parent_process()
    if parent is None:  # not a child of multiprocessing's (called in the caller's own process)
        return

    def watch() -> None:
        parent.join()
        os._exit(0)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _build(setup: WorkerSetup) -> None:
    """The worker's pipeline, its libraries held to its share of the cores. (OpenBLAS is not:
    it reads its thread count once, when numpy loads, which the worker has done by now; the
    pipeline's arrays are too small for it to start threads on.)"""
    global _PIPELINE
    import cv2
    import torch

    from . import nets
    from .classify import load_classifier
    from .detect import Detector
    from .pipeline import Pipeline, PipelineConfig

    torch.set_num_threads(setup.threads)
    cv2.setNumThreads(setup.threads)
    nets.SESSION_THREADS = setup.threads
    cfg = PipelineConfig(conf=setup.conf)
    det = Detector(setup.weights, device=setup.device, conf=setup.conf)
    classifier = "default" if setup.classifier == "default" else (
        None if setup.classifier is None else load_classifier(setup.classifier))
    _PIPELINE = Pipeline(det, None, cfg, classifier)


def _built():
    if _FAILED is not None:
        raise WorkerError(f"a perception worker could not start: {_FAILED}")
    return _PIPELINE


def _ready() -> int:
    """A task that only proves the worker has started (its pipeline built)."""
    _built()
    return os.getpid()


def _call(task, item):
    return task(_built(), item)


def perceive_pair(pipeline, pair):
    """A worker's task: one (frame, calibration) read on its own (`Pipeline.perceive`; None
    for the calibration measures it from the frame)."""
    frame, calibration = pair
    pipeline.calibration = calibration
    return pipeline.perceive(frame)


def perceive_pair_or_failure(pipeline, pair):
    """`perceive_pair`, a frame that raises answered by a FrameFailure: a live feed outlives one
    bad frame, as the sequential feed does."""
    try:
        return perceive_pair(pipeline, pair)
    except Exception as exc:  # noqa: BLE001 - told to the caller as one line
        return FrameFailure(pair[0].index, one_line(exc))


class FramePool:
    """`workers` processes, each with its own pipeline, reading (frame, calibration) pairs; the
    results come back in the order the frames went in. At most `ahead` frames per worker wait
    at once, so a camera faster than the pool does not pile frames up in memory."""

    def __init__(self, setup: WorkerSetup, workers: int, ahead: int = 2):
        import multiprocessing

        if not Path(setup.weights).is_file():
            raise WorkerError(f"{setup.weights}: no detector weights")
        self.workers = workers
        self.ahead = ahead
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=(setup,))

    def start(self) -> set[int]:
        """Start every worker now (each loads its nets: seconds), not on the first frames; the
        workers' process ids."""
        try:
            return {f.result() for f in [self._pool.submit(_ready) for _ in range(self.workers)]}
        except BrokenProcessPool:
            raise WorkerError("a perception worker ended as it started") from None

    def map(self, pairs: Iterable[tuple]) -> Iterator:
        """FrameResults of `Pipeline.perceive` (untracked) for (frame, calibration) pairs, in
        the frames' order."""
        return self.run(perceive_pair, pairs)

    def run(self, task, items: Iterable) -> Iterator:
        """task(the worker's pipeline, item) for each item, in a worker, the results in the
        items' order. `task` must be a module-level function (it crosses to the worker by name)."""
        waiting: deque = deque()
        try:
            for item in items:
                waiting.append(self._pool.submit(_call, task, item))
                if len(waiting) >= self.ahead * self.workers:
                    yield waiting.popleft().result()
            while waiting:
                yield waiting.popleft().result()
        except BrokenProcessPool:
            raise WorkerError("a perception worker ended before its frames were read") from None
        finally:
            for f in waiting:
                f.cancel()

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)

    def __enter__(self) -> FramePool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_each(task, items: Iterable, workers: int, detector, classifier, conf: float, local) -> Iterator:
    """task(pipeline, item) for each item, in the items' order: by `workers` processes, each with
    a pipeline of its own built like this one (the detector's weights and device, the
    classifier's weights), where workers > 1; else by `local()`, one pipeline built here. The
    pool closes once the items are done (or the caller stops reading). Why one place: scoring
    tables (`vision.eval`), recordings (`vision.track_eval`) and tables to cut crops from
    (`vision.cropset`) spread over processes alike. `items` is read as the workers take them."""
    if workers <= 1:
        pipe = local()
        yield from (task(pipe, item) for item in items)
        return
    setup = WorkerSetup(str(detector.weights), detector.device, conf,
                        None if classifier is None else str(classifier.weights), default_threads(workers))
    with FramePool(setup, workers) as pool:
        yield from pool.run(task, items)


def calibrated(frames: Iterable, calibration=None) -> tuple[object, Iterator]:
    """(The calibration, the frames): the one given, else measured from the first frame, which
    stays first in the frames handed back (None and no frames for an empty stream)."""
    from calibration.plane import fit_table

    frames = iter(frames)
    if calibration is not None:
        return calibration, frames
    first = next(frames, None)
    if first is None:
        return None, iter(())
    return fit_table(first)[0], itertools.chain([first], frames)


def perceive_stream(frames: Iterable, setup: WorkerSetup, workers: int, calibration=None,
                    tolerant: bool = False, lost_ms: float = 0.0) -> Iterator:
    """`Pipeline.run` with the frames read by `workers` processes: tracked FrameResults in
    order. The calibration is measured from the first frame here, unless given, as the
    sequential pipeline does, and every worker uses that one. `tolerant`: a frame whose reading
    raises comes back as a FrameFailure (untracked) and the stream goes on. `lost_ms`: the
    tracker's (vision.pipeline.PipelineConfig)."""
    from .pipeline import PipelineConfig, Tracker, tracked

    calibration, frames = calibrated(frames, calibration)
    if calibration is None:
        return
    tracker = Tracker(PipelineConfig(conf=setup.conf, lost_ms=lost_ms))
    with FramePool(setup, workers) as pool:
        pairs = ((f, calibration) for f in frames)
        for result in pool.run(perceive_pair_or_failure if tolerant else perceive_pair, pairs):
            yield result if isinstance(result, FrameFailure) else tracked(result, tracker)


class StreamPerceiver:
    """The dashboard's perceiver (server.feed.FrameFeed) with a camera's frames read by
    `workers` processes at once: its `stream` gives each frame with (tracked Scene, projection)
    or the exception its reading raised, in the frames' order, as the feed pairs a plain
    perceiver's calls (server.feed.FrameFeed._perceived). The
    table is measured from the first frame that shows one.

    Its tracker keeps a piece it does not see for as long in time as the feed reading every fifth
    frame does (LOST_MS, five frames read at 30 a second), not five frames: reading every frame,
    five are 0.17 s, and a hand passing over a marked koan for longer gave its pieces new ids
    when they showed again, which the game reads as the koan disturbed (katsu)."""

    LOST_MS = 5 * 5 * 1000 / 30

    def __init__(self, workers: int, weights=None, device: str | None = None, conf: float = 0.25):
        from .detect import DEFAULT_WEIGHTS

        self.workers = workers
        self.setup = WorkerSetup(str(weights or DEFAULT_WEIGHTS), device, conf, "default", default_threads(workers))
        self.calibration = None

    def stream(self, frames: Iterable) -> Iterator[tuple]:
        from calibration.plane import fit_table

        from .pipeline import projector, table_of

        frames = iter(frames)
        while self.calibration is None:
            frame = next(frames, None)
            if frame is None:
                return
            try:
                self.calibration, _ = fit_table(frame)
            except Exception as exc:  # noqa: BLE001 - no table in view yet: told, and the next frame tried
                yield frame, exc
                continue
            frames = itertools.chain([frame], frames)
        table = table_of(self.calibration)
        waiting: dict[int, object] = {}  # frame index -> the frame, while its reading is under way

        def handed():
            for f in frames:
                waiting[f.index] = f
                yield f

        for r in perceive_stream(handed(), self.setup, self.workers, self.calibration, tolerant=True,
                                 lost_ms=self.LOST_MS):
            frame = waiting.pop(r.frame_index)
            if isinstance(r, FrameFailure):
                yield frame, RuntimeError(r.message)
            else:
                yield frame, (r.tracked, projector(table, frame.intrinsics))
