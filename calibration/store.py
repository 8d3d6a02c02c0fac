"""Calibration files, one per camera: JSON under the user's config folder (or a path given).

Why per camera: each RealSense has its own factory intrinsics and stands in its own place, so a
file named after its serial (or 'synthetic' for render folders) survives swapping cameras.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from vision.frames import Intrinsics

from .color import ColorBalance
from .plane import CalibrationError, TableCalibration

FORMAT = "zendo-calibration/1"


def calibration_dir() -> Path:
    base = os.environ.get("ZENDO_CALIBRATION_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "zendo" / "calibration"


def path_for(camera_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", camera_id) or "default"
    return calibration_dir() / f"{safe}.json"


@dataclass(frozen=True)
class Calibration:
    """Everything perception needs to know about one camera standing over one table."""

    camera_id: str
    intrinsics: Intrinsics
    table: TableCalibration
    color: ColorBalance = field(default_factory=ColorBalance)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "camera_id": self.camera_id, "intrinsics": self.intrinsics.to_dict(),
                "table": self.table.to_dict(), "color": self.color.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise CalibrationError(f"not a {FORMAT} file")
        try:
            return cls(str(d["camera_id"]), Intrinsics.from_dict(d["intrinsics"]), TableCalibration.from_dict(d["table"]),
                       ColorBalance.from_dict(d.get("color", {"gains": [1, 1, 1]})))
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"malformed calibration ({exc.__class__.__name__}: {exc})") from None


def save(cal: Calibration, path: str | Path | None = None) -> Path:
    path = Path(path) if path else path_for(cal.camera_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cal.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def load(path_or_camera: str | Path) -> Calibration:
    """Load from a file path, or by camera id from the calibration folder."""
    path = Path(path_or_camera)
    if not path.suffix == ".json":
        path = path_for(str(path_or_camera))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"{path}: no calibration file (run `zendo calibrate --source ...`)") from None
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, or bytes that are not UTF-8
        raise CalibrationError(f"{path}: unreadable calibration ({exc.__class__.__name__})") from None
    try:
        return Calibration.from_dict(data)
    except CalibrationError as exc:
        raise CalibrationError(f"{path}: {exc}") from None
