"""`zendo calibrate --source ...`: measure the table plane and colour balance, save them per camera."""
from __future__ import annotations

import click


@click.command()
@click.option("--source", required=True, help="'realsense', 'demo', a .db3 recording or a render folder.")
@click.option("--camera-id", default=None, help="Name of the file to save (default: from the source).")
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False), help="Save here instead.")
def calibrate(source: str, camera_id: str | None, out_path: str | None) -> None:
    """Find the table plane (camera-to-table transform) and colour balance; print and save them."""
    from pathlib import Path

    from vision.frames import FrameSourceError, open_source
    from zendo.cli import UserError, emit

    from . import store
    from .color import measure
    from .plane import CalibrationError, fit_table

    try:
        src = open_source(source)
        try:
            frame = next(iter(src.frames()), None)
        finally:
            src.close()
        if frame is None:
            raise UserError(f"{source}: no frames")
        table, mask = fit_table(frame)
        cam = camera_id or (Path(source).name if Path(source).exists() else source)
        cal = store.Calibration(cam, frame.intrinsics, table, measure(frame.color, mask))
        path = store.save(cal, out_path)
    except (FrameSourceError, CalibrationError, OSError) as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    emit(cal.to_dict() | {"saved": str(path)})


def register(group: click.Group) -> None:
    group.add_command(calibrate)
