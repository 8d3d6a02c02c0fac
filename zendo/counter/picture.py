"""A top-down picture of a koan as SVG: what the Master builds, seen from above.

Each piece is drawn as its faces projected on the table, lower pieces first and, within a piece,
lower faces first, so a tower shows its top piece and a flat piece shows the face turned up.
Plain SVG with a generic font family: no external fonts, no dependencies, readable anywhere
(until the renderer can give the camera's view).
"""
from __future__ import annotations

from html import escape

import numpy as np

from ..pieces import COLOR_RGB
from ..scene import Scene

_FACES = [(0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4), (0, 1, 2, 3)]
_SCALE = 4.0  # pixels per mm
_MARGIN_MM = 12.0


def _shade(rgb: tuple[int, int, int], k: float) -> str:
    r, g, b = (int(max(0, min(255, c * k))) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def koan_svg(scene: Scene, title: str = "") -> str:
    """SVG text of the scene from above: +x to the right, +y up the page, 4 px per mm."""
    pts = [p.vertices for p in scene.pieces] + [np.array([s.position]) for s in scene.stones]
    allv = np.vstack(pts) if pts else np.zeros((1, 3))
    lo = allv[:, :2].min(axis=0) - _MARGIN_MM
    hi = allv[:, :2].max(axis=0) + _MARGIN_MM
    w, h = (hi - lo) * _SCALE

    def xy(p) -> str:
        return f"{(p[0] - lo[0]) * _SCALE:.1f},{(hi[1] - p[1]) * _SCALE:.1f}"

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h + 20:.0f}" '
           f'viewBox="0 0 {w:.0f} {h + 20:.0f}" font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="#f4efe6"/>']
    if title:
        out.append(f'<text x="4" y="{h + 14:.0f}" fill="#333">{escape(title)} (seen from above)</text>')
    light = np.array([0.3, -0.4, 0.87])
    for p in sorted(scene.pieces, key=lambda p: float(p.vertices[:, 2].max())):
        v = p.vertices
        rgb = COLOR_RGB.get(p.color, (128, 128, 128))
        faces = []
        for f in _FACES:
            n = np.cross(v[f[1]] - v[f[0]], v[f[2]] - v[f[0]])
            if len(f) == 4:
                n = -n
            n = n / (np.linalg.norm(n) or 1.0)
            if n[2] <= 1e-6:  # facing down or edge-on: hidden from above
                continue
            faces.append((float(v[list(f), 2].mean()), f, 0.55 + 0.45 * max(0.0, float(n @ light))))
        for _, f, k in sorted(faces):
            poly = " ".join(xy(v[i]) for i in f)
            out.append(f'<polygon points="{poly}" fill="{_shade(rgb, k)}" stroke="#222" stroke-width="1"/>')
        c = v.mean(axis=0)
        out.append(f'<text x="{(c[0] - lo[0]) * _SCALE:.1f}" y="{(hi[1] - c[1]) * _SCALE + 4:.1f}" '
                   f'text-anchor="middle" fill="#000" stroke="#fff" stroke-width="2.5" paint-order="stroke">'
                   f'{escape(p.id)}</text>')
    for s in scene.stones:
        fill = {"white": "#fafafa", "black": "#111"}.get(s.color, _shade(COLOR_RGB.get(s.color, (90, 160, 90)), 1))
        out.append(f'<circle cx="{(s.position[0] - lo[0]) * _SCALE:.1f}" cy="{(hi[1] - s.position[1]) * _SCALE:.1f}" '
                   f'r="{5 * _SCALE:.1f}" fill="{fill}" stroke="#555"/>')
    out.append("</svg>")
    return "\n".join(out)
