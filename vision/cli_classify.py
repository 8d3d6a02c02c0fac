"""The classifier's commands: `zendo train-classifier`, `zendo cut-crops`, `zendo eval-classifier`,
`zendo quantize-classifier`.

The second stage is trained and scored on its own (as ChessCog does each stage), on crops cut
from render folders by the committed detector, so its figures say what it adds by itself.
"""
from __future__ import annotations

import json
import logging

import click


def _folders(roots: tuple[str, ...]) -> list:
    """Every render folder under the roots, each checked before the long work starts (its
    truth.json and camera.json read, its images there; none decoded twice): a broken one is
    named in one line, not met minutes in as a traceback."""
    from zendo.cli import UserError

    from .classify import render_folders
    from .eval import TruthError, read_truth
    from .frames import FrameSourceError, render_folder_intrinsics

    folders = [f for r in roots for f in render_folders(r)]
    if not folders:
        raise UserError(f"{', '.join(roots)}: no render folders with truth.json (make them with `zendo eval-set`)")
    for f in folders:
        try:
            read_truth(f)
            render_folder_intrinsics(f)
        except (TruthError, FrameSourceError) as exc:
            raise UserError(str(exc)) from None
    return folders


def _reading(build, *args, **kwargs):
    """build(*args, **kwargs), an image that will not decode a one-line error (the rest of each
    folder was checked up front by `_folders`)."""
    from zendo.cli import UserError

    from .frames import FrameSourceError

    try:
        return build(*args, **kwargs)
    except FrameSourceError as exc:
        raise UserError(str(exc)) from None


def _examples(folders: list, det_conf: float, seed: int):
    """Crops of every render folder: (x, class labels, orientation labels)."""
    from zendo.cli import UserError

    from .classify import build_examples
    from .detect import Detector, DetectorError

    try:
        det = Detector(conf=det_conf)
    except DetectorError as exc:
        raise UserError(str(exc)) from None
    return _reading(build_examples, folders, det, seed=seed)


@click.command("train-classifier")
@click.option("--data", "roots", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Render folders with truth (from `zendo eval-set`, seeds training of nothing else uses); repeatable.")
@click.option("--crops", "crop_files", multiple=True, type=click.Path(dir_okay=False),
              help="Crop sets from `zendo cut-crops` (instead of, or besides, --data); repeatable.")
@click.option("--val", "val_roots", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Render folders to report accuracy on after each epoch.")
@click.option("--val-crops", "val_files", multiple=True, type=click.Path(dir_okay=False),
              help="Crop sets to report accuracy on after each epoch.")
@click.option("--epochs", type=click.IntRange(min=1), default=15)
@click.option("--minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Train for as many epochs as fit in this time on the device (replaces --epochs).")
@click.option("--device", default="cpu", show_default=True, help="cpu, or a GPU such as cuda:0.")
@click.option("--batch", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0)
@click.option("--det-conf", type=click.FloatRange(0, 1), default=0.05, help="Detector threshold for the crops.")
@click.option("--task", type=click.Choice(["class", "orientation", "colour"]), default="class", show_default=True,
              help="class: colour x size, a marking stone, or not a piece; orientation: upright, flat or weird; "
                   "colour: the colour of a pixel set (a tower's band), from the truth masks.")
@click.option("--out", default=None, help="Default: models/zendo-cls.pt (class), models/zendo-orient.pt "
                                          "(orientation), models/zendo-colour.pt (colour).")
@click.option("--from", "start", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Go on from these weights (class or orientation) instead of from scratch.")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=3e-3, show_default=True,
              help="Peak learning rate of the one-cycle schedule (class, orientation).")
@click.option("--channels", default=None, metavar="C1,C2,C3,C4,C5",
              help="The net's filters per convolution, from scratch (default: 48,64,128,192,256 for the "
                   "classifier, 24,32,64,96,128 for the orientation net); --from keeps its net's own.")
def train_classifier(roots, crop_files, val_roots, val_files, epochs: int, minutes: float | None, device: str,
                     batch: int, seed: int, det_conf: float, task: str, out: str | None, start: str | None,
                     lr: float, channels: str | None) -> None:
    """Train a second-stage net (minutes on a CPU; no GPU needed): the colour x size classifier,
    the orientation net the pose fit takes as a prior, or the colour model towers read bands with."""
    from zendo.cli import UserError

    from .classify import DEFAULT_CLASSIFIER, DEFAULT_ORIENTATION, N_ORIENTATIONS, channels_of, train
    from .cropset import CropSet
    from .nets import save

    logging.getLogger("vision").setLevel(logging.INFO)
    if not roots and not crop_files:
        raise UserError("train-classifier: give render folders (--data) or crop sets (--crops)")
    if task == "colour" and crop_files:
        raise UserError("--crops: the colour model learns from render folders' truth masks (--data)")
    first = _start_state(start, task)  # a bad --from fails before minutes of crop cutting
    widths = _channels(channels, first)
    _check_device(device)
    train_sets, val_sets = _crop_sets(crop_files), _crop_sets(val_files)  # a bad file fails before the cutting too
    folders = _folders(roots) if roots else []
    if task == "colour":
        return _train_colours(folders, roots, val_roots, epochs, seed, out)
    out = out or str(DEFAULT_CLASSIFIER if task == "class" else DEFAULT_ORIENTATION)
    tables = len(folders) + sum(s.tables for s in train_sets)
    if folders:
        train_sets.append(_folder_crops(folders, det_conf, seed))
    x, y = CropSet.joined(train_sets).for_task(task)
    if val_roots:
        val_sets.append(_folder_crops(_folders(val_roots), det_conf, seed + 1))
    val = CropSet.joined(val_sets).for_task(task) if val_sets else None
    kw = dict(epochs=epochs, seed=seed, val=val, lr=lr, start=first, device=device, batch=batch, minutes=minutes,
              channels=widths)
    if task == "orientation":  # which way is up in the crop is the signal: no quarter turns
        kw.update(n_out=N_ORIENTATIONS, turns=False)
    state, history = train(x, y, **kw)
    meta = {"task": task, "data": list(roots) + list(crop_files), "frames": tables, "crops": int(len(x)),
            "epochs": len(history), "seed": seed, "det_conf": det_conf, "lr": lr, "batch": batch, "device": device,
            "from": start, "channels": list(channels_of(state)), "history": history}
    save(state, out, meta)
    row = {"weights": out, **{k: meta[k] for k in ("frames", "crops")}, "last": history[-1]}
    click.echo(json.dumps({**row, "int8": _int8_copy_of(out, task, x)}))  # the old copy is stale now


def _channels(text: str | None, start: dict | None) -> tuple[int, ...] | None:
    """--channels as five filter counts, or a one-line error: not five positive whole numbers, or
    not the widths of the --from net (whose weights fix them)."""
    from zendo.cli import UserError

    from .classify import NET_CHANNELS, channels_of

    if text is None:
        return None
    try:
        widths = tuple(int(c) for c in text.split(","))
    except ValueError:
        widths = ()
    if len(widths) != len(NET_CHANNELS) or min(widths) < 1:
        raise UserError(f"--channels {text}: give {len(NET_CHANNELS)} filter counts, such as 48,64,128,192,256")
    have = channels_of(start) if start is not None else widths
    if widths != have:
        raise UserError(f"--channels {text}: the --from net's widths are {','.join(map(str, have))}")
    return widths


def _crop_sets(files) -> list:
    from zendo.cli import UserError

    from .cropset import CropSet, CropSetError

    try:
        return [CropSet.load(f) for f in files]
    except CropSetError as exc:
        raise UserError(str(exc)) from None


def _folder_crops(folders: list, det_conf: float, seed: int):
    """The render folders' crops as a crop set (their tables' seeds unknown: -1)."""
    import numpy as np

    from .cropset import CropSet

    x, y, o = _examples(folders, det_conf, seed)
    return CropSet(x, y, o, np.full(len(y), -1, np.int64))


def _check_device(device: str) -> None:
    """A device torch cannot use is a one-line error before minutes of crop cutting, not a
    traceback after them."""
    import torch

    from zendo.cli import UserError

    try:
        torch.zeros(1, device=device)
    except (RuntimeError, AssertionError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise UserError(f"--device {device}: {msg}") from None


@click.command("cut-crops")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The crop set file to write (.npz).")
@click.option("--seed", type=click.IntRange(min=0), required=True,
              help="The first table's seed (seeds no evaluation or tuning set uses: 900000 and up are held out).")
@click.option("--tables", type=click.IntRange(min=1), required=True)
@click.option("--workers", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes rendering and cutting at once (a core each).")
@click.option("--device", default=None, help="Where the detector runs (default: a GPU when there is one).")
@click.option("--minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop taking tables when this time is up (the seeds cut are in the file).")
@click.option("--det-conf", type=click.FloatRange(0, 1), default=0.05, show_default=True)
def cut_crops(out: str, seed: int, tables: int, workers: int, device: str | None, minutes: float | None,
              det_conf: float) -> None:
    """Render tables seed .. seed + tables - 1 and cut the crop nets' training crops from them
    (every detector box and each visible piece's jittered box), without keeping render folders."""
    import time

    from zendo.cli import UserError

    from .cropset import cut
    from .detect import DetectorError
    from .parallel import WorkerError

    t0 = time.time()
    try:
        cs = cut(seed, tables, workers=workers, device=device, det_conf=det_conf, minutes=minutes)
    except (DetectorError, WorkerError) as exc:
        raise UserError(str(exc)) from None
    path = cs.save(out)
    seeds = sorted({int(v) for v in cs.seeds})
    click.echo(json.dumps({"crops": str(path), "tables": cs.tables, "count": len(cs),
                           "seeds": [seeds[0], seeds[-1]] if seeds else [], "seconds": round(time.time() - t0, 1)}))


CALIBRATION_CROPS = 3500  # about the crops of the 60 folders `zendo quantize-classifier` takes by default


def _int8_copy_of(weights: str, task: str, x):
    """Write the int8 copy of freshly trained weights (what the pipeline reads crops with on the
    CPU), calibrated on the first CALIBRATION_CROPS of its own training crops: the copy of the
    weights they replace is stale now, and would be ignored."""
    from pathlib import Path

    from .classify import N_CLASSES, N_ORIENTATIONS, _load_net

    n_out, what = (N_CLASSES, "classifier") if task == "class" else (N_ORIENTATIONS, "orientation")
    return _quantized(_load_net(Path(weights), n_out, what, "zendo train-classifier"), weights, x[:CALIBRATION_CROPS])


def _quantized(net, weights, crops) -> str:
    """The path of the int8 copy of `net` written beside `weights`, calibrated on these crops."""
    from .classify import to_tensor
    from .quantize import quantize

    return str(quantize(net, weights, to_tensor(crops).numpy()))


def _start_state(start: str | None, task: str) -> dict | None:
    """The state dict to go on from, or a one-line error when the file is not that task's net."""
    from pathlib import Path

    from zendo.cli import UserError

    from .classify import N_CLASSES, N_ORIENTATIONS, ClassifierError, load_start

    if start is None:
        return None
    if task == "colour":
        raise UserError("--from: the colour model trains from scratch (a minute on a CPU)")
    n_out, what = (N_CLASSES, "classifier") if task == "class" else (N_ORIENTATIONS, "orientation")
    try:
        return load_start(Path(start), n_out, what, "zendo train-classifier")
    except ClassifierError as exc:
        raise UserError(str(exc)) from None


def _train_colours(folders, roots, val_roots, epochs: int, seed: int, out: str | None) -> None:
    from . import colors
    from .nets import save

    out = out or str(colors.DEFAULT_COLOR_MODEL)
    x, y, _ = _reading(colors.build_samples, folders, seed=seed)
    state, history = colors.train(x, y, epochs=epochs, seed=seed)
    meta = {"task": "colour", "data": list(roots), "frames": len(folders), "samples": int(len(x)), "epochs": epochs,
            "seed": seed, "history": history}
    save(state, out, meta)
    row = {"weights": out, "frames": len(folders), "samples": int(len(x)), "last": history[-1]}
    if val_roots:
        row["val"] = colors.score(colors.ColorReader(out), *_reading(colors.build_samples, _folders(val_roots), seed=seed + 1))
    click.echo(json.dumps(row))


@click.command("eval-classifier")
@click.option("--dataset", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--classifier", "weights", default=None, help="Default: models/zendo-cls.pt.")
@click.option("--orientation", "orient_weights", default=None,
              help="Default: models/zendo-orient.pt when present.")
@click.option("--colour", "colour_weights", default=None, help="Default: models/zendo-colour.pt when present.")
@click.option("--det-conf", type=click.FloatRange(0, 1), default=0.05)
@click.option("--float", "in_float", is_flag=True,
              help="Read crops in float even where int8 copies are there (to measure what int8 costs).")
def eval_classifier(dataset: str, weights: str | None, orient_weights: str | None, colour_weights: str | None,
                    det_conf: float, in_float: bool) -> None:
    """Score the classifier alone on crops of held-out render folders (detector boxes and jittered
    truth boxes), the orientation net on the pyramid crops when there is one, and the colour
    model on the pieces' truth-mask pixels when there is one."""
    from zendo.cli import UserError

    from . import colors
    from .classify import DEFAULT_CLASSIFIER, ClassifierError, load_classifier, score, score_orientation

    try:
        clf = load_classifier(weights or DEFAULT_CLASSIFIER, orient_weights, int8=not in_float)
        reader = colors.load_color_reader(colour_weights)
    except (ClassifierError, colors.ColorModelError) as exc:
        raise UserError(str(exc)) from None
    folders = _folders((dataset,))
    x, y, o = _examples(folders, det_conf, 1)
    out = {"dataset": dataset, "frames": len(folders), "runtime": clf.runtime, **score(clf, x, y)}
    if clf.orient_net is not None:
        out["orientation"] = score_orientation(clf, x[o >= 0], o[o >= 0])
    if reader is not None:
        out["colour"] = colors.score(reader, *_reading(colors.build_samples, folders, seed=1, progress=False))
    click.echo(json.dumps(out, indent=2))


@click.command("quantize-classifier")
@click.option("--data", "roots", required=True, multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Render folders to calibrate on (training data: not a set the figures are read on); repeatable.")
@click.option("--frames", type=click.IntRange(min=1), default=60, show_default=True,
              help="Calibrate on the crops of the first N folders.")
@click.option("--classifier", "weights", default=None, help="Default: models/zendo-cls.pt.")
@click.option("--orientation", "orient_weights", default=None, help="Default: models/zendo-orient.pt when present.")
@click.option("--det-conf", type=click.FloatRange(0, 1), default=0.05)
@click.option("--seed", type=click.IntRange(min=0), default=0)
def quantize_classifier(roots, frames: int, weights: str | None, orient_weights: str | None, det_conf: float,
                        seed: int) -> None:
    """Write the int8 copies of the classifier and the orientation net beside their weights
    (NAME.int8.onnx), calibrated on crops cut from render folders. The pipeline reads crops with
    them on the CPU, about three times faster than in float; a copy not made from its .pt's very
    weights is ignored."""
    from zendo.cli import UserError

    from .classify import DEFAULT_CLASSIFIER, ClassifierError, load_classifier
    from .quantize import QuantizeError

    try:  # a bad file fails before minutes of crop cutting
        clf = load_classifier(weights or DEFAULT_CLASSIFIER, orient_weights, int8=False)
    except ClassifierError as exc:
        raise UserError(str(exc)) from None
    folders = _folders(roots)[:frames]
    x, _, o = _examples(folders, det_conf, seed)
    out = {"frames": len(folders), "crops": int(len(x))}
    try:
        out["classifier"] = _quantized(clf.net, clf.weights, x)
        if clf.orient_net is not None:  # it reads pyramid crops only
            out["orientation"] = _quantized(clf.orient_net, clf.orient_weights, x[o >= 0])
    except QuantizeError as exc:
        raise UserError(str(exc)) from None
    click.echo(json.dumps(out))


def register(group: click.Group) -> None:
    for cmd in (train_classifier, cut_crops, eval_classifier, quantize_classifier):
        group.add_command(cmd)
