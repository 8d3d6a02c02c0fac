"""Colour balance measured on the table top.

Why the table: it is the one surface that is always in view, large, and of one colour, so the
ratio between its measured colour and its reference says how the light and the camera's white
balance tint everything else. Gains are per channel and scale the image so the table comes out
as its reference (neutral grey by default).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ColorBalance:
    """Per-channel gains (R, G, B) and the table's measured mean colour."""

    gains: tuple[float, float, float] = (1.0, 1.0, 1.0)
    table_rgb: tuple[float, float, float] = (128.0, 128.0, 128.0)

    def apply(self, rgb: np.ndarray) -> np.ndarray:
        out = rgb.astype(np.float32) * np.asarray(self.gains, dtype=np.float32)
        return np.clip(out, 0, 255).astype(np.uint8)

    def to_dict(self) -> dict:
        return {"gains": list(self.gains), "table_rgb": list(self.table_rgb)}

    @classmethod
    def from_dict(cls, d: dict) -> "ColorBalance":
        return cls(tuple(float(v) for v in d["gains"]), tuple(float(v) for v in d.get("table_rgb", (128, 128, 128))))


def measure(rgb: np.ndarray, table_mask: np.ndarray, reference=None) -> ColorBalance:
    """Gains that turn the table's mean colour into `reference` (default: its own grey level)."""
    px = rgb[table_mask].astype(np.float64)
    if len(px) < 100:
        return ColorBalance()
    # robust mean: drop the brightest and darkest tenth (highlights, shadows, stray pieces)
    lum = px.sum(axis=1)
    lo, hi = np.quantile(lum, [0.1, 0.9])
    px = px[(lum >= lo) & (lum <= hi)]
    mean = px.mean(axis=0)
    ref = np.full(3, mean.mean()) if reference is None else np.asarray(reference, dtype=float)
    gains = ref / np.maximum(mean, 1.0)
    return ColorBalance(tuple(round(float(g), 4) for g in gains), tuple(round(float(v), 2) for v in mean))
