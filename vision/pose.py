"""Pose: each detection's depth points -> a piece's exact 6-DoF pose in the table frame.

How, and why this way:
- The table is removed by height (calibration gives every pixel its height above the table), so
  what is left in a detection's box is the piece, its neighbours' edges and flying pixels.
- A Looney pyramid is a known convex solid, so the residual of a point is its signed distance to
  the solid (the largest of the five face-plane distances), and fitting is point-to-plane ICP
  against the exact model: Gauss-Newton with robust (Huber) weights. This is the same objective
  as Open3D's point-to-plane ICP against a sampled model, without nearest-neighbour search, so a
  hypothesis costs well under a millisecond and several can be tried per piece.
- Several hypotheses (upright at three yaws, flat along both senses of the points' principal
  direction and of the tip keypoint, tilted) each converge; the winner has the lowest cost, where
  cost adds a free-space term: a pose that puts plastic in front of a surface the camera saw
  through is wrong however well its faces fit.
- Contact with the table is physics, not noise: vertices within a few mm of the table are pulled
  onto it, and none may go below it.
- Four-fold symmetry about the axis needs no resolving for pointing (the axis is all that counts);
  the fitted yaw is whichever of the four equivalent ones the faces gave, which is what touching
  needs.
- Pixels claimed by two boxes go to the piece whose colour they match, which fails for touching
  pieces of one colour: a box then holds a neighbour's points. Three things keep them from
  dragging the fit (PoseConfig.box_weight, score_trunc_mm, gn_trunc_mm; measured on seeds
  900000-900059, confirmed on 910000-910059): hypotheses are scored with the
  residuals of points *outside* the model capped (a neighbour's points cost every pose alike,
  while a point inside the model, which the camera could not have seen, keeps its full cost); the
  final refinement ignores points far outside the model; and the model's projected bounding box
  must cover the detection box (a flat piece fitted upright covers a strip of a wide box).
  Explaining away (reassigning a box's points to the neighbour whose fit explains them, then
  refitting over all hypotheses), a resting-pose prior, heading-reversed twins and more
  hypotheses were measured no better and were removed (docs/perception.md lists them);
  PoseConfig.previous() is the scoring before. After all
  pieces are fitted, points a neighbour's fitted surface explains are taken from a piece before
  its size is re-decided (the local refit that used to follow is off: no better).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from functools import cache, lru_cache

import numpy as np

from zendo.geometry import matrix_to_quat, rotation_between
from zendo.pieces import PYRAMID_SIZES, SIZES, outer_planes, outer_vertices, surface_samples
from zendo.relations import RelationsConfig, orientation, orientation_angles
from zendo.scene import Piece, Scene, Stone

from .classes import CLASS_NAMES, PYRAMID_CLASSES
from .detect import Detections, share_inside
from .frames import Frame

log = logging.getLogger(__name__)

TABLE_CUT_MM = 2.5  # points lower than this are table (depth noise at 0.6 m is about 1.5 mm RMS)
HUBER_MM = 1.5
CONTACT_MM = 3.0  # a vertex this close to the table rests on it
MIN_POINTS = 25
LOW_CONFIDENCE = 0.5  # the detector is unsure of the class: colour or size may be wrong


@dataclass(frozen=True)
class PoseConfig:
    table_cut_mm: float = TABLE_CUT_MM
    huber_mm: float = HUBER_MM
    contact_mm: float = CONTACT_MM
    max_points: int = 400
    iterations: int = 12
    # After all fits, points a neighbour's fit explains are taken from a piece (`refine_points`) and the
    # piece is refitted locally (`refine`). The refit measured no better with the terms below; dropping
    # the hand-over as well let sizes flip between frames of the demo recording (size reads the points).
    refine: bool = False
    refine_points: bool = True
    free_space_tol_mm: float = 4.0
    size_from_depth: bool = True  # measured: size 87.5 % -> 91.5 % on seeds 900000-900029
    # whether depth's size overrules the image's (else it only raises a class doubt). Behind the
    # second-stage classifier it should not: on seeds 900000-900059 colour x size 91.5 % (decides)
    # vs 93.6 % (doubt only); the pipeline switches it off when a classifier is in use.
    size_decides: bool = True
    size_prior: float = 0.04  # bonus of the detector's size (share of points explained)
    inlier_mm: float = 2.0
    size_fs_weight: float = 0.5
    # Hypothesis scoring against neighbours' points (docs/perception.md, "Pose"); measured on seeds
    # 900000-900059 (orientation 91.4 % -> 93.2 %, axis error > 10 deg 14.7 % -> 12.4 %), confirmed on
    # 910000-910059 (89.6 % -> 92.6 %, 15.1 % -> 11.5 %).
    box_weight: float = 2.0  # share of the detection box the model's projected box leaves uncovered
    score_trunc_mm: float = 4.0  # scoring caps residuals of points outside the model (a neighbour's)
    gn_trunc_mm: float = 6.0  # the final refinement ignores points this far outside the model
    # tried and measured no better, and removed (docs/perception.md, "Pose"): finer or more
    # hypotheses, heading-reversed twins, a resting-pose prior, explaining away, depth-edge
    # splitting, chromaticity filtering, spatial ownership, ignoring deep cavity points
    flat_step_deg: float = 45.0  # heading step of the flat and tilted hypotheses
    top_k: int = 3  # hypotheses refined after the short fit
    # the orientation net's word (Detections.orientation): a pose the crop says is unlikely pays
    # orient_weight x -log p. A few dozen points on a small or half-hidden piece fit lying as well
    # as standing; its outline still tells. Tuning tables 900000- / 920000-: orientation
    # 96.3 / 94.9 % without, 98.5 / 98.6 % at 1.0 (0.3: 97.4 on 900000-, 3.0: 97.9, older net)
    orient_weight: float = 1.0

    @classmethod
    def previous(cls, **kw) -> "PoseConfig":
        """The scoring before the box and truncation terms (colour ownership + local refit)."""
        return cls(**{"refine": True, "box_weight": 0.0, "score_trunc_mm": 0.0, "gn_trunc_mm": 0.0, **kw})


@dataclass(frozen=True)
class PieceFit:
    """One fitted piece and how well the data supports it (for honest flags)."""

    piece: Piece
    rms_mm: float
    n_points: int
    free_space: float  # share of the model's projected surface the camera saw through
    hypothesis: str
    confidence: float
    detection: int = -1  # index of the detection it came from
    other_size: str | None = None  # where image and depth read different sizes: the one not given
    two: tuple[Piece, ...] = ()  # the two standing pieces the pairs stage nearly split it into

    @property
    def maybe_two(self) -> bool:
        """The pairs stage nearly split it into two standing pieces (a misfit doubt, carrying them)."""
        return bool(self.two)

    @property
    def uncertain(self) -> bool:
        return (self.n_points < MIN_POINTS or self.rms_mm > 2.5 or self.free_space > 0.15
                or self.confidence < LOW_CONFIDENCE)

    def report(self) -> dict:
        return {"rms_mm": round(self.rms_mm, 2), "points": self.n_points, "free_space": round(self.free_space, 3),
                "hypothesis": self.hypothesis, "confidence": round(self.confidence, 3), "uncertain": self.uncertain}


# --------------------------------------------------------------------------- model geometry


@cache
def _planes5(size: str) -> tuple[np.ndarray, np.ndarray]:
    n, d = outer_planes(size)
    return n.copy(), d.copy()


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = axis / (np.linalg.norm(axis) + 1e-12)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def _exp(w: np.ndarray) -> np.ndarray:
    a = float(np.linalg.norm(w))
    if a < 1e-12:
        return np.eye(3)
    return _rot(w / a, a)


def _rz(deg: float) -> np.ndarray:
    return _rot(np.array([0.0, 0.0, 1.0]), np.radians(deg))


# --------------------------------------------------------------------------- fitting


def _residuals(size: str, R: np.ndarray, t: np.ndarray, pts: np.ndarray):
    n, d = _planes5(size)
    q = (pts - t) @ R
    sd = q @ n.T - d
    k = np.argmax(sd, axis=1)
    return sd[np.arange(len(pts)), k], n[k], q


@cache
def _kernel(name: str):
    """A compiled kernel of vision.fitkernel, or None where numba is not installed."""
    try:
        from . import fitkernel
    except ImportError:
        log.warning("numba is not installed: the pose fit runs in numpy, about five times slower")
        return None
    return getattr(fitkernel, name)


def signed_distances(piece: Piece, pts: np.ndarray) -> np.ndarray:
    """Each point's signed distance to a piece's solid (the largest of its five face-plane
    distances; negative inside): the residual fitting minimises. Compiled (vision.fitkernel):
    the later stages ask it hundreds of times a frame."""
    return _signed_distances(piece.size, piece.matrix, piece.origin, pts)


def _signed_distances(size: str, R: np.ndarray, t: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """`signed_distances` for a pose given as R, t (the fit's own terms, before a Piece is made)."""
    kernel = _kernel("signed_distances")
    if kernel is None:
        return _residuals(size, R, t, pts)[0]
    n, d = _planes5(size)
    pts = np.ascontiguousarray(np.reshape(pts, (-1, 3)), np.float64)
    return kernel(n, d, np.ascontiguousarray(R, np.float64), np.ascontiguousarray(t, np.float64), pts)


def gauss_newton(size: str, R: np.ndarray, t: np.ndarray, pts: np.ndarray, cfg: PoseConfig,
                 iterations: int | None = None, ground: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """Robust point-to-plane fit of the solid pyramid to points; returns R, t, robust cost."""
    verts = outer_vertices(size)
    h = cfg.huber_mm
    n_pts = max(len(pts), 1)
    w_contact = np.sqrt(n_pts) * 0.6
    cost = np.inf
    for _ in range(iterations or cfg.iterations):
        r, nk, q = _residuals(size, R, t, pts)
        a = np.abs(r)
        w = np.where(a <= h, 1.0, h / np.maximum(a, 1e-9))
        J = np.empty((len(pts), 6))
        J[:, :3] = np.cross(nk, q)
        J[:, 3:] = -(nk @ R.T)
        sw = np.sqrt(w)
        A = J * sw[:, None]
        b = r * sw
        rows_A, rows_b = [A], [b]
        if ground:
            vz = verts @ R[2] + t[2]
            act = (vz < cfg.contact_mm)
            if act.any():
                Jv = np.zeros((int(act.sum()), 6))
                Jv[:, :3] = np.cross(verts[act], R[2])
                Jv[:, 5] = 1.0
                rows_A.append(Jv * w_contact)
                rows_b.append(vz[act] * w_contact)
        A = np.vstack(rows_A)
        b = np.concatenate(rows_b)
        H = A.T @ A + np.eye(6) * 1e-3
        g = A.T @ b
        try:
            step = -np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        R = R @ _exp(step[:3])
        t = t + step[3:]
        if np.abs(step).max() < 1e-4:
            break
    r, _, _ = _residuals(size, R, t, pts)
    return R, t, float(_huber(np.abs(r)[None], h)[0])


def _free_space(size: str, R, t, frame_depth: np.ndarray, to_cam, intr, tol: float) -> float:
    return float(_free_space_batch(size, R[None], t[None], frame_depth, to_cam, intr, tol)[0])


def _free_space_batch(size: str, R: np.ndarray, t: np.ndarray, frame_depth: np.ndarray, to_cam, intr,
                      tol: float) -> np.ndarray:
    """Per pose, the share of the model's surface samples that lie in front of what the camera saw."""
    return _free_space_of(surface_samples(size)[None], R, t, frame_depth, to_cam, intr, tol)


def _free_space_of(samples: np.ndarray, R: np.ndarray, t: np.ndarray, frame_depth: np.ndarray, to_cam, intr,
                   tol: float) -> np.ndarray:
    """`_free_space_batch` with the surface samples given (1 or H, S, 3; piece frame), so that
    poses of several sizes are tested in one pass (`choose_size`). Compiled
    (`vision.fitkernel.free_space`) where numba is installed: the stages after the fit ask this
    700 times on a frame of two dozen pieces (17 ms in numpy); `_free_space_numpy` is the
    reference the tests hold it to."""
    kernel = _kernel("free_space")
    if kernel is None:
        return _free_space_numpy(samples, R, t, frame_depth, to_cam, intr, tol)
    A, b = _affine(to_cam)
    return kernel(np.ascontiguousarray(samples, np.float64), np.ascontiguousarray(R, np.float64),
                  np.ascontiguousarray(t, np.float64), A, b, float(intr.fx), float(intr.fy), float(intr.ppx),
                  float(intr.ppy), frame_depth, float(tol))


@lru_cache(maxsize=8)
def _affine(to_cam) -> tuple[np.ndarray, np.ndarray]:
    """A, b with to_cam(p) = p @ A + b (the camera transform is affine), for the compiled
    free-space test. Worked out once per calibration object (a bound method is a key by the
    object it is bound to; the cache holds it, so its id is never reused), not on each of a
    frame's 700 calls."""
    b = np.asarray(to_cam(np.zeros((1, 3))), np.float64)[0]
    A = np.asarray(to_cam(np.eye(3)), np.float64) - b
    A.flags.writeable = b.flags.writeable = False
    return A, b


def _free_space_numpy(samples: np.ndarray, R: np.ndarray, t: np.ndarray, frame_depth: np.ndarray, to_cam, intr,
                      tol: float) -> np.ndarray:
    """`_free_space_of` in numpy: where numba is not installed, and the compiled kernel's reference."""
    s = samples @ R.transpose(0, 2, 1) + t[:, None, :]
    pc = to_cam(s.reshape(-1, 3)).reshape(s.shape)
    z = pc[..., 2]
    zs = np.where(z > 1, z, 1.0)
    u = np.round(intr.fx * pc[..., 0] / zs + intr.ppx).astype(int)
    v = np.round(intr.fy * pc[..., 1] / zs + intr.ppy).astype(int)
    hgt, wid = frame_depth.shape
    inside = (z > 1) & (u >= 0) & (u < wid) & (v >= 0) & (v < hgt)
    obs = frame_depth[np.clip(v, 0, hgt - 1), np.clip(u, 0, wid - 1)]
    valid = inside & (obs > 0)
    bad = valid & (z < obs - tol)
    return bad.sum(axis=1) / np.maximum(valid.sum(axis=1), 1)


def _exp_batch(w: np.ndarray) -> np.ndarray:
    """Rodrigues' formula for H rotation vectors at once."""
    a = np.linalg.norm(w, axis=1)
    safe = np.where(a < 1e-12, 1.0, a)
    k = w / safe[:, None]
    K = np.zeros((len(w), 3, 3))
    K[:, 0, 1], K[:, 0, 2] = -k[:, 2], k[:, 1]
    K[:, 1, 0], K[:, 1, 2] = k[:, 2], -k[:, 0]
    K[:, 2, 0], K[:, 2, 1] = -k[:, 1], k[:, 0]
    s = np.sin(a)[:, None, None]
    c = (1 - np.cos(a))[:, None, None]
    return np.eye(3)[None] + s * K + c * (K @ K)


def _cross_into(J: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """J[..., :3] = a x b, written out: np.cross's axis handling costs more than the arithmetic
    on these small arrays (it was a third of the fit's time)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    J[..., 0] = a1 * b2 - a2 * b1
    J[..., 1] = a2 * b0 - a0 * b2
    J[..., 2] = a0 * b1 - a1 * b0


def gauss_newton_batch(size: str, R: np.ndarray, t: np.ndarray, pts: np.ndarray, cfg: PoseConfig,
                       iterations: int, trunc: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Robust point-to-plane fit of the solid pyramid for H starting poses at once (R: H x 3 x 3,
    t: H x 3). Returns R, t, the robust cost per pose, and the points' residuals at the fitted
    poses (H x P, for scoring without computing them again). Runs compiled
    (`vision.fitkernel`); `gauss_newton_batch_numpy` states the same arithmetic in numpy, and
    runs where numba is not installed (a bare GPU box), five times slower."""
    kernel = _kernel("gauss_newton_batch")
    if kernel is None:
        return gauss_newton_batch_numpy(size, R, t, pts, cfg, iterations, trunc)
    n, d = _planes5(size)
    R, t, r = kernel(n, d, outer_vertices(size), np.ascontiguousarray(R, np.float64),
                     np.ascontiguousarray(t, np.float64), np.ascontiguousarray(pts, np.float64),
                     float(cfg.huber_mm), float(cfg.contact_mm), int(iterations), float(trunc))
    return R, t, _huber(np.abs(r), cfg.huber_mm), r


def gauss_newton_batch_numpy(size: str, R: np.ndarray, t: np.ndarray, pts: np.ndarray, cfg: PoseConfig,
                             iterations: int, trunc: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`gauss_newton_batch` in numpy, the reference its compiled kernel is tested against: every
    hypothesis at once, so numpy's overhead is paid once per iteration, not per hypothesis.

    Residual of a point: its signed distance to the solid (largest face-plane distance).
    Jacobian w.r.t. a body-frame rotation w and a translation d: (n x q, -R n).
    Vertices within `contact_mm` of the table (or below it) are pulled onto it.
    """
    n, d = _planes5(size)
    verts = outer_vertices(size)
    h = cfg.huber_mm
    w_contact2 = max(len(pts), 1) * 0.36
    H = len(R)
    P = len(pts)
    eye6 = np.eye(6)[None] * 1e-3
    for _ in range(iterations):
        q = (pts[None] - t[:, None, :]) @ R  # H x P x 3 (piece frame)
        sd = q @ n.T - d
        k = np.argmax(sd, axis=2)
        r = sd.max(axis=2)
        nk = n[k]
        a = np.abs(r)
        w = np.where(a <= h, 1.0, h / np.maximum(a, 1e-9))
        if trunc > 0:
            w = np.where(r > trunc, 0.0, w)  # far outside: a neighbour's point, not this piece's
        J = np.empty((H, P, 6))
        _cross_into(J, nk, q)
        nR = n[None] @ R.transpose(0, 2, 1)  # H x 5 x 3: each face normal in the table frame
        J[..., 3:] = -nR[np.arange(H)[:, None], k]
        Jw = J * w[..., None]
        Hm = Jw.transpose(0, 2, 1) @ J
        g = (Jw.transpose(0, 2, 1) @ r[..., None])[..., 0]
        vz = verts @ R[:, 2, :].T  # V x H
        vz = vz.T + t[:, 2:3]
        act = (vz < cfg.contact_mm) * w_contact2
        Jv = np.zeros((H, len(verts), 6))
        _cross_into(Jv, np.broadcast_to(verts[None], (H,) + verts.shape), np.broadcast_to(R[:, None, 2, :], (H, len(verts), 3)))
        Jv[..., 5] = 1.0
        Jva = Jv * act[..., None]
        Hm += Jva.transpose(0, 2, 1) @ Jv + eye6
        g += (Jva.transpose(0, 2, 1) @ vz[..., None])[..., 0]
        step = -np.linalg.solve(Hm, g[..., None])[..., 0]
        R = R @ _exp_batch(step[:, :3])
        t = t + step[:, 3:]
        if np.abs(step).max() < 1e-4:
            break
    q = (pts[None] - t[:, None, :]) @ R
    r = (q @ n.T - d).max(axis=2)
    return R, t, _huber(np.abs(r), h), r


def _huber(a: np.ndarray, h: float) -> np.ndarray:
    """Mean Huber cost per pose of absolute residuals (poses x points)."""
    return np.mean(np.where(a <= h, 0.5 * a * a, h * (a - 0.5 * h)), axis=1)


def _implausible(size: str, R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Penalty for poses physics rules out: a piece cannot reach into the table, and nothing on a
    Zendo table points steeply down (a piece on its tip needs a support the rules do not give it)."""
    verts = outer_vertices(size)
    vz = (verts @ R[:, 2, :].T).T + t[:, 2:3]
    below = np.clip(-vz.min(axis=1) - 1.0, 0, None)
    axis_z = R[:, 2, 2]
    down = np.clip(-0.4 - axis_z, 0, None)
    return 2.0 * below + 20.0 * down


def _hypotheses(size: str, pts: np.ndarray, tip_xyz: np.ndarray | None,
                step: float = 45.0) -> list[tuple[str, np.ndarray, np.ndarray]]:
    dims = PYRAMID_SIZES[size]
    c = np.median(pts, axis=0)
    zmax = float(np.percentile(pts[:, 2], 98))
    zmin = float(np.percentile(pts[:, 2], 2))
    hyps = []
    z0 = max(0.0, zmax - dims.height)
    for yaw in (0.0, 30.0, 60.0):
        hyps.append(("upright", _rz(yaw), np.array([c[0], c[1], z0])))
    if zmin > 4.0:  # a piece in a tower: its visible band starts at its own base
        for yaw in (0.0, 30.0, 60.0):
            hyps.append(("stacked", _rz(yaw), np.array([c[0], c[1], zmin - 1.0])))
    headings = list(np.arange(0.0, 360.0, step))
    if tip_xyz is not None:
        dvec = tip_xyz[:2] - c[:2]
        if np.linalg.norm(dvec) > 2:
            headings.append(float(np.degrees(np.arctan2(dvec[1], dvec[0]))))
    lift = max(0.0, zmin - 1.0)
    # lying across other pieces' tips: its top is the box's top (its lowest points are theirs)
    raised = zmax - _flat_top(size)
    for hd in headings:
        p = _flat_template(size, float(hd))
        R = p.matrix
        cen = p.to_table(np.array([[0, 0, dims.height / 4]]))[0]
        t = p.origin + np.array([c[0] - cen[0], c[1] - cen[1], lift])
        hyps.append(("flat", R, t))
        if raised > lift + RAISED_FLAT_MM:
            hyps.append(("raised flat", R, t + np.array([0.0, 0.0, raised - lift])))
    # tilted (leaning, across, lying towers): axis along the heading, raised
    for hd in headings:
        for elev in (35.0, 65.0):
            ax, R = _tilted(float(hd), elev)
            t = np.array([c[0], c[1], max(0.0, zmin)]) - ax * dims.height * 0.3
            t[2] = max(t[2], 0.0)
            hyps.append(("tilted", R, t))
    return hyps


@cache
def _tilted(heading_deg: float, elev_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """The axis and rotation of a piece tilted up `elev_deg` along a heading (the same few for
    every piece: worked out once, not 7 ms a frame)."""
    hd, el = np.radians(heading_deg), np.radians(elev_deg)
    ax = np.array([np.cos(hd) * np.cos(el), np.sin(hd) * np.cos(el), np.sin(el)])
    zc = np.cross([0, 0, 1.0], ax)
    R = _rot(zc, np.arccos(np.clip(ax[2], -1, 1))) if np.linalg.norm(zc) > 1e-9 else np.eye(3)
    ax.flags.writeable = False
    R.flags.writeable = False
    return ax, R


RAISED_FLAT_MM = 4.0  # a lying piece's top this far above where lying on the table puts it: it lies raised


@cache
def _flat_top(size: str) -> float:
    """How high a piece lying flat on the table reaches."""
    return float(_flat_template(size, 0.0).vertices[:, 2].max())


@cache
def _flat_template(size: str, heading: float) -> Piece:
    """The piece lying on face 0 with its axis heading `heading` degrees from +x, resting on z = 0
    (what zendo.build.flat gives, without importing the contact engine)."""
    n = outer_planes(size)[0][0]
    R = rotation_between(n, [0.0, 0.0, -1.0])
    ax = R[:, 2]
    R = _rz(heading - float(np.degrees(np.arctan2(ax[1], ax[0])))) @ R
    low = float((outer_vertices(size) @ R.T)[:, 2].min())
    return Piece("h", "red", size, (0.0, 0.0, -low), tuple(map(float, matrix_to_quat(R))))


def _box_term(size: str, R: np.ndarray, t: np.ndarray, box, to_cam, intr, cfg: PoseConfig) -> np.ndarray:
    """Per pose, how badly the model's projected bounding box disagrees with the detection box:
    the share of the detection box it leaves uncovered (a flat piece fitted upright covers a
    narrow strip of a wide box). The share of the model's box outside the detection box is not
    counted: a partly hidden piece's visible box is smaller than its model."""
    if box is None or cfg.box_weight <= 0:
        return np.zeros(len(R))
    v = outer_vertices(size)[None] @ R.transpose(0, 2, 1) + t[:, None, :]
    pc = to_cam(v.reshape(-1, 3)).reshape(v.shape)
    z = np.maximum(pc[..., 2], 1.0)
    u = intr.fx * pc[..., 0] / z + intr.ppx
    w = intr.fy * pc[..., 1] / z + intr.ppy
    return cfg.box_weight * (1 - share_inside(box, np.column_stack([u.min(1), w.min(1), u.max(1), w.max(1)])))


ORIENTATIONS = ("upright", "flat", "weird")  # the orientation net's outputs, in this order
ORIENT_FLOOR = 0.02  # no crop reading rules a pose out alone: -log p is capped at -log of this
ORIENT_BAND_DEG = RelationsConfig().orientation_deg  # the rulebook's upright / flat band


def orientation_index(size: str, R: np.ndarray) -> np.ndarray:
    """Per rotation (H, 3, 3): 0 upright, 1 flat, 2 weird, read as the rulebook reads a piece
    (zendo.relations.orientation: axis, or lowest face, within the orientation band of vertical)."""
    up, flat = orientation_angles(size, R)
    return np.where(up <= ORIENT_BAND_DEG, 0, np.where(flat <= ORIENT_BAND_DEG, 1, 2))


def _orient_term(size: str, R: np.ndarray, prior: np.ndarray | None, cfg: PoseConfig) -> np.ndarray:
    """Per pose, how little the crop believes its orientation: orient_weight x -log p. Charged
    by the rulebook's reading of the pose even just past the band: letting a weird pose within
    5 or 15 degrees of flat or upright pay as either measured worse (docs/perception.md)."""
    if prior is None or cfg.orient_weight <= 0:
        return np.zeros(len(R))
    p = np.clip(np.asarray(prior, float)[orientation_index(size, R)], ORIENT_FLOOR, 1.0)
    return -cfg.orient_weight * np.log(p)


def _score(size, R, t, cost, depth_mm, to_cam, intr, cfg, box, r=None, prior=None):
    """Lower is better. `r`: the poses' residuals of the points (gauss_newton_batch returns them);
    `prior`: the orientation net's p(upright, flat, weird) for this piece, when there is one."""
    fs = _free_space_batch(size, R, t, depth_mm, to_cam, intr, cfg.free_space_tol_mm)
    if cfg.score_trunc_mm > 0 and r is not None:
        # a neighbour's points cost every pose alike once they are far: the pose that explains
        # a coherent part well beats one that sits between two pieces explaining both badly
        a = np.where(r > 0, np.minimum(r, cfg.score_trunc_mm), -r)  # outside: maybe a neighbour
        cost = _huber(a, cfg.huber_mm)
    score = (cost + 8.0 * fs + _implausible(size, R, t) + _box_term(size, R, t, box, to_cam, intr, cfg)
             + _orient_term(size, R, prior, cfg))
    return score, fs


def fit_piece(size: str, pts: np.ndarray, depth_mm: np.ndarray, to_cam, intr, cfg: PoseConfig,
              tip_xyz: np.ndarray | None = None, box=None,
              seed: tuple[np.ndarray, np.ndarray] | None = None,
              only: tuple[str, ...] | None = None,
              prior: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float, float, str]:
    """Best pose over the hypotheses: (R, t, cost, free-space share, hypothesis name).
    `seed`: a pose to try besides the hypotheses (the previous fit, when refitting); `only`: the
    kinds of hypothesis to try (all when None); `prior`: p(upright, flat, weird) from the crop."""
    hyps = _hypotheses(size, pts, tip_xyz, cfg.flat_step_deg)
    if only is not None:
        hyps = [h for h in hyps if h[0] in only]
    if seed is not None:
        hyps.append(("previous", seed[0], seed[1]))
    names = [h[0] for h in hyps]
    R = np.array([h[1] for h in hyps])
    t = np.array([h[2] for h in hyps])
    sub = pts if len(pts) <= 150 else pts[:: int(np.ceil(len(pts) / 150))]
    R, t, cost, r = gauss_newton_batch(size, R, t, sub, cfg, 5)
    score, _ = _score(size, R, t, cost, depth_mm, to_cam, intr, cfg, box, r, prior)
    top = np.argsort(score)[:cfg.top_k]
    R, t, names = R[top], t[top], [names[i] for i in top]
    sub = pts if len(pts) <= cfg.max_points else pts[:: int(np.ceil(len(pts) / cfg.max_points))]
    R, t, cost, r = gauss_newton_batch(size, R, t, sub, cfg, cfg.iterations, cfg.gn_trunc_mm)
    score, fs = _score(size, R, t, cost, depth_mm, to_cam, intr, cfg, box, r, prior)
    b = int(np.argmin(score))
    return R[b], t[b], float(cost[b]), float(fs[b]), names[b]


def consensus(piece: Piece, pts: np.ndarray, free_space: float, inlier_mm: float, cfg: PoseConfig) -> float:
    """How well a piece accounts for points, for choosing between sizes as `choose_size` does: the
    share of them it explains within inlier_mm, less cfg.size_fs_weight x its free space (a
    smaller size fits part of a larger piece well; a larger one puts plastic where the camera saw
    through)."""
    return float((np.abs(signed_distances(piece, pts)) < inlier_mm).mean()) - cfg.size_fs_weight * free_space


def choose_size(size: str, R: np.ndarray, t: np.ndarray, pts: np.ndarray, depth_mm, to_cam, intr,
                cfg: PoseConfig) -> tuple[str, np.ndarray, np.ndarray, float, float]:
    """Re-decide the size from depth: the three sizes are nearly similar shapes, so in 2-D a large
    piece far away looks like a medium one near by, but depth measures millimetres.

    Each other size starts from the fitted pose, base-aligned and tip-aligned. Scoring is by
    consensus, not by mean residual: the right size explains the most points (a smaller one
    leaves part of the piece unexplained), and a larger one puts plastic where the camera saw
    through (free space). Points from neighbours are outliers for every size alike, so they do
    not bias the choice. The detector's size is kept unless another is clearly better."""
    sub = pts if len(pts) <= cfg.max_points else pts[:: int(np.ceil(len(pts) / cfg.max_points))]
    scores = {}
    h0 = PYRAMID_SIZES[size].height
    fitted = []
    for cand in PYRAMID_SIZES:
        dh = h0 - PYRAMID_SIZES[cand].height
        if cand == size:
            Rs, ts, its = R[None], t[None], 0
        else:
            Rs, ts, its = np.stack([R, R]), np.stack([t, t + R[:, 2] * dh]), 8
        fitted.append((cand, *gauss_newton_batch(cand, Rs, ts, sub, cfg, its)))
    # every size's poses at once: the free-space test and the inlier count are a few small array
    # operations each, whose overhead a pass per size would pay three times
    cands, Rfs, tfs, _, rs = zip(*fitted)
    samples = np.concatenate([np.broadcast_to(surface_samples(c), (len(Rf), *surface_samples(c).shape))
                              for c, Rf in zip(cands, Rfs)])
    fs_all = _free_space_of(samples, np.concatenate(Rfs), np.concatenate(tfs), depth_mm, to_cam, intr,
                            cfg.free_space_tol_mm)
    inl_all = (np.abs(np.concatenate(rs)) < cfg.inlier_mm).mean(axis=1)
    at = 0
    for cand, Rf, tf, cost, r in fitted:
        fs, inl = fs_all[at:at + len(Rf)], inl_all[at:at + len(Rf)]
        at += len(Rf)
        score = inl - cfg.size_fs_weight * fs - _implausible(cand, Rf, tf)
        b = int(np.argmax(score))
        scores[cand] = (float(score[b]) + (cfg.size_prior if cand == size else 0.0), Rf[b], tf[b], float(cost[b]),
                        float(fs[b]))
    best = max(scores, key=lambda c: scores[c][0])
    _, Rb, tb, cb, fb = scores[best]
    return best, Rb, tb, cb, fb


# --------------------------------------------------------------------------- a whole frame


def _class_split(class_id: int) -> tuple[str, str, bool]:
    name = CLASS_NAMES[int(class_id)]
    if class_id < len(PYRAMID_CLASSES):
        color, size = name.rsplit("_", 1)
        return color, size, True
    return name.split("_", 1)[1], "", False


def _kp_xyz(kp: np.ndarray | None, i: int, table_pts: np.ndarray, valid: np.ndarray) -> np.ndarray | None:
    if kp is None or kp[i, 0, 2] < 0.5:
        return None
    u, v = int(round(kp[i, 0, 0])), int(round(kp[i, 0, 1]))
    h, w = valid.shape
    u0, u1, v0, v1 = max(0, u - 2), min(w, u + 3), max(0, v - 2), min(h, v + 3)
    ok = valid[v0:v1, u0:u1]
    if not ok.any():
        return None
    return np.median(table_pts[v0:v1, u0:u1][ok], axis=0)


def estimate_poses(frame: Frame, detections: Detections, calibration, cfg: PoseConfig | None = None,
                   heights: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Scene, list[PieceFit]]:
    """Every detection -> a Piece (or Stone) in the table frame; also the per-piece fit reports.
    `heights`: the frame's `height_map` when the caller has it already."""
    from calibration.plane import height_map

    cfg = cfg or PoseConfig()
    table_pts, valid = heights if heights is not None else height_map(frame, calibration)
    depth = frame.depth_mm
    above = valid & (table_pts[..., 2] > cfg.table_cut_mm)
    h, w = depth.shape
    to_cam = calibration.to_camera
    intr = frame.intrinsics
    rgb = frame.color.astype(np.float32)

    # pixel ownership: each pixel goes to one box; shared pixels to the nearest colour prototype
    n = len(detections)
    boxes = np.round(detections.xyxy).astype(int) if n else np.zeros((0, 4), int)
    boxes[:, [0, 2]] = np.clip(boxes[:, [0, 2]], 0, w)
    boxes[:, [1, 3]] = np.clip(boxes[:, [1, 3]], 0, h)
    count = np.zeros((h, w), np.int16)
    for x0, y0, x1, y1 in boxes:
        count[y0:y1, x0:x1] += 1
    proto = []
    for k, (x0, y0, x1, y1) in enumerate(boxes):
        m = above[y0:y1, x0:x1] & (count[y0:y1, x0:x1] == 1)
        if detections.masks is not None:
            m &= detections.masks[k][y0:y1, x0:x1]
        if m.sum() < 5:
            m = above[y0:y1, x0:x1]
        px = rgb[y0:y1, x0:x1][m]
        proto.append(np.median(px, axis=0) if len(px) else np.zeros(3, np.float32))
    shared = count > 1
    owner = np.full((h, w), -1, np.int32)
    if shared.any():
        ys, xs = np.nonzero(shared)
        best = np.full(len(ys), np.inf)
        arg = np.full(len(ys), -1)
        for k, (x0, y0, x1, y1) in enumerate(boxes):
            inb = (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
            if not inb.any():
                continue
            dcol = np.linalg.norm(rgb[ys[inb], xs[inb]] - proto[k], axis=1) / 40.0
            better = dcol < best[inb]
            idx = np.nonzero(inb)[0][better]
            best[idx] = dcol[better]
            arg[idx] = k
        owner[ys, xs] = arg

    rng = np.random.default_rng(0)
    point_sets: list[np.ndarray] = []
    for k, (x0, y0, x1, y1) in enumerate(boxes):
        m = above[y0:y1, x0:x1] & ((count[y0:y1, x0:x1] == 1) | (owner[y0:y1, x0:x1] == k))
        if detections.masks is not None:
            mm = m & detections.masks[k][y0:y1, x0:x1]
            if mm.sum() >= MIN_POINTS:
                m = mm
        pts = table_pts[y0:y1, x0:x1][m].astype(np.float64)
        if len(pts) > cfg.max_points:
            pts = pts[rng.choice(len(pts), cfg.max_points, replace=False)]
        point_sets.append(pts)

    fits: list[tuple[int, np.ndarray, np.ndarray, float, float, str]] = []
    stones: list[Stone] = []
    for k in range(n):
        color, size, is_pyr = _class_split(int(detections.class_id[k]))
        pts = point_sets[k]
        if not is_pyr:
            x0, y0, x1, y1 = boxes[k]
            sub = valid[y0:y1, x0:x1]
            pp = table_pts[y0:y1, x0:x1][sub]
            xy = np.median(pp[:, :2], axis=0) if len(pp) else np.zeros(2)
            stones.append(Stone(f"s{len(stones) + 1}", color, (float(xy[0]), float(xy[1]), 0.0)))
            continue
        if len(pts) < 8:
            # nearly no depth: place it upright where its box centre meets the table
            cx, cy = (boxes[k, 0] + boxes[k, 2]) / 2, (boxes[k, 1] + boxes[k, 3]) / 2
            ray = np.array([(cx - intr.ppx) / intr.fx, (cy - intr.ppy) / intr.fy, 1.0])
            m = calibration.matrix
            o, dvec = m[:3, 3], m[:3, :3] @ ray
            s = -o[2] / dvec[2] if abs(dvec[2]) > 1e-9 else 0.0
            p = o + s * dvec
            fits.append((k, np.eye(3), np.array([p[0], p[1], 0.0]), 99.0, 1.0, "none"))
            continue
        tip = _kp_xyz(detections.keypoints, k, table_pts, valid)
        prior = None if detections.orientation is None else detections.orientation[k]
        R, t, cost, fs, name = fit_piece(size, pts, depth, to_cam, intr, cfg, tip, boxes[k], prior=prior)
        fits.append((k, R, t, cost, fs, name))

    if (cfg.refine or cfg.refine_points) and len(fits) > 1:
        fits = _refine(fits, point_sets, detections, depth, to_cam, intr, cfg, refit=cfg.refine)
    sizes: dict[int, str] = {}  # depth overruled the image's size
    other_size: dict[int, str] = {}  # image and depth disagree: the size the piece was not given
    if cfg.size_from_depth:
        resized = []
        for k, R, t, cost, fs, name in fits:
            _, size, _ = _class_split(int(detections.class_id[k]))
            if name != "none" and len(point_sets[k]) >= MIN_POINTS:
                new, R2, t2, cost2, fs2 = choose_size(size, R, t, point_sets[k], depth, to_cam, intr, cfg)
                if new != size and cfg.size_decides:
                    sizes[k], other_size[k] = new, size
                    R, t, cost, fs = R2, t2, cost2, fs2
                elif new != size:
                    other_size[k] = new
            resized.append((k, R, t, cost, fs, name))
        fits = resized

    pieces, reports = [], []
    order = sorted(fits, key=lambda f: (round(float(f[2][0]), 1), round(float(f[2][1]), 1)))
    for i, (k, R, t, cost, fs, name) in enumerate(order, start=1):
        color, size, _ = _class_split(int(detections.class_id[k]))
        size = sizes.get(k, size)
        q = matrix_to_quat(R)
        piece = Piece(f"p{i}", color, size, tuple(map(float, t)), tuple(map(float, q)))
        pts = point_sets[k]
        pf = PieceFit(piece, rms_of(piece, pts), len(pts), fs, name, float(detections.confidence[k]), k, other_size.get(k))
        pieces.append(piece)
        reports.append(pf)
    return drop_duplicates(scene_with(Scene((), tuple(stones)), pieces, reports), reports)


def union_distance(pieces, pts: np.ndarray) -> np.ndarray:
    """Each point's signed distance to the union of the pieces' solids (inf with none)."""
    if not pieces:
        return np.full(len(pts), np.inf)
    return np.min(np.stack([signed_distances(p, pts) for p in pieces]), axis=0)


def rms_of(piece: Piece, pts: np.ndarray) -> float:
    """RMS of the points' distances to the piece's solid (99 with no points)."""
    return float(np.sqrt(np.mean(signed_distances(piece, pts) ** 2))) if len(pts) else 99.0


def posed(piece: Piece, R: np.ndarray, t: np.ndarray, **changes) -> Piece:
    """`piece` at a fitted pose (and any other field changed)."""
    return replace(piece, position=tuple(map(float, t)), rotation=tuple(map(float, matrix_to_quat(R))), **changes)


def next_piece_id(pieces) -> str:
    """An id no piece has yet: one past the highest "p<n>" (ids have gaps where duplicates were
    dropped, so counting the pieces can name a new one like an old one)."""
    numbers = [int(p.id[1:]) for p in pieces if p.id[:1] == "p" and p.id[1:].isdigit()]
    return f"p{max(numbers, default=0) + 1}"


def pixel_box(pix: np.ndarray) -> np.ndarray:
    """The image box (x0, y0, x1, y1) of pixels given as (row, column)."""
    ys, xs = pix[:, 0], pix[:, 1]
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)


def box_points(detections, k: int, table_pts: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The `up` points in detection k's box, and their pixels (row, column); None for none."""
    if not 0 <= k < len(detections):
        return None
    h, w = up.shape
    x0, y0, x1, y1 = np.round(detections.xyxy[k]).astype(int)
    x0, x1 = max(0, x0), min(w, x1)
    y0, y1 = max(0, y0), min(h, y1)
    ys, xs = np.nonzero(up[y0:y1, x0:x1])
    if len(ys) == 0:
        return None
    ys, xs = ys + y0, xs + x0
    return table_pts[ys, xs].astype(np.float64), np.column_stack([ys, xs])


OTHERS_MM = 2.0  # a box point this close to another piece's solid is that piece's
NEIGHBOUR_MM = 150.0  # pieces farther apart than this (origin to origin) share no box points


def own_box_points(detections, f: PieceFit, pieces, table_pts: np.ndarray, up: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The `up` points in the piece's box that no other piece's solid explains, and their pixels
    (none of either where the box has none)."""
    got = box_points(detections, f.detection, table_pts, up)
    if got is None:
        return np.zeros((0, 3)), np.zeros((0, 2), int)
    pts, pix = got
    others = [q for q in pieces if q.id != f.piece.id and np.linalg.norm(q.origin - f.piece.origin) < NEIGHBOUR_MM]
    mine = union_distance(others, pts) > OTHERS_MM
    return pts[mine], pix[mine]


def scene_with(scene: Scene, pieces, fits: list[PieceFit]) -> Scene:
    """`scene` with these pieces and their fit reports (a later stage added, moved or dropped some)."""
    perception = dict(scene.extra.get("perception", {}))
    perception["pieces"] = {f.piece.id: f.report() for f in fits}
    perception["uncertain"] = [f.piece.id for f in fits if f.uncertain]
    return Scene(tuple(pieces), scene.stones, {**scene.extra, "perception": perception})


DUPLICATE_MM = 3.0  # two fitted pieces of one size this close are one piece (a tower of two of a size: 5.5 mm apart)
SAME_AXIS_COS = float(np.cos(np.radians(30.0)))  # and with axes this near parallel


def drop_duplicates(scene: Scene, fits: list[PieceFit]) -> tuple[Scene, list[PieceFit]]:
    """Two boxes on one piece (the detector's, or a box the classifier relabelled) give two fits
    in the same place; two pyramids cannot share their space, so the more confident one stays."""
    order = sorted(range(len(fits)), key=lambda i: -fits[i].confidence)
    kept: list[int] = []
    for i in order:
        a = fits[i].piece
        if not any(fits[j].piece.size == a.size and np.linalg.norm(fits[j].piece.origin - a.origin) < DUPLICATE_MM
                   and float(fits[j].piece.axis @ a.axis) > SAME_AXIS_COS for j in kept):
            kept.append(i)
    if len(kept) == len(fits):
        return scene, fits
    kept_fits = [fits[i] for i in sorted(kept)]
    return scene_with(scene, [f.piece for f in kept_fits], kept_fits), kept_fits


HIDDEN_REACH_MM = 3.0  # a fit this far off centring a smaller piece in a larger one's base still puts it inside
HIDDEN_LEVEL_MM = 4.0  # and with its base this near the larger's base: on the same table, not up in a tower


def drop_unseeable(scene: Scene, fits: list[PieceFit]) -> tuple[Scene, list[PieceFit]]:
    """Pieces fitted where the camera could not have seen them: standing inside an upright larger
    piece, on the table within its base. A pyramid can be covered like that (a large one set over
    a small one), but then the larger one's walls hide it, so a piece something was seen of is not
    there: its box was a tower's band or a neighbour, fitted in the wrong place (the tuning tables
    had three such pieces, none of them right; the bundled recording one). In a tower the upper
    piece's base is 10-20 mm up the lower one, and inside a lying piece a nested one shows through
    the open base (vision/nested.py), so neither counts."""
    rel = RelationsConfig()
    upright = [orientation(f.piece, rel).value == "upright" for f in fits]
    drop = set()
    for i, fi in enumerate(fits):
        b = fi.piece
        for j, fj in enumerate(fits):
            a = fj.piece
            if j == i or j in drop or not (upright[i] and upright[j]) or SIZES.index(a.size) <= SIZES.index(b.size):
                continue
            q = (b.origin - a.origin) @ a.matrix  # b's base centre in a's frame
            room = PYRAMID_SIZES[a.size].half - PYRAMID_SIZES[b.size].half + HIDDEN_REACH_MM
            if float(np.abs(q[:2]).max()) < room and abs(float(q[2])) < HIDDEN_LEVEL_MM:
                drop.add(i)
                break
    if not drop:
        return scene, fits
    kept = [f for i, f in enumerate(fits) if i not in drop]
    return scene_with(scene, [f.piece for f in kept], kept), kept


def _refine(fits, point_sets, detections, depth, to_cam, intr, cfg, refit: bool = True):
    """Give each point to the fitted piece that explains it best, then refit from the current pose
    (without `refit`, only the point sets change: the size decision then reads cleaner points)."""
    out = []
    for idx, (k, R, t, cost, fs, name) in enumerate(fits):
        pts = point_sets[k]
        if len(pts) < 8 or name == "none":
            out.append((k, R, t, cost, fs, name))
            continue
        _, size, _ = _class_split(int(detections.class_id[k]))
        own = np.abs(_signed_distances(size, R, t, pts))
        keep = np.ones(len(pts), bool)
        for k2, R2, t2, _, _, n2 in fits:
            if k2 == k or n2 == "none":
                continue
            _, size2, _ = _class_split(int(detections.class_id[k2]))
            other = np.abs(_signed_distances(size2, R2, t2, pts))
            keep &= ~((other < own - 0.5) & (other < 1.5))
        if keep.sum() >= MIN_POINTS and keep.sum() < len(pts):
            sub = pts[keep]
            point_sets[k] = sub
            if refit:
                R, t, cost = gauss_newton(size, R, t, sub, cfg)
                fs = _free_space(size, R, t, depth, to_cam, intr, cfg.free_space_tol_mm)
        out.append((k, R, t, cost, fs, name))
    return out



REST_GROUNDED_MM = 3.0  # a piece whose lowest point is this close to the table is on it
ON_TABLE_MM = 1.0  # after resting, a piece whose lowest point is this low stands or lies on the table


def on_table(piece: Piece) -> bool:
    """Whether a piece stands or lies on the table (its lowest corner within ON_TABLE_MM of it),
    not up on other pieces."""
    return float(piece.vertices[:, 2].min()) <= ON_TABLE_MM
