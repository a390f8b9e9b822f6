"""The console's pieces without a browser: starvation and what preemption
will do, preemption rounds, the history behind the charts, shares in the
dimensions they are shared in, nodes, and an honest banner when the master
is gone (tests/test_web_console_ui.py drives them in chromium)."""

from __future__ import annotations

import logging
import re
import time

import httpx

from slotwise.admin import SchedulerService
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.config.watcher import ConfigStatus
from slotwise.core import PolicyCore
from slotwise.web import views
from slotwise.web.line_charts import line_chart, nice_ticks
from slotwise.web.history import History
from webtools import FakeRM, payload, scene, web  # noqa: F401  (the fixtures)


def state(scene) -> str:  # noqa: F811
    return " ".join(httpx.get(f"{scene.url}/ui/state").text.replace("\u00a0", " ").split())


def test_a_starved_queue_says_for_how_long_and_when_preemption_acts(scene, caplog):  # noqa: F811
    caplog.set_level(logging.INFO, logger="slotwise.core")
    html = state(scene)
    row = re.search(r'<tr data-queue="root.adhoc" class="([^"]*)"', html)
    assert row and "starved" in row.group(1).split() and "due" not in row.group(1).split()
    assert re.search(r'<tr data-queue="root.prod" class=""', html), "prod got its min share back"
    # adhoc asked 50 s ago (its timeout: 120 s): the summary and its row say so.
    assert "<strong>root.adhoc</strong>: Below its min share for 50.0 s; preemption in 70.0 s (timeout 120 s)" in html
    # Past its timeout, the next update pass preempts for it: a second round.
    scene.clock.advance(71)
    preempted = scene.core.handle_update(payload()).preempt
    assert preempted and {p.queue for p in preempted} <= {"root.research.ml", "root.research.etl"}
    html = state(scene)
    assert html.count('<details class="round"') == 2
    # serve's log has the round in one line: for whom, how many of which apps, from where, why.
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("preemption: ")]
    apps = sorted({p.app_id for p in preempted})
    assert line.startswith(f"preemption: {len(preempted)} container(s) for root.adhoc (below its min share): ")
    assert all(a in line for a in apps) and "root.research." in line
    assert line.endswith(f"; {sum(p.kill for p in preempted)} killed, "
                         f"{sum(not p.kill for p in preempted)} asked back")


def test_the_timer_without_preemption_says_preemption_is_off(scene):  # noqa: F811
    scene.core.set_preemption(False)
    rows = {r["name"]: r for r in views.queue_rows(SchedulerService(scene.core, None).queues())}
    adhoc = rows["root.adhoc"]
    assert adhoc["starved"] and adhoc["starvation"][0]["text"] == "Below its min share"
    assert adhoc["starvation"][0]["then"].startswith("preemption is off")


def test_preemptions_are_grouped_by_round(scene):  # noqa: F811
    rounds = views.preemption_rounds(scene.core.views.recent_preemptions())
    assert len(rounds) == 1 and rounds[0]["count"] == len(scene.preempted) == 8
    assert rounds[0]["kills"] == 8 and {r["container"] for r in rounds[0]["rows"]} == {
        p.container_id for p in scene.preempted}
    html = state(scene)
    assert html.count('<details class="round"') == 1 and '<strong class="count">8 containers</strong>' in html
    assert html.count('<tr><td class="ident">') >= 8  # each container in the round's own table


def test_history_is_bounded_and_served(scene):  # noqa: F811
    h = httpx.get(f"{scene.url}/api/v1/history").json()
    assert len(h["t"]) == 13 and h["t"] == sorted(h["t"])  # the scene's samples, on its clock
    prod = h["queues"]["root.prod"]
    assert prod["usage"][0] == 0 and prod["usage"][-1] == 8192 and set(prod["min_share"]) == {8192}
    small = History(SchedulerService(scene.core, None, scene.rm), cap=3, clock=scene.clock.now)
    for _ in range(5):
        small.sample()
        scene.clock.advance(1)
    assert len(small.series()["t"]) == 3
    # Not while the master is away: its last state is not drawn as if it went on.
    scene.rm.state.update(connected=False, registered=False)
    small.sample()
    assert len(small.samples()) == 3 and small.samples()[-1][0] == scene.clock.now() - 1


def test_charts_have_axes_with_ticks_and_units(scene):  # noqa: F811
    html = httpx.get(f"{scene.url}/ui/state").text
    charts = re.findall(r'<svg class="chart".*?</svg>', html, re.S)
    assert len(charts) >= 4  # prod, research and its two leaves, adhoc
    for svg in charts:
        for axis in ("x-axis", "y-axis"):
            g = re.search(rf'<g class="axis {axis}">(.*?)</g>', svg, re.S).group(1)
            assert len(re.findall(r'class="tick"', g)) >= 2, axis
            title = re.search(r'class="axis-title"[^>]*>([^<]+)<', g).group(1)
            assert title in ("MB", "GB", "slots") if axis == "y-axis" else "before" in title
    assert nice_ticks(0, 8192) == [0, 2000, 4000, 6000, 8000, 10000]
    svg = line_chart([{"name": "x", "points": [(0, 1), (1, 1), (2, 1), (3, 5)]}], x_title="s", y_title="MB")
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert len(points) == 3  # the flat run from x=0 to 2 drawn by its two ends


def test_fair_shares_in_the_dimensions_their_parent_shares():
    fair = {"memory_mb": 16384.0, "vcores": 0.0}
    assert views.shared(fair, ["memory_mb"]) == ("16384\u00a0MB", True)
    assert views.shared({"memory_mb": 16384.0, "vcores": 16.0}, ["memory_mb", "vcores"])[0] == "16384\u00a0MB, 16\u00a0vcores"
    assert views.shared({"map_slots": 2, "reduce_slots": 1}, ["map_slots"])[1] is False


def test_queue_rows_say_the_fair_share_in_memory_only_with_a_note(scene):  # noqa: F811
    html = state(scene)
    assert 'id="memory-only-note"' in html
    row = re.search(r'<tr data-queue="root.prod".*?</tr>', html, re.S).group(0)
    assert "16384 MB" in row and not re.search(r"[^0-9]0 vcores", row)


def test_apps_say_the_delay_level_and_where_their_containers_were_placed(scene):  # noqa: F811
    rows = {r["id"]: r for r in views.app_rows(SchedulerService(scene.core, None).apps())}
    ml = rows["application_1700000000000_0001"]
    assert ml["placed"] == "12 off\u2011switch"  # no locality asked: placed wherever, at the widest level
    html = state(scene)
    level = ml["locality"]  # the delay-scheduling level allowed now, not where its containers run
    text = re.sub(r"<[^>]+>", "", re.search(r'<tr data-app="application_1700000000000_0001">.*?</tr>', html).group(0))
    assert f"level allowed: {level}" in text and f"waiting for locality: {ml['wait'].replace(chr(160), ' ')}" in text
    assert "Locality</th>" not in html and "Waited</th>" not in html


def test_nodes_with_their_free_room(scene):  # noqa: F811
    nodes = httpx.get(f"{scene.url}/api/v1/nodes").json()
    assert [n["node"] for n in nodes] == ["n0", "n1", "n2", "n3"]
    free = sum(n["free"]["memory_mb"] for n in nodes)
    assert free == 32768 - sum(q["usage"]["memory_mb"] for q in scene.core.views.queues() if q["queue"] == "root")
    assert 'id="nodes"' in state(scene)


def test_a_lost_master_is_named_and_its_state_is_the_last_known(scene):  # noqa: F811
    scene.rm.state.update(connected=False, registered=False, in_fallback=True, lost_at=1700000000.0,
                          waiting="the local cluster in /tmp/c is down: start it with `slotwise cluster up`")
    html = state(scene)
    banner = re.search(r'<div class="error banner" id="away-banner" data-state="lost".*?</div>', html).group(0)
    assert "Lost the link to the ResourceManager at " in banner and "the local cluster in /tmp/c is down" in banner
    assert "last known state" in banner and "FIFO" not in banner
    assert 'id="fallback-banner"' not in html  # a fallback the master reported before it went is over
    assert 'id="apps-stale"' in html and "Running (then)" in html
    # Connected but not registered: the master runs and schedules by its FIFO.
    scene.rm.state.update(connected=True)
    html = state(scene)
    assert 'data-state="dropped"' in html and "it schedules by its built-in FIFO" in html


def test_a_jobtracker_is_named_as_such():
    config = parse_allocations('<allocations><queue name="a"/></allocations>', "pools.xml")
    core = PolicyCore(config, clock=ManualClock(0.0), kind="mrv1")
    rm = FakeRM()
    rm.was_seen = True
    service = SchedulerService(core, ConfigStatus("pools.xml", 0.0, "", ""), rm)
    link = service.link_status()["resource_manager"]
    assert link["master"] == "JobTracker"
    view = views.link_view(link)
    assert view["state"] == "lost" and view["master"] == "JobTracker"


def test_the_link_keeps_when_it_was_lost_and_why_it_waits(tmp_path):
    """What the banner needs from serve's link: the time the gateway was
    lost, and the reason it waits for the master (here: no cluster at all)."""
    import threading

    from slotwise.bridge.server import PolicyServer

    class Core:
        kind = "yarn"

    server = PolicyServer(Core(), str(tmp_path / "gateway.json"), str(tmp_path / "gateway.token"))
    server._state.update(connected=True, registered=True)  # as connect() leaves it
    server.close()  # what run() does once a poll finds the gateway gone
    st = server.status()
    assert (st["connected"], st["registered"]) == (False, False) and st["lost_at"] > 1.7e9
    server.close()  # closing again (stopping) keeps the time it was lost
    assert server.status()["lost_at"] == st["lost_at"]
    thread = threading.Thread(target=server.run, kwargs={"retry_seconds": 0.05}, daemon=True)
    thread.start()
    try:
        for _ in range(1200):  # a guard against a hang, not a speed goal
            if server.status().get("waiting"):
                break
            thread.join(0.05)
        assert "no gateway file" in server.status().get("waiting", "")
    finally:
        server.stop()
        thread.join()


def test_the_server_samples_its_queues_itself(web):  # noqa: F811
    """Without a history given, the app keeps its own, sampled by a thread
    from the moment it serves (a first sample at once)."""
    h = httpx.get(f"{web.url}/api/v1/history").json()
    assert (h["every"], h["cap"]) == (5.0, 720) and len(h["t"]) >= 1
    assert h["queues"]["root.prod"]["usage"][0] == 3072  # the fixture's prod holds three containers


def test_with_the_master_gone_nothing_is_said_due_and_the_starvation_clock_stands(scene):  # noqa: F811
    """After `cluster down` nothing is preempted: a starved queue says it was
    below its share when the master was lost, is not styled as due, and its
    clock (console and API) stands at the loss instead of counting on."""
    scene.clock.advance(71)  # past adhoc's 120 s timeout: due, while the master is there
    html = state(scene)
    assert re.search(r'<tr data-queue="root.adhoc" class="starved due"', html)
    scene.rm.was_seen = True
    scene.rm.state.update(connected=False, registered=False, lost_at=time.time() - 30)
    html = state(scene)
    row = re.search(r'<tr data-queue="root.adhoc" class="([^"]*)".*?</tr>', html, re.S)
    assert row.group(1).split() == ["starved", "gone"]
    assert "preemption due" not in html and 'class="due"' not in html and "min_share due" not in html
    cell = re.search(r'<td class="starvation">(.*?)</td>', row.group(0)).group(1)
    said = re.search(r"Below its min share for (\d+\.\d) s when the ResourceManager was lost<br>"
                     r'<span class="then">nothing is preempted while it is gone</span>', cell)
    assert said and 0 < float(said.group(1)) <= 91.0, cell  # 121 s starved, 30 (and a moment) of them away
    assert 'id="starved-summary" class="gone"' in html
    first = {q["queue"]: q for q in httpx.get(f"{scene.url}/api/v1/queues").json()}["root.adhoc"]
    assert 0 < first["min_share_starved_for"] <= 91  # 121 s starved, 30 (and a moment) of them with it gone
    rows = views.queue_rows(scene.core.views.queue_rows({"seen": True, "connected": False, "lost_at": 1000.0},
                                                        now=1121.0), gone="JobTracker")
    adhoc = {r["name"]: r for r in rows}["root.adhoc"]
    assert adhoc["starvation"][0]["text"] == "Below its min share for 0.0\u00a0s when the JobTracker was lost"
    assert adhoc["due"] is False


def test_the_due_style_is_only_on_what_is_due(scene):  # noqa: F811
    """A row due for min-share preemption colours that note, not the row's
    harmless "no preemption timeout" one."""
    scene.clock.advance(71)
    html = state(scene)
    row = re.search(r'<tr data-queue="root.adhoc".*?</tr>', html, re.S).group(0)
    notes = re.findall(r'<div class="([^"]*)">', row)
    assert "below_min_share due" in notes
    assert all(n.endswith(" due") == ("preemption due now" in part)
               for n, part in zip(notes, re.split(r'<div class="[^"]*">', row)[1:]))


def test_allocation_file_warnings_are_shown_with_file_and_line(web):  # noqa: F811
    """A file that loads with warnings (an element YARN ignores) is in force,
    and the console says so in amber with FILE:LINE, not "in force" in green."""
    web.service.status.warnings = ["fair-scheduler.xml:7: warning: unknown element <maxRunningApp> in queue "
                                   "root.prod is ignored, as YARN ignores it"]
    html = state(web)
    box = re.search(r'<div class="warn" id="config-warnings">.*?</div>', html, re.S).group(0)
    assert "with 1 warning</strong>" in box and "<code>fair-scheduler.xml:7: warning: unknown element" in box
    assert 'id="config-ok"' not in html
    web.service.status.warnings = []
    assert 'id="config-ok"' in state(web) and 'id="config-warnings"' not in state(web)


def test_app_ids_break_only_after_an_underscore(scene):  # noqa: F811
    assert str(views.breakable("application_17_0001")) == "application_<wbr>17_<wbr>0001"
    assert str(views.breakable("<b>_x")) == "&lt;b&gt;_<wbr>x"
    assert "application_<wbr>1700000000000_<wbr>0001" in httpx.get(f"{scene.url}/ui/state").text


def test_nodes_are_unknown_while_the_master_is_gone():
    """A node list emptied by `cluster down` (the NodeManagers left, then the
    master): not "no node has registered", but unknown until it is back."""
    from slotwise.admin import AdminToken
    from slotwise.serve import start_http
    from slotwise.web.app import create_app
    from webtools import TOKEN, free_port

    config = parse_allocations('<allocations><queue name="a"/></allocations>', "pools.xml")
    core = PolicyCore(config, clock=ManualClock(0.0), kind="mrv1")
    rm = FakeRM()
    service = SchedulerService(core, ConfigStatus("pools.xml", 0.0, "", ""), rm)
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN), None), "127.0.0.1", port)
    try:
        get = lambda: httpx.get(f"http://127.0.0.1:{port}/ui/state").text  # noqa: E731
        rm.state.update(connected=True, registered=True)
        rm.was_seen = True
        assert "No node has registered." in get()
        rm.state.update(connected=False, registered=False, lost_at=time.time())
        html = get()
        assert "No node has registered" not in html
        assert "The nodes are unknown while the JobTracker is gone" in html
    finally:
        server.should_exit = True


def test_the_min_share_is_drawn_under_the_other_lines_and_wider(scene):  # noqa: F811
    """Where a queue's min share equals its fair (or steady) share, its wide
    pale band shows around that line instead of under it, hidden."""
    html = httpx.get(f"{scene.url}/ui/state").text
    svg = re.search(r'<svg class="chart" id="history-root.adhoc".*?</svg>', html, re.S).group(0)
    lines = re.findall(r'data-series="([^"]+)"[^>]*stroke-width="([0-9.]+)"', svg)
    names = [n for n, _ in lines]
    assert names[0] == "min share" and "fair share" in names
    width = dict(lines)
    assert float(width["min share"]) >= 2 * float(width["fair share"])
