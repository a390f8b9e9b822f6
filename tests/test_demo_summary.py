"""The demo's closing summary: preemptions (how many, from which queues for
which) and the fallback count in words."""

from __future__ import annotations

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import PolicyCore
from slotwise.demo import PreemptionRecorder, fallback_summary, preemption_summary
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
