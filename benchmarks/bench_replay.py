"""Python's CPU for a recorded `slotwise serve --record` log, call by call.

Run: .venv/bin/python benchmarks/bench_replay.py EVENTS [--tree DIR] [--repeat N] [--profile OUT]

Feeds every recorded message back through PolicyCore's JSON door
(``heartbeat``, ``update``, ``place``: decode, check, apply, decide,
encode; the event log written to /dev/null as serve writes its own) on a
manual clock set to each message's time, and reports the process CPU per
call kind and per assignment. With ``--tree`` another checkout's
``python/`` is imported instead of this one's, so one recording (for
instance from ``bench_sls.py --record``) times two trees on the very same
messages: CPU time and call counts, not wall time, which this shared
machine makes noisy. A log recorded at protocol 3 is brought down to an
older tree's protocol 1 (refusals as ids, no apps_finished, no
strict_racks). Not a decision check: ``slotwise.sim.replay`` is that.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import logging
import os
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("events", help="an event log written with --record")
    ap.add_argument("--tree", help="a checkout whose python/ to time (default: this one)")
    ap.add_argument("--repeat", type=int, default=1, help="replays (a fresh core each); the least CPU is reported")
    ap.add_argument("--profile", help="write a cProfile of the calls here and print its top 25")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(args.tree or REPO).resolve() / "python"))
    from slotwise import protocol as wire

    texts, recording = load(args.events, wire.VERSION)
    best = None
    for _ in range(max(1, args.repeat)):
        got = replay(texts, recording, args.profile)
        if best is None or got["cpu"] < best["cpu"]:
            best = got
    print(f"bench_replay: {os.path.dirname(wire.__file__)} (protocol {wire.VERSION}), {args.events}")
    print(f"calls {best['calls']}, assigned {best['assigned']}, refused {best['errors']}, CPU {best['cpu']:.3f} s, "
          f"{1e6 * best['cpu'] / max(1, best['assigned']):.1f} us per assignment")
    for kind, (n, cpu) in best["by_kind"].items():
        print(f"  {kind:10s} {n:7d} calls {cpu:8.3f} s {1e6 * cpu / n:9.0f} us/call")
    if args.profile:
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)
    return 0


def load(path: str, version: int) -> tuple[list, dict]:
    recording = None
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if '"recording"' in line and recording is None:
                e = json.loads(line)
                if e.get("event") == "recording":
                    recording = e
                    continue
            if '"input"' not in line:
                continue
            e = json.loads(line)
            if e.get("event") != "input" or e.get("call") not in ("heartbeat", "update", "place", "preemption"):
                continue
            msg = e["msg"]
            if e["call"] in ("heartbeat", "update") and version < 3:
                msg = _protocol_1(msg)
            texts.append((e["call"], e.get("t", 0.0), json.dumps(msg, separators=(",", ":"))))
    if recording is None:
        raise SystemExit(f"{path}: no 'recording' record (was serve run with --record?)")
    return texts, recording


def _protocol_1(msg: dict) -> dict:
    msg = dict(msg)
    msg.pop("apps_finished", None)
    if msg.get("rejected"):
        msg["rejected"] = [r["engine_id"] for r in msg["rejected"]]
    for app in msg.get("apps") or []:
        for r in app.get("requests") or []:
            r.pop("strict_racks", None)
    return msg


def replay(texts: list, recording: dict, profile: str | None) -> dict:
    from slotwise.clock import ManualClock
    from slotwise.config import parse_allocations
    from slotwise.core import PolicyCore
    from slotwise.eventlog import EventLog
    from slotwise.settings import EngineSettings

    logging.disable(logging.CRITICAL)  # the episodes and resyncs the recording holds, logged again
    known = {f.name for f in dataclasses.fields(EngineSettings)}
    settings = EngineSettings(**{k: v for k, v in (recording.get("settings") or {}).items() if k in known})
    clock = ManualClock(recording.get("t", 0.0))
    core = PolicyCore(parse_allocations(recording["config_text"], "<recorded>"), settings, clock,
                      EventLog(os.devnull))
    doors = {"heartbeat": core.heartbeat, "update": core.update, "place": core.place}
    prof = cProfile.Profile() if profile else None
    by_kind: dict[str, list] = {}
    assigned = errors = 0
    total = 0.0
    for call, t, text in texts:
        if t > clock.now():
            clock.set(t)
        if call == "preemption":  # the master's switch at registration (an older tree has none)
            if hasattr(core, "set_preemption"):
                core.set_preemption(json.loads(text)["on"])
            continue
        c0 = time.process_time()
        if prof:
            prof.enable()
        out = doors[call](text)
        if prof:
            prof.disable()
        dt = time.process_time() - c0
        total += dt
        k = by_kind.setdefault(call, [0, 0.0])
        k[0] += 1
        k[1] += dt
        answer = json.loads(out)
        errors += bool(answer.get("error") or answer.get("reject"))
        assigned += len(answer.get("assign") or ())
    if prof:
        prof.dump_stats(profile)
    return {"calls": sum(k[0] for k in by_kind.values()), "assigned": assigned, "errors": errors, "cpu": total,
            "by_kind": {k: tuple(v) for k, v in by_kind.items()}}


if __name__ == "__main__":
    sys.exit(main())
