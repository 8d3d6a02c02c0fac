"""Frame -> table: calibration, detection, pose, then tracking over time (smoothing, settling, katsu).

Why tracking lives here: a single frame is noisy (stereo depth moves a fitted tip by a millimetre
from frame to frame) and hands are in view while players build, so the game must only read a koan
once it has been still for a while, and a koan that was already marked must not change silently:
when it does, the pipeline raises "katsu" with what changed.
"""
from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from zendo.doubts import named, renamed
from zendo.geometry import matrix_to_quat, quat_to_matrix
from zendo.scene import Piece, Scene, Stone

from .classify import PieceClassifier, load_classifier
from .color_check import check_colors
from .colors import FrameColors
from .crossing import apart_doubts, drop_crossing
from .detect import Detections, Detector
from .doubts import Untaken, frame_doubts
from .frames import Frame
from .hands import boxes_on_hands, find_hands, hidden, off_hands
from .heading import check_headings
from .lying import find_lying_towers, rim_doubts
from .nested import find_nested
from .matching import class_penalty, pairs_within_reach
from .pairs import split_pairs
from .pose import PieceFit, PoseConfig, drop_unseeable, estimate_poses
from .refit import refit_poor
from .rest import rest_pieces
from .seen import SeenDepth
from .size_check import check_sizes
from .towers import complete_towers, lying_small_stacks, lying_tower_doubts, points_up
from .unboxed import read_blobs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineConfig:
    """Knobs of the frame -> table pipeline; defaults suit a D435 about 0.6 m above the table."""

    conf: float = 0.25
    pose: PoseConfig = field(default_factory=PoseConfig)
    match_mm: float = 25.0  # a reading whose axis middle is this close to a track's may continue it (Tracker._assign)
    move_mm: float = 6.0  # a reading whose axis middle is this far from its track's pose is off it ...
    move_deg: float = 15.0  # ... or whose axis is turned this far from the track's
    move_frames: int = 3  # readings off a track in a row that move it (one is a misreading)
    hold_frames: int = 10  # a piece at rest shows the mean of its first readings, this many, then holds
    vote_frames: int = 15  # a track's colour and size: the commonest of its last readings, this many
    # ... and another class replaces the one shown only when it leads it by this many: with none, a
    # piece read half the time one way and half the other changed class on every other frame, and
    # each change on a marked koan was a katsu (docs/perception.md, "Hands over the table")
    vote_margin: int = 2
    settle_s: float = 1.5  # a koan is settled after being still this long
    lost_frames: int = 5  # a track unseen in this many frames read in a row is dropped (frames read, not the source's)
    lost_ms: float = 0.0  # ... and unseen at least this long (0: the frames alone; see vision.parallel.StreamPerceiver)
    confirm_frames: int = 3  # a new piece is shown once seen in this many frames read in a row (at once in a stream's first frame)
    # a still table stays still: a piece at rest settle_s is dropped only after this many frames
    # unread, and a new piece by one is shown only from this many sightings (Tracker._at_rest)
    lost_at_rest_frames: int = 15
    confirm_at_rest_frames: int = 6
    # ... but a piece unread whose place shows bare table (vision/seen.py: this share of the pixels
    # its surface would cover) in this many frames read in a row is gone at once (0: never)
    gone_bare: float = 0.65
    gone_frames: int = 2
    # a piece still and untouched by a hand for settle_s: its colour and size are voted over every
    # reading since it came to rest, and another class replaces the one shown only when it leads it
    # by this many (Tracker._vote)
    rest_margin: int = 8
    recalibrate: bool = False  # refit the table plane on every frame (a moving camera)
    towers: bool = True  # look for the tower neighbours the detector missed (vision/towers.py)
    pairs: bool = True  # split a poor fit that is two pieces side by side (vision/pairs.py)
    lying: bool = True  # read lying towers' hidden pieces by their colour (vision/lying.py)
    nested: bool = True  # read pieces nested in lying ones through their bases (vision/nested.py)
    unboxed: bool = True  # read the depth blobs no detection boxed (vision/unboxed.py)
    rest: bool = True  # pieces set down as they must lie: on the table, in towers, across tips (vision/rest.py)
    unseeable: bool = True  # drop pieces fitted inside an upright larger one, where no camera sees (pose.drop_unseeable)
    size_check: bool = True  # depth may make a piece the classifier is torn towards a smaller size on smaller (vision/size_check.py)
    heading: bool = True  # a piece lying on the table turned to where its outline covers its colour best (vision/heading.py)
    color_check: bool = True  # read each piece's own pixels with the colour model (vision/color_check.py)
    crossing: bool = True  # drop a piece crossing a better-supported one of its class (vision/crossing.py)
    refit: bool = True  # fit a very poor fit again to the points of its own colour (vision/refit.py)
    hands: bool = True  # find hands over the table, read nothing on them, hold what they hide (vision/hands.py)


@dataclass(frozen=True)
class FrameResult:
    """Everything one frame produced: the raw perceived scene, the tracked (smoothed) one, timings."""

    frame_index: int
    timestamp_ms: float
    scene: Scene  # this frame alone
    tracked: Scene  # smoothed over time, stable ids
    detections: Detections
    fits: tuple[PieceFit, ...]
    timings_ms: dict
    settled: tuple[str, ...] = ()  # ids of the koans settled now
    events: tuple[dict, ...] = ()  # katsu and settle events raised by this frame
    seen: SeenDepth | None = None  # the frame's depth, for the tracker to test the places of pieces unread


# --------------------------------------------------------------------------- symmetry-aware averaging

_QUARTER = [quat_to_matrix([np.cos(np.pi * k / 4), 0, 0, np.sin(np.pi * k / 4)]) for k in range(4)]


def nearest_symmetric(R_ref: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Of the four poses R·Rz(k·90°) that look the same, the one closest to R_ref."""
    best, best_tr = R, -np.inf
    for q in _QUARTER:
        cand = R @ q
        tr = float(np.trace(R_ref.T @ cand))
        if tr > best_tr:
            best, best_tr = cand, tr
    return best


def blend_pose(a: Piece, b: Piece, w: float) -> Piece:
    """(1 - w)·a + w·b for position and rotation (rotation modulo the four-fold symmetry)."""
    Rb = nearest_symmetric(a.matrix, b.matrix)
    qa = matrix_to_quat(a.matrix)
    qb = matrix_to_quat(Rb)
    if qa @ qb < 0:
        qb = -qb
    q = (1 - w) * qa + w * qb
    q /= np.linalg.norm(q)
    pos = (1 - w) * a.origin + w * b.origin
    return replace(a, position=tuple(map(float, pos)), rotation=tuple(map(float, q)))


def pose_change(a: Piece, b: Piece) -> tuple[float, float]:
    """(mm, degrees) between two poses of one piece, modulo the symmetry."""
    Rb = nearest_symmetric(a.matrix, b.matrix)
    c = (np.trace(a.matrix.T @ Rb) - 1) / 2
    return float(np.linalg.norm(a.origin - b.origin)), float(np.degrees(np.arccos(np.clip(c, -1, 1))))


# --------------------------------------------------------------------------- tracking

# a new piece read this near a piece at rest (axis middles) needs confirm_at_rest_frames sightings:
# a koan's pieces stand within a few centimetres of one another
AT_REST_REACH_MM = 40.0


def _middle(p: Piece) -> np.ndarray:
    """The middle of a piece's axis, where a track is followed from: the same whichever way a
    lying piece is read to point (its base, `origin`, moves by the piece's length when a frame
    reads it the other way round), and a size misread moves it by half the difference."""
    return (p.origin + p.tip) / 2


def _renamed(extra: dict, ids: dict[str, str], unshown: set[str] = frozenset(),
             unread: set[str] = frozenset()) -> dict:
    """A frame's perception block with its piece ids replaced by the tracks' ids, and without
    what it says of the `unshown` tracks' pieces (not yet confirmed: not on the table shown) or
    of its own `unread` pieces (readings no track took: under a hand)."""
    perception = extra.get("perception")
    if not perception:
        return dict(extra)
    out = dict(perception)
    gone = lambda k: k in unread or ids.get(k, k) in unshown  # noqa: E731
    if "pieces" in out:
        out["pieces"] = {ids.get(k, k): v for k, v in out["pieces"].items() if not gone(k)}
    if "uncertain" in out:
        out["uncertain"] = [ids.get(k, k) for k in out["uncertain"] if not gone(k)]
    if "doubts" in out:
        out["doubts"] = [renamed(d, ids) for d in out["doubts"]
                         if not named(d) & unread and not named(renamed(d, ids)) & unshown]
    return {**extra, "perception": out}


def _by_hands(things, xy, footprints) -> tuple[list, list]:
    """The `things` (at table points `xy`) no hand hides, and those one does (vision.hands.hidden)."""
    if not footprints or not len(things):
        return list(things), []
    under = hidden(np.asarray(xy, float).reshape(-1, 2), footprints)
    return [t for t, h in zip(things, under) if not h], [t for t, h in zip(things, under) if h]


@dataclass
class _Track:
    id: str
    piece: Piece
    still_since_ms: float
    last_seen_ms: float
    hits: int = 1
    misses: int = 0  # frames read in a row without it
    shown: bool = True  # on the tracked table: seen in PipelineConfig.confirm_frames frames
    rest_n: int = 1  # readings averaged into its pose since it came to rest
    off: list = field(default_factory=list)  # the readings in a row off its pose that agree
    classes: deque = field(default_factory=deque)  # its last readings' (colour, size)
    touched_ms: float = float("-inf")  # when a hand last hid it
    rest_votes: Counter = field(default_factory=Counter)  # its readings' classes since it was last moved or touched
    rest_key: tuple = ()  # (still_since_ms, touched_ms) when rest_votes began
    bare: int = 0  # frames read in a row without it in which its place showed bare table (vision/seen.py)


def _voted(classes: deque, shown: tuple[str, str] | None = None, margin: int = 0) -> tuple[str, str]:
    """The commonest (colour, size) of a track's readings; of a tie, the newest. With `margin`,
    the class `shown` now stays unless another leads it by that many readings."""
    counts = Counter(classes)
    top = max(counts.values())
    best = next(c for c in reversed(classes) if counts[c] == top)
    if margin and shown is not None and counts[best] - counts.get(shown, 0) < margin:
        return shown
    return best


class Tracker:
    """Stable ids and smoothed poses across frames; when koans are settled; katsu on marked koans."""

    def __init__(self, cfg: PipelineConfig):
        self.cfg = cfg
        self.tracks: list[_Track] = []
        self.stones: tuple[Stone, ...] = ()
        self._next = 1
        self._marked: dict[frozenset, dict] = {}  # settled marked koans: piece ids -> snapshot
        self._settled_before: set[frozenset] = set()
        self._frames = 0  # frames taken in

    def update(self, scene: Scene, index: int, t_ms: float,
               seen: SeenDepth | None = None) -> tuple[Scene, tuple[str, ...], tuple[dict, ...]]:
        """One frame's scene taken in: (the tracked scene, koans settled now, events). `index`,
        the frame's number, is not read: tracks count the frames read (`_Track.misses`). `seen`,
        the frame's depth: a piece unread whose place shows bare table is gone (`_count_bare`)."""
        cfg = self.cfg
        self._frames += 1
        ids: dict[str, str] = {}  # this frame's piece id -> its track's id
        footprints = scene.extra.get("perception", {}).get("hands") or ()
        held = self._under_hands(footprints)
        held_ids = {self.tracks[i].id for i in held}
        readings, _ = _by_hands(scene.pieces, [_middle(p)[:2] for p in scene.pieces], footprints)
        pairs = self._assign(readings)
        used = set(pairs.values()) | held
        for i in held:  # what they read after the hand has gone is what counts (Tracker._vote)
            self.tracks[i].touched_ms = t_ms
        for k, i in pairs.items():
            if i in held:  # a held piece's reading from beyond the hand: taken by no other track, nor followed
                continue
            p = readings[k]
            ids[p.id] = self.tracks[i].id
            self._follow(self.tracks[i], p, t_ms)
        pending = sorted((p for k, p in enumerate(readings) if k not in pairs), key=lambda p: p.id)
        for p in pending:
            tid = f"p{self._next}"
            self._next += 1
            # a stream's first frame shows what it reads at once: there is no earlier frame to
            # confirm it by, and a one-frame recording must show its table
            self.tracks.append(_Track(tid, replace(p, id=tid), t_ms, t_ms,
                                      shown=self._frames == 1 or cfg.confirm_frames <= 1,
                                      classes=deque([(p.color, p.size)], maxlen=cfg.vote_frames),
                                      rest_votes=Counter([(p.color, p.size)]), rest_key=(t_ms, float("-inf"))))
            used.add(len(self.tracks) - 1)
            ids[p.id] = tid
        # counted in frames read, not by the source's frame numbers: the dashboard's feed reads
        # every fifth frame, and by frame numbers one frame the detector missed a piece in lost its
        # track, which came back under a new id: a marked koan read that as a piece taken away
        # and another put down (katsu)
        missed = [tr for i, tr in enumerate(self.tracks) if i not in used]
        for tr in missed:
            tr.misses += 1
        self._count_bare([tr for tr in missed if tr.shown], seen)
        self.tracks = [tr for tr in self.tracks if not self._lost(tr, t_ms)]
        self.stones = self._stones(scene.stones, footprints)
        shown = [tr for tr in self.tracks if tr.shown]
        unshown = {tr.id for tr in self.tracks if not tr.shown}
        unread = {p.id for p in scene.pieces if p.id not in ids}
        extra = _renamed(scene.extra, ids, unshown, unread)
        if held_ids:  # the pieces a hand hides, held: the Master is told which koans (zendo.game.Game.hands_over)
            extra["perception"] = {**extra["perception"], "held": sorted(tr.id for tr in shown if tr.id in held_ids)}
        tracked = Scene(tuple(tr.piece for tr in shown), self.stones, extra)
        settled, events = self._koans(tracked, shown, t_ms)
        return tracked, settled, events

    def _under_hands(self, footprints) -> set[int]:
        """The tracks a hand hides now (vision/hands.py): held as they are, neither missed nor
        moved nor joined by a reading, until the hand has gone. Why: under a hand nothing can be
        read, and at its edge a piece half hidden is fitted off its place; both raised katsu on
        koans a hand only passed over."""
        if not footprints or not self.tracks:
            return set()
        under = hidden(np.array([_middle(tr.piece)[:2] for tr in self.tracks]), footprints)
        return set(np.flatnonzero(under).tolist())

    def _stones(self, read: tuple[Stone, ...], footprints) -> tuple[Stone, ...]:
        """The stones shown: a hand's hidden part keeps the ones it hid, the rest are this frame's."""
        if not footprints:
            return read
        _, kept = _by_hands(self.stones, [s.position[:2] for s in self.stones], footprints)
        seen, _ = _by_hands(read, [s.position[:2] for s in read], footprints)
        return tuple(replace(s, id=f"s{k}") for k, s in enumerate(kept + seen, start=1))

    def _count_bare(self, unread: list[_Track], seen: SeenDepth | None) -> None:
        """Count, for each shown track unread this frame (a hand's are held, not unread), the
        frames in a row its place showed bare table (vision/seen.py); not judged breaks the run."""
        if seen is None or not self.cfg.gone_frames or not unread:
            return
        for tr, share in zip(unread, seen.bare([tr.piece for tr in unread])):
            tr.bare = tr.bare + 1 if share >= self.cfg.gone_bare else 0

    def _at_rest(self, tr: _Track) -> bool:
        """Shown, and read where it is for `settle_s` (its koan may be settled, and marked)."""
        return tr.shown and tr.last_seen_ms - tr.still_since_ms >= self.cfg.settle_s * 1000

    def _lost(self, tr: _Track, t_ms: float) -> bool:
        """Unread in `lost_frames` frames in a row (`lost_at_rest_frames` for a piece at rest)
        and, where `lost_ms` is set, for that long; a piece not yet shown, in the first frame
        that misses it (DeepSORT's tentative tracks): a phantom read now and then no longer
        gathers its sightings over a second and more, and a real piece is read in a row."""
        if not tr.shown:
            return tr.misses >= 1
        if self.cfg.gone_frames and tr.bare >= self.cfg.gone_frames:
            return True
        frames = self.cfg.lost_at_rest_frames if self._at_rest(tr) else self.cfg.lost_frames
        return tr.misses >= frames and t_ms - tr.last_seen_ms >= self.cfg.lost_ms

    def _sightings_needed(self, tr: _Track) -> int:
        """`confirm_frames`, or `confirm_at_rest_frames` where the new piece is read within
        `AT_REST_REACH_MM` of a piece at rest."""
        near = any(self._at_rest(o) and np.linalg.norm(_middle(o.piece) - _middle(tr.piece)) < AT_REST_REACH_MM
                   for o in self.tracks if o is not tr)
        return self.cfg.confirm_at_rest_frames if near else self.cfg.confirm_frames

    def _assign(self, pieces) -> dict[int, int]:
        """This frame's pieces to tracks (piece index -> track index), one to one, by optimal
        assignment within `match_mm`, a reading of another colour or size costing
        `vision.matching.CLASS_TIE_MM` more (as `vision.eval.match` pairs pieces with the truth).
        Why all at once: taken one by one, a piece took the nearest track even where that left
        its neighbour's reading without one, which then started a second track beside its own;
        and a class flicker must continue the piece's track, not start another."""
        pairs = pairs_within_reach([_middle(p) for p in pieces], [_middle(tr.piece) for tr in self.tracks],
                                   self.cfg.match_mm, class_penalty(pieces, [tr.piece for tr in self.tracks]))
        return {k: i for k, i, _ in pairs}

    def _follow(self, tr: _Track, p: Piece, t_ms: float) -> None:
        """The track takes this frame's reading.

        Why not frame to frame: a single frame's fit of a still piece scatters (over 30 recorded
        tables, a lying piece's axis middle 2.7 mm at the 90th percentile and 13 mm at the 99th,
        its axis 11 and 126 degrees: a reading the other way round), so following every reading
        that strayed more than a few millimetres kept no piece still (6 of 30 tables ever
        settled) and moved marked koans' pieces past the game's katsu line on 29 of 30. A
        reading within `move_mm` / `move_deg` of the track is averaged in until `hold_frames`
        are, then the pose holds; a reading off it is ignored unless `move_frames` in a row are,
        and then the piece moved: the track takes the newest reading and is at rest from now.
        Its colour and size: `_vote`.
        """
        cfg = self.cfg
        tr.classes.append((p.color, p.size))
        if not self._near(tr.piece, p):
            # off its pose: it moved once `move_frames` readings in a row agree with one another
            # (a run goes on from its readings this one agrees with, if the last one does)
            agreed = [q for q in tr.off if self._near(q, p)] if tr.off and self._near(tr.off[-1], p) else []
            tr.off = agreed + [p]
            if len(tr.off) >= cfg.move_frames:  # it moved: follow it, do not average across the move
                tr.piece, tr.rest_n, tr.off, tr.still_since_ms = replace(p, id=tr.id), 1, [], t_ms
        else:
            tr.off = []
            if tr.rest_n < cfg.hold_frames:
                tr.rest_n += 1
                tr.piece = blend_pose(tr.piece, replace(p, id=tr.id), 1.0 / tr.rest_n)
        color, size = self._vote(tr, (p.color, p.size), t_ms)
        tr.piece = replace(tr.piece, color=color, size=size)
        tr.last_seen_ms = t_ms
        tr.misses = tr.bare = 0
        tr.hits += 1
        tr.shown = tr.shown or tr.hits >= self._sightings_needed(tr)

    def _vote(self, tr: _Track, reading: tuple[str, str], t_ms: float) -> tuple[str, str]:
        """The track's colour and size with this reading. A piece still and untouched by a hand
        for `settle_s` changes class only where the readings since it came to rest favour
        another by `rest_margin`; before that, the last `vote_frames` readings decide, the class
        shown holding against a lead under `vote_margin` (a track's second reading votes freely).

        Why the whole rest: nothing on a table changes a piece's colour or size but a hand, while
        some still pieces are read one way and the other by turns (a red small read blue a third
        of the time). Voted over the last fifteen readings such a piece changed class every few
        seconds, and on a marked koan each change was a katsu; the readings since it came to rest
        settle on one class and stay there."""
        key = (tr.still_since_ms, tr.touched_ms)
        if key != tr.rest_key:
            tr.rest_votes, tr.rest_key = Counter(), key
        tr.rest_votes[reading] += 1
        shown = (tr.piece.color, tr.piece.size) if tr.hits > 1 else None
        if shown is not None and tr.shown and t_ms - max(key) >= self.cfg.settle_s * 1000:
            counts = tr.rest_votes
            best = max(counts, key=lambda c: (counts[c], c == shown))
            return best if counts[best] - counts[shown] >= self.cfg.rest_margin else shown
        return _voted(tr.classes, shown, self.cfg.vote_margin)

    def _near(self, a: Piece, b: Piece) -> bool:
        """Two readings of a piece at rest: axis middles within `move_mm`, axes within `move_deg`."""
        deg = float(np.degrees(np.arccos(np.clip(a.axis @ b.axis, -1.0, 1.0))))
        return float(np.linalg.norm(_middle(a) - _middle(b))) <= self.cfg.move_mm and deg <= self.cfg.move_deg

    def _koans(self, tracked: Scene, shown: list[_Track], t_ms: float) -> tuple[tuple[str, ...], tuple[dict, ...]]:
        """Koans settled now and the events of this frame, over the tracks shown (a piece not yet
        confirmed neither unsettles a koan nor joins a marked one)."""
        cfg = self.cfg
        still = {tr.id: t_ms - tr.still_since_ms for tr in shown}
        settled, events = [], []
        try:
            from zendo.koans import split_koans

            koans = split_koans(tracked)
        except Exception as exc:  # a degenerate perceived scene must not stop the stream
            log.debug("koan split failed: %s", exc)
            return (), ()
        now_settled = set()
        for k in koans:
            ids = frozenset(k.piece_ids)
            if all(still.get(i, 0.0) >= cfg.settle_s * 1000 for i in ids):
                settled.append(k.id)
                now_settled.add(ids)
                if ids not in self._settled_before:
                    events.append({"event": "settled", "koan": k.id, "pieces": sorted(ids)})
                if k.stone_ids and ids not in self._marked:
                    self._marked[ids] = {p.id: p for p in k.pieces(tracked)}
        # a marked koan whose pieces changed: katsu, naming what changed
        for ids, snap in list(self._marked.items()):
            current = {tr.id: tr.piece for tr in shown}
            gone = sorted(i for i in ids if i not in current)
            moved = []
            for i in ids:
                if i in current:
                    mm, deg = pose_change(snap[i], current[i])
                    if mm > cfg.move_mm or deg > cfg.move_deg:
                        moved.append({"piece": i, "moved_mm": round(mm, 1), "turned_deg": round(deg, 1)})
            added = []
            for k in koans:
                if ids & set(k.piece_ids):
                    added = sorted(set(k.piece_ids) - ids)
            if gone or moved or added:
                events.append({"event": "katsu", "pieces": sorted(ids), "removed": gone, "moved": moved, "added": added})
                del self._marked[ids]
        self._settled_before = now_settled
        return tuple(settled), tuple(events)


# --------------------------------------------------------------------------- the pipeline


class _Stopwatch:
    """Milliseconds per stage of one frame, and the total."""

    def __init__(self):
        self.start = self.last = time.perf_counter()
        self.ms: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.ms[stage] = (now - self.last) * 1000
        self.last = now

    def timings(self) -> dict[str, float]:
        return {**{k: round(v, 2) for k, v in self.ms.items()}, "total": round((self.last - self.start) * 1000, 2)}



def _net_orientations(fits, det: Detections) -> dict[str, np.ndarray]:
    """The orientation net's p(upright, flat, weird) by piece id, for pieces fitted from a
    detection it read (`Detections.orientation_read`)."""
    read = {f.piece.id: det.orientation_read(f.detection) for f in fits}
    return {pid: p for pid, p in read.items() if p is not None}


def table_of(calibration):
    """The table plane of a calibration (a saved calibration holds one; a fitted plane is one)."""
    return getattr(calibration, "table", calibration)


def projector(table, intr):
    """Table millimetres -> image pixels for a table plane (calibration.plane.TableCalibration)
    and a camera's intrinsics."""

    def project(points_mm: np.ndarray) -> np.ndarray:
        cam = table.to_camera(np.atleast_2d(np.asarray(points_mm, dtype=float)))
        z = np.where(cam[:, 2] > 1e-6, cam[:, 2], 1e-6)
        return np.column_stack([intr.fx * cam[:, 0] / z + intr.ppx, intr.fy * cam[:, 1] / z + intr.ppy])

    return project


def tracked(result: FrameResult, tracker: Tracker) -> FrameResult:
    """A perceived frame taken into the tracks (frames must come in order): its smoothed scene,
    the koans settled now and the events it raises; the tracking lap joins its timings (and
    their total)."""
    t0 = time.perf_counter()
    scene, settled, events = tracker.update(result.scene, result.frame_index, result.timestamp_ms, result.seen)
    ms = (time.perf_counter() - t0) * 1000
    timings = {**result.timings_ms, "track": round(ms, 2), "total": round(result.timings_ms.get("total", 0.0) + ms, 2)}
    return replace(result, tracked=scene, timings_ms=timings, settled=settled, events=events)


class Pipeline:
    """Frames in, tables out. Calibration is measured from the first frame unless one is given."""

    def __init__(self, detector: Detector | None = None, calibration=None, cfg: PipelineConfig | None = None,
                 classifier: PieceClassifier | None | str = "default"):
        self.cfg = cfg or PipelineConfig()
        self.detector = detector or Detector(conf=self.cfg.conf)
        # the second stage (vision/classify.py): the committed one unless told otherwise; None = off
        self.classifier = load_classifier() if classifier == "default" else classifier
        if self.classifier is not None:  # the crop nets read on the detector's GPU where it has one
            self.classifier.run_on(getattr(self.detector, "device", "cpu"))
        # behind the classifier depth's size reading is a doubt, not a verdict: as a verdict it cost
        # 2 points of colour x size on the tuning set. As a doubt it reaches the sizes the classifier
        # is sure of and wrong about (910000-: unflagged wrong marks 4 -> 2; docs/perception.md,
        # "Wrong marks still unflagged") for 8-10 ms of pose's time on this CPU
        self.pose_cfg = (replace(self.cfg.pose, size_decides=False)
                         if self.classifier is not None else self.cfg.pose)
        self.calibration = calibration  # calibration.store.Calibration or plane.TableCalibration
        self.tracker = Tracker(self.cfg)

    def restart(self) -> None:
        """Forget the table plane and the tracks: the next frame is a new camera's first (one
        scored table or recording after another)."""
        self.calibration, self.tracker = None, Tracker(self.cfg)

    def table(self):
        """The table plane in use."""
        return table_of(self.calibration)

    def process(self, frame: Frame) -> FrameResult:
        """One frame perceived and tracked: what a camera's stream pays per frame."""
        return self.track(self.perceive(frame))

    def perceive(self, frame: Frame) -> FrameResult:
        """One frame read on its own, with no history: its `tracked` scene is its own scene and it
        raises no events until `track` has seen it. Why apart from tracking: frames are
        independent up to here, so several processes can read a stream's frames at once
        (vision/parallel.py), and the tracker then takes them in order."""
        from calibration.plane import fit_table, height_map

        watch = _Stopwatch()
        if self.calibration is None or self.cfg.recalibrate:
            self.calibration, _ = fit_table(frame)
        watch.lap("calibrate")
        table = self.table()
        if hasattr(self.detector, "with_faint"):  # a plain callable (a test's stand-in) draws no faint boxes
            det, faint = self.detector.with_faint(frame.color)
        else:
            det, faint = self.detector(frame.color), Detections.empty()
        watch.lap("detect")
        verdicts = None
        heights = height_map(frame, table)  # every stage below reads it: computed once
        watch.lap("heights")
        hands = find_hands(heights, frame.intrinsics, table.matrix) if self.cfg.hands else None
        if hands is not None:  # nothing on a hand is a piece: its pixels unread, its boxes dropped
            heights = off_hands(heights, hands)
            det = det[~boxes_on_hands(det.xyxy, hands)]
            faint = faint[~boxes_on_hands(faint.xyxy, hands)]
        watch.lap("hands")
        project = self.projector(frame.intrinsics)
        untaken = Untaken(faint)
        if self.classifier is not None:
            det, verdicts, dropped = self.classifier.refine_keeping_dropped(frame, table, det, heights)
            untaken = Untaken(faint, dropped, self.classifier.read_faint_stones(frame, table, faint, heights))
            watch.lap("classify")
        scene, fits = estimate_poses(frame, det, table, self.pose_cfg, heights)
        watch.lap("pose")
        stage_doubts: list[dict] = []  # the pairs, towers, lying, unboxed and colour-check stages' doubts
        colors = FrameColors(self.classifier.colors if self.classifier is not None else None, frame.color, heights)
        if self.cfg.pairs:
            scene, fits, det, verdicts, found = split_pairs(frame, scene, fits, det, verdicts, heights, table,
                                                            self.pose_cfg, self.classifier)
            stage_doubts += found
            watch.lap("pairs")
        up = points_up(heights) if self.cfg.towers else None  # the towers stage's, and the lying nests' below
        if self.cfg.towers:
            scene, fits, det, verdicts, found = complete_towers(frame, scene, fits, det, verdicts, heights, table,
                                                                self.classifier, colors, up)
            stage_doubts += found
            watch.lap("towers")
        if self.cfg.lying:
            scene, fits, det, verdicts, found = find_lying_towers(frame, scene, fits, det, verdicts, heights, table,
                                                                  project, colors)
            stage_doubts += found
            watch.lap("lying")
        if self.cfg.nested:
            scene, fits, det, verdicts = find_nested(frame, scene, fits, det, verdicts, heights, table, project,
                                                     self.classifier, colors)
            watch.lap("nested")
        if self.cfg.unboxed:
            scene, fits, det, verdicts, found = read_blobs(frame, scene, fits, det, verdicts, heights, table,
                                                           self.pose_cfg, self.classifier)
            stage_doubts += found
            watch.lap("unboxed")
        if self.cfg.size_check:
            scene, fits = check_sizes(frame, scene, fits, det, verdicts, heights, table, self.pose_cfg)
            watch.lap("size check")
        if self.cfg.refit:
            scene, fits = refit_poor(frame, scene, fits, det, heights, table, self.pose_cfg, colors)
            watch.lap("refit")
        if self.cfg.rest:
            scene, fits = rest_pieces(scene, fits, _net_orientations(fits, det))
            watch.lap("rest")
        if self.cfg.unseeable:
            scene, fits = drop_unseeable(scene, fits)
            watch.lap("unseeable")
        if self.cfg.heading:
            scene, fits, found = check_headings(frame.color, scene, fits, heights, project)
            stage_doubts += found
            watch.lap("heading")
        if self.cfg.color_check:
            scene, fits, found = check_colors(scene, fits, verdicts, heights, project, colors)
            stage_doubts += found
            watch.lap("color check")
        if self.cfg.crossing:
            scene, kept = drop_crossing(scene, fits)
            stage_doubts += apart_doubts(fits, kept)
            fits = kept
            watch.lap("crossing")
        if self.cfg.towers:  # on the final poses: a nest of two small pieces lying
            stage_doubts += lying_small_stacks(frame, scene, up, table)
            stage_doubts += lying_tower_doubts(frame, scene, up, table)  # ... and a tower on its side read as one large
        if self.cfg.lying:  # ... and a piece, lying or upright, whose lower piece shows only as a rim of colour
            stage_doubts += rim_doubts(scene, heights, project, colors, stage_doubts)
        scene = self._with_doubts(scene, fits, det, verdicts, heights, stage_doubts, project, frame.color,
                                  untaken, frame.depth_mm)
        if hands is not None:  # the tracker holds what they hide (Tracker.update)
            perception = {**scene.extra.get("perception", {}), "hands": hands.to_dict()}
            scene = Scene(scene.pieces, scene.stones, {**scene.extra, "perception": perception})
        watch.lap("doubts")
        return FrameResult(frame.index, frame.timestamp_ms, scene, scene, det, tuple(fits), watch.timings(),
                           seen=SeenDepth.of(frame, table))

    def track(self, result: FrameResult) -> FrameResult:
        """A perceived frame taken into this pipeline's tracks (`tracked`)."""
        return tracked(result, self.tracker)

    @staticmethod
    def _with_doubts(scene: Scene, fits, det: Detections, verdicts, heights, stage_doubts: list[dict],
                     project, rgb: np.ndarray, untaken: Untaken,
                     depth_mm: np.ndarray | None = None) -> Scene:
        """The frame's scene with its doubts (vision/doubts.py, and the towers and unboxed stages')
        in its perception block. `untaken`: the boxes drawn and not taken (vision.doubts.Untaken);
        `depth_mm`: the frame's depth (how far a blob of it is from the camera)."""
        pts, valid = heights
        doubts = frame_doubts(scene, fits, det, verdicts, pts, valid, project, rgb, stage_doubts, untaken,
                              depth_mm)
        perception = {**scene.extra.get("perception", {}), "doubts": doubts}
        return replace(scene, extra={**scene.extra, "perception": perception})

    def projector(self, intr):
        """Table millimetres -> image pixels under the calibration in use."""
        return projector(self.table(), intr)

    def run(self, frames: Iterable[Frame]) -> Iterator[FrameResult]:
        for f in frames:
            yield self.process(f)


class Perceiver:
    """The dashboard's hook: frame -> (tracked Scene, table-mm -> pixel projection).

    One Perceiver per feed keeps its own tracker, so ids stay stable from frame to frame (the game
    follows koans by piece id) and katsu / settling see the same pieces move.
    """

    def __init__(self, pipeline: Pipeline | None = None):
        self.pipeline = pipeline or Pipeline()

    def __call__(self, frame: Frame):
        result = self.pipeline.process(frame)
        return result.tracked, self.pipeline.projector(frame.intrinsics)


def make_perceiver(workers: int = 1):
    """A fresh frame -> table perceiver with the committed detector (see models/MODEL_CARD.md);
    with workers > 1, one whose `stream` reads frames in that many processes at once
    (vision.parallel.StreamPerceiver)."""
    if workers > 1:
        from .parallel import StreamPerceiver

        return StreamPerceiver(workers)
    return Perceiver()
