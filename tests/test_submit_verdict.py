"""What `slotwise cluster submit` says of a job: the queue it went to and the
placement rule that put it there (the policy's own record, over serve's
API), the rejection's reason, and an end that names a cluster gone down."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from slotwise import protocol as wire
from slotwise.config import load_allocations
from slotwise.core import PolicyCore
from slotwise.localcluster.jobs import JobResult
from slotwise.localcluster.verdict import outcome_line, placed_lines, placement_of
from webtools import web  # noqa: F401 (the fixture)

CONF = Path(__file__).resolve().parent.parent / "conf" / "allocations.xml"


def place(core: PolicyCore, app: str, user: str, queue: str) -> dict:
    answer = core.handle_place(wire.decode("PlaceRequest", json.dumps({"app": app, "user": user, "queue": queue,
                                                                       "priority": 0})))
    record = core.views.placement(app)
    assert record["queue"] == answer.queue and record["rejected"] == answer.reject
    return record


def test_the_rule_that_placed_the_app_and_the_rules_that_passed_it_on():
    core = PolicyCore(load_allocations(str(CONF)))
    lines = CONF.read_text().splitlines()
    specified = next(i for i, line in enumerate(lines, 1) if 'rule name="specified"' in line)
    nested = next(i for i, line in enumerate(lines, 1) if 'rule name="nestedUserQueue"' in line)

    asked = place(core, "application_1_0001", "ann", "research")
    assert placed_lines("application_1_0001", "research", None, asked) == [
        f"submitted application_1_0001 to root.research (placed by rule specified (line {specified}))"]

    rerouted = place(core, "application_1_0002", "carol", "nosuch")
    assert [r["outcome"] for r in rerouted["rules"]] == ["skipped", "placed"]
    assert placed_lines("application_1_0002", "nosuch", None, rerouted) == [
        f"submitted application_1_0002 to root.users.carol (placed by rule nestedUserQueue (line {nested}))",
        "  queue root.nosuch does not exist and the placement policy does not create it; the app went to "
        "root.users.carol instead",
        f"  rule specified (line {specified}) passed it on: root.nosuch is not a queue of the allocation file "
        'and this rule does not create it (create="false")']

    rejected = place(core, "application_1_0003", "carol", "root")
    assert rejected["queue"] is None and rejected["rules"][-1]["outcome"] == "rejected"
    assert placed_lines("application_1_0003", "root", None, rejected) == [
        f"application_1_0003 was rejected by the placement policy: {rejected['rejected']}"]


def test_without_the_policys_record_the_masters_queue_is_said_and_why_not_more():
    assert placed_lines("a_1", "nosuch", "root.users.carol", None, "no Slotwise server answers at x") == [
        "submitted a_1 to root.users.carol (asked for root.nosuch; the policy server cannot say why: "
        "no Slotwise server answers at x)"]
    assert placed_lines("a_1", "prod", "root.prod", None, "x") == ["submitted a_1 to root.prod"]


def test_serve_answers_how_it_placed_an_app(web):  # noqa: F811
    place(web.core, "application_9_0001", "dave", "nosuch")
    got = httpx.get(f"{web.url}/api/v1/apps/application_9_0001/placement").json()
    assert (got["asked"], got["queue"], got["rejected"]) == ("nosuch", "root.nosuch", None)
    assert got["rules"] == [{"rule": "specified", "line": 0, "create": True, "queue": "root.nosuch",
                             "outcome": "placed", "why": None}]  # no queuePlacementPolicy: YARN's built-in one
    assert placed_lines("application_9_0001", "nosuch", None, got) == [
        "submitted application_9_0001 to root.nosuch (placed by rule specified (the built-in policy))"]
    record, why_not = placement_of(web.url, "application_9_0001")
    assert record == got and why_not is None
    record, why_not = placement_of(web.url, "application_9_0002")
    assert record is None and why_not.startswith("no placement remembered for application_9_0002")
    record, why_not = placement_of("http://127.0.0.1:1", "application_9_0001")
    assert record is None and why_not.startswith("no Slotwise server answers at http://127.0.0.1:1")


def result(**kw) -> JobResult:
    base = dict(program="pi", asked="prod", user="ann", app_id="application_1_0001", returncode=0,
                state="FINISHED", final_status="SUCCEEDED", queue="root.prod", app_user="ann", seconds=12.34,
                job_dir="/j", log="/j/client.log")
    return JobResult(**{**base, **kw})


def test_how_a_job_ended_in_words():
    say = lambda r, up=True: outcome_line(r, master="ResourceManager", master_up=up, mrv1=False)  # noqa: E731
    assert say(result()) == ("application_1_0001 SUCCEEDED in 12.3 s (queue root.prod, user ann); "
                             "client log /j/client.log")
    gone = result(returncode=1, state=None, final_status=None, queue=None, app_user=None)
    assert say(gone, up=False) == ("application_1_0001 did not finish: the cluster went down before the job "
                                   "finished; client log /j/client.log")
    assert "None" not in say(gone, up=False) and "None" not in say(gone)
    rejected = result(returncode=255, state="FAILED", final_status="FAILED", queue="root.prod",
                      diagnostics="Rejected by the Slotwise policy: root is a parent queue")
    assert say(rejected) == ("application_1_0001 REJECTED: Rejected by the Slotwise policy: root is a parent queue; "
                             "client log /j/client.log")
    job = result(app_id="job_202611271050_0001", returncode=1, state="FAILED", final_status="FAILED")
    assert outcome_line(job, master="JobTracker", master_up=True, mrv1=True, rejected="carol may not spend it") == (
        "job_202611271050_0001 REJECTED: Rejected by the Slotwise policy: carol may not spend it; client log "
        "/j/client.log")  # MRv1 reports no diagnostics: the policy's own record says why
    assert outcome_line(result(), master="ResourceManager", master_up=True, mrv1=False, rejected="stale") == \
        say(result())  # a job that ran is not called rejected
    failed = result(returncode=1, state="FINISHED", final_status="FAILED", diagnostics="Task failed\n  twice")
    assert say(failed) == ("application_1_0001 FAILED in 12.3 s (ResourceManager state FINISHED/FAILED, queue "
                           "root.prod, user ann, client exit 1): Task failed twice; client log /j/client.log")
    none = result(app_id=None, returncode=1, state=None, final_status=None)
    assert say(none).startswith("FAILED: the job client exited (1) before it submitted an application")
