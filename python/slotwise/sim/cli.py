"""``slotwise simulate`` and ``slotwise replay``."""

from __future__ import annotations

import json
import sys


def _allocations(path: str | None):
    """The allocation file given on the command line: None if none, False
    (after printing FILE:LINE: message per error) if it does not load."""
    from ..config import ConfigErrors, load_allocations

    if not path:
        return None
    try:
        return load_allocations(path)
    except ConfigErrors as e:
        for err in e.errors:
            print(err, file=sys.stderr)
        return False


def cmd_simulate(args) -> int:
    from ..eventlog import EventLog
    from .report import write_report
    from .runner import run_scenario, run_trace
    from .scenarios import SCENARIOS
    from .traces import TraceError, load_trace

    config = _allocations(args.allocations)
    shadow = _allocations(args.shadow)
    if config is False or shadow is False:
        return 1
    target = args.scenario
    if target == "dynamic-priority":
        return _simulate_dp(args)
    if target == "hopper":
        return _simulate_hopper(args)
    try:
        if target in SCENARIOS:
            if args.event_log:
                print("slotwise simulate: --event-log works with --trace runs (one workload)", file=sys.stderr)
                return 2
            report, runs = run_scenario(target, args.policy, args.seed, args.scale, args.delay, config,
                                        progress=not args.quiet, share_rule=args.share_rule, shadow=shadow)
        elif target == "trace":
            if not args.trace:
                print("slotwise simulate trace: --trace FILE is required", file=sys.stderr)
                return 2
            workload = load_trace(args.trace, args.format, nodes_path=args.nodes) if args.nodes else \
                load_trace(args.trace, args.format)
            policies = args.policy or ["fifo", "fair", "fair+delay"]
            if args.event_log and len(policies) != 1:
                print("slotwise simulate: --event-log records one run; give one --policy", file=sys.stderr)
                return 2
            log = EventLog(args.event_log) if args.event_log else None
            try:
                text = open(args.allocations, encoding="utf-8").read() if args.allocations else None
                report, runs = run_trace(workload, policies, args.seed,
                                         args.delay if args.delay is not None else 5.0, args.heartbeat,
                                         config, progress=not args.quiet, event_log=log, config_text=text,
                                         share_rule=args.share_rule, shadow=shadow)
                report["trace_file"] = args.trace
            finally:
                if log:
                    log.close()
        else:
            print(f"slotwise simulate: unknown scenario {target!r} "
                  f"(known: {', '.join(SCENARIOS)}, or 'trace --trace FILE')", file=sys.stderr)
            return 2
    except (TraceError, ValueError, OSError) as e:
        print(f"slotwise simulate: {e}", file=sys.stderr)
        return 1
    written = write_report(args.out, report, runs)
    from .metrics import speed

    def lines():
        for r, (_exp, res) in zip(report["runs"], runs):
            key = " ".join(f"{k}={r[k]}" for k in ("job_maps", "concurrent_jobs", "workload") if k in r)
            loc = r["locality"]
            yield (f"{r['policy']:<12} {key:<22} node-local {loc['node_local']:6.1%}  rack-local "
                   f"{loc['rack_local']:6.1%}  mean response {(r['mean_response'] or 0):8.1f} s  "
                   f"{r['jobs_finished']}/{r['jobs']} jobs  {speed(res) or 0:,.0f}x real time")
    return _finish(args, report, written, lines)


def _finish(args, report: dict, written: list[str], lines) -> int:
    """The run's summary on stdout: a few lines, or with --json the report
    itself (the report files are written either way)."""
    if args.json:
        json.dump({**report, "written": written}, sys.stdout, default=str)
        print()
    else:
        for line in lines():
            print(line)
        print(f"wrote {', '.join(written)}")
    return 0


def _simulate_dp(args) -> int:
    from . import dynamic_priority as dp

    def step(msg):
        if not args.quiet:
            print(f"dynamic-priority: {msg} ...", file=sys.stderr, flush=True)

    report = dp.run_all(args.seed, args.scale, progress=step)
    written = dp.write(args.out, report)

    def lines():
        d = report["two_users"]["dynamic_priority"]
        yield (f"two users: spending ratio {d['spending_ratio_q1_q2']} while funded (paper ~4); completion ratio "
               f"{d['completion_ratio_q1_q2_after_reset']} after the reset with preemption (paper 1/1.8 = 0.556)")
        b = report["boost"]
        yield (f"boost: boosted jobs {b['preemption']['speedup']}x faster with preemption, "
               f"{b['no_preemption']['speedup']}x without (paper ~3x); preemption overhead "
               f"{100 * b['preemption_overhead']['mean_completion_increase']:+.1f}% mean completion")
    return _finish(args, report, written, lines)


def _simulate_hopper(args) -> int:
    from . import hopper

    def step(msg):
        if not args.quiet:
            print(f"hopper: {msg} ...", file=sys.stderr, flush=True)

    report = hopper.run_all(args.seed, args.scale, progress=step)
    written = hopper.write(args.out, report)

    def lines():
        for r in report["jct"]:
            g = report["gain_vs_fair_late"][r["policy"]]
            yield (f"{r['policy']:<16} mean JCT {r['mean_jct']:8.1f} s  p50 {r['p50_jct']:7.1f}  p90 "
                   f"{r['p90_jct']:8.1f}  vs fair+late "
                   f"{'(the baseline)' if r['policy'] == hopper.BASELINE else f'{-100 * g:+.0f}%'}")
    return _finish(args, report, written, lines)


def cmd_replay(args) -> int:
    from ..eventlog import read_events
    from .replay import replay

    config = _allocations(args.allocations)
    if config is False:
        return 1
    try:
        events = read_events(args.log)
        result = replay(events, config)
    except (OSError, ValueError, KeyError) as e:
        print(f"slotwise replay: {args.log}: {e}", file=sys.stderr)
        return 1
    diff = result.first_difference()
    if args.json:
        json.dump({"calls": result.calls, "assignments": len(result.assignments),
                   "recorded_assignments": len(result.recorded_assignments),
                   "preemptions": len(result.preemptions), "recorded_preemptions": len(result.recorded_preemptions),
                   "identical": diff is None, "first_difference": diff}, sys.stdout, indent=2)
        print()
        return 0 if diff is None or args.allocations else 3
    print(f"{result.calls} calls replayed; {len(result.assignments)} assignments "
          f"({len(result.recorded_assignments)} recorded), {len(result.preemptions)} preemptions")
    if diff is None:
        print("decisions identical to the recording")
        return 0
    print(f"decisions differ: {diff}")
    return 0 if args.allocations else 3


def add_parsers(sub) -> None:
    from ..cliargs import alias
    from ..settings import SHARE_RULE_CHOICES, SHARE_RULE_HELP
    from .policies import known_variants
    from .scenarios import SCENARIOS

    s = sub.add_parser(
        "simulate", help="run a scenario or trace on the real engine in simulated time; write a report",
        description="Scenarios: " + "; ".join(f"{k}: {v.description}" for k, v in SCENARIOS.items())
        + "; dynamic-priority: the Dynamic Priority paper's experiments (2, 10 and 80 users, boosts)"
        + "; hopper: Hopper against fair sharing and SRPT, all speculating (Pareto task times, bursts)"
        + ". Or 'trace' with --trace FILE (SLS JSON or Slotwise JSON lines).")
    s.add_argument("scenario", metavar="SCENARIO", help=f"{' | '.join(SCENARIOS)} | dynamic-priority | hopper | trace")
    s.add_argument("--policy", action="append", metavar="NAME",
                   help=f"one of: {', '.join(known_variants())} (+delay: delay scheduling; repeat to "
                   "compare; default: the scenario's, for trace fifo, fair, fair+delay)")
    s.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0); same seed, same report")
    s.add_argument("--out", default="sim-out", metavar="DIR", help="report directory (default sim-out)")
    s.add_argument("--scale", type=float, default=1.0, metavar="X",
                   help="shrink the scenario (fewer jobs, shorter) for a quick look; default 1.0")
    s.add_argument("--delay", type=float, metavar="S", help="locality wait per level for +delay (default 5)")
    s.add_argument("--allocations", metavar="FILE", help="an allocation file (default: one queue per user)")
    s.add_argument("--share-rule", choices=SHARE_RULE_CHOICES, default="auto", help=SHARE_RULE_HELP)
    s.add_argument("--shadow", metavar="FILE",
                   help="a candidate allocation file deciding beside each run's, never acting; each run's "
                        "report gains shadow: {compared, diverged, skipped, ...}")
    s.add_argument("--trace", metavar="FILE", help="with 'trace': the workload file")
    s.add_argument("--format", choices=("sls", "jsonl"), help="trace format (default: by extension)")
    s.add_argument("--nodes", metavar="FILE", help="an SLS nodes file (topology)")
    s.add_argument("--heartbeat-interval", dest="heartbeat", type=float, default=3.0, metavar="S",
                   help="trace runs: the NodeManagers' heartbeat interval, seconds (default 3)")
    alias(s, "--heartbeat", "heartbeat", type=float, metavar="S")
    s.add_argument("--event-log", metavar="FILE",
                   help="trace runs: write the event log with every engine input (replayable)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true", help="print the report as JSON (the files are written too)")
    s.set_defaults(func=cmd_simulate)

    r = sub.add_parser("replay", help="re-run a recorded event log through a fresh engine and compare")
    r.add_argument("log", metavar="EVENTLOG")
    r.add_argument("--allocations", metavar="FILE",
                   help="replay under this allocation file instead (a what-if; differences expected)")
    r.add_argument("--json", action="store_true", help="print the counts and the first difference as JSON")
    r.set_defaults(func=cmd_replay)
