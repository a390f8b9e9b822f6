"""The demo's output: a few snapshots of the queues while the jobs run (not
one table every few seconds), and a closing summary: the apps (containers
placed by Python and by the FIFO, as the messages report them; the locality
of Python's placements, from the event log), the queues over the run,
preemptions (how many, from which queues for which) and the fallback count
in words."""

from __future__ import annotations

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import PolicyCore
from slotwise.demo_report import PreemptionRecorder, fallback_summary, preemption_summary
from slotwise.settings import EngineSettings
from webtools import app_entry
from wiretools import node, payload


def test_preemptions_are_counted_and_grouped_by_source_and_beneficiary():
    rows = [{"container": "c1", "from": "root.research", "for": ["root.prod"], "reason": "min_share"},
            {"container": "c2", "from": "root.research", "for": ["root.prod"], "reason": "min_share"},
            {"container": "c3", "from": "root.adhoc", "for": ["root.prod", "root.research"], "reason": "fair_share"},
            {"container": "c4", "from": "root.adhoc", "for": [], "reason": "fair_share"}]
    assert preemption_summary(rows) == [
        "containers preempted: 4",
        "    2 from root.research for root.prod (min share preemption)",
        "    1 from root.adhoc for no queue below its share any more (fair share preemption)",
        "    1 from root.adhoc for root.prod, root.research (fair share preemption)",
    ]
    assert preemption_summary([]) == ["containers preempted: none (no queue stayed below its min share or its "
                                      "fair-share threshold past its preemption timeout)"]


def test_the_fallback_count_is_said_in_words():
    link = {"fallback_heartbeats": 12, "heartbeats": 400, "deadline_ms": 100}
    episodes = [{"event": "fallback", "count": 9, "reason": "not registered"},
                {"event": "fallback", "count": 3, "reason": "heartbeat: no answer within 100 ms"}]
    assert fallback_summary(link, episodes) == [
        "fallback: 12 of 400 node heartbeats (3.0%) were scheduled by the ResourceManager's built-in FIFO "
        "instead of Python, because Python was away (not registered yet, still busy with the previous call, "
        "or no answer within the 100 ms deadline); Python scheduled all the others.",
        "    in 2 episode(s): heartbeat: no answer within 100 ms; not registered",
    ]
    assert fallback_summary({"fallback_heartbeats": 0, "heartbeats": 250, "deadline_ms": 100}, []) == [
        "fallback: 0 of 250 node heartbeats: Python scheduled every one. (This counts the heartbeats the "
        "ResourceManager schedules with its built-in FIFO while Python is away: not registered yet, still busy "
        "with the previous call, or no answer within the 100 ms deadline.)"]
    # No link figures (never registered): the episodes' counts.
    assert fallback_summary({}, [{"count": 5, "reason": "x"}])[0].startswith(
        "fallback: 5 node heartbeats were scheduled by the ResourceManager's built-in FIFO")


QUEUES = """<?xml version="1.0"?>
<allocations>
  <queue name="prod"><minResources>2048 mb, 2 vcores</minResources>
    <minSharePreemptionTimeout>5</minSharePreemptionTimeout></queue>
  <queue name="research"/>
</allocations>
"""


def test_the_recorder_sees_which_queue_gave_and_which_it_was_for():
    clock = ManualClock(100.0)
    core = PolicyCore(parse_allocations(QUEUES, "pools.xml"),
                      EngineSettings(node_locality_delay=0, rack_locality_delay=0), clock)
    recorder = PreemptionRecorder(core)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)],
                                  apps=[app_entry("r1", "ann", "root.research", 4)], node="n1"))
    core.handle_update(payload())
    core.handle_heartbeat(payload(apps=[app_entry("p1", "bob", "root.prod", 2)]))
    clock.advance(6.0)  # past prod's 5 s min-share timeout
    taken = core.handle_update(payload()).preempt
    assert taken and {p.queue for p in taken} == {"root.research"}
    assert [(r["from"], r["for"], r["reason"]) for r in recorder.rows] == \
        [("root.research", ["root.prod"], "min_share")] * len(taken)
    assert preemption_summary(recorder.rows)[1] == \
        f"    {len(taken)} from root.research for root.prod (min share preemption)"


# ------------------------------------------------------- snapshots and tables
from slotwise.demo_report import LaunchRecorder, Timeline, app_table  # noqa: E402
from slotwise.eventlog import EventLog, read_events  # noqa: E402
from wiretools import app as wire_app, container, req  # noqa: E402

THREE = """<?xml version="1.0"?>
<allocations>
  <queue name="prod"><weight>2</weight><minResources>2048 mb, 2 vcores</minResources></queue>
  <queue name="research"/>
  <queue name="adhoc"/>
</allocations>
"""


def three_queues(tmp_path=None):
    clock = ManualClock(100.0)
    log = EventLog(str(tmp_path / "events.jsonl")) if tmp_path else None
    core = PolicyCore(parse_allocations(THREE, "demo.xml"),
                      EngineSettings(node_locality_delay=0, rack_locality_delay=0), clock, log)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 8192, 8)]))
    return core, clock


def sample(timeline, core, t):
    core.handle_update(payload())  # the shim's periodic call: fair shares
    return timeline.observe(t, core.views.queues(), core.views.running_by_queue())


def test_the_demo_prints_a_snapshot_when_the_apps_change_not_every_sample():
    core, clock = three_queues()
    timeline = Timeline("yarn")
    printed = []
    arrivals = {4: ("p1", "root.prod"), 10: ("r1", "root.research"), 12: ("a1", "root.adhoc")}
    for t in range(2, 61, 2):  # a sample every 2 s for a minute
        if t in arrivals:
            app_id, queue = arrivals[t]
            core.handle_heartbeat(payload(apps=[app_entry(app_id, "ann", queue, 4)]))
        if t == 40:
            core.handle_heartbeat(payload(apps_removed=["a1"]))
        core.handle_heartbeat(payload(node="n1"))
        clock.advance(2.0)
        printed += sample(timeline, core, t)
    tables = [ln for ln in printed if ln.startswith("-- ")]
    # An app's arrival shows once the state held for two samples; research and adhoc came 2 s apart: one table.
    assert tables == ["-- t+6 s: app started in root.prod (1 app in 1 queue)",
                      "-- t+14 s: app started in root.adhoc, root.research (3 apps in 3 queues)",
                      "-- t+42 s: app finished in root.adhoc (2 apps in 2 queues)"]
    assert len(printed) <= 12  # not ~30 tables: snapshots, and a one-line note now and then
    notes = [ln for ln in printed if ln.startswith("   t+")]
    assert notes and all(" MB in use" in ln for ln in notes)
    table = printed[printed.index(tables[1]) + 1].splitlines()
    assert table[0].split() == ["queue", "weight", "min", "MB", "fair", "MB", "used", "MB", "containers", "apps",
                                "note"]
    rows = {ln.split()[0]: ln.split() for ln in table[1:]}
    assert set(rows) == {"root.prod", "root.research", "root.adhoc"}
    assert rows["root.prod"][1] == "2" and rows["root.prod"][2] == "2,048"
    for r in rows.values():  # each container here is 1024 MB; every queue has its app
        assert int(r[4].replace(",", "")) == 1024 * int(r[5]) and r[6] == "1"
    assert sum(int(r[5]) for r in rows.values()) == 8  # the node's 8 GB, shared
    # The queues over the run: each queue's time with apps and its time-weighted fair share and use.
    summary = timeline.queue_summary()
    assert summary[0].split()[:4] == ["queue", "weight", "had", "apps"]
    over = {ln.split()[0]: ln.split() for ln in summary[1:]}
    assert over["root.prod"][2:4] == ["56", "s"]  # from the sample that saw its app (t=4) to the last (t=60)
    assert over["root.adhoc"][2:4] == ["28", "s"]  # from t=12 to the sample that saw its app gone (t=40)
    # adhoc's fair share was a quarter of the 8 GB node (weights 2:1:1) all along, and it got none of it.
    assert over["root.adhoc"][4:8] == ["0", "2,048", "0", "0%"]
    assert timeline.closing() == []  # the t+14 snapshot showed the node full: the busiest moment, already shown


def test_at_most_five_snapshots_however_busy_the_run():
    core, clock = three_queues()
    timeline = Timeline("yarn", max_tables=5)
    printed, peak = [], 0
    for i, t in enumerate(range(2, 200, 2)):
        if i % 3 == 0:  # a new app every third sample
            core.handle_heartbeat(payload(apps=[app_entry(f"x{i}", "ann", "root.research", 1)]))
        if i == 40:  # a second node: room for more AMs (maxAMShare), after the fifth snapshot
            core.handle_heartbeat(payload(nodes=[node("n2", "h2", "/r1", 8192, 8)]))
        core.handle_heartbeat(payload(node="n1"))
        core.handle_heartbeat(payload(node="n2") if i >= 40 else payload())
        clock.advance(2.0)
        printed += sample(timeline, core, t)
        peak = max(peak, core.views.queues()[0]["usage"]["memory_mb"])  # the root's
    assert sum(ln.startswith("-- ") for ln in printed) == 5
    # The cluster grew after the fifth snapshot: the busiest moment, which none showed, comes at the end.
    heading, table = timeline.closing()
    assert peak > 4096
    assert heading.startswith("-- the busiest moment, t+") and heading.endswith(f" s ({peak:,} MB in use):")
    research = next(ln.split() for ln in table.splitlines() if ln.split()[0] == "root.research")
    assert research[4:6] == [f"{peak:,}", str(peak // 1024)]
    # The summary lists the queues that held apps, not every queue of the file.
    assert [ln.split()[0] for ln in timeline.queue_summary()[1:]] == ["root.research"]


def test_placements_are_counted_from_the_messages_and_their_locality_from_the_events(tmp_path):
    core, clock = three_queues(tmp_path)
    launches = LaunchRecorder(core)
    # p1 asks for 2 containers on h1 (node-local there); a1 names no node or rack (off-switch anywhere).
    core.handle_heartbeat(payload(apps=[
        wire_app("p1", "root.prod", [req(1, 1024, 1, 2, hosts={"h1": 2}, racks={"/r1": 2})], user="pat"),
        wire_app("a1", "root.adhoc", [req(1, 1024, 1, 1)], user="al", submit_ms=5)]))
    placed = core.handle_heartbeat(payload(node="n1"))
    assert sorted((a.app_id, a.locality) for a in placed) == [("a1", "off_switch"), ("p1", "node_local"),
                                                               ("p1", "node_local")]
    # The RM launches Python's three (naming each assignment) and one its FIFO placed while Python was away;
    # a full payload later lists them all again.
    launched = [container(f"c{i}", a.app_id, "n1", 1024, 1, priority=1, engine_id=a.container_id)
                for i, a in enumerate(placed)] + [container("c9", "a1", "n1", 1024, 1, priority=1)]
    core.handle_heartbeat(payload(launched=launched))
    core.handle_update(payload(launched=launched[:1]))
    counts = launches.counts(read_events(str(tmp_path / "events.jsonl")))
    assert counts["p1"] == {"python": 2, "node_local": 2}
    assert counts["a1"] == {"python": 1, "off_switch": 1, "fifo": 1}
    apps = [{"app": "p1", "program": "sleep", "queue": "root.prod", "user": "pat", "state": "SUCCEEDED",
             "seconds": 31.4},
            {"app": "a1", "program": "pi", "queue": "root.adhoc", "user": "al", "state": "FAILED", "seconds": 12.0},
            {"app": None, "program": "pi", "queue": "(research)", "user": None, "state": "no report",
             "seconds": None}]
    lines = app_table(apps, counts, "yarn")
    assert lines[0].split() == ["app", "program", "queue", "user", "state", "time", "by", "Python", "by", "FIFO",
                                "node-local", "rack-local", "off-switch"]
    assert lines[1].split() == ["p1", "sleep", "root.prod", "pat", "SUCCEEDED", "31", "s", "2", "0", "2", "0", "0"]
    assert lines[2].split() == ["a1", "pi", "root.adhoc", "al", "FAILED", "12", "s", "1", "1", "0", "0", "1"]
    assert lines[3].split() == ["(no", "id)", "pi", "(research)", "-", "no", "report", "-", "0", "0", "0", "0", "0"]
    assert lines[4] == ("  containers launched: 3 placed by Python, 1 by the built-in FIFO; of Python's, "
                        "2 node-local, 0 rack-local, 1 off-switch")
    # The delay-scheduling level the UI shows is not where containers ran: p1's containers are node-local
    # whatever level it may use next.
    assert not any("level" in ln for ln in lines)


def test_an_mrv1_snapshot_counts_map_and_reduce_slots():
    from test_mrv1_core import beat, call, job, make, tracker

    core, _clock = make()
    t = tracker(0, maps=4, reduces=2)
    call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 8, reduces=1), job(2, "research", 8)],
         beats=[beat(t, 4, 2)])
    call(core, "update")
    timeline = Timeline("mrv1")
    assert timeline.observe(2.0, core.views.queues(), core.views.running_by_queue()) == []  # one sample: not yet stable
    heading, table = timeline.observe(4.0, core.views.queues(), core.views.running_by_queue())
    assert heading == "-- t+4 s: app started in root.prod, root.research (2 apps in 2 queues)"
    lines = table.splitlines()
    assert lines[0].split() == ["queue", "weight", "min", "maps", "fair", "maps", "used", "maps", "min", "reduces",
                                "fair", "reduces", "used", "reduces", "tasks", "apps", "note"]
    rows = {r["queue"]: r for r in core.views.queues()}
    for ln in lines[1:]:
        cells = ln.split()
        r = rows[cells[0]]
        assert cells[3:5] == [f"{r['fair_share']['map_slots']:.1f}", f"{r['usage']['map_slots']:.0f}"]
        assert cells[6:8] == [f"{r['fair_share']['reduce_slots']:.1f}", f"{r['usage']['reduce_slots']:.0f}"]
    # The tracker's 4 map slots and the one reduce asked for: the tasks column counts both.
    assert sum(int(ln.split()[8]) for ln in lines[1:]) == 5
