"""A real web server on loopback around a PolicyCore with a few jobs, for the
API and UI tests (no ResourceManager: admin actions go to the engine)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest

from slotwise.admin import AdminToken, SchedulerService
from slotwise.core import PolicyCore
from slotwise.serve import start_http
from slotwise.clock import ManualClock
from slotwise.config.watcher import ConfigWatcher, load_with_status
from slotwise.localcluster.ports import free_ports
from slotwise.metrics import Metrics
from slotwise.settings import EngineSettings
from slotwise.web.app import create_app
from wiretools import app, node, payload, req

#: httpx's module functions wait 5 s by default; a loaded 2-core machine has
#: taken longer than that to build /openapi.json. The tests assert answers,
#: not speed, so every request made through ``httpx.get``/``post``/... in a
#: module that imports these tools waits up to a minute unless it says.
HTTP_TIMEOUT = 60.0


def _patient(call):
    def request(*args, **kwargs):
        kwargs.setdefault("timeout", HTTP_TIMEOUT)
        return call(*args, **kwargs)
    request.__wrapped__ = call
    return request


for _name in ("get", "post", "put", "patch", "delete", "request"):
    if not hasattr(getattr(httpx, _name), "__wrapped__"):
        setattr(httpx, _name, _patient(getattr(httpx, _name)))

ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
  <queue name="prod"><weight>2</weight><minResources>2048 mb, 2 vcores</minResources></queue>
  <queue name="research"/>
  <queue name="other"/>
</allocations>
"""
TOKEN = "test-admin-token-0123456789abcdef"


def free_port() -> int:
    return free_ports(1)[0]


def app_entry(app_id: str, user: str, queue: str, containers: int, prio: int = 0) -> dict:
    return app(app_id, queue, [req(0, 1024, 1, containers)], user=user, priority=prio, submit_ms=len(app_id))


class FakeRM:
    """The ResourceManager link as the service sees it, set by the test:
    never connected, unless a test says otherwise (admin actions then go to
    the engine)."""

    def __init__(self) -> None:
        self.state = {"connected": False, "registered": False, "in_fallback": False}
        self.was_seen = False

    def connected(self) -> bool:
        return self.state["connected"]

    def seen(self) -> bool:
        return self.was_seen

    def status(self) -> dict:
        return dict(self.state)

    def move(self, app_id, queue):
        return {"error": "not connected"}

    def priority(self, app_id, priority):
        return {"error": "not connected"}


@dataclass
class Running:
    core: PolicyCore
    service: SchedulerService
    metrics: Metrics
    url: str
    path: str
    server: object
    watcher: ConfigWatcher | None
    rm: FakeRM

    def heartbeat(self, node: str = "n1"):
        return self.core.handle_heartbeat(payload(node=node))

    def stop(self) -> None:
        self.server.should_exit = True
        if self.watcher:
            self.watcher.stop()


def start(tmp_path, watch: bool = False) -> Running:
    path = tmp_path / "allocations.xml"
    path.write_text(ALLOCATIONS)
    config, status = load_with_status(str(path))
    holder = {}
    metrics = Metrics(core_ref=lambda: holder.get("core"), status_ref=lambda: status,
                      link_ref=lambda: holder.get("rm"))
    core = PolicyCore(config, EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0),
                      ManualClock(100.0), stats=metrics)
    holder["core"] = core
    # Two nodes, three jobs; one heartbeat places some containers.
    core.handle_heartbeat(payload(
        nodes=[node("n1", "h1", "/r1", 4096, 4), node("n2", "h2", "/r1", 4096, 4)],
        apps=[app_entry("app_1", "alice", "root.research", 6), app_entry("app_2", "bob", "root.prod", 6),
              app_entry("app_3", "carol", "root.research", 2)],
        node="n1"))
    core.handle_update(payload())
    watcher = None
    if watch:
        watcher = ConfigWatcher(str(path), lambda cfg, text: core.set_config(cfg, text), status,
                                on_error=core.config_failed)
        watcher.start()
    rm = holder["rm"] = FakeRM()
    service = SchedulerService(core, status, rm)
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN), metrics, refresh_seconds=0.5), "127.0.0.1", port)
    return Running(core, service, metrics, f"http://127.0.0.1:{port}", str(path), server, watcher, rm)


@pytest.fixture
def web(tmp_path):
    """A running web server with the jobs above (no file watcher)."""
    running = start(tmp_path)
    yield running
    running.stop()


SCENE = """<?xml version="1.0"?>
<allocations>
  <defaultMinSharePreemptionTimeout>30</defaultMinSharePreemptionTimeout>
  <queue name="prod"><weight>2</weight><minResources>8192 mb, 8 vcores</minResources></queue>
  <queue name="research">
    <queue name="ml"/>
    <queue name="etl"><schedulingPolicy>fifo</schedulingPolicy></queue>
  </queue>
  <queue name="adhoc"><minResources>4096 mb, 4 vcores</minResources>
    <minSharePreemptionTimeout>120</minSharePreemptionTimeout></queue>
  <queue name="users" type="parent"/>
</allocations>
"""


@dataclass
class Scene:
    """A console worth looking at: four nodes full, a preemption round done
    for prod, adhoc below its min share and waiting for its timeout."""

    url: str
    core: PolicyCore
    clock: ManualClock
    history: object
    server: object
    rm: FakeRM
    preempted: list
    status: object = None  # the allocation file's ConfigStatus

    def stop(self) -> None:
        self.server.should_exit = True


def start_scene(tmp_path) -> Scene:
    from slotwise.web.history import History

    path = tmp_path / "fair-scheduler.xml"
    path.write_text(SCENE)
    config, status = load_with_status(str(path))
    clock = ManualClock(1764234000.0)  # a wall time (2025-11-27 09:00 UTC): the charts' axes read as times of day
    core = PolicyCore(config, EngineSettings(node_locality_delay=0, rack_locality_delay=0), clock)
    rm = FakeRM()
    rm.was_seen = True
    rm.state.update(connected=True, registered=True, heartbeats=0, fallback_heartbeats=0)
    service = SchedulerService(core, status, rm)
    history = History(service, every=5, clock=clock.now, thread=False)  # sampled by the scene, on its clock
    nodes = [node(f"n{i}", f"worker-{i}", f"/rack{i // 2}", 8192, 8) for i in range(4)]
    apps = [app("application_1700000000000_0001", "root.research.ml", [req(0, 1024, 1, 24)], user="alice",
                submit_ms=1),
            app("application_1700000000000_0002", "root.research.etl", [req(0, 1024, 1, 12)], user="bob",
                submit_ms=2)]
    core.handle_heartbeat(payload(nodes=nodes, apps=apps, node="n0"))
    for _ in range(8):
        for i in range(4):
            core.handle_heartbeat(payload(node=f"n{i}"))
    core.handle_update(payload())
    for _ in range(3):
        history.sample()
        clock.advance(5)
    # prod asks: below its min share, the cluster full; adhoc asks a little later.
    core.handle_update(payload(apps=[app("application_1700000000000_0003", "root.prod", [req(0, 1024, 1, 10)],
                                         user="carol", submit_ms=3)]))
    for step in range(7):
        history.sample()
        clock.advance(5)
        if step == 1:
            core.handle_update(payload(apps=[app("application_1700000000000_0004", "root.adhoc",
                                                 [req(0, 2048, 1, 4)], user="dave", submit_ms=4)]))
    preempted = core.handle_update(payload()).preempt  # prod past its 30 s: a round
    core.handle_heartbeat(payload(finished=[p.container_id for p in preempted]))
    for i in range(4):
        core.handle_heartbeat(payload(node=f"n{i}"))
    for _ in range(3):
        clock.advance(5)
        core.handle_update(payload())
        history.sample()
    core._engine.apps["application_1700000000000_0001"].app_name = "feature extraction"
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN), None, refresh_seconds=0.5, history=history),
                        "127.0.0.1", port)
    return Scene(f"http://127.0.0.1:{port}", core, clock, history, server, rm, preempted, status)


@pytest.fixture
def scene(tmp_path):
    s = start_scene(tmp_path)
    yield s
    s.stop()
