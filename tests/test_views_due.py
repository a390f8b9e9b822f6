""""Preemption due" is read one way: the console's page, /api/v1/queues,
explain and diff (the dry run) all say what the preemption unit's next round
says (Preemptor.next_round), even where the since-clock a queue shows
(min_starved_since) says otherwise: just after a round served the queue,
within its settle time, the clock runs on past the timeout while the next
round waits a full timeout from when the queue was last at its share."""

from __future__ import annotations

import re

import httpx
import pytest

from slotwise.admin import AdminToken, SchedulerService
from slotwise.config.watcher import ConfigStatus
from slotwise.serve import start_http
from slotwise.web import views as console
from slotwise.web.app import create_app
from test_explain import starved_core
from webtools import TOKEN, free_port

#: starved_core's allocation file, as `slotwise diff` would send it.
ALLOC = ('<allocations><queue name="prod"><minResources>4096 mb, 4 vcores</minResources>'
         '<minSharePreemptionTimeout>30</minSharePreemptionTimeout></queue>{hog}</allocations>')
NO_VICTIMS = '<queue name="hog"><allowPreemptionFrom>false</allowPreemptionFrom></queue>'


def everyone(core, hog: str) -> dict:
    """What each reader says of root.prod: due, and in how long."""
    port = free_port()
    server = start_http(create_app(SchedulerService(core, ConfigStatus("a.xml")), AdminToken(TOKEN)),
                        "127.0.0.1", port)
    url = f"http://127.0.0.1:{port}"
    try:
        api = {q["queue"]: q for q in httpx.get(f"{url}/api/v1/queues").json()}["root.prod"]
        old = {q["pool"]: q for q in httpx.get(f"{url}/api/v1/pools").json()}["root.prod"]
        html = " ".join(httpx.get(f"{url}/ui/state").text.replace("\u00a0", " ").split())
        explain = httpx.get(f"{url}/api/v1/apps/p/explain").json()["queue_starvation"]["preemption"]
        diff = httpx.post(f"{url}/api/v1/config/dry-run", content=ALLOC.format(hog=hog),
                          headers={"Authorization": f"Bearer {TOKEN}"}).json()
    finally:
        server.should_exit = True
    page_rows = {r["name"]: r for r in console.queue_rows(SchedulerService(core, ConfigStatus("a.xml")).queues())}
    row = re.search(r'<tr data-queue="root.prod" class="([^"]*)".*?</tr>', html, re.S)
    diffed = {q["queue"]: q for q in diff["queues"]}["root.prod"]
    return {"api": api, "old_api": old, "html_row": row, "html": html, "page_row": page_rows["root.prod"],
            "explain": explain, "diff": diffed}


def test_just_after_a_round_the_since_clock_is_past_the_timeout_and_nothing_says_due():
    core, clock, until, rounds = starved_core()
    until(35)
    # The since-clock says 35 s below a 30 s timeout; the round at t=31 served
    # prod (at its share at t=33), so the next may act only after t=63.
    assert [r[0] for r in rounds] == [31]
    said = everyone(core, '<queue name="hog"/>')
    api = said["api"]
    assert api["min_share_starved_for"] == 35 and api["min_share_timeout"] == 30
    assert api["preemption_due"] is False and api["next_preemption_in_s"] == 28
    assert said["explain"]["due"] is False and said["explain"]["next_round_in_s"] == 28
    assert said["page_row"]["due"] is False and not any(s["due"] for s in said["page_row"]["starvation"])
    assert "due" not in said["html_row"].group(1).split() and "preemption due" not in said["html_row"].group(0)
    assert "preemption in 28.0 s (timeout 30 s)" in said["html_row"].group(0)
    assert said["diff"]["preemption_due_before"] is False and said["diff"]["preemption_due_after"] is False
    assert said["old_api"]["min_share_starved_for"] == 35  # the old path reads the same view
    # ... and the next round comes when they all said it would: t=63 passes, t=64 acts.
    until(64)
    assert [r[0] for r in rounds] == [31, 64]


@pytest.mark.parametrize("at", [29, 35])
def test_before_and_past_the_timeout_without_a_round_everyone_agrees(at):
    """No round has served prod (hog allows none): since-clock and next round
    agree, and all four readers say due exactly when it is past the timeout."""
    core, clock, until, rounds = starved_core(hog=NO_VICTIMS)
    until(at)
    said = everyone(core, NO_VICTIMS)
    due = at > 30
    assert rounds == []
    assert said["api"]["preemption_due"] is due and said["explain"]["due"] is due
    assert said["page_row"]["due"] is due and said["diff"]["preemption_due_before"] is due
    assert ("due" in said["html_row"].group(1).split()) is due
    assert said["api"]["next_preemption_in_s"] == said["explain"]["next_round_in_s"] == max(0, 30 - at)


def test_with_the_master_gone_the_queue_table_and_explain_say_no_round_is_coming():
    from webtools import FakeRM

    core, clock, until, rounds = starved_core(hog=NO_VICTIMS)
    until(35)  # due while the master is there
    rm = FakeRM()
    rm.was_seen = True
    rm.state = {"connected": False, "registered": True, "in_fallback": False}
    service = SchedulerService(core, ConfigStatus("a.xml"), rm)
    row = {q["queue"]: q for q in service.queues()}["root.prod"]
    pre = service.explain_app("p")["queue_starvation"]["preemption"]
    assert (row["preemption_due"], row["next_preemption_in_s"]) == (pre["due"], pre["next_round_in_s"]) == (False, None)
    rows = {r["name"]: r for r in console.queue_rows(service.queues(), gone="ResourceManager")}
    assert rows["root.prod"]["due"] is False
