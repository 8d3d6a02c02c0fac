"""Two pieces side by side that the detector read as one box, found in depth.

Why: two touching pieces of one colour look like one blob to the detector, which then draws one
box; pose fitting lays one pyramid across both (on the tuning set, seeds 900000-900059, most
upright pieces read as flat were this, with fit residuals of 3-17 mm against the 1 mm of a good
fit), so a piece is missed and the other's orientation is wrong.

How: a fit whose RMS residual is above SPLIT_RMS_MM, after dropping the points another fitted
piece explains, has its points split in two (k-means on x, y) and each half fitted as a piece of
the same colour and size, standing (only the upright hypotheses: the failure is two standing
pieces read as one lying across them, and trying every hypothesis cost 30 ms a frame). The pair
replaces the one piece when it explains SPLIT_GAIN more of the points, each half fits like a
piece and neither puts plastic where the camera saw through; the second piece gets its own box,
and the classifier reads its colour there. A poor lying fit that is not two pieces may be one
standing piece: `stand_up`. A pair that misses the limits only by a little (NEAR_PAIR: two touching
smalls read as one lying piece left a half 0.23 free and 2.0 mm off) is not split, but the fit
is marked `maybe_two`, which raises a misfit doubt (tuning tables: 3 and 0 fewer unflagged
wrong marks, 0.2 and 0.0 points more right marks flagged). A near pair is split all the same
where two further witnesses say it is two (`near_pair_splits`): its halves stand a base's width
apart, as two standing pieces of one size must, and the orientation net reads the box as
standing; the second piece then carries an "absent" doubt whose alternative is the one piece
read first. A poor fit that is a standing piece with another lying across its tip (and a
neighbour's), one colour and so one box: `bridge`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from zendo.pieces import PYRAMID_SIZES
from zendo.scene import Piece, Scene

from .detect import Detections
from .pose import (
    MIN_POINTS,
    PieceFit,
    PoseConfig,
    box_points,
    consensus,
    fit_piece,
    next_piece_id,
    pixel_box,
    posed,
    rms_of,
    scene_with,
    signed_distances,
    union_distance,
)

SPLIT_RMS_MM = 2.5  # a fit this poor may be two pieces (a good one is about 1 mm)
SPLIT_GAIN = 0.15  # the pair must explain this share of the points more than the one piece
INLIER_MM = 1.5
PAIR_FREE_SPACE = 0.15
NEAR_PAIR = {"free_space": 0.3, "standing_share": 0.7, "half_rms": 2.5}  # a pair this near to passing
# is a misfit doubt: two touching pieces read as one lying piece may fit too well for the misfit RMS
PAIR_RMS_MM = 2.0  # each half must fit like a piece
MIN_APART_MM = 8.0  # two fitted pieces closer than this are one piece
STANDING_SHARE = 0.75  # each half's top must reach this share of a standing piece's height
HALF_HYPOTHESES = ("upright", "stacked")  # each half is fitted standing: the case a lying fit gets wrong
STAND_GAIN = 0.3  # standing must explain this share more points than the lying fit
UPRIGHT_COS = float(np.cos(np.radians(30)))
NEAR_SPLIT_APART = 0.85  # a near pair's halves this far apart (a share of a base's width) and
NEAR_SPLIT_STANDING_P = 0.5  # its box read standing this surely are split all the same
MIN_COLOR_P = 0.5  # the classifier's colour for the second piece, when it is this sure


def two_means(xy: np.ndarray, iterations: int = 10) -> np.ndarray:
    """Labels 0/1 splitting points in two by k-means, seeded at the two ends of the points'
    principal axis (deterministic: the same frame always splits the same way)."""
    c = xy.mean(axis=0)
    _, _, vt = np.linalg.svd(xy - c, full_matrices=False)
    proj = (xy - c) @ vt[0]
    centres = np.array([xy[np.argmin(proj)], xy[np.argmax(proj)]], float)
    labels = np.zeros(len(xy), int)
    x, y = np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1])
    for _ in range(iterations):
        # the nearer centre; a tie goes to the first (argmin's rule), one pass over x and y each
        d0 = np.sqrt((x - centres[0, 0]) ** 2 + (y - centres[0, 1]) ** 2)
        d1 = np.sqrt((x - centres[1, 0]) ** 2 + (y - centres[1, 1]) ** 2)
        labels = (d1 < d0).astype(int)
        if labels.min() == labels.max():
            break
        new = np.array([xy[labels == k].mean(axis=0) for k in (0, 1)])
        if np.allclose(new, centres):
            break
        centres = new
    return labels


def _explained(pieces: list[Piece], pts: np.ndarray) -> np.ndarray:
    return np.abs(union_distance(pieces, pts)) < INLIER_MM


@dataclass(frozen=True)
class Pair:
    """Two standing pieces one fit's points may be, and how well they hold up."""

    a: Piece
    b: Piece
    free_space: float  # the larger of the two halves'
    rms_mm: float  # the larger of the two halves'
    top_share: float  # the lower half's top, as a share of a standing piece's height
    box: np.ndarray  # the image box of the second piece's points

    @property
    def holds(self) -> bool:
        """Whether it passes the pair limits (else it is only near: NEAR_PAIR)."""
        return self.free_space <= PAIR_FREE_SPACE and self.rms_mm <= PAIR_RMS_MM and self.top_share >= STANDING_SHARE

    @property
    def apart(self) -> float:
        """How far apart the two stand, centre to centre, as a share of their base's width."""
        return float(np.linalg.norm(self.a.origin[:2] - self.b.origin[:2])) / PYRAMID_SIZES[self.a.size].width


def near_pair_splits(pair: Pair, detections: Detections, k: int) -> bool:
    """Whether a pair within NEAR_PAIR but not the pair limits is split all the same.

    Why: two touching standing pieces read as one lying piece miss the pair limits often by a
    little (a half 0.16-0.25 free, the camera's rim pixels); on the tuning tables (seeds 900000-,
    920000-, 930000-, 980000-, 990000-) 7 of the 11 near pairs were two true pieces, each half
    within 2 mm of one. Two witnesses the limits do not use tell them from the 4 that were one
    piece: two standing pieces of one size cannot stand closer than a base's width centre to
    centre (the true pairs stood 0.87-1.02 widths apart, two of the others 0.65 and 0.79), and
    the orientation net reads a box of two standing pieces as standing (p 0.61-0.97; the other
    two, flat pieces, 0.03). That leaves one wrong split of 8 (980006: an upright green medium
    beside a blue large), so the split keeps a doubt that the pair is the one piece."""
    o = detections.orientation_read(k)
    return pair.apart >= NEAR_SPLIT_APART and o is not None and float(o[0]) >= NEAR_SPLIT_STANDING_P


def _inside_another(piece: Piece, others: list[Piece]) -> bool:
    """Whether the piece's centroid lies inside another fitted piece: then its points are that
    piece's too, read twice (900011: a yellow small's second half stood inside the lying fit
    another box had made of it)."""
    return bool(others) and float(union_distance(others, piece.centroid[None])[0]) < 0.0


def split(fit: PieceFit, pts: np.ndarray, pix: np.ndarray, others: list[Piece], frame, table, cfg: PoseConfig,
          new_id: str) -> Pair | None:
    """The two pieces `fit`'s points are, within the NEAR_PAIR limits (`Pair.holds` says whether
    within the pair limits too), or None. One pass of fitting serves both."""
    mine = ~_explained(others, pts)
    own, pix = pts[mine], pix[mine]
    if len(own) < 2 * MIN_POINTS:
        return None
    labels = two_means(own[:, :2])
    halves = [own[labels == k] for k in (0, 1)]
    if min(len(h) for h in halves) < MIN_POINTS:
        return None
    p = fit.piece
    top_share = min(float(np.percentile(h[:, 2], 98)) for h in halves) / PYRAMID_SIZES[p.size].height
    if top_share < NEAR_PAIR["standing_share"]:
        return None  # not two standing pieces (and fitting costs 5 ms a half: look before fitting)
    made, worst_fs, worst_rms = [], 0.0, 0.0
    for h, pid in zip(halves, (p.id, new_id)):
        R, t, _, fs, _ = fit_piece(p.size, h, frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                   only=HALF_HYPOTHESES)
        q = posed(p, R, t, id=pid)
        rms = rms_of(q, h)
        if fs > NEAR_PAIR["free_space"] or rms > NEAR_PAIR["half_rms"]:
            return None
        worst_fs, worst_rms = max(worst_fs, fs), max(worst_rms, rms)
        made.append(q)
    a, b = made
    if np.linalg.norm(a.origin - b.origin) < MIN_APART_MM:
        return None
    if _explained([a, b], own).sum() - _explained([p], own).sum() < SPLIT_GAIN * len(own):
        return None
    return Pair(a, b, worst_fs, worst_rms, top_share, pixel_box(pix[labels == 1]))


def stand_up(fit: PieceFit, pts: np.ndarray, others: list[Piece], frame, table, cfg: PoseConfig) -> PieceFit | None:
    """The fit as a standing piece, when a piece fitted lying or tilted poorly stands: the box's
    points reach a standing piece's height, and standing explains STAND_GAIN more of the points
    the neighbours do not (a lying fit across a standing piece and its neighbour explains few of
    either's points within 1.5 mm, whatever its robust cost)."""
    p = fit.piece
    if p.axis[2] > UPRIGHT_COS:
        return None
    own = pts[~_explained(others, pts)]
    if len(own) < MIN_POINTS or float(np.percentile(own[:, 2], 98)) < STANDING_SHARE * PYRAMID_SIZES[p.size].height:
        return None
    R, t, _, fs, name = fit_piece(p.size, own, frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                  only=HALF_HYPOTHESES)
    if fs > PAIR_FREE_SPACE:
        return None
    q = posed(p, R, t)
    if _explained([q], own).sum() < (1 + STAND_GAIN) * _explained([p], own).sum():
        return None
    return replace(fit, piece=q, rms_mm=rms_of(q, own), free_space=fs, hypothesis=name)


BRIDGE_ABOVE_MM = 5.0  # depth this far above the standing piece's tip is a piece lying on tips
BRIDGE_CUT_MM = 3.0  # a lying piece's points start this far below the standing one's tip
BRIDGE_HYPOTHESES = ("flat", "raised flat")  # the piece on top lies
BRIDGE_MEDIAN_MM = 1.5  # each of the two must fit like a piece: its points' median distance (RMS is
# spoilt by the mixed depth pixels at a raised piece's edges, 10-15 mm off anything)
NEIGHBOUR_MM = 4.0  # a bridge's box points this near a neighbour's solid are the neighbour's
BRIDGE_FREE_SPACE = 0.25  # a raised piece's edges show the table far below: free space runs higher


@dataclass(frozen=True)
class Bridge:
    """A standing piece and a piece lying across its tip (and a neighbour's) that one box held."""

    standing: Piece
    lying: Piece
    free_space: float  # the larger of the two's
    rms_mm: float  # the larger of the two's
    box: np.ndarray  # the image box of the lying piece's points


def bridge(fit: PieceFit, pts: np.ndarray, pix: np.ndarray, others: list[Piece], frame, table, cfg: PoseConfig,
           new_id: str) -> Bridge | None:
    """The standing piece and the piece lying on its tip that `fit`'s points are, or None.

    Why: a small piece laid across the tips of two standing pieces, one of them its own colour,
    is one box to the detector with the standing one (900051, 900057: 12-18 mm RMS), and the
    lying piece is missed. How: the points well above the standing piece's tip (BRIDGE_ABOVE_MM)
    say something lies there; the points above its tip less BRIDGE_CUT_MM are fitted lying, in
    each size (the one accounting for them better, `pose.consensus`), the rest standing in the
    box's size; both must fit like pieces and explain SPLIT_GAIN more of the points than the one.
    A neighbour's points are those within NEIGHBOUR_MM of it (depth noise puts a third of them
    beyond INLIER_MM, and they spoil the standing fit)."""
    mine = (np.abs(union_distance(others, pts)) >= NEIGHBOUR_MM) if others else np.ones(len(pts), bool)
    own, pix = pts[mine], pix[mine]
    p = fit.piece
    tip = PYRAMID_SIZES[p.size].height
    if len(own) < 2 * MIN_POINTS or float(np.percentile(own[:, 2], 98)) < tip + BRIDGE_ABOVE_MM:
        return None
    on_top = own[:, 2] > tip - BRIDGE_CUT_MM
    if on_top.sum() < MIN_POINTS or (~on_top).sum() < MIN_POINTS:
        return None
    R, t, _, fs_a, _ = fit_piece(p.size, own[~on_top], frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                 only=HALF_HYPOTHESES)
    a = posed(p, R, t)
    if fs_a > PAIR_FREE_SPACE or _median_mm(a, own[~on_top]) > BRIDGE_MEDIAN_MM:
        return None
    best, best_score = None, -np.inf
    for size in PYRAMID_SIZES:
        R, t, _, fs, _ = fit_piece(size, own[on_top], frame.depth_mm, table.to_camera, frame.intrinsics, cfg,
                                   only=BRIDGE_HYPOTHESES)
        b = posed(replace(p, size=size), R, t, id=new_id)
        if (fs > BRIDGE_FREE_SPACE or _median_mm(b, own[on_top]) > BRIDGE_MEDIAN_MM
                or b.vertices[:, 2].min() < tip - 2 * BRIDGE_CUT_MM):
            continue  # not a piece lying up there
        score = consensus(b, own[on_top], fs, INLIER_MM, cfg)
        if score > best_score:
            best, best_score = (b, fs, rms_of(b, own[on_top])), score
    if best is None:
        return None
    b, fs_b, rms_b = best
    if _explained([a, b], own).sum() - _explained([p], own).sum() < SPLIT_GAIN * len(own):
        return None
    return Bridge(a, b, max(fs_a, fs_b), max(rms_of(a, own[~on_top]), rms_b), pixel_box(pix[on_top]))


def _median_mm(piece: Piece, pts: np.ndarray) -> float:
    return float(np.median(np.abs(signed_distances(piece, pts))))


STAND_MIN_P = 0.1  # the orientation net gives a piece less than this of standing: do not stand it up


def _crop_says_lying(detections: Detections, k: int) -> bool:
    """Whether the orientation net firmly reads detection k as not standing (poor lying fits
    whose crop says "flat" are neighbours' points in the box, not a standing piece)."""
    o = detections.orientation
    return o is not None and 0 <= k < len(o) and float(o[k][0]) < STAND_MIN_P


def split_pairs(frame, scene: Scene, fits: list[PieceFit], detections: Detections, verdicts, heights, table,
                cfg: PoseConfig, classifier=None) -> tuple[Scene, list[PieceFit], Detections, list, list[dict]]:
    """The scene with each poorly fitted piece that is two pieces side by side replaced by both.
    The second piece gets a detection (its points' box) and, with a classifier, its own colour
    and verdict (two touching pieces in one box are often of different colours). Also the
    "absent" doubts of pairs split only nearly within the limits (`near_pair_splits`)."""
    table_pts, seen = heights
    up = seen & (table_pts[..., 2] > cfg.table_cut_mm)
    pieces, fits = list(scene.pieces), list(fits)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(detections)
    doubts: list[dict] = []
    for i in range(len(fits)):
        f = fits[i]
        if f.rms_mm <= SPLIT_RMS_MM or f.hypothesis == "none":
            continue
        got = box_points(detections, f.detection, table_pts, up)
        if got is None:
            continue
        others = [q for q in pieces if q.id != f.piece.id]
        pair = split(f, *got, others, frame, table, cfg, next_piece_id(pieces))
        near = (pair is not None and not pair.holds and near_pair_splits(pair, detections, f.detection)
                and not _inside_another(pair.b, others))
        if pair is not None and (pair.holds or near):
            a, b, fs, rms, box, how = pair.a, pair.b, pair.free_space, pair.rms_mm, pair.box, "pair"
        else:
            stood = None if _crop_says_lying(detections, f.detection) else stand_up(f, got[0], others, frame,
                                                                                     table, cfg)
            if stood is not None:
                pieces[i], fits[i] = stood.piece, stood
                continue
            across = bridge(f, *got, others, frame, table, cfg, next_piece_id(pieces))
            if across is None:
                if pair is not None:  # nearly two pieces: a misfit doubt
                    fits[i] = replace(f, two=(pair.a, replace(pair.b, id=f"{f.piece.id}-two")))
                continue
            a, b, fs, rms, box = across.standing, across.lying, across.free_space, across.rms_mm, across.box
            how = "bridge"
        if any(np.linalg.norm(q.origin - b.origin) < MIN_APART_MM for q in others):
            continue  # the second piece is a neighbour already fitted
        v = classifier.read_box(frame, table, box, heights) if classifier is not None else None
        color, p = v.color() if v is not None else (None, 0.0)
        if color is not None and p >= MIN_COLOR_P:
            b = replace(b, color=color)
        pieces[i] = a
        fits[i] = replace(f, piece=a, free_space=fs, rms_mm=rms)
        pieces.append(b)
        k = len(detections)
        detections = detections.plus(box, f"{b.color}_{b.size}", f.confidence)
        verdicts.append(v)
        fits.append(replace(f, piece=b, free_space=fs, rms_mm=rms, hypothesis=how, detection=k))
        if near:  # only nearly two: the one piece read first may be what stands there
            doubts.append({"kind": "absent", "piece": b.id, "confidence": round(float(f.confidence), 3),
                           "why": "pair", "then": [f.piece.to_dict()]})
    if pieces == list(scene.pieces):
        return scene, fits, detections, verdicts, doubts
    return scene_with(scene, pieces, fits), fits, detections, verdicts, doubts
