"""The web UI in a real browser: Debian's chromium, headless, driven by
Playwright (no browser download; `make test` installs the package)."""

from __future__ import annotations

import os
import shutil

import pytest

from webtools import TOKEN, start

CHROMIUM = os.environ.get("SLOTWISE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM} (Debian: apt-get install chromium; `make test` does it as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
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


def test_pools_and_jobs_are_shown_and_refresh_themselves(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    assert page.locator("#pools tr[data-pool='root.prod'] td.pool").inner_text() == "root.prod"
    assert page.locator("#jobs tr[data-job]").count() == 3
    assert page.locator("#jobs tr[data-job='app_1'] .job-pool").inner_text() == "root.research"
    assert page.locator("#config-ok").is_visible()
    # No admin controls before logging in.
    assert page.locator("button.move").count() == 0
    # A new job reaches the page without a reload (the page polls).
    from webtools import app_entry
    from wiretools import payload
    web.core.handle_heartbeat(payload(apps=[app_entry("app_4", "dave", "root.other", 1)]))
    page.locator("#jobs tr[data-job='app_4']").wait_for(timeout=5000)
    page.close()


def test_move_job_click_moves_it_and_the_next_decision_follows(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    page.fill("#login input[name=admin_token]", "not-the-token-at-all")
    page.click("#login button")
    assert "wrong admin token" in page.locator("#login-error").inner_text()
    page.fill("#login input[name=admin_token]", TOKEN)
    page.click("#login button")
    row = page.locator("#jobs tr[data-job='app_1']")
    row.locator("select.move-target").select_option("root.other")
    row.locator("button.move").click()
    page.locator("#action-status", has_text="Moved app_1 to root.other").wait_for(timeout=5000)
    page.locator("#jobs tr[data-job='app_1'] .job-pool", has_text="root.other").wait_for(timeout=5000)
    assert web.core.job_pool("app_1") == "root.other"
    assigned = web.heartbeat("n2")
    assert {a.pool for a in assigned if a.app_id == "app_1"} == {"root.other"}
    # Priority, the other admin action.
    row = page.locator("#jobs tr[data-job='app_3']")
    row.locator("input.priority-value").fill("3")
    row.locator("button.set-priority").click()
    page.locator("#jobs tr[data-job='app_3'] .job-priority", has_text="3").wait_for(timeout=5000)
    assert job(web.core, "app_3")["priority"] == 3
    page.close()


def test_a_broken_file_shows_its_error_then_clears(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    text = open(web.path).read()
    with open(web.path, "w") as f:
        f.write(text.replace("<queue name=\"other\"/>", "<queue name=\"other\"><weight>heavy</weight></queue>"))
    err = page.locator("#config-errors")
    err.wait_for(timeout=5000)
    assert f"{web.path}:5:" in err.inner_text()
    with open(web.path, "w") as f:
        f.write(text)
    page.locator("#config-ok").wait_for(timeout=5000)
    page.close()


def job(core, app_id: str) -> dict:
    return next(j for j in core.jobs() if j["id"] == app_id)


def test_a_banner_shows_while_the_resourcemanager_schedules_without_python(browser, web):
    page = browser.new_page()
    page.goto(web.url)
    assert page.locator("#fallback-banner").count() == 0 and page.locator("#away-banner").count() == 0
    web.rm.was_seen = True
    web.rm.state.update(connected=True, registered=True, in_fallback=True, since=1700000000.0,
                        reason="heartbeat: no answer within 100 ms", episode_heartbeats=7, heartbeats=90,
                        fallback_heartbeats=7)
    banner = page.locator("#fallback-banner")
    banner.wait_for(timeout=5000)  # the page refreshes itself
    text = banner.inner_text()
    assert "scheduling without Python" in text and "no answer within 100 ms" in text and "7 heartbeat" in text
    web.rm.state.update(in_fallback=False)
    banner.wait_for(state="detached", timeout=5000)
    web.rm.state.update(registered=False, connected=False)  # the RM let this server go
    page.locator("#away-banner").wait_for(timeout=5000)
    page.close()
