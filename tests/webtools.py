"""A real web server on loopback around a PolicyCore with a few jobs, for the
API and UI tests (no ResourceManager: admin actions go to the engine)."""

from __future__ import annotations

from dataclasses import dataclass

from slotwise.admin import AdminToken, SchedulerService
from slotwise.bridge.protocol import PolicyCore
from slotwise.bridge.server import start_http
from slotwise.clock import ManualClock
from slotwise.config.watcher import ConfigWatcher, load_with_status
from slotwise.localcluster.ports import free_ports
from slotwise.metrics import Metrics
from slotwise.settings import EngineSettings
from slotwise.web.app import create_app

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
    return {"id": app_id, "user": user, "queue": queue, "prio": prio, "submit_t": float(len(app_id)),
            "req": [[0, 1024, 1, containers, {}, {}, True]]}


@dataclass
class Running:
    core: PolicyCore
    service: SchedulerService
    metrics: Metrics
    url: str
    path: str
    server: object
    watcher: ConfigWatcher | None

    def heartbeat(self, node: str = "n1"):
        return self.core.handle_heartbeat({"node": node})

    def stop(self) -> None:
        self.server.should_exit = True
        if self.watcher:
            self.watcher.stop()


def start(tmp_path, watch: bool = False) -> Running:
    path = tmp_path / "allocations.xml"
    path.write_text(ALLOCATIONS)
    config, status = load_with_status(str(path))
    holder = {}
    metrics = Metrics(core_ref=lambda: holder.get("core"), status_ref=lambda: status)
    core = PolicyCore(config, EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0),
                      ManualClock(100.0), stats=metrics)
    holder["core"] = core
    # Two nodes, three jobs; one heartbeat places some containers.
    core.handle_heartbeat({
        "nodes": [["n1", "h1", "/r1", 4096, 4], ["n2", "h2", "/r1", 4096, 4]],
        "apps": [app_entry("app_1", "alice", "root.research", 6), app_entry("app_2", "bob", "root.prod", 6),
                 app_entry("app_3", "carol", "root.research", 2)],
        "node": "n1"})
    core.handle_update({})
    watcher = None
    if watch:
        watcher = ConfigWatcher(str(path), lambda cfg, text: core.set_config(cfg, text), status,
                                on_error=core.config_failed)
        watcher.start()
    service = SchedulerService(core, status)
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN), metrics, refresh_seconds=0.5), "127.0.0.1", port)
    return Running(core, service, metrics, f"http://127.0.0.1:{port}", str(path), server, watcher)
