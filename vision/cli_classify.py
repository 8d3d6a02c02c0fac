"""The classifier's commands: `zendo train-classifier`, `zendo eval-classifier`.

The second stage is trained and scored on its own (as ChessCog does each stage), on crops cut
from render folders by the committed detector, so its figures say what it adds by itself.
"""
from __future__ import annotations

import json
import logging

import click


def _examples(roots: tuple[str, ...], det_conf: float, seed: int):
    from zendo.cli import UserError

    from .classify import build_examples, render_folders
    from .detect import Detector, DetectorError

    folders = [f for r in roots for f in render_folders(r)]
    if not folders:
        raise UserError(f"{', '.join(roots)}: no render folders with truth.json (make them with `zendo eval-set`)")
    try:
        det = Detector(conf=det_conf)
    except DetectorError as exc:
        raise UserError(str(exc)) from None
    return build_examples(folders, det, seed=seed), len(folders)


@click.command("train-classifier")
@click.option("--data", "roots", required=True, multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Render folders with truth (from `zendo eval-set`, seeds training of nothing else uses); repeatable.")
@click.option("--val", "val_roots", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Render folders to report accuracy on after each epoch.")
@click.option("--epochs", type=click.IntRange(min=1), default=15)
@click.option("--seed", type=click.IntRange(min=0), default=0)
@click.option("--det-conf", type=click.FloatRange(0, 1), default=0.05, help="Detector threshold for the crops.")
@click.option("--out", default="models/zendo-cls.pt")
def train_classifier(roots, val_roots, epochs: int, seed: int, det_conf: float, out: str) -> None:
    """Train the second-stage colour x size classifier on the CPU (minutes; no GPU needed)."""
    from .classify import save, train

    logging.getLogger("vision").setLevel(logging.INFO)
    (x, y), n = _examples(roots, det_conf, seed)
    val = _examples(val_roots, det_conf, seed + 1)[0] if val_roots else None
    state, history = train(x, y, epochs=epochs, seed=seed, val=val)
    meta = {"data": list(roots), "frames": n, "crops": int(len(x)), "epochs": epochs, "seed": seed,
            "det_conf": det_conf, "history": history}
    save(state, out, meta)
    click.echo(json.dumps({"weights": out, **{k: meta[k] for k in ("frames", "crops")}, "last": history[-1]}))


@click.command("eval-classifier")
@click.option("--dataset", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--classifier", "weights", default=None, help="Default: models/zendo-cls.pt.")
@click.option("--det-conf", type=click.FloatRange(0, 1), default=0.05)
def eval_classifier(dataset: str, weights: str | None, det_conf: float) -> None:
    """Score the classifier alone on crops of held-out render folders (detector boxes and jittered truth boxes)."""
    from zendo.cli import UserError

    from .classify import ClassifierError, PieceClassifier, DEFAULT_CLASSIFIER, score

    try:
        clf = PieceClassifier(weights or DEFAULT_CLASSIFIER)
    except ClassifierError as exc:
        raise UserError(str(exc)) from None
    (x, y), n = _examples((dataset,), det_conf, 1)
    click.echo(json.dumps({"dataset": dataset, "frames": n, **score(clf, x, y)}, indent=2))


def register(group: click.Group) -> None:
    for cmd in (train_classifier, eval_classifier):
        group.add_command(cmd)
