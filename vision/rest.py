"""Rest: pieces set down as they must lie, once every stage has fitted them.

A fit is noisy in exactly the ways physics is not: a pyramid on a flat table stands on its base or
lies on a face, one in a tower stands on the tip under it, and one laid across two standing
pieces' tips of one height lies level. Pieces held up by others show fewer points (the camera
looks down on them, and what holds them is hidden under them), so their fits tilt; each function
here finishes a pose the search chose, turning it onto what holds it, and leaves it as fitted
where nothing clearly does (docs/perception.md, "Pose": resting, and off the table).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import cv2
import numpy as np

from zendo.build import Spec, flat_across, in_cavity, lay_down, rest_origin
from zendo.geometry import angle_deg, rotation_between
from zendo.pieces import PYRAMID_SIZES, outer_planes, outer_vertices
from zendo.relations import RelationsConfig, nested, orientation
from zendo.scene import Piece, Scene

from .pose import REST_GROUNDED_MM, PieceFit, scene_with

REST_SNAP_DEG = 12.0  # a piece on the table this close to resting on its base or a face rests on it
# ... and this close, where the orientation net surely (NET_SURE_P) reads it resting on that side:
# the net tells a leaning piece ("weird") from a lying one the fit tilted. Tuning tables (900000-,
# 920000-), pieces on the table 12-20 degrees off a side: a medium lying flat fitted 13.7 degrees
# off its face (net: flat 0.97), and two leaning pieces 14-19 degrees off their bases (net: weird
# 0.84 and 0.99).
REST_SNAP_SURE_DEG = 20.0
NET_SURE_P = 0.9


def rest_on_table(piece: Piece, max_deg: float = REST_SNAP_DEG, net: Sequence[float] | None = None) -> Piece:
    """The piece turned to rest exactly on the base or face nearest to the table, when it is on
    the table and within max_deg of doing so (REST_SNAP_SURE_DEG where the orientation net, `net`
    = p(upright, flat, weird), surely reads it resting on that side).

    Why: a pyramid on a flat table rests on its base (upright) or on a face (flat) unless another
    piece holds it tilted, and then it leans by 20 degrees or more (on the synthetic tables every
    leaning piece on the table did); a fit a few degrees off, from stereo noise or a neighbour's
    points, otherwise reads as "weird" near the 10-degree boundary. Turned about the mean of its
    corners, then set down so its lowest corner touches the table."""
    if float(piece.vertices[:, 2].min()) > REST_GROUNDED_MM:
        return piece
    k, angle = _lowest_side(piece)
    limit = max(max_deg, REST_SNAP_SURE_DEG) if _net_reads_resting(net, k) else max_deg
    if angle > limit:
        return piece
    level = _levelled(piece, k)
    return level.moved(np.eye(3), [0.0, 0.0, -float(level.vertices[:, 2].min())])


def _net_reads_resting(net: Sequence[float] | None, side: int) -> bool:
    """Whether the orientation net surely reads the piece standing on its base (side 0) or lying
    on a face (sides 1-4)."""
    return net is not None and float(net[0 if side == 0 else 1]) >= NET_SURE_P


TIP_REACH_MM = 10.0  # a tip this far (across the table) outside the levelled face still holds it
TIP_RISE_MM = 8.0  # a tip this far above or below the levelled face may be what it rests on
TIPS_EVEN_MM = 2.0  # two tips this close in height hold a face level


def _side_normals(piece: Piece) -> np.ndarray:
    """(5, 3): the outward normals of the base, then of the four faces, in the table frame."""
    R = piece.matrix
    return np.vstack([-R[:, 2], (R @ outer_planes(piece.size)[0][:4].T).T])


def _from_down(normal: np.ndarray) -> float:
    """A side's outward normal's angle from straight down, in degrees."""
    return float(np.degrees(np.arccos(np.clip(-normal[2], -1.0, 1.0))))


def _lowest_side(piece: Piece) -> tuple[int, float]:
    """Which side faces the table most (0 the base, 1-4 the faces) and its angle from straight
    down, in degrees."""
    normals = _side_normals(piece)
    k = int(np.argmin(normals[:, 2]))
    return k, _from_down(normals[k])


def turned(piece: Piece, a: np.ndarray, b: np.ndarray, about: np.ndarray | None = None) -> Piece:
    """The piece turned so that direction a points along b, about `about` (default: the mean of
    its corners)."""
    turn = rotation_between(a, b)
    c = piece.vertices.mean(axis=0) if about is None else about
    return piece.moved(turn, c - turn @ c)


def _levelled(piece: Piece, side: int) -> Piece:
    """The piece turned about the mean of its corners until `side` faces straight down."""
    return turned(piece, _side_normals(piece)[side], np.array([0.0, 0.0, -1.0]))


def rest_on_tips(piece: Piece, others: list[Piece], cfg: RelationsConfig | None = None) -> Piece:
    """A raised piece lying across the tips of two upright pieces of one height, levelled onto them.

    Why: a piece lying across two standing pieces' tips is level (it rests on its face, so it is
    flat), but from above a small piece up there shows a few dozen points, and its fit tilts it by
    20-50 degrees: "weird", and the rulebook's orientation is wrong. Its supports are fitted well
    (whole standing pieces on the table), so their tips say where the face lies. Only where two
    upright pieces' tips, the two highest of them within TIPS_EVEN_MM in height, lie under (or within
    TIP_REACH_MM of) the levelled face and within TIP_RISE_MM of its height; a piece resting on one
    tip, or on tips of two heights, is left as fitted."""
    if float(piece.vertices[:, 2].min()) <= REST_GROUNDED_MM:
        return piece
    side, _ = _lowest_side(piece)
    if side == 0:
        return piece  # standing on its base: a tower, not a piece lying across
    cfg = cfg or RelationsConfig()
    level = _levelled(piece, side)
    v = level.vertices
    low = float(v[:, 2].min())
    face = np.asarray(v[v[:, 2] < low + 1e-3, :2], np.float32).reshape(-1, 1, 2)
    heights = []
    for o in others:
        if o.id == piece.id or orientation(o, cfg).value != "upright":
            continue
        tip = o.tip
        outside = -cv2.pointPolygonTest(face, (float(tip[0]), float(tip[1])), True)
        if outside <= TIP_REACH_MM and abs(float(tip[2]) - low) <= TIP_RISE_MM:
            heights.append(float(tip[2]))
    heights.sort()
    if len(heights) < 2 or heights[-1] - heights[-2] > TIPS_EVEN_MM:
        return piece  # one tip, or the highest alone: it would tip over, not lie level
    return level.moved(np.eye(3), [0.0, 0.0, heights[-1] - low])


SEAT_DEG = 25.0  # a raised piece this close to standing, on a standing piece's tip, stands on it
SEAT_REACH_MM = 6.0  # the tip under it lies this near its base's centre (across the table)
SEAT_BELOW_MM = 5.0  # and no further than this below its base (above it: inside its hollow)
# Set down onto that tip (moved, not only turned) when it lies this near where it would rest on it
# (zendo.build.rest_offset). Tuning tables (900000-, 920000-), perceived pieces over a standing tip
# against the truth: towers' tops (68) sat from 2.5 mm above to 3.3 mm sunk into the tip, up to 1.9
# mm off it across; tops of towers whose same-size middle piece was missed (its 5.5 mm band) floated
# 2.1-7.3 mm above it.
SNAP_ABOVE_MM = 1.9  # floating higher than this, a missed piece may lie between: left where fitted
SNAP_SUNK_MM = 3.5
SNAP_ACROSS_MM = 2.5


def seat_on_tip(piece: Piece, others: list[Piece], cfg: RelationsConfig | None = None) -> Piece:
    """A raised piece nearly standing on an upright piece's tip, turned to stand on it coaxially,
    and set down on that tip when it already (nearly) rests there.

    Why: a piece in a tower rests on the tip below it and shares its axis, but the top of a tower
    shows few points, and its fit tilts by a few degrees (up to 16 on the tuning tables: then
    "weird"). Turned about the mean of its corners, as on the table. Moved only when the tip lies
    within SNAP_* of where it would rest on it: a piece standing there cannot float or sink into
    the tip, and a tower link ("stacked") allows 1 mm, less than a fit's error (tuning tables: 53
    of 103 true links read "not stacked", 35 of them 1-3.7 mm off). Farther up it is left, for the
    piece under it may be the wrong one (a middle piece missed) and its height would then be
    wrong."""
    if float(piece.vertices[:, 2].min()) <= REST_GROUNDED_MM:
        return piece
    side, angle = _lowest_side(piece)
    if side != 0 or angle > SEAT_DEG:
        return piece
    cfg = cfg or RelationsConfig()
    base = piece.origin
    under = [o for o in others if o.id != piece.id and orientation(o, cfg).value == "upright"
             and float(np.linalg.norm(o.tip[:2] - base[:2])) <= SEAT_REACH_MM
             and base[2] - SEAT_BELOW_MM < float(o.tip[2]) < float(piece.tip[2])]
    if not under:
        return piece
    lower = max(under, key=lambda o: float(o.tip[2]))
    coaxial = turned(piece, piece.axis, lower.axis)
    off = rest_origin(lower, coaxial.size) - coaxial.origin  # to where it rests
    along = float(off @ lower.axis)
    across = float(np.linalg.norm(off - along * lower.axis))
    if -SNAP_ABOVE_MM <= along <= SNAP_SUNK_MM and across <= SNAP_ACROSS_MM:
        return coaxial.moved(np.eye(3), off)
    return coaxial


# A raised piece that stands on no tip, with its centroid this near (across the table) the midpoint of
# two standing pieces' tips of one height (TIPS_EVEN_MM), and nearer it than either tip, this near
# their height, lies across them. Tuning tables (900000-, 920000-): the 16 raised pieces so placed
# all lay across two tips in truth, centroids 0.0-6.7 mm from the midpoint, 4.5 below to 7.1 mm
# above the tips; 4 of them were fitted tilted, 18-45 degrees ("weird").
ACROSS_REACH_MM = 10.0
ACROSS_RISE_MM = 12.0
ACROSS_SLACK_MM = TIP_REACH_MM  # tips may stand this much farther apart than the face's longest edge


def lay_across(piece: Piece, others: list[Piece], cfg: RelationsConfig | None = None) -> Piece:
    """A raised piece that neither lies nor stands on a tip, laid flat across the two standing
    pieces' tips of one height it hovers over.

    Why: up there a piece shows its top only, and a small one a few dozen points; the fit may stand
    it up or tilt it 20-45 degrees ("weird"), and rest_on_tips levels only a piece already lying on
    a face. Nothing holds a piece tilted in mid-air: one raised to two tips' height, between them,
    with no tip under its base, lies across them. Laid as `zendo.build.flat_across` lays one (its
    face's centroid over the tips' midpoint, the physical place of balance), its axis across the
    line between the tips (where its face is widest), pointing away from the fit's highest corner:
    the points are highest over a lying piece's base, so a fit stood up there puts its tip there."""
    cfg = cfg or RelationsConfig()
    if float(piece.vertices[:, 2].min()) <= REST_GROUNDED_MM or orientation(piece, cfg).value == "flat":
        return piece
    ups = [o for o in others if o.id != piece.id and orientation(o, cfg).value == "upright"
           and float(o.vertices[:, 2].min()) <= REST_GROUNDED_MM]
    base = piece.origin
    if any(float(np.linalg.norm(o.tip[:2] - base[:2])) <= SEAT_REACH_MM for o in ups):
        return piece  # a tip under its base: it stands on it (seat_on_tip's case)
    pair = _tips_under(piece, ups)
    if pair is None:
        return piece
    a, b = pair
    line = b.tip[:2] - a.tip[:2]
    across = np.array([-line[1], line[0]])
    top = piece.vertices[int(np.argmax(piece.vertices[:, 2]))]
    if float((piece.centroid[:2] - top[:2]) @ across) < 0:  # its high end up there is the lying piece's base
        across = -across
    heading = float(np.degrees(np.arctan2(across[1], across[0])))
    return flat_across([a, b], Spec(piece.id, piece.color, piece.size), heading)


def _tips_under(piece: Piece, ups: list[Piece]) -> tuple[Piece, Piece] | None:
    """The two standing pieces whose tips, of one height and close enough for a face to span,
    the piece's centroid hovers between (nearest their midpoint), or None."""
    span = _face_span(piece.size) + ACROSS_SLACK_MM
    c = piece.centroid
    best = None
    for i, a in enumerate(ups):
        for b in ups[i + 1:]:
            mid = (a.tip + b.tip) / 2
            gap = float(np.linalg.norm(a.tip[:2] - b.tip[:2]))
            reach = float(np.linalg.norm(c[:2] - mid[:2]))
            if (abs(float(a.tip[2] - b.tip[2])) > TIPS_EVEN_MM or gap > span or reach > ACROSS_REACH_MM
                    or reach >= min(np.linalg.norm(c[:2] - a.tip[:2]), np.linalg.norm(c[:2] - b.tip[:2]))
                    or abs(float(c[2] - mid[2])) > ACROSS_RISE_MM):
                continue
            if best is None or reach < best[0]:
                best = (reach, a, b)
    return None if best is None else best[1:]


def _face_span(size: str) -> float:
    """The longest edge of a face, a side edge (base corner to tip): the farthest apart two tips
    under a lying piece can be."""
    v = outer_vertices(size)
    return float(np.linalg.norm(v[4] - v[0]))


# A piece lying on the table with its hollow this near where it would rest on another lying piece's
# tip, their axes this close, lies on it: a tower on its side. Tuning tables (900000-, 920000-),
# lying pieces each rested on a face: 15 links of true towers 1.6-3.0 mm off, 4 more 3.1-3.4; past
# 2.9 mm also tops of towers whose middle piece was missed (2.96, 3.16 mm); nested pieces 4.5 mm.
LIE_LINK_MM = 3.0
LIE_LINK_DEG = 12.0


def lies_on_table(piece: Piece, cfg: RelationsConfig) -> bool:
    """Flat by the rulebook's band, its lowest point within REST_GROUNDED_MM of the table."""
    return float(piece.vertices[:, 2].min()) <= REST_GROUNDED_MM and orientation(piece, cfg).value == "flat"


def _lying_links(pieces: list[Piece], cfg: RelationsConfig) -> dict[int, int]:
    """upper index -> lower index: each lying piece on the lying piece whose tip it nearest rests
    on, within LIE_LINK_*, one upper to a lower."""
    lying = [k for k, p in enumerate(pieces) if lies_on_table(p, cfg)]
    near = []
    for lo in lying:
        for up in lying:
            a, b = pieces[lo], pieces[up]
            if lo == up or angle_deg(a.axis, b.axis) > LIE_LINK_DEG:
                continue
            off = float(np.linalg.norm(rest_origin(a, b.size) - b.origin))
            if off <= LIE_LINK_MM:
                near.append((off, up, lo))
    links: dict[int, int] = {}
    for _, up, lo in sorted(near):
        if up not in links and lo not in links.values() and links.get(lo) != up:  # no two-piece loop
            links[up] = lo
    return links


def lay_towers(pieces: list[Piece], cfg: RelationsConfig | None = None) -> list[Piece]:
    """Pieces lying in a tower on its side, set down as one rigid tower.

    Why: a tower on its side rests on its convex hull, so its pieces do not each lie on a face, yet
    the rest stage lays each so (rest_on_table), and a fit is off by a millimetre or two: the top
    is left beside the tip it rests on, "not stacked" (a tower link allows 1 mm), and often not
    touching it. Rebuilt coaxially on the bottom piece, each upper at its resting offset, laid on
    the hull face under it (zendo.build.lay_down, as towers on their side are built), keeping the
    bottom piece's heading, then slid across the table to sit best on all the pieces' fits."""
    cfg = cfg or RelationsConfig()
    links = _lying_links(pieces, cfg)
    out = list(pieces)
    above = {lo: up for up, lo in links.items()}
    for bottom in (k for k in above if k not in links):
        chain = [bottom]
        while chain[-1] in above and above[chain[-1]] not in chain:
            chain.append(above[chain[-1]])
        group = [pieces[bottom]]
        for k in chain[1:]:
            a, b = group[-1], turned(pieces[k], pieces[k].axis, group[-1].axis)  # its own spin kept
            group.append(b.moved(np.eye(3), rest_origin(a, b.size) - b.origin))
        base = pieces[bottom]
        laid = lay_down(group, [0.0, 0.0, -1.0], base.centroid[:2], base.heading_deg)
        slide = np.mean([pieces[k].centroid - p.centroid for k, p in zip(chain, laid)], axis=0)
        for k, p in zip(chain, laid):
            out[k] = p.moved(np.eye(3), [float(slide[0]), float(slide[1]), 0.0])
    return out


def rest_nested(pieces: list[Piece], cfg: RelationsConfig | None = None) -> list[Piece]:
    """A piece nested in a piece lying on the table, set in its cavity on the lower wall.

    Why: the lying piece's lower wall holds it 1-1.6 mm off the table (a wall's thickness), so it is
    not grounded; but a fit from the few points its cover leaves in view, or the nested stage's
    placement, lies within REST_GROUNDED_MM of the table, and rest_on_table set it down on it (on
    the tuning tables 35 of 44 pieces read "grounded" wrongly). Placed coaxially in the cover as
    it was rested, let down onto the wall (`zendo.build.in_cavity`, as `nested_lying` lays one);
    its own colour and size kept. Only a piece that lies: one standing at a lying piece's open
    base can have half its volume in the cavity (held-out table 910043: laid in, it read flat)."""
    cfg = cfg or RelationsConfig()
    out = list(pieces)
    covers = [p for p in pieces if p.size != "small" and lies_on_table(p, cfg)]
    for k, q in enumerate(pieces):
        if orientation(q, cfg).value != "flat":
            continue  # a piece nested in a lying one lies too
        for c in covers:
            if c.id != q.id and PYRAMID_SIZES[q.size].height < PYRAMID_SIZES[c.size].height \
                    and nested(c, q, cfg, same_tower=False).value:
                out[k] = in_cavity(c, q, [0.0, 0.0, -1.0])  # onto the wall under it
                break
    return out


def level_sure_lying(piece: Piece, net: Sequence[float] | None) -> Piece:
    """A raised piece that the orientation net surely (NET_SURE_P) reads lying, turned about the
    mean of its corners to lie level on the face nearest the table, however far its fit tilts;
    one within REST_SNAP_SURE_DEG of its base is left to the tower rules.

    Why: up on other pieces a piece shows its top only, and its fit tilts ("weird": tuning table
    990040, 17 degrees; 900016, 900027 and 980035, small pieces lying on others' tips fitted again
    to the few dozen points of their colour, their axes 33-68 degrees off vertical, 38-73 off
    lying); `rest_on_tips` and `lay_across` level it only where both tips under it were seen
    standing. A piece lying on something it
    cannot be seen through lies on a face, and the net, which reads the whole crop, tells one
    lying from one leaning: on the five tuning sets every raised piece it read lying at 0.9 or
    more lay on a face (46 pieces; one raised piece in all leaned)."""
    if float(piece.vertices[:, 2].min()) <= REST_GROUNDED_MM or not _net_reads_resting(net, 1):
        return piece
    normals = _side_normals(piece)
    if _from_down(normals[0]) <= REST_SNAP_SURE_DEG:
        return piece
    face = 1 + int(np.argmin(normals[1:, 2]))
    return _levelled(piece, face)


def rest_pieces(scene: Scene, fits: list[PieceFit],
                orientations: Mapping[str, Sequence[float]] | None = None) -> tuple[Scene, list[PieceFit]]:
    """`rest_on_table`, `lay_towers` and `rest_nested`, then `seat_on_tip`, `rest_on_tips`,
    `lay_across` and `level_sure_lying`, for every piece of the scene (and its fit report). `orientations`: the
    orientation net's p(upright, flat, weird) by piece id, where it read one. A tower's pieces nest deep
    (the top's base within the bottom's hollow), so each seats on the highest standing tip under
    it: the bottom piece's, stood on the table, when the middle one's fit is tilted; they are
    seated from the bottom up, so each is set down on the piece under it as that was set down."""
    net = orientations or {}
    on_table = rest_nested(lay_towers([rest_on_table(p, net=net.get(p.id)) for p in scene.pieces]))
    seated = list(on_table)
    for k in sorted(range(len(seated)), key=lambda k: float(seated[k].origin[2])):  # bottom up: a top
        seated[k] = seat_on_tip(seated[k], seated)  # sets down on the middle piece as it was set down
    levelled = [rest_on_tips(p, seated) for p in seated]
    rested = [level_sure_lying(lay_across(p, levelled), net.get(p.id)) for p in levelled]
    if all(a is b for a, b in zip(rested, scene.pieces)):
        return scene, fits
    by_id = {p.id: p for p in rested}
    fits = [replace(f, piece=by_id.get(f.piece.id, f.piece)) for f in fits]
    return scene_with(scene, rested, fits), fits
