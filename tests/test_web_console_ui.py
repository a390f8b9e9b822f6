"""The operator's console in chromium (Playwright) at 1400 and 900 px: no
sideways overflow, queue names whole, every chart with axes and units, the
starved queue highlighted, an app's why one click away, preemptions by
round; and /docs and /redoc with no network beyond this server."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

import httpx
import pytest

from test_web_ui import browser  # noqa: F401  (the chromium fixture)
from webtools import TOKEN, app, payload, req, scene  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
#: Screenshots land here (the repository's run/, ignored by git).
SHOTS = os.path.join(os.path.dirname(HERE), "run", "screenshots")

# Whatever sticks out past the window's right edge (zero-size boxes: closed
# details, the closed dialog, are not drawn).
OVERFLOW = """() => {
  const w = window.innerWidth, out = [];
  for (const e of document.querySelectorAll("body *")) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > w + 0.5) out.push([e.tagName, e.id || String(e.className.baseVal ?? e.className), Math.round(r.right)]);
  }
  return {scroll: document.scrollingElement.scrollWidth, width: w, past: out.slice(0, 10)};
}"""

# How many lines each queue name takes, in the queue tree and the apps table.
NAME_LINES = """() => [...document.querySelectorAll("#queues td.queue .leaf, #apps td.app-queue")].map((e) => {
  const range = document.createRange();
  range.selectNodeContents(e);
  return [e.textContent.trim(), new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size];
})"""

# Each chart's axes: tick labels and titles, as drawn.
AXES = """() => [...document.querySelectorAll("svg.chart")].map((svg) => ({
  id: svg.id,
  x: [...svg.querySelectorAll(".x-axis .tick")].map((t) => t.textContent),
  y: [...svg.querySelectorAll(".y-axis .tick")].map((t) => t.textContent),
  xTitle: svg.querySelector(".x-axis .axis-title")?.textContent,
  yTitle: svg.querySelector(".y-axis .axis-title")?.textContent,
  lines: svg.querySelectorAll("polyline.series").length,
  drawn: svg.getBoundingClientRect().width,
}))"""


def look(page, width: int, name: str) -> None:
    """The page at ``width`` fits, every preemption round and the nodes
    open: a screenshot kept, nothing past the right edge, queue names on
    at most two lines."""
    os.makedirs(SHOTS, exist_ok=True)
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    page.screenshot(path=os.path.join(SHOTS, f"{name}-{width}.png"), full_page=True)
    out = page.evaluate(OVERFLOW)
    assert out["scroll"] <= out["width"] == width, out
    assert out["past"] == [], out
    lines = page.evaluate(NAME_LINES)
    assert lines and all(n <= 2 for _, n in lines), lines


@pytest.mark.parametrize("width", [1400, 900])
def test_the_console_fits_and_every_chart_has_axes_and_units(browser, scene, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(scene.url)
    page.locator("svg.chart").first.wait_for(timeout=30000)
    look(page, width, "console")
    charts = page.evaluate(AXES)
    assert {c["id"] for c in charts} >= {"history-root.prod", "history-root.adhoc", "history-root.research.ml"}
    for c in charts:
        assert len(c["x"]) >= 2 and len(c["y"]) >= 2 and c["lines"] >= 1 and c["drawn"] > 100, c
        assert c["yTitle"] in ("MB", "GB") and c["xTitle"].startswith(("seconds before", "minutes before")), c
    # Logged in, with the admin controls in the apps table: it still fits.
    page.fill("#login input[name=admin_token]", TOKEN)
    page.click("#login button")
    page.locator("button.move").first.wait_for(timeout=30000)
    look(page, width, "console-admin")
    page.close()


def test_the_starved_queue_is_highlighted_with_its_timer(browser, scene):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(scene.url)
    starved = page.locator("#queues tr[data-queue='root.adhoc']")
    assert "starved" in starved.get_attribute("class").split()
    colour = "(s) => getComputedStyle(document.querySelector(s)).backgroundColor"
    assert page.evaluate(colour, "#queues tr[data-queue='root.adhoc'] td") != \
        page.evaluate(colour, "#queues tr[data-queue='root.prod'] td")
    assert "preemption in 70.0 s" in " ".join(starved.locator("td.starvation").inner_text().split())
    assert "root.adhoc" in page.locator("#starved-summary").inner_text()
    # Its bar: usage 0, a min share mark at 4096 of the cluster's 32768 MB (12.5%).
    left = page.evaluate("() => document.querySelector(\"#queues tr[data-queue='root.adhoc'] .mark.min\").style.left")
    assert left == "12.5%"
    page.close()


def test_an_apps_why_is_one_click_away(browser, scene):  # noqa: F811
    app_id = "application_1700000000000_0004"
    answer = httpx.get(f"{scene.url}/api/v1/apps/{app_id}/explain").json()
    assert answer["holds"], answer
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(scene.url)
    page.locator(f"#apps tr[data-app='{app_id}'] button.why").click()
    dialog = page.locator("#explain")
    dialog.locator("li").first.wait_for(timeout=30000)
    text = " ".join(dialog.inner_text().split())
    for hold in answer["holds"]:
        assert " ".join(hold["message"].split()) in text
    assert f"{answer['state']};" in text
    # Its queue is starved: the dialog says so in the service's own words, not as JSON.
    assert answer["queue_starvation"]["message"]
    assert " ".join(answer["queue_starvation"]["message"].split()) in text
    assert '"message"' not in text
    page.locator("#explain-close").click()
    dialog.wait_for(state="hidden", timeout=30000)
    page.close()


def test_preemptions_are_one_row_per_round_and_stay_open_across_redraws(browser, scene):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(scene.url)
    rounds = page.locator("#preemptions details.round")
    assert rounds.count() == 1
    assert "8 containers" in rounds.first.locator("summary").inner_text()
    assert not rounds.first.locator("table").is_visible()
    rounds.first.locator("summary").click()
    assert rounds.first.locator(".round-rows tbody tr").count() == 8
    assert rounds.first.locator("table").is_visible()
    # A change redraws the page: the round the operator opened stays open.
    scene.core.handle_heartbeat(payload(apps=[app("application_1700000000000_0009", "root.users.erin",
                                                  [req(0, 1024, 1, 1)], user="erin", submit_ms=9)]))
    page.locator("#apps tr[data-app='application_1700000000000_0009']").wait_for(timeout=30000)
    assert page.locator("#preemptions details.round").first.locator("table").is_visible()
    page.close()


@pytest.mark.parametrize("path, shown", [("/docs", ".opblock"), ("/redoc", "[data-section-id*='operation/']")])
def test_the_api_docs_work_with_no_network_beyond_this_server(browser, scene, path, shown):  # noqa: F811
    context = browser.new_context()
    elsewhere = []

    def only_this_server(route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            return route.continue_()
        elsewhere.append((route.request.resource_type, route.request.url))
        return route.abort()

    context.route("**/*", only_this_server)
    page = context.new_page()
    page.goto(scene.url + path)
    page.locator(shown).first.wait_for(timeout=60000)
    assert page.locator(shown).count() >= 8  # the API's operations, listed
    assert "/api/v1/queues" in page.locator("body").inner_text()
    # Scripts, styles and the API description all came from this server;
    # Redoc's only wish beyond it is its maker's logo (an image), left out.
    assert [r for r in elsewhere if r[0] != "image"] == [], elsewhere
    context.close()


# Each app id's pieces between <wbr>s: the lines each one takes (1: whole).
ID_PIECES = """() => [...document.querySelectorAll("#apps .app-id, #apps .ident, #preemptions .ident")].flatMap((e) =>
  [...e.childNodes].filter((n) => n.nodeType === 3 && n.textContent).map((n) => {
    const range = document.createRange();
    range.selectNodeContents(n);
    return [n.textContent, new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size];
  }))"""


@pytest.mark.parametrize("width", [1400, 900])
def test_with_the_master_gone_nothing_is_shown_as_due(browser, scene, width):  # noqa: F811
    """`cluster down`: the starved queue is greyed, says nothing is preempted
    while the master is gone, and no note is red; the nodes are unknown."""
    import time

    scene.clock.advance(71)  # past adhoc's timeout: due while the master was there
    scene.rm.state.update(connected=False, registered=False, lost_at=time.time() - 30)
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(scene.url)
    page.locator("#away-banner").wait_for(timeout=30000)
    look(page, width, "console-gone")
    row = page.locator("#queues tr[data-queue='root.adhoc']")
    # Starved 121 s by the scene's clock, 30 of them (and the moments since, by
    # the wall's) with the master gone: the clock stands at 91 s or a little less.
    said = re.match(r"Below its min share for (\d+\.\d) s when the ResourceManager was lost",
                    " ".join(row.locator("td.starvation").inner_text().split()))
    assert said and 0 < float(said.group(1)) <= 91.0
    assert "nothing is preempted while it is gone" in row.inner_text()
    assert page.locator("#queues .due, #starved-summary .due").count() == 0
    colour = "(s) => getComputedStyle(document.querySelector(s)).backgroundColor"
    assert page.evaluate(colour, "#queues tr[data-queue='root.adhoc'] td") == "rgb(243, 243, 243)"
    page.close()


def test_a_due_row_colours_only_its_due_note(browser, scene):  # noqa: F811
    scene.clock.advance(71)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(scene.url)
    colour = "(s) => getComputedStyle(document.querySelector(s)).color"
    cell = "#queues tr[data-queue='root.adhoc'] td.starvation"
    assert page.locator(f"{cell} .due").count() == 1
    due = page.evaluate(colour, f"{cell} .due .then")
    assert due == "rgb(170, 17, 17)"
    others = page.evaluate(f"() => [...document.querySelectorAll(\"{cell} div:not(.due) .then\")]"
                           ".map((e) => getComputedStyle(e).color)")
    assert others and due not in others
    page.close()


def test_a_min_share_mark_at_the_fair_share_stays_visible(browser, scene):  # noqa: F811
    """Where the min share equals the fair share, both marks show: the
    fair share's line and the min share's triangle under the bar."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(scene.url)
    bar = "#queues tr[data-queue='root.adhoc'] .bar"
    page.evaluate(f"() => {{ const b = document.querySelector(\"{bar}\"); "
                  "b.querySelector('.mark.fair').style.left = b.querySelector('.mark.min').style.left; }")
    hits = page.evaluate(f"""() => ["min", "fair"].map((k) => {{
      const r = document.querySelector("{bar} .mark." + k).getBoundingClientRect();
      const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height * (k === "min" ? 0.8 : 0.3));
      return e && e.classList.contains(k);
    }})""")
    assert hits == [True, True]
    page.close()


@pytest.mark.parametrize("width", [1400, 900])
def test_app_ids_break_only_after_underscores_and_why_says_memory_only(browser, scene, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(scene.url)
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    pieces = page.evaluate(ID_PIECES)
    assert len(pieces) >= 3 * 4 + 8 * 3 * 2, pieces  # the apps' ids and the round's containers and apps
    assert pieces and all(n == 1 for _, n in pieces), pieces
    app_id = "application_1700000000000_0004"
    page.locator(f"#apps tr[data-app='{app_id}'] button.why").click()
    head = page.locator("#explain .explain-state")
    head.wait_for(timeout=30000)
    text = " ".join(head.inner_text().split())
    assert "fair share" in text and "MB (memory only" in text and "0 vcores." not in text, text
    page.close()


@pytest.mark.parametrize("width", [1400, 900])
def test_the_allocation_files_warnings_show_in_amber_and_fit(browser, scene, width):  # noqa: F811
    from slotwise.config import parse_allocations

    with open(scene.status.path) as f:
        text = f.read().replace("<weight>2</weight>", "<weight>2</weight><maxRunningApp>3</maxRunningApp>")
    scene.status.warnings = [str(w) for w in parse_allocations(text, scene.status.path).warnings]
    assert len(scene.status.warnings) == 1
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(scene.url)
    box = page.locator("#config-warnings")
    box.wait_for(timeout=30000)
    assert f"{scene.status.path}:4: warning: unknown element <maxRunningApp>" in " ".join(box.inner_text().split())
    assert page.evaluate("() => getComputedStyle(document.querySelector('#config-warnings')).backgroundColor") \
        == "rgb(255, 244, 229)"
    assert page.locator("#config-ok").count() == 0
    look(page, width, "console-warnings")
    page.close()
