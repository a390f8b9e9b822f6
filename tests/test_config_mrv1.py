"""The MRv1 (Hadoop 0.20/0.21 pools file) parser and its mapping onto queues."""

from __future__ import annotations

import math
from pathlib import Path
from textwrap import dedent

import pytest

from slotwise.config import ConfigErrors, load_allocations, parse_allocations
from slotwise.config.model import PlacementRule, ResourceSpec
from slotwise.resources import Resource
from support import warnings_of

CONF = Path(__file__).resolve().parent.parent / "conf"


def doc(body: str) -> str:
    """<allocations> on line 1, so the body's first line is line 2."""
    return "<allocations>\n" + dedent(body).strip("\n") + "\n</allocations>\n"


def parse(body: str):
    return parse_allocations(doc(body), "pools.xml")


def errors(body: str) -> list[tuple[int, str]]:
    with pytest.raises(ConfigErrors) as info:
        parse(body)
    return [(e.line, e.message) for e in info.value.errors]


@pytest.fixture(scope="module")
def pools():
    return load_allocations(CONF / "mrv1-pools.xml")


def test_example_file(pools):
    cfg = pools
    assert cfg.format == "mrv1"
    qs = cfg.queues()
    assert list(qs) == ["root", "root.production", "root.research", "root.adhoc"]
    prod = qs["root.production"]
    assert (prod.min_maps, prod.min_reduces, prod.max_maps, prod.max_reduces) == (20, 10, 80, 40)
    assert prod.weight == 2.0 and prod.min_share_preemption_timeout == 300
    assert prod.line == 7
    research = qs["root.research"]
    assert research.max_running_apps == 10 and research.scheduling_policy == "fifo"
    assert research.max_maps is None and research.max_resources is None
    assert qs["root.adhoc"].weight == 0.5
    assert cfg.users["etl"].max_running_apps == 6
    assert cfg.user_max_apps("etl") == 6 and cfg.user_max_apps("joe") == 3
    assert cfg.queue_max_apps_default == 20
    assert cfg.user_max_apps_default == 3
    assert cfg.default_min_share_preemption_timeout == 600
    assert cfg.default_fair_share_preemption_timeout == 900
    assert cfg.default_queue_scheduling_policy == "fair"


def test_pools_limits_are_slot_dimensions(pools):
    """minMaps/maxMaps are the map_slots dimension, minReduces/maxReduces the
    reduce_slots one; memory and vcores stay unlimited."""
    q = pools.queues()
    prod = q["root.production"]
    assert prod.min_resources == Resource(map_slots=20, reduce_slots=10)
    assert prod.max_resources.resolve(Resource(1000, 1000, 1000, 1000)) == Resource(
        float("inf"), float("inf"), 80, 40)
    assert q["root.research"].min_resources == Resource(map_slots=5, reduce_slots=5)
    assert q["root.adhoc"].min_resources is None
    assert q["root.adhoc"].max_resources.resolve(Resource(0, 0, 100, 100)).reduce_slots == 10


def test_placement_is_pool_property_then_user(pools):
    assert pools.placement_rules == [PlacementRule("specified", create=True), PlacementRule("user", create=True)]


def test_hadoop_020_doc_sample():
    cfg = parse("""
        <pool name="sample_pool">
          <minMaps>5</minMaps>
          <minReduces>5</minReduces>
          <weight>2.0</weight>
        </pool>
        <user name="sample_user">
          <maxRunningJobs>6</maxRunningJobs>
        </user>
        <userMaxJobsDefault>3</userMaxJobsDefault>
    """)
    assert cfg.format == "mrv1"
    q = cfg.queues()["root.sample_pool"]
    assert (q.min_maps, q.min_reduces, q.weight, q.min_resources) == (5, 5, 2.0, Resource(map_slots=5, reduce_slots=5))
    assert cfg.users["sample_user"].max_running_apps == 6 and cfg.user_max_apps_default == 3
    assert cfg.default_min_share_preemption_timeout == math.inf


def test_scheduling_mode_alone_means_mrv1():
    cfg = parse("""
        <pool name="a"><schedulingMode>FIFO</schedulingMode></pool>
        <pool name="b"/>
    """)
    assert cfg.format == "mrv1" and cfg.queues()["root.a"].scheduling_policy == "fifo"


def test_default_pool_scheduling_mode():
    assert parse("<defaultPoolSchedulingMode>fifo</defaultPoolSchedulingMode>").default_queue_scheduling_policy == "fifo"


@pytest.mark.parametrize("element, value, message", [
    ("minMaps", "-1", 'minMaps in pool a must be a non-negative integer, got "-1"'),
    ("minReduces", "two", 'minReduces in pool a must be a non-negative integer, got "two"'),
    ("maxMaps", "1.5", "maxMaps in pool a must be a non-negative integer"),
    ("maxReduces", "-7", "maxReduces in pool a must be a non-negative integer"),
    ("maxRunningJobs", "x", "maxRunningJobs in pool a must be a non-negative integer"),
    ("weight", "-2", "weight in pool a must be a non-negative number"),
    ("minSharePreemptionTimeout", "1.5", "must be a whole number of seconds"),
    ("schedulingMode", "drf", 'schedulingMode in pool a must be "fair" or "fifo", got "drf"'),
])
def test_bad_pool_values(element, value, message):
    errs = errors(f"""
        <userMaxJobsDefault>1</userMaxJobsDefault>
        <pool name="a">
          <{element}>{value}</{element}>
        </pool>
    """)  # userMaxJobsDefault marks the file as MRv1 whatever the element
    assert len(errs) == 1 and errs[0][0] == 4 and message in errs[0][1], errs


@pytest.mark.parametrize("element, value, message", [
    ("poolMaxJobsDefault", "-1", "must be a non-negative integer"),
    ("userMaxJobsDefault", "x", "must be a non-negative integer"),
    ("defaultMinSharePreemptionTimeout", "0.5", "seconds"),
    ("fairSharePreemptionTimeout", "later", "seconds"),
    ("defaultPoolSchedulingMode", "drf", 'must be "fair" or "fifo"'),
])
def test_bad_top_level_values(element, value, message):
    errs = errors(f"""
        <pool name="a"><minMaps>1</minMaps></pool>
        <{element}>{value}</{element}>
    """)
    assert len(errs) == 1 and errs[0][0] == 3 and errs[0][1].startswith(f"{element} in <allocations> ")
    assert message in errs[0][1]


def test_pools_are_flat():
    assert errors("""
        <pool name="a">
          <minMaps>1</minMaps>
          <pool name="b"><minMaps>1</minMaps></pool>
        </pool>
    """) == [(4, "MRv1 pools are flat: <pool> inside pool a is not allowed")]


def warns(body: str) -> list[tuple[int, str]]:
    """The warnings of a file that loads: (line, message)."""
    return warnings_of(parse(body))


def test_mrv1_elements_in_a_yarn_file_are_ignored_as_yarn_does():
    """A file with any YARN-only element is a YARN file: its MRv1 elements are
    ones YARN ignores (a stray <maxRunningJobs> no longer makes it MRv1)."""
    body = """
        <pool name="a">
          <minMaps>1</minMaps>
          <maxResources>10 mb, 1 vcores</maxResources>
          <queue name="b"/>
        </pool>
        <queue name="c"><weight>1</weight></queue>
        <user name="u"><maxRunningJobs>1</maxRunningJobs></user>
        <queuePlacementPolicy><rule name="reject"/></queuePlacementPolicy>
        <userMaxAppsDefault>3</userMaxAppsDefault>
    """
    cfg = parse(body)
    assert cfg.format == "yarn" and set(cfg.queues()) == {"root", "root.a", "root.a.b", "root.c"}
    assert warns(body) == [
        (3, "<minMaps> in queue root.a is an MRv1 element; a YARN file ignores it, as YARN does"),
        (8, "<maxRunningJobs> in user u is an MRv1 element; a YARN file ignores it, as YARN does; "
            "did you mean <maxRunningApps>?"),
    ]


def test_unknown_elements_and_attributes():
    assert warns("""
        <pool name="a" kind="x">
          <minMaps>1</minMaps>
          <minSlots>3</minSlots>
        </pool>
        <user name="u"><maxJobs>1</maxJobs></user>
        <poolDefaults/>
    """) == [
        (2, 'unknown attribute "kind" on <pool> in pool a is ignored, as YARN ignores it'),
        (4, "unknown element <minSlots> in pool a is ignored, as Hadoop 1 ignores it"),
        (6, "unknown element <maxJobs> in user u is ignored, as Hadoop 1 ignores it; did you mean <maxRunningJobs>?"),
        (7, "unknown element <poolDefaults> in <allocations> is ignored, as Hadoop 1 ignores it; "
            "did you mean <poolMaxJobsDefault>?"),
    ]


def test_names():
    assert errors("""
        <pool name="a"><minMaps>1</minMaps></pool>
        <pool name="a"><minMaps>2</minMaps></pool>
        <pool name="b.c"/>
        <pool name=""/>
        <pool><maxMaps>-1</maxMaps></pool>
        <user name="u"/>
        <user name="u"/>
        <user/>
    """) == [
        (3, "duplicate pool a (first at line 2)"),
        (4, '<pool> name "b.c" must not contain "." (nest the element instead)'),
        (5, "<pool> needs a non-empty name attribute"),
        (6, "<pool> needs a non-empty name attribute"),
        (6, 'maxMaps in pool ? must be a non-negative integer, got "-1"'),
    ]


def test_element_given_twice():
    body = """
        <pool name="a">
          <minMaps>1</minMaps>
          <minMaps>2</minMaps>
        </pool>
    """
    assert warns(body) == [(4, "<minMaps> given twice in pool a (first at line 3): the last one counts, as in YARN")]
    assert parse(body).queues()["root.a"].min_maps == 2


def test_all_errors_collected():
    with pytest.raises(ConfigErrors) as info:
        parse("""
            <pool name="a">
              <minMaps>-1</minMaps>
              <maxReduces>lots</maxReduces>
            </pool>
            <poolMaxJobsDefault>x</poolMaxJobsDefault>
        """)
    assert [e.line for e in info.value.errors] == [3, 4, 6]
    assert all(e.file == "pools.xml" for e in info.value.errors)


def test_a_pool_with_only_map_limits_has_no_reduce_limits_as_in_the_original():
    """The original Fair Scheduler keeps minMaps/maxMaps to maps and
    minReduces/maxReduces to reduces; setting one kind leaves the other
    unlimited and without a min share."""
    from slotwise.config import parse_allocations
    from slotwise.resources import Resource

    cfg = parse_allocations("""<allocations>
      <pool name="maps_only"><minMaps>4</minMaps><maxMaps>6</maxMaps></pool>
      <pool name="reduces_only"><minReduces>2</minReduces></pool>
    </allocations>""")
    q = cfg.queues()
    cluster = Resource(0, 0, 100, 100)
    assert q["root.maps_only"].min_resources == Resource(map_slots=4)
    assert q["root.maps_only"].max_resources.resolve(cluster) == Resource(float("inf"), float("inf"), 6, float("inf"))
    assert q["root.reduces_only"].min_resources == Resource(reduce_slots=2)
    assert q["root.reduces_only"].max_resources is None