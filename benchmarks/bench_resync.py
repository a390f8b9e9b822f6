"""How long a full resync takes: the RM's whole truth reconciled with what
Python holds (slotwise.core.PolicyCore), at 1,000 and 10,000 apps, with and
without half of them waiting on maxRunningApps.

Run: .venv/bin/python benchmarks/bench_resync.py [--quick] [--repeat N]

For each case it builds the full payload the shim sends (100 nodes, every app
with a two-priority ask spread over three hosts, two live containers per
runnable app), then times, as medians over the repeats:

- decode: the JSON text to typed messages, checked against the schema;
- first load: the payload applied to a fresh PolicyCore (what every resync
  cost before issue 9: the engine was rebuilt);
- resync: the same payload applied again to the loaded core (nothing changed:
  the common case after a lost call), and once more with 1 % of the apps
  changed (asks) and 1 % gone; each after a settled heap (gc.collect()), as
  in a server that has run for a while;
- resync right after the first load, unsettled: the first full collection of
  the new heap (about a million objects) falls in it, a one-off cost that
  ``slotwise serve`` avoids by freezing its long-lived objects (gc.freeze).

Goal (issue 9): a resync of 10,000 apps of which 5,000 wait on maxRunningApps
in at most 100 ms.  The last line is
``resync: 10000 apps (5000 waiting) in X ms (goal 100 ms)``.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from slotwise import protocol as wire  # noqa: E402
from slotwise.clock import ManualClock  # noqa: E402
from slotwise.config import parse_allocations  # noqa: E402
from slotwise.core import PolicyCore  # noqa: E402
from slotwise.settings import EngineSettings  # noqa: E402

QUEUES = 10
NODES = 100


def allocations(limit: int | None) -> str:
    cap = f"<maxRunningApps>{limit}</maxRunningApps>" if limit is not None else ""
    queues = "".join(f'<queue name="p{i}">{cap}</queue>' for i in range(QUEUES))
    return f"<allocations>{queues}</allocations>"


def truth(apps: int, waiting: int) -> dict:
    nodes = [{"id": f"h{i}:45454", "host": f"h{i}", "rack": f"/r{i % 10}",
              "capacity": {"memory_mb": 262144, "vcores": 256}} for i in range(NODES)]
    app_rows, containers = [], []
    runnable = apps - waiting
    for i in range(apps):
        app_id = f"application_1700000000000_{i:06d}"
        hosts = {f"h{(i + k) % NODES}": 2 for k in range(3)}
        racks = {f"/r{(i + k) % NODES % 10}": 2 for k in range(3)}
        app_rows.append({"id": app_id, "user": f"u{i % 50}", "queue": f"root.p{i % QUEUES}", "priority": 0,
                         "submit_ms": 1700000000000 + i,
                         "requests": [{"priority": 20, "resource": {"memory_mb": 1024, "vcores": 1}, "count": 6,
                                       "hosts": hosts, "racks": racks},
                                      {"priority": 10, "resource": {"memory_mb": 2048, "vcores": 1}, "count": 1}]})
        if i < runnable:  # the first ones run: they came first, the limit holds the rest
            for k in range(2):
                containers.append({"id": f"container_1700000000000_{i:06d}_01_{k + 1:06d}", "app": app_id,
                                   "node": f"h{(i + k) % NODES}:45454", "resource": {"memory_mb": 1024, "vcores": 1},
                                   "am": k == 0, "priority": 0 if k == 0 else 20})
    return {"full": True, "now_ms": 1700000100000, "nodes": nodes, "apps": app_rows, "launched": containers}


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def run_case(apps: int, waiting: int, repeat: int) -> dict:
    limit = None if not waiting else (apps - waiting) // QUEUES
    config = parse_allocations(allocations(limit), "bench.xml")
    doc = truth(apps, waiting)
    text = json.dumps(doc)
    changed = copy.deepcopy(doc)
    step = 100
    for row in changed["apps"][::step]:
        row["requests"][0]["count"] = 3
    gone = {row["id"] for row in changed["apps"][1::step]}
    changed["apps"] = [a for a in changed["apps"] if a["id"] not in gone]
    changed["launched"] = [c for c in changed["launched"] if c["app"] not in gone]
    changed_text = json.dumps(changed)
    decode, first, unsettled, again, delta = [], [], [], [], []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        msg = wire.decode("Payload", text)
        decode.append(time.perf_counter() - t)
        core = PolicyCore(config, EngineSettings(preemption=False), ManualClock(100.0))
        t = time.perf_counter()
        core.handle_heartbeat(msg)
        first.append(time.perf_counter() - t)
        t = time.perf_counter()
        core.handle_heartbeat(msg)
        unsettled.append(time.perf_counter() - t)
        gc.collect()
        t = time.perf_counter()
        core.handle_heartbeat(msg)
        again.append(time.perf_counter() - t)
        msg2 = wire.decode("Payload", changed_text)
        gc.collect()
        t = time.perf_counter()
        core.handle_heartbeat(msg2)
        delta.append(time.perf_counter() - t)
        waiting_now = sum(1 for j in core.views.apps() if not j["runnable"])
    return {"apps": apps, "waiting": waiting_now, "bytes": len(text), "decode": median_ms(decode),
            "first": median_ms(first), "unsettled": median_ms(unsettled), "again": median_ms(again),
            "changed": median_ms(delta)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one repeat")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    print(f"full payloads of {NODES} nodes, {QUEUES} queues; medians of {repeat} run(s), milliseconds")
    print(f"{'apps':>6} {'waiting':>7} {'payload MB':>10} {'decode':>8} {'first load':>10} "
          f"{'resync':>8} {'1% changed':>10} {'resync + decode':>15} {'unsettled heap':>14}")
    last = None
    for apps in (1000, 10000):
        for waiting in (0, apps // 2):
            r = run_case(apps, waiting, repeat)
            print(f"{r['apps']:>6} {r['waiting']:>7} {r['bytes'] / 1e6:>10.2f} {r['decode']:>8.1f} "
                  f"{r['first']:>10.1f} {r['again']:>8.1f} {r['changed']:>10.1f} "
                  f"{r['again'] + r['decode']:>15.1f} {r['unsettled']:>14.1f}", flush=True)
            last = r
    print(f"resync: {last['apps']} apps ({last['waiting']} waiting) in {last['again']:.1f} ms "
          f"(goal 100 ms; {last['again'] + last['decode']:.1f} ms with decoding)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
