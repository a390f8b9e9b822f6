"""The console's shadow panel in chromium (Playwright) at 1400 and 900 px,
on a real server where two queues compete for four nodes and the test sends
the heartbeats: a candidate that weighs root.a 4 pasted and started from the
panel diverges from the live policy; the panel shows the counts, the diff's
changed weight line, divergence over time (uPlot), per queue both sides, the
diverging decisions naming root.a's app; it stops, and says so; a bad
candidate is the API's one line naming its line; promote asks first; and
without the admin login the panel is read-only."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import httpx
import pytest

from slotwise.admin import AdminToken, SchedulerService
from slotwise.clock import ManualClock
from slotwise.config.watcher import ConfigWatcher, load_with_status
from slotwise.core import PolicyCore
from slotwise.forecaster import Forecaster
from slotwise.serve import start_http
from slotwise.settings import EngineSettings
from slotwise.shadow_service import ShadowService
from slotwise.web.app import create_app
from test_web_console_ui import OVERFLOW, SHOTS
from test_web_ui import browser  # noqa: F401  (the chromium fixture)
from webtools import TOKEN, FakeRM, free_port
from wiretools import app, node, payload, req

LIVE = """<?xml version="1.0"?>
<allocations>
  <queue name="a"><weight>1</weight></queue>
  <queue name="b"><weight>1</weight></queue>
</allocations>
"""
CANDIDATE = LIVE.replace('<queue name="a"><weight>1</weight>', '<queue name="a"><weight>4</weight>')
BAD = LIVE.replace('<queue name="a"><weight>1</weight>', '<queue name="a"><weight>heavy</weight>')
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Compete:
    url: str
    path: str
    core: PolicyCore
    clock: ManualClock
    shadow: ShadowService
    server: object
    watcher: ConfigWatcher
    running: dict = field(default_factory=dict)  # node -> its containers, oldest first

    def heartbeats(self, n: int) -> None:
        """``n`` heartbeats a second apart, the nodes in turn: two of the
        node's oldest containers end on each, so there is room to give and
        the two queues compete for it (root.a's x, root.b's y); an update
        pass after each, as the shim sends them."""
        for i in range(n):
            self.clock.advance(1.0)
            name = f"n{i % 4}"
            mine = self.running.setdefault(name, [])
            finished, mine[:] = mine[:2], mine[2:]
            for a in self.core.handle_heartbeat(payload(node=name, finished=finished)):
                self.running.setdefault(a.node_id, []).append(a.container_id)
            self.core.handle_update(payload())  # the shim's update pass: fair shares, preemption

    def drained(self, compared: int, timeout: float = 60.0) -> dict:
        """The shadow's status once it has compared ``compared`` heartbeats
        (it decides in its own process)."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.shadow.status()
            if st["compared"] >= compared or st["state"] != "running" or time.monotonic() > deadline:
                return st
            time.sleep(0.05)


@pytest.fixture
def compete(tmp_path):
    """Four 4-container nodes, full; root.a's x and root.b's y ask for far
    more. Equal weights live: a heartbeat's room goes to whichever queue is
    under its half; under the candidate (a weighs 4) mostly to x."""
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(LIVE)
    config, status = load_with_status(str(path))
    clock = ManualClock(1764234000.0)  # a wall time: the chart's axis reads as times of day
    core = PolicyCore(config, EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0), clock)
    watcher = ConfigWatcher(str(path), lambda cfg, text: core.set_config(cfg, text), status,
                            on_error=core.config_failed)
    watcher.start()
    core.handle_heartbeat(payload(nodes=[node(f"n{i}", f"h{i}", "/r1", 4096, 4) for i in range(4)],
                                  apps=[app("x", "root.a", [req(1, 1024, 1, 500)], unmanaged=True),
                                        app("y", "root.b", [req(1, 1024, 1, 500)], unmanaged=True)]))
    rm = FakeRM()
    rm.was_seen = True
    rm.state.update(connected=True, registered=True)
    service = SchedulerService(core, status, rm)
    shadow = ShadowService(core, str(path))
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN), refresh_seconds=0.5, shadow=shadow,
                                   forecaster=Forecaster(service, thread=False)), "127.0.0.1", port)
    scene = Compete(f"http://127.0.0.1:{port}", str(path), core, clock, shadow, server, watcher)
    scene.heartbeats(8)  # every node full before any shadow starts
    yield scene
    shadow.close()
    server.should_exit = True
    watcher.stop()


def console(browser, url: str, width: int, admin: bool = True):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(60000)  # patient on a loaded 2-core machine, as webtools.HTTP_TIMEOUT is
    page.goto(url)
    if admin:
        page.fill("#login input[name=admin_token]", TOKEN)
        page.click("#login button")
        page.locator("#logout").wait_for()
    page.wait_for_load_state("load")  # the panel's script has run: its controls answer
    return page


def paste(page, text: str, name: str = "cand.xml") -> None:
    """The candidate pasted into the panel's form and started."""
    if not page.locator("#shadow-start").evaluate("(d) => d.open"):
        page.locator("#shadow-start > summary").click()
    page.fill("#shadow-name", name)
    page.fill("#shadow-text", text)
    page.click("#shadow-run")


def figure(page, ident: str) -> int:
    return int(page.locator(f"#{ident}").inner_text())


@pytest.mark.parametrize("width", [1400, 900])
def test_a_candidate_started_from_the_panel_diverges_shows_why_and_stops(browser, compete, width):  # noqa: F811
    page = console(browser, compete.url, width)
    assert page.locator("#shadow-none").inner_text() == "No shadow policy runs."
    assert page.locator("#shadow-stop").is_hidden() and page.locator("#shadow-promote").is_hidden()
    assert page.locator("#shadow-timeline").is_hidden()
    # Opened, the form starts from the live file, to change.
    page.locator("#shadow-start > summary").click()
    page.wait_for_function("() => document.querySelector('#shadow-text').value.includes('<allocations>')")
    # A bad candidate: the API's refusal, one line naming the line; nothing started.
    paste(page, BAD)
    error = page.locator("#shadow-error")
    error.wait_for()
    assert error.inner_text() == ('Shadow refused: cand.xml:3: weight in queue root.a must be a number, '
                                  'got "heavy"'), error.inner_text()
    assert compete.core.shadow is None and page.locator("#shadow-none").is_visible()
    # The candidate that weighs root.a 4.
    paste(page, CANDIDATE)
    page.locator("#shadow-state").wait_for()
    assert page.locator("#shadow-state").inner_text().lower() == "running"
    assert error.is_hidden()
    assert page.locator("#shadow-file").inner_text() == "cand.xml"
    assert int(page.locator("#shadow-pid").inner_text()) == compete.shadow.shadow.proc.pid  # its own process
    compete.heartbeats(40)
    st = compete.drained(40)
    assert st["state"] == "running" and st["compared"] == 40 and st["diverged"] > 0, st
    page.wait_for_function("() => +document.querySelector('#shadow-compared')?.textContent === 40")
    assert figure(page, "shadow-compared") == 40 and figure(page, "shadow-diverged") == st["diverged"] > 0
    # The diff: the changed weight line, both sides, escaped as text.
    assert page.locator("#shadow-diff .del").all_inner_texts() == ['-  <queue name="a"><weight>1</weight></queue>']
    assert page.locator("#shadow-diff .add").all_inner_texts() == ['+  <queue name="a"><weight>4</weight></queue>']
    assert "1 line added, 1 removed" in page.locator("#shadow-diff-box > summary").inner_text()
    # Divergence over time: a chart with a size, fed by the timeline (a sample every 5 s).
    canvas = page.locator("#shadow-chart .uplot canvas")
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box["width"] > 150 and box["height"] > 100, box
    assert len(st["timeline"]) >= 8 and st["timeline"][-1][1:] == [40, st["diverged"]], st["timeline"]
    # Per queue, both sides; the diverging decisions name root.a's app.
    queues = page.locator("#shadow-queues tbody tr")
    assert {(r.get_attribute("data-queue"), r.get_attribute("data-side")) for r in queues.all()} == {
        ("root.a", "live"), ("root.a", "shadow"), ("root.b", "live"), ("root.b", "shadow")}
    shadow_a = int(page.locator("#shadow-queues tr[data-queue='root.a'][data-side='shadow'] .containers").inner_text())
    live_a = int(page.locator("#shadow-queues tr[data-queue='root.a'][data-side='live'] .containers").inner_text())
    assert shadow_a > live_a  # the candidate gives root.a more
    first = page.locator("#shadow-diverging tbody tr").first
    assert first.locator(".shadow .decision[data-app='x']").count() > 0
    assert "x (root.a) on n" in first.locator(".shadow").inner_text()
    assert "under the candidate" in first.locator(".shadow .why").first.inner_text()
    if first.locator(".live .decision").count():  # the live side's reason beside it
        assert "under the live file" in first.locator(".live .why").first.inner_text()
    # The layout, the form open too, fits the window.
    page.locator("#shadow-start > summary").click()
    out = page.evaluate(OVERFLOW)
    assert out["scroll"] <= out["width"] == width, out
    assert out["past"] == [], out
    os.makedirs(SHOTS, exist_ok=True)
    page.locator("#shadow").screenshot(path=os.path.join(SHOTS, f"shadow-{width}.png"))
    # Stopped: one line says so, and the controls that need a shadow go.
    page.click("#shadow-stop")
    page.locator("#shadow-none").wait_for()
    said = page.locator("#shadow-none").inner_text()
    assert said.startswith("No shadow policy runs (the last candidate, cand.xml, was stopped by the operator "
                           "after 40 heartbeats compared"), said
    # The DELETE's answer says so (a refresh may show the stopped panel before that answer is read).
    page.wait_for_function("() => document.querySelector('#shadow-said').textContent === 'Stopped the shadow.'")
    assert page.locator("#shadow-stop").is_hidden() and page.locator("#shadow-timeline").is_hidden()
    assert compete.core.shadow is None
    page.close()


def test_the_form_opened_before_its_script_ran_still_starts_from_the_live_file(browser, compete):  # noqa: F811
    """A quick operator opens the form while the page still loads: once the panel's script
    runs, the form holds the live file all the same. The script is held back here until the
    form has been opened, so the order is certain, not a matter of timing."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60000)
    held, hold = [], []

    def late(route):
        if hold:
            held.append(route)  # answered below, after the click
        else:
            route.continue_()
    page.route("**/static/shadow.js", late)
    page.goto(compete.url)
    page.fill("#login input[name=admin_token]", TOKEN)
    hold.append(True)  # the admin page's shadow.js waits
    page.click("#login button", no_wait_after=True)
    deadline = time.monotonic() + 60
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # lets Playwright hand the request to the handler
    assert held, "the admin page never asked for shadow.js"
    page.locator("#shadow-start > summary").click()
    assert page.locator("#shadow-text").input_value() == ""  # opened before shadow.js ran
    held[0].continue_()
    page.wait_for_function("() => document.querySelector('#shadow-text').value.includes('<allocations>')")
    assert page.locator("#shadow-text").input_value() == LIVE
    page.close()


def test_promote_asks_first_then_writes_the_candidate_as_the_live_file(browser, compete):  # noqa: F811
    page = console(browser, compete.url, 1400)
    paste(page, CANDIDATE)
    page.locator("#shadow-state").wait_for()
    page.click("#shadow-promote")
    confirm = page.locator("#shadow-confirm")
    assert confirm.is_visible() and "over the live allocation file" in confirm.inner_text()
    page.click("#shadow-promote-no")  # cancelled: nothing written
    assert confirm.is_hidden() and open(compete.path).read() == LIVE
    page.click("#shadow-promote")
    page.click("#shadow-promote-yes")
    said = page.locator("#shadow-said")
    page.wait_for_function("() => document.querySelector('#shadow-said').textContent.startsWith('Promoted')")
    assert said.inner_text().startswith(f"Promoted: wrote cand.xml as {compete.path} (the old one kept as ")
    assert open(compete.path).read() == CANDIDATE
    deadline = time.monotonic() + 10
    while compete.core._engine.queues["root.a"].weight != 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert compete.core._engine.queues["root.a"].weight == 4  # the live file's watcher applied it
    page.close()


@pytest.mark.parametrize("width", [1400, 900])
def test_without_the_admin_login_the_panel_is_read_only(browser, compete, width):  # noqa: F811
    started = httpx.post(f"{compete.url}/api/v1/shadow", json={"allocations": CANDIDATE},
                         headers={**AUTH, "X-Slotwise-File-Name": "cand.xml"}, timeout=60)
    assert started.status_code == 200, started.text
    compete.heartbeats(20)
    st = compete.drained(20)
    assert st["diverged"] > 0, st
    page = console(browser, compete.url, width, admin=False)
    assert page.locator("#shadow-state").inner_text().lower() == "running"
    assert figure(page, "shadow-compared") == 20 and figure(page, "shadow-diverged") == st["diverged"]
    assert page.locator("#shadow-diff .add").count() == 1
    assert page.locator("#shadow-queues tr[data-queue='root.b']").count() == 2
    page.locator("#shadow-chart .uplot canvas").wait_for()  # uPlot fetched for the chart alone
    for control in ("#shadow-stop", "#shadow-promote", "#shadow-confirm", "#shadow-start", "#shadow-form",
                    "#whatif"):
        assert page.locator(control).count() == 0, control
    out = page.evaluate(OVERFLOW)
    assert out["scroll"] <= out["width"] == width, out
    assert out["past"] == [], out
    # The API refuses a change without the token, whatever the page offers.
    assert httpx.delete(f"{compete.url}/api/v1/shadow", timeout=60).status_code == 401
    page.close()


def test_a_shadow_stopped_by_an_error_keeps_its_figures_and_the_page_escapes_the_candidate(compete):
    """No browser: the panel's HTML as /ui/shadow serves it."""
    hostile = CANDIDATE.replace("<allocations>", "<allocations>\n  <!-- </pre><script>alert(1)</script> -->")
    started = httpx.post(f"{compete.url}/api/v1/shadow", json={"allocations": hostile},
                         headers={**AUTH, "X-Slotwise-File-Name": "cand.xml"}, timeout=60)
    assert started.status_code == 200, started.text
    compete.heartbeats(4)
    compete.drained(4)
    compete.shadow.shadow._end("RuntimeError: the candidate's policy is broken")
    html = httpx.get(f"{compete.url}/ui/shadow", timeout=60).text
    assert 'data-state="stopped"' in html and 'data-shown="yes"' in html
    assert "Stopped: RuntimeError: the candidate&#39;s policy is broken" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'id="shadow-compared">4<' in html
    page = httpx.get(compete.url, timeout=60).text  # the page itself: read-only, the same figures
    assert 'id="shadow-stop-error"' in page and 'id="shadow-form"' not in page
