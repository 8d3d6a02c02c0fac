"""`zendo bench pipeline`: per-stage latency of the frame -> table pipeline (a benchmark, never a test).

Stages: calibrate (once per camera, reported apart), detect (YOLO), classify, pose and the
stages after it, doubts, track; `frame` is their sum, what one frame takes. `stream`: how many
frames a second a camera's stream is read at when a worker process per core reads frames at
once (vision/parallel.py), each frame still taking its `frame` time in its worker.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from zendo.bench import latency_stats



def time_frames(frames_and_cals, *, device: str | None = None, repeat: int = 5, runtime: str = "auto") -> dict:
    """Time the pipeline on (frame, table calibration) pairs, `repeat` passes each after a warm-up.
    `runtime`: the detector's (vision.detect.Detector), to compare torch with the ONNX copy."""
    from .detect import DEFAULT_WEIGHTS, Detector
    from .pipeline import Pipeline

    det = Detector(DEFAULT_WEIGHTS, device=device, runtime=runtime)
    det.warmup()
    rows: dict[str, list[float]] = {}
    pieces = []
    crop_nets = second_look = None
    for frame, cal in frames_and_cals:
        pipe = Pipeline(det, cal)
        crop_nets = pipe.classifier.runtime if pipe.classifier is not None else None
        second_look = pipe.classifier.turns_below_p > 0 if pipe.classifier is not None else None
        pipe.process(frame)  # warm
        for _ in range(repeat):
            r = pipe.process(frame)
            # every stage the pipeline reports (detect, classify, pose, doubts, track); the frame
            # is their sum, calibration apart (it is measured once per camera, not per frame)
            stages = {k: v for k, v in r.timings_ms.items() if k not in ("calibrate", "total")}
            for k, v in stages.items():
                rows.setdefault(k, []).append(v)
            rows.setdefault("frame", []).append(sum(stages.values()))
            pieces.append(len(r.scene.pieces))
    out = {k: latency_stats(v, 1) for k, v in rows.items()}
    out["pieces_per_frame"] = round(float(np.mean(pieces)), 1)
    out["device"] = det.device
    out["runtime"] = det.runtime  # onnx: the ONNX copy under ONNX Runtime (CPU); torch: the .pt
    out["crop_nets"] = crop_nets  # int8: the classifier's and orientation net's int8 copies (vision.quantize)
    out["second_look"] = second_look  # the classifier reads unsure crops again, turned (off: --no-turns)
    if det.device.startswith("cuda"):
        import torch

        out["gpu"] = torch.cuda.get_device_name(0)
    out["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    return out


def time_stream(frames_and_cals, setup, workers: int, repeat: int = 5) -> dict:
    """Frames a second when `workers` processes read a stream (vision/parallel.py): the
    (frame, calibration) pairs `repeat` times over, tracked in order as a camera's stream is,
    after every worker has started (`start_s`) and read a first frame. `ms_per_frame` is the stream's wall
    time over its frames; `worker_frame` is what each frame took inside its worker (its
    latency, which workers sharing cores and a GPU stretch)."""
    from .parallel import FramePool
    from .pipeline import PipelineConfig, Tracker, tracked

    pairs = list(frames_and_cals)
    t0 = time.perf_counter()
    with FramePool(setup, workers) as pool:
        pool.start()
        start_s = time.perf_counter() - t0  # until every worker has its pipeline built
        for _ in pool.map(pairs * max(1, -(-2 * workers // len(pairs)))):
            pass  # warm: every worker's nets and compiled kernels have run
        tracker = Tracker(PipelineConfig(conf=setup.conf))
        inside = []
        t0 = time.perf_counter()
        for r in pool.map(pairs * repeat):
            r = tracked(r, tracker)
            inside.append(sum(v for k, v in r.timings_ms.items() if k not in ("calibrate", "total")))
        wall = time.perf_counter() - t0
    return {"workers": workers, "threads_per_worker": setup.threads, "start_s": round(start_s, 1), "frames": len(inside),
            "ms_per_frame": round(wall * 1000 / len(inside), 1), "frames_per_s": round(len(inside) / wall, 1),
            "worker_frame": latency_stats(inside, 1),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}


def run(n_tables: int = 3, repeat: int = 5, device: str | None = None) -> dict:
    """Render a few held-out tables and time every stage on this machine."""
    from calibration.plane import fit_table

    from .frames import Frame
    from .trainset import render_example

    pairs = []
    cal_ms = []
    for i in range(n_tables):
        _, _, r = render_example(950000 + i)
        frame = Frame(r.color, r.depth, r.intrinsics, 0.0, 0)
        t0 = time.perf_counter()
        cal, _ = fit_table(frame)
        cal_ms.append((time.perf_counter() - t0) * 1000)
        pairs.append((frame, cal))
    out = time_frames(pairs, device=device, repeat=repeat)
    out["calibrate_once"] = latency_stats(cal_ms, 1)
    workers = os.cpu_count() or 1
    if workers > 1:  # a camera's stream read by a worker per core (vision/parallel.py)
        from .detect import DEFAULT_WEIGHTS
        from .parallel import WorkerSetup

        out["stream"] = time_stream(pairs, WorkerSetup(str(DEFAULT_WEIGHTS), device), workers, repeat)
    return out


def _frame_and_table(folder: str) -> tuple:
    """A render folder's first frame and its table plane: the folder's calibration.json where it
    has one (what `zendo calibrate --out` writes, or its table part alone), measured from the
    frame otherwise (as `zendo eval-set` folders come)."""
    from calibration.plane import TableCalibration, fit_table

    from .frames import RenderFolderSource

    frame = next(iter(RenderFolderSource(folder).frames()))
    saved = Path(folder) / "calibration.json"
    if not saved.exists():
        return frame, fit_table(frame)[0]
    d = json.loads(saved.read_text())
    return frame, TableCalibration.from_dict(d.get("table", d))


def _main() -> None:
    """`python -m vision.bench --folders DIR... [--device cuda:0]`: time render folders (each
    with its calibration.json where one was measured beforehand, so that a machine without
    Open3D can run it; measured here where there is none)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m vision.bench")
    ap.add_argument("--folders", nargs="+", required=True)
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runtime", default="auto", choices=["auto", "torch", "onnx"])
    ap.add_argument("--workers", type=int, nargs="*", default=None,
                    help="time a stream read by this many worker processes (several counts: one run each)")
    ap.add_argument("--threads", type=int, default=None, help="cores per worker (default: the cores / workers)")
    ap.add_argument("--no-turns", action="store_true",
                    help="read every crop once: time the frame without the classifier's second look at unsure crops")
    a = ap.parse_args()
    if a.no_turns:
        if a.workers:
            raise SystemExit("python -m vision.bench: --no-turns times frames in this process; leave out --workers")
        from .classify import PieceClassifier

        PieceClassifier.turns_below_p = 0.0
    pairs = []
    for f in a.folders:
        try:
            pairs.append(_frame_and_table(f))
        except Exception as exc:  # noqa: BLE001 - a folder the bench cannot read is one line, not a traceback
            msg = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
            raise SystemExit(f"python -m vision.bench: {msg if f in msg else f'{f}: {msg}'}") from None
    if a.workers:
        from .detect import DEFAULT_WEIGHTS
        from .parallel import WorkerSetup, default_threads

        out = [time_stream(pairs, WorkerSetup(str(DEFAULT_WEIGHTS), a.device, threads=a.threads or default_threads(n)),
                           n, a.repeat) for n in a.workers]
        print(json.dumps(out, indent=2))
        return
    print(json.dumps(time_frames(pairs, device=a.device, repeat=a.repeat, runtime=a.runtime), indent=2))


if __name__ == "__main__":
    _main()
