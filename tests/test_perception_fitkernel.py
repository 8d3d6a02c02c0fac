"""Issue 6, item 3: the pose fit's compiled inner loop fits what its numpy statement fits.

`vision.fitkernel` runs the robust point-to-plane Gauss–Newton in one compiled loop per
hypothesis (the largest stage of a CPU frame in numpy); `vision.pose.gauss_newton_batch_numpy`
is the same arithmetic in numpy, kept as the reference. Sums run in another order, so the two
agree to rounding, not bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

from vision.pose import PoseConfig, gauss_newton_batch, gauss_newton_batch_numpy, surface_samples
from zendo.geometry import axis_angle_quat, quat_to_matrix
from zendo.pieces import outer_vertices

CFG = PoseConfig()


def points_and_starts(size: str, seed: int, lying: bool = False, n_starts: int = 12):
    """Noisy surface points of one piece at a known pose, a neighbour's stray points, and starting
    poses scattered round the true one (as the hypotheses are)."""
    rng = np.random.default_rng(seed)
    R0 = quat_to_matrix(axis_angle_quat([1.0, 0.2, 0.0], 72.0 if lying else 0.0)) @ quat_to_matrix(
        axis_angle_quat([0.0, 0.0, 1.0], float(rng.uniform(0, 90))))
    t0 = np.array([rng.uniform(-100, 100), rng.uniform(-100, 100), 0.0])
    t0[2] = -float((outer_vertices(size) @ R0.T)[:, 2].min())  # resting on the table
    pts = surface_samples(size) @ R0.T + t0 + rng.normal(0, 0.6, (160, 3))
    pts = np.vstack([pts, t0 + rng.normal(0, 15, (12, 3)) + [25, 0, 10]])  # a neighbour's points
    Rs = np.array([quat_to_matrix(axis_angle_quat(list(rng.normal(size=3)), float(rng.uniform(0, 25)))) @ R0
                   for _ in range(n_starts)])
    ts = t0 + rng.normal(0, 3.0, (n_starts, 3))
    return Rs, ts, pts


@pytest.mark.parametrize("size", ["small", "medium", "large"])
@pytest.mark.parametrize("lying", [False, True], ids=["upright", "lying"])
@pytest.mark.parametrize("iterations, trunc", [(5, 0.0), (12, 6.0)])
def test_the_compiled_fit_lands_where_the_numpy_fit_lands(size, lying, iterations, trunc):
    Rs, ts, pts = points_and_starts(size, seed=len(size) + 7 * lying + iterations, lying=lying)
    R1, t1, c1, r1 = gauss_newton_batch_numpy(size, Rs, ts, pts, CFG, iterations, trunc)
    R2, t2, c2, r2 = gauss_newton_batch(size, Rs, ts, pts, CFG, iterations, trunc)
    assert np.abs(R1 - R2).max() < 1e-7
    assert np.abs(t1 - t2).max() < 1e-5
    assert np.abs(c1 - c2).max() < 1e-6
    assert np.abs(r1 - r2).max() < 1e-5
    best = int(np.argmin(c2))  # and it is a fit: the best start ends with the piece's points on its faces
    assert float(np.median(np.abs(r2[best, :160]))) < 1.0


def test_no_iterations_and_no_starts_give_back_what_they_were_given():
    Rs, ts, pts = points_and_starts("medium", seed=3, n_starts=4)
    R, t, cost, r = gauss_newton_batch("medium", Rs, ts, pts, CFG, 0)
    assert np.array_equal(R, Rs) and np.array_equal(t, ts) and r.shape == (4, len(pts))
    R, t, cost, r = gauss_newton_batch("medium", Rs[:0], ts[:0], pts, CFG, 5)
    assert R.shape == (0, 3, 3) and r.shape == (0, len(pts)) and cost.shape == (0,)


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_a_points_signed_distance_to_a_piece_is_its_largest_face_plane_distance(size):
    """The compiled `signed_distances` against the numpy residual: negative inside the solid,
    zero on its faces, the distance to the nearest face plane outside."""
    from vision.pose import _residuals, signed_distances
    from zendo.build import Spec, flat

    piece = flat(Spec("a", "red", size), (12.0, -30.0), 35.0)
    rng = np.random.default_rng(len(size))
    pts = piece.origin + rng.normal(0, 20, (500, 3))
    got = signed_distances(piece, pts)
    want = _residuals(piece.size, piece.matrix, piece.origin, pts)[0]
    assert np.abs(got - want).max() < 1e-9
    assert (got < 0).any() and (got > 0).any()
    assert signed_distances(piece, piece.vertices) == pytest.approx(np.zeros(5), abs=1e-9)
    assert signed_distances(piece, pts[:0]).shape == (0,)


def test_without_numba_the_fit_runs_its_numpy_statement(monkeypatch):
    """A machine without numba (a bare GPU box) still fits, in numpy."""
    import sys

    import vision
    import vision.pose as pose

    Rs, ts, pts = points_and_starts("small", seed=11, n_starts=3)
    want = pose.gauss_newton_batch_numpy("small", Rs, ts, pts, CFG, 5)
    pose._kernel.cache_clear()
    monkeypatch.setitem(sys.modules, "vision.fitkernel", None)  # import fails as if numba were missing
    monkeypatch.delattr(vision, "fitkernel", raising=False)
    try:
        assert pose._kernel("gauss_newton_batch") is None
        got = pose.gauss_newton_batch("small", Rs, ts, pts, CFG, 5)
        assert all(np.array_equal(a, b) for a, b in zip(want, got))
        table, intr, depth = camera_and_depth(0)  # and the free-space test runs in numpy too
        args = (surface_samples("small")[None], Rs, ts + [0.0, 0.0, 20.0], depth, table.to_camera, intr, 3.0)
        assert np.array_equal(pose._free_space_of(*args), pose._free_space_numpy(*args))
        piece = pose.Piece("a", "red", "small", tuple(ts[0]), (1.0, 0.0, 0.0, 0.0))
        assert np.abs(pose.signed_distances(piece, pts) - pose._residuals("small", np.eye(3), ts[0], pts)[0]).max() == 0
    finally:
        pose._kernel.cache_clear()


def camera_and_depth(seed: int):
    """A camera 600 mm above a tilted table, and a depth picture of the bare table with a few
    blocks standing on it (so that poses are in front of, behind, and beside what was seen)."""
    from calibration.plane import TableCalibration, frame_from_plane
    from vision.frames import Intrinsics

    rng = np.random.default_rng(seed)
    m = frame_from_plane(np.array([0.05, -0.55, -0.83]), 600.0)
    table = TableCalibration(tuple(tuple(map(float, r)) for r in m), 0.5, 0.9)
    intr = Intrinsics(320, 240, 300.0, 300.0, 160.0, 120.0)
    v, u = np.mgrid[0:240, 0:320].astype(np.float64)
    rays = np.stack([(u - 160.0) / 300.0, (v - 120.0) / 300.0, np.ones_like(u)], axis=-1)
    n, off = table.normal_cam, -float(table.matrix[2, 3])  # the plane n.p = off, in camera terms
    depth = (off / (rays @ n)).astype(np.float32)
    for _ in range(6):
        y0, x0 = rng.integers(0, 200), rng.integers(0, 280)
        depth[y0:y0 + 40, x0:x0 + 40] -= np.float32(rng.uniform(10, 60))
    depth[rng.random(depth.shape) < 0.05] = 0.0  # holes: no depth there
    return table, intr, depth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_compiled_free_space_test_counts_what_the_numpy_one_counts(seed):
    """The share of a pose's surface the camera saw through, compiled and in numpy: the same
    shares for poses on, above, under and off the picture, with one set of samples or one per
    pose (how `choose_size` tries three sizes in one pass)."""
    from vision.pose import _free_space_numpy, _free_space_of

    table, intr, depth = camera_and_depth(seed)
    rng = np.random.default_rng(seed)
    H = 60
    R = np.array([quat_to_matrix(axis_angle_quat(list(rng.normal(size=3)), float(rng.uniform(0, 180))))
                  for _ in range(H)])
    t = np.column_stack([rng.uniform(-400, 400, H), rng.uniform(-400, 400, H), rng.uniform(-30, 80, H)])
    for samples in (surface_samples("large")[None],
                    np.stack([surface_samples(("small", "medium", "large")[h % 3]) for h in range(H)])):
        want = _free_space_numpy(samples, R, t, depth, table.to_camera, intr, 3.0)
        got = _free_space_of(samples, R, t, depth, table.to_camera, intr, 3.0)
        assert np.abs(got - want).max() < 1e-12
        assert (want > 0).any() and (want == 0).any()  # the poses test both outcomes
