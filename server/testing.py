"""Helpers for testing the dashboard (like flask.testing): a small known table and an app on it."""
from __future__ import annotations

import re

from zendo.build import Spec, beside, pointing_at, upright
from zendo.scene import Scene, Stone

from .feed import SceneFeed


def small_table() -> Scene:
    """Two initial koans: k1 = a large red with a small yellow pointing at it (white under 'contains
    a red piece'), k2 = a medium blue and a small green 0.3 mm apart (touching is a judgment call)."""
    red = upright(Spec("r1", "red", "large"), (-60.0, 0.0))
    y = pointing_at(red, Spec("y1", "yellow", "small"), distance=30, from_heading=200)
    blue = upright(Spec("b1", "blue", "medium"), (60.0, 0.0))
    green = beside(blue, Spec("g1", "green", "small"), gap=0.3)
    return Scene((red, y, blue, green), (Stone("s1", "white", (-60.0, -40.0, 0.0)),))


def make_app(rule: str | None = None, scene: Scene | None = None, **config):
    from .app import create_app

    cfg = {"TESTING": True, "MASTER_TOKEN": "master-token-for-tests", "VIEW": "topdown",
           "FEED": SceneFeed(scene or small_table(), view="topdown"), "RULE": rule}
    cfg.update(config)
    return create_app(cfg)


def csrf_token(client) -> str:
    html = client.get("/").get_data(as_text=True)
    m = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert m, "no CSRF token on the page"
    return m.group(1)


class JsonClient:
    """A test client that sends JSON with the page's CSRF token, as the dashboard's scripts do."""

    def __init__(self, app):
        self.client = app.test_client()
        self.token = csrf_token(self.client)

    def get(self, url, **kw):
        return self.client.get(url, **kw)

    def post(self, url, payload=None, **kw):
        return self.client.post(url, json=payload or {}, headers={"X-CSRFToken": self.token}, **kw)

    def master(self, token: str = "master-token-for-tests"):
        r = self.client.get(f"/master?token={token}")
        assert r.status_code in (200, 302), r.status_code
        return self
