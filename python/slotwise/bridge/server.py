"""``slotwise serve``: register with the shim's gateway inside the
ResourceManager and answer its calls until stopped.

The gateway's port and token come from files the shim wrote (0600).  Each
registration brings a fresh callback port and token of its own, so a secret
the shim sends to Python's callback port is worth nothing once this process
is gone.  The server polls the shim's status every second: that is its
liveness check, how it learns that the RM schedules without Python, and how
it notices that another server took over.  A clean exit unregisters and
closes only this end; the RM's gateway stays up for the next server.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .. import protocol as wire
from ..core import PolicyCore
from ..protocol import ProtocolError
from ..secretfile import read_secret

log = logging.getLogger("slotwise.serve")

POLL_SECONDS = 1.0
STANDBY_RETRY_SECONDS = 0.2


class GatewayUnavailable(Exception):
    pass


class RegistrationRefused(Exception):
    """Another policy server holds the ResourceManager (or the shim speaks
    another protocol version)."""


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


def gateway_status(info_file: str, token_file: str) -> dict:
    """The shim's link status (``ShimStatus``), read through its gateway as an
    operator's tool would: is a policy registered, does the RM schedule
    without Python, the counters.  Raises GatewayUnavailable."""
    from py4j.java_gateway import GatewayParameters, JavaGateway

    info = read_gateway_info(info_file, token_file)
    gw = JavaGateway(gateway_parameters=GatewayParameters(address="127.0.0.1", port=info.port,
                                                          auth_token=info.token, read_timeout=10))
    try:
        return wire.to_builtins(wire.decode("ShimStatus", gw.entry_point.status("{}")))
    except ProtocolError:
        raise
    except Exception as e:
        raise GatewayUnavailable(f"the gateway on 127.0.0.1:{info.port} did not answer: {e}") from e
    finally:
        gw.close()


class _Callback:
    """What Java sees as org.slotwise.shim.PolicyServer: one JSON document
    in, one out, per call."""

    def __init__(self, core: PolicyCore) -> None:
        self.heartbeat = core.heartbeat
        self.update = core.update
        self.place = core.place
        self.move = core.move

    def ping(self, _payload):
        return wire.encode(wire.Pong(pid=os.getpid()))

    class Java:
        implements = ["org.slotwise.shim.PolicyServer"]


def describe(holder) -> str:
    if holder is None:
        return "another policy server"
    return (f"slotwise serve pid {holder.pid} on {holder.host} (allocations {holder.allocations}, "
            f"since {time.strftime('%H:%M:%S', time.localtime(holder.started_ms / 1000))})")


def preemption_setting(shim, override: bool | None) -> tuple[bool, str]:
    """Whether Python preempts for this master, and what said so: serve
    --preemption when given, else the master's own switch as its shim
    reported it (off unless set, as in Hadoop)."""
    if override is not None:
        return bool(override), "serve --preemption"
    return bool(shim.preemption), ("mapred.fairscheduler.preemption" if shim.kind == "mrv1"
                                   else "yarn.scheduler.fair.preemption")


class PolicyServer:
    """Keeps one PolicyCore registered with the ResourceManager's shim."""

    def __init__(self, core: PolicyCore, info_file: str, token_file: str, allocations: str = "",
                 takeover: bool = False, cluster_dir: str | None = None, preemption: bool | None = None,
                 rm_web: str | None = None, web: str | None = None) -> None:
        self.core = core
        #: The RM's web address (serve --rm-web), for its HA state while there is no gateway.
        self.rm_web = rm_web.rstrip("/") if rm_web else None
        #: serve --preemption; None: as the master's configuration says.
        self.preemption = preemption
        self.info_file = info_file
        #: The local cluster the gateway files belong to ("" for the default
        #: one), or None for another RM: only for saying why there is no gateway.
        self.cluster_dir = cluster_dir
        self.token_file = token_file
        self.takeover = takeover
        self.gateway = None
        self.session: str | None = None
        self.registrations = 0
        self.server_info = wire.ServerInfo(pid=os.getpid(), host=socket.gethostname(), allocations=allocations,
                                           started_ms=int(time.time() * 1000), version=__version__,
                                           web=web)
        self._state: dict = {"connected": False, "registered": False, "in_fallback": False, "ha_state": None}
        #: Tries to reach the master's gateway that failed, since start (status: ``connect_failures``).
        self.connect_failures = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    @property
    def master(self) -> str:
        """The master's name in messages."""
        return "JobTracker" if getattr(self.core, "kind", None) == "mrv1" else "ResourceManager"

    # ----------------------------------------------------------- the link
    def connect(self) -> None:
        """Open the gateway and register; RegistrationRefused if another
        live server holds the RM."""
        from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway

        info = read_gateway_info(self.info_file, self.token_file)
        callback_token = secrets.token_hex(32)
        gateway = JavaGateway(
            gateway_parameters=GatewayParameters(address="127.0.0.1", port=info.port, auth_token=info.token,
                                                 auto_convert=False, eager_load=True, read_timeout=10),
            callback_server_parameters=CallbackServerParameters(address="127.0.0.1", port=0,
                                                                auth_token=callback_token, daemonize=True,
                                                                daemonize_connections=True),
        )
        try:
            port = gateway.get_callback_server().get_listening_port()
            request = wire.Register(protocol=wire.VERSION, callback_port=port, callback_token=callback_token,
                                    takeover=self.takeover, server=self.server_info)
            answer = wire.decode("Registered", gateway.entry_point.register(_Callback(self.core),
                                                                            wire.encode(request)))
        except BaseException:
            _close(gateway)
            raise
        if answer.refused is not None:
            _close(gateway)
            raise RegistrationRefused(answer.refused)
        if answer.shim.kind != self.core.kind:
            try:
                gateway.entry_point.unregister(wire.encode(wire.Unregister(session=answer.session)))
            finally:
                _close(gateway)
            raise RegistrationRefused(
                f"the shim at {self.info_file} is a {answer.shim.kind} shim, but this server decides for "
                f"{self.core.kind} (the allocation file's format, --mrv1 and the local cluster's kind decide"
                + ("; start it with --mrv1)" if answer.shim.kind == "mrv1" else ")"))
        mrv1 = answer.shim.kind == "mrv1"
        preemption, said_by = preemption_setting(answer.shim, self.preemption)
        self.core.set_preemption(preemption)
        self.gateway = gateway
        self.session = answer.session
        self.registrations += 1
        self.takeover = False  # only the first registration may push another server out
        with self._lock:
            self._state = {"connected": True, "registered": True, "in_fallback": False, "ha_state":
                           "active" if self.rm_web else None, "shim": answer.shim.version,
                           "deadline_ms": answer.shim.deadline_ms, "registered_at": time.time(),
                           "preemption": preemption, "preemption_from": said_by}
        self.core.log.write("register", port=info.port, session=self.session, shim=answer.shim.version,
                            deadline_ms=answer.shim.deadline_ms, pid=os.getpid(), callback_port=port,
                            preemption=preemption, preemption_from=said_by)
        log.info("registered with the %s's gateway on 127.0.0.1:%d (shim %s, deadline %d ms); preemption %s (%s)",
                 "JobTracker" if mrv1 else "ResourceManager", info.port,
                 answer.shim.version, answer.shim.deadline_ms, "on" if preemption else "off", said_by)

    def poll(self) -> str:
        """Ask the shim how things stand: "ok", "dropped" (the shim let this
        session go: register again), "replaced" (another server holds the
        RM) or "lost" (no gateway)."""
        try:
            text = self.gateway.entry_point.status(wire.encode(wire.StatusRequest(session=self.session)))
        except Exception as e:  # a lost connection, a restarted RM
            log.info("status call failed: %s", " ".join(str(e).split())[:300])
            return "lost"
        try:
            st = wire.decode("ShimStatus", text)
        except ProtocolError as e:  # the link works; its report does not bind (a shim of another build?)
            if str(e) != self._state.get("status_error"):
                log.error("the shim's status does not match the protocol: %s", e)
            self._state["status_error"] = str(e)
            return "ok"
        with self._lock:
            before = self._state.get("in_fallback")
            self._state.update(registered=st.registered, in_fallback=st.in_fallback, reason=st.reason,
                               since=None if st.since_ms is None else st.since_ms / 1000.0,
                               episode_heartbeats=st.episode_heartbeats, heartbeats=st.heartbeats,
                               fallback_heartbeats=st.fallback_heartbeats, failures=st.failures,
                               holder=None if st.holder is None else wire.to_builtins(st.holder))
        if st.in_fallback and not before:
            log.warning("the %s schedules without Python (its FIFO) since %s: %s", self.master,
                        time.strftime("%H:%M:%S", time.localtime((st.since_ms or 0) / 1000)), st.reason)
        elif before and not st.in_fallback:
            log.info("Python decides again")
        if st.registered:
            return "ok"
        if st.holder is not None and st.holder.pid != self.server_info.pid:
            return "replaced"
        return "dropped"

    def status(self) -> dict:
        with self._lock:
            return {**self._state, "connect_failures": self.connect_failures}

    def unregister(self) -> None:
        if self.gateway is not None and self.session is not None:
            try:
                self.gateway.entry_point.unregister(wire.encode(wire.Unregister(session=self.session)))
                self.core.log.write("unregister", session=self.session)
                log.info("unregistered from the %s", self.master)
            except Exception as e:  # the RM is gone already
                log.debug("unregister failed: %s", e)
        self.session = None

    def close(self) -> None:
        """Close this end only: never the RM's gateway."""
        if self.gateway is not None:
            _close(self.gateway)
            self.gateway = None
        with self._lock:
            if self._state.get("connected"):
                self._state["lost_at"] = time.time()  # the console's "last known state, as of"
            self._state.update(connected=False, registered=False)

    def run(self, retry_seconds: float = 1.0) -> None:
        """Serve until stop(): register, poll, register again when dropped or
        when the RM comes back.  Raises RegistrationRefused when another
        server holds the RM (at start, or by taking it over later)."""
        waiting_logged = None
        try:
            while not self._stop.is_set():
                if self.gateway is None:
                    try:
                        self.connect()
                        waiting_logged = None
                    except RegistrationRefused:
                        raise
                    except Exception as e:
                        standby = self.ha_state() == "standby"
                        why = ("it is the standby of an HA pair: the active one's policy server decides, and this "
                               "one registers when it turns active") if standby else self.why_waiting(e)
                        with self._lock:
                            self._state["waiting"] = why  # for the console's banner
                            self.connect_failures += 1
                        if why != waiting_logged:  # again whenever the reason changes
                            log.log(logging.INFO if standby else logging.WARNING, "waiting for the %s's gateway: %s",
                                    self.master, why)
                            waiting_logged = why
                        # A standby may turn active at any moment: look again soon.
                        self._stop.wait(STANDBY_RETRY_SECONDS if standby else retry_seconds)
                        continue
                self._stop.wait(POLL_SECONDS)
                if self._stop.is_set():
                    break
                # The engine's objects live long: keep them out of the cyclic
                # collector's full passes, which would otherwise scan them all
                # (about 150 ms at 10,000 apps) inside some call's deadline.
                gc.freeze()
                state = self.poll()
                if state == "ok":
                    continue
                if state == "replaced":
                    holder = self.status().get("holder") or {}
                    self.core.log.write("replaced", by=holder)
                    raise RegistrationRefused(f"replaced by another policy server: "
                                              f"{describe(wire.convert('ServerInfo', holder) if holder else None)}")
                if state == "dropped":
                    log.warning("the %s let this server go (calls to Python failed); registering again", self.master)
                else:
                    log.warning("lost the gateway; will register again when the %s is back", self.master)
                self.core.log.write("disconnect", why=state)
                self.close()
        finally:
            if self._stop.is_set():
                self.unregister()
            self.close()

    def stop(self) -> None:
        self._stop.set()

    def ha_state(self) -> str | None:
        """The RM's HA state (active, standby) from its web address, kept for
        status; None without --rm-web, when HA is off, or when it does not answer."""
        state = None
        if self.rm_web:
            try:
                with urllib.request.urlopen(f"{self.rm_web}/ws/v1/cluster/info", timeout=2) as r:
                    info = json.load(r).get("clusterInfo") or {}
                if info.get("haState") in ("ACTIVE", "STANDBY") and info.get("haZooKeeperConnectionState") \
                        not in (None, "ResourceManager HA is not enabled."):
                    state = info["haState"].lower()
            except (OSError, ValueError, AttributeError):
                pass
        with self._lock:
            self._state["ha_state"] = state
        return state

    def why_waiting(self, error: Exception) -> str:
        """Why there is no gateway to register with, in words an operator can
        act on: no cluster, a ResourceManager that runs another scheduler or
        is down, or the connection error itself."""
        if not os.path.exists(self.info_file):
            if self.cluster_dir is not None:
                return _why_local(self.cluster_dir, self.info_file, self.master)
            setting = ("mapred.jobtracker.taskScheduler=org.apache.hadoop.mapred.SlotwiseTaskScheduler"
                       if self.master == "JobTracker" else
                       "yarn.resourcemanager.scheduler.class=org.slotwise.shim.SlotwiseScheduler")
            return (f"no gateway file {self.info_file}: is the {self.master} running with {setting} "
                    f"(and slotwise.gateway.info-file set to this path)?")
        try:
            with open(self.info_file, encoding="utf-8") as f:
                info = json.load(f)
            pid, ns = int(info.get("pid", 0)), str(info.get("pid_ns") or "")
        except (OSError, ValueError, AttributeError, TypeError):
            pid, ns = 0, ""
        if pid and ns and ns != _pid_namespace():
            pid = 0  # the RM's pid is another namespace's (a container beside ours): not ours to look up
        if pid and not _pid_alive(pid):
            return (f"{self.info_file} names a {self.master} (pid {pid}) that is no longer running; "
                    f"waiting for it to start again")
        return " ".join(str(error).split())[:300]


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _why_local(cluster_dir: str, info_file: str, master: str = "ResourceManager") -> str:
    """The local cluster's side of why_waiting."""
    from ..localcluster import LocalCluster
    from ..localcluster.config import SHIM_SCHEDULER, scheduler_name

    cluster = LocalCluster(cluster_dir or None)
    state = cluster.state
    down = f"the local cluster in {cluster.dir} is down: start it with `slotwise cluster up`"
    if state is None:
        # `cluster down` removes the state file and keeps the directory (its
        # tag, logs): still a cluster, one that is down, as said a moment before.
        return down if cluster.layout.tag.exists() else \
            f"no local cluster in {cluster.dir}: start one with `slotwise cluster up`"
    rm = next((d for d in state.daemons if d.role in ("resourcemanager", "jobtracker")), None)
    if rm is None or not cluster.alive(rm):
        return down
    if state.scheduler != SHIM_SCHEDULER:
        return (f"the local cluster's ResourceManager runs the {scheduler_name(state.scheduler)} scheduler, not "
                f"Slotwise: restart it with `slotwise cluster down && slotwise cluster up` (Slotwise is the default)")
    return f"the {master} (pid {rm.pid}) has not written {info_file} yet; its log: {rm.log}"


def _close(gateway) -> None:
    """Close connections and the callback server; JavaGateway.shutdown()
    would also ask the RM to stop its gateway."""
    try:
        gateway.close(keep_callback_server=True)
    except Exception:
        pass
    try:
        gateway.shutdown_callback_server()
    except Exception:
        pass


class RMControl:
    """Admin actions carried out by the master (ResourceManager or JobTracker), through its gateway."""

    def __init__(self, server: "PolicyServer") -> None:
        self.server = server

    def connected(self) -> bool:
        return self.server.gateway is not None

    def seen(self) -> bool:
        """Has an RM ever registered this policy?  Then a change made while
        it is away would be undone by its resync."""
        return self.server.registrations > 0

    def status(self) -> dict:
        return self.server.status()

    def _call(self, fn, kind: str) -> dict:
        gateway = self.server.gateway
        if gateway is None:
            return {"error": f"no {self.server.master} connected"}
        try:
            return wire.to_builtins(wire.decode(kind, fn(gateway.entry_point)))
        except Exception as e:  # a lost connection, an old shim
            return {"error": f"the {self.server.master}'s gateway failed: {e}"}

    def move(self, app_id: str, queue: str) -> dict:
        msg = wire.encode(wire.MoveRequest(app=app_id, queue=queue))
        return self._call(lambda ep: ep.moveApplication(msg), "MoveAnswer")

    def priority(self, app_id: str, priority: int) -> dict:
        msg = wire.encode(wire.PriorityRequest(app=app_id, priority=int(priority)))
        return self._call(lambda ep: ep.updateApplicationPriority(msg), "PriorityAnswer")


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

    from ..admin import AdminToken
    from ..config import ConfigErrors
    from ..config.watcher import load_with_status
    from ..eventlog import EventLog
    from ..settings import EngineSettings

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
            from ..policies import known_policy_names

            if args.root_policy.lower() not in known_policy_names():
                raise ValueError(f"--root-policy: unknown policy {args.root_policy!r} "
                                 f"(known: {', '.join(known_policy_names())})")
        for flag, v in (("--node-locality-delay", args.node_locality_delay),
                        ("--rack-locality-delay", args.rack_locality_delay)):
            if v is not None and not v >= 0:
                raise ValueError(f"{flag} must be 0 or more seconds, not {v:g}")
        settings = EngineSettings(heartbeat_interval=args.heartbeat_interval, share_rule=args.share_rule,
                                  root_policy=args.root_policy, node_locality_delay=args.node_locality_delay,
                                  rack_locality_delay=args.rack_locality_delay,
                                  # until a master says otherwise at registration: Hadoop's default
                                  preemption=args.preemption == "on")
        services, dp = market_services(args)
        services["market"].follow_config(config, args.root_policy)  # DP accounts from the file (issue 25)
    except ValueError as e:
        print(f"slotwise serve: {e}", file=sys.stderr)
        return 2
    event_log = EventLog(args.event_log) if args.event_log else EventLog()
    mrv1 = args.mrv1 or config.format == "mrv1" or (local is not None and local_cluster_kind(args.cluster_dir) == "mrv1")
    core = PolicyCore(config, settings, event_log=event_log, record_inputs=args.record, config_text=status.text,
                      services=services, kind="mrv1" if mrv1 else "yarn")
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

    from ..admin import SchedulerService
    from ..config.watcher import ConfigWatcher
    from ..metrics import Metrics
    from ..web.app import create_app

    rm = RMControl(server)
    metrics = Metrics(core_ref=lambda: core, status_ref=lambda: status, link_ref=lambda: rm)
    core.stats = metrics

    def reloaded(cfg, text):
        core.set_config(cfg, text)
        services["market"].follow_config(cfg, args.root_policy)  # DP accounts follow the file (issue 25)
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
                http = start_http(create_app(SchedulerService(core, status, rm), token, metrics, dp=dp), host, port,
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
    """--dp-store, else beside the event log, else in the user's state directory."""
    if args.dp_store:
        return args.dp_store
    if args.event_log:
        stem = os.path.splitext(os.path.abspath(args.event_log))[0]
        return stem + "-market.sqlite"
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(state, "slotwise", "market.sqlite")


def market_services(args):
    """The Dynamic Priority market every engine of this server pays into
    (SQLite, made on first use) and its API; ValueError on a bad ACL or setting."""
    from ..market import Market, MarketSettings, SqliteStore
    from ..market.acl import Acl
    from ..market.api import DpApi

    msettings = MarketSettings(interval=args.dp_interval, preemption=args.dp_preemption == "on",
                               grace=args.dp_grace)
    market = Market(msettings, SqliteStore(market_store_path(args), lazy=True))
    services = {"market": market}
    from ..policies.hopper import HopperSettings

    services["hopper"] = HopperSettings(beta=args.hopper_beta, epsilon=args.hopper_epsilon)
    acl = None
    if args.dp_acl:
        acl = services["dp_acl"] = Acl(args.dp_acl)
    return services, DpApi(market, acl, window_s=args.dp_window)


def local_cluster_kind(cluster_dir: str | None = None) -> str:
    """"yarn" or "mrv1": what ``slotwise cluster up`` started there ("yarn" if nothing)."""
    from ..localcluster import LocalCluster

    state = LocalCluster(cluster_dir).state
    return getattr(state, "kind", "yarn") if state else "yarn"


def local_gateway_files(cluster_dir: str | None = None) -> tuple[str, str]:
    """The gateway files of the local cluster (``slotwise cluster up``): the
    ResourceManager's, or the JobTracker's on an MRv1 cluster."""
    from ..localcluster import ClusterError, LocalCluster

    cluster = LocalCluster(cluster_dir)
    master = "rm"
    if local_cluster_kind(cluster_dir) == "mrv1":
        from ..localcluster.mrv1 import Mrv1Cluster

        cluster, master = Mrv1Cluster(cluster_dir), "jt"
    try:
        info = Path(cluster.gateway_info_file)
    except ClusterError:  # not started yet: where it will write them
        info = cluster.dir / master / "tmp" / "slotwise" / "gateway.json"
    return str(info), str(info.with_name("gateway.token"))


def add_serve_parser(sub) -> None:
    from ..cliargs import alias
    from ..settings import SHARE_RULE_CHOICES, SHARE_RULE_HELP

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
    s.add_argument("--share-rule", choices=SHARE_RULE_CHOICES, default="auto", help=SHARE_RULE_HELP)
    s.add_argument("--heartbeat-interval", type=float, default=1.0, metavar="S",
                   help="NodeManager heartbeat interval, seconds (sets the default locality delays)")
    s.add_argument("--node-locality-delay", type=float, metavar="S",
                   help="delay scheduling: how long an app waits for a node-local container before it takes "
                        "a rack-local one (default 1.5x the heartbeat interval; 0: no wait, as YARN's "
                        "FairScheduler by default)")
    s.add_argument("--rack-locality-delay", type=float, metavar="S",
                   help="then how long it waits for a rack-local container before it takes any "
                        "(default 1.5x the heartbeat interval; 0: no wait)")
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
                         "~/.local/state/slotwise/market.sqlite); made on first use, mode 0600")
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
