"""The Py4J link: register with the shim's gateway inside the
ResourceManager (or JobTracker) and answer its calls until stopped
(``slotwise serve``'s start-up is ``slotwise.serve``).

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
import threading
import time
import urllib.request
from dataclasses import dataclass

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
        if st.in_fallback and not before:  # what happened: a failed call is no FIFO heartbeat
            since = time.strftime("%H:%M:%S", time.localtime((st.since_ms or 0) / 1000))
            if st.episode_heartbeats:
                log.warning("the %s's FIFO has scheduled %d heartbeat(s) without Python since %s: %s", self.master,
                            st.episode_heartbeats, since, st.reason)
            else:
                log.warning("a call from the %s to Python failed at %s (%s); no heartbeat has gone to its FIFO "
                            "so far", self.master, since, st.reason)
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
