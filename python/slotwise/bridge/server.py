"""``slotwise serve``: connect to the shim's gateway inside the
ResourceManager and answer its calls until stopped.

The gateway's port and token come from files the shim wrote (0600); the
token authenticates both directions.  If the RM goes away, the server waits
and registers again when it is back (the shim then sends a full resync).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass

from ..secretfile import read_secret
from .protocol import PolicyCore

log = logging.getLogger("slotwise.serve")


class GatewayUnavailable(Exception):
    pass


@dataclass
class GatewayInfo:
    port: int
    token: str


def read_gateway_info(info_file: str, token_file: str) -> GatewayInfo:
    """The port and token the shim published; refuses a token file others
    could read, since the token gives full control of the RM's JVM."""
    try:
        with open(info_file, encoding="utf-8") as f:
            port = int(json.load(f)["port"])
        token = read_secret(token_file, "token")
    except (OSError, ValueError, KeyError) as e:
        raise GatewayUnavailable(f"cannot read gateway info ({info_file}, {token_file}): {e}") from e
    if not token:
        raise GatewayUnavailable(f"{token_file}: empty token")
    return GatewayInfo(port, token)


class _Callback:
    """What Java sees as org.slotwise.shim.PolicyServer."""

    def __init__(self, core: PolicyCore) -> None:
        self.core = core

    def heartbeat(self, payload):
        return self.core.heartbeat(payload)

    def update(self, payload):
        return self.core.update(payload)

    def place(self, app):
        return self.core.place(app)

    def move(self, app_id, queue):
        return self.core.move(app_id, queue)

    class Java:
        implements = ["org.slotwise.shim.PolicyServer"]


class PolicyServer:
    def __init__(self, core: PolicyCore, info_file: str, token_file: str) -> None:
        self.core = core
        self.info_file = info_file
        self.token_file = token_file
        self.gateway = None
        self.registrations = 0
        self._stop = threading.Event()

    def connect(self) -> None:
        from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway

        info = read_gateway_info(self.info_file, self.token_file)
        gateway = JavaGateway(
            gateway_parameters=GatewayParameters(address="127.0.0.1", port=info.port, auth_token=info.token,
                                                 auto_convert=False, eager_load=True),
            callback_server_parameters=CallbackServerParameters(address="127.0.0.1", port=0,
                                                                auth_token=info.token, daemonize=True,
                                                                daemonize_connections=True),
        )
        try:
            port = gateway.get_callback_server().get_listening_port()
            server = gateway.java_gateway_server
            server.resetCallbackClient(server.getCallbackClient().getAddress(), port)
            gateway.entry_point.register(_Callback(self.core))
        except Exception:
            gateway.shutdown()
            raise
        self.gateway = gateway
        self.registrations += 1
        self.core.log.write("register", port=info.port)
        log.info("registered with the ResourceManager's gateway on 127.0.0.1:%d", info.port)

    def alive(self) -> bool:
        try:
            return self.gateway is not None and self.gateway.entry_point.ping() is not None
        except Exception:
            return False

    def close(self) -> None:
        if self.gateway is not None:
            try:
                self.gateway.shutdown()
            except Exception:
                pass
            self.gateway = None

    def run(self, retry_seconds: float = 2.0) -> None:
        """Serve until stop(): connect, watch the connection, reconnect."""
        waiting_logged = False
        while not self._stop.is_set():
            if self.gateway is None:
                try:
                    self.connect()
                    waiting_logged = False
                except Exception as e:
                    if not waiting_logged:
                        log.warning("waiting for the ResourceManager's gateway: %s", e)
                        waiting_logged = True
                    self.close()
                    self._stop.wait(retry_seconds)
                    continue
            if not self.alive():
                log.warning("lost the gateway; will register again when the ResourceManager is back")
                self.core.log.write("disconnect")
                self.close()
                continue
            self._stop.wait(retry_seconds)
        self.close()

    def stop(self) -> None:
        self._stop.set()


class RMControl:
    """Admin actions carried out by the ResourceManager, through its gateway."""

    def __init__(self, server: "PolicyServer") -> None:
        self.server = server

    def connected(self) -> bool:
        return self.server.gateway is not None

    def seen(self) -> bool:
        """Has an RM ever registered this policy?  Then a change made while
        it is away would be undone by its resync."""
        return self.server.registrations > 0

    def _call(self, fn) -> dict:
        gateway = self.server.gateway
        if gateway is None:
            return {"error": "no ResourceManager connected"}
        try:
            return json.loads(fn(gateway.entry_point))
        except Exception as e:  # a lost connection, an old shim
            return {"error": f"the ResourceManager's gateway failed: {e}"}

    def move(self, app_id: str, queue: str) -> dict:
        return self._call(lambda ep: ep.moveApplication(app_id, queue))

    def priority(self, app_id: str, priority: int) -> dict:
        return self._call(lambda ep: ep.updateApplicationPriority(app_id, int(priority)))


DEFAULT_HTTP = "127.0.0.1:9797"


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--http: expected HOST:PORT, got {text!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def start_http(app, host: str, port: int):
    """uvicorn on its own thread; returns the server (``should_exit`` stops it)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, name="slotwise-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        raise OSError(f"cannot listen on {host}:{port}")
    return server


def serve_main(args) -> int:
    """Entry of ``slotwise serve``."""
    import signal

    from ..admin import AdminToken, SchedulerService
    from ..config import ConfigErrors
    from ..config.watcher import ConfigWatcher, load_with_status
    from ..eventlog import EventLog
    from ..metrics import Metrics
    from ..settings import EngineSettings
    from ..web.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # py4j logs every call at INFO
    try:
        config, status = load_with_status(args.allocations)
    except ConfigErrors as e:
        for err in e.errors:
            print(err)
        return 1
    except OSError as e:
        print(f"{args.allocations}:0: cannot read: {e.strerror or e}")
        return 1
    try:
        host, port = parse_listen(args.http)
        token = AdminToken.from_file(os.path.expanduser(args.admin_token_file))
    except (ValueError, OSError) as e:
        print(f"slotwise serve: {e}", file=sys.stderr)
        return 2
    info_file, token_file = args.gateway_info, args.token_file
    if not info_file:
        info_file, default_token = local_gateway_files(args.cluster_dir)
        token_file = token_file or default_token
    elif not token_file:
        token_file = os.path.join(os.path.dirname(info_file), "gateway.token")
    settings = EngineSettings(heartbeat_interval=args.heartbeat_interval)
    event_log = EventLog(args.event_log) if args.event_log else EventLog()
    holder = {}
    metrics = Metrics(core_ref=lambda: holder.get("core"), status_ref=lambda: status)
    core = PolicyCore(config, settings, event_log=event_log, record_inputs=args.record, stats=metrics,
                      config_text=status.text)
    holder["core"] = core
    server = PolicyServer(core, info_file, token_file)

    def reloaded(cfg, text):
        core.set_config(cfg, text)
        metrics.on_reload(True)

    def failed(errors):
        core.config_failed(errors)
        metrics.on_reload(False)

    watcher = None
    if not args.no_watch:
        watcher = ConfigWatcher(args.allocations, reloaded, status, poll=args.reload_poll, on_error=failed)
        watcher.start()
    service = SchedulerService(core, status, RMControl(server))
    try:
        http = start_http(create_app(service, token, metrics), host, port)
    except OSError as e:
        print(f"slotwise serve: {e}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    signal.signal(signal.SIGINT, lambda *_: server.stop())
    log.info("serving %s (%s format, %d pools); web UI and API on http://%s:%d/ (admin token in %s); "
             "gateway file %s", args.allocations, config.format, sum(1 for _ in config.root.walk()) - 1,
             host, port, args.admin_token_file, info_file)
    try:
        server.run()
    finally:
        http.should_exit = True
        if watcher:
            watcher.stop()
        event_log.close()
    return 0


def local_gateway_files(cluster_dir: str | None = None) -> tuple[str, str]:
    """The gateway files of the local cluster (``slotwise cluster up``)."""
    from ..localcluster import ClusterError, LocalCluster

    cluster = LocalCluster(cluster_dir)
    try:
        info = cluster.gateway_info_file
    except ClusterError:  # not started yet: where it will write them
        info = cluster.dir / "rm" / "tmp" / "slotwise" / "gateway.json"
    return str(info), str(info.with_name("gateway.token"))


def add_serve_parser(sub) -> None:
    s = sub.add_parser("serve", help="run the policy server for the ResourceManager's shim")
    s.add_argument("--allocations", required=True, metavar="FILE")
    s.add_argument("--event-log", metavar="FILE", help="append JSON-lines events here")
    s.add_argument("--record", action="store_true",
                   help="also log every call's message, so `slotwise replay` can re-run it exactly")
    s.add_argument("--cluster-dir", help="the local cluster whose gateway to use (default: run/cluster)")
    s.add_argument("--gateway-info", help="the shim's port file (default: the local cluster's)")
    s.add_argument("--token-file", help="the shim's token file, mode 0600 (default: beside the port file)")
    s.add_argument("--http", default=DEFAULT_HTTP, metavar="HOST:PORT",
                   help=f"where the web UI, REST API and /metrics listen (default {DEFAULT_HTTP}, loopback)")
    s.add_argument("--admin-token-file", default="~/.config/slotwise/admin.token", metavar="FILE",
                   help="the admin token (mode 0600), made on first start if missing")
    s.add_argument("--reload-poll", type=float, metavar="S",
                   help="watch the allocation file by polling every S seconds (no inotify)")
    s.add_argument("--no-watch", action="store_true", help="do not reload the allocation file")
    s.add_argument("--heartbeat-interval", type=float, default=1.0,
                   help="NodeManager heartbeat interval, seconds (sets the default locality delays)")
    s.set_defaults(func=serve_main)
