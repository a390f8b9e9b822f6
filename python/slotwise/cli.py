"""The ``slotwise`` command for operators."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__
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
    status = 0
    for path in args.files:
        try:
            cfg = load_allocations(path)
        except ConfigErrors as e:
            for item in sorted([*e.errors, *e.warnings], key=lambda x: x.line or 0):  # in file order
                print(item)
            status = 1
            continue
        for line in cfg.warnings:
            print(line)
        if cfg.warnings and args.strict:
            status = 1
        if not args.quiet:
            n = sum(1 for _ in cfg.root.walk()) - 1
            verdict = ("invalid under --strict" if args.strict else "valid") if cfg.warnings else "valid"
            notes = f", {len(cfg.warnings)} warning(s)" if cfg.warnings else ""
            print(f"{path}: {verdict} {cfg.format} allocation file, {n} queues{notes}", file=sys.stderr)
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


def _cluster(args):
    """The cluster in --dir, YARN or MRv1 as its state says (--mrv1: must be MRv1)."""
    from .localcluster.mrv1 import open_cluster

    return open_cluster(args.dir, mrv1=getattr(args, "mrv1", False))


def cmd_cluster_up(args) -> int:
    from .localcluster import LocalCluster
    from .localcluster.config import parse_conf_pairs, scheduler_class
    from .localcluster.mrv1 import Mrv1Cluster
    from .localcluster.mrv1_hadoop import mrv1_scheduler_class

    try:
        conf = parse_conf_pairs(args.conf)
        scheduler = (mrv1_scheduler_class if args.mrv1 else scheduler_class)(args.scheduler)
    except ValueError as e:
        print(f"slotwise cluster up: {e if str(e).startswith('--') else f'--conf: {e}'}", file=sys.stderr)
        return 2
    if args.mrv1:
        if args.with_shim:
            print("slotwise cluster up: --with-shim is for YARN; with --mrv1 the slotwise scheduler brings its jar",
                  file=sys.stderr)
            return 2
        Mrv1Cluster(args.dir, nodes=args.nodes, scheduler=scheduler, conf=conf,
                    map_slots=2 if args.map_slots is None else args.map_slots,
                    reduce_slots=2 if args.reduce_slots is None else args.reduce_slots,
                    build_shim=not args.no_build, java_home=args.java_home, start_timeout=args.timeout).up()
        return 0
    if args.map_slots is not None or args.reduce_slots is not None:
        print("slotwise cluster up: --map-slots and --reduce-slots are for an MRv1 cluster (--mrv1)", file=sys.stderr)
        return 2
    cluster = LocalCluster(args.dir, nodes=args.nodes, scheduler=scheduler, conf=conf,
                           with_shim=True if args.with_shim else None, build_shim=not args.no_build,
                           java_home=args.java_home, start_timeout=args.timeout)
    cluster.up()
    return 0


def cmd_cluster_status(args) -> int:
    cluster = _cluster(args)
    st = cluster.status()
    if args.json:
        json.dump(st, sys.stdout, indent=2)
        print()
    else:
        print(cluster.format_status(st))
    return 0 if st["running"] and not st["error"] else 1


def cmd_cluster_down(args) -> int:
    _cluster(args).down(timeout=args.timeout)
    return 0


def cmd_cluster_restart_master(args) -> int:
    cluster = _cluster(args)
    cluster.restart_master(kill=args.kill)
    return 0


def cmd_cluster_submit(args) -> int:
    program = list(args.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        print("slotwise cluster submit: name a program after --, e.g. -- pi 2 10", file=sys.stderr)
        return 2
    cluster = _cluster(args)
    from .localcluster.mrv1 import Mrv1Cluster

    mrv1 = isinstance(cluster, Mrv1Cluster)
    # An MRv1 job runs in its own directory (PiEstimator's temporary files are relative to it).
    result = cluster.submit(program[0], program[1:], queue=args.queue, user=args.user,
                            cwd=None if mrv1 else os.getcwd(), timeout=args.timeout, echo=not args.quiet)
    verdict = "SUCCEEDED" if result.succeeded else "FAILED"
    where = (f"JobTracker status {result.state}, queue {result.queue}" if mrv1
             else f"RM state {result.state}/{result.final_status}, queue {result.queue}")
    print(f"{result.app_id or ('no job id' if mrv1 else 'no application id')} {verdict} in {result.seconds:.1f} s "
          f"(client exit {result.returncode}, {where}, user {result.app_user}); client log {result.log}",
          flush=True)
    return 0 if result.succeeded else 1


def cmd_cluster_yarn(args) -> int:
    from .localcluster.jobs import YARN_COMMANDS

    argv = list(args.args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] not in YARN_COMMANDS:
        print(f"slotwise cluster yarn: name a yarn command after --: {', '.join(YARN_COMMANDS)} "
              "(e.g. -- queue -status root.prod)", file=sys.stderr)
        return 2
    cluster = _cluster(args)
    if not hasattr(cluster, "yarn"):
        print(f"slotwise cluster yarn: the cluster in {cluster.dir} is MRv1 (a JobTracker), not YARN", file=sys.stderr)
        return 1
    result = cluster.yarn(argv, user=args.user, timeout=args.timeout)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def _slots(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {n}")
    return n


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _add_cluster_parser(sub) -> None:
    from .localcluster.config import SCHEDULERS, START_TIMEOUT

    c = sub.add_parser("cluster", help="a real local YARN (or MRv1) cluster: up, status, submit, yarn, restart-rm, down",
                       description="An embedded Hadoop YARN cluster (one ResourceManager, N NodeManagers, "
                                   "each its own JVM) built from the jars of java-shim/pom.xml; or with "
                                   "`up --mrv1` a Hadoop 1.2.1 one (a JobTracker, N TaskTrackers) from "
                                   "mrv1-shim/pom.xml's. status, submit and down work on either. "
                                   "See docs/local-cluster.md.")
    csub = c.add_subparsers(dest="cluster_command", required=True)

    def with_dir(p, mrv1_help="accepted for symmetry: the cluster's state says whether it is MRv1"):
        p.add_argument("--dir", metavar="DIR",
                       help="cluster directory (default: $SLOTWISE_CLUSTER_DIR, else run/cluster in the checkout)")
        if mrv1_help:
            p.add_argument("--mrv1", action="store_true", help=mrv1_help)
        return p

    up = with_dir(csub.add_parser("up", help="start the cluster; returns when every NodeManager is RUNNING "
                                             "(every TaskTracker registered, with --mrv1)"),
                  mrv1_help="a Hadoop 1.2.1 MRv1 cluster: a JobTracker and --nodes TaskTrackers")
    up.add_argument("--nodes", type=_positive_int, default=2, metavar="N",
                    help="NodeManagers, or TaskTrackers with --mrv1 (default 2)")
    up.add_argument("--scheduler", default="slotwise", metavar="NAME|CLASS",
                    help=f"the RM's scheduler: {'|'.join(SCHEDULERS)} or a class name "
                         "(default slotwise: the shim, for `slotwise serve`); with --mrv1 the JobTracker's: "
                         "slotwise|fifo (Hadoop's JobQueueTaskScheduler) or a class name")
    up.add_argument("--conf", action="append", metavar="KEY=VALUE",
                    help="an extra yarn-site.xml (with --mrv1: mapred-site.xml) property for every daemon and "
                         "client; repeat")
    up.add_argument("--map-slots", type=_slots, metavar="M", help="with --mrv1: map slots per TaskTracker (default 2)")
    up.add_argument("--reduce-slots", type=_slots, metavar="R",
                    help="with --mrv1: reduce slots per TaskTracker (default 2)")
    up.add_argument("--with-shim", action="store_true",
                    help="put the shim jar on the RM's classpath (implied by the shim scheduler)")
    up.add_argument("--no-build", action="store_true",
                    help="use the shim jar already in java-shim/target instead of running mvn package")
    up.add_argument("--java-home", metavar="JDK", help="the JDK to run Hadoop (default $JAVA_HOME, else java on PATH)")
    up.add_argument("--timeout", type=float, default=START_TIMEOUT, metavar="S",
                    help=f"start-up timeout (default {START_TIMEOUT:.0f})")
    up.set_defaults(func=cmd_cluster_up)

    st = with_dir(csub.add_parser("status", help="daemons, nodes and apps; exit 1 unless running"))
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=cmd_cluster_status)

    dn = with_dir(csub.add_parser("down", help="stop every daemon and container (idempotent)"))
    dn.add_argument("--timeout", type=float, default=30.0, metavar="S",
                    help="seconds between SIGTERM and SIGKILL (default 30)")
    dn.set_defaults(func=cmd_cluster_down)

    for name in ("restart-rm", "restart-jt"):
        rs = with_dir(csub.add_parser(
            name, help="restart the ResourceManager (restart-jt: the JobTracker) as it was; its running "
                       "containers keep running and it recovers its apps from its state store",
            description="Stops the master (SIGTERM; --kill: SIGKILL, as a crash) and starts it again with the "
                        "same ports, configuration and state store; returns once every worker has joined it "
                        "again. A `slotwise serve` that was registered registers with the new one by itself. "
                        "Both names work on either kind of cluster. See docs/local-cluster.md."))
        rs.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM: a crash")
        rs.set_defaults(func=cmd_cluster_restart_master)

    sm = with_dir(csub.add_parser(
        "submit", help="run a MapReduce example (pi, sleep, wordcount...) and wait; exit 0 if it succeeded",
        usage="slotwise cluster submit [--mrv1] --queue NAME [--user U] [--dir DIR] -- PROGRAM [ARGS...]",
        description="On an MRv1 cluster the programs are hadoop-examples 1.2.1's (pi, sleep, wordcount, "
                    "randomwriter...), the queue is the job's mapred.fairscheduler.pool, and the job runs in its own directory "
                    "under DIR/jobs (relative paths resolve there)."),
        mrv1_help="expect an MRv1 cluster (implied by its state; an error against a YARN cluster)")
    sm.add_argument("--queue", "--pool", dest="queue", required=True,
                    help="the queue to submit to (--pool: its old name, kept)")
    sm.add_argument("--user", help="submit as this user (HADOOP_USER_NAME; on MRv1 the job client runs as U)")
    sm.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds")
    sm.add_argument("-q", "--quiet", action="store_true", help="do not echo the job client's output")
    sm.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS",
                    help="pi 2 10 | sleep -m 2 -r 1 -mt 500 -rt 500 | wordcount IN OUT | my.jar ...")
    sm.set_defaults(func=cmd_cluster_submit)

    from .localcluster.jobs import YARN_COMMANDS

    yn = with_dir(csub.add_parser(
        "yarn", help=f"run the yarn CLI ({', '.join(YARN_COMMANDS)}) against the cluster",
        usage="slotwise cluster yarn [--user U] [--dir DIR] -- COMMAND [ARGS...]",
        description="The yarn client, configured for this cluster, e.g. "
                    "`slotwise cluster yarn -- queue -status root.prod` or "
                    "`slotwise cluster yarn -- application -list -appStates ALL`."), mrv1_help=None)
    yn.add_argument("--user", help="run as this user (HADOOP_USER_NAME)")
    yn.add_argument("--timeout", type=float, default=120.0, metavar="S", help="give up after S seconds (default 120)")
    yn.add_argument("args", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                    help="application -list | queue -status root.prod | node -list | ...")
    yn.set_defaults(func=cmd_cluster_yarn)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="slotwise",
        description="Slotwise: a drop-in Hadoop scheduler whose policy runs in Python. Check allocation "
                    "files, run the policy server for a ResourceManager, try policies in simulated time, "
                    "or run a real local YARN cluster. Each command has --help.")
    p.add_argument("--version", action="version", version=f"slotwise {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check allocation files; print FILE:LINE: message per error")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("-q", "--quiet", action="store_true", help="print nothing for valid files")
    v.add_argument("--strict", action="store_true",
                   help="fail on warnings too (what YARN ignores or adjusts: unknown elements, values given twice...)")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("shares", help="what-if: fair shares for a capacity and per-queue demands")
    s.add_argument("--allocations", required=True, metavar="FILE",
                   help="the allocation file: YARN's fair-scheduler.xml or an MRv1 pools file")
    s.add_argument("--capacity", required=True, type=_amount,
                   help='slots (a number; map slots for MRv1 files) or "X mb, Y vcores"')
    s.add_argument("--demand", action="append", type=_demand, metavar="QUEUE=N",
                   help="a queue's demand; repeat per queue")
    s.add_argument("--share-rule", choices=SHARE_RULE_CHOICES, default="auto", help=SHARE_RULE_HELP)
    s.add_argument("--json", action="store_true", help="print a JSON list")
    s.set_defaults(func=cmd_shares)

    _add_cluster_parser(sub)
    from .bridge.server import add_serve_parser

    add_serve_parser(sub)
    from .sim.cli import add_parsers as add_sim_parsers

    add_sim_parsers(sub)
    from .client import add_parsers as add_client_parsers

    add_client_parsers(sub)
    from .market.cli import add_parsers as add_dp_parsers

    add_dp_parsers(sub)

    d = sub.add_parser("demo", help="a real YARN cluster scheduled by Python: jobs in several queues, then a summary")
    d.add_argument("--dir", help="cluster directory (default: run/cluster in the checkout)")
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
        from .localcluster import ClusterError

        try:
            return args.func(args)
        except ClusterError as e:
            print(f"slotwise cluster {args.cluster_command}: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"slotwise cluster {args.cluster_command}: interrupted", file=sys.stderr)
            return 130
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
