"""The classifier reads a crop it is unsure of again in its three quarter turns (vision.classify)."""
import numpy as np
import pytest

from tests.perception_helpers import render_table
from vision.classify import TURNS_BELOW_P, crops, load_classifier
from zendo.build import Spec, flat, upright


@pytest.fixture(scope="module")
def mixed_crops():
    """Crops of a rendered table's four pieces (read surely) and the blends of two of them, half
    each (read unsurely: two pieces at once)."""
    from calibration.plane import height_map

    specs = [Spec("a", "red", "large"), Spec("b", "blue", "medium"), Spec("c", "yellow", "small"),
             Spec("d", "green", "large")]
    pieces = [(upright if i % 2 else flat)(sp, (-90.0 + 60 * i, 20.0 * (i % 2)), 30.0 * i)
              for i, sp in enumerate(specs)]
    r, frame, cal = render_table(pieces, seed=5)
    pts, valid = height_map(frame, cal)
    boxes = np.array([o.box for o in r.objects if o.box is not None], np.float32)
    real = crops(frame.color, frame.depth_mm, pts[..., 2], valid, frame.intrinsics.fx, boxes)
    i, j = np.triu_indices(len(real), 1)
    blends = ((real[i].astype(np.uint16) + real[j]) // 2).astype(np.uint8)
    return np.concatenate([real, blends])


def test_a_crop_read_surely_keeps_its_one_reading(mixed_crops):
    clf = load_classifier(None, int8=False)
    once, p = clf.read_once(mixed_crops), clf.probabilities(mixed_crops)
    sure = once.max(axis=1) >= TURNS_BELOW_P
    assert sure.any()
    assert np.abs(p[sure] - once[sure]).max() < 1e-6


def test_a_crop_read_unsurely_is_read_as_the_mean_of_its_four_quarter_turns(mixed_crops):
    clf = load_classifier(None, int8=False)
    once, p = clf.read_once(mixed_crops), clf.probabilities(mixed_crops)
    unsure = once.max(axis=1) < TURNS_BELOW_P
    assert unsure.any()
    x = mixed_crops[unsure]
    turns = np.mean([clf.read_once(np.ascontiguousarray(np.rot90(x, k, axes=(2, 3)))) for k in range(4)], axis=0)
    assert np.abs(p[unsure] - turns).max() < 1e-5
    assert np.abs(p[unsure] - once[unsure]).max() > 1e-3  # the turns do change the reading
    assert np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
