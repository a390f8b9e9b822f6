"""Delay scheduling, as in the paper's pseudo-code: a job that cannot run
locally is skipped; after T1 it may run rack-local, after T1+T2 anywhere; a
local launch resets its level."""

import pytest

from slotwise.cluster import Request
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from support import SLOT, make_engine, submit

HB = 1.0


def delay_engine(t1=3.0, t2=3.0, nodes=4, racks=2, **kw):
    s = EngineSettings(heartbeat_interval=HB, node_locality_delay=t1, rack_locality_delay=t2, **kw)
    return make_engine(nodes=nodes, slots=2, racks=racks, settings=s)


def local_job(e, app_id="j", host="host0", rack="/rack0", tasks=1):
    return submit(e, app_id, "p", tasks=tasks, hosts={host: tasks}, racks={rack: tasks})


def test_job_waits_for_its_node_then_runs_there():
    e, clock = delay_engine()
    local_job(e)  # data on host0 (rack0); host1 is on rack1, host2 on rack0
    assert e.heartbeat("n1") == []
    clock.advance(HB)
    assert e.heartbeat("n2") == []
    clock.advance(HB)
    [a] = e.heartbeat("n0")
    assert a.locality == "node_local"


def test_rack_local_after_t1_and_off_switch_after_t1_plus_t2():
    e, clock = delay_engine(t1=3, t2=3)
    local_job(e, tasks=3)
    # Skipped on off-rack host1 at t=0..3; each skip is credited on the next heartbeat.
    for _ in range(4):
        assert e.heartbeat("n1") == []
        clock.advance(HB)
    assert e.apps["j"].locality_wait == pytest.approx(3)
    got = e.heartbeat("n2")  # same rack as the data: allowed once wait >= T1
    assert [a.locality for a in got] == ["rack_local", "rack_local"]  # n2 has two slots
    assert e.apps["j"].locality_level == 1 and e.apps["j"].locality_wait == 0
    # At level 1 it needs T2 more before it may go off-rack.
    t_rack = clock.now()
    while not (got := e.heartbeat("n1")):
        clock.advance(HB)
    assert got[0].locality == "off_switch"
    assert clock.now() - t_rack == pytest.approx(3)  # skipped at +0,+1,+2: waited 3 s at +3


def test_level_zero_goes_off_rack_only_after_t1_plus_t2():
    e, clock = delay_engine(t1=2, t2=3)
    local_job(e)
    while not (got := e.heartbeat("n1")):
        clock.advance(HB)
    assert got[0].locality == "off_switch"
    assert clock.now() == pytest.approx(5)


def test_local_launch_resets_the_level():
    e, clock = delay_engine(t1=1, t2=1)
    local_job(e, tasks=5)
    e.heartbeat("n1")
    clock.advance(5)
    assert e.heartbeat("n1")[0].locality == "off_switch"
    assert e.apps["j"].locality_level == 2
    e.heartbeat("n0")
    assert e.apps["j"].locality_level == 0


def test_zero_delay_turns_it_off():
    e, _ = delay_engine(t1=0, t2=0)
    local_job(e)
    [a] = e.heartbeat("n1")
    assert a.locality == "off_switch"


def test_default_delay_is_one_and_a_half_heartbeats():
    s = EngineSettings(heartbeat_interval=2.0)
    assert s.t1 == 3.0 and s.t2 == 3.0


def test_skipped_job_lets_a_local_job_behind_it_run():
    e, clock = delay_engine()
    local_job(e, "head", host="host0", rack="/rack0")
    clock.advance(1)
    local_job(e, "behind", host="host1", rack="/rack1")
    e.update()
    [a] = e.heartbeat("n1")
    assert a.app_id == "behind"
    assert "head" in e._skipped


def test_requests_without_locality_do_not_wait():
    e, _ = delay_engine()
    submit(e, "r", "p", tasks=1)  # e.g. reduces: only "*"
    [a] = e.heartbeat("n3")
    assert a.locality == "off_switch"


def test_strict_locality_never_relaxes():
    e, clock = delay_engine(t1=0, t2=0)
    e.add_app("s", "u", queue="p")
    e.apps["s"].has_am = True
    e.update_requests("s", [Request(1, SLOT, 1, hosts={"host0": 1}, relax_locality=False)])
    clock.advance(100)
    assert e.heartbeat("n1") == []
    assert e.heartbeat("n0")[0].locality == "node_local"


def test_count_mode_uses_missed_opportunities_per_cluster_size():
    s = EngineSettings(locality_mode="count", node_locality_threshold=0.5, rack_locality_threshold=0.5)
    e, _ = make_engine(nodes=4, slots=2, racks=2, settings=s)
    local_job(e)
    assert e.heartbeat("n1") == []  # 1 missed of 2 needed
    assert e.heartbeat("n3") == []  # 2 missed: rack-local allowed next
    [a] = e.heartbeat("n2")
    assert a.locality == "rack_local"
