"""`zendo render`, `zendo record`, `zendo dataset`: the synthetic world from the command line."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from zendo.cli import UserError, emit, friendly
from zendo.scene import MAX_COORDINATE_MM


def _camera_json(intr) -> dict:
    """Only what a real camera reports."""
    return {"width": intr.width, "height": intr.height, "fx": intr.fx, "fy": intr.fy, "ppx": intr.ppx,
            "ppy": intr.ppy, "depth_units": intr.depth_scale_mm / 1000.0}


def _check_camera(width, height, camera_height, tilt):
    if width < 16 or height < 16 or width > 4096 or height > 4096:
        raise UserError(f"image size {width}x{height} is out of range")
    if not 150 <= camera_height <= 3000:
        raise UserError(f"--camera-height {camera_height} mm is out of range (150-3000; a D435 sees from 170 mm)")
    if not 0 <= tilt < 80:
        raise UserError(f"--tilt {tilt} is out of range (0-80 degrees from vertical)")


def _table_centre(scene) -> tuple[float, float, float]:
    """The middle of what is on the table: where a person would point the camera."""
    import numpy as np

    pts = [p.position for p in scene.pieces] + [st.position for st in scene.stones]
    if not pts:
        return (0.0, 0.0, 0.0)
    lo, hi = np.min(pts, axis=0), np.max(pts, axis=0)
    return (float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, 0.0)


def _parse_xy(text: str) -> tuple[float, float, float]:
    try:
        x, y = (float(v) for v in text.split(","))
    except ValueError:
        raise UserError(f"--target must be two numbers 'X,Y' in mm, got {text!r}") from None
    if not (abs(x) <= MAX_COORDINATE_MM and abs(y) <= MAX_COORDINATE_MM):  # also refuses nan and inf
        raise UserError(f"--target must be two finite numbers within {MAX_COORDINATE_MM:,.0f} mm, got {text!r}")
    return (x, y, 0.0)


def register(group: click.Group) -> None:
    @group.command()
    @click.argument("scene_path", metavar="SCENE.json")
    @click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write.")
    @click.option("--width", type=int, default=640, show_default=True)
    @click.option("--height", type=int, default=480, show_default=True)
    @click.option("--camera-height", type=float, default=600.0, show_default=True, help="mm above the table.")
    @click.option("--tilt", type=float, default=30.0, show_default=True, help="Degrees from looking straight down.")
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
    @click.option("--target", default=None, metavar="X,Y",
                  help="Table point to look at (mm); default: the centre of the table's pieces and stones.")
    @friendly
    def render(scene_path, out_dir, width, height, camera_height, tilt, seed, target):
        """Render SCENE.json as a RealSense D435 sees it: color.png, depth.png, mask.png, camera.json, truth.json."""
        import cv2

        from zendo.scene import load_scene

        from .synth import CameraPose, color_intrinsics
        from .synth import render as do_render

        _check_camera(width, height, camera_height, tilt)
        scene = load_scene(scene_path)
        intr = color_intrinsics(width, height)
        aim = _table_centre(scene) if target is None else _parse_xy(target)
        r = do_render(scene, CameraPose.looking_at(camera_height, tilt, target=aim), intr, seed=seed)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(out / "color.png"), r.color[..., ::-1])
        cv2.imwrite(str(out / "depth.png"), r.depth)
        cv2.imwrite(str(out / "mask.png"), r.mask)
        (out / "camera.json").write_text(json.dumps(_camera_json(intr), indent=2) + "\n")
        truth = r.truth(scene) | {"camera": {"height_mm": camera_height, "tilt_deg": tilt}, "seed": seed}
        (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        emit({"out": str(out), "objects": len(r.objects), "visible": sum(o.visible_px > 0 for o in r.objects)})

    @group.command()
    @click.argument("scene_path", metavar="SCENE.json", required=False)
    @click.option("--random", "n_koans", type=int, default=None, help="Record a random table of N koans instead.")
    @click.option("--demo", is_flag=True, help="Rebuild the bundled demo (vision/data/demo_table.json, demo.db3).")
    @click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="FILE.db3 to write.")
    @click.option("--frames", type=int, default=10, show_default=True)
    @click.option("--fps", type=click.Choice(["6", "15", "30"]), default="30", show_default=True)
    @click.option("--width", type=int, default=640, show_default=True)
    @click.option("--height", type=int, default=480, show_default=True)
    @click.option("--camera-height", type=float, default=600.0, show_default=True)
    @click.option("--tilt", type=float, default=30.0, show_default=True)
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
    @friendly
    def record(scene_path, n_koans, demo, out_path, frames, fps, width, height, camera_height, tilt, seed):
        """Write a RealSense recording (.db3) of SCENE.json or of a random table (--random N)."""
        import numpy as np
        from tqdm import tqdm

        from zendo.scene import load_scene

        from .synth import Appearance, CameraPose, color_intrinsics, random_table
        from .synth import render as do_render
        from .synth.recording import truth_path, write_recording

        if demo:
            from .frames import DATA_DIR
            from .synth.demo import write_demo

            table, rec, n = write_demo(DATA_DIR)
            emit({"scene": str(table), "recording": str(rec), "frames": n, "bytes": rec.stat().st_size})
            return
        if (scene_path is None) == (n_koans is None):
            raise UserError("give either SCENE.json or --random N (or --demo)")
        if out_path is None:
            raise UserError("--out FILE.db3 is required")
        if not out_path.endswith(".db3"):
            raise UserError(f"--out {out_path}: a RealSense recording must end in .db3")
        if not 1 <= frames <= 1000:
            raise UserError(f"--frames {frames} is out of range (1-1000)")
        if width not in (640, 848) or height != 480:
            raise UserError("recordings use the D435's 640x480 or 848x480 modes")
        _check_camera(width, height, camera_height, tilt)
        rng = np.random.default_rng(seed)
        if n_koans is not None:
            if not 1 <= n_koans <= 12:
                raise UserError(f"--random {n_koans}: the number of koans must be 1-12")
            scene = random_table(rng, n_koans)
        else:
            scene = load_scene(scene_path)
        pose = CameraPose.looking_at(camera_height, tilt)
        intr = color_intrinsics(width, height)
        app = Appearance.sample(rng)
        renders = (do_render(scene, pose, intr, seed=[seed, i], appearance=app, raw_depth=True)
                   for i in tqdm(range(frames), desc="record", unit="frame"))
        truth = do_render(scene, pose, intr, seed=[seed, 0], appearance=app).truth(scene) | {
            "seed": seed, "frames": frames, "fps": int(fps), "command": " ".join(["zendo"] + sys.argv[1:])}
        n = write_recording(out_path, renders, fps=int(fps), truth=truth)
        emit({"recording": out_path, "truth": str(truth_path(out_path)), "frames": n, "bytes": Path(out_path).stat().st_size})

    @group.command()
    @click.option("--n", "n", type=click.IntRange(1, 1_000_000), required=True, help="Number of images.")
    @click.option("--seed", type=click.IntRange(min=0), required=True, help="Seed of this split (train and test need different seeds).")
    @click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
    @click.option("--split", type=click.Choice(["train", "val", "test"]), default="train", show_default=True)
    @click.option("--width", type=int, default=640, show_default=True)
    @click.option("--height", type=int, default=480, show_default=True)
    @click.option("--format", "image_format", type=click.Choice(["jpg", "png"]), default="jpg", show_default=True)
    @click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True)
    @friendly
    def dataset(n, seed, out_dir, split, width, height, image_format, workers):
        """Random tables rendered as YOLO images + labels (boxes, keypoints) + ground truth."""
        from .synth.dataset import write_dataset

        if width < 64 or height < 64 or width > 4096 or height > 4096:
            raise UserError(f"image size {width}x{height} is out of range")
        emit(write_dataset(out_dir, n, seed, split=split, width=width, height=height, image_format=image_format,
                           workers=max(1, min(workers, n, os.cpu_count() or 1)), command=" ".join(["zendo"] + sys.argv[1:])))
