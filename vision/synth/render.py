"""Scene -> what a RealSense D435 would see: colour, depth (uint16 mm), instance mask, labels.

One raycast from the colour camera gives depth, normals and instance ids; a shadow ray per pixel
towards the key light and two visibility rays towards the IR imagers give cast shadows, the
depth camera's occlusions and the IR-shadow holes. Everything is numpy on top of Open3D's
`RaycastingScene` (CPU); see docs/synthetic.md for what is and is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np
from scipy import ndimage

from zendo.pieces import COLOR_RGB
from zendo.scene import Scene

from ..classes import piece_class, stone_class
from ..frames import Intrinsics
from .appearance import (TEXTURE_MM, TEXTURE_PX, Appearance, linear_to_srgb_float, srgb_to_linear, table_texture,
                         texture_turn)
from .camera import LEFT_IMAGER_IN_COLOR, RIGHT_IMAGER_IN_COLOR, BASELINE_MM, CameraPose, depth_intrinsics
from .world import PART_INNER, PART_PROP, PART_RIM, PART_STONE, Prop, World, build_world

#: Minimum range of a D435 (mm): nearer surfaces give no depth.
MIN_RANGE_MM = 170.0
#: Depth edge (mm, between neighbouring pixels) where stereo matching smears foreground into background.
EDGE_JUMP_MM = 6.0
#: Probability that a pixel on a piece of this colour has no depth, and the bias (mm, deeper)
#: of those it has: glossy light and translucent plastic scatter the IR pattern.
MATERIAL_DROPOUT = {"clear": 0.55, "white": 0.25, "yellow": 0.10, "cyan": 0.10, "orange": 0.06}
MATERIAL_BIAS_MM = {"clear": 3.0, "white": 1.2, "yellow": 0.8, "cyan": 0.8, "orange": 0.5}
DEFAULT_DROPOUT = 0.03
STONE_RGB = {"white": (225, 228, 230), "black": (22, 22, 26), "green": (40, 150, 60)}


@dataclass
class ObjectLabel:
    """What the detector should find for one piece or stone."""

    mask_value: int
    id: str
    kind: str  # "piece" or "stone"
    color: str
    size: str | None
    class_id: int | None
    visible_px: int
    box: tuple[float, float, float, float] | None  # x0, y0, x1, y1 (pixels, exclusive max) of the visible mask
    keypoints: np.ndarray | None  # (5, 3): tip, then the base corners clockwise in the image from the top;
    # columns u, v, visibility (0 off-image, 1 in the image but hidden, 2 seen)

    def to_dict(self) -> dict:
        return {
            "mask_value": self.mask_value, "id": self.id, "kind": self.kind, "color": self.color,
            "size": self.size, "class_id": self.class_id, "visible_px": self.visible_px,
            "box": None if self.box is None else [round(float(v), 2) for v in self.box],
            "keypoints": None if self.keypoints is None else [[round(float(u), 2), round(float(v), 2), int(f)]
                                                              for u, v, f in self.keypoints],
        }


@dataclass
class Render:
    color: np.ndarray  # HxWx3 uint8 RGB
    depth: np.ndarray  # HxW uint16 mm, aligned to colour, 0 = no depth
    depth_true: np.ndarray  # HxW float32 mm, noise-free z of the first surface (0 where nothing)
    mask: np.ndarray  # HxW uint8: 0 table/background, k -> instance_ids[k-1]
    instance_ids: tuple[str, ...]
    objects: list[ObjectLabel]
    camera_to_table: np.ndarray  # 4x4, OpenCV camera axes
    intrinsics: Intrinsics
    appearance: Appearance
    raw_depth: np.ndarray | None = None  # depth camera's own view (for recordings)
    raw_depth_intrinsics: Intrinsics | None = None

    @property
    def boxes(self) -> dict[str, tuple]:
        return {o.id: o.box for o in self.objects if o.box is not None}

    @property
    def keypoints(self) -> dict[str, np.ndarray]:
        return {o.id: o.keypoints for o in self.objects if o.keypoints is not None}

    def truth(self, scene: Scene) -> dict:
        return {
            "scene": scene.to_dict() | ({"koans": scene.extra["koans"]} if "koans" in scene.extra else {}),
            "camera_to_table": [[round(float(v), 6) for v in row] for row in self.camera_to_table],
            "camera_axes": "opencv (x right, y down, z forward), millimetres",
            "intrinsics": self.intrinsics.to_dict(),
            "mask_values": {str(k): pid for k, pid in enumerate(self.instance_ids, start=1)},
            "objects": [o.to_dict() for o in self.objects],
        }


# --------------------------------------------------------------------------- rays


@lru_cache(maxsize=8)
def _pixel_dirs(intr: Intrinsics) -> np.ndarray:
    """(H, W, 3) camera-frame ray directions with z = 1 (so the hit distance is the depth z)."""
    u, v = np.meshgrid(np.arange(intr.width, dtype=np.float64), np.arange(intr.height, dtype=np.float64))
    d = np.stack([(u - intr.ppx) / intr.fx, (v - intr.ppy) / intr.fy, np.ones_like(u)], axis=-1)
    return d.astype(np.float32)


def _cast(world: World, pose: CameraPose, intr: Intrinsics):
    d_cam = _pixel_dirs(intr)
    d = d_cam @ pose.rotation.T.astype(np.float32)
    o = np.broadcast_to(pose.position.astype(np.float32), d.shape)
    res = world.cast(np.concatenate([o, d], axis=-1))
    t = res["t_hit"].numpy()
    prim = res["primitive_ids"].numpy().astype(np.int64)
    normals = res["primitive_normals"].numpy()
    hit = np.isfinite(t)
    prim = np.where(hit, prim, 0)
    inst = np.where(hit, world.tri_instance[prim], -1)
    part = np.where(hit, world.tri_part[prim], -1)
    t = np.where(hit, t, 0.0).astype(np.float32)
    points = pose.position.astype(np.float32) + d * t[..., None]
    # normals facing the camera (the cavity and the rim are seen from whichever side is visible)
    sign = np.where(np.einsum("ijk,ijk->ij", normals, d) > 0, np.float32(-1), np.float32(1))
    normals *= sign[..., None]
    return t, hit, inst, part, points, normals, d


def _near_objects(inst: np.ndarray, radius_px: int) -> np.ndarray:
    """Flat indices of pixels within `radius_px` of an object or of the image border: the only
    ones an object (even one just outside the frame) can shadow or hide from a nearby eye."""
    m = (inst > 0).astype(np.uint8)
    r = int(min(max(radius_px, 1), 400))
    m[:r, :] = 1; m[-r:, :] = 1; m[:, :r] = 1; m[:, -r:] = 1
    m = cv2.dilate(m, np.ones((2 * r + 1, 2 * r + 1), np.uint8))  # a square: separable, fast
    return np.flatnonzero(m)


def _reach_px(intr: Intrinsics, t: np.ndarray, hit: np.ndarray, offset_mm: float, tallest_mm: float = 60.0) -> int:
    """How far (pixels) a shadow cast `offset_mm` sideways by an object `tallest_mm` high can reach."""
    z = float(np.percentile(t[hit], 1)) if hit.any() else 500.0
    z = max(z, tallest_mm + 50.0)
    return int(np.ceil(intr.fx * offset_mm * tallest_mm / (z * (z - tallest_mm)))) + 3


def _unoccluded(world: World, points, normals, hit, idx: np.ndarray, eye=None, direction=None) -> np.ndarray:
    """True where a surface point sees `eye` (a point) or along `direction` unobstructed; only the
    pixels `idx` are tested, the rest of the hit pixels count as unobstructed."""
    out = hit.copy()
    idx = idx[hit.reshape(-1)[idx]]
    if idx.size == 0:
        return out
    p = points.reshape(-1, 3)[idx] + normals.reshape(-1, 3)[idx] * np.float32(0.05)
    if eye is not None:
        rays = np.concatenate([p, eye.astype(np.float32) - p], axis=1)
        occ = world.occluded(rays, tfar=0.999)
    else:
        rays = np.concatenate([p, np.broadcast_to(direction.astype(np.float32), p.shape)], axis=1)
        occ = world.occluded(rays)
    out.reshape(-1)[idx[occ]] = False
    return out


# --------------------------------------------------------------------------- depth


def _blob_field(rng: np.random.Generator, shape, cell_px: float) -> np.ndarray:
    """Smooth unit-variance noise with features about `cell_px` across."""
    h, w = shape
    gh, gw = max(2, int(h / cell_px) + 2), max(2, int(w / cell_px) + 2)
    g = rng.standard_normal((gh, gw)).astype(np.float32)
    f = cv2.resize(g, (w, h), interpolation=cv2.INTER_CUBIC)
    return f / max(float(f.std()), 1e-6)


def depth_rms_mm(z_mm, depth_fx: float, subpixel: float = 0.08) -> np.ndarray:
    """RealSense stereo RMS error: z^2 * subpixel / (f * baseline)."""
    z = np.asarray(z_mm, dtype=np.float32)
    return z * z * np.float32(subpixel / (depth_fx * BASELINE_MM))


def _sensor_depth(
    rng, t, hit, inst, normals, d, seen_by_left, seen_by_right, colors_of_instance, app: Appearance, depth_fx: float
) -> np.ndarray:
    """Ideal z -> what the D435 reports (float mm, 0 = hole)."""
    shape = t.shape
    z = t.copy()
    valid = hit & seen_by_left & seen_by_right & (z > MIN_RANGE_MM)
    # holes and bias on light, clear and glossy pieces
    drop_p = np.zeros(shape, np.float32)
    bias = np.zeros(shape, np.float32)
    obj = inst > 0
    if obj.any():
        n_inst = len(colors_of_instance) + 1
        p_lut = np.zeros(n_inst, np.float32)
        b_lut = np.zeros(n_inst, np.float32)
        for k, c in enumerate(colors_of_instance, start=1):
            p_lut[k] = MATERIAL_DROPOUT.get(c, DEFAULT_DROPOUT)
            b_lut[k] = MATERIAL_BIAS_MM.get(c, 0.0)
        drop_p[obj] = p_lut[inst[obj]]
        bias[obj] = b_lut[inst[obj]]
        # mirror-like reflection of the projector pattern where the face looks straight at the camera
        oi = np.flatnonzero(obj)
        dn = d.reshape(-1, 3)[oi]
        facing = -np.einsum("ij,ij->i", normals.reshape(-1, 3)[oi], dn) / np.linalg.norm(dn, axis=1)
        flat_p = drop_p.reshape(-1)
        flat_p[oi] = np.where(facing > 0.97, np.maximum(flat_p[oi], 0.6), flat_p[oi])
    # a pixel drops when a smooth field falls under the quantile that matches its probability,
    # so holes come as blobs, as they do on a real camera
    from scipy.special import ndtri

    blobs = _blob_field(rng, shape, 6.0)
    oi = np.flatnonzero(obj)
    thresh = ndtri(np.clip(drop_p.reshape(-1)[oi], 1e-6, 1 - 1e-6))
    valid.reshape(-1)[oi[blobs.reshape(-1)[oi] < thresh]] = False
    # stereo noise: RMS grows with z^2; partly smooth (matching window), partly per pixel
    sigma = depth_rms_mm(z, depth_fx, app.depth_subpixel)
    smooth = _blob_field(rng, shape, 4.0)
    white = rng.standard_normal(shape, dtype=np.float32)
    noisy = z + bias + sigma * (0.8 * smooth + 0.6 * white)
    # flying pixels: at depth edges the matcher returns values between the two surfaces
    zf = np.where(hit, z, 0.0).astype(np.float32)
    big = np.where(hit, z, 1e6).astype(np.float32)
    zmax = cv2.dilate(zf, np.ones((3, 3), np.uint8))
    zmin = cv2.erode(big, np.ones((3, 3), np.uint8))
    edge = hit & (zmax - zmin > EDGE_JUMP_MM) & (zmin < 1e5)
    fly = edge & (rng.random(shape, dtype=np.float32) < app.flying_pixels)
    mix = rng.random(shape, dtype=np.float32)
    noisy = np.where(fly, zmin + mix * (zmax - zmin), noisy)
    # some edge pixels fail to match at all; a sprinkle of random dropouts everywhere
    valid &= ~(edge & ~fly & (rng.random(shape, dtype=np.float32) < 0.3))
    valid &= rng.random(shape, dtype=np.float32) > 0.002
    return np.where(valid, noisy, 0.0).astype(np.float32)


def _to_uint16(z_mm: np.ndarray, scale_mm: float = 1.0) -> np.ndarray:
    return np.clip(np.round(z_mm / scale_mm), 0, 65535).astype(np.uint16)


# --------------------------------------------------------------------------- colour


def _instance_albedo(scene: Scene, rng, jitter: float, props: tuple[Prop, ...] = ()) -> np.ndarray:
    """(1 + pieces + stones + props, 3) linear albedo per mask value (row 0 unused)."""
    rows = [np.zeros(3, np.float32)]
    for p in scene.pieces:
        base = srgb_to_linear(COLOR_RGB.get(p.color, (128, 128, 128)))
        rows.append(np.clip(base * rng.uniform(1 - jitter, 1 + jitter, 3) * rng.uniform(1 - jitter, 1 + jitter), 0, 1))
    for s in scene.stones:
        base = srgb_to_linear(STONE_RGB.get(s.color, COLOR_RGB.get(s.color, (128, 128, 128))))
        rows.append(np.clip(base * rng.uniform(1 - jitter, 1 + jitter, 3), 0, 1))
    rows += [srgb_to_linear(pr.rgb) for pr in props]
    return np.array(rows, np.float32)


@lru_cache(maxsize=8)
def _vignette(intr: Intrinsics, strength: float) -> np.ndarray:
    yy, xx = np.ogrid[0:intr.height, 0:intr.width]
    rr = ((xx - intr.ppx) / intr.fx) ** 2 + ((yy - intr.ppy) / intr.fy) ** 2
    return (1.0 / (1.0 + strength * rr)).astype(np.float32)


@lru_cache(maxsize=4)
def _texture_cached(app: Appearance) -> np.ndarray:
    return table_texture(app)


def _shade(world, scene, rng, app: Appearance, intr, t, hit, inst, part, points, normals, d, lit) -> np.ndarray:
    shape = t.shape
    # albedo
    albedo = np.empty(shape + (3,), np.float32)
    albedo[:] = srgb_to_linear(app.background_rgb)
    table = inst == 0
    tex = _texture_cached(app)
    s = TEXTURE_PX / TEXTURE_MM
    ang, ox, oy = texture_turn(app)
    ca, sa = np.float32(np.cos(ang) * s), np.float32(np.sin(ang) * s)
    px, py = points[..., 0] + np.float32(ox), points[..., 1] + np.float32(oy)
    mx = ca * px - sa * py + np.float32(TEXTURE_PX / 2)
    my = sa * px + ca * py + np.float32(TEXTURE_PX / 2)
    sampled = cv2.remap(tex, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101)
    np.copyto(albedo, sampled, where=table[..., None])
    obj = inst > 0
    inst_albedo = _instance_albedo(scene, rng, app.tint_jitter, world.props)
    oi = np.flatnonzero(obj)
    albedo.reshape(-1, 3)[oi] = inst_albedo[inst.reshape(-1)[oi]]

    L = np.asarray(app.light_dir, np.float32)
    L /= np.linalg.norm(L)
    light = np.asarray(app.light_rgb, np.float32)
    ndl = np.clip(normals @ L, 0, None)
    shadow = lit.astype(np.float32)
    if app.shadow_softness_px > 0:
        shadow = cv2.GaussianBlur(shadow, (0, 0), app.shadow_softness_px)
    sky = 0.55 + 0.45 * normals[..., 2]
    occl = np.ones(shape, np.float32)
    occl[part == PART_INNER] = 0.35  # little light gets into a cavity
    occl[part == PART_RIM] = 0.6
    diffuse = (app.ambient * sky * occl + app.key * ndl * shadow)[..., None] * light
    color = albedo * diffuse
    # glossy plastic (pieces) and glass (stones): Blinn-Phong key highlight + broad overhead light
    gi = np.flatnonzero(obj & (part != PART_INNER) & (part != PART_PROP))  # glossy pixels: few, so work on them alone
    if gi.size:
        dflat = d.reshape(-1, 3)[gi]
        v = -dflat / np.linalg.norm(dflat, axis=1, keepdims=True)
        n = normals.reshape(-1, 3)[gi]
        h = L + v
        h /= np.linalg.norm(h, axis=1, keepdims=True)
        nh = np.clip(np.einsum("ij,ij->i", n, h), 0, 1)
        nv = np.clip(np.einsum("ij,ij->i", n, v), 0, 1)
        fres = 0.6 + 0.4 * (1 - nv) ** 5
        spec = app.specular * fres * nh ** app.shininess * shadow.reshape(-1)[gi]
        rz = 2 * nv * n[:, 2] - v[:, 2]  # height of the reflected view ray
        overhead = np.clip((rz - 0.75) / 0.2, 0, 1) ** 2  # a broad lamp/window straight above
        env = 0.06 * (0.4 + 0.6 * np.clip(rz, 0, 1))  # the room, dimly reflected
        spec = spec + (app.fill_specular * overhead + env) * fres
        spec = np.where(part.reshape(-1)[gi] == PART_STONE, spec * 1.3, spec)
        cflat = color.reshape(-1, 3)
        cflat[gi] += spec[:, None].astype(np.float32) * light
    # camera: exposure, white balance, vignetting, lens blur, noise, sRGB
    vig = _vignette(intr, app.vignette)
    # auto exposure: the camera scales the mean luminance towards a mid grey (within its gain range)
    lum = float(np.mean(color[::4, ::4] @ np.array([0.2126, 0.7152, 0.0722], np.float32)))
    gain = float(np.clip(0.18 / max(lum, 1e-4), 0.6, 3.0))
    color *= (app.exposure * gain * vig)[..., None] * np.asarray(app.white_balance, np.float32)
    srgb = linear_to_srgb_float(color)
    if app.blur_px > 0:
        srgb = cv2.GaussianBlur(srgb, (0, 0), app.blur_px)
    if app.noise > 0:
        noise = rng.standard_normal(srgb.shape, dtype=np.float32)
        srgb += noise * (np.float32(app.noise) + np.float32(0.12) * np.sqrt(srgb))
    return np.clip(srgb + 0.5, 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------- labels


def _labels(world: World, scene: Scene, pose: CameraPose, intr: Intrinsics, mask: np.ndarray) -> list[ObjectLabel]:
    n = len(world.instance_ids)
    counts = np.bincount(mask.ravel(), minlength=n + 1)
    slices = ndimage.find_objects(mask, max_label=n) if n else []
    # keypoints of all pieces in one raycast: visible when the first hit is the keypoint itself
    kp_table = np.array([np.vstack([p.tip[None, :], p.vertices[:4]]) for p in scene.pieces]).reshape(-1, 3)
    if len(kp_table):
        uv, z = pose.project(kp_table, intr)
        dvec = kp_table - pose.position
        res = world.cast(np.concatenate([np.broadcast_to(pose.position, dvec.shape), dvec], axis=1))
        t = res["t_hit"].numpy()
        tol = 1.0 / np.linalg.norm(dvec, axis=1)  # 1 mm
        seen = t >= 1.0 - tol
        inside = (z > 0) & (uv[:, 0] >= 0) & (uv[:, 0] < intr.width) & (uv[:, 1] >= 0) & (uv[:, 1] < intr.height)
        flags = np.where(inside, np.where(seen, 2, 1), 0)
    out = []
    for k, (oid, kind) in enumerate(zip(world.instance_ids, world.instance_kind), start=1):
        if kind == "prop":  # a hand is not something to find
            continue
        sl = slices[k - 1] if k - 1 < len(slices) else None
        box = None
        if sl is not None and counts[k] > 0:
            box = (float(sl[1].start), float(sl[0].start), float(sl[1].stop), float(sl[0].stop))
        if kind == "piece":
            p = scene.pieces[k - 1]
            j = (k - 1) * 5
            kps = np.column_stack([uv[j:j + 5], flags[j:j + 5]])
            # the pyramid is four-fold symmetric: order the corners clockwise in the image,
            # starting from the one nearest the top, so labels are consistent
            c = kps[1:5, :2] - kps[1:5, :2].mean(axis=0)
            ang = np.mod(np.degrees(np.arctan2(c[:, 0], -c[:, 1])), 360.0)
            kps = np.vstack([kps[:1], kps[1:5][np.argsort(ang, kind="stable")]])
            out.append(ObjectLabel(k, oid, kind, p.color, p.size, piece_class(p.color, p.size), int(counts[k]), box, kps))
        else:
            s = scene.stones[k - 1 - len(scene.pieces)]
            out.append(ObjectLabel(k, oid, kind, s.color, None, stone_class(s.color), int(counts[k]), box, None))
    return out


# --------------------------------------------------------------------------- entry point


def render(
    scene: Scene,
    camera: CameraPose,
    intrinsics: Intrinsics,
    seed=0,
    appearance: Appearance | None = None,
    *,
    noise: bool = True,
    raw_depth: bool = False,
    world: World | None = None,
    props: tuple[Prop, ...] = (),
) -> Render:
    """Render `scene` as the D435's colour camera at `camera` sees it.

    `seed` (an int or a sequence of ints) fixes every random draw; `appearance` fixes surfaces,
    light and exposure (drawn from the seed when None). `noise=False` gives ideal depth and a
    noise-free image. `raw_depth=True` also renders the depth camera's own view (left IR imager,
    its own intrinsics) for writing RealSense recordings. `props` (a hand reaching in:
    `vision.synth.hands`) are drawn, cast shadows and have depth, but get no label.
    """
    rng = np.random.default_rng(seed)
    app = appearance if appearance is not None else Appearance.sample(rng)
    if not noise:
        app = app.with_(noise=0.0, blur_px=0.0)
    world = world or build_world(scene, props)
    if len(world.instance_ids) > 255:
        raise ValueError(f"too many objects to label in an 8-bit mask ({len(world.instance_ids)})")
    intr = intrinsics
    t, hit, inst, part, points, normals, d = _cast(world, camera, intr)
    mask = np.where(inst > 0, inst, 0).astype(np.uint8)
    # cast shadows from the key light (directional)
    L = np.asarray(app.light_dir, np.float32)
    L /= np.linalg.norm(L)
    tallest = max([float(p.vertices[:, 2].max()) for p in scene.pieces] + [10.0]
                  + [min(float(pr.vertices[:, 2].max()), 250.0) for pr in world.props])
    horiz = float(np.hypot(L[0], L[1]) / max(L[2], 0.2))  # shadow length per mm of height
    lit = _unoccluded(world, points, normals, hit, _near_objects(inst, _reach_px(intr, t, hit, horiz * 600.0, tallest)),
                      direction=L)
    color = _shade(world, scene, rng, app, intr, t, hit, inst, part, points, normals, d, lit)
    depth_true = t.copy()
    colors = [p.color for p in scene.pieces] + [s.color for s in scene.stones] + ["skin"] * len(world.props)
    d_intr = depth_intrinsics(848, 480)
    if noise:
        near = _near_objects(inst, _reach_px(intr, t, hit, float(RIGHT_IMAGER_IN_COLOR[0]), tallest))
        left = _unoccluded(world, points, normals, hit, near, eye=camera.to_table(LEFT_IMAGER_IN_COLOR))
        right = _unoccluded(world, points, normals, hit, near, eye=camera.to_table(RIGHT_IMAGER_IN_COLOR))
        z = _sensor_depth(rng, t, hit, inst, normals, d, left, right, colors, app, d_intr.fx)
    else:
        z = np.where(hit, t, 0.0)
    depth = _to_uint16(z, intr.depth_scale_mm)
    raw = raw_intr = None
    if raw_depth:
        raw_intr = depth_intrinsics(intr.width, intr.height)
        pose_l = camera.offset(LEFT_IMAGER_IN_COLOR)
        tl, hl, il, _, pl, nl, dl = _cast(world, pose_l, raw_intr)
        if noise:
            near = _near_objects(il, _reach_px(raw_intr, tl, hl, BASELINE_MM, tallest))
            right = _unoccluded(world, pl, nl, hl, near, eye=camera.to_table(RIGHT_IMAGER_IN_COLOR))
            zl = _sensor_depth(rng, tl, hl, il, nl, dl, np.ones_like(hl), right, colors, app, raw_intr.fx)
        else:
            zl = np.where(hl, tl, 0.0)
        raw = _to_uint16(zl, raw_intr.depth_scale_mm)
    objects = _labels(world, scene, camera, intr, mask)
    return Render(color, depth, depth_true, mask, world.instance_ids, objects, camera.matrix, intr, app, raw, raw_intr)
