"""The shadow policy (slotwise/shadow.py): a candidate file deciding beside
the live one on the same heartbeats, compared, never acting."""

from __future__ import annotations

import io
import random
import threading

import pytest

from slotwise import shadow as shadow_mod
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import PolicyCore
from slotwise.eventlog import EventLog, read_events
from slotwise.policies import register_policy
from slotwise.policies.fair import FairPolicy
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from slotwise.shadow import Shadow
from slotwise.sim.replay import replay
from slotwise.sim.results import SimSettings
from slotwise.sim.simulator import Simulation
from slotwise.sim.workload import ClusterSpec, JobSpec, Workload

LIVE = """<allocations>
  <queue name="a"><weight>{a}</weight>{a_policy}</queue>
  <queue name="b"><weight>1</weight></queue>
  <queue name="c"><weight>1</weight><minResources>12288 mb, 12 vcores</minResources>
    <minSharePreemptionTimeout>5</minSharePreemptionTimeout></queue>
  <queuePlacementPolicy><rule name="specified"/><rule name="default" queue="b"/></queuePlacementPolicy>
</allocations>"""


def allocations(a: str = "1", a_policy: str = "", name: str = "live.xml"):
    text = LIVE.format(a=a, a_policy=a_policy)
    return parse_allocations(text, name), text


def busy_workload(seed: int = 3, jobs: int = 45) -> Workload:
    """Three queues asking at once, jobs with data on a few nodes (delay
    scheduling matters), a queue with a min share and a short preemption
    timeout (preemption acts)."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(jobs):
        t += rng.expovariate(0.6)
        n = rng.choice((2, 4, 8, 12))
        queue = "abc"[i % 3]  # root.c's jobs come later, on a full cluster: it takes its min share back
        out.append(JobSpec(f"j{i:03d}", t + (20.0 if queue == "c" else 0.0),
                           [rng.uniform(8, 30) for _ in range(n)], [rng.uniform(3, 6)] if n >= 4 else [],
                           user=f"u{i % 5}", queue=queue, io=1.0))
    out.sort(key=lambda j: j.submit)
    return Workload(ClusterSpec(racks=2, nodes_per_rack=4, node_resource=Resource(4096, 4)), out, "busy")


def engine_settings(**kw) -> EngineSettings:
    return EngineSettings(heartbeat_interval=1.0, preemption=True, node_locality_delay=1.5,
                          rack_locality_delay=1.5, **kw)


def simulate(candidate=None, event_log=None, record=False, live=None):
    config, text = live or allocations()
    sim = Simulation(busy_workload(), engine_settings(), config, SimSettings(heartbeat_interval=1.0),
                     event_log=event_log, record_inputs=record, config_text=text, shadow=candidate)
    decisions = []
    core = sim.feed.core
    real = core.handle_heartbeat

    def watched(msg):
        out = real(msg)
        decisions.extend((a.app_id, a.node_id, a.locality, a.container_id) for a in out)
        return out

    core.handle_heartbeat = watched
    result = sim.run()
    return sim, result, decisions


# ------------------------------------------------------------- the comparison
def test_an_identical_candidate_never_diverges_and_needs_no_copy():
    sim, result, _ = simulate(allocations(name="candidate.xml")[0])
    s = result.shadow
    assert s["state"] == "running" and s["error"] is None
    assert s["compared"] > 300 and s["updates_compared"] > 100
    assert s["diverged"] == 0 and s["updates_diverged"] == 0 and s["skipped"] == 0
    assert s["copies"] == 0  # same inputs, same file: the same state all along
    assert result.preempted > 0  # the scene preempts, and the candidate agreed on every round
    st = sim.shadow.status()
    assert st["diverging"] == []
    for row in st["queues"]:
        assert row["live"]["containers"] == row["shadow"]["containers"]
        assert row["live"]["preemptions"] == row["shadow"]["preemptions"]
        assert row["live"]["data_local"] == row["shadow"]["data_local"]


def test_a_changed_weight_diverges_only_where_that_queues_share_is_involved():
    sim, result, _ = simulate(allocations(a="4", name="candidate.xml")[0])
    s = result.shadow
    assert s["state"] == "running"
    assert s["diverged"] > 0 and s["compared"] > s["diverged"]
    assert s["copies"] > 0  # each divergence is followed by a copy of the live state
    st = sim.shadow.status()
    assert st["diverging"] and len(st["diverging"]) <= shadow_mod.MAX_DIVERGING
    for d in st["diverging"]:
        if d["call"] != "heartbeat":
            continue
        sides = [x["queue"] for x in d["live"] + d["shadow"]]
        assert "root.a" in sides, d  # every diverging heartbeat gives to root.a on one side or the other
        assert all("under the candidate" in x["why"] for x in d["shadow"])
        assert all("under the live file" in x["why"] for x in d["live"])  # both sides' reasons
    # root.a's weight up: over the window the candidate gives root.a more
    rows = {r["queue"]: r for r in st["queues"]}
    assert rows["root.a"]["shadow"]["containers"] >= rows["root.a"]["live"]["containers"]


def test_the_shadow_changes_no_live_decision():
    _, plain, without = simulate()
    _, shadowed, with_shadow = simulate(allocations(a="4", name="candidate.xml")[0])
    assert with_shadow == without
    assert shadowed.preempted == plain.preempted


# ---------------------------------------------------------- budget and safety
class Raising(FairPolicy):
    """A test-only plugin whose ordering raises (a broken candidate policy)."""

    def _broken(self, *args, **kwargs):
        raise RuntimeError("the candidate's policy is broken")

    order = sort_key = order_key = compute_shares = _broken


@pytest.fixture
def raising_policy():
    register_policy("test-raising", Raising)
    yield "test-raising"


def _log_lines(buf: io.StringIO) -> list[str]:
    return buf.getvalue().splitlines()


def test_a_candidate_whose_policy_raises_is_stopped_and_the_live_run_is_byte_for_byte_the_same(
        raising_policy, monkeypatch):
    class Frozen:  # the log's wall-clock stamps, fixed: the two runs' logs compare byte for byte
        @staticmethod
        def time():
            return 1700000000.0

    monkeypatch.setattr("slotwise.eventlog.time", Frozen)
    plain_log, shadow_log = io.StringIO(), io.StringIO()
    _, _, without = simulate(event_log=EventLog(stream=plain_log))
    candidate = parse_allocations(LIVE.format(a="1", a_policy=f"<schedulingPolicy>{raising_policy}"
                                                            "</schedulingPolicy>"), "broken.xml")
    sim, result, with_shadow = simulate(candidate, event_log=EventLog(stream=shadow_log))
    assert result.shadow["state"] == "stopped"
    assert "broken" in result.shadow["error"]
    assert with_shadow == without
    assert _log_lines(shadow_log) == _log_lines(plain_log)
    assert sim.feed.core.shadow is None  # detached: the door is back to its one `if`


def test_a_candidate_over_its_cpu_budget_is_stopped():
    config, _ = allocations()
    sim = Simulation(busy_workload(), engine_settings(), config, SimSettings(heartbeat_interval=1.0))
    s = Shadow(allocations(name="candidate.xml")[0], threaded=False, budget_s=-1.0)
    s.attach(sim.feed.core)
    sim.run()
    assert s.state == "stopped" and "CPU budget" in s.error
    assert s.compared + s.updates_compared == shadow_mod.STRIKES  # heartbeats and passes alike


def _door(config, text=None):
    clock = ManualClock(1000.0)
    return PolicyCore(config, engine_settings(), clock, config_text=text), clock


def _drive(core, clock, steps: int, seed: int = 7):
    """A stream of messages through the door as a shim sends them: nodes,
    apps in three queues asking with locality, heartbeats, update passes,
    containers ending."""
    from slotwise import protocol as wire

    rng = random.Random(seed)
    res = wire.Resource(memory_mb=1024, vcores=1)
    nodes = [wire.Node(id=f"n{i}", host=f"h{i}", rack=f"/r{i % 2}", capacity=wire.Resource(memory_mb=4096, vcores=4))
             for i in range(6)]
    core.handle_heartbeat(wire.Payload(now_ms=int(clock.now() * 1000), nodes=nodes))
    running: list[str] = []
    out = []
    for step in range(steps):
        clock.advance(0.25)
        now_ms = int(clock.now() * 1000)
        apps, finished = [], []
        if step % 7 == 0:
            i = step // 7
            host = f"h{rng.randrange(6)}"
            apps.append(wire.App(id=f"app{seed}-{i}", user=f"u{i % 3}", queue="abc"[i % 3], submit_ms=now_ms, priority=0,
                                 requests=[wire.Request(priority=1, resource=res, count=rng.randrange(2, 6),
                                                        hosts={host: 2}, racks={"/r0": 1, "/r1": 1})]))
        if running and rng.random() < 0.3:
            finished.append(running.pop(rng.randrange(len(running))))
        if step % 2:
            core.handle_update(wire.Payload(now_ms=now_ms, apps=apps, finished=finished))
            continue
        node = f"n{rng.randrange(6)}"
        decided = core.handle_heartbeat(wire.Payload(now_ms=now_ms, apps=apps, finished=finished,
                                                     beats=[wire.Beat(node=node)]))
        launched = [wire.Container(id=f"c-{a.container_id}", app=a.app_id, node=a.node_id, resource=res, priority=a.priority,
                                   engine_id=a.container_id) for a in decided]
        running += [c.id for c in launched]
        if launched:
            core.handle_update(wire.Payload(now_ms=now_ms, launched=launched))
        out += [(a.app_id, a.node_id, a.locality) for a in decided]
    return out


def test_a_threaded_shadow_started_on_a_running_door_follows_it_exactly():
    config, text = allocations()
    core, clock = _door(config, text)
    _drive(core, clock, 60)  # the door has state before the shadow starts: the shadow copies it
    s = Shadow(allocations(name="candidate.xml")[0])
    s.attach(core)
    assert s.state == "running" and core.shadow is s
    _drive(core, clock, 300, seed=8)
    _wait_drained(s)
    st = s.status()
    assert st["compared"] > 50 and st["diverged"] == 0 and st["updates_diverged"] == 0, st
    s.stop()
    assert s.state == "stopped" and s.error is None and core.shadow is None


def _wait_drained(s, timeout=20.0):
    import time

    deadline = time.monotonic() + timeout
    while s._items and s.state == "running" and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)


def test_a_shadow_behind_skips_heartbeats_and_counts_them(monkeypatch):
    monkeypatch.setattr(shadow_mod, "LAG", 5)
    config, text = allocations()
    core, clock = _door(config, text)
    gate = threading.Event()
    real_run = Shadow._run

    def held(self):
        gate.wait(10)
        real_run(self)

    monkeypatch.setattr(Shadow, "_run", held)
    s = Shadow(allocations(name="candidate.xml")[0])
    s.attach(core)
    _drive(core, clock, 200)
    gate.set()
    _wait_drained(s)
    st = s.status()
    assert st["state"] == "running", st
    assert st["skipped"] > 0
    assert st["diverged"] == 0  # skipping is followed by a copy: still the live state
    heartbeats = 1 + 100  # the nodes' first call, then every other step
    assert st["compared"] + st["skipped"] == heartbeats
    s.stop()


def test_a_backlog_past_its_bound_stops_the_shadow_not_the_door(monkeypatch):
    monkeypatch.setattr(shadow_mod, "MAX_BACKLOG", 20)
    config, text = allocations()
    core, clock = _door(config, text)
    gate = threading.Event()
    monkeypatch.setattr(Shadow, "_run", lambda self: (gate.wait(10), Shadow._drain(self)))
    s = Shadow(allocations(name="candidate.xml")[0])
    s.attach(core)
    before = _drive(core, clock, 100)
    gate.set()
    _wait_drained(s)
    assert s.state == "stopped" and "fell behind" in s.error
    assert core.shadow is None
    core2, clock2 = _door(*allocations())
    assert _drive(core2, clock2, 100) == before


# ------------------------------------------------------------ the event log and replay
def test_shadow_records_are_apart_and_replay_reproduces_the_live_decisions(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog(str(path))
    simulate(allocations(a="4", name="candidate.xml")[0], event_log=log, record=True)
    log.close()
    events = read_events(str(path))
    shadow = [e for e in events if e["event"] == "shadow"]
    assert shadow and all("live" in e and "shadow" in e for e in shadow)
    result = replay(events)
    assert result.recorded_assignments and result.matches, result.first_difference()


def test_a_new_candidate_version_takes_over_in_the_streams_order():
    config, text = allocations()
    core, clock = _door(config, text)
    s = Shadow(allocations(a="4", name="candidate.xml")[0], threaded=False)
    s.attach(core)
    _drive(core, clock, 200)
    assert s.diverged > 0
    s.set_candidate(allocations(name="candidate.xml")[0])
    seen = s.diverged
    _drive(core, clock, 200, seed=9)
    assert s.diverged == seen  # identical from the new version on
    bad, _ = allocations(name="candidate.xml")
    assert s.state == "running"


# ------------------------------------------------------------ the API, metrics and promote
def _served(tmp_path):
    """webtools' server, with the shadow service serve wires (the live
    file's path, for promote) and the live file watched."""
    import webtools
    from slotwise.admin import AdminToken, SchedulerService
    from slotwise.serve import start_http
    from slotwise.shadow_service import ShadowService
    from slotwise.web.app import create_app

    running = webtools.start(tmp_path, watch=True)
    running.server.should_exit = True  # replaced by one with the shadow wired as serve wires it
    service = ShadowService(running.core, running.path)
    running.metrics._shadow_ref = lambda: service
    port = webtools.free_port()
    running.server = start_http(create_app(SchedulerService(running.core, running.watcher.status, running.rm),
                                           AdminToken(webtools.TOKEN), running.metrics, shadow=service),
                                "127.0.0.1", port)
    running.url = f"http://127.0.0.1:{port}"
    return running, service


def test_the_shadow_api_starts_compares_promotes_and_stops(tmp_path):
    import time

    import httpx
    from webtools import ALLOCATIONS, TOKEN

    running, service = _served(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        url = running.url + "/api/v1/shadow"
        assert httpx.get(url).json()["state"] == "off"
        huge = {"allocations": "x" * (5 * 1024 * 1024)}
        assert httpx.post(url, json=huge).status_code == 401  # the token before the body
        assert httpx.delete(url).status_code == 401
        assert httpx.post(url + "/promote").status_code == 401
        bad = httpx.post(url, json={"allocations": "<allocations><queue name='x'><weight>-1</weight>"},
                         headers={**auth, "X-Slotwise-File-Name": "cand.xml"})
        assert bad.status_code == 400 and "cand.xml:1" in bad.json()["detail"]
        assert running.core.shadow is None
        candidate = ALLOCATIONS.replace("<weight>2</weight>", "<weight>5</weight>")
        ok = httpx.post(url, json={"allocations": candidate}, headers={**auth, "X-Slotwise-File-Name": "cand.xml"})
        assert ok.status_code == 200 and ok.json()["state"] == "running" and ok.json()["file"] == "cand.xml"
        for i in range(20):
            running.heartbeat("n1" if i % 2 else "n2")
        deadline = time.monotonic() + 10
        while httpx.get(url).json()["compared"] < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        st = httpx.get(url).json()
        assert st["compared"] == 20 and st["skipped"] == 0
        text = httpx.get(running.url + "/metrics").text
        assert "slotwise_shadow_compared_total 20.0" in text and "slotwise_shadow_up 1.0" in text
        assert "slotwise_shadow_diverged_total" in text and "slotwise_shadow_skipped_total" in text
        promoted = httpx.post(url + "/promote", headers=auth)
        assert promoted.status_code == 200, promoted.text
        backup = promoted.json()["backup"]
        assert open(backup).read() == ALLOCATIONS and open(running.path).read() == candidate
        deadline = time.monotonic() + 2.0
        while running.core._engine.queues["root.prod"].weight != 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert running.core._engine.queues["root.prod"].weight == 5  # applied by the watcher within 2 s
        stopped = httpx.delete(url, headers=auth).json()
        assert stopped["state"] == "stopped" and stopped["error"] is None
        assert running.core.shadow is None
    finally:
        service.close()
        running.stop()


def test_serve_takes_a_shadow_flag():
    from slotwise.cli import build_parser

    args = build_parser().parse_args(["serve", "--allocations", "a.xml", "--shadow", "cand.xml"])
    assert args.shadow == "cand.xml"


MACRO = """<allocations>
  {inner}
  <queuePlacementPolicy><rule name="user"/></queuePlacementPolicy>
</allocations>"""


# A changed weight on the macro scenario's per-user queues did not diverge at
# this scale (each user's queue holds one job; a newcomer at usage 0 goes
# first whatever the weights): the changed candidate is tested on the busy
# scene above, through the same simulator door.
@pytest.mark.parametrize("weight, diverges", [(None, False)])
def test_the_macro_scenario_shortened_with_a_shadow(weight, diverges):
    """The macro scenario at a tenth of its jobs, a queue per user: an
    identical candidate never diverges; one that weighs the queue of each
    workload's second largest job 4 does (each user's queue lives as long as its job)."""
    from slotwise.sim.runner import run_scenario
    from slotwise.sim.scenarios import SCENARIOS

    live = parse_allocations(MACRO.format(inner=""), "live.xml")
    biggest = {sorted(exp.workload.jobs, key=lambda j: len(j.maps))[-2].user  # it competes with the largest
               for exp in SCENARIOS["macro"].experiments(0, 0.3)}
    inner = "" if weight is None else "".join(f"<queue name='{u}'><weight>{weight}</weight></queue>"
                                              for u in sorted(biggest))
    candidate = parse_allocations(MACRO.format(inner=inner), "candidate.xml")
    report, _runs = run_scenario("macro", ["fair+delay"], seed=0, scale=0.3, config=live, shadow=candidate)
    for run in report["runs"]:
        s = run["shadow"]
        assert s["state"] == "running" and s["compared"] > 1000 and s["skipped"] == 0, s
        assert (s["diverged"] > 0) == diverges, s


# ------------------------------------------------------------ the timeline
def test_the_timeline_samples_the_counts_every_5_s_of_heartbeats_and_ends_at_the_last():
    import collections

    config, text = allocations()
    core, clock = _door(config, text)
    s = Shadow(allocations(a="4", name="candidate.xml")[0], threaded=False)
    s.attach(core)
    start = clock.now()
    _drive(core, clock, 200)  # 50 s of engine time, a heartbeat every 0.5 s
    tl = s.status()["timeline"]
    assert tl[0] == [start, 0, 0]
    assert tl[-1] == [s._last_t, s.compared, s.diverged] and s.diverged > 0
    gaps = [b[0] - a[0] for a, b in zip(tl, tl[1:-1])]
    assert gaps and all(g >= shadow_mod.SAMPLE_S for g in gaps), gaps
    assert 9 <= len(tl) <= 12, tl  # 50 s at one sample per 5 s, and the last heartbeat's
    for a, b in zip(tl, tl[1:]):  # counts only grow
        assert b[1] >= a[1] and b[2] >= a[2]
    s._timeline = collections.deque(s._timeline, maxlen=3)  # bounded: the oldest go first
    _drive(core, clock, 60, seed=9)
    assert len(s.status()["timeline"]) <= 4


# ------------------------------------------------------------ the CLI
def test_the_shadow_cli_starts_reports_promotes_and_stops_against_a_real_server(tmp_path, capsys):
    import json
    import time

    from slotwise import cli
    from webtools import ALLOCATIONS, TOKEN

    running, service = _served(tmp_path)
    token_file = tmp_path / "admin.token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    url = running.url
    base = ["--server", url, "--admin-token-file", str(token_file)]
    try:
        assert cli.main(["shadow", "status", "--server", url]) == 0
        assert capsys.readouterr().out == "shadow off\n"
        bad = tmp_path / "bad.xml"
        bad.write_text(ALLOCATIONS.replace("<weight>2</weight>", "<weight>heavy</weight>"))
        assert cli.main(["shadow", "start", str(bad), *base]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"slotwise shadow start: {bad}:3: ") and "heavy" in err, err
        assert running.core.shadow is None
        assert cli.main(["shadow", "start", *base]) == 2  # no file
        assert "give the candidate file" in capsys.readouterr().err
        assert cli.main(["shadow", "start", str(tmp_path / "missing.xml"), *base]) == 1
        assert "missing.xml" in capsys.readouterr().err
        nobody = ["--server", url, "--admin-token-file", str(tmp_path / "none.token")]
        candidate = tmp_path / "cand.xml"
        candidate.write_text(ALLOCATIONS.replace("<weight>2</weight>", "<weight>5</weight>"))
        assert cli.main(["shadow", "start", str(candidate), *nobody]) == 1
        assert "no admin token" in capsys.readouterr().err and running.core.shadow is None
        assert cli.main(["shadow", "start", str(candidate), *base]) == 0
        assert capsys.readouterr().out.startswith(f"shadow running ({candidate})\ncompared 0 heartbeat(s)")
        for i in range(10):
            running.heartbeat("n1" if i % 2 else "n2")
        deadline = time.monotonic() + 10
        while service.status()["compared"] < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cli.main(["shadow", "status", "--server", url]) == 0
        said = capsys.readouterr().out
        assert said.startswith(f"shadow running ({candidate})\ncompared 10 heartbeat(s), diverged "), said
        assert "root.prod" in said  # per queue, live against shadow
        assert cli.main(["shadow", "status", "--server", url, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["compared"] == 10 and doc["timeline"][-1][1] == 10
        assert cli.main(["shadow", "promote", str(candidate), *base]) == 2  # promote takes no file
        assert "takes no file" in capsys.readouterr().err
        assert cli.main(["shadow", "promote", *base]) == 0
        said = capsys.readouterr().out
        assert said.startswith(f"wrote {candidate} as {running.path} (the old one is {running.path}.bak-"), said
        assert open(running.path).read() == candidate.read_text()
        assert cli.main(["shadow", "stop", *base]) == 0
        assert capsys.readouterr().out.startswith(f"shadow stopped ({candidate})\n")
        assert running.core.shadow is None
        service.shadow = None  # as a server that never started one
        assert cli.main(["shadow", "promote", *base]) == 1
        assert capsys.readouterr().err == "slotwise shadow promote: no candidate to promote: start a shadow first\n"
    finally:
        service.close()
        running.stop()


# ------------------------------------------------------------ Dynamic Priority
DP_ALLOCATIONS = """<allocations>
  <queue name="dp" type="parent"><schedulingPolicy>dynamic-priority</schedulingPolicy>
    <queue name="alice"/><queue name="bob"/></queue>
</allocations>"""


def _dp_door():
    """A door over a Dynamic Priority parent of two queues, four nodes."""
    from slotwise import protocol as wire
    from slotwise.market import Market, MarketSettings

    market = Market(MarketSettings(slot_memory_mb=1024, slot_vcores=1, interval=2))
    config = parse_allocations(DP_ALLOCATIONS, "live.xml")
    clock = ManualClock(1000.0)
    core = PolicyCore(config, EngineSettings(heartbeat_interval=1.0, node_locality_delay=0, rack_locality_delay=0),
                      clock, services={"market": market})
    market.ensure(["root.dp.alice", "root.dp.bob"])
    for q in ("alice", "bob"):
        market.add_budget(f"root.dp.{q}", 10_000)
        market.set_spending(f"root.dp.{q}", 1)
    nodes = [wire.Node(id=f"n{i}", host=f"h{i}", rack="/r0", capacity=wire.Resource(memory_mb=4096, vcores=4))
             for i in range(4)]
    core.handle_heartbeat(wire.Payload(now_ms=int(clock.now() * 1000), nodes=nodes))
    return core, market, clock


def _dp_drive(core, clock, steps: int, at_step=None) -> None:
    """Two apps asking for 200 containers each, a heartbeat or a pass every
    0.25 s, containers ending as they go; ``at_step(step)`` before each."""
    from slotwise import protocol as wire

    res = wire.Resource(memory_mb=1024, vcores=1)
    running: list[str] = []
    for step in range(steps):
        if at_step is not None:
            at_step(step)
        clock.advance(0.25)
        now_ms = int(clock.now() * 1000)
        apps = []
        if step == 0:
            apps = [wire.App(id=f"{q}-app", user=q, queue=f"dp.{q}", submit_ms=now_ms, priority=0,
                             requests=[wire.Request(priority=1, resource=res, count=200)]) for q in ("alice", "bob")]
        finished = running[:2] if step % 3 == 0 else []
        running = running[len(finished):]
        if step % 4 == 1:
            core.handle_update(wire.Payload(now_ms=now_ms, apps=apps, finished=finished))
            continue
        decided = core.handle_heartbeat(wire.Payload(now_ms=now_ms, apps=apps, finished=finished,
                                                     beats=[wire.Beat(node=f"n{step % 4}")]))
        running += [f"c-{a.container_id}" for a in decided]
        if decided:
            core.handle_update(wire.Payload(now_ms=now_ms, launched=[
                wire.Container(id=f"c-{a.container_id}", app=a.app_id, node=a.node_id, resource=res,
                               priority=a.priority, engine_id=a.container_id) for a in decided]))


def test_an_operators_market_change_reaches_the_shadow_as_it_reaches_the_live_engine():
    """Spending rates changed after the shadow started: its replica must see
    them (or it decides otherwise than the live engine and stops), and an
    identical candidate still agrees on every heartbeat."""
    core, market, clock = _dp_door()
    s = Shadow(parse_allocations(DP_ALLOCATIONS, "candidate.xml"), threaded=False)
    s.attach(core)

    def bid(step):
        if step == 40:  # alice bids four times bob's rate from now on
            market.set_spending("root.dp.alice", 4)
    _dp_drive(core, clock, 240, bid)
    st = s.status()
    assert st["state"] == "running", st["error"]
    assert st["compared"] > 100 and st["diverged"] == 0, st
    e = core._engine
    alice = sum(1 for c in e.containers.values() if c.app_id == "alice-app")
    bob = sum(1 for c in e.containers.values() if c.app_id == "bob-app")
    assert alice > bob  # the change mattered to the live decisions
    s.stop()


def test_market_changes_racing_heartbeats_reach_the_shadow_in_the_live_order():
    """An operator's changes to the market, from another thread while
    heartbeats come (as serve's admin API makes them): each falls between
    two of the door's calls (the market's guard is the door's lock), so the
    shadow's replica applies it where the live engine did and never decides
    otherwise; the shadow follows on its own thread."""
    import sys
    import time

    core, market, clock = _dp_door()
    market.guard = core._lock  # as serve sets it (without it this fails: the replica stops, deciding otherwise)
    s = Shadow(parse_allocations(DP_ALLOCATIONS, "candidate.xml"), threaded=True)
    s.attach(core)
    stop, made, changes = threading.Event(), threading.Event(), [0]

    def operator():
        while not stop.is_set():
            market.set_spending("root.dp.alice", (1, 4, 2)[changes[0] % 3])
            changes[0] += 1
            made.set()
            time.sleep(0.001)  # an eager operator, not a flood

    def paced(step):  # at least one change every 5 steps, however the threads are scheduled
        if step % 5 == 0:
            assert made.wait(30), "the operator's thread made no change"
            made.clear()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads interleave inside the door's calls, not only between them
    t = threading.Thread(target=operator, daemon=True)
    t.start()
    try:
        _dp_drive(core, clock, 1200, paced)
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(switch)
    deadline = time.monotonic() + 60
    while s.state == "running" and s.status()["backlog"] and time.monotonic() < deadline:
        time.sleep(0.01)
    st = s.status()
    s.stop()
    assert changes[0] >= 240, changes
    assert st["state"] == "running", st["error"]
    # The replica decided every heartbeat as the live engine did (else it stops
    # with the reason): those behind the backlog's limit it followed without
    # comparing them.
    assert st["compared"] + st["skipped"] == 900 and st["compared"] > 0, st
    # Copies made after skipped heartbeats decide as the live engine too: the
    # market's weights come with them (tests/test_dynamic_priority.py).
    assert st["diverged"] == 0, list(s.diverging)[:1]
