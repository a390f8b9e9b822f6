"""The Python end of the shim protocol, driven with JSON as the shim sends it."""

import io
import json

import pytest

from slotwise.bridge.protocol import PolicyCore
from slotwise.bridge.server import GatewayUnavailable, read_gateway_info
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.eventlog import EventLog
from slotwise.settings import EngineSettings

ALLOC = """<allocations>
  <queue name="prod"><weight>3</weight></queue>
  <queue name="dev"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>"""

NODES = [["n1:1", "n1", "/r1", 4096, 4], ["n2:1", "n2", "/r2", 4096, 4]]


def app(app_id, queue, n=4, host=None, prio=0):
    hosts = {host: n} if host else {}
    return {"id": app_id, "user": "ann", "queue": queue, "prio": prio, "submit": 0,
            "req": [[20, 1024, 1, n, hosts, {}, True]]}


@pytest.fixture
def core():
    out = io.StringIO()
    c = PolicyCore(parse_allocations(ALLOC, "t.xml"),
                   EngineSettings(node_locality_delay=0, rack_locality_delay=0), ManualClock(), EventLog(stream=out))
    c.out = out
    return c


def call(core, method, **msg):
    return json.loads(getattr(core, method)(json.dumps(msg)))


def events(core):
    return [json.loads(line) for line in core.out.getvalue().splitlines()]


def test_full_resync_then_heartbeat_assigns_and_logs(core):
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[app("a1", "root.prod")], node="n1:1")
    assert [a[:4] for a in ans["assign"]] == [["a1", "n1:1", 20, "off_switch"]] * 4
    assert ans["preempt"] == []
    assigns = [e for e in events(core) if e["event"] == "assign"]
    assert len(assigns) == 4
    assert {(e["app"], e["pool"], e["node"], e["locality"]) for e in assigns} == {("a1", "root.prod", "n1:1",
                                                                                  "off_switch")}


def test_launched_renames_and_finished_frees(core):
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[app("a1", "root.prod", n=1)], node="n1:1")
    [[app_id, node, prio, loc, engine_id]] = ans["assign"]
    call(core, "heartbeat", launched=[["container_1", app_id, node, 1024, 1, False, prio, engine_id]],
         apps=[{"id": "a1", "req": []}], node="n2:1")
    e = core.engine
    assert "container_1" in e.containers and engine_id not in e.containers
    assert e.pools["root.prod"].usage.memory_mb == 1024
    call(core, "heartbeat", finished=["container_1"], node="n2:1")
    assert e.pools["root.prod"].usage.memory_mb == 0


def test_rejected_assignment_is_undone(core):
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[app("a1", "root.prod", n=1)], node="n1:1")
    engine_id = ans["assign"][0][4]
    call(core, "update", rejected=[engine_id])
    assert core.engine.pools["root.prod"].usage.memory_mb == 0


def test_fallback_containers_are_counted(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[app("a1", "root.dev", n=0)])
    call(core, "heartbeat", launched=[["c9", "a1", "n2:1", 2048, 2, True, 0, None]], fallbacks=3, node="n2:1")
    assert core.engine.apps["a1"].has_am
    assert core.engine.nodes["n2:1"].used.memory_mb == 2048
    assert any(e["event"] == "fallback" and e["count"] == 3 for e in events(core))


def test_place_and_reject(core):
    assert json.loads(core.place(json.dumps({"id": "x", "user": "ann", "queue": "prod"}))) == {"queue": "root.prod"}
    assert "reject" in json.loads(core.place(json.dumps({"id": "y", "user": "ann", "queue": "nope"})))


def test_move_follows_engine_rules(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[app("a1", "root.prod")])
    assert json.loads(core.move("a1", "root.dev")) == {"queue": "root.dev"}
    assert core.engine.apps["a1"].pool.name == "root.dev"
    assert "error" in json.loads(core.move("missing", "root.dev"))


def test_update_returns_shares_and_requests_follow_the_shim(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[app("p", "root.prod", n=8), app("d", "root.dev", n=8)])
    ans = call(core, "update")
    table = {q["name"]: q for q in ans["queues"]}
    assert table["root.prod"]["fair"] == [6144, 6]
    assert table["root.dev"]["fair"] == [2048, 2]
    assert table["root"]["max"] is None
    # The shim's view replaces Python's: the app now asks for nothing.
    call(core, "update", apps=[{"id": "p", "req": []}])
    assert core.engine.apps["p"].pending.memory_mb == 0


def test_node_local_request_waits_for_its_node():
    c = PolicyCore(parse_allocations(ALLOC, "t.xml"), EngineSettings(heartbeat_interval=1.0), ManualClock())
    ans = json.loads(c.heartbeat(json.dumps({"full": True, "nodes": NODES, "apps": [app("a", "root.prod", 1, "n2")],
                                             "node": "n1:1"})))
    assert ans["assign"] == []
    ans = json.loads(c.heartbeat(json.dumps({"node": "n2:1"})))
    assert ans["assign"][0][3] == "node_local"


def test_gateway_files_must_be_private(tmp_path):
    info = tmp_path / "gateway.json"
    token = tmp_path / "gateway.token"
    info.write_text('{"port": 1234, "pid": 1}')
    token.write_text("abc\n")
    token.chmod(0o644)
    with pytest.raises(GatewayUnavailable, match="0600"):
        read_gateway_info(str(info), str(token))
    token.chmod(0o600)
    assert read_gateway_info(str(info), str(token)).token == "abc"
    assert read_gateway_info(str(info), str(token)).port == 1234


def test_an_unmanaged_app_has_no_am_container(core):
    managed, unmanaged = app("a1", "root.prod", n=2), {**app("a2", "root.dev", n=2), "unmanaged": True}
    out = json.loads(core.heartbeat(json.dumps({"nodes": NODES, "apps": [managed, unmanaged], "node": "n1:1"})))
    assert len(out["assign"]) == 4
    lines = [json.loads(line) for line in core.out.getvalue().splitlines()]
    first = {}
    for e in lines:
        if e["event"] == "assign":
            first.setdefault(e["app"], e["am"])
    assert first == {"a1": True, "a2": False}
    assert core.engine._without_am == 0
