"""The renderer against the geometry it renders (issue 5, clauses 1, 2, 5, 6, 7)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vision.classes import CLASS_NAMES
from vision.synth import Appearance, CameraPose, color_intrinsics, depth_rms_mm, random_table, render
from vision.synth.demo import demo_table
from zendo.koans import split_koans
from zendo.scene import Piece, Scene, Stone, validate

INTR = color_intrinsics(640, 480)


@pytest.fixture(scope="module")
def scene():
    return demo_table()


@pytest.fixture(scope="module")
def noisy(scene):
    return render(scene, CameraPose.looking_at(500, 25), INTR, seed=3)


@pytest.fixture(scope="module")
def ideal(scene):
    return render(scene, CameraPose.looking_at(500, 25), INTR, seed=3, noise=False)


def _backproject(depth_mm, intr, pose_matrix):
    v, u = np.nonzero(depth_mm > 0)
    z = depth_mm[v, u]
    pc = np.column_stack([(u - intr.ppx) / intr.fx * z, (v - intr.ppy) / intr.fy * z, z])
    return pose_matrix[:3, :3] @ pc.T + pose_matrix[:3, 3:4], u, v


def test_class_list():
    assert len(CLASS_NAMES) == 18
    assert CLASS_NAMES[:4] == ("red_small", "red_medium", "red_large", "yellow_small")
    assert CLASS_NAMES[14] == "black_large" and CLASS_NAMES[15:] == ("stone_white", "stone_black", "stone_green")


def test_outputs_have_the_camera_formats(noisy):
    assert noisy.color.shape == (480, 640, 3) and noisy.color.dtype == np.uint8
    assert noisy.depth.shape == (480, 640) and noisy.depth.dtype == np.uint16
    assert noisy.mask.shape == (480, 640)
    assert 0.9 < (noisy.depth > 0).mean() < 1.0  # mostly valid, with holes


def test_camera_pose_height_tilt_and_axes():
    pose = CameraPose.looking_at(700, 40, target=(10, 20, 0), yaw_deg=30)
    m = pose.matrix
    assert m[2, 3] == pytest.approx(700)
    fwd = m[:3, 2]
    assert np.degrees(np.arccos(-fwd[2])) == pytest.approx(40, abs=1e-6)  # tilt from straight down
    # the optical axis passes through the target
    t = (0 - m[2, 3]) / fwd[2]
    assert m[:3, 3] + t * fwd == pytest.approx([10, 20, 0], abs=1e-6)
    assert np.linalg.det(m[:3, :3]) == pytest.approx(1.0)
    assert m[:3, 1][2] < 0 or np.isclose(m[:3, 1][2], 0)  # image 'down' points away from the sky


def test_depth_at_known_pixels_agrees_with_geometry_within_the_noise_model():
    """A lone large pyramid: project its tip and a table point, compare the rendered depth."""
    p = Piece("a", "blue", "large", (0.0, 0.0, 0.0))
    sc = Scene((p,), ())
    pose = CameraPose.looking_at(600, 0)
    r = render(sc, pose, INTR, seed=11)
    ideal = render(sc, pose, INTR, seed=11, noise=False)
    # the table at a known pixel: depth = camera height (looking straight down)
    u, v = 100, 400
    assert ideal.depth_true[v, u] == pytest.approx(600.0, abs=1e-2)
    table = (ideal.mask == 0) & (r.depth > 0)
    err = r.depth[table].astype(float) - ideal.depth_true[table]
    sigma = float(depth_rms_mm(600.0, 424.2, r.appearance.depth_subpixel))
    assert abs(err.mean()) < 0.5
    assert 0.5 * sigma < err.std() < 2.0 * sigma  # RMS as the z^2 model says (+ 0.5 mm rounding)
    # the tip pixel: depth = 600 - h
    (tu, tv), = pose.project(p.tip[None, :], INTR)[0]
    tip_z = float(ideal.depth_true[int(round(tv)), int(round(tu))])
    assert 600 - 44.5 - 0.01 <= tip_z < 600 - 44.5 + 2.0  # the tip is the nearest point; half a pixel off it, a steep face
    assert ideal.mask[int(round(tv)), int(round(tu))] == 1


def test_depth_noise_grows_with_distance():
    sc = Scene((), ())
    errs = []
    for h in (400, 850):
        pose = CameraPose.looking_at(h, 0)
        r = render(sc, pose, INTR, seed=5, appearance=Appearance(depth_subpixel=0.08, flying_pixels=0.0))
        ok = r.depth > 0
        errs.append(float((r.depth[ok] - r.depth_true[ok]).std()))
    ratio = errs[1] / errs[0]
    assert 2.5 < ratio < 6.5  # (850/400)^2 = 4.5, blurred a little by the 1 mm quantisation


def test_backprojected_table_pixels_lie_on_the_table(noisy):
    table = np.where(noisy.mask == 0, noisy.depth.astype(float), 0.0)
    pts, _, _ = _backproject(table, noisy.intrinsics, noisy.camera_to_table)
    z = pts[2]
    assert abs(np.median(z)) < 0.3
    assert np.percentile(np.abs(z), 90) < 6.0  # within the noise model (about 1-2 mm RMS at 0.5 m) plus flying pixels


def test_ideal_backprojection_hits_the_pieces(scene, ideal):
    pts, u, v = _backproject(ideal.depth_true.astype(float), ideal.intrinsics, ideal.camera_to_table)
    on_table = ideal.mask[v, u] == 0
    assert np.abs(pts[2][on_table]).max() < 0.05
    assert pts[2][~on_table].max() <= max(p.vertices[:, 2].max() for p in scene.pieces) + 0.1


def test_holes_in_ir_shadow_and_on_light_pieces():
    """A tall tower casts an IR shadow (no depth beside it), a white piece loses more depth than a red one."""
    pieces = (Piece("w", "white", "large", (-40.0, 0, 0)), Piece("r", "red", "large", (40.0, 0, 0)))
    sc = Scene(pieces, ())
    pose = CameraPose.looking_at(450, 0)
    r = render(sc, pose, INTR, seed=2)
    holes = {k: float((r.depth[r.mask == k] == 0).mean()) for k in (1, 2)}
    assert holes[1] > holes[2] + 0.05
    ideal = render(sc, pose, INTR, seed=2, noise=False)
    # pixels of the table near the pieces that the right imager cannot see: all zero
    table_holes = (r.mask == 0) & (r.depth == 0)
    assert table_holes.sum() > 50
    assert (ideal.depth[r.mask == 0] > 0).all()


def test_labels_agree_with_masks(noisy):
    for o in noisy.objects:
        ys, xs = np.nonzero(noisy.mask == o.mask_value)
        assert o.visible_px == len(xs)
        if len(xs):
            assert o.box == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
        else:
            assert o.box is None
    # the tip keypoint of a visible, upright, unoccluded piece falls inside its box
    for o in noisy.objects:
        if o.kind == "piece" and o.keypoints[0, 2] == 2:
            x0, y0, x1, y1 = o.box
            u, v = o.keypoints[0, :2]
            assert x0 - 1.5 <= u <= x1 + 1.5 and y0 - 1.5 <= v <= y1 + 1.5


def test_truth_maps_mask_values_to_ids(scene, noisy):
    truth = json.loads(json.dumps(noisy.truth(scene)))
    ids = [p.id for p in scene.pieces] + [s.id for s in scene.stones]
    assert truth["mask_values"] == {str(i): pid for i, pid in enumerate(ids, 1)}
    assert np.array(truth["camera_to_table"]).shape == (4, 4)
    assert set(np.unique(noisy.mask)) <= set(range(len(ids) + 1))


def test_render_is_deterministic(scene):
    a = render(scene, CameraPose.looking_at(500, 25), INTR, seed=9)
    b = render(scene, CameraPose.looking_at(500, 25), INTR, seed=9)
    assert np.array_equal(a.color, b.color) and np.array_equal(a.depth, b.depth)


def test_848_wide_mode():
    intr = color_intrinsics(848, 480)
    r = render(demo_table(), CameraPose.looking_at(600, 30), intr, seed=1)
    assert r.color.shape == (480, 848, 3) and r.depth.shape == (480, 848)


def test_random_tables_are_valid_and_varied():
    rng = np.random.default_rng(0)
    sizes = []
    for n in (1, 3, 8):
        for _ in range(3):
            sc = random_table(rng, n)
            validate(sc)
            koans = split_koans(sc)
            assert len(koans) == n
            assert len(sc.extra["koans"]) == n
            assert all(1 <= len(k.piece_ids) <= 6 for k in koans)
            sizes += [len(k.piece_ids) for k in koans]
            for s in sc.stones:  # a marking stone lies beside its koan, on the table
                assert s.position[2] == 0.0
    assert max(sizes) >= 3 and min(sizes) == 1


def test_random_tables_use_many_placements():
    rng = np.random.default_rng(1)
    off_table = lying = 0
    for _ in range(12):
        sc = random_table(rng, 4)
        for p in sc.pieces:
            off_table += p.vertices[:, 2].min() > 1.0  # stacked / across tips
            lying += abs(p.axis[2]) < 0.5
    assert off_table > 0 and lying > 0


def test_stones_are_rendered():
    sc = Scene((), (Stone("s1", "white", (0.0, 0.0, 0.0)),))
    r = render(sc, CameraPose.looking_at(500, 0), INTR, seed=0, noise=False)
    assert r.objects[0].visible_px > 200  # a 15 mm bead at 0.5 m: about 18 px across (pi*9^2 = 254)
    assert r.depth_true[r.mask == 1].min() == pytest.approx(500 - 6.0, abs=0.3)


def test_the_demo_table_splits_into_exactly_its_declared_koans():
    from zendo.koans import split_koans

    scene = demo_table()
    declared = {frozenset(k["pieces"]) for k in scene.extra["koans"]}
    assert {frozenset(k.piece_ids) for k in split_koans(scene)} == declared
