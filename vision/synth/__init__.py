"""The synthetic world: a known table rendered as a RealSense D435 would see it.

- `render(scene, camera, intrinsics, seed, appearance)` -> `Render` (colour, depth, mask, labels)
- `CameraPose.looking_at(height_mm, tilt_deg, target, yaw_deg)`, `color_intrinsics`, `depth_intrinsics`
- `random_table(rng, n_koans)` -> a valid `Scene` of koans and marking stones
- `write_recording(...)` -> a RealSense `.db3` recording (vision.synth.recording)
"""
from .appearance import Appearance, TABLE_KINDS
from .camera import CameraPose, color_intrinsics, depth_intrinsics
from .render import ObjectLabel, Render, depth_rms_mm, render
from .tables import random_table

__all__ = [
    "Appearance", "TABLE_KINDS", "CameraPose", "color_intrinsics", "depth_intrinsics",
    "ObjectLabel", "Render", "depth_rms_mm", "render", "random_table",
]
