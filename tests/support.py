"""Helpers shared by the tests: engines on a manual clock, the tools real Hadoop needs, warnings of a file."""

from __future__ import annotations

import os
import shutil

from slotwise.clock import ManualClock
from slotwise.engine import Request
from slotwise.config import parse_allocations
from slotwise.config.model import AllocationConfig, QueueConfig, default_placement_rules
from slotwise.engine import Engine
from slotwise.resources import Resource
from slotwise.settings import EngineSettings

SLOT = Resource.units(1)


def make_config(queues: dict | None = None, **top) -> AllocationConfig:
    """queues: {"name": {field: value, "children": {...}}} under root."""
    cfg = AllocationConfig(**top)
    if not cfg.placement_rules:
        cfg.placement_rules = default_placement_rules()

    def build(parent: QueueConfig, spec: dict) -> None:
        for name, fields in spec.items():
            fields = dict(fields)
            kids = fields.pop("children", {})
            q = QueueConfig(f"{parent.name}.{name}", **fields)
            parent.children.append(q)
            build(q, kids)

    build(cfg.root, queues or {})
    return cfg


def make_engine(queues=None, nodes: int = 4, slots: int = 4, racks: int = 1, settings=None,
                **top) -> tuple[Engine, ManualClock]:
    clock = ManualClock()
    settings = settings or EngineSettings(node_locality_delay=0, rack_locality_delay=0)
    engine = Engine(make_config(queues, **top), clock, settings)
    for i in range(nodes):
        engine.add_node(f"n{i}", f"host{i}", f"/rack{i % racks}", Resource.units(slots))
    return engine, clock


def submit(engine: Engine, app_id: str, queue: str | None = None, tasks: int = 10, user: str | None = None,
           priority: int = 0, hosts: dict | None = None, racks: dict | None = None, needs_am: bool = False,
           size: Resource = SLOT) -> str:
    """An app with ``tasks`` one-slot requests.  Unless ``needs_am``, it is
    treated as already having its AM, so every container it gets is a task."""
    engine.add_app(app_id, user or app_id, queue=queue, priority=priority)
    engine.update_requests(app_id, [Request(1, size, tasks, hosts, racks)])
    if not needs_am:
        engine.apps[app_id].has_am = True
    return app_id


def fill(engine: Engine, rounds: int = 1) -> list:
    """Heartbeat every node ``rounds`` times; returns all assignments."""
    out = []
    for _ in range(rounds):
        for node_id in list(engine.nodes):
            out.extend(engine.heartbeat(node_id))
    return out


def running(engine: Engine, queue: str) -> float:
    return engine.queues[queue].usage.memory_mb


#: How long a test waits for a real cluster to start. A deadline for a hang,
#: not a speed goal: on a loaded 2-core machine a ResourceManager alone has
#: taken 350 s to answer (its web app starts last).
CLUSTER_START_TIMEOUT = 900


def missing_java_tools() -> str | None:
    """Why real Hadoop cannot run here (no Maven, no JDK 17), or None."""
    from slotwise.localcluster import ClusterError
    from slotwise.localcluster.jvm import find_java

    if not (os.environ.get("SLOTWISE_MVN") or shutil.which("mvn")):
        return "Maven (mvn) is not installed"
    try:
        find_java()
    except ClusterError as e:
        return str(e)
    return None


def skip_unless_required(what: str, why: str, require: str) -> None:
    """Skip ``what``, saying ``why``; where the environment variable
    ``require`` is 1 (.ci/run sets each) a failure instead, with the reason
    on one line: a tier CI requires can never pass by not running."""
    import pytest

    if os.environ.get(require) == "1":
        pytest.fail(f"{what} cannot run, and {require}=1 requires it: {why}", pytrace=False)
    pytest.skip(f"{what} unavailable: {why}")


def skip_without_java(what: str) -> None:
    """Skip, saying why, where the machine lacks a JDK or Maven; under CI
    (SLOTWISE_REQUIRE_JAVA=1, set by .ci/run) that is a failure instead, so
    the YARN-reference and cluster tests can never pass by not running."""
    why = missing_java_tools()
    if why is not None:
        skip_unless_required(what, why, "SLOTWISE_REQUIRE_JAVA")


def warnings_of(cfg) -> list[tuple[int, str]]:
    """A loaded allocation file's warnings as (line, message)."""
    out = []
    for w in cfg.warnings:
        where, _, message = w.partition(": warning: ")
        out.append((int(where.rsplit(":", 1)[1]), message))
    return out


def slotwise_shares(xml: str, memory_mb: int, vcores: int, active: list[str],
                    demands: list[int] | None = None) -> dict[str, dict[str, list[float]]]:
    """Every queue's fair and steady shares ({"fair": [mb, vcores], "steady":
    [...]}) from the real engine on one node, with one app per entry of
    ``active`` asking for ``demands[i]`` MB (default: the whole cluster)."""
    engine = Engine(parse_allocations(xml, "case.xml"), ManualClock(), EngineSettings(preemption=False))
    engine.add_node("n1", "n1", "/default-rack", Resource(memory_mb, vcores))
    for i, queue in enumerate(active):
        mb = demands[i] if demands else memory_mb
        engine.add_app(f"app-{i}", "someone", queue=queue, placed=True)
        if mb > 0:
            engine.update_requests(f"app-{i}", [Request(0, Resource(1024, 1), max(1, mb // 1024))])
    engine.update()
    pair = lambda r: [r["memory_mb"], r["vcores"]]  # noqa: E731
    return {row["queue"]: {"fair": pair(row["fair_share"]), "steady": pair(row["steady_fair_share"])}
            for row in engine.describe_queues()}


def slotwise_steady(cfg, cluster: tuple[int, int] = (65536, 64)) -> dict[str, float]:
    """Every queue's steady share of memory, from the real engine on one node."""
    engine = Engine(cfg, ManualClock(), EngineSettings(preemption=False))
    engine.add_node("n1", "n1", "/default-rack", Resource(*cluster))
    engine.update()
    return {row["queue"]: row["steady_fair_share"]["memory_mb"] for row in engine.describe_queues()}


def read_hadoop_xml(path) -> dict[str, str]:
    """Name to value of a Hadoop configuration file: what the local cluster's
    tests check it wrote (the product itself never reads one back)."""
    import xml.etree.ElementTree as ET

    props = {}
    for prop in ET.parse(path).getroot().iter("property"):
        name = prop.findtext("name")
        if name is not None:
            props[name] = prop.findtext("value") or ""
    return props


def scheduler_queues(answer: dict) -> dict[str, dict]:
    """Every queue of a FairScheduler-shaped /ws/v1/cluster/scheduler answer, by name."""
    out = {}

    def walk(q):
        out[q["queueName"]] = q
        for child in (q.get("childQueues") or {}).get("queue", []):
            walk(child)

    walk(answer["scheduler"]["schedulerInfo"]["rootQueue"])
    return out


def key_paths(node, prefix: str = "") -> set[str]:
    """A queue's keys, nested ones (resources) as paths; its children's left out."""
    out = set()
    if isinstance(node, list):
        for item in node:
            out |= key_paths(item, prefix + "[].")
    elif isinstance(node, dict):
        for key, value in node.items():
            out.add(prefix + key)
            if key != "childQueues":
                out |= key_paths(value, prefix + key + ".")
    return out
