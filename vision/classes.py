"""The detector's classes: pyramid colour x size (colour-major), then stones.

Ids 0..14 are the Rainbow pyramids (red_small, red_medium, red_large, yellow_small, ...), ids
15..17 the stones (white, black, green). Data sets, the detector and the pipeline all use this list.
"""
from __future__ import annotations

from zendo.pieces import RAINBOW_COLORS, SIZES

PYRAMID_CLASSES: tuple[str, ...] = tuple(f"{c}_{s}" for c in RAINBOW_COLORS for s in SIZES)
STONE_CLASSES: tuple[str, ...] = ("stone_white", "stone_black", "stone_green")
CLASS_NAMES: tuple[str, ...] = PYRAMID_CLASSES + STONE_CLASSES
CLASS_ID: dict[str, int] = {name: i for i, name in enumerate(CLASS_NAMES)}

#: Keypoints of a pyramid label, in this order (YOLO-pose kpt_shape [5, 3]).
KEYPOINT_NAMES: tuple[str, ...] = ("tip", "corner0", "corner1", "corner2", "corner3")


def piece_class(color: str, size: str) -> int | None:
    """Class id of a pyramid, or None for a colour the detector does not know (Xeno colours)."""
    return CLASS_ID.get(f"{color}_{size}")


def stone_class(color: str) -> int | None:
    return CLASS_ID.get(f"stone_{color}")
