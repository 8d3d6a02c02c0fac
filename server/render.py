"""Pictures of a table for the dashboard: a camera render (vision.synth) or a top-down drawing.

A `View` turns a Scene into image bytes plus the pixel projection of every piece and stone, which
is all the dashboard needs for overlays and for tapping pieces. The top-down drawing needs nothing
but Pillow and is also used for small pictures of single koans (katsu before / after, snapshots of
counterexamples).
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PIL import Image, ImageDraw

from zendo.geometry import convex_hull_2d
from zendo.pieces import COLOR_RGB, PYRAMID_SIZES, outer_vertices
from zendo.scene import Scene

STONE_RADIUS_MM = 9.0
STONE_RGB = {"white": (240, 240, 236), "black": (25, 25, 28), "green": (60, 170, 90)}


@dataclass(frozen=True)
class Picture:
    png: bytes
    width: int
    height: int
    project: Callable[[np.ndarray], np.ndarray]  # (N, 3) table mm -> (N, 2) pixels


def png_bytes(rgb: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, format="PNG", optimize=False, compress_level=3)
    return buf.getvalue()


def jpeg_bytes(png: bytes, quality: int = 85) -> bytes:
    buf = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def scene_bounds(scene: Scene, margin: float = 40.0) -> tuple[float, float, float, float]:
    pts = [p.vertices[:, :2] for p in scene.pieces] + [np.array([s.position[:2]]) for s in scene.stones]
    if not pts:
        return (-100.0, -100.0, 100.0, 100.0)
    allp = np.vstack(pts)
    x0, y0 = allp.min(axis=0) - margin
    x1, y1 = allp.max(axis=0) + margin
    return float(x0), float(y0), float(x1), float(y1)


class TopDownView:
    """An orthographic drawing from straight above: +x right, +y up, faces shaded by a fixed light."""

    def __init__(self, bounds: tuple[float, float, float, float] | None = None, px_per_mm: float = 2.0,
                 max_px: int = 1400, background=(214, 190, 150)):
        self.bounds = bounds
        self.px_per_mm = px_per_mm
        self.max_px = max_px
        self.background = background

    def _frame(self, scene: Scene):
        x0, y0, x1, y1 = self.bounds or scene_bounds(scene)
        s = min(self.px_per_mm, self.max_px / max(x1 - x0, y1 - y0, 1.0))
        w, h = int(round((x1 - x0) * s)), int(round((y1 - y0) * s))

        def project(p: np.ndarray) -> np.ndarray:
            p = np.atleast_2d(np.asarray(p, float))
            return np.column_stack([(p[:, 0] - x0) * s, (y1 - p[:, 1]) * s])

        return w, h, s, project

    def draw(self, scene: Scene) -> Picture:
        w, h, s, project = self._frame(scene)
        img = Image.new("RGB", (max(w, 1), max(h, 1)), self.background)
        d = ImageDraw.Draw(img)
        light = np.array([-0.35, 0.45, 0.82])
        light /= np.linalg.norm(light)
        faces = []
        for p in scene.pieces:
            v = p.vertices
            base = COLOR_RGB.get(p.color, (128, 128, 128))
            idx = [(0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4), (0, 1, 2, 3)]
            for f in idx:
                pts = v[list(f)]
                n = np.cross(pts[1] - pts[0], pts[2] - pts[0])  # outward for the sides
                if len(f) == 4:
                    n = -n  # the base faces out of the piece's underside
                nn = np.linalg.norm(n)
                n = n / nn if nn > 0 else np.array([0, 0, 1.0])
                if n[2] < -1e-6:  # facing away from a camera above
                    continue
                shade = 0.45 + 0.55 * max(0.0, float(n @ light))
                rgb = tuple(int(min(255, c * shade)) for c in base)
                faces.append((float(pts[:, 2].mean()), [tuple(q) for q in project(pts)], rgb))
        # shadows first, then faces from low to high
        for p in scene.pieces:
            sh = project(p.vertices + np.array([6.0, -6.0, 0.0]) * (p.vertices[:, 2:3] / 40.0 + 0.2))
            d.polygon([tuple(q) for q in _hull(sh)], fill=tuple(int(c * 0.8) for c in self.background))
        for st in scene.stones:
            c = project([st.position])[0]
            r = STONE_RADIUS_MM * s
            d.ellipse([c[0] - r, c[1] - r, c[0] + r, c[1] + r], fill=STONE_RGB.get(st.color, (150, 150, 150)),
                      outline=(70, 70, 70))
        for _, poly, rgb in sorted(faces, key=lambda f: f[0]):
            d.polygon(poly, fill=rgb, outline=tuple(int(c * 0.6) for c in rgb))
        return Picture(png_bytes(np.asarray(img)), img.width, img.height, project)


class CameraView:
    """The synthetic camera of vision.synth looking down at the table at a slight tilt."""

    def __init__(self, bounds: tuple[float, float, float, float], width: int = 1280, height: int = 960,
                 tilt_deg: float = 15.0, seed: int = 7, appearance=None):
        from vision.synth import Appearance, CameraPose, color_intrinsics

        x0, y0, x1, y1 = bounds
        self.intr = color_intrinsics(width, height)
        span = max((x1 - x0) / (width / self.intr.fx), (y1 - y0) / (height / self.intr.fy))
        centre = ((x0 + x1) / 2, (y0 + y1) / 2, 0.0)
        self.pose = CameraPose.looking_at(span * 1.05, tilt_deg, target=centre)
        self.seed = seed
        self.appearance = appearance or Appearance(table="wood", table_rgb=(196, 160, 112), texture_seed=3,
                                                   light_dir=(0.25, -0.35, 0.9), noise=0.0, blur_px=0.5, vignette=0.15)

    def draw(self, scene: Scene) -> Picture:
        from vision.synth import render

        r = render(scene, self.pose, self.intr, seed=self.seed, appearance=self.appearance, noise=False)
        pose, intr = self.pose, self.intr

        def project(p: np.ndarray) -> np.ndarray:
            uv, _ = pose.project(np.atleast_2d(np.asarray(p, float)), intr)
            return uv

        return Picture(png_bytes(r.color), self.intr.width, self.intr.height, project)


def piece_outlines(scene: Scene, project) -> dict:
    """Pixel geometry for overlays and tap hit-testing: each piece's outline, centre and tip."""
    pieces = []
    for p in scene.pieces:
        v = p.vertices
        uv = project(v)
        centre = project(np.array([v.mean(axis=0) * 0.5 + p.origin * 0.5]))[0]
        pieces.append({"id": p.id, "color": p.color, "size": p.size,
                       "polygon": _round(_hull(uv)), "center": _round(centre), "tip": _round(uv[4])})
    stones = []
    for s in scene.stones:
        c = project(np.array([s.position]))[0]
        edge = project(np.array([np.add(s.position, (STONE_RADIUS_MM, 0, 0))]))[0]
        stones.append({"id": s.id, "color": s.color, "center": _round(c),
                       "r": round(float(np.linalg.norm(edge - c)), 1)})
    return {"pieces": pieces, "stones": stones}


def koan_outline(polygons: list[list[list[float]]], pad: float = 14.0) -> list[list[float]]:
    pts = np.vstack([np.asarray(p, float) for p in polygons if p])
    hull = _hull(pts)
    c = hull.mean(axis=0)
    d = hull - c
    n = np.linalg.norm(d, axis=1, keepdims=True)
    n[n == 0] = 1
    return _round(hull + d / n * pad)


def koan_picture(pieces: list[dict], stones: list[dict] | None = None, px: int = 360) -> bytes:
    """A small top-down picture of one koan (for katsu before / after and counterexamples)."""
    from zendo.scene import scene_from_dict

    sc = scene_from_dict({"format": "zendo-scene/1", "units": "mm", "pieces": pieces, "stones": stones or []},
                         check_geometry=False)
    x0, y0, x1, y1 = scene_bounds(sc, margin=25.0)
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, max(x1 - x0, y1 - y0, 90.0) / 2
    view = TopDownView((cx - half, cy - half, cx + half, cy + half), px_per_mm=px / (2 * half), max_px=px)
    return view.draw(sc).png


def _hull(points: np.ndarray) -> np.ndarray:
    return convex_hull_2d(points, decimals=3)


def _round(a) -> list:
    return np.round(np.asarray(a, float), 1).tolist()


__all__ = ["Picture", "TopDownView", "CameraView", "piece_outlines", "koan_outline", "koan_picture",
           "png_bytes", "jpeg_bytes", "scene_bounds", "PYRAMID_SIZES", "outer_vertices"]
