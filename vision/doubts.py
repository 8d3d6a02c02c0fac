"""Perception's doubts about one frame (zendo/doubts.py says what each kind means for a mark).

Why these kinds and where each comes from (the towers and unboxed stages raise their own):
- class: the classifier's runner-up is within reach (its probability at least CLASS_DOUBT_P),
  or depth and image read different sizes: either reading may be the true one; or the piece's
  box meets the picture's edge, so it may be larger than the part in view (`cut_doubts`);
- absent: the detector was unsure anything is there (confidence under ABSENT_CONF), or two
  pieces' walls cross (`clash_doubts`), or a piece from few depth points is boxed mostly inside
  the box of a poorly fitted piece of its colour, which it may be part of (`double_doubts`);
- covers: a medium or large piece on the table over a cavity the camera cannot see into;
- missed: above-table depth that no fitted piece's silhouette (nor a stone) explains, in a blob
  big enough to be a piece the detector missed; or, at the picture's edge, a patch of colour
  unlike the table's that stands a little above the table around it and that no fitted piece
  explains (`edge_color_blobs`): a piece mostly out of view shows there as a sliver too low for
  depth alone; or a "stone" the
  classifier reads as maybe a pyramid, or whose box stands taller than a marking stone can
  (`stone_doubts`, `"seen": "stone"`): a small piece lying flat seen from above can pass for a
  stone, and then its koan vanishes; or a box the pipeline drew but did not take (`box_doubts`):
  a faint one (`"seen": "faint"`; where the picture's edge cuts it, a piece mostly out of view),
  or one the classifier dropped as no piece while still giving pyramids a share (`"seen":
  "dropped"`), or a faint "stone" the classifier reads as a pyramid (`"seen": "stone", "faint":
  true`); or a patch of colour beside a fitted piece, unlike the table's around it, that
  stands up in depth and that no fitted piece's projected outline explains (`residue_blobs`,
  `"seen": "residue"`): a piece half hidden by a neighbour that the detector boxed with it;
  or a patch of no depth at all, piece-sized, that no box holds (`hole_blobs`, `"seen":
  "hole"`): a glossy face turned to the camera mirrors the projector's pattern away;
- misfit: a fitted piece explains its depth poorly (RMS residual over MISFIT_RMS_MM), which on
  the tuning tables meant a piece missed there more often than not (two pieces read as one, a
  piece lying across others, a tower read short);
- edge: table within the koan gap of a piece lies outside the picture, so a piece of its koan
  may stand where the camera cannot see (a koan partly out of view);
- held: a piece off the table with nothing seen under it, or what was seen under it holds it
  on one side only (zendo.doubts.held), computed from the scene alone;
- orientation: the orientation net gives upright or flat, whichever the fit is not, p >=
  ORIENT_ALT_P for a piece on the table: a few depth points on a small piece fit lying as well
  as standing, and the net's reading is the other witness;
- stacked (under): a medium or large piece lying on the table may be the top of a tower of its
  own size on its side (`lying_stack_doubts`): the towers stage looks only under upright pieces
  (small ones only where depth shows the nest: vision.towers.lying_small_stacks).
The thresholds are set on the tuning sets (seeds 900000-900059; misfit also 920000-920059), not
the held-out one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from zendo.build import rest_offset
from zendo.doubts import bridged, covers, held, joined, with_their_doubts
from zendo.koans import KOAN_GAP_MM
from zendo.pieces import PYRAMID_SIZES, RAINBOW_COLORS, larger_sizes
from zendo.relations import RelationsConfig, orientation
from zendo.scene import Scene
from zendo.shapes import near_pairs, shell_distance

from .classes import PYRAMID_CLASSES
from .classify import PIECE_P, STONE_TALL_MM, pyramid_verdict
from .color_check import neighbours
from .colors import TABLE_MM
from .crossing import SUPPORT_RATIO
from .detect import EDGE_PX, FAINT_CONF, Detections, cut_by_edge, share_inside
from .heading import BLIND_TURNS
from .pose import on_table, signed_distances
from .rest import lies_on_table

# The classifier's runner-up this likely is a class doubt. 0.05 until session 54, whose wider,
# surer classifier puts a wrong reading's true class there less often: on the tuning tables'
# 11,446 pyramid crops (920000-, 930000-, 980000-, 990000-, int8) session 53's net left 142 wrong
# readings without a doubt of the truth at 0.05 and gave 9.9 % of right ones a pyramid runner-up
# over it; the wider net at 0.05 leaves 120 and 6.3 %, at 0.03 105 and 8.8 %: fewer wrong readings
# unflagged and fewer right ones flagged than before on both counts.
CLASS_DOUBT_P = 0.03
ABSENT_CONF = 0.35
MISSED_HEIGHT_MM = 5.0  # depth this far above the table is something standing there
MISSED_MIN_PX = 40  # a blob this big could be a piece (the smallest visible piece shows ~60 px)
THIN_STANDING_MM = 15.0  # ... or big enough before the noise is opened off, and this tall: see `unexplained_blobs`
THIN_LYING_MM = 12.5  # ... or this tall (a small lying stands 14.3 mm) ...
THIN_NEAR_MM = 900.0  # ... where its depth is this near the camera (depth noise grows with the square of it)
MISSED_EDGE_MIN_PX = 15  # at the picture's edge a piece shows only the part inside it
STONE_PAD_PX = 4  # stones' boxes are grown by this much (edges, flying pixels)
OVER_STONE_MM = 12.5  # depth this far up in a stone's box is no stone's: see `unexplained_blobs`
ORIENT_ALT_P = 0.2
CUT_SLIVER_PX = 10  # a box the picture's edge cuts this thin tells no size: see `cut_doubts`
CUT_IN_VIEW = 0.3  # ... nor does a piece whose read outline lies less than this share in the picture
WEIRD_ALT_P = 0.5  # the net reads "weird" this surely where the fit says upright or flat: see `orientation_doubts`
FEW_POINTS = 100  # a piece fitted from fewer depth points of its own is loose in pose: see `orientation_doubts`
IN_VIEW_MIN = 0.75  # a piece whose outline lies less than this share in the picture: see `orientation_doubts`
# the colour sliver at the picture's edge (`edge_color_blobs`), set on the tuning tables: of 18
# such blobs on 120 tables, 8 were pieces and 10 the table's own pattern (checks, stripes); the
# rise over the table around it kept 7 of the pieces and 2 of the patterns
EDGE_BAND_PX = 10  # how far in from the picture's edge a sliver is looked for
EDGE_SEGMENT_PX = 160  # the table's colour is read per stretch of the edge (vignette, light)
EDGE_CHROMA = 12.0  # Lab a*b* distance from the table's colour, at least ...
EDGE_CHROMA_SPREAD = 3.0  # ... and this many times the table's own p90 distance (patterned tables)
EDGE_DARK = 20.0  # or this much darker (Lab L, 0-255) than the table: a black piece (930052: 42 darker)
TABLE_COLOUR_ITERS = 5  # 2-means steps for a cloth of two colours (`table_colours`)
EDGE_RISE_MM = 2.0  # the patch's p90 height over the table's p90 height around it
EDGE_CONTEXT_PX = 20  # "around it"
EDGE_LOW_MM = 15.0  # the table and what stands low on it, not the floor beyond the table's edge
EXPLAINED_MM = 4.0  # a point this close to a fitted piece's solid is that piece's
# a good fit leaves about 1 mm; over 5 mm the tuning tables (900000-, 920000-) had 5 and 12 fewer
# wrong marks unflagged for 0.0 and 0.6 points more right marks flagged (4 mm: more right, no fewer wrong)
MISFIT_RMS_MM = 5.0
LOST_HEADING_MM = 15.0  # a lying piece's fit this far off its points (RMS) tells nothing of its heading: `misfit_doubts`
# a stone the classifier reads as pyramids with this share may be one. Session 53's classifier is
# surer of what it reads: on the five tuning sets' 952 stone boxes it gives pyramids 0.15 or more on
# 3 true stones (0.25 on 5 with the nets before), and 0.243 to one of the 5 pieces boxed as stones
# (900032: a black small lying flat), under the 0.25 that had flagged it
STONE_PIECE_P = 0.15
DROPPED_PIECE_P = 0.15  # a pyramid box dropped as "not a piece" with this pyramid share: see `box_doubts`
INNER_FAINT_CONF = 0.15  # a faint box inside the picture this sure (at its edge, any): see `box_doubts`
TAKEN_SHARE = 0.3  # an untaken box this much inside a kept box or a fitted piece's outline is theirs
FAINT_STONE_PIECE_P = 0.5  # a faint stone box the classifier reads as pyramids this much: see `box_doubts`
# a patch of colour beside a fitted piece (`residue_blobs`), set on the tuning tables: 15 px (after
# a 3 x 3 opening, as the edge's MISSED_EDGE_MIN_PX) standing over MISSED_HEIGHT_MM; the table's
# colour is read this far round each piece's outline; a pixel this near an outline is its rim
# (blur, a pixel of pose error)
RESIDUE_MIN_PX = 15
RESIDUE_RING_PX = 10
RESIDUE_RIM_PX = 2
# a patch where the camera has no depth (`hole_blobs`), set on the tuning tables: this big after a
# 3 x 3 opening, inside the picture, and this much of it outside every box the detector drew
# (grown by HOLE_BOX_PAD_PX: a hole beside a box is a piece's stereo shadow); the ring round it
# where its place on the table is read
HOLE_MIN_PX = 60
HOLE_OUTSIDE = 0.5
HOLE_BOX_PAD_PX = 3
HOLE_RING_PX = 3


def class_doubts(fits, verdicts) -> list[dict]:
    out = []
    for f in fits:
        p = f.piece
        seen = {(p.color, p.size)}
        if f.other_size and f.other_size != p.size:
            seen.add((p.color, f.other_size))
            out.append({"kind": "class", "piece": p.id, "color": p.color, "size": f.other_size})
        v = verdicts[f.detection] if verdicts is not None and 0 <= f.detection < len(verdicts) else None
        if v is None:
            continue
        for cid, prob in ((v.class_id, v.confidence), (v.runner_up, v.runner_up_p)):
            if cid >= len(PYRAMID_CLASSES) or prob < CLASS_DOUBT_P:
                continue
            color, size = PYRAMID_CLASSES[cid].split("_")
            if (color, size) not in seen:
                seen.add((color, size))
                out.append({"kind": "class", "piece": p.id, "color": color, "size": size, "p": round(prob, 3)})
    return out


def cut_doubts(fits, detections: Detections, shape: tuple[int, int],
               project: Callable[[np.ndarray], np.ndarray] | None = None) -> list[dict]:
    """A "class" doubt (`"why": "cut"`) of each larger size, in the colour read, for each piece
    whose box meets the picture's edge (within EDGE_PX), and of the smaller sizes too where the box
    is a sliver or (with `project`) the piece read lies less than CUT_IN_VIEW in the picture.

    Why: the picture shows only part of such a piece, and the part of a large piece that shows
    looks like a smaller piece whole (the classifier reads the crop; depth sees the part in view):
    on the tuning tables 14 of the 214 visible pieces cut by the edge were read a size smaller,
    against about 2 % of pieces in view; held-out 960015, a green large cut by the top edge read
    small, and "all the same size" was marked wrong with no flag. Where the box is a sliver (its
    narrower side under CUT_SLIVER_PX), the smaller sizes too (session 66): a sliver tells no
    size, and the classifier guesses up as well as down (fresh 413227, a red small lying mostly
    beyond the left edge, a box 7 px wide read large). Every cut box so cost 0.27 points more
    right marks flagged on the five tuning sets; slivers only, under 0.01. Nor does a piece most
    of which lies out of view (session 84): fresh 431185, a red small lying across the bottom
    edge, its box 19 x 16 px, read as a red large lying mostly beyond it, and "all its pieces are
    the same size" was wrong with no flag. On 429400-431199 (1,800 tables, final scenes) the
    pieces read whose outline lay under 0.3 in view were read too large 42 times in 117 (5 of
    them with no class doubt naming the true size) and too small 6; from 0.3 to 0.5, 11 and 15 in
    142. Their koans reach out of view, so their marks are mostly flagged already (the "edge"
    doubt): the doubts, 74 there, cost 5 more right marks flagged of 118,910."""
    out = []
    for f in fits:
        if not _box_cut(f, detections, shape):
            continue
        p = f.piece
        x0, y0, x1, y1 = detections.xyxy[f.detection]
        sliver = min(x1 - x0, y1 - y0) < CUT_SLIVER_PX or (
            project is not None and in_view_share(project(p.vertices), shape) < CUT_IN_VIEW)
        for size in PYRAMID_SIZES:
            if size != p.size and (sliver or size in larger_sizes(p.size)):
                out.append({"kind": "class", "piece": p.id, "color": p.color, "size": size, "why": "cut"})
    return out


def _box_cut(f, detections: Detections, shape: tuple[int, int]) -> bool:
    """Whether the fit's own detection box meets the picture's edge (`cut_by_edge`); a piece a
    later stage added, with no box of its own, is not."""
    return 0 <= f.detection < len(detections) and bool(cut_by_edge(detections.xyxy[f.detection], shape))


def without_repeats(doubts: list[dict]) -> list[dict]:
    """Each class doubt once per piece and class: the towers stage's band reading and the
    classifier's reading of the same box may name the same alternative."""
    seen: set[tuple] = set()
    out = []
    for d in doubts:
        if d["kind"] == "class":
            key = (d["piece"], d["color"], d["size"])
            if key in seen:
                continue
            seen.add(key)
        out.append(d)
    return out


def misfit_doubts(fits) -> list[dict]:
    """A "misfit" doubt where a piece fitted from its own depth points explains them poorly; where
    the pairs stage nearly split it, the doubt carries that pair ("two": the piece may be them).
    And (session 65) a "heading" doubt (`"why": "misfit"`, every 45 degrees round) for a piece
    not upright whose fit misses its points by LOST_HEADING_MM or more.

    Why the heading: a fit that far off says where a piece is, not which way it points, and the
    heading stage reads only pieces lying on the table (fresh 410302: a small lying across two
    tips, fitted pointing the other way with an RMS of 28 mm; "a piece pointing at another" wrong
    with no flag). On the five tuning sets 6 pieces not upright missed by 15 mm or more, one of
    them (900025, 26 mm) turned 133 degrees from the truth; of the 107 from 5 to 15 mm, 8 were
    over 30 degrees off, too few to turn every one of them."""
    cfg = RelationsConfig()
    out = []
    for f in fits:
        if f.n_points <= 0 or not (f.rms_mm > MISFIT_RMS_MM or f.maybe_two):
            continue
        d = {"kind": "misfit", "piece": f.piece.id,
             "at": [round(float(f.piece.origin[0]), 1), round(float(f.piece.origin[1]), 1)],
             "rms_mm": round(float(f.rms_mm), 1)}
        if f.two:
            d["two"] = [q.to_dict() for q in f.two]
        out.append(d)
        if f.rms_mm >= LOST_HEADING_MM and orientation(f.piece, cfg).value != "upright":
            out.append({"kind": "heading", "piece": f.piece.id, "turns": list(BLIND_TURNS),
                        "why": "misfit"})
    return out


def in_view_share(uv: np.ndarray, shape: tuple[int, int]) -> float:
    """The share of a piece's projected outline (the hull of its corners `uv` in pixels) that lies
    inside a picture of `shape` (rows, columns)."""
    import cv2

    hull = cv2.convexHull(np.asarray(uv, np.float32))
    area = cv2.contourArea(hull)
    if area <= 1e-6:
        return 1.0
    h, w = shape
    inside, _ = cv2.intersectConvexConvex(hull, np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], np.float32))
    return float(inside) / area


def _loose_why(f, detections: Detections, project: Callable[[np.ndarray], np.ndarray] | None,
               shape: tuple[int, int] | None) -> str | None:
    """Why a fitted piece may stand or lie any way whatever the net reads: "few" depth points of
    its own, or "cut" by the picture's edge (with `shape`: its box meets the edge, or, with
    `project`, its outline lies mostly out of view); else None."""
    if 0 < f.n_points < FEW_POINTS:
        return "few"
    if shape is not None and _box_cut(f, detections, shape):
        return "cut"
    if project is not None and shape is not None and in_view_share(project(f.piece.vertices), shape) < IN_VIEW_MIN:
        return "cut"
    return None


def orientation_doubts(fits, detections: Detections, project: Callable[[np.ndarray], np.ndarray] | None = None,
                       shape: tuple[int, int] | None = None) -> list[dict]:
    """An "orientation" doubt for each piece on the table that the orientation net reads, with
    p >= ORIENT_ALT_P, as upright or flat where the fit says otherwise (`"as"`: which). Pieces a
    later stage added have no reading of their own (an even third each) and get none. And for
    each piece on the table fitted from fewer than FEW_POINTS depth points of its own, both
    (`"why": "few"`; as flat, a lying piece is tried at every heading).

    Why the few points: a pose from a handful of points is loose in place, heading and how the
    piece stands, whatever the net reads. Tuning set 980000-: of the pieces fitted from under 60
    points 4 of 23 were placed over 6 mm off, from 60 to 99 points 5 of 48, from 100 or more 5 of
    840; 980044, a blue small under a black one, 15 points, fitted leaning so that it "points" at
    it; 980006, a yellow small half under a leaning large, 73 points, fitted standing; held-out
    970033, a yellow small, 45 points, fitted 13 mm off: marks wrong, none flagged. A cut at 60
    points left 980006 unflagged; 100 flags 0.3-0.6 points more right marks on the tuning sets.

    And where the net reads the piece neither upright nor flat (weird, p >= WEIRD_ALT_P) and the
    fit says one of them, a doubt of the other (`"why": "weird"`): the fit is not what the
    picture shows, and a piece laid the other way is the nearest alternative the doubts can put.
    Fresh 413112: a red medium, washed pale, leaning on a blue medium, read weird 0.98, fitted
    leaning and set upright by the later stages; "two or more upright pieces" wrong with no flag.

    And, with `project` and the picture's `shape`, for each piece on the table whose outline lies
    less than IN_VIEW_MIN in the picture, both as for few points (`"why": "cut"`): the net and the
    fit read only the part that shows. Fresh 424707: a black large lying, a quarter of it in view
    at the top edge, fitted standing; "all its pieces are flat" wrong with no flag. Over 2,460
    tables (the tuning and held-out sets, 424000- and 424600-) 8 of 395 such pieces with no
    orientation doubt were read the wrong way (upright, flat, leaning), 15 of 23,305 of the rest;
    right marks flagged rose 46.32 -> 46.43 % on the tuning and held-out tables."""
    cfg = RelationsConfig()
    out = []
    for f in fits:
        if not on_table(f.piece):
            continue
        fitted = orientation(f.piece, cfg).value
        probs = detections.orientation_read(f.detection)
        named = set()
        if probs is not None:
            for name, p in zip(("upright", "flat"), probs[:2]):
                if name != fitted and p >= ORIENT_ALT_P:
                    named.add(name)
                    out.append({"kind": "orientation", "piece": f.piece.id, "as": name, "p": round(float(p), 3)})
            other = {"upright": "flat", "flat": "upright"}.get(fitted)
            if other and other not in named and probs[2] >= WEIRD_ALT_P:  # neither upright nor flat
                named.add(other)
                out.append({"kind": "orientation", "piece": f.piece.id, "as": other, "p": round(float(probs[2]), 3),
                            "why": "weird"})
        why = _loose_why(f, detections, project, shape)
        if why:  # as flat even where it lies: every other heading
            ways = ("flat",) if fitted == "upright" else ("upright", "flat")
            out += [{"kind": "orientation", "piece": f.piece.id, "as": name, "why": why}
                    for name in ways if name not in named]
    return out


def shrunk_tower_doubts(fits, doubts: Sequence[dict]) -> list[dict]:
    """A "stacked" doubt ("under", `"why": "shrunk"`) on each upright piece on the table that the
    size check made smaller than the classifier read it (its fit's `other_size` larger) and that
    has none yet: a piece of its new size may stand under it.

    Why: a tower of two of one size stands 5.5 mm taller than one of them, between that size's
    height and the next's, so the classifier reads the taller size and depth the shorter one; the
    towers stage asked its question of the piece at the size read, where a piece of the smaller
    size on its tip would float above what depth saw (fresh 412767: two black smalls read as a
    medium, set small by the size check, no stacked doubt: "two or more upright pieces" wrong
    with no flag)."""
    cfg = RelationsConfig()
    have = {d["piece"] for d in doubts if d["kind"] == "stacked"}
    return [{"kind": "stacked", "piece": f.piece.id, "where": "under", "why": "shrunk"} for f in fits
            if f.other_size in larger_sizes(f.piece.size) and f.piece.id not in have
            and on_table(f.piece) and orientation(f.piece, cfg).value == "upright"]


LYING_STACK_SIZES = ("medium", "large")


def lying_stack_doubts(pieces: Sequence, doubts: Sequence[dict]) -> list[dict]:
    """A "stacked" doubt ("where": "under") for each medium or large piece lying on the table that
    has none yet.

    Why: a tower of one size laid on its side shows its lower pieces only as rims a few pixels
    wide beside the top one (48-49 px each for the mediums of tuning table 920005), and the
    towers stage looks for hidden pieces of a piece's own size only under upright ones. Small
    pieces are left out: on the tuning tables 920000- they flagged 1.3 points more right marks
    and no more wrong ones."""
    cfg = RelationsConfig()
    have = {d["piece"] for d in doubts if d["kind"] == "stacked"}
    return [{"kind": "stacked", "piece": p.id, "where": "under"} for p in pieces
            if p.size in LYING_STACK_SIZES and p.id not in have and lies_on_table(p, cfg)]


def lying_nest_colour_doubts(pieces: Sequence, doubts: Sequence[dict]) -> list[dict]:
    """A "stacked" doubt ("where": "in", "why": "colours") for each small piece lying on the table
    with no stacked doubt yet, where a class doubt (the classifier's, or the colour model's on its
    own pixels) names a small of another colour and no neighbour (`color_check.neighbours`, the
    pieces that may share its pixels) has that colour: two colours read off one lying small, and
    none of its neighbours to lend it the second, are two smalls nested, the inner one's base
    showing beyond the outer's.

    Why: a nest of two smalls lying shows the inner piece only as a band at the outer one's base,
    and where the band's faces drop their depth the nest test (vision.towers.lying_small_stacks)
    has nothing to weigh; fresh 418045, a red small in a yellow one on a green cloth, 69 px of red
    with no depth, read as the yellow alone with red its runner-up (0.106): "exactly two pieces",
    "all the same colour", "touching" and "pointing" wrong and unflagged. A lying small read with a
    second colour is rare: on the five tuning sets 23 of 497, 18 with no stacked doubt yet, and of
    those about half beside a piece of the second colour; the doubt cost 46.73 -> 46.77 % of
    right marks flagged there."""
    cfg = RelationsConfig()
    pieces = list(pieces)
    have = {d["piece"] for d in doubts if d["kind"] == "stacked"}
    read: dict[str, set[str]] = {}  # the small colours each piece's class doubts read (not a nest's or a cut's: "why")
    for d in doubts:
        if d["kind"] == "class" and "why" not in d and d["size"] == "small":
            read.setdefault(d["piece"], set()).add(d["color"])
    seconds = {i: read[p.id] - {p.color} for i, p in enumerate(pieces)
               if p.size == "small" and p.id in read and p.id not in have and lies_on_table(p, cfg)}
    seconds = {i: c for i, c in seconds.items() if c}
    if not seconds:
        return []  # most frames: no lying small reads a second colour, and no neighbours need working out
    around = neighbours(pieces)
    return [{"kind": "stacked", "piece": pieces[i].id, "where": "in", "why": "colours"}
            for i, c in seconds.items() if c - {q.color for q in around[i]}]


def absent_doubts(fits) -> list[dict]:
    """An "absent" doubt for each piece the data barely supports: a weak detection, or any piece
    nested in a lying one. A nested piece has no depth points of its own; it rests on the
    classifier's reading of the few pixels where its base would show, and where the outer piece's
    fit is off or the cloth shows there, those pixels are the table's (tuning table 980028: a
    yellow small "inside" a green large, read off the wood, 0.42; 980040: a red small read 0.76
    off a red-striped cloth beside a lying blue medium's base). Until session 31 only readings
    under `nested.MIN_P` got one; the sure ones cost 41 more right marks flagged of about 20,900
    on the tuning tables and left 2 fewer wrong marks unflagged."""
    return [{"kind": "absent", "piece": f.piece.id, "confidence": round(f.confidence, 3)}
            for f in fits if f.confidence < ABSENT_CONF or f.hypothesis == "nested"]


def unlike_a_piece_doubts(fits, verdicts) -> list[dict]:
    """An "absent" doubt ("why": "crop", "p": the pyramids' share) for each piece whose crop the
    classifier reads as pyramids under PIECE_P, the share at which it makes a detector's stone a
    piece (`vision.classify`). Why: the detector's class (or a stone box's height) decides whether
    the classifier gives the box a pyramid's classes or a stone's, so a stone boxed as a pyramid
    is read as the likeliest pyramid however little its crop looks like one. Fresh
    407275: a black marking stone beside a blue large, boxed as a black small, pyramids 0.13;
    "exactly two pieces" was marked wrong with no flag. On the five tuning sets it is raised
    once, on a stone read as a blue small (900050, pyramids 0.07); the true pieces read lowest
    there were at 0.53 and 0.57."""
    return _read_absent(fits, verdicts, "crop", lambda v: v.pyramid_p < PIECE_P)


def stone_box_doubts(fits, verdicts) -> list[dict]:
    """An "absent" doubt ("why": "stone", "p": the pyramids' share) for each piece read from a
    box the detector drew as a stone and the classifier read as a pyramid (PIECE_P or more; under
    it, `unlike_a_piece_doubts`). Why: the classifier's crop is 96 mm wide, so a marking stone
    beside or half behind a piece is read with that piece in view, and the two nets then disagree
    with nothing to settle it (depth does not: a lying small and a stone's ring stand alike).
    Fresh 430027: a black stone half hidden behind a yellow medium's tip, pyramids 0.74, became
    a black small lying there (three marks wrong, none flagged); 430056: a black stone beside a
    black large, pyramids 0.97 (one). On 426400-430599 (4,200 tables) the classifier made 75
    stone boxes pyramids this way: 64 were pieces (54 smalls), 10 stones and one neither. The
    doubt flagged 80 more right marks there (of about 300,000) and left those 4 wrong marks
    flagged; a marking stone stands as tall as a lying small (their boxes' 90th percentiles of
    height overlap, 5-13 mm), so depth does not tell them apart."""
    return _read_absent(fits, verdicts, "stone", lambda v: v.stone_box and v.pyramid_p >= PIECE_P)


def _read_absent(fits, verdicts, why: str, doubted: Callable) -> list[dict]:
    """An "absent" doubt ("why", "p": the pyramids' share) for each piece whose box's verdict
    the test `doubted` holds: the classifier's readings that leave a piece in question."""
    return [{"kind": "absent", "piece": f.piece.id, "confidence": round(f.confidence, 3), "why": why,
             "p": round(v.pyramid_p, 3)}
            for f in fits if (v := pyramid_verdict(f, verdicts)) is not None and doubted(v)]


SPACE_FEW_POINTS = 40  # a piece fitted from fewer depth points of its own ...
SPACE_FREE = 0.4  # ... with this share of it where the camera saw through may not be there: `space_doubts`
SPACE_MISFIT_FREE = 0.5  # ... or, from any number whose RMS is over MISFIT_RMS_MM, with this share


def space_doubts(fits) -> list[dict]:
    """An "absent" doubt ("why": "space", "free": the share) for each piece fitted from fewer
    than SPACE_FEW_POINTS depth points of its own with SPACE_FREE or more of its surface where
    the camera saw through, or fitted from any number that lie over MISFIT_RMS_MM off it with
    SPACE_MISFIT_FREE or more seen through (`_held_by_depth`): depth hardly holds it, and says
    half of it is not there.

    Why: a flat thing the detector boxed as a pyramid is fitted to the few points it has and
    stands up into empty space (fresh 410609: a black marking stone behind a blue medium, boxed
    and read as a black small, 17 points, 0.50 seen through, pyramids 0.78 so no "crop" doubt:
    "at least one small piece" marked wrong, no flag). On the five tuning sets (4,558 fitted
    pieces) it names 7: 3 that matched no true piece (1 of them in no other absent doubt) and 4
    true smalls from 4 to 33 points (2 of them in one already, for a weak detection).
    Free space alone does not tell: true pieces in towers and under leaning ones reach 0.6 with
    70-150 points.

    Points that lie far off the piece do not hold it either (fresh 418699, session 72: a green
    large boxed a second time over its right half and the table beside it, fitted upright from
    101 points at 9.9 mm RMS and seen through at 0.71, so "two or more upright pieces" counted
    two; wrong with no flag). Of the 18,548 pieces fitted on the tuning, held-out and 418600-
    tables, 8 were over both lines: 6 matched no true piece, and the 2 that did were in an
    absent doubt already; the two this adds matched none."""
    return [{"kind": "absent", "piece": f.piece.id, "confidence": round(f.confidence, 3), "why": "space",
             "free": round(float(f.free_space), 2)}
            for f in fits if not _held_by_depth(f)]


def _held_by_depth(fit) -> bool:
    """Depth says the piece is there: enough of its points, or points that fit it, or a camera
    that saw little through where it would be."""
    if fit.n_points <= 0:
        return True  # fitted from none of its own (a nest's inner piece, a tower's hidden one): depth says nothing
    if fit.n_points < SPACE_FEW_POINTS:
        return fit.free_space < SPACE_FREE
    return fit.rms_mm <= MISFIT_RMS_MM or fit.free_space < SPACE_MISFIT_FREE


DOUBLE_OVERLAP = 0.4  # a piece's box this much inside the box of a piece of its colour: see `double_doubts`
DOUBLE_HOST_FREE = 0.5  # ... whose fit the camera saw through this much of: it fits its depth poorly


def double_doubts(fits, detections: Detections) -> list[dict]:
    """An "absent" doubt ("why": "double", "of": the other) for each piece fitted from fewer than
    FEW_POINTS depth points whose detection box lies DOUBLE_OVERLAP or more inside the box of a
    piece of its colour that fits its depth poorly (its own points' RMS over MISFIT_RMS_MM, or,
    since session 70, the camera saw through over DOUBLE_HOST_FREE of where it would be) and has
    more points.
    Why: the detector boxes part of a piece as a second, smaller one, and the crossing stage drops
    such a double only where it has the piece's size too (held-out 960050: a leaning green
    medium's bright tip boxed as a green small, 42 % inside the medium's box, 47 depth points
    against 153, the medium's fit 6.7 mm RMS). Without the two fits' tests, 5 of the 6 such
    doubts on four tuning tables (900000-) named a true piece: a small on a large one's tip, a
    tower's pieces. Fresh 417477: a blue medium lying, one face pale in the light, boxed whole
    (143 points, fitted 4.0 mm RMS but seen through at 0.57 of it, the false one) and in its blue
    half (71 points, 98 % inside), the two fitted side by side, "exactly two pieces" wrong with no
    flag; on the five tuning sets no host of such a pair is seen through so much."""
    boxed = [f for f in fits if 0 <= f.detection < len(detections)]
    out = []
    for f in (f for f in boxed if f.n_points < FEW_POINTS):
        hosts = [g for g in boxed if _fits_poorly(g) and g.piece.color == f.piece.color
                 and g.n_points > f.n_points and g.detection != f.detection]
        if not hosts:
            continue
        inside = share_inside(detections.xyxy[f.detection], detections.xyxy[[g.detection for g in hosts]])
        k = int(np.argmax(inside >= DOUBLE_OVERLAP))
        if inside[k] >= DOUBLE_OVERLAP:
            out.append({"kind": "absent", "piece": f.piece.id, "confidence": round(f.confidence, 3),
                        "why": "double", "of": hosts[k].piece.id})
    return out


def _fits_poorly(fit) -> bool:
    """Its own points lie far off its solid, or the camera saw through much of where it would be."""
    return fit.rms_mm > MISFIT_RMS_MM or fit.free_space > DOUBLE_HOST_FREE


CLASH_MM = 4.0  # two pieces' walls crossing this deep cannot both stand as fitted (a fit errs by 1-2 mm)


def clash_doubts(pieces: Sequence, fits) -> list[dict]:
    """An "absent" doubt on the less supported (fewer depth points) of two pieces whose walls cross
    deeper than CLASH_MM, when it has none yet; where the two are of one colour and size and the
    weaker has SUPPORT_RATIO or more of the other's points, on both ("why": "twice", "of": the
    other).

    Why: pieces are rigid, so one of the two is not there as fitted, and the weaker is most often
    a false piece read from the other's points: on the tuning tables (900000-, 920000-) 22 of 40
    such pairs held a piece no true piece matched, 17 times the one with fewer points, and one
    (a yellow large read twice, 24 against 378 points) made the only wrong mark there with no
    doubt at all ("exactly two pieces" read three). Two readings of one class that the crossing
    stage kept (each with half the other's points or more: vision.crossing) may be one piece read
    twice, and then points do not tell which reading is the piece: fresh 416351,
    a lying black large boxed whole (302 points) and again in its far half (350 points, fitted at
    another heading), the whole one named, and "a piece pointing at another" marked by the
    half's heading, wrong with no flag."""
    crossing = [(a, b) for a, b in _near(pieces) if shell_distance(a, b) <= -CLASH_MM]
    out = [_absent(weak, fits) for weak, _ in _weaker_of_each(crossing, fits)]
    n_points = {f.piece.id: f.n_points for f in fits}
    twice: dict[str, tuple] = {}  # id -> (the piece, the other reading)
    for a, b in crossing:
        if _read_twice(a, b, n_points):
            twice.setdefault(a.id, (a, b))
            twice.setdefault(b.id, (b, a))
    plain = [d for d in out if d["piece"] not in twice]
    return plain + [_absent(p, fits, why="twice", of=other.id) for p, other in twice.values()]


def _read_twice(a, b, n_points: dict[str, int]) -> bool:
    """Whether two crossing pieces may be one piece read twice with either reading the piece: one
    class, each with SUPPORT_RATIO or more of the other's depth points."""
    na, nb = n_points.get(a.id, 0), n_points.get(b.id, 0)
    return (a.color, a.size) == (b.color, b.size) and min(na, nb) >= SUPPORT_RATIO * max(na, nb)


def _near(pieces: Sequence) -> Iterator[tuple]:
    """The pairs of pieces whose bounding spheres meet (`zendo.shapes.near_pairs`), as pieces."""
    pieces = list(pieces)
    return ((pieces[i], pieces[j]) for i, j in near_pairs(pieces, 0.0))


def _weaker_of_each(pairs: Iterable[tuple], fits, tiebreak: Callable = lambda p: 0) -> Iterator[tuple]:
    """(weaker, other) for each pair, the weaker having fewer depth points (then `tiebreak`, then
    id), each piece named weaker once: the one of two readings that cannot both stand which is
    most often read from the other's points."""
    n_points = {f.piece.id: f.n_points for f in fits}
    seen = set()
    for a, b in pairs:
        weak, strong = sorted((a, b), key=lambda p: (n_points.get(p.id, 0), tiebreak(p), p.id))
        if weak.id not in seen:
            seen.add(weak.id)
            yield weak, strong


def _absent(piece, fits, **why) -> dict:
    """An "absent" doubt on the piece, with its detection's confidence."""
    confidence = next((f.confidence for f in fits if f.piece.id == piece.id), 0.0)
    return {"kind": "absent", "piece": piece.id, "confidence": round(confidence, 3), **why}


ONE_AXIS_DOT = 0.95  # two pieces' axes this near parallel (cos) may share one axis: see `one_colour_nest_doubts`
ONE_AXIS_MM = 6.0  # ... with the one's origin this near the other's axis line (a lying fit errs along it)
ONE_AXIS_ALONG_MM = 12.0  # ... and its base this near the other's along it: nested (0-13.6 mm) or stacked (5.5 mm),
# not a smaller piece on a larger one's tip (15.2-24.9 mm: a tower, whose upper piece shows)


def one_colour_nest_doubts(pieces: Sequence, fits) -> list[dict]:
    """An "absent" doubt ("why": "nest", "of": the other) on the less supported (fewer depth
    points) of two pieces of one colour read on one axis, one in or on the other (nested, or
    stacked upright or lying): their bases within ONE_AXIS_ALONG_MM along it.

    Why: the camera cannot tell a piece of a colour inside or on one of that colour from the
    outer one's cavity or a second box on its rim, the way vision.nested refuses to read an inner
    piece of the outer's colour; the "stacked" doubt allows the second piece that depth hides,
    and this one allows the one piece that a second reading added. On the fresh tables 401800-
    (session 54) a lying black large boxed twice read as a black medium nested in it, and a green
    large with a black medium nested in it read as two green larges stacked lying, each with no
    doubt that took the extra piece away ("exactly two pieces" marked wrong, unflagged)."""
    return [_absent(weak, fits, why="nest", of=strong.id)
            for weak, strong in _weaker_of_each(_one_colour_on_one_axis(pieces), fits,
                                                lambda p: PYRAMID_SIZES[p.size].height)]


def _one_colour_on_one_axis(pieces: Sequence) -> Iterator[tuple]:
    """The near pairs of pieces of one colour, one in or on the other (`_one_axis`)."""
    return ((a, b) for a, b in _near(pieces) if a.color == b.color and _one_axis(a, b))


LEVEL_MM = 1.0  # two bases this near along their axis are level (a nest on the table): both are tried
#: The colours the camera reads (vision.classes.PYRAMID_CLASSES is made of them), each tried on
#: the lower piece of a one-colour tower.
READ_COLOURS = RAINBOW_COLORS


def nest_colour_doubts(pieces: Sequence) -> list[dict]:
    """A "class" doubt ("why": "nest", "of": the other) for each other colour, at its size, on
    the lower (along their axis; both where their bases are level within LEVEL_MM, a nest) of
    each pair of one colour read on one axis (`_one_axis`, as `one_colour_nest_doubts`), and on
    neither if the pair's colours differ.

    Why: the lower piece of a tower shows a band of a few dozen pixels under the upper one's rim
    (a nested one, a rim in its cavity), and the crop the classifier reads is mostly the other
    piece, so it reads the other's colour. Fresh tables 415000- and 415600- (session 68): a
    yellow medium showing 48 px under a red medium read red, a yellow medium (66 px) under a red
    read red, a blue small (27 px) under a yellow small read yellow; 414713 (414400-) a yellow
    medium (33 px) under a blue medium read blue: the "absent" doubt of the pair took a piece
    away, but no doubt gave either another colour, so "at least one medium yellow piece" and "all
    the same colour" were marked wrong with no flag; the band's own colour doubt (the towers
    stage's) asks only where the band's reading gives another colour something. No "p": the camera
    gave these colours nothing, so they are not paired with other pieces' additions
    (zendo.doubts.RECOLOURED_P)."""
    out = []
    for a, b in _one_colour_on_one_axis(pieces):
        along = float((b.origin - a.origin) @ a.axis)
        lower = [(a, b)] if along > LEVEL_MM else [(b, a)] if along < -LEVEL_MM else [(a, b), (b, a)]
        for piece, other in lower:
            out += [{"kind": "class", "piece": piece.id, "color": c, "size": piece.size, "why": "nest", "of": other.id}
                    for c in READ_COLOURS if c != piece.color]
    return out


def _one_axis(a, b) -> bool:
    """Whether b stands on a's axis, in or on a: axes near parallel, b's base near a's axis line
    and near a's base along it (ONE_AXIS_*)."""
    if float(a.axis @ b.axis) < ONE_AXIS_DOT:
        return False
    off = b.origin - a.origin
    along = float(off @ a.axis)
    return bool(np.linalg.norm(off - along * a.axis) <= ONE_AXIS_MM and abs(along) <= ONE_AXIS_ALONG_MM)


GAP_STEPS_MM = 2.5  # two bases this near two resting steps apart along their axis: see `stack_gap_doubts`


def stack_gap_doubts(pieces: Sequence) -> list[dict]:
    """A "stacked" doubt ("why": "gap", "of": the other) for each pair of pieces of one size read
    on one axis (`_one_axis`) with their bases two resting steps apart along it
    (zendo.build.rest_offset, within GAP_STEPS_MM): a piece of their size in each colour between
    them, one step from the first ("where": "on" toward its tip, "in" toward its base).

    Why: a piece of one size rests in or on another one step along its axis; at two steps the
    outer one holds the inner by nothing unless a third lies between them. Fresh 416800- (session
    69), 417280: three smalls lying nested, yellow in red in green, read as the green and the
    yellow, 10 mm apart along their axes; the red middle one, 61 px between them, no box and no
    depth of its own, so "exactly two pieces" and "at least one red piece" were wrong with no
    flag."""
    out = []
    for a, b in _near(pieces):
        if a.size != b.size or not _one_axis(a, b):
            continue
        along = float((b.origin - a.origin) @ a.axis)
        if abs(abs(along) - 2 * rest_offset(a.size, a.size)) <= GAP_STEPS_MM:
            out.append({"kind": "stacked", "piece": a.id, "where": "on" if along > 0 else "in", "why": "gap",
                        "of": b.id})
    return out


def boxes_mask(boxes: np.ndarray, shape) -> np.ndarray:
    """Image pixels of these boxes (xyxy), each grown by STONE_PAD_PX (edges, flying pixels)."""
    m = np.zeros(shape, bool)
    pad = STONE_PAD_PX
    for x0, y0, x1, y1 in np.round(boxes).astype(int):
        m[max(0, y0 - pad):max(0, y1 + pad), max(0, x0 - pad):max(0, x1 + pad)] = True
    return m


def stone_mask(detections: Detections, shape) -> np.ndarray:
    """Image pixels of the stones' boxes, grown a little: stones stand up but are no pieces."""
    return boxes_mask(detections.xyxy[~detections.is_pyramid], shape)


def _at_edge(stats: np.ndarray, shape, margin: int) -> np.ndarray:
    """Per blob (rows of OpenCV's stats: x, y, width, height, area), whether its box is
    `cut_by_edge`."""
    x, y, bw, bh = (stats[:, i] for i in range(4))
    return cut_by_edge(np.column_stack([x, y, x + bw - 1, y + bh - 1]), shape, margin)


def _blobs(mask: np.ndarray, keep: Callable[[np.ndarray], np.ndarray]) -> list[np.ndarray]:
    """The 8-connected blobs of `mask` that keep(stats) accepts (stats: a row per blob of
    OpenCV's x, y, width, height, area; keep answers for all rows at once), each as its pixels
    (row, column), read within the blob's own box. Why at once: a noisy mask has hundreds of
    specks, and asking of each in Python cost 8-10 ms a frame on this 2-core CPU. Why BBDT by
    name: OpenCV's default for 8-connectivity (Spaghetti) took 1.7 ms a 640 x 480 mask on this
    CPU, BBDT 0.5 ms, with the same labels."""
    import cv2

    n, labels, stats, _ = cv2.connectedComponentsWithStatsWithAlgorithm(mask.astype(np.uint8), 8, cv2.CV_32S,
                                                                        cv2.CCL_BBDT)
    out = []
    for i in np.flatnonzero(keep(stats[1:])) + 1:
        x, y, bw, bh = (int(v) for v in stats[i, :4])
        out.append(np.argwhere(labels[y:y + bh, x:x + bw] == i) + (y, x))
    return out


def unexplained(scene: Scene, table_pts: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Above-table pixels farther than EXPLAINED_MM outside every fitted piece's solid: in 3-D,
    so a piece the detector missed shows even where a neighbour's box or silhouette covers it
    (a piece stacked on another, two touching pieces in one box)."""
    ys, xs = np.nonzero(up)
    P = table_pts[ys, xs].astype(np.float64)
    best = np.full(len(P), np.inf)
    # each piece looks only at the points in the square around it: the whole frame's points
    # against every piece cost 50-80 ms a frame on the tuning tables; sorting them by x once, to
    # take a slab per piece, cost 2-3 ms a frame more than this (the sort itself)
    X, Y = np.ascontiguousarray(P[:, 0]), np.ascontiguousarray(P[:, 1])
    for p in scene.pieces:
        r = PYRAMID_SIZES[p.size].bounding_radius + 2 * EXPLAINED_MM
        idx = np.flatnonzero((np.abs(X - p.origin[0]) < r) & (np.abs(Y - p.origin[1]) < r))
        d = P[idx] - p.origin
        idx = idx[np.einsum("ij,ij->i", d, d) < r * r]
        if not len(idx):
            continue
        best[idx] = np.minimum(best[idx], signed_distances(p, P[idx]))
    out = np.zeros(up.shape, bool)
    out[ys, xs] = best > EXPLAINED_MM
    return out


def unexplained_blobs(scene: Scene, detections: Detections, table_pts: np.ndarray, valid: np.ndarray,
                      free: np.ndarray | None = None, thin: bool = False,
                      depth_mm: np.ndarray | None = None, holes: bool = False,
                      over_stones: bool = False) -> list[np.ndarray]:
    """Blobs of above-table depth no fitted piece (nor a stone) explains, big enough to be a piece
    (MISSED_MIN_PX; MISSED_EDGE_MIN_PX at the picture's edge) once a 3 x 3 opening has taken off
    their noisy fringe: each as its pixels (row, column). `free`: `unexplained` pixels from a
    lower cut, when the caller has them (not worked out twice).

    `thin`: also a blob big enough before the opening, not after, that stands THIN_STANDING_MM
    tall (its 90th percentile): a small piece standing seen from the side is a thin wedge, and
    the opening leaves less of it than the line. 1,200 fresh tables (400000-401199): a blue small
    on a blue-striped cloth (400184: 60 px, 36 after the opening, 20 mm) and a black small on a
    dark grey table (401136: 49 px, 16 after, 22 mm) were read as nothing, 15 marks wrong and
    unflagged each; depth noise on that far, dark table left two dozen blobs of 40-130 px with
    some core, all under 12 mm. On 600 more fresh tables (401200-401799) it reached none of the
    52 wrong marks left unflagged: it answers this kind of case, not the unflagged marks at large.
    With `depth_mm` (the frame's depth, the camera's distance per pixel), a blob nearer than
    THIN_NEAR_MM need stand only THIN_LYING_MM: a small lying shows the same way (fresh 410433: a
    blue small on a cloth of blue squares at 751 mm, 64 px, 21 after the opening, its 90th
    percentile 14.8 mm, a lying small's top edge standing 14.3 mm: a koan of one read as none, 15
    marks wrong unflagged; 405603, a black small on a dark grey table at 855 mm, 14.0 mm). Depth
    noise alone made 75 such blobs on the five tuning sets (28 on one table), every one 945-1,493
    mm from the camera: the stereo error grows with the square of the distance (facts.md: 2.4 mm
    RMS at 0.8 m, 5.4 at 1.2 m), and at 1.4 m a blob of noise stands as tall as a lying small.

    `holes`: pixels with no depth that a 3 x 3 closing of the blobs covers count toward a blob's
    size and hold it together (each blob is still returned as its pixels with depth): a piece's
    glossy faces drop much of its depth in specks, and the opening then takes off all the rest
    (fresh 417671, a green small standing on a cloth of green squares, no box: 59 px of
    unexplained depth 18-20 mm up and 30 specks with none among them, no core left, "all its
    pieces are flat" wrong with no flag). `unboxed` does not ask for it: the pieces it reads
    from a blob need the blob's points.

    `over_stones`: depth over OVER_STONE_MM inside a stone's grown box is not taken for the
    stone's (a marking stone stands about 6 mm; a small lying 14 mm): fresh 419488 (session 72),
    a lone red small standing on a red cloth, no box, beside a black stone whose grown box took
    in the top of it, 11-27 mm up; the rest was too little for a piece, and a koan of one was
    read as none, 15 marks wrong with no flag. On the five tuning sets right marks flagged stayed
    46.78 %. The missed doubts ask for it; `unboxed` does not (it would fit a piece there)."""
    import cv2

    up = valid & (table_pts[..., 2] > MISSED_HEIGHT_MM)
    free = (free & up) if free is not None else unexplained(scene, table_pts, up)
    by_stones = stone_mask(detections, up.shape)
    if over_stones:
        by_stones &= ~(valid & (table_pts[..., 2] > OVER_STONE_MM))
    free &= ~by_stones
    if holes:
        closed = cv2.morphologyEx(free.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8)).astype(bool)
        free |= closed & ~valid
    if free.sum() < min(MISSED_MIN_PX, MISSED_EDGE_MIN_PX):
        return []
    core = cv2.morphologyEx(free.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)).astype(bool)

    def big(stats: np.ndarray) -> np.ndarray:
        return stats[:, 4] >= np.where(_at_edge(stats, free.shape, EDGE_PX), MISSED_EDGE_MIN_PX, MISSED_MIN_PX)

    kept = _blobs(core, big)
    if not thin:
        return _with_depth(kept, valid)
    taken = np.zeros(free.shape, bool)
    for b in kept:
        taken[b[:, 0], b[:, 1]] = True

    def line(rows: np.ndarray, cols: np.ndarray) -> float:
        """How tall a thin blob must stand: less where the camera is near enough to see a small lying."""
        if depth_mm is None:
            return THIN_STANDING_MM
        z = depth_mm[rows, cols]
        z = z[z > 0]
        return THIN_LYING_MM if len(z) and float(np.median(z)) <= THIN_NEAR_MM else THIN_STANDING_MM

    def thin_and_tall(b: np.ndarray) -> bool:
        """Some core left by the opening, none of it a blob kept already, and standing tall."""
        rows, cols = b[:, 0], b[:, 1]
        seen = valid[rows, cols]
        return (core[rows, cols].any() and not taken[rows, cols].any() and seen.any()
                and float(np.percentile(table_pts[rows[seen], cols[seen], 2], 90)) >= line(rows[seen], cols[seen]))

    return _with_depth(kept + [b for b in _blobs(free, big) if thin_and_tall(b)], valid)


def _with_depth(blobs: list[np.ndarray], valid: np.ndarray, least: int = 5) -> list[np.ndarray]:
    """Each blob as its pixels with depth (a doubt is placed by them), where it has `least` or more."""
    seen = (b[valid[b[:, 0], b[:, 1]]] for b in blobs)
    return [b for b in seen if len(b) >= least]


def _missed(table_pts: np.ndarray, pix: np.ndarray, **more) -> dict:
    pts = table_pts[pix[:, 0], pix[:, 1]]
    xy = np.median(pts[:, :2], axis=0)
    return {"kind": "missed", "at": [round(float(xy[0]), 1), round(float(xy[1]), 1)],
            "height_mm": round(float(np.percentile(pts[:, 2], 95)), 1), "pixels": len(pix), **more}


def hole_blobs(detections: Detections, valid: np.ndarray) -> list[np.ndarray]:
    """Blobs of pixels with no depth, HOLE_MIN_PX or more after a 3 x 3 opening, not touching the
    picture's edge (where the depth camera's view ends), less than HOLE_OUTSIDE of them inside any
    box the detector drew (stones' too) grown by HOLE_BOX_PAD_PX: each as its pixels (row, column).

    Why: a face of a piece turned square to the camera mirrors the projector's pattern away and
    comes back with no depth, and where the detector missed that piece too (camouflaged on a cloth
    of its colour) nothing else can see it: fresh 414687, a blue small lying on blue squares, 124
    of its 166 pixels with no depth and no box, a koan of one piece read as none (15 marks wrong,
    none flagged). Holes inside a box are the boxed piece's own; beside it, its stereo shadow (a
    strip the second imager cannot see past it). Tuning tables (300, 900000- to 990000-): 6 such
    holes of 20 px or more, 3 on pieces nothing found (22, 90, 118 px), a white stone nothing
    boxed (72 px) and 2 on the bare table (68 px, and a 108 px shadow strip mostly outside the
    box of the piece casting it)."""
    import cv2

    hole = cv2.morphologyEx((~valid).astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    blobs = _blobs(hole, lambda st: (st[:, 4] >= HOLE_MIN_PX) & ~_at_edge(st, valid.shape, 0))
    if not blobs:
        return []
    boxed = np.zeros(valid.shape, bool)
    for x0, y0, x1, y1 in np.round(detections.xyxy).astype(int):
        boxed[max(0, y0 - HOLE_BOX_PAD_PX):max(0, y1 + HOLE_BOX_PAD_PX + 1),
              max(0, x0 - HOLE_BOX_PAD_PX):max(0, x1 + HOLE_BOX_PAD_PX + 1)] = True
    return [pix for pix in blobs if boxed[pix[:, 0], pix[:, 1]].mean() < HOLE_OUTSIDE]


def _missed_at_hole(table_pts: np.ndarray, valid: np.ndarray, pix: np.ndarray) -> dict | None:
    """A "missed" doubt (`"seen": "hole"`) placed where the ring of pixels round a hole meets the
    table: the hole itself has no point to read."""
    import cv2

    m = np.zeros(valid.shape, np.uint8)
    m[pix[:, 0], pix[:, 1]] = 1
    ring = (cv2.dilate(m, np.ones((2 * HOLE_RING_PX + 1,) * 2, np.uint8)) > 0) & (m == 0) & valid
    around = np.argwhere(ring)
    if len(around) < 5:
        return None
    return {**_missed(table_pts, around, seen="hole"), "pixels": len(pix)}


def missed_doubts(scene: Scene, detections: Detections, table_pts: np.ndarray, valid: np.ndarray,
                  rgb: np.ndarray | None = None, project: Callable[[np.ndarray], np.ndarray] | None = None,
                  depth_mm: np.ndarray | None = None) -> list[dict]:
    """Blobs of unexplained above-table depth, each as a place an unseen piece may stand; with
    the colour image, also slivers of a piece's colour at the picture's edge (`"seen": "colour"`)
    and, with `project` too, patches of colour beside fitted pieces (`"seen": "residue"`).
    `depth_mm`: the frame's depth (`unexplained_blobs`)."""
    depth = unexplained_blobs(scene, detections, table_pts, valid, thin=True, depth_mm=depth_mm, holes=True,
                              over_stones=True)
    out = [_missed(table_pts, pix) for pix in depth]
    out += [d for d in (_missed_at_hole(table_pts, valid, pix) for pix in hole_blobs(detections, valid)) if d]
    if rgb is not None:
        out += [_missed(table_pts, pix, seen="colour")
                for pix in edge_color_blobs(rgb, scene, detections, table_pts, valid)]
        if project is not None:
            out += [_missed(table_pts, pix, seen="residue")
                    for pix in residue_blobs(rgb, scene, detections, table_pts, valid, project, depth)]
    return out


def stone_doubts(scene: Scene, detections: Detections, verdicts, table_pts: np.ndarray, valid: np.ndarray
                 ) -> list[dict]:
    """A "missed" doubt (`"seen": "stone"`) at each stone that may be a pyramid: the classifier
    gives pyramids at least STONE_PIECE_P of its reading (it re-reads a stone as a pyramid from
    vision.classify.PIECE_P; on the five tuning sets' 952 stone boxes the true stones gave
    pyramids under 0.15 but for 3, the 5 pieces boxed as stones 0.243 to 0.995), or its box's depth, less
    what fitted pieces explain (`unexplained`), has its 90th percentile over STONE_TALL_MM: a
    marking stone is about 6 mm tall, a small piece lying flat 14 mm. The classifier already
    re-reads a "stone" whose box's middle stands that tall (its median); a lying small one is a
    wedge, low at one end, so its median passes for a stone's. Tuning tables (900000-, 920000-,
    930000-: 571 boxes read as stones, 3 of them pieces): over 10 mm at the 90th percentile, 1 of
    the 3 pieces (11.4 mm; the other two show a few pixels at 3-6 mm) and 1 stone (10.3 mm; 8.9 mm
    is the stones' 99th percentile)."""
    stones = np.nonzero(~detections.is_pyramid)[0]
    if len(stones) == 0:
        return []
    boxes = {k: tuple(max(0, int(v)) for v in np.round(detections.xyxy[k]).astype(int)) for k in stones}
    in_boxes = np.zeros(valid.shape, bool)
    for x0, y0, x1, y1 in boxes.values():
        in_boxes[y0:y1 + 1, x0:x1 + 1] = True
    free = unexplained(scene, table_pts, valid & in_boxes)
    out = []
    for k, (x0, y0, x1, y1) in boxes.items():
        pix = np.argwhere(valid[y0:y1 + 1, x0:x1 + 1]) + (y0, x0)
        if len(pix) < 5:
            continue
        v = verdicts[k] if verdicts is not None and k < len(verdicts) else None
        read = v is not None and v.pyramid_p >= STONE_PIECE_P
        loose = pix[free[pix[:, 0], pix[:, 1]]]
        if len(loose) >= 5 and float(np.percentile(table_pts[loose[:, 0], loose[:, 1], 2], 90)) > STONE_TALL_MM:
            out.append(_missed(table_pts, loose, seen="stone"))
        elif read:
            out.append(_missed(table_pts, pix, seen="stone", p=round(v.pyramid_p, 3)))
    return out


@dataclass(frozen=True)
class Untaken:
    """The boxes the detector drew that the pipeline did not take (`box_doubts`): the faint ones
    (from vision.detect.FAINT_CONF up to the detector's threshold); the pyramid boxes the
    classifier dropped as "not a piece", each with the pyramids' share of its reading as its
    confidence; and the faint stone boxes as the classifier read them, each with the pyramids'
    share too (`PieceClassifier.read_faint_stones`)."""

    faint: Detections = field(default_factory=Detections.empty)
    dropped: Detections = field(default_factory=Detections.empty)
    faint_stones: Detections = field(default_factory=Detections.empty)


def box_doubts(scene: Scene, untaken: Untaken, table_pts: np.ndarray, valid: np.ndarray,
               project: Callable[[np.ndarray], np.ndarray], kept: Detections) -> list[dict]:
    """A "missed" doubt at each box the pipeline drew but did not take, where no kept box nor
    fitted piece's outline holds TAKEN_SHARE of it: a faint pyramid box (`"seen": "faint"`), from
    vision.detect.FAINT_CONF where the picture's edge cuts it (`"edge": true`) and from
    INNER_FAINT_CONF elsewhere, up to the detector's threshold; a pyramid box the classifier
    dropped as "not a piece" while giving pyramids DROPPED_PIECE_P or more (`"seen": "dropped"`);
    and (session 65) a faint stone box the classifier reads as pyramids FAINT_STONE_PIECE_P or
    more (`"seen": "stone", "faint": true`, with `"edge"`); each with that confidence or share as
    "p".

    Why: a koan whose only piece in view shows a sliver at the picture's edge, or one piece on a
    table of its own colour, vanished whole, and every rule's mark of it was wrong with no flag
    (fresh tables 401200-401799, where 45 of the 58 unflagged wrong marks were three such koans:
    a yellow small's sliver boxed at 0.21, a black small on a dark table that the classifier gave
    pyramids 0.19 of). Each threshold is the lowest at which most such boxes on the five tuning
    sets (300 tables) were pieces: faint pyramid boxes left untaken at the edge, 23 of 37 from
    0.05 (16 of 24 from 0.1); inside the picture 7 of 10 from 0.15, 8 of 18 from 0.1, 9 of 37
    from 0.05. The classifier dropped 3 boxes with pyramids over 0.05 that nothing else took, none
    over 0.15 and none a piece (0.15 as for a stone, STONE_PIECE_P). The right marks flagged on
    those sets stayed 44.40-47.92 % (one set +0.08 points).
    Faint stone boxes: fresh 411428, a black small lying on a grey table, washed out to nearly
    the table's grey, boxed only as a black stone at 0.18, which the classifier read as pyramids
    0.91: a koan of one vanished, 15 marks wrong with no flag. On the five tuning sets 12 faint
    stone boxes were left untaken; the 8 the classifier gave pyramids 0.5 or more were all
    pieces (0.55-0.99), the 4 under it 1 piece (0.20) and 3 not (0.01-0.30, one a stone)."""
    faint, dropped, stones = untaken.faint, untaken.dropped, untaken.faint_stones
    edge = cut_by_edge(faint.xyxy, valid.shape, EDGE_PX)
    sure_enough = faint.is_pyramid & (faint.confidence >= np.where(edge, FAINT_CONF, INNER_FAINT_CONF))
    unsure = dropped.is_pyramid & (dropped.confidence >= DROPPED_PIECE_P)
    piece_like = ~stones.is_pyramid & (stones.confidence >= FAINT_STONE_PIECE_P)
    boxes = Detections.merge([faint[sure_enough], dropped[unsure], stones[piece_like]])
    if not len(boxes):
        return []
    seen = ([{"seen": "faint", "edge": bool(e)} for e in edge[sure_enough]] + [{"seen": "dropped"}] * int(unsure.sum())
            + [{"seen": "stone", "faint": True, "edge": bool(e)}
               for e in cut_by_edge(stones.xyxy, valid.shape, EDGE_PX)[piece_like]])
    outlines = [project(p.vertices) for p in scene.pieces]
    taken = np.concatenate([kept.xyxy.reshape(-1, 4)] + [np.hstack([uv.min(axis=0), uv.max(axis=0)])[None] for uv in outlines])
    h, w = valid.shape
    out = []
    for (x0, y0, x1, y1), p, what in zip(boxes.xyxy, boxes.confidence, seen):
        if (share_inside((x0, y0, x1, y1), taken) >= TAKEN_SHARE).any():
            continue
        # every pixel the box touches (floor, ceil): a sliver at the edge is a few rows deep
        x0, y0 = max(0, int(np.floor(x0))), max(0, int(np.floor(y0)))
        x1, y1 = min(w, int(np.ceil(x1))), min(h, int(np.ceil(y1)))
        pix = np.argwhere(valid[y0:y1, x0:x1]) + (y0, x0)
        if len(pix) >= 5:
            out.append(_missed(table_pts, pix, **what, p=round(float(p), 3)))
    return out


def _edge_strips(shape: tuple[int, int]) -> list[tuple[slice, slice]]:
    """The picture's edge band, EDGE_BAND_PX deep, as four strips (the corners in the top and
    bottom ones)."""
    h, w = shape
    b = EDGE_BAND_PX
    return [(slice(0, b), slice(0, w)), (slice(h - b, h), slice(0, w)),
            (slice(b, h - b), slice(0, b)), (slice(b, h - b), slice(w - b, w))]


def _off_table_colour(rgb: np.ndarray, near: np.ndarray, on: np.ndarray) -> np.ndarray:
    """Edge-band pixels whose colour (Lab a*b*) is far from the table's in their stretch of the
    edge, or that are far darker than it (Lab L: a black piece), each measured against how far
    the table's own pixels there stray (a patterned cloth strays far). Only the band is read
    (the whole picture costs 6 ms more)."""
    odd = np.zeros(near.shape, bool)
    s = EDGE_SEGMENT_PX
    for rows, cols in _edge_strips(near.shape):
        lab = _lab(rgb[rows, cols])
        ab, light = lab[..., 1:].astype(np.float32), lab[..., 0].astype(np.float32)
        n_, o_ = near[rows, cols], on[rows, cols]
        along = 1 if ab.shape[1] > ab.shape[0] else 0
        for k in range(0, ab.shape[along], s):
            st = (slice(None), slice(k, k + s)) if along else (slice(k, k + s), slice(None))
            table = o_[st]
            if table.sum() < 50:  # no table to compare with (off the table, or all pieces)
                continue
            # a black piece has no colour to tell it by, only its darkness
            dark = np.median(light[st][table]) - light[st]
            dark_thr = max(EDGE_DARK, EDGE_CHROMA_SPREAD * float(np.percentile(np.abs(dark[table]), 90)))
            odd[rows, cols][st] = n_[st] & (_unlike_table(ab[st], table) | (dark > dark_thr))
    return odd


def _unlike_table(ab: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Pixels whose Lab a*b* lies farther from the nearest of the table's colours
    (`table_colours` of the `table` pixels) than EDGE_CHROMA and than EDGE_CHROMA_SPREAD times
    the table's own p90 distance from them (a patterned cloth strays far)."""
    colours = table_colours(ab[table])
    a, b = ab[..., 0], ab[..., 1]
    d = np.sqrt(np.minimum.reduce([(a - c0) ** 2 + (b - c1) ** 2 for c0, c1 in colours]))
    return d > max(EDGE_CHROMA, EDGE_CHROMA_SPREAD * float(np.percentile(d[table], 90)))


def table_colours(ab: np.ndarray) -> np.ndarray:
    """The table's colours in Lab a*b* (k x 2) from its pixels' (n x 2): the median, or, on a
    cloth of two colours, the two (2-means from a split along the colours' long axis) where they
    lie more than EDGE_CHROMA apart.

    Why: measured from one median, a cloth striped red and yellow strays so far (its p90) that a
    green piece lying on it reads as the table's colour. Fresh 413131: a green small lying
    between a black medium and a blue small on red and yellow stripes, missed by the detector,
    its depth noise in specks: 71 from the median against a line of 87, 50 from the nearer
    stripe's colour against 30. The koan of five read as two, marks wrong with no flag. It costs
    about 0.14 ms a window, some 4 ms a frame on this 2-core CPU (27 windows a frame on 910000-;
    0.29 ms stepping over every pixel, `_distinct`): the 2-means stops once its split settles."""
    one = np.median(ab, axis=0)
    if len(ab) < 2:
        return one[None]
    x, w = _distinct(ab)
    n = w.sum()
    centred = x - (w @ x) / n
    side = centred @ np.linalg.eigh((centred * w[:, None]).T @ centred)[1][:, -1] > 0
    total = w @ x
    for _ in range(TABLE_COLOUR_ITERS):
        n1 = w[side].sum()
        if n1 == 0 or n1 == n:
            return one[None]
        s1 = w[side] @ x[side]
        two = np.array([(total - s1) / (n - n1), s1 / n1])
        nearer = ((x - two[1]) ** 2).sum(axis=1) < ((x - two[0]) ** 2).sum(axis=1)
        if np.array_equal(nearer, side):  # settled: more steps would give the same two
            break
        side = nearer
    if side.all() or not side.any() or np.linalg.norm(two[1] - two[0]) <= EDGE_CHROMA:
        return one[None]
    return two.astype(np.float32)


def _distinct(ab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of `ab` (n x 2, float64) and how many times each comes. Why: a window's
    a*b* are whole numbers (read from 8-bit Lab) and take some 60 values among 800 pixels, so
    the 2-means steps over the distinct ones with their counts (the same split and means) cost
    half as much; rows that are not whole numbers are kept one by one."""
    x = np.asarray(ab, np.float64)
    if np.all((x >= 0) & (x < 256) & (x == np.round(x))):
        keys, w = np.unique((x[:, 0].astype(np.int64) << 8) | x[:, 1].astype(np.int64), return_counts=True)
        return np.column_stack([keys >> 8, keys & 255]).astype(np.float64), w.astype(np.float64)
    return x, np.ones(len(x))


def edge_color_blobs(rgb: np.ndarray, scene: Scene, detections: Detections, table_pts: np.ndarray,
                     valid: np.ndarray) -> list[np.ndarray]:
    """Patches at the picture's edge of a colour unlike the table's, that stand a little above
    the table around them and that no piece read explains: each as its pixels (row, column).

    Why colour: a piece standing just out of view shows only a sliver of its foot, a few pixels
    high and 2-10 mm up, which neither the detector nor depth (MISSED_HEIGHT_MM) picks out; its
    colour does. Why the rise as well: a checked or striped table has patches of other colours
    at its edge too, but they lie flat (the table's depth noise around them is the yardstick).
    Why "explains" in 3-D inside a box (`unexplained`) and not the box itself: a box is grown
    (STONE_PAD_PX) and a neighbour's box by the edge swallows the sliver (held-out 960009: a red
    small beyond the top edge by a green one's box, a koan of five read as two, five marks wrong
    with no flag)."""
    z = table_pts[..., 2]
    near = valid & (np.abs(z) < EDGE_LOW_MM)
    on = valid & (np.abs(z) < TABLE_MM)
    odd = _off_table_colour(rgb, near, on)
    boxed = odd & boxes_mask(detections.xyxy, valid.shape)
    if boxed.any():
        odd &= ~boxed | unexplained(scene, table_pts, boxed)
    if odd.sum() < MISSED_EDGE_MIN_PX:
        return []
    slivers = _blobs(odd, lambda stats: (stats[:, 4] >= MISSED_EDGE_MIN_PX) & _at_edge(stats, odd.shape, 1))
    return [pix for pix in slivers if _rise_mm(pix, z, near & ~odd) >= EDGE_RISE_MM]


def outlines_mask(corners_uv: Sequence[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """The image pixels inside some projected outline (the hull of each piece's corners in
    pixels), painted to a quarter pixel as vision.heading paints one piece's."""
    import cv2

    m = np.zeros(shape, np.uint8)
    for uv in corners_uv:
        cv2.fillConvexPoly(m, cv2.convexHull(np.round(uv * 4).astype(np.int32)), 1, shift=2)
    return m.astype(bool)


def residue_blobs(rgb: np.ndarray, scene: Scene, detections: Detections, table_pts: np.ndarray, valid: np.ndarray,
                  project: Callable[[np.ndarray], np.ndarray], depth_blobs: Sequence[np.ndarray] = ()
                  ) -> list[np.ndarray]:
    """Patches of colour within RESIDUE_RING_PX of a fitted piece's outline, outside every outline
    (and its rim) and every stone's box, whose Lab a*b* is far from the table's around that piece
    (`_unlike_table`, as at the picture's edge), at least RESIDUE_MIN_PX after a 3 x 3 opening and
    standing over MISSED_HEIGHT_MM (their 90th percentile): each as its pixels, less those a blob
    of `depth_blobs` (the depth "missed" doubt's) already has, and less those without depth (a
    point read from no depth is no place on the table).

    Why: a small piece half hidden by a neighbour is often boxed with it, and its depth lies
    within EXPLAINED_MM of the neighbour's solid, so neither the detector nor depth alone tells
    it; its colour beside the neighbour's outline does (fresh 401892: two blue smalls 12 mm apart
    read as one, 3 marks wrong and unflagged). Tuning tables (900000-, 920000-, 930000-, 980000-,
    990000-, 300 tables): 28 such patches beyond the depth doubt's blobs, 23 of them on a piece
    the pipeline missed (the truth mask's piece under most of the patch is no fitted piece's) and
    5 on a piece it had fitted a little off. A first cut without the height read 52 patches, 38
    of them missed pieces (the rest shadows' tint, patterned cloth, stones' rims)."""
    import cv2

    if not scene.pieces:
        return []
    h, w = valid.shape
    corners = [project(p.vertices) for p in scene.pieces]  # each piece projected once
    inside = outlines_mask(corners, (h, w))
    rim = 2 * RESIDUE_RIM_PX + 1
    beside = ~cv2.dilate(inside.astype(np.uint8), np.ones((rim, rim), np.uint8)).astype(bool)
    beside &= ~boxes_mask(detections.xyxy[~detections.is_pyramid], (h, w))
    z = table_pts[..., 2]
    odd = np.zeros((h, w), np.uint8)
    r = RESIDUE_RING_PX
    for uv in corners:
        x0, y0 = np.clip(np.floor(uv.min(axis=0)).astype(int) - r, 0, (w, h))
        x1, y1 = np.clip(np.ceil(uv.max(axis=0)).astype(int) + r + 1, 0, (w, h))
        win = (slice(y0, y1), slice(x0, x1))
        table = valid[win] & (np.abs(z[win]) < TABLE_MM) & ~inside[win]
        if table.sum() < 20:  # no table round it to compare with
            continue
        odd[win] |= beside[win] & _unlike_table(_ab(rgb, x0, y0, x1, y1), table)
    # read only the box round what is odd (a few pieces' rims), a pixel wider: the opening then
    # meets the same empty pixels round it as on the whole picture
    bx, by, bw, bh = cv2.boundingRect(odd)
    if bw * bh < RESIDUE_MIN_PX:
        return []
    bx, by = max(0, bx - 1), max(0, by - 1)
    box = (slice(by, by + bh + 2), slice(bx, bx + bw + 2))
    core = np.zeros((h, w), bool)
    core[box] = cv2.morphologyEx(odd[box], cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)).astype(bool)
    for b in depth_blobs:
        core[b[:, 0], b[:, 1]] = False
    found = [pix + (by, bx) for pix in _blobs(core[box], lambda stats: stats[:, 4] >= RESIDUE_MIN_PX)]
    with_depth = [pix[valid[pix[:, 0], pix[:, 1]]] for pix in found]
    return [pix for pix in with_depth if len(pix) and float(np.percentile(z[pix[:, 0], pix[:, 1]], 90)) > MISSED_HEIGHT_MM]


def _lab(rgb: np.ndarray) -> np.ndarray:
    """A piece of the picture in Lab (uint8) after a 3 x 3 median: the colour the edge slivers and
    the residue patches are both told by (the median takes out sensor speckle)."""
    import cv2

    return cv2.cvtColor(cv2.medianBlur(np.ascontiguousarray(rgb), 3), cv2.COLOR_RGB2LAB)


def _ab(rgb: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    """Lab a*b* of a window of the picture after a 3 x 3 median (as over the whole picture: the
    window is read with a pixel more round it), float32. Why a window: a piece's surround is a
    tenth of the picture, and converting the whole of it cost more than all the rest."""
    h, w = rgb.shape[:2]
    X0, Y0, X1, Y1 = max(0, x0 - 1), max(0, y0 - 1), min(w, x1 + 1), min(h, y1 + 1)
    lab = _lab(rgb[Y0:Y1, X0:X1])
    return lab[y0 - Y0:y1 - Y0, x0 - X0:x1 - X0, 1:].astype(np.float32)


def _rise_mm(pix: np.ndarray, z: np.ndarray, table: np.ndarray) -> float:
    """How far a patch's p90 height stands above the p90 height of the `table` pixels within
    EDGE_CONTEXT_PX of its box."""
    c = EDGE_CONTEXT_PX
    (y, x), (y1, x1) = pix.min(axis=0), pix.max(axis=0) + 1
    sl = (slice(max(0, y - c), y1 + c), slice(max(0, x - c), x1 + c))
    around = z[sl][table[sl]]
    return float(np.percentile(z[pix[:, 0], pix[:, 1]], 90)) - (float(np.percentile(around, 90)) if len(around) else 0.0)


_RING = np.stack([np.cos(np.linspace(0, 2 * np.pi, 12, endpoint=False)),
                  np.sin(np.linspace(0, 2 * np.pi, 12, endpoint=False))], axis=1)


def edge_doubts(scene: Scene, project: Callable[[np.ndarray], np.ndarray], shape: tuple[int, int]) -> list[dict]:
    """An "edge" doubt for each piece with table out of view within KOAN_GAP_MM of its footprint
    (or a vertex of its own out of view): a piece there would belong to its koan, unseen. The
    doubt says which way the picture ends ("toward", a unit direction on the table)."""
    h, w = shape
    m = EDGE_PX
    out = []
    for p in scene.pieces:
        foot = p.vertices[:, :2]
        near = np.concatenate([foot[:, None, :] + r * _RING[None] for r in (KOAN_GAP_MM / 2, KOAN_GAP_MM)]).reshape(-1, 2)
        pts = np.concatenate([p.vertices, np.column_stack([near, np.zeros(len(near))])])
        uv = project(pts)
        gone = (uv[:, 0] < m) | (uv[:, 0] > w - 1 - m) | (uv[:, 1] < m) | (uv[:, 1] > h - 1 - m)
        if not gone.any():
            continue
        d = pts[gone, :2].mean(axis=0) - p.origin[:2]
        n = float(np.linalg.norm(d))
        toward = d / n if n > 1e-6 else np.array([1.0, 0.0])
        out.append({"kind": "edge", "piece": p.id, "toward": [round(float(v), 3) for v in toward]})
    return out


def frame_doubts(scene: Scene, fits: Sequence, detections: Detections, verdicts, table_pts: np.ndarray,
                 valid: np.ndarray, project: Callable[[np.ndarray], np.ndarray], rgb: np.ndarray | None = None,
                 stage_doubts: Sequence[dict] = (),
                 untaken: Untaken = Untaken(), depth_mm: np.ndarray | None = None) -> list[dict]:
    """Every doubt about one perceived frame, as plain dicts (zendo.doubts). `project`: table
    millimetres -> image pixels (where the picture ends, for the edge doubt); `rgb`: the colour
    image (slivers of a piece at the picture's edge); `stage_doubts`: those the towers, unboxed
    and colour-check stages raised, less those on a piece a later stage dropped (crossing,
    unseeable): they would name a piece the Master cannot see; `untaken`: the boxes the detector
    drew that the pipeline did not take (`box_doubts`); `depth_mm`: the frame's depth
    (how near the camera a blob of it is: `unexplained_blobs`)."""
    ids = {p.id for p in scene.pieces}
    stage_doubts = [d for d in stage_doubts if "piece" not in d or d["piece"] in ids]
    absent = absent_doubts(fits)
    for more in (clash_doubts(scene.pieces, fits), double_doubts(fits, detections),
                 one_colour_nest_doubts(scene.pieces, fits), unlike_a_piece_doubts(fits, verdicts),
                 stone_box_doubts(fits, verdicts), space_doubts(fits)):  # one per piece
        weak = {d["piece"] for d in absent}
        absent += [d for d in more if d["piece"] not in weak]
    doubts = without_repeats(
        class_doubts(fits, verdicts) + cut_doubts(fits, detections, valid.shape, project) + nest_colour_doubts(scene.pieces)
        + absent + covers(scene.pieces)
        + misfit_doubts(fits)
        + orientation_doubts(fits, detections, project, valid.shape)
        + missed_doubts(scene, detections, table_pts, valid, rgb, project, depth_mm) + stone_doubts(scene, detections, verdicts, table_pts, valid)
        + box_doubts(scene, untaken, table_pts, valid, project, detections)
        + edge_doubts(scene, project, valid.shape)
        + joined(scene.pieces) + held(scene.pieces) + stack_gap_doubts(scene.pieces) + list(stage_doubts))
    doubts += (lying_stack_doubts(scene.pieces, doubts) + shrunk_tower_doubts(fits, doubts)
               + lying_nest_colour_doubts(scene.pieces, doubts))
    return with_their_doubts(doubts + bridged(scene.pieces, doubts))
