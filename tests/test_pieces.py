"""Looney pyramid geometry, in one place (scene-format.md, 'Piece geometry')."""
import numpy as np
import pytest

from zendo.pieces import PYRAMID_SIZES, WALL_MM, inner_planes, outer_planes, outer_vertices, wall_vertices


@pytest.mark.parametrize(
    "size,pips,width,height",
    [("small", 1, 14.3, 25.4), ("medium", 2, 19.8, 34.9), ("large", 3, 25.4, 44.5)],
)
def test_sizes_pips_and_dimensions_are_the_documented_ones(size, pips, width, height):
    s = PYRAMID_SIZES[size]
    assert (s.pips, s.width, s.height) == (pips, width, height)
    v = outer_vertices(size)
    assert np.ptp(v[:4, 0]) == pytest.approx(width)
    assert v[4].tolist() == [0.0, 0.0, height]


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_cavity_faces_are_the_outer_faces_offset_by_the_wall_thickness(size):
    n_out, d_out = outer_planes(size)
    n_in, d_in = inner_planes(size)
    assert np.allclose(n_out, n_in)
    assert np.allclose(d_out[:4] - d_in[:4], WALL_MM)
    # the cavity's tip lies on the axis, below the outer tip, on every inner face
    tip = np.array([0.0, 0.0, PYRAMID_SIZES[size].inner_height])
    assert np.allclose(n_in[:4] @ tip, d_in[:4])


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_the_four_walls_hold_every_outer_and_inner_vertex(size):
    walls = np.vstack(wall_vertices(size))
    s = PYRAMID_SIZES[size]
    assert len(wall_vertices(size)) == 4
    assert np.isclose(walls[:, 2].max(), s.height)
    assert np.isclose(np.abs(walls[:, 0]).max(), s.half)
