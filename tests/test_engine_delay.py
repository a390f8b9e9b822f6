"""Delay scheduling, as in the paper's pseudo-code: a job that cannot run
locally is skipped; after T1 it may run rack-local, after T1+T2 anywhere; a
local launch resets its level."""

import pytest

from slotwise.engine import Request
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


def test_t1_is_the_node_wait_and_t2_the_rack_wait_when_they_differ():
    """node_locality_delay feeds T1 (node-local to rack-local) and
    rack_locality_delay T2 (rack-local to off-switch): with T1 = 1 and
    T2 = 4 the job runs rack-local after 1 s and then off-rack 4 s after
    that launch. Fails if the settings feed them the other way round (the
    other tests use T1 = T2, or read only T1 + T2)."""
    e, clock = delay_engine(t1=1, t2=4)  # host0, host2 on rack0; host1, host3 on rack1
    local_job(e, tasks=3)
    start = clock.now()
    while not (got := e.heartbeat("n2")):  # same rack as the data, not its host
        clock.advance(HB)
        assert clock.now() - start <= 10
    assert [a.locality for a in got] == ["rack_local", "rack_local"]
    assert clock.now() - start == pytest.approx(1)
    t_rack = clock.now()
    while not (got := e.heartbeat("n1")):  # off-rack
        clock.advance(HB)
        assert clock.now() - t_rack <= 10
    assert got[0].locality == "off_switch"
    assert clock.now() - t_rack == pytest.approx(4)


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


def test_count_mode_a_launch_starts_the_count_of_missed_opportunities_again():
    """Count mode counts the offers an app missed since its last launch
    (locality.CountDelay): after a node-local launch the count starts from
    zero, so with a threshold of one whole cluster (4 nodes) it
    is not allowed rack-local until four more nodes have passed it over.
    Fails if a launch leaves the count where it was (the two misses before
    the launch would let the fourth offer after it run rack-local)."""
    s = EngineSettings(locality_mode="count", node_locality_threshold=1.0, rack_locality_threshold=1.0,
                       assign_multiple=False)  # one container per heartbeat: one launch
    e, _ = make_engine(nodes=4, slots=2, racks=2, settings=s)  # host0, host2 on rack0; host1, host3 on rack1
    local_job(e, tasks=4)
    assert e.heartbeat("n1") == []  # missed: 1
    assert e.heartbeat("n3") == []  # missed: 2
    [a] = e.heartbeat("n0")  # its own node: launches there, node-local, before the threshold (3 of 4)
    assert a.locality == "node_local"
    assert e.heartbeat("n1") == []  # missed: 1 since the launch
    assert e.heartbeat("n3") == []  # 2
    assert e.heartbeat("n2") == []  # 3 of 4: still node-local only, so not on host2 in its rack
    assert e.heartbeat("n1") == []  # 4: rack-local from now on, but n1 is off-rack
    [a] = e.heartbeat("n2")
    assert a.locality == "rack_local"


def test_count_mode_node_threshold_gates_rack_local_and_rack_threshold_off_switch():
    """YARN's two thresholds, each a fraction of the cluster's nodes:
    locality.threshold.node (here 0.25: one missed offer on 4 nodes) before
    rack-local, locality.threshold.rack (1.0: four) before off-switch. Fails
    if the settings feed them the other way round (the other count test
    uses the same value for both)."""
    s = EngineSettings(locality_mode="count", node_locality_threshold=0.25, rack_locality_threshold=1.0,
                       assign_multiple=False)
    e, _ = make_engine(nodes=4, slots=2, racks=2, settings=s)  # host0, host2 on rack0; host1, host3 on rack1
    local_job(e, tasks=4)
    assert e.heartbeat("n1") == []  # one miss: rack-local allowed now, but n1 is off-rack
    [a] = e.heartbeat("n2")
    assert a.locality == "rack_local"
    for node in ("n1", "n3", "n1"):  # off-rack, 1 to 3 misses since that launch: not yet
        assert e.heartbeat(node) == []
    [a] = e.heartbeat("n3")  # the fourth
    assert a.locality == "off_switch"


# YARN's relaxLocality rules, as the shim checks them (FifoFallback.allows,
# after FairScheduler's hasContainerForNode): what Python may offer on a
# node of host h1 in rack /r1. A request for specific nodes with relaxLocality
# false, as AMRMClient sends it: node asks, the inferred racks' asks strict,
# ANY strict.
N, R, O = "node_local", "rack_local", "off_switch"


@pytest.mark.parametrize("hosts, racks, relax, strict, best", [
    ({"h1": 1}, {"/r1": 1}, True, (), N),
    ({"h2": 1}, {"/r1": 1}, True, (), R),
    ({"h2": 1}, {"/r2": 1}, True, (), O),
    ({}, {}, True, (), O),                         # no preference (reduces)
    ({"h2": 1}, {"/r1": 1}, False, ("/r1",), None),  # strict nodes: not rack-local on their rack
    ({"h1": 1}, {"/r1": 1}, False, ("/r1",), N),     # ... node-local on them
    ({"h2": 1}, {"/r2": 1}, False, ("/r2",), None),  # ... nor anywhere else
    ({"h2": 1}, {"/r1": 1}, False, (), R),           # a rack asked for by name may be relaxed to
    ({}, {}, True, ("/r1",), None),                  # a strict rack stops off-switch there, ANY or not
    ({}, {}, False, (), None),                       # a strict ANY with no ask anywhere: never
])
def test_the_best_level_on_a_node_follows_yarns_relax_locality_rules(hosts, racks, relax, strict, best):
    from slotwise.engine import LOCALITY_NAMES, Node

    req = Request(1, SLOT, 1, hosts, racks, relax, strict)
    level = req.locality_on(Node("h1:1", "h1", "/r1", SLOT))
    assert (None if level is None else LOCALITY_NAMES[level]) == best


def test_a_job_asking_for_its_nodes_strictly_runs_only_there_however_long_it_waits():
    e, clock = delay_engine(t1=1, t2=1)  # host0, host2 on rack0; host1, host3 on rack1
    e.add_app("s", "u", queue="p")
    e.apps["s"].has_am = True
    e.update_requests("s", [Request(1, SLOT, 1, {"host0": 1}, {"/rack0": 1}, False, ["/rack0"])])
    for _ in range(5):
        clock.advance(HB)
        assert e.heartbeat("n2") == [] and e.heartbeat("n1") == []
    [a] = e.heartbeat("n0")
    assert a.locality == "node_local"


@pytest.mark.parametrize("strict", [(), ("/r1",)])
@pytest.mark.parametrize("relax", [True, False])
@pytest.mark.parametrize("racks", [{}, {"/r1": 1}, {"/r2": 1}])
@pytest.mark.parametrize("hosts", [{}, {"h1": 1}, {"h2": 1}])
def test_the_best_level_is_the_first_level_the_rule_allows(hosts, racks, relax, strict):
    """locality_on writes allows_on out for speed: the two must agree."""
    from slotwise.engine import LEVELS, Node

    req, node = Request(1, SLOT, 1, hosts, racks, relax, strict), Node("h1:1", "h1", "/r1", SLOT)
    assert req.locality_on(node) == next((lv for lv in LEVELS if req.allows_on(node, lv)), None)
