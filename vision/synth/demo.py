"""The bundled demo: a game table (vision/data/demo_table.json) and its recording
(vision/data/demo.db3), both made by `zendo record --demo` and identical on every run."""
from __future__ import annotations

from pathlib import Path


from zendo import build
from zendo.build import Spec
from zendo.scene import Scene, Stone, validate

DEMO_SEED = 2024
DEMO_FRAMES = 12  # 12 frames at 640x480 (2 s at 6 fps): about 9 MB (the recorder compresses frames)
DEMO_FPS = 6
DEMO_CAMERA = {"height_mm": 470.0, "tilt_deg": 25.0}


def demo_table() -> Scene:
    """Five koans; marking stones beside two; koan k2 is a judgment call (a 0.3 mm gap)."""
    k1 = build.tower([Spec("a", "red", "large"), Spec("b", "yellow", "medium"), Spec("c", "blue", "small")],
                     (-120.0, 45.0), 10.0)
    g = build.upright(Spec("d", "green", "large"), (0.0, 70.0), 0.0)
    k2 = [g, build.beside(g, Spec("e", "black", "small"), heading=0.0, gap=0.3)]
    y = build.upright(Spec("f", "yellow", "large"), (120.0, 40.0), 25.0)
    k3 = [y, build.pointing_at(y, Spec("g", "blue", "medium"), distance=30.0, from_heading=200.0)]
    t = build.upright(Spec("h", "green", "medium"), (-70.0, -60.0), 0.0)
    k4 = [t, build.lean_against(t, Spec("i", "red", "small"), from_heading=30.0),
          build.flat(Spec("j", "black", "large"), (-100.0, -72.0), 250.0)]
    k5 = build.tower([Spec("k", "yellow", "small"), Spec("l", "blue", "large")], (60.0, -55.0), 40.0)
    pieces = k1 + k2 + k3 + k4 + k5
    stones = (Stone("s1", "white", (-120.0, 0.0, 0.0)), Stone("s2", "black", (165.0, 40.0, 0.0)))
    koans = [{"id": f"k{i}", "pieces": [p.id for p in grp]} for i, grp in enumerate([k1, k2, k3, k4, k5], 1)]
    scene = Scene(tuple(pieces), stones, {"koans": koans, "note": "k2: e and d are 0.3 mm apart (a judgment call)"})
    validate(scene)
    return scene


def write_demo(data_dir: Path) -> tuple[Path, Path, int]:
    """Write demo_table.json and demo.db3 (+ demo.truth.json) into data_dir."""
    import json


    from .appearance import Appearance
    from .camera import CameraPose, color_intrinsics
    from .recording import write_recording
    from .render import render

    scene = demo_table()
    data_dir.mkdir(parents=True, exist_ok=True)
    table_path = data_dir / "demo_table.json"
    doc = scene.to_dict() | {"koans": scene.extra["koans"], "note": scene.extra["note"]}
    table_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    pose = CameraPose.looking_at(DEMO_CAMERA["height_mm"], DEMO_CAMERA["tilt_deg"])
    intr = color_intrinsics(640, 480)
    app = Appearance(table="wood", table_rgb=(170, 120, 75), texture_seed=7, light_dir=(0.35, -0.25, 0.9))
    renders = (render(scene, pose, intr, seed=[DEMO_SEED, i], appearance=app, raw_depth=True) for i in range(DEMO_FRAMES))
    first = render(scene, pose, intr, seed=[DEMO_SEED, 0], appearance=app, raw_depth=False)
    truth = first.truth(scene) | {"seed": DEMO_SEED, "frames": DEMO_FRAMES, "fps": DEMO_FPS,
                                  "command": "zendo record --demo"}
    rec = data_dir / "demo.db3"
    n = write_recording(rec, renders, fps=DEMO_FPS, truth=truth)
    return table_path, rec, n
