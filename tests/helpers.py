"""Small helpers shared by the foundation tests: build koans the way the rulebook describes them."""
from __future__ import annotations

from zendo.build import Spec
from zendo.relations import RelationsConfig, koan_facts
from zendo.scene import Scene, validate


def S(pid: str, color: str = "red", size: str = "large") -> Spec:
    return Spec(pid, color, size)


def facts_of(*pieces, cfg: RelationsConfig | None = None):
    """Facts of one koan made of these pieces, after checking the koan is physically valid."""
    flat = []
    for p in pieces:
        flat.extend(p if isinstance(p, (list, tuple)) else [p])
    validate(Scene(tuple(flat)))
    return koan_facts("k", flat, cfg)
