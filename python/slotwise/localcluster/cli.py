"""``slotwise cluster``: up, status, submit, yarn, restart-rm, restart-jt, down."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from ..cliargs import add_server


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cluster(args, **kw):
    """The cluster in --dir, YARN or MRv1 as its state says (--mrv1: must be MRv1)."""
    from .mrv1 import open_cluster

    return open_cluster(args.dir, mrv1=getattr(args, "mrv1", False), **kw)


def cmd_up(args) -> int:
    from . import LocalCluster
    from .config import parse_conf_pairs, scheduler_class
    from .mrv1 import Mrv1Cluster
    from .mrv1_hadoop import mrv1_scheduler_class

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


def cmd_status(args) -> int:
    cluster = _cluster(args)
    st = cluster.status()
    if args.json:
        json.dump(st, sys.stdout, indent=2)
        print()
    else:
        print(cluster.format_status(st))
    return 0 if st["running"] and not st["error"] else 1


def cmd_down(args) -> int:
    _cluster(args).down(timeout=args.timeout)
    return 0


def cmd_restart_master(args) -> int:
    _cluster(args).restart_master(kill=args.kill)
    return 0


def cmd_submit(args) -> int:
    """Run the job; say where it went and by which rule as soon as the master
    has it, and how it ended (the policy's reason when it was rejected)."""
    from .mrv1 import Mrv1Cluster
    from .rest import RestError, RMRest
    from .verdict import outcome_line, placed_lines, placement_of

    program = list(args.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        print("slotwise cluster submit: name a program after --, e.g. -- pi 2 10", file=sys.stderr)
        return 2
    cluster = _cluster(args, log=_progress)
    mrv1 = isinstance(cluster, Mrv1Cluster)
    said: dict = {}

    def placed(app_id: str) -> None:
        record, why_not = placement_of(args.server, app_id)
        queue = None
        if not mrv1 and not record:
            try:
                queue = RMRest(cluster.state.rm_web).app(app_id).get("queue")
            except (RestError, AttributeError):
                pass
        said["placement"] = record
        said["placement_unknown"] = why_not
        lines = placed_lines(app_id, args.queue, queue, record, why_not)
        print("\n".join(lines), file=sys.stderr if args.json else sys.stdout, flush=True)

    # An MRv1 job runs in its own directory (PiEstimator's temporary files are relative to it).
    result = cluster.submit(program[0], program[1:], queue=args.queue, user=args.user,
                            cwd=None if mrv1 else os.getcwd(), timeout=args.timeout, echo=not args.quiet,
                            on_submitted=placed)
    if result.app_id and "placement" not in said:  # rejected: the client never said "submitted"
        said["placement"], said["placement_unknown"] = placement_of(args.server, result.app_id)
    state = cluster.state
    master = "JobTracker" if mrv1 else "ResourceManager"
    up = state is not None and cluster.alive(cluster.master(state))
    line = outcome_line(result, master=master, master_up=up, mrv1=mrv1,
                        rejected=(said.get("placement") or {}).get("rejected"))
    if args.json:
        json.dump({**dataclasses.asdict(result), "succeeded": result.succeeded, "outcome": line,
                   "placement": said.get("placement")}, sys.stdout, indent=2)
        print()
    else:
        print(line, flush=True)
    return 0 if result.succeeded else 1


def cmd_yarn(args) -> int:
    from .jobs import YARN_COMMANDS

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


def run(args) -> int:
    """A cluster command, its ClusterError as one line on stderr."""
    from .errors import ClusterError

    try:
        return args.func(args)
    except ClusterError as e:
        print(f"slotwise cluster {args.cluster_command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"slotwise cluster {args.cluster_command}: interrupted", file=sys.stderr)
        return 130


def _count(low: int):
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {n}" if low else
                                             f"must not be negative, got {n}")
        return n
    return parse


def add_dir(p, what: str = "cluster directory") -> None:
    """``--dir``, the one name for the local cluster's directory."""
    p.add_argument("--dir", metavar="PATH",
                   help=f"{what} (default: $SLOTWISE_CLUSTER_DIR, else run/cluster in the checkout)")


def add_parser(sub) -> None:
    from .config import SCHEDULERS, START_TIMEOUT
    from .jobs import YARN_COMMANDS

    c = sub.add_parser("cluster", help="a real local YARN (or MRv1) cluster: up, status, submit, yarn, restart-rm, restart-jt, down",
                       description="An embedded Hadoop YARN cluster (one ResourceManager, N NodeManagers, "
                                   "each its own JVM) built from the jars of java-shim/pom.xml; or with "
                                   "`up --mrv1` a Hadoop 1.2.1 one (a JobTracker, N TaskTrackers) from "
                                   "mrv1-shim/pom.xml's. status, submit and down work on either. "
                                   "See docs/local-cluster.md.")
    csub = c.add_subparsers(dest="cluster_command", required=True)

    def with_dir(p, mrv1_help="accepted for symmetry: the cluster's state says whether it is MRv1"):
        add_dir(p)
        if mrv1_help:
            p.add_argument("--mrv1", action="store_true", help=mrv1_help)
        return p

    up = with_dir(csub.add_parser("up", help="start the cluster; returns when every NodeManager is RUNNING "
                                             "(every TaskTracker registered, with --mrv1)"),
                  mrv1_help="a Hadoop 1.2.1 MRv1 cluster: a JobTracker and --nodes TaskTrackers")
    up.add_argument("--nodes", type=_count(1), default=2, metavar="N",
                    help="NodeManagers, or TaskTrackers with --mrv1 (default 2)")
    up.add_argument("--scheduler", default="slotwise", metavar="NAME|CLASS",
                    help=f"the RM's scheduler: {'|'.join(SCHEDULERS)} or a class name "
                         "(default slotwise: the shim, for `slotwise serve`); with --mrv1 the JobTracker's: "
                         "slotwise|fifo (Hadoop's JobQueueTaskScheduler) or a class name")
    up.add_argument("--conf", action="append", metavar="KEY=VALUE",
                    help="an extra yarn-site.xml (with --mrv1: mapred-site.xml) property for every daemon and "
                         "client; repeat")
    up.add_argument("--map-slots", type=_count(0), metavar="M",
                    help="with --mrv1: map slots per TaskTracker (default 2)")
    up.add_argument("--reduce-slots", type=_count(0), metavar="R",
                    help="with --mrv1: reduce slots per TaskTracker (default 2)")
    up.add_argument("--with-shim", action="store_true",
                    help="put the shim jar on the RM's classpath (implied by the shim scheduler)")
    up.add_argument("--no-build", action="store_true",
                    help="use the shim jar already in java-shim/target instead of running mvn package")
    up.add_argument("--java-home", metavar="JDK", help="the JDK to run Hadoop (default $JAVA_HOME, else java on PATH)")
    up.add_argument("--timeout", type=float, default=START_TIMEOUT, metavar="S",
                    help=f"start-up timeout (default {START_TIMEOUT:.0f})")
    up.set_defaults(func=cmd_up)

    st = with_dir(csub.add_parser("status", help="daemons, nodes and apps; exit 1 unless running"))
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=cmd_status)

    dn = with_dir(csub.add_parser("down", help="stop every daemon and container (idempotent)"))
    dn.add_argument("--timeout", type=float, default=30.0, metavar="S",
                    help="seconds between SIGTERM and SIGKILL (default 30)")
    dn.set_defaults(func=cmd_down)

    for name, says in (("restart-rm", "restart the ResourceManager as it was: its running containers keep "
                                      "running and it recovers its apps from its state store (on an MRv1 "
                                      "cluster: as restart-jt)"),
                       ("restart-jt", "restart the JobTracker and its TaskTrackers as they were (Hadoop 1.2.1 "
                                      "keeps no running job across it; on a YARN cluster: as restart-rm)")):
        rs = with_dir(csub.add_parser(
            name, help=says,
            description="Stops the master (SIGTERM; --kill: SIGKILL, as a crash) and starts it again with the "
                        "same ports, configuration and state store; returns once every worker has joined it "
                        "again. A `slotwise serve` that was registered registers with the new one by itself. "
                        "Both names work on either kind of cluster. See docs/local-cluster.md."))
        rs.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM: a crash")
        rs.set_defaults(func=cmd_restart_master)

    sm = with_dir(csub.add_parser(
        "submit", help="run a MapReduce example (pi, sleep, wordcount...) and wait; exit 0 if it succeeded",
        usage="slotwise cluster submit [--mrv1] --queue NAME [--user NAME] [--dir PATH] [--server HOST:PORT] "
              "[--json] -- PROGRAM [ARGS...]",
        description="Prints, once the master has the job, the queue it went to and the placement rule that put "
                    "it there (asked of the running `slotwise serve`, --server), and at the end how it ended: "
                    "SUCCEEDED, FAILED with the master's diagnostics, or REJECTED with the policy's reason. "
                    "The job client's own output goes to stderr (-q: nowhere). On an MRv1 cluster the "
                    "programs are hadoop-examples 1.2.1's (pi, sleep, wordcount, randomwriter...), the queue "
                    "is the job's mapred.fairscheduler.pool, and the job runs in its own directory under "
                    "PATH/jobs (relative paths resolve there)."),
        mrv1_help="expect an MRv1 cluster (implied by its state; an error against a YARN cluster)")
    sm.add_argument("--queue", "--pool", dest="queue", required=True, metavar="NAME",
                    help="the queue to submit to (--pool: its old name, kept)")
    sm.add_argument("--user", metavar="NAME",
                    help="submit as this user (HADOOP_USER_NAME; on MRv1 the job client runs as NAME)")
    sm.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds")
    sm.add_argument("-q", "--quiet", action="store_true", help="do not echo the job client's output")
    sm.add_argument("--json", action="store_true", help="print the result as JSON (the placement lines go to stderr)")
    add_server(sm, "the policy server to ask where the job went and why")
    sm.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS",
                    help="pi 2 10 | sleep -m 2 -r 1 -mt 500 -rt 500 | wordcount IN OUT | my.jar ...")
    sm.set_defaults(func=cmd_submit)

    yn = with_dir(csub.add_parser(
        "yarn", help=f"run the yarn CLI ({', '.join(YARN_COMMANDS)}) against the cluster",
        usage="slotwise cluster yarn [--user NAME] [--dir PATH] -- COMMAND [ARGS...]",
        description="The yarn client, configured for this cluster, e.g. "
                    "`slotwise cluster yarn -- queue -status root.prod` or "
                    "`slotwise cluster yarn -- application -list -appStates ALL`."), mrv1_help=None)
    yn.add_argument("--user", metavar="NAME", help="run as this user (HADOOP_USER_NAME)")
    yn.add_argument("--timeout", type=float, default=120.0, metavar="S", help="give up after S seconds (default 120)")
    yn.add_argument("args", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                    help="application -list | queue -status root.prod | node -list | ...")
    yn.set_defaults(func=cmd_yarn)
