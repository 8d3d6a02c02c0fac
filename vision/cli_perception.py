"""Perception commands: `zendo perceive`, `zendo train`, `zendo export-detector`, `zendo train-data`,
`zendo eval-set`, `zendo eval`.

Kept apart from vision/cli.py (the renderer's commands) so each area owns its own file.
"""
from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path

import click


def _errors():
    from calibration.plane import CalibrationError

    from .classify import ClassifierError
    from .detect import DetectorError
    from .eval import TruthError
    from .frames import FrameSourceError
    from .parallel import WorkerError

    return (FrameSourceError, DetectorError, ClassifierError, CalibrationError, FileNotFoundError, TruthError,
            WorkerError)


def _classifier_option(f):
    """--classifier PATH / --no-classifier: the second stage (default: models/zendo-cls.pt)."""
    f = click.option("--no-classifier", is_flag=True, help="Use the detector's classes alone.")(f)
    return click.option("--classifier", "classifier_path", default=None,
                        help="Classifier weights (default: models/zendo-cls.pt when present).")(f)


def _classifier(path: str | None, off: bool):
    from .classify import load_classifier

    return None if off else load_classifier(path)


@click.command()
@click.argument("source")
@click.option("--weights", default=None, help="Detector weights (default: models/zendo-yolo.pt).")
@click.option("--calibration", "cal_path", default=None, help="A calibration file (default: measure from the first frame).")
@click.option("--frames", "max_frames", type=click.IntRange(min=1), default=None, help="Read at most this many frames of a recording.")
@click.option("--device", default=None, help="cpu or cuda:0 (default: cuda when available).")
@click.option("--conf", type=click.FloatRange(0.0, 1.0), default=0.25, help="Detection confidence threshold.")
@click.option("--report/--no-report", default=False, help="Add per-piece fit reports and timings under 'perception'.")
@click.option("--workers", type=click.IntRange(1, 64), default=1,
              help="Read a recording's frames in this many processes at once (the same tables, more frames a second).")
@_classifier_option
def perceive(source: str, weights: str | None, cal_path: str | None, max_frames: int | None, device: str | None,
             conf: float, report: bool, workers: int, classifier_path: str | None, no_classifier: bool) -> None:
    """The table seen in SOURCE as zendo-scene/1 on stdout.

    SOURCE: a folder written by `zendo render` (color.png, depth.png, camera.json), a .db3
    recording, 'demo' or 'realsense'. A recording is tracked over its frames and the smoothed
    table of its last frame is printed.
    """
    from zendo.cli import UserError

    from .detect import DEFAULT_WEIGHTS, Detector
    from .frames import open_source
    from .pipeline import Pipeline, PipelineConfig

    try:
        cal = None
        if cal_path:
            from calibration import store

            cal = store.load(cal_path)
        src = open_source(source)
        det = Detector(weights or DEFAULT_WEIGHTS, device=device, conf=conf)
        pipe = Pipeline(det, cal, PipelineConfig(conf=conf), classifier=_classifier(classifier_path, no_classifier))
        last = None
        events = []
        try:
            frames = itertools.islice(src.frames(), max_frames)
            if workers > 1:
                results = _in_workers(frames, pipe, det, workers, classifier_path, no_classifier)
            else:
                results = map(pipe.process, frames)
            for last in results:
                events.extend(last.events)
        finally:
            src.close()
    except _errors() as exc:
        raise UserError(str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__) from None
    except RuntimeError as exc:  # e.g. a corrupt recording surfacing from the SDK
        raise UserError(f"{source}: {str(exc).splitlines()[0] if str(exc) else 'cannot read'}") from None
    if last is None:
        raise UserError(f"{source}: no frames")
    scene = last.tracked if last.frame_index > 0 else last.scene
    doc = scene.to_dict()
    if report:
        doc["perception"] = dict(last.scene.extra.get("perception", {}))
        doc["perception"]["timings_ms"] = last.timings_ms
        doc["perception"]["frames"] = last.frame_index + 1
        doc["perception"]["events"] = events
        doc["perception"]["camera_to_table"] = pipe.table().matrix.round(5).tolist()
    else:
        unc = last.scene.extra.get("perception", {}).get("uncertain", [])
        if unc and last.frame_index == 0:
            doc["uncertain"] = unc
        doubts = scene.extra.get("perception", {}).get("doubts", [])
        if doubts:  # what the camera may have got wrong (zendo/doubts.py); readers ignore extra keys
            doc["doubts"] = doubts
    click.echo(json.dumps(doc, indent=2))


def _in_workers(frames, pipe, det, workers: int, classifier_path: str | None, no_classifier: bool):
    """The frames' results read by `workers` processes (vision/parallel.py), each building the
    pipeline `pipe` is from the same weights and settings; `pipe` keeps the calibration used
    (measured from the first frame unless one was given)."""
    from .parallel import WorkerSetup, calibrated, default_threads, perceive_stream

    pipe.calibration, frames = calibrated(frames, pipe.calibration)
    setup = WorkerSetup(str(det.weights), det.device, det.conf,
                        None if no_classifier else (classifier_path or "default"), default_threads(workers))
    yield from perceive_stream(frames, setup, workers, pipe.calibration)


@click.command("train-data")
@click.option("--out", required=True, type=click.Path(file_okay=False))
@click.option("--n-train", type=click.IntRange(1, 1_000_000), default=1100)
@click.option("--n-val", type=click.IntRange(1, 1_000_000), default=120)
@click.option("--seed", type=click.IntRange(min=0), default=100000, help="First seed (evaluation uses 900000 and up).")
@click.option("--workers", type=click.IntRange(1, 64), default=2)
@click.option("--jpeg-quality", type=click.IntRange(1, 100), default=88)
def train_data(out: str, n_train: int, n_val: int, seed: int, workers: int, jpeg_quality: int) -> None:
    """Render a detector training set (YOLO detect/pose/segment labels from the same frames)."""
    from .trainset import write_training_set

    path = write_training_set(out, n_train, n_val, seed, workers=workers, jpeg_quality=jpeg_quality)
    click.echo(json.dumps({"dataset": str(path)}))


@click.command()
@click.option("--data", required=True, multiple=True, type=click.Path(exists=True, file_okay=False),
              help="From `zendo train-data` (repeat to join several).")
@click.option("--task", type=click.Choice(["detect", "pose", "segment"]), default="detect")
@click.option("--epochs", type=click.IntRange(min=1), default=60)
@click.option("--hours", type=click.FloatRange(min=0, min_open=True), default=None, help="Train for this long instead of --epochs.")
@click.option("--imgsz", type=click.IntRange(32, 4096), default=640)
@click.option("--crop", type=click.IntRange(32, 4096), default=None,
              help="Train on tiles of this size cut from the frames at native scale (detect; cheap on a CPU).")
@click.option("--from", "start", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Go on from these weights (fine-tuning) instead of from scratch.")
@click.option("--batch", type=click.IntRange(min=1), default=16)
@click.option("--device", default=None)
@click.option("--fraction", type=click.FloatRange(0, 1, min_open=True), default=1.0, help="Use this share of the training images.")
@click.option("--out", default="models/zendo-yolo.pt")
@click.option("--project", default="runs/zendo")
def train(data: tuple[str, ...], task: str, epochs: int, hours: float | None, imgsz: int, crop: int | None,
          start: str | None, batch: int, device: str | None, fraction: float, out: str, project: str) -> None:
    """Train the detector offline (GPU when there is one), from scratch or from --from weights."""
    from zendo.cli import UserError

    from .detect import _main

    for d in data:
        if not any((Path(d) / "images" / "train").glob("*.jpg")):
            raise UserError(f"{d}: not a training set (no images/train/*.jpg; make one with `zendo train-data`)")
    if crop and task != "detect":
        raise UserError(f"--crop: tiles are for the detect task, not {task}")
    args = ["train", *[a for d in data for a in ("--data", d)], "--task", task, "--epochs", str(epochs), "--imgsz", str(imgsz),
            "--batch", str(batch), "--fraction", str(fraction), "--out", out, "--project", project,
            "--workers", "2"]
    if hours:
        args += ["--hours", str(hours)]
    if device:
        args += ["--device", device]
    if crop:
        args += ["--crop", str(crop)]
    if start:
        args += ["--model", start]
    _main(args)
    _export(out)


def _export(weights: str) -> None:
    """Write the ONNX copy the CPU runs (vision.detect.export_onnx) and say where."""
    from zendo.cli import UserError

    from .detect import DetectorError, export_onnx

    try:
        path = export_onnx(weights)
    except DetectorError as exc:
        raise UserError(str(exc)) from None
    click.echo(json.dumps({"onnx": str(path)}))


@click.command("export-detector")
@click.option("--weights", default=None, type=click.Path(dir_okay=False),
              help="Default: models/zendo-yolo.pt. The copy is written beside it, as .onnx.")
def export_detector(weights: str | None) -> None:
    """Write the detector's ONNX copy, which ONNX Runtime runs on the CPU (same boxes, about twice as
    fast as torch there). `zendo train` writes it too; a copy older than its .pt is never used."""
    from .detect import DEFAULT_WEIGHTS

    _export(weights or str(DEFAULT_WEIGHTS))


@click.command("eval-set")
@click.option("--out", required=True, type=click.Path(file_okay=False))
@click.option("--n", type=click.IntRange(1, 100_000), default=60)
@click.option("--seed", type=click.IntRange(min=0), default=900000)
def eval_set(out: str, n: int, seed: int) -> None:
    """Render held-out tables (render folders with truth.json) for `zendo eval`."""
    from .eval import write_eval_set

    click.echo(json.dumps({"dataset": str(write_eval_set(out, n, seed))}))


@click.command("eval")
@click.option("--dataset", required=True, multiple=True,
              help="A folder of render folders (from `zendo eval-set`); give it again to pool several sets.")
@click.option("--weights", default=None)
@click.option("--device", default=None)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Score only the first N tables.")
@click.option("--conf", type=click.FloatRange(0.0, 1.0), default=0.25, help="Detection confidence threshold.")
@click.option("--json-out", default=None, type=click.Path(dir_okay=False), help="Also write the JSON here.")
@click.option("--workers", type=click.IntRange(1, 64), default=1,
              help="Read and score this many tables at once, each in its own process (the same figures, sooner).")
@_classifier_option
def eval_cmd(dataset: tuple[str, ...], weights: str | None, device: str | None, limit: int | None, conf: float,
             json_out: str | None, workers: int, classifier_path: str | None, no_classifier: bool) -> None:
    """Score perception on held-out synthetic tables: JSON on stdout, a readable table on stderr."""
    from zendo.cli import UserError

    from .eval import format_table, run_eval

    logging.getLogger("zendo").setLevel(logging.ERROR)
    try:
        summary = run_eval(list(dataset), weights=weights, device=device, limit=limit, conf=conf,
                           classifier=None if no_classifier else (classifier_path or "default"), workers=workers)
    except _errors() as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    if json_out:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    click.echo(format_table(summary), err=True)
    click.echo(json.dumps(summary, indent=2))


@click.command("eval-tracking")
@click.argument("recordings", nargs=-1)
@click.option("--make", "make_dir", default=None, type=click.Path(file_okay=False),
              help="First record --n still random tables into this folder, then score them.")
@click.option("--n", type=click.IntRange(1, 10_000), default=30, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=500000, show_default=True)
@click.option("--frames", type=click.IntRange(2, 1000), default=None,
              help="Frames per recording  [default: 20; 60 with --hands]")
@click.option("--hands", is_flag=True,
              help="With --make: a hand reaches over one marked koan of each table and passes, knocks a "
                   "piece, takes one away or puts one beside it.")
@click.option("--fps", type=click.Choice(["6", "15", "30"]), default="6", show_default=True,
              help="6 fps reads as the dashboard's feed does (every fifth frame of a 30 fps camera).")
@click.option("--confirm", "confirm_frames", type=click.IntRange(1, 20), default=None,
              help="Frames a new piece must be seen in before it is shown (default: the pipeline's).")
@click.option("--lost-ms", type=click.FloatRange(0.0, 10_000.0), default=0.0, show_default=True,
              help="Keep an unseen piece this long as well (the feed with --workers: 833).")
@click.option("--weights", default=None)
@click.option("--device", default=None)
@click.option("--json-out", default=None, type=click.Path(dir_okay=False), help="Also write the JSON here.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Score this many recordings at once, each in its own process (the same figures, but "
                   "that a busy machine's .db3 playback hands a few frames over differently).")
@_classifier_option
def eval_tracking(recordings: tuple[str, ...], make_dir: str | None, n: int, seed: int, frames: int | None, hands: bool,
                  fps: str,
                  confirm_frames: int | None, lost_ms: float, weights: str | None, device: str | None,
                  json_out: str | None, classifier_path: str | None, no_classifier: bool, workers: int) -> None:
    """Score tracking on recordings (RECORDINGS: .db3 files or folders of them, each with its
    .truth.json): phantoms, recall, renamed pieces and false katsu, frame by frame; and where a
    hand changed a koan, whether and how soon the game raised katsu, saying what changed."""
    from zendo.cli import UserError

    from .track_eval import format_table, run_track_eval, write_tracking_set

    logging.getLogger("zendo").setLevel(logging.ERROR)
    paths: list[Path] = []
    try:
        if hands and not make_dir:
            raise UserError("--hands records new tables: give --make DIR as well")
        if make_dir:
            frames = frames or (60 if hands else 20)
            try:
                made = write_tracking_set(make_dir, n, seed, frames, int(fps), hands=hands)
            except ValueError as exc:  # too few frames for a hand to come and go
                raise UserError(str(exc)) from None
            paths += sorted(made.glob("*.db3"))
        for r in recordings:
            p = Path(r)
            found = sorted(p.glob("*.db3")) if p.is_dir() else [p]
            if not found or not all(f.is_file() for f in found):
                raise UserError(f"{r}: no .db3 recording there")
            paths += found
        if not paths:
            raise UserError("give recordings (.db3 files or folders of them), or --make DIR")
        summary = run_track_eval(paths, weights=weights, device=device, confirm_frames=confirm_frames,
                                 lost_ms=lost_ms, classifier=None if no_classifier else (classifier_path or "default"),
                                 workers=workers)
    except _errors() as exc:
        raise UserError(str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__) from None
    except RuntimeError as exc:  # a corrupt recording surfacing from the SDK
        raise UserError(str(exc).splitlines()[0] if str(exc) else "cannot read a recording") from None
    if json_out:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    click.echo(format_table(summary), err=True)
    click.echo(json.dumps(summary, indent=2))


def register(group: click.Group) -> None:
    for cmd in (perceive, train_data, train, export_detector, eval_set, eval_cmd, eval_tracking):
        group.add_command(cmd)
