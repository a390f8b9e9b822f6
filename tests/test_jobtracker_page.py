"""The JobTracker's /scheduler page as serve draws it (web/jobtracker.py;
SlotwiseSchedulerServlet frames it): the queues and the running jobs with
their fair shares in slots, and the form that moves a job or sets its
priority, behind the admin token, through the JobTracker as serve's admin
service goes (a stand-in for the shim's gateway entries here)."""

from __future__ import annotations

import json

import httpx
import pytest

from slotwise.admin import AdminToken, SchedulerService
from slotwise.serve import start_http
from slotwise.config.watcher import ConfigStatus
from slotwise.localcluster.mrv1_web import scheduler_status
from slotwise.web.app import create_app
from slotwise.web.jobtracker import fragment
from test_mrv1_core import beat, call, job, make, tracker
from webtools import TOKEN, free_port

POOLS = """<allocations>
  <pool name="prod"><weight>3</weight><minMaps>2</minMaps><maxMaps>6</maxMaps></pool>
  <pool name="research"/>
</allocations>"""


class JobTracker:
    """What the shim's adminMove and adminPriority do: the move is Python's
    (its answer decides), the priority the JobTracker's."""

    def __init__(self, core):
        self.core, self.asked = core, []

    def connected(self):
        return True

    def seen(self):
        return True

    def status(self):
        return {"connected": True, "registered": True, "in_fallback": False}

    def move(self, app_id, queue):
        self.asked.append(("move", app_id, queue))
        return json.loads(self.core.move(json.dumps({"app": app_id, "queue": queue})))

    def priority(self, app_id, priority):
        self.asked.append(("priority", app_id, priority))
        return {"priority": priority}


@pytest.fixture
def jt():
    core, _ = make(POOLS)
    t = tracker(0, maps=4, reduces=2)
    apps = [job(1, "root.prod", 6, 1), {**job(2, "root.research", 6), "name": "PiEstimator <b>"}]
    call(core, "heartbeat", full=True, nodes=[t], apps=apps, beats=[beat(t, 4, 2)])
    call(core, "update")  # the shares are computed by the update pass
    gate = JobTracker(core)
    service = SchedulerService(core, ConfigStatus("pools.xml"), gate)
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN)), "127.0.0.1", port)
    yield f"http://127.0.0.1:{port}/jobtracker/scheduler", core, gate
    server.should_exit = True


def frame(fragment_html: str) -> str:
    """The servlet's frame around serve's page, as it draws it for a registered serve."""
    return ('<p id="link">Python policy: pid 42 on vm, deciding.</p><table border="1" id="counts">'
            '<tr><th>Heartbeats</th><td id="heartbeats">7</td><td>...</td></tr></table>\n' + fragment_html)


def test_the_page_lists_queues_and_jobs_with_their_fair_shares_in_slots(jt):
    url, core, _ = jt
    r = httpx.get(url)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    st = scheduler_status(frame(r.text))
    queues = {q["queue"]: q for q in st["queues"]}
    assert (queues["root.prod"]["min maps"], queues["root.prod"]["max maps"]) == ("2", "6")
    assert queues["root.research"]["max maps"] == "-"  # no limit
    jobs = {j["job"]: j for j in st["jobs"]}
    prod = jobs["job_202611230000_0001"]
    fair = core.views.apps()[0]["fair_share"]
    assert (prod["queue"], prod["priority"], prod["fair maps"]) == ("root.prod", "NORMAL", "3")
    assert float(prod["fair maps"]) == fair["map_slots"] and float(prod["fair reduces"]) == fair["reduce_slots"]
    assert int(prod["running maps"]) + int(jobs["job_202611230000_0002"]["running maps"]) == 4
    assert "PiEstimator &lt;b&gt;" in r.text and "PiEstimator <b>" not in r.text
    assert 'href="/jobdetails.jsp?jobid=job_202611230000_0001"' in r.text
    assert '<option value="root.research">' in r.text and '<option value="root">' not in r.text


def test_a_form_without_the_token_is_refused_before_its_body_is_read(jt):
    url, core, gate = jt
    for headers in ({}, {"Authorization": "Bearer guess"}):
        r = httpx.post(url, content=b"x" * (1 << 20), headers=headers)  # over the cap: not read
        assert r.status_code == 401, r.text
        assert "slotwise serve refused the admin token; nothing was changed." in r.text
    assert gate.asked == [] and core.views.app_queue("job_202611230000_0001") == "root.prod"


def test_the_right_token_moves_the_job_and_sets_its_priority_through_the_jobtracker(jt):
    url, core, gate = jt
    job_id = "job_202611230000_0001"
    r = httpx.post(url, json={"job": job_id, "queue": "research", "priority": "HIGH"},
                   headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    assert f"Done: moved {job_id} to root.research; set {job_id}&#x27;s priority to HIGH." in r.text
    assert gate.asked == [("move", job_id, "root.research"), ("priority", job_id, 1)]
    assert core.views.app_queue(job_id) == "root.research"


@pytest.mark.parametrize("form, status, said", [
    ({"job": "job_202611230000_0001"}, 400, "Choose a queue, a priority or both; nothing was changed."),
    ({"job": "job_202611230000_0001", "priority": "URGENT"}, 400, "A priority is one of VERY_HIGH, HIGH, NORMAL, "
     "LOW, VERY_LOW; nothing was changed."),
    ({"job": "job_202611230000_0009", "queue": "research"}, 404, "slotwise serve refused moving "
     "job_202611230000_0009 to research (404): unknown app job_202611230000_0009; nothing was changed."),
    ({"job": "job_202611230000_0001", "queue": "root"}, 422, "slotwise serve refused moving job_202611230000_0001 "
     "to root (422): "),
    ({"job": 7}, 422, "slotwise serve refused the form (422): field 'job': "),
])
def test_a_form_serve_refuses_says_why_and_changes_nothing(jt, form, status, said):
    url, core, gate = jt
    r = httpx.post(url, json=form, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == status, r.text
    assert said.replace("'", "&#x27;") in r.text, r.text
    assert gate.asked == [] and core.views.app_queue("job_202611230000_0001") == "root.prod"


def test_a_move_done_and_a_priority_refused_says_both():
    core, _ = make(POOLS)
    call(core, "heartbeat", full=True, nodes=[tracker(0)], apps=[job(1, "root.prod", 2)])

    class Refusing(JobTracker):
        def priority(self, app_id, priority):
            return {"error": "the JobTracker refused: not allowed"}

    service = SchedulerService(core, ConfigStatus("pools.xml"), Refusing(core))
    from slotwise.web.jobtracker import act
    status, said = act(service, "job_202611230000_0001", "research", "LOW")
    assert status == 409 and said.startswith("Done: moved job_202611230000_0001 to root.research. But slotwise "
                                              "serve refused setting job_202611230000_0001's priority (409): ")
    assert said.endswith("; the priority stays as it was.")


def test_with_no_job_the_page_says_so_and_has_no_form():
    core, _ = make(POOLS)
    html = fragment(SchedulerService(core, ConfigStatus("pools.xml"), None))
    assert "<p>No running jobs.</p>" in html and "<form" not in html
