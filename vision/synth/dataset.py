"""Labelled data sets for the detector: YOLO images and labels, keypoints, ground truth.

Layout of DIR (one split per call; train and test come from different seeds):

    DIR/data.yaml                     Ultralytics data file (names, kpt_shape [5, 3])
    DIR/manifest.json                 seed, count and command of every split written here
    DIR/images/<split>/000123.jpg
    DIR/labels/<split>/000123.txt     YOLO boxes: class cx cy w h (normalised)
    DIR/labels_pose/<split>/000123.txt  YOLO-pose: class cx cy w h + 5 x (x y v) (tip, 4 corners)
    DIR/truth/<split>/000123.json     the scene, camera-to-table, intrinsics, mask values, labels

Image i of a split depends only on (seed, i): the same command gives the same files, whatever
the number of worker processes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..classes import CLASS_NAMES, KEYPOINT_NAMES
from .camera import CameraPose, color_intrinsics
from .render import ObjectLabel, render
from .tables import random_table

MIN_VISIBLE_PX = 12  # objects with fewer visible pixels get no label (the detector cannot see them)


class DatasetError(ValueError):
    pass


@dataclass(frozen=True)
class SampleSpec:
    seed: int
    index: int
    width: int = 640
    height: int = 480
    image_format: str = "jpg"


def sample_camera(rng: np.random.Generator) -> tuple[CameraPose, dict]:
    h = float(rng.uniform(400, 900))
    tilt = float(rng.uniform(0, 50))
    target = (float(rng.uniform(-60, 60)), float(rng.uniform(-60, 60)), 0.0)
    yaw = float(rng.uniform(0, 360))
    return CameraPose.looking_at(h, tilt, target, yaw), {"height_mm": h, "tilt_deg": tilt, "target": target, "yaw_deg": yaw}


def yolo_lines(objects: list[ObjectLabel], width: int, height: int, pose: bool) -> list[str]:
    lines = []
    for o in objects:
        if o.class_id is None or o.box is None or o.visible_px < MIN_VISIBLE_PX:
            continue
        x0, y0, x1, y1 = o.box
        parts = [str(o.class_id), f"{(x0 + x1) / 2 / width:.6f}", f"{(y0 + y1) / 2 / height:.6f}",
                 f"{(x1 - x0) / width:.6f}", f"{(y1 - y0) / height:.6f}"]
        if pose:
            kps = o.keypoints if o.keypoints is not None else np.zeros((len(KEYPOINT_NAMES), 3))
            for u, v, f in kps:
                if f == 0:
                    parts += ["0", "0", "0"]
                else:
                    parts += [f"{u / width:.6f}", f"{v / height:.6f}", str(int(f))]
        lines.append(" ".join(parts))
    return lines


def make_sample(spec: SampleSpec):
    rng = np.random.default_rng([spec.seed, spec.index])
    scene = random_table(rng, int(rng.integers(1, 9)))
    pose, cam = sample_camera(rng)
    intr = color_intrinsics(spec.width, spec.height)
    r = render(scene, pose, intr, seed=[spec.seed, spec.index, 1])
    return scene, cam, r


def write_sample(out: Path, split: str, spec: SampleSpec) -> int:
    scene, cam, r = make_sample(spec)
    name = f"{spec.index:06d}"
    img = r.color[..., ::-1]
    path = out / "images" / split / f"{name}.{spec.image_format}"
    params = [cv2.IMWRITE_JPEG_QUALITY, 92] if spec.image_format == "jpg" else [cv2.IMWRITE_PNG_COMPRESSION, 1]
    cv2.imwrite(str(path), img, params)
    w, h = spec.width, spec.height
    boxes = yolo_lines(r.objects, w, h, pose=False)
    (out / "labels" / split / f"{name}.txt").write_text("".join(l + "\n" for l in boxes))
    (out / "labels_pose" / split / f"{name}.txt").write_text("".join(l + "\n" for l in yolo_lines(r.objects, w, h, True)))
    truth = r.truth(scene) | {"camera": cam, "seed": [spec.seed, spec.index], "appearance": r.appearance.__dict__}
    (out / "truth" / split / f"{name}.json").write_text(json.dumps(truth) + "\n")
    return len(boxes)


def _work(args):
    out, split, spec = args
    return write_sample(Path(out), split, spec)


def write_dataset(out: str | Path, n: int, seed: int, *, split: str = "train", width: int = 640, height: int = 480,
                  image_format: str = "jpg", workers: int = 2, progress: bool = True, command: str = "") -> dict:
    out = Path(out)
    if n < 1:
        raise DatasetError("--n must be at least 1")
    if image_format not in ("jpg", "png"):
        raise DatasetError(f"image format must be jpg or png, got {image_format!r}")
    manifest_path = out / "manifest.json"
    manifest = {"splits": {}}
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
        except json.JSONDecodeError:
            raise DatasetError(f"{manifest_path}: not valid JSON") from None
    for other, info in manifest.get("splits", {}).items():
        if other != split and int(info.get("seed", -1)) == seed:
            raise DatasetError(f"seed {seed} already made split '{other}' in {out}: use a different seed for '{split}'")
    for sub in ("images", "labels", "labels_pose", "truth"):
        (out / sub / split).mkdir(parents=True, exist_ok=True)
    specs = [(str(out), split, SampleSpec(seed, i, width, height, image_format)) for i in range(n)]
    from tqdm import tqdm

    labels = 0
    bar = tqdm(total=n, desc=f"dataset {split}", unit="img", disable=not progress)
    if workers > 1:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        with ctx.Pool(workers) as pool:
            for k in pool.imap_unordered(_work, specs, chunksize=4):
                labels += k
                bar.update(1)
    else:
        for s in specs:
            labels += _work(s)
            bar.update(1)
    bar.close()
    manifest.setdefault("splits", {})[split] = {"seed": seed, "n": n, "width": width, "height": height,
                                                 "labels": labels, "command": command}
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    splits = manifest["splits"]
    names = "\n".join(f"  {i}: {c}" for i, c in enumerate(CLASS_NAMES))
    yaml = [f"path: {out.resolve()}"]
    for key in ("train", "val", "test"):
        if key in splits:
            yaml.append(f"{key}: images/{key}")
    if "val" not in splits and "test" in splits:
        yaml.append("val: images/test")
    yaml += ["kpt_shape: [5, 3]  # tip, 4 base corners (labels_pose/)", "flip_idx: [0, 1, 4, 3, 2]  # corners run clockwise from the top: a left-right flip swaps right and left", f"names:\n{names}", ""]
    (out / "data.yaml").write_text("\n".join(yaml))
    return {"split": split, "n": n, "seed": seed, "labels": labels, "out": str(out)}
