"""The console's what-if panel in chromium (Playwright) at 1400 and 900 px,
on a real server where two queues compete for one node: a weight set and
played forward draws each queue's share without and with it (uPlot, whose
legend follows the pointer), lists the app whose finish moves, says a bad
value in one line, changes nothing live, and fits the window; and the apps
table's Forecast column (under the delay cell at 900 px)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import httpx
import pytest

from slotwise.admin import AdminToken, SchedulerService
from slotwise.clock import ManualClock
from slotwise.config.watcher import load_with_status
from slotwise.core import PolicyCore
from slotwise.forecaster import Forecaster
from slotwise.serve import start_http
from slotwise.settings import EngineSettings
from slotwise.web.app import create_app
from test_web_console_ui import OVERFLOW, SHOTS
from test_web_ui import browser  # noqa: F401  (the chromium fixture)
from webtools import TOKEN, FakeRM, free_port
from wiretools import app, node, payload, req

FILE = """<?xml version="1.0"?>
<allocations>
  <queue name="a"/>
  <queue name="b"/>
</allocations>
"""


@dataclass
class Compete:
    url: str
    core: PolicyCore
    server: object
    forecaster: Forecaster


@pytest.fixture
def compete(tmp_path):
    """One 4-container node shared by root.a (x asks for 12) and root.b (y
    for 6), each holding two; run times learned from a first pair (10 s).
    With root.a's weight 3, b keeps one container and y ends ~50 s from
    now instead of ~30 s."""
    path = tmp_path / "alloc.xml"
    path.write_text(FILE)
    config, status = load_with_status(str(path))
    clock = ManualClock(1000.0)
    core = PolicyCore(config, EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0), clock)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)],
                                  apps=[app("first", "root.a", [req(1, 1024, 1, 1)], unmanaged=True),
                                        app("firstb", "root.b", [req(1, 1024, 1, 1)], unmanaged=True)], node="n1"))
    placed = list(core._engine.containers)
    clock.advance(10)
    core.handle_heartbeat(payload(finished=placed, apps_removed=["first", "firstb"], node="n1"))
    core.handle_heartbeat(payload(apps=[app("x", "root.a", [req(1, 1024, 1, 12)], unmanaged=True),
                                        app("y", "root.b", [req(1, 1024, 1, 6)], unmanaged=True)], node="n1"))
    core.handle_update(payload())
    rm = FakeRM()
    rm.was_seen = True
    rm.state.update(connected=True, registered=True)
    service = SchedulerService(core, status, rm)
    port = free_port()
    forecaster = Forecaster(service, thread=False)
    server = start_http(create_app(service, AdminToken(TOKEN), forecaster=forecaster), "127.0.0.1", port)
    yield Compete(f"http://127.0.0.1:{port}", core, server, forecaster)
    server.should_exit = True


def open_panel(browser, url: str, width: int):  # noqa: F811
    """The console at ``width``, logged in, the what-if panel open and its
    choices loaded."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(60000)  # patient on a loaded 2-core machine, as webtools.HTTP_TIMEOUT is
    page.goto(url)
    page.fill("#login input[name=admin_token]", TOKEN)
    page.click("#login button")
    page.locator("#logout").wait_for()
    page.wait_for_load_state("load")  # the panel's script has run: its controls answer
    page.locator("#whatif > summary").click()
    page.locator("#whatif-queue option[value='root.a']").wait_for(state="attached", timeout=30000)
    return page


def play(page, queue: str, weight: str, horizon: str = "120") -> None:
    page.select_option("#whatif-kind", "weight")
    page.select_option("#whatif-queue", queue)
    page.fill("#whatif-weight", weight)
    page.select_option("#whatif-horizon", horizon)
    page.click("#whatif-run")


# Each legend entry: [its label, its value where the pointer is ("-" off the chart)].
LEGEND = """() => [...document.querySelectorAll('#whatif-chart .u-legend .u-series')].map((s) =>
  [s.querySelector('.u-label').textContent, s.querySelector('.u-value').textContent])"""


@pytest.mark.parametrize("width", [1400, 900])
def test_a_weight_played_forward_draws_both_timelines_and_moves_the_app(browser, compete, width):  # noqa: F811
    page = open_panel(browser, compete.url, width)
    # The uPlot script is loaded with the panel (logged in) only.
    assert page.evaluate("() => typeof uPlot") == "function"
    play(page, "root.a", "3")
    canvas = page.locator("#whatif-chart .uplot canvas")
    canvas.wait_for(timeout=60000)
    box = canvas.bounding_box()
    assert box["width"] > 150 and box["height"] > 100, box
    assert page.locator("#whatif-error").is_hidden()
    # Two series per queue that uses anything, each named for its side.
    legend = page.evaluate(LEGEND)
    assert [label for label, _ in legend] == ["time ahead", "root.a without", "root.a with", "root.b without",
                                              "root.b with"], legend
    assert {value for _, value in legend} == {"-"}, legend
    # Pointing at the chart: the legend gives that point's time and values.
    over = page.locator("#whatif-chart .u-over").bounding_box()
    page.mouse.move(over["x"] + over["width"] * 0.1, over["y"] + over["height"] / 2)
    page.wait_for_function(f"(old) => JSON.stringify(({LEGEND})()) !== old",
                           arg=json.dumps(legend, ensure_ascii=False, separators=(",", ":")), timeout=30000)
    hovered = page.evaluate(LEGEND)
    assert hovered[0][1].endswith(" s") and all(v.endswith("%") for _, v in hovered[1:]), hovered
    # The app whose finish moves: y, ~30 s -> ~50 s (b keeps one container of four instead of two).
    row = page.locator("#whatif-apps tr[data-app='y']")
    assert row.locator("td.finish").inner_text() == "~30 s → ~50 s"
    assert row.locator("td.queue").inner_text() == "root.b"
    assert page.locator("#whatif-apps tr[data-app='x']").count() == 0  # x ends at ~50 s either way
    summary = page.locator("#whatif-summary").inner_text()
    assert summary.startswith("--set root.a.weight=3, played 2 min ahead: 1 app starts or finishes") and "ms of CPU" in summary
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, f"whatif-{width}.png"), full_page=True)
    # A bad value: one line from the API, in the panel.
    play(page, "root.a", "heavy")
    error = page.locator("#whatif-error")
    error.wait_for(timeout=60000)
    said = error.inner_text()
    assert said == "What-if refused: --set root.a.weight=heavy: weight 'heavy': must be a number", said
    # Nothing live changed: the queue's weight, the containers.
    queues = {q["queue"]: q for q in httpx.get(f"{compete.url}/api/v1/queues", timeout=60).json()}
    assert queues["root.a"]["weight"] == 1.0
    assert compete.core._engine.queues["root.a"].weight == 1.0
    assert len(compete.core._engine.containers) == 4
    # A good one again clears the error line.
    play(page, "root.b", "2")
    error.wait_for(state="hidden", timeout=60000)
    page.close()


def test_the_panel_fits_at_900_px_and_its_chart_follows_the_window(browser, compete):  # noqa: F811
    page = open_panel(browser, compete.url, 1400)
    play(page, "root.a", "3", horizon="600")
    canvas = page.locator("#whatif-chart .uplot canvas")
    canvas.wait_for(timeout=60000)
    wide = canvas.bounding_box()["width"]
    page.set_viewport_size({"width": 900, "height": 1000})
    page.wait_for_function("(w) => document.querySelector('#whatif-chart .uplot canvas')"
                           ".getBoundingClientRect().width < w", arg=wide - 100)
    out = page.evaluate(OVERFLOW)
    assert out["scroll"] <= out["width"] == 900, out
    assert out["past"] == [], out
    assert page.locator("#whatif").evaluate("(d) => d.open")
    page.screenshot(path=os.path.join(SHOTS, "whatif-resized-900.png"), full_page=True)
    # An app moved, the other kind of change: its controls replace the queue's.
    page.select_option("#whatif-kind", "move")
    assert page.locator("#whatif-weight").is_hidden() and page.locator("#whatif-target").is_visible()
    page.select_option("#whatif-app", "x")
    page.select_option("#whatif-target", "root.b")
    page.click("#whatif-run")
    page.wait_for_function("() => document.querySelector('#whatif-summary').textContent.startsWith('--move x root.b')",
                           timeout=60000)
    assert page.locator("#whatif-chart .uplot").count() == 1  # the chart redrawn, not added to
    assert page.locator("#whatif-error").is_hidden()
    page.select_option("#whatif-kind", "priority")
    page.select_option("#whatif-app", "y")
    assert page.input_value("#whatif-priority") == "0"  # its priority now, as the apps table has it
    page.fill("#whatif-priority", "3")
    page.click("#whatif-run")
    page.wait_for_function("() => document.querySelector('#whatif-summary').textContent.startsWith('--priority y 3')",
                           timeout=60000)
    page.close()


def test_the_panel_and_its_library_are_only_for_an_admin(compete):
    page = httpx.get(compete.url, timeout=60).text
    assert 'id="whatif"' not in page and "uPlot" not in page
    css = httpx.get(f"{compete.url}/static/vendor/uplot/uPlot.min.css", timeout=60)
    js = httpx.get(f"{compete.url}/static/vendor/uplot/uPlot.iife.min.js", timeout=60)
    assert css.status_code == js.status_code == 200 and js.text.startswith("/*! https://github.com/leeoniya/uPlot")


@pytest.mark.parametrize("width", [1400, 900])
def test_the_apps_table_gives_each_apps_forecast_in_its_column_or_under_its_delay(browser, compete, width):  # noqa: F811
    from slotwise.forecaster import as_text

    compete.forecaster.refresh()
    said = {a: as_text(compete.forecaster.of(a)) for a in ("x", "y")}
    assert said["y"].startswith("ends in ~30 s") and said["x"].startswith("ends in ~50 s"), said
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(60000)
    page.goto(compete.url)
    for app_id, text in said.items():
        row = page.locator(f"#apps tr[data-app='{app_id}']")
        column, under = row.locator("td.forecast"), row.locator("td.delay .forecast-under")
        if width > 1000:  # its own column
            assert column.is_visible() and column.inner_text() == text and under.is_hidden()
        else:  # under the delay-scheduling cell, the column gone
            assert column.is_hidden() and under.is_visible() and under.inner_text() == text
    header = page.locator("#apps th.forecast-col")
    assert header.is_visible() == (width > 1000)
    out = page.evaluate(OVERFLOW)
    assert out["scroll"] <= out["width"] == width, out
    page.close()
