"""Detector training sets rendered from random tables: YOLO detect / pose / segment labels at once.

Why here and not only `zendo dataset`: training needs all three label kinds from the same
frames (to choose the task by measured accuracy), compact JPEGs (the set travels to a GPU
machine), and pyramid corners in a canonical order. Corners of a pyramid are interchangeable
(four-fold symmetry), so a label that names "corner 0" by the piece frame asks the network for
something it cannot see; we order them by image angle around the tip instead, which it can.

Layout: DIR/images/{train,val}/NAME.jpg, DIR/labels_{detect,pose,segment}/{train,val}/NAME.txt,
DIR/truth/{train,val}/NAME.json (the scene and the camera), DIR/README.txt (the command).
`materialise(DIR, task)` arranges one task's copy that Ultralytics can read.
"""
from __future__ import annotations

import json
import logging
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from .classes import CLASS_NAMES, KEYPOINT_NAMES

log = logging.getLogger(__name__)
TASKS = ("detect", "pose", "segment")


def random_camera(rng: np.random.Generator):
    """A camera pose as players set one up: 45-80 cm up, tilted 0-40 degrees, any heading."""
    from .synth import CameraPose

    return CameraPose.looking_at(float(rng.uniform(450, 800)), float(rng.uniform(0, 40)),
                                 (float(rng.uniform(-60, 60)), float(rng.uniform(-60, 60)), 0.0),
                                 float(rng.uniform(0, 360)))


def canonical_keypoints(kp: np.ndarray) -> np.ndarray:
    """Tip first, then the four corners ordered by image angle around the tip (ties are rare)."""
    tip = kp[0]
    corners = kp[1:]
    ang = np.arctan2(corners[:, 1] - tip[1], corners[:, 0] - tip[0])
    return np.vstack([tip[None], corners[np.argsort(ang)]])


def _polygon(mask: np.ndarray) -> np.ndarray | None:
    import cv2

    cs, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not cs:
        return None
    c = max(cs, key=cv2.contourArea).reshape(-1, 2).astype(np.float64)
    return c if len(c) >= 3 else None


def render_example(seed: int, width: int = 640, height: int = 480):
    """(scene, camera pose, Render) for one seed: everything is a function of the seed."""
    from .synth import color_intrinsics, random_table, render

    rng = np.random.default_rng([seed, 0x5EED])
    scene = random_table(rng, int(rng.integers(2, 9)))
    cam = random_camera(rng)
    intr = color_intrinsics(width, height)
    return scene, cam, render(scene, cam, intr, seed=[seed, 1])


def _write_one(args) -> int:
    out, split, seed, min_px, quality = args
    import cv2

    scene, cam, r = render_example(seed)
    name = f"{seed:06d}"
    h, w = r.depth.shape
    cv2.imwrite(str(out / "images" / split / f"{name}.jpg"), r.color[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
    lines = {t: [] for t in TASKS}
    n = 0
    for o in r.objects:
        if o.box is None or o.class_id is None or o.visible_px < min_px:
            continue
        x0, y0, x1, y1 = o.box
        cx, cy, bw, bh = (x0 + x1) / 2 / w, (y0 + y1) / 2 / h, (x1 - x0) / w, (y1 - y0) / h
        box = f"{o.class_id} {cx:.6f} {cy:.6f} {bw:.6f} {bh:.6f}"
        lines["detect"].append(box)
        if o.keypoints is not None:
            kp = canonical_keypoints(np.asarray(o.keypoints, float))
            kps = " ".join(f"{u / w:.6f} {v / h:.6f} {int(f)}" if f > 0 else "0 0 0" for u, v, f in kp)
        else:
            kps = " ".join(["0 0 0"] * len(KEYPOINT_NAMES))
        lines["pose"].append(f"{box} {kps}")
        poly = _polygon(r.mask == o.mask_value)
        if poly is not None:
            lines["segment"].append(f"{o.class_id} " + " ".join(f"{u / w:.4f} {v / h:.4f}" for u, v in poly))
        n += 1
    for t in TASKS:
        (out / f"labels_{t}" / split / f"{name}.txt").write_text("\n".join(lines[t]) + ("\n" if lines[t] else ""))
    truth = r.truth(scene)
    (out / "truth" / split / f"{name}.json").write_text(json.dumps(truth))
    return n


def write_training_set(out: str | Path, n_train: int, n_val: int, seed: int, *, workers: int = 2,
                       min_px: int = 12, jpeg_quality: int = 88) -> Path:
    """Render n_train + n_val tables (seeds seed.., disjoint from evaluation seeds) with labels."""
    out = Path(out)
    for split in ("train", "val"):
        for sub in ["images", "truth"] + [f"labels_{t}" for t in TASKS]:
            (out / sub / split).mkdir(parents=True, exist_ok=True)
    jobs = [(out, "train", seed + i, min_px, jpeg_quality) for i in range(n_train)]
    jobs += [(out, "val", seed + n_train + i, min_px, jpeg_quality) for i in range(n_val)]
    from tqdm import tqdm

    with ProcessPoolExecutor(workers) as pool:
        total = sum(tqdm(pool.map(_write_one, jobs, chunksize=4), total=len(jobs), desc="rendering", leave=False))
    (out / "README.txt").write_text(
        f"Rendered by: zendo train-data --out {out} --n-train {n_train} --n-val {n_val} --seed {seed} "
        f"--jpeg-quality {jpeg_quality}\n"
        f"{len(jobs)} images, {total} labelled objects. Classes: vision/classes.py CLASS_NAMES.\n")
    return out


def materialise(root: str | Path, task: str, dest: str | Path | None = None, crop: int | None = None) -> Path:
    """Arrange images + one task's labels the way Ultralytics reads them; return data.yaml.
    With `crop`, the frames are cut into crop x crop tiles instead (detect task only)."""
    root = Path(root)
    dest = Path(dest) if dest else root / f"yolo_{task}"
    if crop:
        if task != "detect":
            raise ValueError("cropped training sets are made for the detect task only")
        for split in ("train", "val"):
            write_crops(root, split, dest, crop)
        return _data_yaml(dest, task)
    for split in ("train", "val"):
        (dest / "images" / split).mkdir(parents=True, exist_ok=True)
        (dest / "labels" / split).mkdir(parents=True, exist_ok=True)
        for img in (root / "images" / split).glob("*.jpg"):
            target = dest / "images" / split / img.name
            if not target.exists():
                try:
                    target.hardlink_to(img)
                except OSError:
                    shutil.copyfile(img, target)
        source = root / f"labels_{task}" / split
        if task == "detect" and not source.is_dir() and not (root / "labels_pose").is_dir():
            source = root / "labels_segment" / split  # Ultralytics boxes polygons itself
        if task == "detect" and not source.is_dir():  # boxes are the first five columns of a pose label
            for lab in (root / "labels_pose" / split).glob("*.txt"):
                rows = [" ".join(r.split()[:5]) for r in lab.read_text().splitlines() if r.strip()]
                (dest / "labels" / split / lab.name).write_text("\n".join(rows) + ("\n" if rows else ""))
            continue
        for lab in source.glob("*.txt"):
            shutil.copyfile(lab, dest / "labels" / split / lab.name)
    return _data_yaml(dest, task)


def _data_yaml(dest: Path, task: str) -> Path:
    lines = [f"path: {dest.resolve()}", "train: images/train", "val: images/val", "names:"]
    lines += [f"  {i}: {n}" for i, n in enumerate(CLASS_NAMES)]
    if task == "pose":
        # flip_idx: a horizontal flip keeps the tip and mirrors the angular order of the corners
        lines += [f"kpt_shape: [{len(KEYPOINT_NAMES)}, 3]", "flip_idx: [0, 4, 3, 2, 1]"]
    yaml = dest / "data.yaml"
    yaml.write_text("\n".join(lines) + "\n")
    return yaml


# Tiles keep a box cut by their border when this much of it (by area) is inside, or this many
# square pixels: a piece half out of the picture is still a piece to find, but a sliver of a few
# pixels is not something to ask the network for.
CROP_KEEP_SHARE = 0.3
CROP_KEEP_PX2 = 150.0


def tile_origins(length: int, size: int) -> list[int]:
    """Where tiles of `size` start so that they cover [0, length) with equal overlaps."""
    if length <= size:
        return [0]
    n = -(-length // size)
    return [round(i * (length - size) / (n - 1)) for i in range(n)]


def crop_boxes(rows: list[tuple[int, float, float, float, float]], x0: int, y0: int, size: int
               ) -> list[tuple[int, float, float, float, float]]:
    """Pixel boxes (class, x0, y0, x1, y1) of a frame -> those of the tile at (x0, y0), in tile pixels."""
    out = []
    for c, a0, b0, a1, b1 in rows:
        u0, v0 = max(a0, x0) - x0, max(b0, y0) - y0
        u1, v1 = min(a1, x0 + size) - x0, min(b1, y0 + size) - y0
        if u1 <= u0 or v1 <= v0:
            continue
        area, whole = (u1 - u0) * (v1 - v0), (a1 - a0) * (b1 - b0)
        if area >= CROP_KEEP_PX2 or area >= CROP_KEEP_SHARE * whole:
            out.append((c, u0, v0, u1, v1))
    return out


def write_crops(root: Path, split: str, dest: Path, size: int) -> int:
    """Cut every frame of a split into tiles at native scale, with their detect labels.

    Why: the pieces are 15-40 px, so training must not shrink frames; training on tiles of full
    frames keeps every piece's pixel size while the network sees a quarter of the pixels per
    step, which makes training on a CPU several times cheaper. The detector is fully
    convolutional, so weights trained on tiles predict on whole frames unchanged."""
    import cv2

    (dest / "images" / split).mkdir(parents=True, exist_ok=True)
    (dest / "labels" / split).mkdir(parents=True, exist_ok=True)
    n = 0
    for img_path in sorted((root / "images" / split).glob("*.jpg")):
        img = cv2.imread(str(img_path))
        if img is None:
            raise ValueError(f"{img_path}: not a readable image")
        h, w = img.shape[:2]
        rows = []
        lab = root / "labels_detect" / split / f"{img_path.stem}.txt"
        for line in lab.read_text().splitlines() if lab.is_file() else []:
            c, cx, cy, bw, bh = line.split()[:5]
            cx, cy, bw, bh = float(cx) * w, float(cy) * h, float(bw) * w, float(bh) * h
            rows.append((int(c), cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2))
        for y0 in tile_origins(h, size):
            for x0 in tile_origins(w, size):
                name = f"{img_path.stem}_{x0}_{y0}"
                cv2.imwrite(str(dest / "images" / split / f"{name}.jpg"), img[y0:y0 + size, x0:x0 + size],
                            [cv2.IMWRITE_JPEG_QUALITY, 95])
                tw, th = min(size, w - x0), min(size, h - y0)
                text = [f"{c} {(u0 + u1) / 2 / tw:.6f} {(v0 + v1) / 2 / th:.6f} {(u1 - u0) / tw:.6f} {(v1 - v0) / th:.6f}"
                        for c, u0, v0, u1, v1 in crop_boxes(rows, x0, y0, size)]
                (dest / "labels" / split / f"{name}.txt").write_text("\n".join(text) + ("\n" if text else ""))
                n += 1
    return n
