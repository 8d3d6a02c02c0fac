"""End to end in headless Chromium: a short game on the demo table, Master and a student.

Screenshots go to $ZENDO_E2E_SHOTS when set (else the test's temporary folder).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
RULE = "a koan has the buddha nature if it contains a red piece"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM} (apt install chromium)")


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
    from werkzeug.serving import make_server

    from server.app import create_app

    app = create_app({"MASTER_TOKEN": "e2e-token", "SOURCE": "demo", "VIEW": "camera"})
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}", app
    srv.shutdown()


def tap_piece(page, piece_id: str) -> None:
    """Tap a piece where the overlay says it is on screen."""
    box = page.evaluate("""async (pid) => {
        const ov = await (await fetch('/api/overlay')).json();
        const p = ov.pieces.find((q) => q.id === pid);
        const r = document.getElementById('overlay').getBoundingClientRect();
        return {x: r.left + p.center[0] * r.width / ov.size[0], y: r.top + p.center[1] * r.height / ov.size[1]};
    }""", piece_id)
    page.mouse.click(box["x"], box["y"])


def overlapping_labels(page) -> tuple[int, list]:
    """How many labels the table's overlay shows, and the pairs of them that cover one another
    (as laid out on this screen)."""
    return page.evaluate("""() => {
        const r = [...document.querySelectorAll('#overlay text')].map((t) => [t.textContent, t.getBoundingClientRect()]);
        const bad = [];
        for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++) {
            const a = r[i][1], b = r[j][1];
            if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) bad.push([r[i][0], r[j][0]]);
        }
        return [r.length, bad];
    }""")


def test_a_short_game_from_start_to_a_won_guess(server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)  # 5 s by default: a 2-core machine busy with other work took longer once
    base, app = server
    shots = Path(os.environ.get("ZENDO_E2E_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            master = browser.new_page(viewport={"width": 1400, "height": 1000})
            master.on("dialog", lambda d: d.accept())
            master.goto(f"{base}/master?token=e2e-token")
            expect(master.locator("#status")).to_contain_text("Setting up")
            master.fill("#rule-text", RULE)
            master.click("#rule-form button")
            expect(master.locator("#rule-canonical")).to_contain_text("at least one red piece")
            master.click("#mark-all-btn")
            expect(master.locator("#audit tbody tr").first).to_contain_text("white")
            expect(master.locator("#mark-all-btn")).to_be_hidden()
            n, bad = overlapping_labels(master)
            assert n >= 17 and bad == []  # 12 pieces, 5 koans, the marks: no label on another

            phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                     is_mobile=True, has_touch=True)
            phone.goto(base + "/")
            phone.fill("#join-name", "Ann")
            phone.click("#join-form button")
            expect(phone.locator("#me-name")).to_have_text("Ann")
            master.click("#start-btn")
            expect(phone.locator("#turn-card")).to_be_visible()
            master.screenshot(path=str(shots / "1-master-setup.png"), full_page=True)

            # build a koan on the demo table and call a Mondo on it
            phone.select_option("#build-choice", "lone-red")
            phone.click("#build-btn")
            expect(phone.locator("#answer")).to_contain_text("You built koan")
            n, bad = overlapping_labels(phone)
            assert n >= 17 and bad == []  # on a phone's narrow picture too
            phone.get_by_role("button", name="Mondo!").click()
            expect(phone.locator("#mondo-card")).to_be_visible()
            phone.click("#vote-box button[data-vote=white]")
            expect(phone.locator("#mondo-text")).to_contain_text("You voted white")
            expect(master.locator("#mondo-card")).to_be_visible()
            expect(master.locator("#mondo-text")).to_contain_text("Everyone has voted")
            master.click("#reveal-btn")
            expect(phone.locator("#mondo-text")).to_contain_text("Guessing stone to: Ann")
            expect(phone.locator("#me-stones")).to_have_text("1")

            # ask about two pieces by tapping them
            phone.click("#clear-sel")
            tap_piece(phone, "d")
            tap_piece(phone, "e")
            expect(phone.locator("#sel")).to_have_text("d and e")
            phone.get_by_role("button", name="Touching?").click()
            expect(phone.locator("#answer")).to_contain_text("touching")
            phone.screenshot(path=str(shots / "2-student-asked.png"), full_page=True)
            phone.fill("#question", "is the large red piece touching the table")
            phone.click("#ask-text button[type=submit]")
            expect(phone.locator("#answer")).to_contain_text("large red pieces")  # two of them: which one?

            # guess, make it official; the Master finds no counterexample and declares the win
            phone.fill("#guess-text", "A koan has the Buddha-nature if it contains a red piece")
            phone.click("#guess-form button")
            expect(phone.locator("#guess-result")).to_contain_text("No koan on the table contradicts it")
            phone.get_by_role("button", name="Make it official (spend a stone)").click()
            expect(phone.locator("#guess-result")).to_contain_text("official")
            master.get_by_role("button", name="Find a counterexample").click()
            # an equivalent guess: finding none means searching every koan up to the size limit
            # (7 s on a slow 2-core machine), and the button says so meanwhile
            expect(master.locator("#guesses")).to_contain_text("No counterexample found", timeout=60_000)
            master.screenshot(path=str(shots / "3-master-guess.png"), full_page=True)
            master.get_by_role("button", name="Cannot disprove: they win").click()
            expect(phone.locator("#banner")).to_contain_text("Ann has achieved enlightenment")
            expect(phone.locator("#banner")).to_contain_text(RULE)
            phone.screenshot(path=str(shots / "4-student-won.png"), full_page=True)

            # the finished game's replay
            gid = app.extensions["zendo"].game_id
            phone.goto(f"{base}/replay/{gid}")
            expect(phone.locator("#step-text")).to_contain_text("Ann wins")
            phone.screenshot(path=str(shots / "5-replay.png"), full_page=True)
        finally:
            browser.close()
    assert (shots / "4-student-won.png").stat().st_size > 10_000
