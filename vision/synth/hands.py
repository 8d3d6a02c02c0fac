"""A player's hand reaching over a koan, for recordings that measure what the tracker does while
hands are in view: a hand passing over a marked koan (nothing changed: no katsu may follow), or
knocking a piece, taking one away, putting one beside it (katsu must follow, naming the koan).

The hand is boxes: a palm, four fingers as one slab bent down a little, and a sleeved forearm
reaching out of the picture. That is crude, but what the camera has to cope with is there: a
large skin-coloured and cloth-coloured thing 3-15 cm above the table, casting a shadow, with
depth, hiding the koan in part or whole, coming and going over a second or two. Skin tones and
sleeve colours are drawn at random; some sleeves are the pieces' own colours, on purpose.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zendo.knock import KnockError, add_beside, knock, take_away
from zendo.pieces import RAINBOW_COLORS
from zendo.scene import Scene

from .world import Prop

SKIN_RGB = ((236, 188, 160), (214, 160, 124), (180, 124, 90), (132, 86, 58), (92, 60, 42))
SLEEVE_RGB = ((40, 44, 52), (120, 122, 128), (210, 210, 205), (40, 60, 120), (150, 40, 40), (60, 90, 60))
CHANGES = ("pass", "knock", "take", "add")
#: This share of the recordings has its hand pass over and change nothing; the rest change the koan.
PASS_SHARE = 0.25

_BOX_TRIS = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                      [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]], np.int64)


def _box(center, size, rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A box's 8 corners (table frame) and 12 triangles; `size` along the rotation's columns."""
    hx, hy, hz = np.asarray(size, float) / 2
    local = np.array([[-hx, -hy, -hz], [hx, -hy, -hz], [hx, hy, -hz], [-hx, hy, -hz],
                      [-hx, -hy, hz], [hx, -hy, hz], [hx, hy, hz], [-hx, hy, hz]])
    return local @ rot.T + np.asarray(center, float), _BOX_TRIS


def _frame(heading: np.ndarray, pitch_deg: float) -> np.ndarray:
    """Columns: forward (along `heading`, pitched down), sideways, up."""
    f = np.array([heading[0], heading[1], 0.0])
    f /= np.linalg.norm(f)
    side = np.array([-f[1], f[0], 0.0])
    p = np.radians(pitch_deg)
    fwd = f * np.cos(p) - np.array([0, 0, 1.0]) * np.sin(p)
    return np.column_stack([fwd, side, np.cross(fwd, side)])


def hand_props(palm_xyz, reach_dir, skin, sleeve) -> tuple[Prop, Prop]:
    """A hand whose palm's underside centre is at `palm_xyz`, fingers pointing along `reach_dir`
    (the arm comes from the opposite side), as two props: the hand and the sleeved forearm."""
    d = np.asarray(reach_dir, float)[:2]
    d = d / np.linalg.norm(d)
    palm_rot = _frame(d, 8.0)
    c = np.asarray(palm_xyz, float) + palm_rot[:, 2] * 14.0
    pv, pt = _box(c, (90, 85, 28), palm_rot)
    finger_rot = _frame(d, 30.0)
    fc = c + palm_rot[:, 0] * 45 + finger_rot[:, 0] * 38 - palm_rot[:, 2] * 4
    fv, ft = _box(fc, (80, 78, 18), finger_rot)
    arm_rot = _frame(d, -12.0)  # the forearm rises towards the player
    ac = c - palm_rot[:, 0] * 45 - arm_rot[:, 0] * 200
    av, at = _box(ac, (400, 72, 60), arm_rot)
    hand = Prop("hand", np.vstack([pv, fv]), np.vstack([pt, ft + len(pv)]), tuple(skin))
    return hand, Prop("sleeve", av, at, tuple(sleeve))


@dataclass(frozen=True)
class HandVisit:
    """One hand reaching over one koan: when, from where, and what it does there."""

    koan: str  # the koan's id in the scene's extra "koans"
    change: str  # "pass", "knock", "take" or "add"
    piece: str | None  # the piece knocked, taken or added
    after: Scene  # the table once the hand has gone (the same table for "pass")
    target_xy: tuple[float, float]
    hover_mm: float  # the palm's underside above the table while over the koan
    reach_dir: tuple[float, float]
    skin: tuple[int, int, int]
    sleeve: tuple[int, int, int]
    enter: int  # the frame the hand comes into the scene (outside the koan still)
    over: int  # first frame over the koan
    change_frame: int  # first frame of the table after the change (the hand over it still)
    leave: int  # first frame the hand is over the koan no more
    gone: int  # first frame with no hand

    def to_dict(self) -> dict:
        return {"koan": self.koan, "change": self.change, "piece": self.piece, "enter": self.enter, "over": self.over,
                "change_frame": self.change_frame, "leave": self.leave, "gone": self.gone,
                "hover_mm": round(self.hover_mm, 1), "reach_dir": [round(v, 4) for v in self.reach_dir]}

    def scene_at(self, before: Scene, frame: int) -> Scene:
        return self.after if frame >= self.change_frame else before

    def props_at(self, frame: int) -> tuple[Prop, ...]:
        """The hand in `frame`: sliding in from 400 mm off, over the koan, sliding out."""
        if not self.enter <= frame < self.gone:
            return ()
        if frame < self.over:
            off = 400.0 * (self.over - frame) / (self.over - self.enter + 1)
        elif frame < self.leave:
            off = 0.0
        else:
            off = 400.0 * (frame - self.leave + 1) / (self.gone - self.leave + 1)
        d = np.asarray(self.reach_dir)
        at = np.r_[np.asarray(self.target_xy) - d * (off + 20.0), self.hover_mm + off * 0.25]
        return hand_props(at, d, self.skin, self.sleeve)


def _change(scene: Scene, koan: dict, change: str, rng: np.random.Generator) -> tuple[Scene, str]:
    ids = list(koan["pieces"])
    if change == "knock":
        return knock(scene, ids, rng)
    if change == "take":
        return take_away(scene, ids, rng)
    return add_beside(scene, ids, rng, f"p{len(scene.pieces) + 1}", str(rng.choice(RAINBOW_COLORS)))


def _done_to_one(scene: Scene, koans: list[dict], change: str, rng: np.random.Generator):
    """(koan, table after, piece) for the first koan, in random order, the change can be done to."""
    for i in rng.permutation(len(koans)):
        try:
            return (koans[i], *_change(scene, koans[i], change, rng))
        except KnockError:
            continue
    return None


def plan_visit(scene: Scene, rng: np.random.Generator, fps: int, start_s: float) -> HandVisit:
    """A hand reaching over a koan of `scene` from `start_s` on: half a second in, one to two
    seconds over the koan (the change half-way), half a second out. The change is drawn first
    (PASS_SHARE passes, the rest knock, take and add alike), then the koan, among those it can
    be done to (a koan of one piece has none to take away)."""
    koans = scene.extra["koans"]
    change = "pass" if rng.random() < PASS_SHARE else str(rng.choice(CHANGES[1:]))
    after, piece = scene, None
    if change == "pass":
        k = koans[int(rng.permutation(len(koans))[0])]
    else:
        for kind in (change, "add"):  # where no koan takes the change drawn, one more piece beside one
            done = _done_to_one(scene, koans, kind, rng)
            if done is not None:
                (k, after, piece), change = done, kind
                break
        else:  # nothing can be done to any koan: the hand passes over one
            k, change = koans[int(rng.integers(len(koans)))], "pass"
    ids = list(k["pieces"])
    if change in ("take", "add"):
        mine = [i for i in ids if i != piece] + ([piece] if change == "add" else [])
        koans_after = [dict(kk, pieces=mine) if kk is k else kk for kk in koans]
        after = Scene(after.pieces, after.stones, {**after.extra, "koans": koans_after})
    pieces = [p for p in scene.pieces if p.id in set(ids)] + ([after.piece(piece)] if change == "add" else [])
    pts = np.vstack([p.vertices for p in pieces])
    target = pts[:, :2].mean(axis=0)
    top = float(pts[:, 2].max())
    ang = rng.uniform(0, 2 * np.pi)
    enter = int(round(start_s * fps))
    over = enter + max(1, int(round(0.5 * fps)))
    stay = max(2, int(round(rng.uniform(1.0, 2.0) * fps)))
    return HandVisit(k["id"], change, piece, after, (float(target[0]), float(target[1])),
                     top + float(rng.uniform(20, 60)), (float(np.cos(ang)), float(np.sin(ang))),
                     tuple(int(v) for v in SKIN_RGB[int(rng.integers(len(SKIN_RGB)))]),
                     tuple(int(v) for v in SLEEVE_RGB[int(rng.integers(len(SLEEVE_RGB)))]),
                     enter, over, over + stay // 2, over + stay, over + stay + max(1, int(round(0.5 * fps))))
