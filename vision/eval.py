"""Evaluation against ground truth: every stage measured on held-out synthetic tables.

Why these figures: the game reads colour x size, orientation, and relations (touching,
pointing, towers ...) near their decision boundaries, so we report detection, attribute and pose
errors (position and axis, modulo the four-fold symmetry), then what they do downstream:
relations outside the judgment band, marks for the beginner rules, and whether every wrong mark
was flagged as a judgment call. Predictions are mapped into the truth's table frame through the
perceived calibration and the truth camera pose (perception itself never reads the latter).

Data: folders written by `zendo eval-set` (or `zendo render`): color.png, depth.png,
camera.json, truth.json. Seeds of the default set (900000..) never appear in training (100000..).
"""
from __future__ import annotations

import functools
import json
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np

from zendo.doubts import DOUBT_KINDS, FactsCache, doubts_for, renamed
from zendo.facts import PERCEPTION_BAND
from zendo.koans import Koan
from zendo.scene import Piece, Scene, scene_from_dict

from .matching import class_penalty, pairs_of_distances, pairs_within_reach
from .targets import judge, target_rows

log = logging.getLogger(__name__)

EVAL_SEED = 900000
MIN_VISIBLE_PX = 60  # a piece showing fewer pixels than this is not expected to be found
MATCH_MM = 20.0
# a true koan no perceived piece was paired with is paired with a perceived koan none of whose
# pieces was paired, their nearest pieces this near: the koan was found, its pieces fitted too far
PLACE_MM = 2 * MATCH_MM


def write_render_folder(scene: Scene, render, folder: str | Path) -> Path:
    """color.png, depth.png, mask.png, camera.json, truth.json: what `zendo render` writes."""
    import cv2

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(d / "color.png"), render.color[..., ::-1])
    cv2.imwrite(str(d / "depth.png"), render.depth)
    cv2.imwrite(str(d / "mask.png"), render.mask)
    intr = render.intrinsics.to_dict()
    (d / "camera.json").write_text(json.dumps({**intr, "depth_units_mm": intr["depth_scale_mm"], "model": "D435 (synthetic)"}))
    (d / "truth.json").write_text(json.dumps(render.truth(scene)))
    return d


def write_eval_set(out: str | Path, n: int, seed: int = EVAL_SEED) -> Path:
    """Render n held-out tables as render folders (the same files `zendo render` writes)."""
    from .trainset import render_example

    out = Path(out)
    for i in range(n):
        s = seed + i
        scene, cam, r = render_example(s)
        write_render_folder(scene, r, out / f"{s:06d}")
    (out / "README.txt").write_text(f"zendo eval-set --n {n} --seed {seed} --out {out}\n")
    return out


def perceived_to_truth(perceived_cam_to_table: np.ndarray, truth_cam_to_table: np.ndarray) -> np.ndarray:
    """The 4x4 transform from the perceived table frame to the truth's (for scoring only)."""
    return np.asarray(truth_cam_to_table) @ np.linalg.inv(perceived_cam_to_table)


def to_truth_frame(scene: Scene, perceived_cam_to_table: np.ndarray, truth_cam_to_table: np.ndarray) -> Scene:
    """Express a perceived scene in the truth's table frame (for scoring only)."""
    T = perceived_to_truth(perceived_cam_to_table, truth_cam_to_table)
    R, t = T[:3, :3], T[:3, 3]
    pieces = tuple(p.moved(R, t) for p in scene.pieces)
    stones = tuple(replace(s, position=tuple(map(float, R @ np.asarray(s.position) + t))) for s in scene.stones)
    return Scene(pieces, stones, scene.extra)


def match(pred: Scene, truth_pieces: list[Piece], reach: float = MATCH_MM) -> list[tuple[int, int, float]]:
    """Pairs (pred index, truth index, centroid distance) by optimal assignment within `reach`
    (MATCH_MM; PLACE_MM for a koan paired by place), a pair of different colour or size costing
    `vision.matching.CLASS_TIE_MM` more.

    Why the class counts: the pieces of a tower or a nest stand a few millimetres apart, and where
    the camera saw only the top one, its fit often sits at the lower one's height. Paired by
    distance alone, the black small seen on top of a red small was scored as the red small read
    black, and the black small as missed (tuning sets, session 44: 30 of 172 colour x size errors
    were such pairs, the true piece of the perceived class 2-6 mm farther). A true piece of the
    perceived class more than CLASS_TIE_MM farther than another still loses to it: the class does
    not pull a pair across the table."""
    return pairs_within_reach([p.centroid for p in pred.pieces], [p.centroid for p in truth_pieces], reach,
                              class_penalty(pred.pieces, truth_pieces))


def match_stones(pred: Scene, truth: Scene) -> list[tuple[int, int]]:
    """Pairs (pred index, truth index) of marking stones within MATCH_MM on the table (a stone has
    no pose to speak of, only where it lies)."""
    return [(i, j) for i, j, _ in pairs_within_reach([s.position[:2] for s in pred.stones],
                                                     [s.position[:2] for s in truth.stones], MATCH_MM)]


def stone_tallies(pred: Scene, truth: Scene, visible: dict[str, int]) -> dict:
    """What the stones came to. Why scored: a marking stone says where a koan is and how it was
    marked, and a small piece lying flat can pass for one (then its koan vanishes)."""
    pairs = match_stones(pred, truth)
    tpieces = np.array([p.centroid[:2] for p in truth.pieces], float).reshape(-1, 2)
    matched = {i for i, _ in pairs}
    unmatched = [s for i, s in enumerate(pred.stones) if i not in matched]
    on_piece = sum(1 for s in unmatched if len(tpieces)
                   and float(np.linalg.norm(tpieces - np.asarray(s.position[:2]), axis=1).min()) <= MATCH_MM)
    return {"stones_pred": len(pred.stones), "stones_truth_visible": sum(
                1 for s in truth.stones if visible.get(s.id, 0) >= MIN_VISIBLE_PX),
            "stones_matched_visible": sum(1 for _, j in pairs if visible.get(truth.stones[j].id, 0) >= MIN_VISIBLE_PX),
            "stones_matched": len(pairs),
            "stones_color_ok": sum(1 for i, j in pairs if pred.stones[i].color == truth.stones[j].color),
            "stones_on_pieces": on_piece}


def koans_by_place(tkoans: list[Koan], tscene: Scene, pkoans: list[Koan], at: dict[str, Piece]) -> dict[str, Koan]:
    """{true koan id: perceived koan} for the true koans none of whose pieces was paired with a
    perceived one, each paired one to one with a perceived koan none of whose pieces was paired
    (ids from `x`), their nearest pieces' centroids within PLACE_MM (`at`: the perceived pieces
    in the truth's frame, by their ids in the perceived scene).

    Why: marks are the Master's, koan by koan. A lone large piece cut by the picture's edge, read
    right but fitted 21 mm off, is a koan found and marked right; paired through its pieces
    alone, it was scored as a koan missed and every one of its marks as wrong (403735, session
    57: 15 "unflagged wrong marks" that were right). Its piece still counts as missed, and the
    pose error stays where it belongs, in the pieces' figures."""
    truth_at = {p.id: p for p in tscene.pieces}
    lost = [k for k in tkoans if not any(i in at for i in k.piece_ids)]
    loose = [k for k in pkoans if all(i.startswith("x") for i in k.piece_ids)]
    if not lost or not loose:
        return {}
    D = np.array([[min(float(np.linalg.norm(truth_at[i].centroid - at[j].centroid))
                       for i in t.piece_ids for j in q.piece_ids) for q in loose] for t in lost])
    return {lost[a].id: loose[b] for a, b, _ in pairs_of_distances(D, PLACE_MM)}


def _renamed_by_place(tpieces: list[Piece], ppieces: list[Piece], at: dict[str, Piece]) -> dict[str, str]:
    """{perceived id: true id} for the pieces of a koan paired by place, each piece paired as
    `match` pairs them but within PLACE_MM: so a wrong mark's cause says colour, size or pose,
    not "missed"."""
    pairs = match(Scene(tuple(at[p.id] for p in ppieces), ()), tpieces, PLACE_MM)
    return {ppieces[i].id: tpieces[j].id for i, j, _ in pairs}


def _axis_err(a: Piece, b: Piece) -> float:
    return float(np.degrees(np.arccos(np.clip(a.axis @ b.axis, -1, 1))))


def _doubts_renamed(doubts: list[dict], id_map: dict, T: np.ndarray | None = None) -> list[dict]:
    """Perceived doubts renamed to the scored pieces' ids; with T, their places moved by it."""
    out = []
    for d in doubts:
        d = renamed(d, id_map)
        if T is not None and "at" in d:
            x, y = d["at"][:2]
            d["at"] = [float(v) for v in (T[:3, :3] @ np.array([x, y, 0.0]) + T[:3, 3])[:2]]
        if T is not None and "toward" in d:  # a direction: turned, not moved
            d["toward"] = [float(v) for v in (T[:3, :3] @ np.array([*d["toward"][:2], 0.0]))[:2]]
        out.append(d)
    return out


@functools.cache
def _rules():
    """The beginner rules parsed once per process (each table is marked against all of them)."""
    try:
        from zendo.rules import BEGINNER_RULES, mark, mark_perceived, parse_rule
    except ImportError:
        return None
    rules = []
    for text in BEGINNER_RULES:
        try:
            rules.append((text, parse_rule(text)))
        except Exception as exc:  # a rule the parser does not take yet
            log.warning("rule not parsed: %s (%s)", text, exc)
    return rules, mark, mark_perceived


def evaluate_frame(pred_local: Scene, perceived_cal: np.ndarray, truth: dict, fits=None, rules=None) -> dict:
    """Raw per-frame tallies (lists and counts) that `summarise` turns into figures.

    Poses are scored in the truth's frame (calibration errors count against them), but relations
    and marks are read from the perceived scene in its own table frame, as the product reads
    them: moved into the truth's frame, a piece standing on the perceived table floats or sinks
    by the plane fit's error there (0.5-1 mm), which is not what the camera told the Master."""
    from zendo.relations import RelationsConfig, koan_facts
    from zendo.koans import split_koans

    tscene = scene_from_dict(truth["scene"], check_geometry=False)
    pred = to_truth_frame(pred_local, perceived_cal, np.asarray(truth["camera_to_table"]))
    visible = {o["id"]: o["visible_px"] for o in truth["objects"] if o["kind"] == "piece"}
    tp_list = list(tscene.pieces)
    pairs = match(pred, tp_list)
    stone_visible = {o["id"]: o["visible_px"] for o in truth["objects"] if o["kind"] == "stone"}
    out: dict = {**stone_tallies(pred, tscene, stone_visible), "n_pred": len(pred.pieces), "n_truth": len(tp_list),
                 "n_truth_visible": sum(1 for p in tp_list if visible.get(p.id, 0) >= MIN_VISIBLE_PX),
                 "matched": len(pairs),
                 "matched_visible": sum(1 for _, j, _ in pairs if visible.get(tp_list[j].id, 0) >= MIN_VISIBLE_PX),
                 "cls_ok": 0, "cls_ok_visible": 0, "class_errors": [], "color_ok": 0, "size_ok": 0,
                 "orient_ok": 0, "orient_n": 0,
                 "pos_err": [], "axis_err": [], "rel_ok": 0, "rel_n": 0, "marks": [],
                 "uncertain": 0, "confusions": [], "kinds": [], "rel_by": []}
    cfg_t = RelationsConfig()
    from zendo.relations import orientation

    renamed = []  # the perceived pieces in their own frame, named as the truth pieces they match
    id_map = {}
    for i, j, match_mm in pairs:
        p, t = pred.pieces[i], tp_list[j]
        right = p.color == t.color and p.size == t.size
        out["cls_ok"] += int(right)
        out["color_ok"] += int(p.color == t.color)
        out["size_ok"] += int(p.size == t.size)
        out["cls_ok_visible"] += int(right and visible.get(t.id, 0) >= MIN_VISIBLE_PX)
        if not right:
            out["confusions"].append(f"{t.color}_{t.size}->{p.color}_{p.size}")
            out["class_errors"].append(class_error_cause(t, tp_list, visible.get(t.id, 0), match_mm))
        o_t = orientation(t, cfg_t)
        o_p = orientation(p, cfg_t)
        out["orient_n"] += 1
        out["orient_ok"] += int(o_t.value == o_p.value)
        out["pos_err"].append(float(np.linalg.norm(p.origin - t.origin)))
        out["axis_err"].append(_axis_err(p, t))
        low = float(t.vertices[:, 2].min())
        out["kinds"].append((f"{o_t.value}, {'on the table' if low < 0.5 else 'raised'}", out["axis_err"][-1] > 10.0))
        id_map[p.id] = t.id
        renamed.append(replace(pred_local.pieces[i], id=t.id))
    for k, p in enumerate(pred_local.pieces):
        id_map.setdefault(p.id, f"x{k}")
    unmatched = [replace(p, id=id_map[p.id]) for p in pred_local.pieces if id_map[p.id].startswith("x")]
    pscene = Scene(tuple(renamed + unmatched), pred_local.stones)
    perceived_doubts = pred_local.extra.get("perception", {}).get("doubts", [])
    doubts = _doubts_renamed(perceived_doubts, id_map)
    doubts_truth_frame = _doubts_renamed(perceived_doubts, id_map,
                                         perceived_to_truth(perceived_cal, np.asarray(truth["camera_to_table"])))
    if fits is not None:
        unc = set(pred_local.extra.get("perception", {}).get("uncertain", []))
        out["uncertain"] = len(unc)
    # relations and marks, koan by koan of the truth
    cfg_p = RelationsConfig(band=dict(PERCEPTION_BAND))
    try:
        tkoans = split_koans(tscene)
    except Exception:
        tkoans = []
    by_id = {p.id: p for p in pscene.pieces}
    try:
        pkoans = split_koans(pscene)
    except Exception:
        pkoans = []
    at = {id_map[p.id]: q for p, q in zip(pred_local.pieces, pred.pieces)}
    placed = koans_by_place(tkoans, tscene, pkoans, at)
    out["koans_out_of_view"] = 0
    out["koans_by_place"] = 0
    for k in tkoans:
        tpieces = k.pieces(tscene)
        if not any(visible.get(i, 0) >= MIN_VISIBLE_PX for i in k.piece_ids):
            out["koans_out_of_view"] += 1  # no piece of it shows enough to be found: nothing to perceive
            continue
        tf = koan_facts(k.id, tpieces, cfg_t)
        # the perceived koan that holds most of these pieces
        best, overlap = None, 0
        for pk in pkoans:
            ov = len(set(pk.piece_ids) & set(k.piece_ids))
            if ov > overlap:
                best, overlap = pk, ov
        k_by_id, perceived_ids = by_id, best.piece_ids if best else ()
        if best is None and k.id in placed:
            best = placed[k.id]
            out["koans_by_place"] += 1
            names = _renamed_by_place(tpieces, best.pieces(pscene), at)
            k_by_id = {**by_id, **{names[i]: by_id[i] for i in names}}
            perceived_ids = tuple(names.get(i, i) for i in best.piece_ids)
        ppieces = best.pieces(pscene) if best else []
        pf = koan_facts(k.id, ppieces, cfg_p) if ppieces else None
        # one cache for the koan's alternatives under all the rules: most doubts' alternatives are
        # the same koans for every rule, and their facts are what marking spends its time on
        facts_of = FactsCache(lambda ps, kid=k.id: koan_facts(kid, ps, cfg_p))
        if all(pid in by_id for pid in k.piece_ids) and pf is not None:
            for key_, pr in tf.predicates.items():
                if pr.is_borderline(cfg_t.band):
                    continue
                if not all(a in by_id for a in pr.args):
                    continue
                other = pf.predicates.get(key_)
                # absent from the perceived facts means "not so"
                ok = other.value == pr.value if other is not None else pr.value in (False,)
                out["rel_n"] += 1
                out["rel_ok"] += int(ok)
                out["rel_by"].append((pr.name, ok))
        if rules:
            rule_list, mark, mark_perceived = rules
            kdoubts = doubts_for(ppieces, doubts) if ppieces else []
            # nothing perceived here: the Master is still told if the camera saw something it could not read
            unread = not ppieces and bool(doubts_for(tpieces, [d for d in doubts_truth_frame if d["kind"] == "missed"]))
            cause = _wrong_cause(k.piece_ids, k_by_id, {p.id: p for p in tpieces}, visible, perceived_ids)
            for text, rule in rule_list:
                try:
                    mt = mark(rule, tf)
                    mp = mark_perceived(rule, pf, ppieces, kdoubts, facts_of) if pf is not None else None
                except Exception as exc:
                    log.debug("marking failed: %s", exc)
                    continue
                if mt.judgment_call:
                    continue  # the truth itself is a judgment call: not scored
                wrong = mp is None or mp.mark != mt.mark
                flagged = (mp is not None and mp.judgment_call) or unread
                if wrong and not flagged and log.isEnabledFor(logging.DEBUG):
                    log.debug("unflagged wrong mark (%s): %s | truth %s | seen %s | doubts %s", cause, text,
                              [(p.id, p.color, p.size, visible.get(p.id, 0)) for p in tpieces],
                              [(p.id, p.color, p.size) for p in ppieces], kdoubts)
                why = tuple(sorted({d["kind"] for d in mp.doubts} | ({"band"} if mp.borderline else set()))) if mp else ()
                out["marks"].append((wrong, flagged, cause, why))
    return out


CLASS_ERROR_CAUSES = ("barely visible", "stacked or nested", "pose off", "lone piece")
COAXIAL_MM = 4.0  # a true piece whose origin is this near another's axis line stands in a tower or nest with it
POSE_OFF_MM = 8.0  # a perceived piece matched this far from its true piece was fitted elsewhere


def class_error_cause(t: Piece, truth: list[Piece], visible_px: int, match_mm: float) -> str:
    """Why a matched piece's colour or size was read wrong, first that applies: it shows under
    MIN_VISIBLE_PX; another true piece shares its axis (a tower, upright or lying, or a nest,
    where one box holds both); its fit stands POSE_OFF_MM or more from it; else it was a lone
    piece read wrong. Where colour x size falls short, this says whether the classifier or the
    structure around it is to blame."""
    if visible_px < MIN_VISIBLE_PX:
        return "barely visible"
    for q in truth:
        if q.id != t.id and abs(float(np.dot(q.axis, t.axis))) > 0.95:
            off = q.origin - t.origin
            if np.linalg.norm(off - np.dot(off, t.axis) * t.axis) < COAXIAL_MM:
                return "stacked or nested"
    return "pose off" if match_mm >= POSE_OFF_MM else "lone piece"


WRONG_CAUSES = ("missed piece", "hidden piece", "colour or size", "extra piece", "pose")


def _wrong_cause(truth_ids, by_id: dict, truth_by_id: dict, visible: dict, perceived_ids) -> str:
    """What a koan's perception got wrong first, in the order that explains a wrong mark best:
    a visible piece missed, a piece the camera cannot see (under another, or behind), a wrong
    colour or size, a piece that is not there, else the poses (relations)."""
    missing = [i for i in truth_ids if i not in by_id]
    if any(visible.get(i, 0) >= MIN_VISIBLE_PX for i in missing):
        return "missed piece"
    if missing:
        return "hidden piece"
    if any((by_id[i].color, by_id[i].size) != (truth_by_id[i].color, truth_by_id[i].size) for i in truth_ids):
        return "colour or size"
    if set(perceived_ids) - set(truth_ids):
        return "extra piece"
    return "pose"


def _pct(a: float, b: float) -> float | None:
    return round(100.0 * a / b, 2) if b else None


def summarise(frames: list[dict], timings: list[dict]) -> dict:
    """Figures from the per-frame tallies: the JSON `zendo eval` prints."""
    tot = {k: sum(f[k] for f in frames) for k in ("n_pred", "n_truth", "n_truth_visible", "matched",
                                                   "matched_visible", "cls_ok", "cls_ok_visible", "color_ok",
                                                   "size_ok", "orient_ok", "orient_n", "rel_ok", "rel_n", "uncertain",
                                                   "koans_out_of_view")}
    by_place = sum(f.get("koans_by_place", 0) for f in frames)
    st = {k: sum(f.get(k, 0) for f in frames) for k in ("stones_pred", "stones_truth_visible", "stones_matched",
                                                        "stones_matched_visible", "stones_color_ok", "stones_on_pieces")}
    pos = np.array([e for f in frames for e in f["pos_err"]])
    ax = np.array([e for f in frames for e in f["axis_err"]])
    marks = [m for f in frames for m in f["marks"]]
    wrong = [m for m in marks if m[0]]
    conf: dict[str, int] = {}
    for f in frames:
        for c in f["confusions"]:
            conf[c] = conf.get(c, 0) + 1
    kinds: dict[str, list[int]] = {}
    for f in frames:
        for kind, bad in f["kinds"]:
            kinds.setdefault(kind, [0, 0])
            kinds[kind][0] += 1
            kinds[kind][1] += int(bad)
    rel_by: dict[str, list[int]] = {}
    for f in frames:
        for name, ok in f.get("rel_by", []):
            rel_by.setdefault(name, [0, 0])
            rel_by[name][0] += 1
            rel_by[name][1] += int(ok)
    stage = {}
    if timings:
        for k in timings[0]:
            v = np.array([t[k] for t in timings])
            stage[k] = {"median_ms": round(float(np.median(v)), 1), "p95_ms": round(float(np.percentile(v, 95)), 1)}

    def q(a, p):
        return round(float(np.percentile(a, p)), 2) if len(a) else None

    out = {
        "frames": len(frames),
        "pieces_truth": tot["n_truth"], "pieces_visible": tot["n_truth_visible"], "pieces_predicted": tot["n_pred"],
        "detection": {"precision_pct": _pct(tot["matched"], tot["n_pred"]),
                      "recall_pct": _pct(tot["matched"], tot["n_truth"]),
                      "recall_visible_pct": _pct(tot["matched_visible"], tot["n_truth_visible"])},
        "stones": {"predicted": st["stones_pred"], "visible": st["stones_truth_visible"],
                   "precision_pct": _pct(st["stones_matched"], st["stones_pred"]),
                   "recall_visible_pct": _pct(st["stones_matched_visible"], st["stones_truth_visible"]),
                   "color_accuracy_pct": _pct(st["stones_color_ok"], st["stones_matched"]),
                   "read_on_a_piece": st["stones_on_pieces"]},
        "color_size_accuracy_pct": _pct(tot["cls_ok"], tot["matched"]),
        "color_size_accuracy_visible_pct": _pct(tot["cls_ok_visible"], tot["matched_visible"]),
        "color_size_errors_by_cause": {c: sum(f["class_errors"].count(c) for f in frames) for c in CLASS_ERROR_CAUSES},
        "color_accuracy_pct": _pct(tot["color_ok"], tot["matched"]),
        "size_accuracy_pct": _pct(tot["size_ok"], tot["matched"]),
        "orientation_accuracy_pct": _pct(tot["orient_ok"], tot["orient_n"]),
        "position_error_mm": {"median": q(pos, 50), "p95": q(pos, 95)},
        "axis_error_deg": {"median": q(ax, 50), "p95": q(ax, 95), "share_over_10deg_pct": _pct(int((ax > 10).sum()), len(ax))},
        "axis_over_10deg_by_kind": {k: {"pieces": n, "share_pct": _pct(b, n)} for k, (n, b) in sorted(kinds.items())},
        "relation_accuracy_outside_band_pct": _pct(tot["rel_ok"], tot["rel_n"]),
        "relations_scored": tot["rel_n"],
        "relation_accuracy_by_predicate": {k: {"scored": n, "accuracy_pct": _pct(ok, n)}
                                           for k, (n, ok) in sorted(rel_by.items())},
        "koans_out_of_view": tot["koans_out_of_view"],
        "koans_paired_by_place": by_place,
        "marks": {"scored": len(marks), "accuracy_pct": _pct(len(marks) - len(wrong), len(marks)),
                  "wrong": len(wrong), "wrong_flagged_pct": _pct(sum(1 for m in wrong if m[1]), len(wrong)),
                  "wrong_unflagged": sum(1 for m in wrong if not m[1]),
                  "right_but_flagged_pct": _pct(sum(1 for m in marks if m[1] and not m[0]), len(marks) - len(wrong))},
        "wrong_marks_by_cause": {c: {"wrong": sum(1 for m in wrong if m[2] == c),
                                     "flagged_pct": _pct(sum(1 for m in wrong if m[2] == c and m[1]),
                                                         sum(1 for m in wrong if m[2] == c))}
                                 for c in WRONG_CAUSES},
        "flagged_by": {k: {"wrong_marks": sum(1 for m in wrong if k in m[3]),
                           "right_marks": sum(1 for m in marks if not m[0] and k in m[3])}
                       for k in ("band",) + DOUBT_KINDS},
        "flagged_uncertain_pieces": tot["uncertain"],
        "top_confusions": dict(sorted(conf.items(), key=lambda kv: -kv[1])[:8]),
        "latency": stage,
    }
    out["targets"] = judge(out, tot)
    return out


class TruthError(ValueError):
    """A render folder's truth.json that `zendo eval` cannot score against."""


def read_truth(folder: Path) -> dict:
    """A render folder's truth.json, checked as far as scoring reads it: `zendo eval` reads every
    one before the pipeline runs, so a broken set fails in a second with the file named, not
    minutes in with a traceback."""
    path = Path(folder) / "truth.json"
    try:
        truth = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        raise TruthError(f"{path}: not JSON") from None
    if not isinstance(truth, dict):
        raise TruthError(f"{path}: not a truth file from `zendo eval-set` (not a JSON object)")
    for key in ("scene", "objects", "camera_to_table"):
        if key not in truth:
            raise TruthError(f"{path}: no {key!r} (not a truth file from `zendo eval-set`)")
    try:
        scene_from_dict(truth["scene"], check_geometry=False)
    except ValueError as exc:
        raise TruthError(f"{path}: {str(exc).splitlines()[0]}") from None
    try:
        np.asarray(truth["camera_to_table"], dtype=float).reshape(4, 4)
    except (TypeError, ValueError):
        raise TruthError(f"{path}: 'camera_to_table' is not a 4 x 4 matrix") from None
    objects = truth["objects"]
    if not isinstance(objects, list) or not all(
            isinstance(o, dict) and {"id", "kind", "visible_px"} <= o.keys() for o in objects):
        raise TruthError(f"{path}: 'objects' must list each object's id, kind and visible_px")
    return truth


def score_table(pipeline, item: tuple[Path, dict]) -> tuple[dict, dict]:
    """One render folder read by `pipeline` as a fresh pipeline reads it (its own calibration,
    no tracks from other tables) and scored against its truth: (the frame's figures, its
    timings). A module-level function, so that worker processes can run it (vision/parallel.py)."""
    from .frames import RenderFolderSource

    folder, truth = item
    frame = next(iter(RenderFolderSource(folder).frames()))
    pipeline.restart()
    res = pipeline.process(frame)
    return evaluate_frame(res.scene, pipeline.table().matrix, truth, res.fits, _rules()), res.timings_ms


def run_eval(dataset: str | Path | list, *, weights=None, device: str | None = None, limit: int | None = None,
             progress: bool = True, conf: float = 0.25, classifier: str | Path | None = "default",
             workers: int = 1) -> dict:
    """Run the pipeline on every render folder under `dataset` (one folder, or several whose tables
    are pooled: their figures' intervals narrow, vision/targets.py) and score it; `limit` counts
    tables over all of them. `workers`: processes reading and scoring tables at once (the same
    figures; the tables are independent)."""
    from .classify import load_classifier
    from .detect import DEFAULT_WEIGHTS, Detector
    from .parallel import run_each
    from .pipeline import Pipeline

    datasets = [Path(d) for d in (dataset if isinstance(dataset, (list, tuple)) else [dataset])]
    folders = []
    for d in datasets:
        found = sorted(p.parent for p in d.glob("*/truth.json"))
        if not found:
            raise FileNotFoundError(f"{d}: no render folders with truth.json (make one with `zendo eval-set`)")
        folders += found
    if limit:
        folders = folders[:limit]
    truths = [read_truth(f) for f in folders]
    det = Detector(weights or DEFAULT_WEIGHTS, device=device, conf=conf)
    det.warmup()
    cls = load_classifier(None if classifier == "default" else classifier) if classifier else None
    rules = _rules()
    items = list(zip(folders, truths))
    scored = run_each(score_table, items, workers, det, cls, conf, lambda: Pipeline(det, classifier=cls))
    if progress:
        from tqdm import tqdm

        scored = tqdm(scored, total=len(items), desc="eval", leave=False)
    frames, timings = [list(x) for x in zip(*scored)]
    out = summarise(frames, timings)
    shown = [_shown(d) for d in datasets]
    out["dataset"] = shown[0] if len(shown) == 1 else shown
    out["weights"] = _shown(det.weights)
    out["classifier"] = _shown(cls.weights) if cls is not None else None
    out["device"] = det.device
    out["runtime"] = det.runtime  # onnx: the ONNX copy under ONNX Runtime (CPU); torch: the .pt
    out["crop_nets"] = cls.runtime if cls is not None else None  # int8: the copies vision.quantize makes
    out["conf"] = conf
    out["workers"] = workers  # over 1, the latency figures are stretched by workers sharing the cores
    out["rules_scored"] = len(rules[0]) if rules else 0
    return out


def _shown(path) -> str:
    """A path as the figures record it: relative to the repository when inside it (models/EVAL.json
    is committed, and an absolute path says only where one checkout happened to be)."""
    from .detect import MODELS_DIR

    p = Path(path).resolve()
    root = MODELS_DIR.resolve().parent
    return str(p.relative_to(root)) if p.is_relative_to(root) else str(path)


def _stones_row(st: dict | None) -> str:
    if not st:
        return "-"
    return (f"{st['precision_pct']} % / {st['recall_visible_pct']} %  (colour {st['color_accuracy_pct']} %, "
            f"{st['read_on_a_piece']} read where a piece lies)")


def format_table(s: dict) -> str:
    """A readable table of the figures (for people; the JSON is for machines)."""
    rows = [
        ("frames / pieces (visible)", f"{s['frames']} / {s['pieces_truth']} ({s['pieces_visible']})"),
        ("detection precision", f"{s['detection']['precision_pct']} %"),
        ("detection recall (all / visible)", f"{s['detection']['recall_pct']} % / {s['detection']['recall_visible_pct']} %"),
        ("colour x size accuracy", f"{s['color_size_accuracy_pct']} %  (colour {s['color_accuracy_pct']} %, size {s['size_accuracy_pct']} %)"),
        ("colour x size, pieces showing >= 60 px", f"{s.get('color_size_accuracy_visible_pct')} %"),
        ("colour x size errors by cause", ", ".join(f"{k} {v}" for k, v in s.get("color_size_errors_by_cause", {}).items())),
        ("orientation accuracy", f"{s['orientation_accuracy_pct']} %"),
        ("stones precision / recall (visible)", _stones_row(s.get("stones"))),
        ("position error median / p95", f"{s['position_error_mm']['median']} / {s['position_error_mm']['p95']} mm"),
        ("axis error median / p95", f"{s['axis_error_deg']['median']} / {s['axis_error_deg']['p95']} deg"),
        ("relations outside band", f"{s['relation_accuracy_outside_band_pct']} % of {s['relations_scored']}"),
        ("relations by predicate", ", ".join(f"{k} {v['accuracy_pct']} %" for k, v in
                                             s.get("relation_accuracy_by_predicate", {}).items())),
        ("marks (beginner rules)", f"{s['marks']['accuracy_pct']} % of {s['marks']['scored']}; wrong {s['marks']['wrong']}, "
                                   f"flagged {s['marks']['wrong_flagged_pct']} %"),
    ]
    rows += target_rows(s.get("targets", {}))
    for k, v in s.get("latency", {}).items():
        rows.append((f"latency {k}", f"{v['median_ms']} ms (p95 {v['p95_ms']})"))
    w = max(len(r[0]) for r in rows)
    return "\n".join(f"{a.ljust(w)}  {b}" for a, b in rows)
