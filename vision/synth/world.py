"""The table as triangles for Open3D's raycaster: pieces (outer shell, cavity, base rim),
stones, and the table top, merged into one mesh with a per-triangle instance id.

Instance 0 is the table; instances 1..N are the scene's pieces in order, then its stones, then
any props (a player's hand and sleeve reaching over the table: `vision.synth.hands`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import open3d as o3d

from zendo.pieces import inner_vertices, outer_vertices
from zendo.scene import Scene

#: Marking stones: glass beads about 15 mm across and 6 mm tall (a squashed dome).
STONE_DIAMETER_MM = 15.0
STONE_HEIGHT_MM = 6.0
TABLE_HALF_MM = 3000.0

PART_TABLE, PART_OUTER, PART_INNER, PART_RIM, PART_STONE, PART_PROP = 0, 1, 2, 3, 4, 5


@cache
def piece_mesh(size: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertices (10, 3), triangles (16, 3) and part per triangle of a hollow pyramid in its frame.

    Outer faces wind outwards; the cavity's faces wind into the cavity (outwards from the plastic);
    the base rim is the ring between the outer and inner base squares, facing down.
    """
    o, i = outer_vertices(size), inner_vertices(size)
    verts = np.vstack([o, i])  # 0-3 outer corners, 4 tip, 5-8 inner corners, 9 inner tip
    tris, parts = [], []
    for k in range(4):
        a, b = k, (k + 1) % 4
        tris.append([a, b, 4]); parts.append(PART_OUTER)
        tris.append([5 + b, 5 + a, 9]); parts.append(PART_INNER)
        tris.append([a, 5 + a, 5 + b]); parts.append(PART_RIM)
        tris.append([a, 5 + b, b]); parts.append(PART_RIM)
    return verts, np.array(tris, dtype=np.int64), np.array(parts, dtype=np.int8)


@cache
def stone_mesh(segments: int = 20, rings: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """A flat-bottomed glass bead: a squashed dome on the table, centred on the origin."""
    r, h = STONE_DIAMETER_MM / 2, STONE_HEIGHT_MM
    verts = [[0.0, 0.0, h]]
    for j in range(1, rings + 1):
        phi = (np.pi / 2) * j / rings
        for s in range(segments):
            th = 2 * np.pi * s / segments
            verts.append([r * np.sin(phi) * np.cos(th), r * np.sin(phi) * np.sin(th), h * np.cos(phi)])
    verts.append([0.0, 0.0, 0.0])
    verts = np.array(verts)
    tris = []
    for s in range(segments):
        tris.append([0, 1 + s, 1 + (s + 1) % segments])
    for j in range(rings - 1):
        a0, b0 = 1 + j * segments, 1 + (j + 1) * segments
        for s in range(segments):
            s1 = (s + 1) % segments
            tris.append([a0 + s, b0 + s, b0 + s1])
            tris.append([a0 + s, b0 + s1, a0 + s1])
    bottom = len(verts) - 1
    last = 1 + (rings - 1) * segments
    for s in range(segments):
        tris.append([bottom, last + (s + 1) % segments, last + s])
    return verts, np.array(tris, dtype=np.int64)


@dataclass(frozen=True)
class Prop:
    """Something in view that is not a piece or stone: matte, one colour, never labelled."""

    id: str
    vertices: np.ndarray  # (V, 3) table frame, mm
    triangles: np.ndarray  # (T, 3), wound outwards
    rgb: tuple[float, float, float]  # sRGB albedo


@dataclass
class World:
    scene: Scene
    raycaster: o3d.t.geometry.RaycastingScene
    tri_instance: np.ndarray  # (T,) int32: 0 table, 1.. objects
    tri_part: np.ndarray  # (T,) int8
    instance_ids: tuple[str, ...]  # mask value k -> instance_ids[k - 1]
    instance_kind: tuple[str, ...]  # "piece", "stone" or "prop"
    props: tuple[Prop, ...] = ()

    def cast(self, rays: np.ndarray) -> dict:
        return self.raycaster.cast_rays(o3d.core.Tensor(np.ascontiguousarray(rays, dtype=np.float32)))

    def occluded(self, rays: np.ndarray, tfar: float = np.inf) -> np.ndarray:
        t = o3d.core.Tensor(np.ascontiguousarray(rays, dtype=np.float32))
        return self.raycaster.test_occlusions(t, tnear=0.0, tfar=float(tfar)).numpy()


def build_world(scene: Scene, props: tuple[Prop, ...] = ()) -> World:
    h = TABLE_HALF_MM
    verts = [np.array([[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]], float)]
    tris = [np.array([[0, 1, 2], [0, 2, 3]], np.int64)]
    inst = [np.zeros(2, np.int32)]
    parts = [np.zeros(2, np.int8)]
    n = 4
    ids, kinds = [], []
    for k, p in enumerate(scene.pieces, start=1):
        v, t, pt = piece_mesh(p.size)
        verts.append(p.to_table(v)); tris.append(t + n); n += len(v)
        inst.append(np.full(len(t), k, np.int32)); parts.append(pt)
        ids.append(p.id); kinds.append("piece")
    sv, st = stone_mesh()
    for k, s in enumerate(scene.stones, start=len(scene.pieces) + 1):
        pos = np.array(s.position, float)
        pos[2] = max(pos[2], 0.0)
        verts.append(sv + pos); tris.append(st + n); n += len(sv)
        inst.append(np.full(len(st), k, np.int32)); parts.append(np.full(len(st), PART_STONE, np.int8))
        ids.append(s.id); kinds.append("stone")
    for k, pr in enumerate(props, start=len(scene.pieces) + len(scene.stones) + 1):
        verts.append(np.asarray(pr.vertices, float)); tris.append(np.asarray(pr.triangles, np.int64) + n)
        n += len(pr.vertices)
        inst.append(np.full(len(pr.triangles), k, np.int32)); parts.append(np.full(len(pr.triangles), PART_PROP, np.int8))
        ids.append(pr.id); kinds.append("prop")
    rc = o3d.t.geometry.RaycastingScene()
    rc.add_triangles(o3d.core.Tensor(np.vstack(verts).astype(np.float32)),
                     o3d.core.Tensor(np.vstack(tris).astype(np.uint32)))
    return World(scene, rc, np.concatenate(inst), np.concatenate(parts), tuple(ids), tuple(kinds), tuple(props))
