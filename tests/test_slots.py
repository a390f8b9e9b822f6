"""MRv1-style slot clusters: maps and reduces shared separately."""

import pytest

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.settings import EngineSettings
from slotwise.slots import SlotScheduler, pool_for_job

MRV1 = """<allocations>
  <pool name="prod"><minMaps>6</minMaps><minReduces>1</minReduces></pool>
  <pool name="dev"><maxReduces>1</maxReduces></pool>
</allocations>"""


def make():
    cfg = parse_allocations(MRV1, "test.xml")
    s = SlotScheduler(cfg, ManualClock(), EngineSettings(node_locality_delay=0, rack_locality_delay=0))
    for i in range(2):
        s.add_node(f"n{i}", f"h{i}", "/r", map_slots=4, reduce_slots=2)
    return s


def test_pool_name_property_defaults_to_user_and_can_be_overridden():
    cfg = parse_allocations(MRV1, "test.xml")
    assert pool_for_job(cfg, "ann", {}) == "ann"
    assert pool_for_job(cfg, "ann", {"pool.name": "prod"}) == "prod"
    cfg.pool_name_property = "group.name"
    assert pool_for_job(cfg, "ann", {"group.name": "eng"}) == "eng"


def test_maps_and_reduces_have_their_own_min_and_max_shares():
    s = make()
    s.add_job("p", "ann", {"pool.name": "prod"})
    s.add_job("d", "bob", {"pool.name": "dev"})
    s.set_tasks("p", maps=20, reduces=5)
    s.set_tasks("d", maps=20, reduces=5)
    s.update()
    got = {"map": [], "reduce": []}
    for n in ("n0", "n1"):
        for kind, assigned in s.heartbeat(n).items():
            got[kind] += assigned
    maps = [a.app_id for a in got["map"]]
    reduces = [a.app_id for a in got["reduce"]]
    assert maps.count("p") == 6 and maps.count("d") == 2  # prod's min share of 6 map slots first
    assert reduces.count("d") == 1 and reduces.count("p") == 3  # dev capped at 1 reduce slot
    m = s.engines["map"].pools["root.prod"]
    assert m.min_share.memory_mb == 6
    assert s.engines["reduce"].pools["root.prod"].min_share.memory_mb == 1
    assert m.fair_share.memory_mb == pytest.approx(6)
