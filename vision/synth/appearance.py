"""What the table looks like: surfaces, light, exposure and sensor noise, drawn at random.

Textures are procedural (multi-octave value noise from resized random grids) and live in the
table frame, so perspective, tilt and distance are right by construction.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

TABLE_KINDS = ("wood", "felt", "cloth", "plain")
TEXTURE_PX = 512
TEXTURE_MM = 768.0  # the texture tile covers 768 x 768 mm (1.5 mm per texel), mirrored beyond


@dataclass(frozen=True)
class Appearance:
    table: str = "wood"
    table_rgb: tuple[float, float, float] = (150, 100, 60)  # sRGB base colour of the surface
    texture_seed: int = 0
    light_dir: tuple[float, float, float] = (0.3, -0.4, 0.87)  # towards the key light, table frame
    light_rgb: tuple[float, float, float] = (1.0, 0.97, 0.92)
    key: float = 0.75  # diffuse strength of the key light
    ambient: float = 0.35  # sky/fill light
    specular: float = 0.55  # highlight strength on the glossy plastic
    shininess: float = 60.0
    fill_specular: float = 0.25  # a broad overhead light's reflection (ceiling lamp / window)
    shadow_softness_px: float = 3.0
    tint_jitter: float = 0.07  # per-piece colour variation (relative, per channel)
    exposure: float = 1.0
    white_balance: tuple[float, float, float] = (1.0, 1.0, 1.0)
    vignette: float = 0.25
    blur_px: float = 0.7
    noise: float = 2.5  # sRGB levels (read noise), shot noise is added on top
    depth_subpixel: float = 0.08  # stereo matching error (pixels) in the RMS model
    flying_pixels: float = 0.35  # fraction of depth-edge pixels that float between surfaces
    background_rgb: tuple[float, float, float] = (60, 55, 50)

    @classmethod
    def sample(cls, rng: np.random.Generator) -> "Appearance":
        table = TABLE_KINDS[int(rng.integers(len(TABLE_KINDS)))]
        if table == "wood":
            base = rng.choice([[150, 100, 60], [190, 140, 90], [110, 70, 40], [205, 170, 120], [90, 60, 40]])
        elif table == "felt":
            base = rng.choice([[40, 110, 60], [30, 60, 110], [120, 30, 40], [90, 90, 95], [50, 50, 55]])
        elif table == "cloth":
            base = rng.choice([[200, 195, 185], [170, 40, 40], [60, 90, 140], [220, 210, 170], [130, 130, 125]])
        else:
            base = rng.choice([[235, 235, 230], [200, 200, 200], [120, 120, 120], [40, 40, 42], [215, 200, 175]])
        base = np.clip(np.asarray(base, float) * rng.uniform(0.85, 1.15, 3), 0, 255)
        elev = np.radians(rng.uniform(35, 85))
        azim = rng.uniform(0, 2 * np.pi)
        light = (np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev))
        warm = rng.uniform(-0.08, 0.08)
        return cls(
            table=table,
            table_rgb=tuple(float(c) for c in base),
            texture_seed=int(rng.integers(2**31)),
            light_dir=tuple(float(c) for c in light),
            light_rgb=(1.0 + warm, 1.0, 1.0 - warm),
            key=float(rng.uniform(0.45, 0.95)),
            ambient=float(rng.uniform(0.2, 0.5)),
            specular=float(rng.uniform(0.3, 0.9)),
            shininess=float(rng.uniform(25, 150)),
            fill_specular=float(rng.uniform(0.0, 0.4)),
            shadow_softness_px=float(rng.uniform(1.0, 6.0)),
            tint_jitter=float(rng.uniform(0.03, 0.1)),
            exposure=float(np.exp(rng.normal(0.0, 0.22))),
            white_balance=tuple(float(c) for c in rng.uniform(0.92, 1.08, 3)),
            vignette=float(rng.uniform(0.05, 0.4)),
            blur_px=float(rng.uniform(0.4, 1.1)),
            noise=float(rng.uniform(1.0, 5.0)),
            depth_subpixel=float(rng.uniform(0.06, 0.12)),
            flying_pixels=float(rng.uniform(0.2, 0.5)),
            background_rgb=tuple(float(c) for c in rng.uniform(20, 90, 3)),
        )

    def with_(self, **kw) -> "Appearance":
        return replace(self, **kw)


# --------------------------------------------------------------------------- colour space

_SRGB_TO_LIN = ((np.arange(256) / 255.0) ** 2.2).astype(np.float32)
_LIN_LEVELS = 4096
_LIN_TO_SRGB = np.clip(np.round(255 * (np.arange(_LIN_LEVELS) / (_LIN_LEVELS - 1)) ** (1 / 2.2)), 0, 255)


def srgb_to_linear(c) -> np.ndarray:
    return (np.asarray(c, np.float32) / 255.0) ** 2.2


def linear_to_srgb_float(lin: np.ndarray) -> np.ndarray:
    """Linear [0, 1] to sRGB levels [0, 255] as float (so noise can be added before rounding)."""
    idx = np.clip(lin * (_LIN_LEVELS - 1), 0, _LIN_LEVELS - 1).astype(np.int32)
    return _LIN_TO_SRGB[idx].astype(np.float32)


# --------------------------------------------------------------------------- textures


def _noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    g = rng.standard_normal((cells, cells)).astype(np.float32)
    return cv2.resize(g, (size, size), interpolation=cv2.INTER_CUBIC)


def _fractal(rng, size, base_cells, octaves=4, gain=0.5) -> np.ndarray:
    out = np.zeros((size, size), np.float32)
    amp, cells, total = 1.0, base_cells, 0.0
    for _ in range(octaves):
        out += amp * _noise(rng, size, max(2, cells))
        total += amp
        amp *= gain
        cells *= 2
    return out / total


def texture_turn(app: Appearance) -> tuple[float, float, float]:
    """How the texture lies on the table: an angle (radians) and an offset (mm)."""
    rng = np.random.default_rng([app.texture_seed, 1])
    return float(rng.uniform(0, 2 * np.pi)), float(rng.uniform(-300, 300)), float(rng.uniform(-300, 300))


def table_texture(app: Appearance) -> np.ndarray:
    """(TEXTURE_PX, TEXTURE_PX, 3) float32 linear albedo of the table surface."""
    rng = np.random.default_rng(app.texture_seed)
    n = TEXTURE_PX
    base = srgb_to_linear(app.table_rgb)
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32)
    if app.table == "wood":
        rng.uniform(0, np.pi)  # (kept so the draws stay in step)
        ang = 0.0  # axis-aligned, so the mirrored tiles continue the planks; the renderer turns the table
        along = xx * np.cos(ang) + yy * np.sin(ang)
        across = -xx * np.sin(ang) + yy * np.cos(ang)
        # grain: long streaks along the plank (noise stretched along the grain direction)
        g = rng.standard_normal((48, 6)).astype(np.float32)
        stretched = cv2.resize(g, (n, n), interpolation=cv2.INTER_CUBIC)
        rot = cv2.getRotationMatrix2D((n / 2, n / 2), float(np.degrees(ang)) - 90.0, 1.5)
        warp = cv2.warpAffine(stretched, rot, (n, n), borderMode=cv2.BORDER_REFLECT) * rng.uniform(2, 6)
        period = rng.uniform(4.0, 10.0)
        rings = 0.5 + 0.5 * np.sin(2 * np.pi * (across + warp) / period)
        rings = rings ** rng.uniform(1.5, 4.0)
        plank_w = rng.uniform(55, 110)
        plank = np.floor(across / plank_w)
        plank_shade = 1.0 + 0.12 * np.sin(plank * 12.9898 + rng.uniform(0, 6))
        seam = (np.abs((across / plank_w) - np.round(across / plank_w)) * plank_w < 0.6).astype(np.float32)
        fine = _fractal(rng, n, 64, 3)
        streak = cv2.resize(rng.standard_normal((4, 256)).astype(np.float32), (n, n))
        lum = (0.9 + 0.12 * rings + 0.04 * fine + 0.05 * streak) * plank_shade * (1 - 0.45 * seam)
        lum = lum * (1 + 0.0 * along)
        tex = base[None, None, :] * lum[..., None]
    elif app.table == "felt":
        fibre = rng.standard_normal((n, n)).astype(np.float32)
        fibre = cv2.GaussianBlur(fibre, (0, 0), 0.6)
        mottle = _fractal(rng, n, 8, 3)
        lum = 1.0 + 0.18 * fibre + 0.08 * mottle
        tex = base[None, None, :] * lum[..., None]
    elif app.table == "cloth":
        p = rng.uniform(3.2, 5.0)
        rng.uniform(0, np.pi / 2)
        ang = 0.0
        u = xx * np.cos(ang) + yy * np.sin(ang)
        v = -xx * np.sin(ang) + yy * np.cos(ang)
        weave = 0.5 + 0.25 * (np.sin(2 * np.pi * u / p) + np.sin(2 * np.pi * v / p))
        tex = base[None, None, :] * (0.85 + 0.2 * weave + 0.05 * _fractal(rng, n, 16, 3))[..., None]
        if rng.random() < 0.5:  # a stripe or gingham pattern
            stripe = rng.uniform(10, 30)
            s = (np.floor(u / stripe) % 2) + (np.floor(v / stripe) % 2) * (rng.random() < 0.5)
            accent = srgb_to_linear(rng.uniform(30, 240, 3))
            mix = (s > 0).astype(np.float32)[..., None] * rng.uniform(0.3, 0.7)
            tex = tex * (1 - mix) + accent[None, None, :] * mix * (0.85 + 0.2 * weave[..., None])
        folds = _fractal(rng, n, 3, 2)
        tex = tex * (1 + 0.1 * folds[..., None])
    else:  # plain laminate / painted surface
        lum = 1.0 + 0.04 * _fractal(rng, n, 4, 3) + 0.015 * rng.standard_normal((n, n)).astype(np.float32)
        tex = base[None, None, :] * lum[..., None]
    return np.clip(tex, 0.0, 1.0).astype(np.float32)
