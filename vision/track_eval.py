"""Tracking measured against ground truth: recordings of still tables, scored frame by frame.

Why apart from `zendo eval`: that scores one frame of a table, which is what a koan is marked
from; the Master and the students see the tracked table, frame after frame. What goes wrong
there is not a frame's reading but what the tracker makes of a stream of them: a piece read in
one frame only (a phantom) shown on the table and, where it joins a marked koan, raising katsu
with nothing touched; a piece missed once renamed when it comes back; a koan that never
settles. A rendered table stands still, so every katsu and every id change is a false one.

With hands (`--make DIR --hands`): in each recording a hand reaches over one koan after it was
marked and either passes over it (no katsu may follow) or knocks a piece, takes one away or puts
one beside it (a katsu on that koan must follow, saying what changed). Those recordings measure
what the still ones cannot: how soon a real change is raised, whether the Master is told the
right thing, and what a hand in view costs (phantoms on it, pieces under it lost).

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
from .matching import class_penalty, pairs_within_reach

MARK_AT_MS = 1500.0  # when the Master marks every koan on the table: once it has settled (PipelineConfig.settle_s)
TRACK_SEED = 500000  # no training or evaluation set was drawn from 500000- (models/MODEL_CARD.md)


# a piece in a katsu's after picture this near one of its class in the before picture is that one, unmoved
WHERE_IT_WAS_MM = 6.0
HAND_AT_S = 3.0  # when the hand comes in: the koans were marked at MARK_AT_MS and have stood since
HAND_MIN_FRAMES_S = 8.0  # a recording with a hand runs at least this long: the change must have time to show


def write_tracking_set(out: str | Path, n: int, seed: int = TRACK_SEED, frames: int = 20, fps: int = 6,
                       progress: bool = True, hands: bool = False) -> Path:
    """n recordings of still random tables (1-8 koans; the camera 550-700 mm up, tilted 25-40
    degrees), `frames` frames each with fresh sensor noise, written as `zendo record` writes
    them (.db3 with <name>.truth.json beside it). With `hands`, a hand reaches over one koan at
    HAND_AT_S (vision.synth.hands.plan_visit); the truth then also holds the visit and the table
    after it."""
    from .synth import Appearance, CameraPose, color_intrinsics, random_table, render
    from .synth.hands import plan_visit
    from .synth.recording import write_recording

    if hands and frames < HAND_MIN_FRAMES_S * fps:
        raise ValueError(f"a recording with a hand needs at least {int(HAND_MIN_FRAMES_S * fps)} frames at {fps} fps")

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
        truth = render(scene, pose, intr, seed=[s, 0], appearance=app).truth(scene) | {
            "seed": s, "frames": frames, "fps": fps}
        if hands:
            visit = plan_visit(scene, rng, fps, HAND_AT_S)
            after = render(visit.after, pose, intr, seed=[s, 0], appearance=app).truth(visit.after)
            truth |= {"hand": visit.to_dict(), "after": {"scene": after["scene"], "objects": after["objects"]}}
            renders = (render(visit.scene_at(scene, i), pose, intr, seed=[s, i], appearance=app, raw_depth=True,
                              props=visit.props_at(i)) for i in range(frames))
        else:
            renders = (render(scene, pose, intr, seed=[s, i], appearance=app, raw_depth=True) for i in range(frames))
        write_recording(out / f"{s:06d}.db3", renders, fps=fps, truth=truth)
    (out / "README.txt").write_text(f"zendo eval-tracking --make {out} --n {n} --seed {seed} --frames {frames} --fps {fps}"
                                    f"{' --hands' if hands else ''}\n")
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


class _Truth:
    """The true table of one stretch of a recording: its pieces and which show enough to count."""

    def __init__(self, part: dict):
        self.pieces = list(scene_from_dict(part["scene"], check_geometry=False).pieces)
        visible = {o["id"]: o["visible_px"] for o in part["objects"] if o["kind"] == "piece"}
        self.visible = [visible.get(p.id, 0) >= MIN_VISIBLE_PX for p in self.pieces]


class StreamScore:
    """One recording's tallies, frame by frame: what the tracked table showed against the truth,
    and, beside it, what each frame alone read (what the tracker was given).

    Katsu, the tracker's and the game's: on a still table all are false. Where a hand changed a
    koan (truth "hand"), the first katsu on that koan from the change on is the true one: its
    delay is counted from the frame the change happened in, and what it shows the Master (a
    piece gone, one more, or the same pieces moved) is checked against what the hand did. Every
    other katsu is false. Where a false alert is still open on that koan when the change comes,
    the alert's first update after it (the game's "katsu_changed") is what tells the Master. A
    koan is known as "that koan" by the tracked pieces paired with its true pieces when the
    Master marked."""

    def __init__(self, truth: dict):
        self.truth = truth
        self.before = _Truth(truth)
        self.after = _Truth(truth["after"]) if "after" in truth else None
        self.hand = truth.get("hand")
        self.fps = float(truth.get("fps") or 6)
        self.cam = np.asarray(truth["camera_to_table"], float)
        self.t = Counter()
        self.last_track: dict[tuple[bool, int], str] = {}  # (after?, truth index) -> the track id it was last shown as
        self.settled_ms: dict[str, float] = {}
        self.now_s = 0.0  # the recording's clock: the game tells a hand's katsu by how long ago it came
        self.game = Game("eval-tracking", clock=lambda: self.now_s)  # the dashboard's game, fed the tracked table
        self.marked = False
        self.target_tracks: set[str] = set()  # tracked ids of the hand's koan when the Master marked
        self.true_katsu: dict[str, dict] = {}  # "game"/"tracker" -> the first katsu on the hand's koan after the change

    def _change_ms(self) -> float | None:
        if not self.hand or self.hand["change"] == "pass":
            return None
        return self.hand["change_frame"] * 1000.0 / self.fps

    def _truth_at(self, t_ms: float) -> tuple[_Truth, bool]:
        if self.after is not None and self.hand and round(t_ms * self.fps / 1000.0) >= self.hand["change_frame"]:
            return self.after, True
        return self.before, False

    def add(self, result, perceived_cal: np.ndarray) -> None:
        t = self.t
        t["frames"] += 1
        truth, later = self._truth_at(result.timestamp_ms)
        t["visible"] += sum(truth.visible)
        shown_pairs: list = []
        for key, scene in (("shown", result.tracked), ("read", result.scene)):
            pred = to_truth_frame(scene, perceived_cal, self.cam)
            pairs = match(pred, truth.pieces)
            t[f"{key}_pieces"] += len(pred.pieces)
            t[f"{key}_extra"] += len(pred.pieces) - len(pairs)
            t[f"{key}_found"] += sum(1 for _, j, _ in pairs if truth.visible[j])
            t[f"{key}_class_ok"] += sum(1 for i, j, _ in pairs if (pred.pieces[i].color, pred.pieces[i].size)
                                        == (truth.pieces[j].color, truth.pieces[j].size))
            t[f"{key}_paired"] += len(pairs)
            if key == "shown":
                shown_pairs = [(scene.pieces[i].id, truth.pieces[j].id) for i, j, _ in pairs]
                for i, j, _ in pairs:
                    tid = scene.pieces[i].id
                    if self.last_track.get((later, j), tid) != tid:
                        t["id_changes"] += 1
                    self.last_track[(later, j)] = tid
        self._play(result.tracked, result.timestamp_ms, shown_pairs)
        for e in result.events:
            if e["event"] == "katsu":
                t["katsu"] += 1
                if self._is_true(e["pieces"], "tracker", result.timestamp_ms, e):
                    t["katsu_true"] += 1
            elif e["event"] == "settled":
                self.settled_ms.setdefault(e["koan"], result.timestamp_ms)

    def _is_true(self, pieces, who: str, t_ms: float, what: dict) -> bool:
        """The first katsu of `who` on the hand's koan from the change on (the one that counts)."""
        change_ms = self._change_ms()
        if change_ms is None or who in self.true_katsu or t_ms < change_ms or not set(pieces) & self.target_tracks:
            return False
        self.true_katsu[who] = {"ms": t_ms, **what}
        return True

    def _play(self, tracked, t_ms: float, pairs: list[tuple[str, str]]) -> None:
        """The tracked table into the game as the dashboard's feed gives it; on the first frame
        from MARK_AT_MS on, the Master marks every koan on it. A katsu called to everyone counts;
        one told to the Master alone (no hand came near the koan) is counted apart, and counts
        once a hand's change calls it."""
        self.now_s = t_ms / 1000.0
        events = self.game.observe(tracked)
        if self.marked:
            for e in events:
                if e.type == "katsu" and not e.public:
                    self.t["game_katsu_master_only"] += 1
                elif e.type == "katsu" or (e.type == "katsu_changed" and e.secret.get("called")):
                    self.t["game_katsu"] += 1
                    k = self.game.koans[e.data["koan"]]
                    if self._is_true(k.piece_ids, "game", t_ms, {"katsu": e.data["katsu"]}):
                        self.t["game_katsu_true"] += 1
                elif e.type == "katsu_changed" and e.public:  # a false alert already open there shows the change
                    self._is_true(self.game.koans[e.data["koan"]].piece_ids, "game", t_ms,
                                  {"katsu": e.data["katsu"], "already_open": True})
                elif e.type == "koan_removed" and self.game.koans[e.data["koan"]].mark is not None:
                    self.t["game_marked_broken"] += 1
            self.t["game_frames_marked"] += 1
        elif t_ms >= MARK_AT_MS:
            for k in self.game.active_koans():
                self.game.mark(k.id, "white")
            self.marked = True
            if self.hand:
                mine = set(next(k["pieces"] for k in self.truth["scene"]["koans"] if k["id"] == self.hand["koan"]))
                self.target_tracks = {tid for tid, pid in pairs if pid in mine}

    def _hand_result(self) -> dict:
        """What the Master was told about the hand's change."""
        h = self.hand
        out = {"change": h["change"], "hand_ms": h["enter"] * 1000.0 / self.fps, "gone_ms": h["gone"] * 1000.0 / self.fps}
        change_ms = self._change_ms()
        if change_ms is None:
            return out
        out["change_ms"] = change_ms
        g = self.true_katsu.get("game")
        out["raised"] = g is not None
        if g is not None:
            k = next(k for k in self.game.katsu if k.id == g["katsu"])
            out["raised_after_ms"] = round(g["ms"] - change_ms, 1)
            out["open_at_end"] = k.open
            out["told"] = _what_changed(k.before, k.after)
            out["told_right"] = out["told"] == h["change"]
        tr = self.true_katsu.get("tracker")
        out["tracker_raised"] = tr is not None
        if tr is not None:
            out["tracker_raised_after_ms"] = round(tr["ms"] - change_ms, 1)
        return out

    def tallies(self) -> dict:
        counted = ("katsu", "katsu_true", "game_katsu", "game_katsu_true", "game_katsu_master_only", "game_marked_broken")
        out = {**self.t, **{k: self.t[k] for k in counted}, "settled": len(self.settled_ms),
               "koans": len(self.truth["scene"].get("koans", [])) or None,
               "first_settled_ms": min(self.settled_ms.values(), default=None)}
        if self.hand:
            out["hand"] = self._hand_result()
        return out


def _what_changed(before: list[dict], after: list[dict]) -> str:
    """A katsu as the Master sees it in its before and after pictures: a piece taken away ("take"),
    one more put down ("add"), or as many pieces with one or more moved ("knock"); "more" where
    pieces went and others came. Read from the poses, not the ids: a piece knocked far enough is
    tracked afresh under a new id, and the pictures show it moved all the same."""
    from zendo.scene import piece_from_dict

    b = [piece_from_dict(p) for p in before]
    a = [piece_from_dict(p) for p in after]
    same = pairs_within_reach([p.centroid for p in b], [p.centroid for p in a], WHERE_IT_WAS_MM,
                              1e3 * (class_penalty(b, a) > 0))
    same = [(i, j) for i, j, _ in same if (b[i].color, b[i].size) == (a[j].color, a[j].size)]
    gone, new = len(b) - len(same), len(a) - len(same)
    if gone == new:
        return "knock"
    if not new:
        return "take"
    if not gone:
        return "add"
    return "more"


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
        "false_katsu": tot["katsu"] - tot["katsu_true"],
        "recordings_with_false_katsu": sum(1 for p in per if p["katsu"] > p.get("katsu_true", 0)),
        "game_false_katsu": tot["game_katsu"] - tot["game_katsu_true"],
        "game_recordings_with_false_katsu": sum(1 for p in per if p.get("game_katsu", 0) > p.get("game_katsu_true", 0)),
        "game_master_only_katsu": tot["game_katsu_master_only"],
        "game_recordings_with_master_only_katsu": sum(1 for p in per if p.get("game_katsu_master_only", 0)),
        "game_marked_koans_broken_down": tot["game_marked_broken"],
        "recordings_settled": len(settled),
        "first_settled_ms_median": float(np.median(settled)) if settled else None,
        **({"hands": summarise_hands(per)} if any("hand" in p for p in per) else {}),
        "per_recording": per,
    }


def summarise_hands(per: list[dict]) -> dict:
    """The hand recordings by what the hand did: how many of the real changes the game raised,
    how soon after the change, whether it showed the right kind of change and kept it open, and
    how many false katsu the passes over a koan (and the changes, elsewhere) drew."""
    out = {}
    for change in ("pass", *_CHANGE_LABEL):
        mine = [p for p in per if p.get("hand", {}).get("change") == change]
        if not mine:
            continue
        row = {"recordings": len(mine),
               "false_katsu": sum(p.get("game_katsu", 0) - p.get("game_katsu_true", 0) for p in mine),
               "recordings_with_false_katsu": sum(1 for p in mine if p.get("game_katsu", 0) > p.get("game_katsu_true", 0)),
               "marked_koans_broken_down": sum(p.get("game_marked_broken", 0) for p in mine)}
        if change != "pass":
            hs = [p["hand"] for p in mine]
            raised = [h for h in hs if h.get("raised")]
            delays = [h["raised_after_ms"] for h in raised]
            row |= {"raised": len(raised), "told_right": sum(1 for h in raised if h["told_right"]),
                    "open_at_end": sum(1 for h in raised if h["open_at_end"]),
                    "raised_after_ms_median": round(float(np.median(delays)), 1) if delays else None,
                    "raised_after_ms_max": max(delays, default=None),
                    "tracker_raised": sum(1 for h in hs if h.get("tracker_raised"))}
        out[change] = row
    return out


def score_recording_task(pipeline, item) -> dict:
    """One recording scored whole by `pipeline` with the tracker's settings given: (path, truth,
    settings). A module-level task, so that a worker process can run it (vision.parallel)."""
    from dataclasses import replace

    path, truth, tracking = item
    pipeline.cfg = replace(pipeline.cfg, **tracking)
    return {"recording": path.name, **score_recording(pipeline, path, truth)}


def run_track_eval(recordings: list[Path], *, weights=None, device: str | None = None, conf: float = 0.25,
                   classifier: str | Path | None = "default", confirm_frames: int | None = None,
                   lost_ms: float = 0.0, progress: bool = True, workers: int = 1) -> dict:
    """Every recording read from its first frame by one pipeline (fresh calibration and tracks
    for each) and scored frame by frame. `workers`: processes scoring recordings at once, each
    with its own pipeline (the same figures: recordings are independent, and each is read in
    its order by one worker; but the RealSense playback of a .db3 on a busy machine hands a few
    frames over differently, as between two runs of one process)."""
    from .classify import load_classifier
    from .detect import DEFAULT_WEIGHTS, Detector
    from .parallel import run_each
    from .pipeline import Pipeline, PipelineConfig

    truths = [read_recording_truth(p) for p in recordings]
    det = Detector(weights or DEFAULT_WEIGHTS, device=device, conf=conf)
    cls = load_classifier(None if classifier == "default" else classifier) if classifier else None
    tracking = {"lost_ms": lost_ms, **({} if confirm_frames is None else {"confirm_frames": confirm_frames})}
    cfg = PipelineConfig(conf=conf, **tracking)
    items = [(p, t, tracking) for p, t in zip(recordings, truths)]
    scored = run_each(score_recording_task, items, workers, det, cls, conf,
                      lambda: Pipeline(det, cfg=cfg, classifier=cls))
    if progress:
        from tqdm import tqdm

        scored = tqdm(scored, total=len(items), desc="eval-tracking", unit="recording", leave=False)
    per = list(scored)
    out = summarise(per)
    out["confirm_frames"] = cfg.confirm_frames
    out["confirm_at_rest_frames"] = cfg.confirm_at_rest_frames
    out["lost_frames"] = cfg.lost_frames
    out["lost_at_rest_frames"] = cfg.lost_at_rest_frames
    out["lost_ms"] = cfg.lost_ms
    out["weights"] = _shown(det.weights)
    out["classifier"] = _shown(cls.weights) if cls is not None else None
    out["marked_at_ms"] = MARK_AT_MS
    out["workers"] = workers
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
                f"(in {s['game_recordings_with_false_katsu']}); told the Master alone, no hand near: "
                f"{s.get('game_master_only_katsu', 0)} (in {s.get('game_recordings_with_master_only_katsu', 0)})")
    rows.append(f"settled: {s['recordings_settled']} of {s['recordings']} recordings, first koan settled at "
                f"{s['first_settled_ms_median']} ms (median)")
    hands = s.get("hands")
    if hands:
        rows.append(f"{'a hand over a marked koan':26}{'tables':>7}{'raised':>8}{'told right':>11}{'open at end':>12}"
                    f"{'after (ms) med / max':>22}{'false katsu':>12}")
        for change, h in hands.items():
            if change == "pass":
                rows.append(f"{'passes, touches nothing':26}{h['recordings']:>7}{'-':>8}{'-':>11}{'-':>12}{'-':>22}"
                            f"{h['false_katsu']:>12}")
                continue
            after = f"{h['raised_after_ms_median']} / {h['raised_after_ms_max']}"
            rows.append(f"{_CHANGE_LABEL[change]:26}{h['recordings']:>7}{h['raised']:>8}{h['told_right']:>11}"
                        f"{h['open_at_end']:>12}{after:>22}{h['false_katsu']:>12}")
        rows.append(f"marked koans broken down (gone from the table shown): {s['game_marked_koans_broken_down']}")
    return "\n".join(rows)


_CHANGE_LABEL = {"knock": "knocks a piece", "take": "takes a piece away", "add": "puts a piece beside it"}
