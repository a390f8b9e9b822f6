"""The ``slotwise`` command for operators."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__
from .cliargs import Parser
from .clock import ManualClock
from .engine import Request
from .config import ConfigErrors, load_allocations
from .config.values import BadValue, min_resource
from .engine import Engine
from .placement import queue_path
from .resources import Resource
from .settings import RULE_NAMES, SHARE_RULE_CHOICES, SHARE_RULE_HELP, EngineSettings


def _amount(text: str) -> Resource:
    """A plain number counts slots (map slots for MRv1 files; for YARN files
    the same number of MB and vcores); else a YARN resource string."""
    try:
        n = float(text)
    except ValueError:
        try:
            return min_resource(text)
        except BadValue as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return Resource.units(n)


def _demand(text: str) -> tuple[str, Resource]:
    queue, sep, amount = text.partition("=")
    if not sep or not queue.strip():
        raise argparse.ArgumentTypeError(f"expected QUEUE=AMOUNT, got {text!r}")
    return queue_path(queue.strip()), _amount(amount)


def cmd_validate(args) -> int:
    """Errors and warnings (FILE:LINE: message) on stderr, a one-line verdict
    per file on stdout (-q: only for files that fail); --json: one object per
    file on stdout instead."""
    status = 0
    report = []
    for path in args.files:
        try:
            cfg = load_allocations(path)
        except ConfigErrors as e:
            items = sorted([*e.errors, *e.warnings], key=lambda x: x.line or 0)  # in file order
            report.append({"file": path, "valid": False, "format": None, "queues": None,
                           "errors": [str(x) for x in e.errors], "warnings": [str(x) for x in e.warnings]})
            status = 1
            if args.json:
                continue
            for item in items:
                print(item, file=sys.stderr)
            sys.stderr.flush()  # the details before the verdict, where both go to one terminal
            notes = f", {len(e.warnings)} warning(s)" if e.warnings else ""
            print(f"{path}: invalid, {len(e.errors)} error(s){notes}", flush=True)
            continue
        failed = bool(cfg.warnings and args.strict)
        status = 1 if failed else status
        n = sum(1 for _ in cfg.root.walk()) - 1
        report.append({"file": path, "valid": not failed, "format": cfg.format, "queues": n, "errors": [],
                       "warnings": list(cfg.warnings)})
        if args.json:
            continue
        for line in cfg.warnings:
            print(line, file=sys.stderr)
        if failed or not args.quiet:
            verdict = "invalid under --strict" if failed else "valid"
            notes = f", {len(cfg.warnings)} warning(s)" if cfg.warnings else ""
            print(f"{path}: {verdict} {cfg.format} allocation file, {n} queues{notes}", flush=True)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    return status


def what_if(cfg, capacity: Resource, demands: list[tuple[str, Resource]], share_rule: str = "auto") -> list[dict]:
    """Fair shares for a cluster of ``capacity`` and these demands, computed by
    the real engine: one node, one app per queue asking for its demand. For
    an MRv1 file, a plain number counts map slots."""
    kind = "mrv1" if cfg.format == "mrv1" else "yarn"
    engine = Engine(cfg, ManualClock(), EngineSettings(preemption=False, share_rule=share_rule), kind=kind)

    def sized(r: Resource) -> Resource:
        return Resource(map_slots=r.memory_mb) if kind == "mrv1" and not r.map_slots else r
    engine.add_node("what-if", "what-if", "/default-rack", sized(capacity))
    for i, (queue, amount) in enumerate(demands):
        app_id = f"what-if-{i}"
        engine.add_app(app_id, f"what-if-{i}", queue=queue, placed=True)
        engine.update_requests(app_id, [Request(0, sized(amount), 1)])
    engine.update()
    asked = {p for p, _ in demands}
    rows = []
    for row in engine.describe_queues():
        if row["queue"] == "root":
            continue
        if row["dynamic"] and row["queue"] not in asked and not any(a.startswith(row["queue"] + ".") for a in asked):
            continue
        rows.append(row)
    return rows


def _unknown_queues(cfg, queues: list[str]) -> list[str]:
    """Demanded queues the file does not declare, other than new children of a
    queue declared type="parent" (where YARN would create them)."""
    declared = cfg.queues()
    return [p for p in queues if p not in declared
            and not (p.rpartition(".")[0] in declared and declared[p.rpartition(".")[0]].is_parent)]


def cmd_shares(args) -> int:
    try:
        cfg = load_allocations(args.allocations)
    except ConfigErrors as e:
        for err in e.errors:
            print(err, file=sys.stderr)
        return 1
    unknown = _unknown_queues(cfg, [queue for queue, _ in args.demand or []])
    if unknown:
        leaves = ", ".join(q.name for q in cfg.root.walk() if not q.children and q.name != "root")
        print(f"slotwise shares: --demand {unknown[0]}: no such queue in {args.allocations} "
              f"(its leaf queues: {leaves}; a new queue needs a parent declared type=\"parent\")", file=sys.stderr)
        return 1
    try:
        rows = what_if(cfg, args.capacity, args.demand or [], args.share_rule)
    except Exception as e:  # e.g. a demand on a parent queue
        print(f"slotwise shares: {e}", file=sys.stderr)
        return 1
    d = "map_slots" if cfg.format == "mrv1" else "memory_mb"
    out = [{
        "queue": r["queue"],
        "weight": r["weight"],
        "min_share": r["min_share"][d],
        "demand": r["demand"][d],
        "fair_share": round(r["fair_share"][d], 3),
        "steady_fair_share": round(r["steady_fair_share"][d], 3),
        "max_share": _finite(r["max_share"][d]),
        "resources": {k: r[k] for k in ("min_share", "demand", "fair_share", "steady_fair_share")},
    } for r in rows]
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    unit = "map slots" if cfg.format == "mrv1" else "memory MB; a plain number counts slots"
    rule = EngineSettings(share_rule=args.share_rule).rule_for(cfg.format)
    print(f"fair shares by {RULE_NAMES[rule]} ({unit})")
    print(f"{'queue':<32} {'weight':>7} {'min_share':>10} {'demand':>10} {'fair_share':>11}")
    for r in out:
        print(f"{r['queue']:<32} {r['weight']:>7g} {r['min_share']:>10g} {r['demand']:>10g} {r['fair_share']:>11g}")
    return 0


def _finite(x: float) -> float | None:
    """JSON has no infinity: an unlimited max share is null."""
    return None if x == float("inf") else x


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="slotwise",
        description="Slotwise: a drop-in Hadoop scheduler whose policy runs in Python. Check allocation "
                    "files, run the policy server for a ResourceManager, try policies in simulated time, "
                    "or run a real local YARN cluster. Each command has --help.")
    p.add_argument("--version", action="version", version=f"slotwise {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check allocation files; FILE:LINE: message per error (stderr), "
                                        "a one-line verdict per file, valid or not (stdout); exit 1 on an error")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("-q", "--quiet", action="store_true",
                   help="no verdict for valid files, only for those that fail (errors still go to stderr)")
    v.add_argument("--json", action="store_true",
                   help="print a JSON list on stdout: per file valid, format, queues, errors, warnings")
    v.add_argument("--strict", action="store_true",
                   help="fail on warnings too (what YARN ignores or adjusts: unknown elements, values given twice...)")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("shares", help="what-if: fair shares for a capacity and per-queue demands")
    s.add_argument("--allocations", required=True, metavar="FILE",
                   help="the allocation file: YARN's fair-scheduler.xml or an MRv1 pools file")
    s.add_argument("--capacity", required=True, type=_amount, metavar="AMOUNT",
                   help='slots (a number; map slots for MRv1 files) or "X mb, Y vcores"')
    s.add_argument("--demand", action="append", type=_demand, metavar="QUEUE=AMOUNT",
                   help="a queue's demand; repeat per queue")
    s.add_argument("--share-rule", choices=SHARE_RULE_CHOICES, default="auto", help=SHARE_RULE_HELP)
    s.add_argument("--json", action="store_true", help="print a JSON list")
    s.set_defaults(func=cmd_shares)

    from .localcluster.cli import add_dir, add_parser as add_cluster_parser

    add_cluster_parser(sub)
    from .serve import add_serve_parser

    add_serve_parser(sub)
    from .sim.cli import add_parsers as add_sim_parsers

    add_sim_parsers(sub)
    from .client import add_parsers as add_client_parsers

    add_client_parsers(sub)
    from .market.cli import add_parsers as add_dp_parsers

    add_dp_parsers(sub)

    d = sub.add_parser("demo", help="a real YARN cluster scheduled by Python: jobs in several queues, then a summary")
    add_dir(d)
    d.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    d.add_argument("--mrv1", action="store_true",
                   help="an MRv1 cluster instead (Hadoop 1.2.1 JobTracker with SlotwiseTaskScheduler, conf/mrv1-pools.xml)")
    d.set_defaults(func=cmd_demo)
    return p


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(args.dir, keep=args.keep, mrv1=args.mrv1)


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(build_parser().parse_args(argv))
    except BrokenPipeError:  # `slotwise ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args) -> int:
    if args.command == "cluster":
        from .localcluster.cli import run

        return run(args)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
