"""Tracking measured against ground truth: recordings of still tables, scored frame by frame.

Why apart from `zendo eval`: that scores one frame of a table, which is what a koan is marked
from; the Master and the students see the tracked table, frame after frame. What goes wrong
there is not a frame's reading but what the tracker makes of a stream of them: a piece read in
one frame only (a phantom) shown on the table and, where it joins a marked koan, raising katsu
with nothing touched; a piece missed once renamed when it comes back; a koan that never
settles. A rendered table stands still, so every katsu and every id change is a false one.

Data: `.db3` recordings with their `.truth.json` (`zendo eval-tracking --make DIR`, or `zendo
record --random N`), read through the same `rs.pipeline` + `rs.align` path a camera is.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from zendo.game import Game
from zendo.scene import scene_from_dict

from .eval import MIN_VISIBLE_PX, TruthError, _pct, _shown, match, to_truth_frame

MARK_AT_MS = 1500.0  # when the Master marks every koan on the table: once it has settled (PipelineConfig.settle_s)
TRACK_SEED = 500000  # no training or evaluation set was drawn from 500000- (models/MODEL_CARD.md)


def write_tracking_set(out: str | Path, n: int, seed: int = TRACK_SEED, frames: int = 20, fps: int = 6,
                       progress: bool = True) -> Path:
    """n recordings of still random tables (1-8 koans; the camera 550-700 mm up, tilted 25-40
    degrees), `frames` frames each with fresh sensor noise, written as `zendo record` writes
    them (.db3 with <name>.truth.json beside it)."""
    from .synth import Appearance, CameraPose, color_intrinsics, random_table, render
    from .synth.recording import write_recording

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = range(seed, seed + n)
    if progress:
        from tqdm import tqdm

        seeds = tqdm(seeds, desc="record", unit="table", leave=False)
    for s in seeds:
        rng = np.random.default_rng([s, 0x7EAC])
        scene = random_table(rng, int(rng.integers(1, 9)))
        pose = CameraPose.looking_at(float(rng.uniform(550, 700)), float(rng.uniform(25, 40)))
        intr = color_intrinsics(640, 480)
        app = Appearance.sample(rng)
        renders = (render(scene, pose, intr, seed=[s, i], appearance=app, raw_depth=True) for i in range(frames))
        truth = render(scene, pose, intr, seed=[s, 0], appearance=app).truth(scene) | {
            "seed": s, "frames": frames, "fps": fps}
        write_recording(out / f"{s:06d}.db3", renders, fps=fps, truth=truth)
    (out / "README.txt").write_text(f"zendo eval-tracking --make {out} --n {n} --seed {seed} --frames {frames} --fps {fps}\n")
    return out


def read_recording_truth(path: Path) -> dict:
    """<name>.truth.json beside a recording, checked as far as scoring reads it."""
    from .synth.recording import truth_path

    tp = truth_path(path)
    try:
        truth = json.loads(Path(tp).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        raise TruthError(f"{tp}: no truth file beside {path.name} (or not JSON)") from None
    if not isinstance(truth, dict) or not {"scene", "objects", "camera_to_table"} <= truth.keys():
        raise TruthError(f"{tp}: not a recording's truth (needs scene, objects, camera_to_table)")
    return truth


class StreamScore:
    """One recording's tallies, frame by frame: what the tracked table showed against the truth,
    and, beside it, what each frame alone read (what the tracker was given)."""

    def __init__(self, truth: dict):
        self.truth = truth
        self.pieces = list(scene_from_dict(truth["scene"], check_geometry=False).pieces)
        visible = {o["id"]: o["visible_px"] for o in truth["objects"] if o["kind"] == "piece"}
        self.visible = [visible.get(p.id, 0) >= MIN_VISIBLE_PX for p in self.pieces]
        self.cam = np.asarray(truth["camera_to_table"], float)
        self.t = Counter()
        self.last_track: dict[int, str] = {}  # truth index -> the track id it was last shown as
        self.settled_ms: dict[str, float] = {}
        self.game = Game("eval-tracking", clock=lambda: 0.0)  # the dashboard's game, fed the tracked table
        self.marked = False

    def add(self, result, perceived_cal: np.ndarray) -> None:
        t = self.t
        t["frames"] += 1
        t["visible"] += sum(self.visible)
        for key, scene in (("shown", result.tracked), ("read", result.scene)):
            pred = to_truth_frame(scene, perceived_cal, self.cam)
            pairs = match(pred, self.pieces)
            t[f"{key}_pieces"] += len(pred.pieces)
            t[f"{key}_extra"] += len(pred.pieces) - len(pairs)
            t[f"{key}_found"] += sum(1 for _, j, _ in pairs if self.visible[j])
            t[f"{key}_class_ok"] += sum(1 for i, j, _ in pairs if (pred.pieces[i].color, pred.pieces[i].size)
                                        == (self.pieces[j].color, self.pieces[j].size))
            t[f"{key}_paired"] += len(pairs)
            if key == "shown":
                for i, j, _ in pairs:
                    tid = scene.pieces[i].id
                    if self.last_track.get(j, tid) != tid:
                        t["id_changes"] += 1
                    self.last_track[j] = tid
        self._play(result.tracked, result.timestamp_ms)
        for e in result.events:
            if e["event"] == "katsu":
                t["katsu"] += 1
            elif e["event"] == "settled":
                self.settled_ms.setdefault(e["koan"], result.timestamp_ms)

    def _play(self, tracked, t_ms: float) -> None:
        """The tracked table into the game as the dashboard's feed gives it; on the first frame
        from MARK_AT_MS on, the Master marks every koan on it. A still table: every katsu after
        is false."""
        events = self.game.observe(tracked)
        if self.marked:
            self.t["game_katsu"] += sum(1 for e in events if e.type == "katsu")
            self.t["game_frames_marked"] += 1
        elif t_ms >= MARK_AT_MS:
            for k in self.game.active_koans():
                self.game.mark(k.id, "white")
            self.marked = True

    def tallies(self) -> dict:
        return {**self.t, "katsu": self.t["katsu"], "settled": len(self.settled_ms),
                "koans": len(self.truth["scene"].get("koans", [])) or None,
                "first_settled_ms": min(self.settled_ms.values(), default=None)}


def score_recording(pipeline, path: Path, truth: dict) -> dict:
    """A recording read by `pipeline` from its first frame (its own calibration and tracks)."""
    from .frames import RealSensePipelineSource

    pipeline.restart()
    score = StreamScore(truth)
    src = RealSensePipelineSource(path)
    try:
        for frame in src.frames():
            score.add(pipeline.process(frame), pipeline.table().matrix)
    finally:
        src.close()
    return score.tallies()


def summarise(per: list[dict]) -> dict:
    """Pooled figures: per 100 frames where a stream's length is arbitrary, shares otherwise."""
    tot = Counter()
    for p in per:
        tot.update({k: v for k, v in p.items() if isinstance(v, (int, float)) and v is not None and k != "first_settled_ms"})
    frames = tot["frames"]
    settled = [p["first_settled_ms"] for p in per if p["first_settled_ms"] is not None]
    return {
        "recordings": len(per), "frames": frames,
        "shown": {"extra_per_100_frames": _pct(tot["shown_extra"], frames),
                  "recall_visible": _pct(tot["shown_found"], tot["visible"]),
                  "precision": _pct(tot["shown_pieces"] - tot["shown_extra"], tot["shown_pieces"]),
                  "colour_size": _pct(tot["shown_class_ok"], tot["shown_paired"])},
        "read": {"extra_per_100_frames": _pct(tot["read_extra"], frames),
                 "recall_visible": _pct(tot["read_found"], tot["visible"]),
                 "precision": _pct(tot["read_pieces"] - tot["read_extra"], tot["read_pieces"]),
                 "colour_size": _pct(tot["read_class_ok"], tot["read_paired"])},
        "id_changes": tot["id_changes"],
        "false_katsu": tot["katsu"],
        "recordings_with_false_katsu": sum(1 for p in per if p["katsu"]),
        "game_false_katsu": tot["game_katsu"],
        "game_recordings_with_false_katsu": sum(1 for p in per if p.get("game_katsu")),
        "recordings_settled": len(settled),
        "first_settled_ms_median": float(np.median(settled)) if settled else None,
        "per_recording": per,
    }


def run_track_eval(recordings: list[Path], *, weights=None, device: str | None = None, conf: float = 0.25,
                   classifier: str | Path | None = "default", confirm_frames: int | None = None,
                   lost_ms: float = 0.0, progress: bool = True) -> dict:
    """Every recording read from its first frame by one pipeline (fresh calibration and tracks
    for each) and scored frame by frame."""
    from dataclasses import replace

    from .classify import load_classifier
    from .detect import DEFAULT_WEIGHTS, Detector
    from .pipeline import Pipeline, PipelineConfig

    truths = [read_recording_truth(p) for p in recordings]
    det = Detector(weights or DEFAULT_WEIGHTS, device=device, conf=conf)
    cls = load_classifier(None if classifier == "default" else classifier) if classifier else None
    cfg = PipelineConfig(conf=conf, lost_ms=lost_ms)
    if confirm_frames is not None:
        cfg = replace(cfg, confirm_frames=confirm_frames)
    pipe = Pipeline(det, cfg=cfg, classifier=cls)
    items = zip(recordings, truths)
    if progress:
        from tqdm import tqdm

        items = tqdm(list(items), desc="eval-tracking", unit="recording", leave=False)
    per = [{"recording": p.name, **score_recording(pipe, p, t)} for p, t in items]
    out = summarise(per)
    out["confirm_frames"] = cfg.confirm_frames
    out["confirm_at_rest_frames"] = cfg.confirm_at_rest_frames
    out["lost_frames"] = cfg.lost_frames
    out["lost_at_rest_frames"] = cfg.lost_at_rest_frames
    out["lost_ms"] = cfg.lost_ms
    out["weights"] = _shown(det.weights)
    out["classifier"] = _shown(cls.weights) if cls is not None else None
    out["marked_at_ms"] = MARK_AT_MS
    return out


def format_table(s: dict) -> str:
    """The figures as a person reads them."""
    rows = [f"{s['recordings']} recordings, {s['frames']} frames; a new piece shown from sighting "
            f"{s['confirm_frames']} ({s.get('confirm_at_rest_frames', '-')} by a piece at rest), dropped after "
            f"{s['lost_frames']} frames unseen ({s.get('lost_at_rest_frames', '-')} at rest)",
            f"{'':24}{'shown (tracked)':>18}{'read (one frame)':>18}"]
    for key, label in (("extra_per_100_frames", "extra pieces / 100 fr."), ("recall_visible", "recall, visible %"),
                       ("precision", "precision %"), ("colour_size", "colour x size %")):
        rows.append(f"{label:24}{str(s['shown'][key]):>18}{str(s['read'][key]):>18}")
    rows.append(f"id changes of a piece: {s['id_changes']}; false katsu: tracker {s['false_katsu']} "
                f"(in {s['recordings_with_false_katsu']} recordings), game {s['game_false_katsu']} "
                f"(in {s['game_recordings_with_false_katsu']})")
    rows.append(f"settled: {s['recordings_settled']} of {s['recordings']} recordings, first koan settled at "
                f"{s['first_settled_ms_median']} ms (median)")
    return "\n".join(rows)
