"""The ``slotwise`` command for operators."""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__
from .clock import ManualClock
from .cluster import Request
from .config import ConfigErrors, load_allocations
from .config.values import BadValue, min_resource
from .engine import Engine
from .placement import queue_path
from .resources import Resource
from .settings import EngineSettings


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
    return Resource.slots(n)


def _demand(text: str) -> tuple[str, Resource]:
    pool, sep, amount = text.partition("=")
    if not sep or not pool.strip():
        raise argparse.ArgumentTypeError(f"expected POOL=AMOUNT, got {text!r}")
    return queue_path(pool.strip()), _amount(amount)


def cmd_validate(args) -> int:
    status = 0
    for path in args.files:
        try:
            cfg = load_allocations(path)
        except ConfigErrors as e:
            for err in e.errors:
                print(err)
            status = 1
            continue
        if not args.quiet:
            n = sum(1 for _ in cfg.root.walk()) - 1
            print(f"{path}: valid {cfg.format} allocation file, {n} pools", file=sys.stderr)
    return status


def what_if(cfg, capacity: Resource, demands: list[tuple[str, Resource]]) -> list[dict]:
    """Fair shares for a cluster of ``capacity`` and these demands, computed by
    the real engine: one node, one app per pool asking for its demand."""
    engine = Engine(cfg, ManualClock(), EngineSettings(preemption=False))
    engine.add_node("what-if", "what-if", "/default-rack", capacity)
    for i, (pool, amount) in enumerate(demands):
        app_id = f"what-if-{i}"
        engine.add_app(app_id, f"what-if-{i}", queue=pool, placed=True)
        engine.update_requests(app_id, [Request(0, amount, 1)])
    engine.update()
    asked = {p for p, _ in demands}
    rows = []
    for row in engine.describe_pools():
        if row["pool"] == "root":
            continue
        if row["dynamic"] and row["pool"] not in asked and not any(a.startswith(row["pool"] + ".") for a in asked):
            continue
        rows.append(row)
    return rows


def cmd_shares(args) -> int:
    try:
        cfg = load_allocations(args.allocations)
    except ConfigErrors as e:
        for err in e.errors:
            print(err, file=sys.stderr)
        return 1
    try:
        rows = what_if(cfg, args.capacity, args.demand or [])
    except Exception as e:  # e.g. a demand on a parent pool
        print(f"slotwise shares: {e}", file=sys.stderr)
        return 1
    out = [{
        "pool": r["pool"],
        "weight": r["weight"],
        "min_share": r["min_share"]["memory_mb"],
        "demand": r["demand"]["memory_mb"],
        "fair_share": round(r["fair_share"]["memory_mb"], 3),
        "steady_fair_share": round(r["steady_fair_share"]["memory_mb"], 3),
        "max_share": _finite(r["max_share"]["memory_mb"]),
        "resources": {k: r[k] for k in ("min_share", "demand", "fair_share", "steady_fair_share")},
    } for r in rows]
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    unit = "map slots" if cfg.format == "mrv1" else "memory MB; a plain number counts slots"
    print(f"{'pool':<32} {'weight':>7} {'min_share':>10} {'demand':>10} {'fair_share':>11}   ({unit})")
    for r in out:
        print(f"{r['pool']:<32} {r['weight']:>7g} {r['min_share']:>10g} {r['demand']:>10g} {r['fair_share']:>11g}")
    return 0


def _finite(x: float) -> float | None:
    """JSON has no infinity: an unlimited max share is null."""
    return None if x == float("inf") else x


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="slotwise", description=__doc__)
    p.add_argument("--version", action="version", version=f"slotwise {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check allocation files; print FILE:LINE: message per error")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("-q", "--quiet", action="store_true", help="print nothing for valid files")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("shares", help="what-if: fair shares for a capacity and per-pool demands")
    s.add_argument("--allocations", required=True, metavar="FILE")
    s.add_argument("--capacity", required=True, type=_amount,
                   help='slots (a number; map slots for MRv1 files) or "X mb, Y vcores"')
    s.add_argument("--demand", action="append", type=_demand, metavar="POOL=N",
                   help="a pool's demand; repeat per pool")
    s.add_argument("--json", action="store_true", help="print a JSON list")
    s.set_defaults(func=cmd_shares)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
