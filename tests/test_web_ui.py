"""The web UI in a real browser: Debian's chromium, headless, driven by
Playwright (no browser download; `make test` installs the package)."""

from __future__ import annotations

import os
import shutil

import pytest

from support import skip_unless_required
from webtools import TOKEN, start

CHROMIUM = os.environ.get("SLOTWISE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def playwright_or_skip(what: str = "the UI tests"):
    """Playwright's sync API, with chromium there to drive; without either
    the test skips, saying why, or fails under SLOTWISE_REQUIRE_BROWSER=1
    (set by .ci/run), so the UI tests never pass by not running in CI."""
    if not os.path.exists(CHROMIUM):
        skip_unless_required(what, f"no chromium at {CHROMIUM} (Debian: apt-get install chromium; "
                             "`make browser` does it as root)", "SLOTWISE_REQUIRE_BROWSER")
    try:
        from playwright import sync_api
    except ImportError as e:
        skip_unless_required(what, f"Playwright does not import ({e}; `make setup` installs it)",
                             "SLOTWISE_REQUIRE_BROWSER")
    return sync_api


@pytest.fixture(scope="module")
def browser():
    """Chromium under Playwright (``playwright_or_skip``)."""
    sync_api = playwright_or_skip()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                               "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def web(tmp_path):
    running = start(tmp_path, watch=True)
    yield running
    running.stop()


def test_queues_and_jobs_are_shown_and_refresh_themselves(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    # The queue tree: each row its own name, the whole path in its title.
    cell = page.locator("#queues tr[data-queue='root.prod'] td.queue")
    assert cell.inner_text() == "prod" and cell.get_attribute("title") == "root.prod"
    assert page.locator("#apps tr[data-app]").count() == 3
    assert page.locator("#apps tr[data-app='app_1'] .app-queue").inner_text() == "root.research"
    assert page.locator("#config-ok").is_visible()
    # No admin controls before logging in.
    assert page.locator("button.move").count() == 0
    # A new job reaches the page without a reload (the page polls).
    from webtools import app_entry
    from wiretools import payload
    web.core.handle_heartbeat(payload(apps=[app_entry("app_4", "dave", "root.other", 1)]))
    page.locator("#apps tr[data-app='app_4']").wait_for(timeout=30000)
    page.close()


def test_move_job_click_moves_it_and_the_next_decision_follows(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    page.fill("#login input[name=admin_token]", "not-the-token-at-all")
    page.click("#login button")
    assert "wrong admin token" in page.locator("#login-error").inner_text()
    page.fill("#login input[name=admin_token]", TOKEN)
    page.click("#login button")
    row = page.locator("#apps tr[data-app='app_1']")
    row.locator("select.move-target").select_option("root.other")
    # The page redraws its rows when the state changes; a redraw between the
    # choice and the click keeps the choice (it once put the old queue back).
    page.evaluate("document.activeElement && document.activeElement.blur()")
    from webtools import app_entry
    from wiretools import payload
    web.core.handle_heartbeat(payload(apps=[app_entry("app_5", "erin", "root.other", 0)]))  # asks for nothing
    page.locator("#apps tr[data-app='app_5']").wait_for(timeout=30000)
    row.locator("button.move").click()
    page.locator("#action-status", has_text="Moved app_1 to root.other").wait_for(timeout=30000)
    page.locator("#apps tr[data-app='app_1'] .app-queue", has_text="root.other").wait_for(timeout=30000)
    assert web.core.views.app_queue("app_1") == "root.other"
    assigned = web.heartbeat("n2")
    assert {a.queue for a in assigned if a.app_id == "app_1"} == {"root.other"}
    # Priority, the other admin action.
    row = page.locator("#apps tr[data-app='app_3']")
    row.locator("input.priority-value").fill("3")
    row.locator("button.set-priority").click()
    page.locator("#apps tr[data-app='app_3'] .app-priority", has_text="3").wait_for(timeout=30000)
    assert job(web.core, "app_3")["priority"] == 3
    page.close()


def test_a_broken_file_shows_its_error_then_clears(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    text = open(web.path).read()
    with open(web.path, "w") as f:
        f.write(text.replace("<queue name=\"other\"/>", "<queue name=\"other\"><weight>heavy</weight></queue>"))
    err = page.locator("#config-errors")
    err.wait_for(timeout=30000)
    assert f"{web.path}:5:" in err.inner_text()
    with open(web.path, "w") as f:
        f.write(text)
    page.locator("#config-ok").wait_for(timeout=30000)
    page.close()


def job(core, app_id: str) -> dict:
    return next(j for j in core.views.apps() if j["id"] == app_id)


def test_a_banner_shows_while_the_resourcemanager_schedules_without_python(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    assert page.locator("#fallback-banner").count() == 0 and page.locator("#away-banner").count() == 0
    web.rm.was_seen = True
    web.rm.state.update(connected=True, registered=True, in_fallback=True, since=1700000000.0,
                        reason="heartbeat: no answer within 100 ms", episode_heartbeats=7, heartbeats=90,
                        fallback_heartbeats=7)
    banner = page.locator("#fallback-banner")
    banner.wait_for(timeout=30000)  # the page refreshes itself
    text = banner.inner_text()
    assert "scheduling without Python" in text and "no answer within 100 ms" in text and "7 heartbeat" in text
    web.rm.state.update(in_fallback=False)
    banner.wait_for(state="detached", timeout=30000)
    web.rm.state.update(registered=False, connected=False)  # the RM let this server go
    page.locator("#away-banner").wait_for(timeout=30000)
    page.close()


def test_a_banner_says_when_the_resourcemanager_is_the_standby(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    assert page.locator("#standby-banner").count() == 0
    web.rm.state.update(connected=False, registered=False, ha_state="standby")
    banner = page.locator("#standby-banner")
    banner.wait_for(timeout=30000)  # the page refreshes itself
    assert "standby" in banner.inner_text() and "active ResourceManager's policy server decides" in banner.inner_text()
    web.rm.state.update(ha_state=None, connected=True, registered=True)
    banner.wait_for(state="detached", timeout=30000)
    page.close()


def test_the_cluster_and_the_jobs_names_are_shown(browser, web):
    web.core._engine.apps["app_1"].app_name = "word count"  # what the shim's name field sets
    page = browser.new_page()
    page.goto(web.url)
    assert page.locator("#cluster-nodes").inner_text() == "2 nodes"
    assert text(page, "#cluster-capacity") == "8192 MB, 8 vcores"
    assert text(page, "#cluster-usage") == "4096 MB, 4 vcores"
    assert "(50% of the memory)" in text(page, "#cluster")
    # Above the queues and the allocation file.
    # Read in one script: the page refreshes itself, and between two
    # separate reads one element may be mid-swap (no box at all).
    assert page.wait_for_function("""() => {
        const a = document.querySelector('#cluster'), b = document.querySelector('#config');
        return a && b ? [a.getBoundingClientRect().top < b.getBoundingClientRect().top] : null;
    }""", timeout=30000).json_value() == [True]
    named = page.locator("#apps tr[data-app='app_1']")
    assert named.locator(".app-name").inner_text() == "word count"
    assert named.locator(".app-id").inner_text() == "app_1"
    plain = page.locator("#apps tr[data-app='app_2']")
    assert plain.locator(".app-name").inner_text() == "app_2" and plain.locator(".app-id").count() == 0
    web.heartbeat("n2")  # the usage follows without a reload
    page.locator("#cluster-usage", has_text="8192").wait_for(timeout=30000)
    page.close()


def text(page, selector: str) -> str:
    return " ".join(page.locator(selector).inner_text().split())  # NBSPs and line breaks as spaces


WIDE = """<?xml version="1.0"?>
<allocations>
  <queue name="production">
    <weight>3.5</weight><minResources>262144 mb, 256 vcores</minResources>
    <queue name="etl-nightly"><weight>2</weight><minResources>131072 mb, 128 vcores</minResources></queue>
    <queue name="dashboards-realtime"><schedulingPolicy>fifo</schedulingPolicy></queue>
  </queue>
  <queue name="research"><queue name="machine-learning"><queue name="feature-engineering"/></queue></queue>
  <queue name="adhoc"><maxResources>50%</maxResources></queue>
  <queue name="users" type="parent"/>
  <queuePlacementPolicy><rule name="specified" create="true"/><rule name="user"/></queuePlacementPolicy>
</allocations>
"""

# Every table cell's content inside its box, and the table inside the window.
MEASURE = """(selector) => {
  const t = document.querySelector(selector);
  const out = {right: t.getBoundingClientRect().right, window: window.innerWidth,
               page: document.documentElement.scrollWidth, columns: t.querySelectorAll("thead th").length,
               cells: 0, overflowing: []};
  for (const c of t.querySelectorAll("th, td")) {
    out.cells++;
    const box = c.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(c);
    const content = range.getBoundingClientRect();
    if (c.scrollWidth > c.clientWidth || content.right > box.right + 0.5 || content.left < box.left - 0.5
        || box.right > window.innerWidth)
      out.overflowing.push([c.innerText.slice(0, 60), c.scrollWidth, c.clientWidth]);
  }
  return out;
}"""


@pytest.fixture
def wide(tmp_path):
    """A 64-node cluster (128 GB each), nested queues with long names, jobs in each."""
    from slotwise.admin import AdminToken, SchedulerService
    from slotwise.serve import start_http
    from slotwise.clock import ManualClock
    from slotwise.config.watcher import load_with_status
    from slotwise.core import PolicyCore
    from slotwise.settings import EngineSettings
    from slotwise.web.app import create_app
    from webtools import FakeRM, free_port
    from wiretools import app, node, payload, req

    path = tmp_path / "allocations.xml"
    path.write_text(WIDE)
    config, status = load_with_status(str(path))
    clock = ManualClock(100.0)
    core = PolicyCore(config, EngineSettings(node_locality_delay=0, rack_locality_delay=0), clock)
    nodes = [node(f"n{i:03d}", f"worker-{i:03d}.example.com", f"/rack{i // 16}", 131072, 32) for i in range(64)]
    queues = [("root.production.etl-nightly", "etl"), ("root.production.dashboards-realtime", "dash"),
              ("root.research.machine-learning.feature-engineering", "alice"), ("root.adhoc", "bob"),
              ("root.users.christopher-longname", "christopher-longname")]
    core.handle_heartbeat(payload(nodes=nodes, node="n000", apps=[
        app(f"application_1700000000000_{i:04d}", q, [req(0, 4096, 1, 900)], user=u, submit_ms=i)
        for i, (q, u) in enumerate(queues)]))
    for i in range(1, 40):
        core.handle_heartbeat(payload(node=f"n{i:03d}"))
    core.handle_update(payload())
    clock.advance(1234.5)  # long waits: wide "Below" cells where a queue is below
    core.handle_update(payload())
    port = free_port()
    server = start_http(create_app(SchedulerService(core, status, FakeRM()), AdminToken(TOKEN), None,
                                   refresh_seconds=60), "127.0.0.1", port)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True


def test_the_queues_table_fits_a_1400px_window_with_nothing_cut_off(browser, wide):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(wide)
    queues = page.evaluate(MEASURE, "#queues")
    assert queues["columns"] == 11 and queues["cells"] == 10 * 11  # the header and nine queues
    assert queues["right"] <= queues["window"], queues
    assert queues["page"] <= queues["window"], "the page scrolls sideways"
    assert queues["overflowing"] == []
    # Every name whole on one line (a tree: the path is its parents' rows), every column's figures there.
    row = page.locator("#queues tr[data-queue='root.research.machine-learning.feature-engineering']")
    assert row.locator("td.queue").inner_text() == "feature-engineering"
    assert row.locator("td.queue").get_attribute("title") == "root.research.machine-learning.feature-engineering"
    assert " ".join(row.locator("td").nth(7).inner_text().split()) == "3686400 MB, 900 vcores"  # demand
    # Its locality: no target, nothing launched with places yet, the server's fixed waits.
    assert " ".join(row.locator("td.locality").inner_text().split()) == "-, -, 0.0 s + 0.0 s"
    # The jobs table too, also with the admin controls.
    assert page.evaluate(MEASURE, "#apps")["overflowing"] == []
    page.fill("#login input[name=admin_token]", TOKEN)
    page.click("#login button")
    page.locator("button.move").first.wait_for(timeout=30000)
    for table in ("#queues", "#apps"):
        m = page.evaluate(MEASURE, table)
        assert m["right"] <= m["window"] and m["page"] <= m["window"] and m["overflowing"] == [], (table, m)
    page.close()
