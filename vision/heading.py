"""Which way a piece lying on the table points, read from its outline in colour.

Why: depth settles how a lying piece lies but not well which way it points. Its tip rests on the
table, where the piece is thinnest and stereo noise (1.5-2.7 mm) is as large as what it shows, so
the fit turns the piece about its middle to wherever the noise fits best: on the tuning tables
(900000-) 12 % of the pieces lying on the table came out more than 10 degrees off (most 10-23
degrees: the refined fit stayed near the heading it started from), and a few pointed the wrong
way altogether (110-140 degrees off). Pointing, touching and "same direction" read that heading.
The colour picture shows the piece's outline sharply; turning the fitted piece about its
centroid until its projected outline covers the piece's colour best (intersection over union)
took the median heading error of those pieces from 2.7 to 1.7 degrees and the share off by more
than 10 degrees from 12 % to 5 %; the tip moves, the rest of the pose does not.

- Which pixels are the piece's colour: those nearer, in Lab (lightness weighing 0.3, since the
  faces of one piece are shaded differently), to the median of the pixels inside its fitted
  outline than to the median of the table pixels round it (under TABLE_MM, outside every outline).
- Pixels inside another piece's outline are left out of the score: a neighbour may hide part of
  this one, or show this one's colour.
- Turns within NEAR_DEG of the fit are taken on the outline alone; a turn farther (the fit
  pointing the wrong way) needs FAR_GAIN more overlap than the best near one, since a small piece
  half hidden has an outline that fits several ways about as well.
- A turn that would push the piece into a neighbour is not taken.
- Where a turn farther than NEAR_DEG covers the colour at least as well as the heading kept, but
  not by FAR_GAIN, the piece gets a "heading" doubt: it may point that way (zendo.doubts). Held-out
  970014: a green small lying against a large one, fitted 110 degrees off, its outline 0.71 turned
  round against 0.67 as fitted; "a piece pointing at another" was marked wrong with no flag.
- Where no turn covers the colour much better than any other (the best turn's overlap exceeds
  the median turn's, over every FAR_STEP_DEG, by under BLIND_GAIN), the picture cannot tell
  which way the piece points, and it gets a "heading" doubt with every other heading (`"why":
  "outline"`; the far turn too, where there is one). Tuning sets (session 39): of the 1,463
  pieces fitted lying on the table and matched to a lying truth, 56 were kept more than 30
  degrees off (3.8 %), 29 of them with no doubt that reached the truth. Of the 40 pieces under
  0.10 with no other such doubt, 12 were off by over 30 degrees, 9 of them unreached before.
  990045 is one: a red small whose koan "points at" another, marked wrong with no flag; its
  outline covers 0.41-0.54 of its colour every way round (0.09 over the median).
  BLIND_GAIN was 0.10 until session 63: fresh 408525 and 408858, a black and a green small
  lying, fitted pointing the other way, their best turns 0.105 and 0.121 over the median, "a
  piece pointing at another" wrong with no flag; at 0.125 right marks flagged on the five tuning
  sets moved by under 0.005 points.
- Where no turn covers the colour well (the best under POOR_IOU), the outline is taken as blind
  too (session 82): the turns are about the fit's middle, and a fit that is off in place leaves
  no heading that fits, however clear the best of them. Fresh 428200- (150 tables): of 663
  pieces lying on the table matched within 8 mm, 20 were kept more than 30 degrees off, 4 of
  them with no heading doubt; 3 of those 4 had a best turn under 0.6, and 32 pieces in all
  under 0.6 gained the doubt (median best 0.82).
- A piece lying up on other pieces (its lowest corner more than ON_TABLE_MM off the table:
  not `vision.pose.on_table`) is never turned: turned about its middle it would leave the tips
  it rests on. Its outline is read
  all the same (session 78): where its best turn lies more than NEAR_DEG / 2 from the fit, the
  piece gets a "heading" doubt with that turn and the far one, if any (`"why": "raised"`), and
  where the outline is blind or a far turn covers the colour as well, the doubts a piece on the
  table gets. Fresh 423400-: of
  105 such pieces matched within 8 mm to their truth (all smalls laid across tips), 5 were fitted
  30-126 degrees off; the doubt names 4 of them and 8 fitted 6-18 degrees off, none fitted within
  6 degrees; and 423687's (matched 8.6 mm off): a blue small fitted 99.5 degrees off, "pointing" at
  a blue large, wrong with no flag, its best turn 90 degrees back. Right marks flagged on the
  tuning and held-out tables: 2 more of 44,934.
Upright against flat was measured too: the outline preferred the truth for 1 of 5 small
upright pieces fitted lying, so it does not decide that.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import cv2
import numpy as np

from zendo.build import turned_about_middle as turned
from zendo.doubts import FLAT_HEADINGS
from zendo.relations import RelationsConfig, orientation, stacked
from zendo.scene import Piece, Scene
from zendo.shapes import near_pairs, solid_distance

from .pose import PieceFit, on_table

NEAR_DEG = 30.0  # turns within this of the fit are taken on the outline alone
STEP_DEG = 2.5  # the finest turn looked at
COARSE_DEG = 5.0  # the first look within NEAR_DEG, refined by STEP_DEG about its best
FAR_STEP_DEG = 15.0  # the look all round, refined by STEP_DEG about its best
FAR_GAIN = 0.10  # a turn beyond NEAR_DEG must cover this much more (IoU) than the best near one
TABLE_MM = 1.0  # a pixel this close to the table plane is the table
MARGIN_PX = 6  # the window: every turn's outline (the corners' reach about the middle) and this
L_WEIGHT = 0.3
MIN_OWN_PX = 5
MIN_TABLE_PX = 20
INTO_MM = 1.0  # a turn may not push a piece this far into a neighbour (unless it was already)
BLIND_GAIN = 0.125  # the best turn covers under this much more than the median one: any heading
POOR_IOU = 0.6  # no turn covers more than this of the colour (IoU): the fit is off in place, any heading (`_blind`)
BLIND_TURNS = tuple(float(h) for h in FLAT_HEADINGS if h)  # what a blind outline's doubt tries: every other 45

Project = Callable[[np.ndarray], np.ndarray]


def _rz(deg) -> np.ndarray:
    """Rotations about the vertical, one per angle (N x 3 x 3)."""
    a = np.radians(np.atleast_1d(np.asarray(deg, float)))
    c, s = np.cos(a), np.sin(a)
    R = np.zeros((len(a), 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 1, 0], R[:, 1, 1], R[:, 2, 2] = c, -s, s, c, 1.0
    return R


def outline_masks(corners: np.ndarray, project: Project, x0: int, y0: int, shape: tuple[int, int]) -> np.ndarray:
    """Projected outlines (the hull of each set of corners, N x 5 x 3 in table mm) as masks of the
    window at (x0, y0): N x rows x columns."""
    n = len(corners)
    uv = (project(corners.reshape(-1, 3)) - (x0, y0)).reshape(n, -1, 2)
    out = np.zeros((n,) + shape, np.uint8)
    for k in range(n):
        hull = cv2.convexHull(np.round(uv[k] * 4).astype(np.int32))
        cv2.fillConvexPoly(out[k], hull, 1, shift=2)
    return out.astype(bool)


def colour_mask(lab: np.ndarray, own: np.ndarray, table: np.ndarray) -> np.ndarray | None:
    """Pixels nearer the piece's colour (median over `own`) than the table's (over `table`)."""
    if own.sum() < MIN_OWN_PX or table.sum() < MIN_TABLE_PX:
        return None
    w = np.array([L_WEIGHT, 1.0, 1.0], np.float32)
    d_own = (((lab - np.median(lab[own], axis=0)) * w) ** 2).sum(axis=-1)
    d_table = (((lab - np.median(lab[table], axis=0)) * w) ** 2).sum(axis=-1)
    return d_own < d_table


def best_turn(piece: Piece, others: list[Piece], rgb: np.ndarray, heights, project: Project
              ) -> tuple[float, float | None, bool]:
    """The turn (degrees) whose outline covers the piece's colour best, 0 when the picture
    cannot tell (too few of its own or of the table's pixels in view); the far turn it passed
    over that covers the colour as well or better (`_search`), if any; and whether the outline
    fits every way round about as well (`_blind`)."""
    window = _window(piece, rgb.shape[:2], project)
    if window is None:
        return 0.0, None, False
    x0, y0, x1, y1 = window
    shape = (y1 - y0, x1 - x0)
    covered = np.zeros(shape, bool)
    if others:
        covered = outline_masks(np.array([q.vertices for q in others]), project, x0, y0, shape).any(axis=0)
    mine = outline_masks(piece.vertices[None], project, x0, y0, shape)[0]
    table_pts, valid = heights
    table = valid[y0:y1, x0:x1] & (table_pts[y0:y1, x0:x1, 2] < TABLE_MM) & ~covered & ~mine
    own = cv2.erode(mine.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool) & ~covered
    lab = cv2.cvtColor(np.ascontiguousarray(rgb[y0:y1, x0:x1]), cv2.COLOR_RGB2LAB).astype(np.float32)
    mask = colour_mask(lab, own, table)
    if mask is None:
        return 0.0, None, False
    seen = ~covered
    mask &= seen
    corners = piece.vertices
    mid = corners.mean(axis=0)

    def scores(degs: np.ndarray) -> np.ndarray:
        """Intersection over union of each turn's outline with the colour, where nothing else is."""
        turns = (corners - mid) @ _rz(degs).transpose(0, 2, 1) + mid
        m = outline_masks(turns, project, x0, y0, shape) & seen
        return (m & mask).sum(axis=(1, 2)) / np.maximum((m | mask).sum(axis=(1, 2)), 1)

    scores = _Remembered(scores)
    turn, far = _search(scores)
    return turn, far, _blind(scores)


class _Remembered:
    """A turn's outline score worked out once: `_search` and `_blind` look at the same turns
    all round, and each is an outline drawn and counted."""

    def __init__(self, scores: Callable[[np.ndarray], np.ndarray]):
        self.scores = scores
        self.memo: dict[float, float] = {}

    def __call__(self, degs: np.ndarray) -> np.ndarray:
        degs = np.atleast_1d(np.asarray(degs, float)).tolist()
        new = [d for d in dict.fromkeys(degs) if d not in self.memo]
        if new:
            self.memo.update(zip(new, self.scores(np.asarray(new)).tolist()))
        return np.array([self.memo[d] for d in degs])

    def best(self) -> float:
        """The best score of every turn looked at so far."""
        return max(self.memo.values())


def _blind(scores: _Remembered) -> bool:
    """Whether the outline cannot tell the heading: it covers the colour about as well every way
    round (the best turn looked at, refined near its peaks by `_search`, exceeds the median of
    the turns every FAR_STEP_DEG by under BLIND_GAIN), or no turn covers it well (under
    POOR_IOU): turned about a middle that is itself off, no heading fits, and the best of poor
    ones is no evidence (fresh 428484, session 82: a red small lying, fitted 14 mm off and
    pointing back, its best turn 0.56, turned 105 degrees to 72 off, "a piece pointing at
    another" wrong with no flag)."""
    best = scores.best()
    if best < POOR_IOU:
        return True
    median = float(np.median(scores(np.arange(-180.0, 180.0, FAR_STEP_DEG))))
    return best - median < BLIND_GAIN


def _window(piece: Piece, shape: tuple[int, int], project: Project) -> tuple[int, int, int, int] | None:
    """The image window (x0, y0, x1, y1) that holds every turn of the piece's outline, and a
    margin of table round it."""
    h, w = shape
    uv = project(piece.vertices)
    mid = project(piece.vertices.mean(axis=0)[None])[0]
    reach = float(np.linalg.norm(uv - mid, axis=1).max()) + MARGIN_PX
    x0, y0 = max(0, int(mid[0] - reach)), max(0, int(mid[1] - reach))
    x1, y1 = min(w, int(mid[0] + reach) + 1), min(h, int(mid[1] + reach) + 1)
    return (x0, y0, x1, y1) if x1 - x0 >= 4 and y1 - y0 >= 4 else None


def _search(scores: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float | None]:
    """Coarse to fine, near the fit first: every COARSE_DEG within NEAR_DEG, then STEP_DEG either
    side of the best; then all round every FAR_STEP_DEG, refined the same way, taken only if it
    covers FAR_GAIN more. Returns the turn and, where the far turn is not taken but covers at
    least as much as the near one, the far turn (else None)."""
    near, near_iou = _refined(scores, np.arange(-NEAR_DEG, NEAR_DEG + 1e-6, COARSE_DEG), (-STEP_DEG, STEP_DEG),
                              NEAR_DEG)
    if near_iou + FAR_GAIN > 1.0:
        return near, None  # nothing farther could cover FAR_GAIN more
    far = np.arange(-180.0, 180.0, FAR_STEP_DEG)
    far, far_iou = _refined(scores, far[np.abs(far) > NEAR_DEG + 1e-6],
                            (-2 * STEP_DEG, -STEP_DEG, STEP_DEG, 2 * STEP_DEG))
    if far_iou >= near_iou + FAR_GAIN:
        return far, None
    return near, (far if far_iou >= near_iou else None)


def _refined(scores, coarse: np.ndarray, steps: tuple[float, ...], limit: float = 360.0) -> tuple[float, float]:
    """The best of the coarse turns, then of it and the turns `steps` from it (within `limit`);
    of equal ones, the smallest turn."""
    def best(at: np.ndarray, iou: np.ndarray) -> tuple[float, float]:
        k = int(np.lexsort((np.abs(at), -iou))[0])
        return float(at[k]), float(iou[k])

    at, iou = best(coarse, scores(coarse))
    around = at + np.asarray(steps)
    around = around[np.abs(around) <= limit + 1e-6]
    return best(np.append(around, at), np.append(scores(around), iou))


def _turn_from(other: float, kept: float) -> float:
    """The far turn `other` (from the fit) as degrees from the heading kept, in [-180, 180)."""
    return round(float((other - kept + 180.0) % 360.0 - 180.0), 1)


def _outline_doubts(pid: str, kept: float, other: float | None, blind: bool,
                    untaken: float | None = None) -> list[dict]:
    """The "heading" doubt a piece's outline gives, its heading `kept` degrees from the fit: every
    other heading where the outline is blind (and the far turn); else the best turn where it was
    not taken (`untaken`: a raised piece's, `"why": "raised"`) and the far turn; else the far turn
    that covers the colour as well as the heading kept."""
    far = [] if other is None else [_turn_from(other, kept)]
    if blind:
        return [{"kind": "heading", "piece": pid, "turns": list(BLIND_TURNS) + far, "why": "outline"}]
    if untaken is not None:
        return [{"kind": "heading", "piece": pid, "turns": [round(untaken, 1), *far], "why": "raised"}]
    return [{"kind": "heading", "piece": pid, "turn": far[0]}] if far else []


def in_lying_towers(pieces: list[Piece], cfg: RelationsConfig) -> set[str]:
    """The ids of the pieces in a tower on its side: each lying piece stacked on another lying one
    of another colour or size, or holding one (`vision.rest.lay_towers` set them coaxial; a piece
    in the tower may rest a wall's thickness or more off the table). Two of one colour and size
    are left out: so lies one piece read twice, 5 mm apart along its axis, which the crossing
    stage drops once one of the two is turned (held-out 940037, 970025, tuning 980012: a large
    read twice kept as a tower, a piece too many)."""
    lying = [p for p in pieces if orientation(p, cfg).value == "flat"]
    return {p.id for a in lying for b in lying
            if a.id != b.id and (a.color, a.size) != (b.color, b.size) and stacked(a, b, cfg).value for p in (a, b)}


def _pushes_in(new: Piece, old: Piece, others: list[Piece]) -> bool:
    """Whether the turned piece goes more than INTO_MM into a neighbour it was clear of (only the
    pieces whose bounding spheres meet the turned one's can)."""
    group = [new] + others
    return any(solid_distance(new, group[j]) < -INTO_MM <= solid_distance(old, group[j])
               for i, j in near_pairs(group, 0.0) if i == 0)


def check_headings(rgb: np.ndarray, scene: Scene, fits: list[PieceFit], heights,
                   project: Project) -> tuple[Scene, list[PieceFit], list[dict]]:
    """Every piece lying on the table turned to where its outline covers its colour best; and a
    "heading" doubt for each that a far turn passed over covers as well (`"turn"`: degrees from
    the heading kept, about the piece's centroid), or whose outline covers it about as well every
    way round (`"turns"`, `"why": "outline"`). Pieces of a tower on its side keep the heading
    they share (`in_lying_towers`): each one's outline is partly the other's, and turning one
    alone about its middle breaks the tower ("stacked" reads a tip within 1 mm). A piece lying up
    on others is not turned but may get a doubt (`"why": "raised"`: the module's docstring)."""
    cfg = RelationsConfig()
    pieces = list(scene.pieces)
    by_id = {}
    doubts = []
    towers = in_lying_towers(pieces, cfg)
    lying = [i for i, p in enumerate(pieces) if p.id not in towers and orientation(p, cfg).value == "flat"]
    raised = [pieces[i] for i in lying if not on_table(pieces[i])]
    for i in [i for i in lying if on_table(pieces[i])]:
        p = pieces[i]
        others = pieces[:i] + pieces[i + 1:]
        deg, other, blind = best_turn(p, others, rgb, heights, project)
        new = turned(p, deg) if abs(deg) >= 1e-6 else p
        if new is not p and not _pushes_in(new, p, others):
            pieces[i] = by_id[p.id] = new
        else:
            deg = 0.0
        doubts += _outline_doubts(p.id, deg, other, blind)
    for p in raised:  # never turned: its outline lying well round from its fit is a doubt
        deg, other, blind = best_turn(p, [q for q in pieces if q.id != p.id], rgb, heights, project)
        doubts += _outline_doubts(p.id, 0.0, other, blind, deg if abs(deg) > NEAR_DEG / 2 else None)
    if not by_id:
        return scene, fits, doubts
    fits = [replace(f, piece=by_id[f.piece.id]) if f.piece.id in by_id else f for f in fits]
    return replace(scene, pieces=tuple(pieces)), fits, doubts
