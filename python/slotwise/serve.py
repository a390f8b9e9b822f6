"""``slotwise serve``'s start-up: its flags, the allocation file and its
watcher, the Dynamic Priority market and Hopper settings every engine
shares, the web server (UI, REST API, /metrics) on its port, signals, and
the link to the master (``bridge.server``, which keeps only the Py4J end).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path

from .bridge.server import PolicyServer, RegistrationRefused, RMControl, log
from .core import PolicyCore

DEFAULT_HTTP = "127.0.0.1:9797"


def _not_py4j(record: logging.LogRecord) -> bool:
    """Py4J's own records, even those it sends to the root logger: serve says
    in its own words what a lost connection means."""
    return "/py4j/" not in record.pathname.replace("\\", "/")


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--http: expected HOST:PORT, got {text!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)


#: How long `serve --takeover` waits for the server it replaced to let go of the web port.
TAKEOVER_BIND_WAIT = 30.0


def listen_socket(host: str, port: int, wait_free: float = 0.0, on_wait=None,
                  cancelled=lambda: False) -> socket.socket:
    """A socket listening on host:port.  While another process holds the
    port, try again every 0.2 s for up to ``wait_free`` seconds (``on_wait``
    is called once, when the waiting starts) unless ``cancelled()``; then
    OSError, in words."""
    import errno

    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn binds: a name is an IPv4 address
    deadline = time.monotonic() + wait_free
    while True:
        sock = socket.socket(family, socket.SOCK_STREAM)
        # Lets a new server bind over connections of the old one still in
        # TIME_WAIT; never over a live listener (Linux refuses that).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(2048)
            return sock
        except socket.gaierror as e:
            sock.close()
            raise OSError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        except OSError as e:
            sock.close()
            if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline or cancelled():
                held = (" (another process holds it: a running `slotwise serve`? --http HOST:PORT picks another port)"
                        if e.errno == errno.EADDRINUSE else "")
                waited = f" after waiting {wait_free:.0f} s" if wait_free and e.errno == errno.EADDRINUSE else ""
                raise OSError(f"cannot listen on {host}:{port}{waited}: {e.strerror or e}{held}") from None
            if on_wait is not None:
                on_wait()
                on_wait = None
            time.sleep(0.2)


def start_http(app, host: str, port: int, wait_free: float = 0.0, on_wait=None, cancelled=lambda: False):
    """uvicorn on its own thread, on a socket bound here (``listen_socket``:
    a port in use is said at once, or waited for); returns the server
    (``should_exit`` stops it, ``thread`` is its thread)."""
    import uvicorn

    sock = listen_socket(host, port, wait_free, on_wait, cancelled)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="slotwise-http", daemon=True)
    server.thread = thread
    thread.start()
    # Only a starved machine takes long.
    deadline = time.monotonic() + 120
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        sock.close()
        raise OSError(f"cannot serve on {host}:{port}: the web server did not start")
    return server


def serve_main(args) -> int:
    """Entry of ``slotwise serve``.  Registers first and builds the web layer
    while the RM already has its policy: a restarted server decides again
    within a couple of seconds."""
    import signal

    from .admin import AdminToken
    from .config import ConfigErrors
    from .config.watcher import load_with_status
    from .eventlog import EventLog
    from .policies.dynamic_priority import follow_config
    from .settings import EngineSettings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.CRITICAL)  # per call at INFO; a dead peer at ERROR: ours to report
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_py4j)  # py4j logs a broken connection's traceback on the root logger
    try:
        config, status = load_with_status(args.allocations)
    except ConfigErrors as e:
        for err in e.errors:
            print(err, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{args.allocations}: cannot read: {e.strerror or e}", file=sys.stderr)
        return 1
    try:
        host, port = parse_listen(args.http)
        token = AdminToken.from_file(os.path.expanduser(args.admin_token_file))
    except (ValueError, OSError) as e:
        print(f"slotwise serve: {e}", file=sys.stderr)
        return 2
    info_file, token_file = args.gateway_info, args.token_file
    local = None
    if not info_file:
        info_file, default_token = local_gateway_files(args.cluster_dir)
        token_file = token_file or default_token
        local = args.cluster_dir or ""
    elif not token_file:
        token_file = os.path.join(os.path.dirname(info_file), "gateway.token")
    try:
        if args.root_policy:
            from .policies import known_policy_names

            if args.root_policy.lower() not in known_policy_names():
                raise ValueError(f"--root-policy: unknown policy {args.root_policy!r} "
                                 f"(known: {', '.join(known_policy_names())})")
        for flag, v in (("--node-locality-delay", args.node_locality_delay),
                        ("--rack-locality-delay", args.rack_locality_delay)):
            if v is not None and not v >= 0:
                raise ValueError(f"{flag} must be 0 or more seconds, not {v:g}")
        if args.max_assign is not None and not 0 <= args.max_assign <= 1000:
            raise ValueError(f"--max-assign must be 0 (no cap) to 1000 containers, not {args.max_assign}")
        settings = EngineSettings(heartbeat_interval=args.heartbeat_interval, share_rule=args.share_rule,
                                  max_assign=args.max_assign or -1,
                                  root_policy=args.root_policy, node_locality_delay=args.node_locality_delay,
                                  rack_locality_delay=args.rack_locality_delay,
                                  forecast_arrivals=args.forecast_arrivals == "on",
                                  # until a master says otherwise at registration: Hadoop's default
                                  preemption=args.preemption == "on")
        services, dp = market_services(args)
        follow_config(services["market"], config, args.root_policy)  # DP accounts from the file (issue 25)
    except ValueError as e:
        print(f"slotwise serve: {e}", file=sys.stderr)
        return 2
    event_log = EventLog(args.event_log) if args.event_log else EventLog()
    mrv1 = args.mrv1 or config.format == "mrv1" or (local is not None and local_cluster_kind(args.cluster_dir) == "mrv1")
    core = PolicyCore(config, settings, event_log=event_log, record_inputs=args.record, config_text=status.text,
                      services=services, kind="mrv1" if mrv1 else "yarn")
    services["market"].guard = core._lock  # an operator's change falls between two engine calls
    server = PolicyServer(core, info_file, token_file, allocations=os.path.abspath(args.allocations),
                          takeover=args.takeover, cluster_dir=local,
                          preemption=None if args.preemption is None else args.preemption == "on",
                          rm_web=args.rm_web, web=local_url(host, port))
    outcome: dict = {}
    stopped = threading.Event()

    def serve() -> None:
        try:
            server.run()
        except RegistrationRefused as e:
            outcome["refused"] = str(e)
        except BaseException as e:  # never silently: the main thread reports it
            outcome["crashed"] = e
        finally:
            stopped.set()

    def on_signal(signum, _frame) -> None:
        outcome.setdefault("signal", signal.Signals(signum).name)
        server.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    link = threading.Thread(target=serve, name="slotwise-link", daemon=True)
    link.start()

    from .admin import SchedulerService
    from .config.watcher import ConfigWatcher
    from .metrics import Metrics
    from .web.app import create_app

    rm = RMControl(server)
    from .shadow_service import ShadowService

    shadow = ShadowService(core, os.path.abspath(args.allocations), event_log, poll=args.reload_poll,
                           log_path=os.path.abspath(args.event_log) if args.event_log else None)
    metrics = Metrics(core_ref=lambda: core, status_ref=lambda: status, link_ref=lambda: rm,
                      shadow_ref=lambda: shadow)
    core.stats = metrics
    if args.shadow:  # a bad candidate is logged (FILE:LINE: message) and watched until fixed
        shadow.watch(args.shadow)

    def reloaded(cfg, text):
        core.set_config(cfg, text)
        follow_config(services["market"], cfg, args.root_policy)  # DP accounts follow the file (issue 25)
        metrics.on_reload(True)

    def failed(errors):
        core.config_failed(errors)
        metrics.on_reload(False)

    watcher = None
    if not args.no_watch:
        watcher = ConfigWatcher(args.allocations, reloaded, status, poll=args.reload_poll, on_error=failed)
        watcher.start()
    http = None
    try:
        if not stopped.is_set():
            def waiting() -> None:
                log.info("%s:%d is in use (the server this one took over from lets go of it as it exits); waiting "
                         "up to %.0f s for it", host, port, TAKEOVER_BIND_WAIT)

            try:
                http = start_http(create_app(SchedulerService(core, status, rm), token, metrics, dp=dp,
                                             shadow=shadow), host, port,
                                  wait_free=TAKEOVER_BIND_WAIT if args.takeover else 0.0, on_wait=waiting,
                                  cancelled=stopped.is_set)
            except OSError as e:
                if not stopped.is_set():  # else stopped (or refused) while waiting for the port: said below
                    print(f"slotwise serve: {e}", file=sys.stderr)
                    server.stop()
                    link.join(15)
                    return 1
            if http is not None:
                log.info("serving %s (%s format, %d queues); web UI and API on http://%s:%d/ (admin token in %s); "
                         "gateway file %s", args.allocations, config.format, sum(1 for _ in config.root.walk()) - 1,
                         host, port, args.admin_token_file, info_file)
        while not stopped.wait(0.5):
            pass
        link.join(15)
    finally:
        if http is not None:  # let go of the web port before exiting: a server taking over waits for it
            http.should_exit = True
            http.thread.join(5)
        if watcher:
            watcher.stop()
        shadow.close()
        event_log.close()
    if "signal" in outcome and "crashed" not in outcome:  # a clean stop says so, and why
        log.info("serve stopped on %s%s", outcome["signal"], " (Ctrl-C)" if outcome["signal"] == "SIGINT" else "")
    if "refused" in outcome:
        print(f"slotwise serve: {outcome['refused']}", file=sys.stderr)
        return 3
    if "crashed" in outcome:
        raise outcome["crashed"]
    return 0


def local_url(host: str, port: int) -> str:
    """The web UI and API as the master's host reaches them (the gateway is
    loopback, so serve runs there): a wildcard address is reached on loopback."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1" if host != "::" else "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def market_store_path(args) -> str:
    """--dp-store, else beside the event log, else in the user's state
    directory under a name keyed to the allocation file (a hash of its
    absolute path): two serves of two files on one host never share a
    market by default."""
    if args.dp_store:
        return args.dp_store
    if args.event_log:
        stem = os.path.splitext(os.path.abspath(args.event_log))[0]
        return stem + "-market.sqlite"
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    key = hashlib.sha256(os.path.abspath(args.allocations).encode()).hexdigest()[:16]
    return os.path.join(state, "slotwise", f"market-{key}.sqlite")


def market_services(args):
    """The Dynamic Priority market every engine of this server pays into
    (SQLite, made on first use) and its API; ValueError on a bad ACL or setting."""
    from .market import Market, MarketSettings, SqliteStore
    from .market.acl import Acl
    from .market.api import DpApi

    msettings = MarketSettings(interval=args.dp_interval, preemption=args.dp_preemption == "on",
                               grace=args.dp_grace)
    market = Market(msettings, SqliteStore(market_store_path(args), lazy=True))
    services = {"market": market}
    from .policies.hopper import HopperSettings

    services["hopper"] = HopperSettings(beta=args.hopper_beta, epsilon=args.hopper_epsilon)
    acl = None
    if args.dp_acl:
        acl = services["dp_acl"] = Acl(args.dp_acl)
    return services, DpApi(market, acl, window_s=args.dp_window)


def local_cluster_kind(cluster_dir: str | None = None) -> str:
    """"yarn" or "mrv1": what ``slotwise cluster up`` started there ("yarn" if nothing)."""
    from .localcluster import LocalCluster

    state = LocalCluster(cluster_dir).state
    return getattr(state, "kind", "yarn") if state else "yarn"


def local_gateway_files(cluster_dir: str | None = None) -> tuple[str, str]:
    """The gateway files of the local cluster (``slotwise cluster up``): the
    ResourceManager's, or the JobTracker's on an MRv1 cluster."""
    from .localcluster import ClusterError, LocalCluster

    cluster = LocalCluster(cluster_dir)
    master = "rm"
    if local_cluster_kind(cluster_dir) == "mrv1":
        from .localcluster.mrv1 import Mrv1Cluster

        cluster, master = Mrv1Cluster(cluster_dir), "jt"
    try:
        info = Path(cluster.gateway_info_file)
    except ClusterError:  # not started yet: where it will write them
        info = cluster.dir / master / "tmp" / "slotwise" / "gateway.json"
    return str(info), str(info.with_name("gateway.token"))


def add_serve_parser(sub) -> None:
    from .cliargs import alias
    from .settings import SHARE_RULE_CHOICES, SHARE_RULE_HELP

    s = sub.add_parser("serve", help="run the policy server for the ResourceManager's shim")
    s.add_argument("--allocations", required=True, metavar="FILE",
                   help="the allocation file (YARN's fair-scheduler.xml or an MRv1 pools file); "
                        "saved changes apply within seconds")
    s.add_argument("--event-log", metavar="FILE", help="append JSON-lines events here")
    s.add_argument("--record", action="store_true",
                   help="also log every call's message, so `slotwise replay` can re-run it exactly")
    s.add_argument("--dir", dest="cluster_dir", metavar="PATH",
                   help="the local cluster whose gateway to use (default: $SLOTWISE_CLUSTER_DIR, else run/cluster)")
    alias(s, "--cluster-dir", "cluster_dir", metavar="PATH")
    s.add_argument("--gateway-info", metavar="FILE", help="the shim's port file (default: the local cluster's)")
    s.add_argument("--token-file", metavar="FILE",
                   help="the shim's token file, mode 0600 (default: beside the port file)")
    s.add_argument("--rm-web", metavar="URL",
                   help="the ResourceManager's web address (e.g. http://127.0.0.1:8088): with RM HA, status, the UI "
                        "and /metrics say when it is the standby")
    s.add_argument("--mrv1", action="store_true",
                   help="decide for an MRv1 JobTracker (map and reduce slots); implied by an MRv1 pools file "
                        "or a local MRv1 cluster")
    s.add_argument("--takeover", action="store_true",
                   help="replace the policy server the ResourceManager has now, even if it is alive (on the same "
                        f"host: its web port is taken over once it exits, waited for up to {TAKEOVER_BIND_WAIT:.0f} s)")
    s.add_argument("--http", default=DEFAULT_HTTP, metavar="HOST:PORT",
                   help=f"where the web UI, REST API and /metrics listen (default {DEFAULT_HTTP}, loopback)")
    s.add_argument("--admin-token-file", default="~/.config/slotwise/admin.token", metavar="FILE",
                   help="the admin token (mode 0600), made on first start if missing")
    s.add_argument("--reload-poll", type=float, metavar="S",
                   help="watch the allocation file by polling every S seconds (no inotify)")
    s.add_argument("--no-watch", action="store_true", help="do not reload the allocation file")
    s.add_argument("--shadow", metavar="CANDIDATE.xml",
                   help="a candidate allocation file that decides beside the live one on the same heartbeats and "
                        "never acts, in a process of its own (watched like the live file; GET /api/v1/shadow "
                        "compares them)")
    s.add_argument("--share-rule", choices=SHARE_RULE_CHOICES, default="auto", help=SHARE_RULE_HELP)
    s.add_argument("--forecast-arrivals", choices=("on", "off"), default="on",
                   help="whether forecasts imagine apps still to arrive at each queue's rate of the last ten "
                        "minutes (default on: docs/results/forecast.md)")
    s.add_argument("--heartbeat-interval", type=float, default=1.0, metavar="S",
                   help="NodeManager heartbeat interval, seconds (sets the default locality delays)")
    s.add_argument("--node-locality-delay", type=float, metavar="S",
                   help="delay scheduling: how long an app waits for a node-local container before it takes "
                        "a rack-local one (default 1.5x the heartbeat interval; 0: no wait, as YARN's "
                        "FairScheduler by default)")
    s.add_argument("--rack-locality-delay", type=float, metavar="S",
                   help="then how long it waits for a rack-local container before it takes any "
                        "(default 1.5x the heartbeat interval; 0: no wait)")
    s.add_argument("--max-assign", type=int, metavar="N",
                   help="at most N containers (slots) per node per heartbeat (YARN's "
                        "yarn.scheduler.fair.maxassign; 1: one per heartbeat, as the FairScheduler's default "
                        "assignmultiple=false; default 0: as many as fit)")
    s.add_argument("--preemption", choices=("on", "off"),
                   help="preemption on or off, whatever the master's configuration says (default: as it says: "
                        "yarn.scheduler.fair.preemption or mapred.fairscheduler.preemption, off unless set, as in "
                        "Hadoop)")
    s.add_argument("--root-policy", metavar="NAME",
                   help="the root queue's policy whatever the file says (e.g. dynamic-priority for an MRv1 "
                        "pools file, whose root has no schedulingPolicy)")
    dp = s.add_argument_group("Dynamic Priority (a dynamic-priority queue; docs/dynamic-priority.md)")
    dp.add_argument("--dp-acl", metavar="FILE",
                    help="users, roles and keys for the signed API and for submitting to its queues "
                         "(lines USER ROLE KEY [QUEUE,...]; mode 0600; reloaded on change)")
    dp.add_argument("--dp-store", metavar="FILE",
                    help="the SQLite store of budgets and charges (default: beside the event log, else "
                         "~/.local/state/slotwise/market-HASH.sqlite, HASH of the allocation file's absolute "
                         "path); made on first use, mode 0600")
    dp.add_argument("--dp-interval", type=float, default=20.0, metavar="S",
                    help="the allocation interval, seconds (default 20)")
    dp.add_argument("--dp-preemption", choices=("on", "off"), default="on",
                    help="take back slots a queue no longer pays for (default on)")
    dp.add_argument("--dp-grace", type=float, default=60.0, metavar="S",
                    help="how long a queue may hold slots it does not pay for before they go (default 60)")
    dp.add_argument("--dp-window", type=float, default=300.0, metavar="S",
                    help="how far a signed request's timestamp may be from the server's clock (default 300)")
    hp = s.add_argument_group("Hopper (a queue with schedulingPolicy hopper; docs/hopper.md)")
    hp.add_argument("--hopper-beta", type=float, metavar="B",
                    help="the Pareto tail index of task times (default: estimated online from finished tasks)")
    hp.add_argument("--hopper-epsilon", type=float, default=0.1, metavar="E",
                    help="fairness: every app at least (1-E) x its equal share; 0 fair, 1 performance only "
                         "(default 0.1)")
    s.set_defaults(func=serve_main)
