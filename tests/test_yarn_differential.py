"""Generated allocation files, read by Slotwise and by YARN 3.5's own
FairScheduler (tests/yarnref.py): the same verdict, and when both load the
file, the same values for every queue (weight, min share, limits, policy,
preemption threshold), the same steady fair shares, and the same fair shares
with one runnable app in every leaf (Slotwise's apps ask for the whole
cluster, so that no share is capped at demand: issue 10, item 3).

Where Slotwise deliberately differs, the generator leaves the case out and
says so here:
- ``fifo`` as a parent's policy: YARN only logs an error and keeps the
  parent's old policy; Slotwise refuses the file.
- ``drf`` under a ``fair`` parent: YARN logs an error and leaves that queue
  out; Slotwise warns and runs it as drf.

Not yet the same (issue 10, item 3), so not compared: steady shares when
min shares add up to more than their parent's share (YARN grants them all).
- a queue declared both as a leaf and as a parent, and ``root`` configured
  with ``ROOT`` spelt otherwise: YARN ends in states Slotwise does not model.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from slotwise.config import ConfigErrors, parse_allocations
from support import slotwise_shares, slotwise_steady
from yarnref import yarn  # noqa: F401 (the fixture)

CLUSTER = (65536, 64)



NAMES = st.sampled_from(["a", "b", "prod", "etl", "x y", " c ", "a"])
NUMBER = st.sampled_from(["0", "1", "2", "2.5", "10", "-1", "abc", "1e3", " 3 ", "+4", "0.5"])
RESOURCE = st.sampled_from([
    "1024 mb, 1 vcores", "2048mb,2vcores", "4096 mb, 4 vcores", "memory-mb=8192, vcores=8",
    "memory-mb=1024", "50%", "25% memory, 50% cpu", "10 vcores, 512 mb", "lots", "-5 mb, 1 vcores",
    "5120.9 mb, 2 vcores", "memory-mb=1024, vcores=2,", "1024 MB, 1 VCORES", "1024 mb 2 vcores",
    "memory-mb=1024,,vcores=1", "150%",
])
FRACTION = st.sampled_from(["0", "0.5", "1", "1.5", "-1", "0.25", "x"])
MISSPELT = st.sampled_from(["wieght", "maxApps", "maxRunningJobs", "minMaps", "defaultQueueSchedulingPolicy",
                            "schedulingMode", "bogus"])


def leaf_elements():
    return st.lists(st.one_of(
        st.tuples(st.just("weight"), NUMBER),
        st.tuples(st.just("minResources"), RESOURCE),
        st.tuples(st.just("maxResources"), RESOURCE),
        st.tuples(st.just("maxRunningApps"), NUMBER),
        st.tuples(st.just("maxAMShare"), FRACTION),
        st.tuples(st.just("fairSharePreemptionThreshold"), FRACTION),
        st.tuples(st.just("minSharePreemptionTimeout"), NUMBER),
        st.tuples(st.just("schedulingPolicy"), st.sampled_from(["fair", "drf", "fifo", "FAIR", "lottery"])),
        st.tuples(MISSPELT, st.just("1")),
    ), max_size=4)


def parent_elements():
    return st.lists(st.one_of(
        st.tuples(st.just("weight"), NUMBER),
        st.tuples(st.just("minResources"), RESOURCE),
        st.tuples(st.just("maxRunningApps"), NUMBER),
        st.tuples(st.just("schedulingPolicy"), st.sampled_from(["fair", "drf"])),
        st.tuples(MISSPELT, st.just("1")),
    ), max_size=3)


@st.composite
def queue(draw, depth: int) -> str:
    name = draw(NAMES)
    children = draw(st.lists(queue(depth + 1), max_size=2)) if depth < 2 else []
    attrs = ' type="parent"' if not children and draw(st.booleans()) and draw(st.booleans()) else ""
    parentish = bool(children) or attrs
    body = draw(parent_elements() if parentish else leaf_elements())
    inner = "".join(f"<{tag}>{value}</{tag}>" for tag, value in body) + "".join(children)
    return f'<queue name="{name}"{attrs}>{inner}</queue>'


RULES = st.lists(st.sampled_from([
    '<rule name="specified"/>', '<rule name="specified" create="false"/>', '<rule name="user"/>',
    '<rule name="user" create="false"/>', '<rule name="primaryGroup" create="false"/>',
    '<rule name="secondaryGroupExistingQueue"/>', '<rule name="default"/>', '<rule name="default" queue="a"/>',
    '<rule name="reject"/>', '<rule name="nestedUserQueue"><rule name="primaryGroup"/></rule>',
    '<rule name="nestedUserQueue"><rule name="secondaryGroupExistingQueue"/></rule>',
    '<rule name="magic"/>',
]), min_size=1, max_size=3)


@st.composite
def allocation_file(draw) -> str:
    parts = draw(st.lists(queue(0), min_size=1, max_size=3))
    top = draw(st.lists(st.one_of(
        st.tuples(st.just("userMaxAppsDefault"), NUMBER),
        st.tuples(st.just("queueMaxAppsDefault"), NUMBER),
        st.tuples(st.just("defaultQueueSchedulingPolicy"), st.sampled_from(["fair", "drf"])),
        st.tuples(st.just("defaultFairSharePreemptionThreshold"), FRACTION),
        st.tuples(st.just("queueMaxAMShareDefault"), FRACTION),
        st.tuples(st.sampled_from(["defaultSchedulingMode", "poolMaxJobsDefault", "queueMaxApps"]), st.just("3")),
    ), max_size=3))
    parts += [f"<{tag}>{value}</{tag}>" for tag, value in top]
    if draw(st.booleans()):
        parts.append(f'<user name="bob"><maxRunningApps>{draw(NUMBER)}</maxRunningApps></user>')
    if draw(st.booleans()):
        parts.append("<queuePlacementPolicy>" + "".join(draw(RULES)) + "</queuePlacementPolicy>")
    return "<allocations>" + "".join(parts) + "</allocations>"


def mins_overcommit(cfg, yarn_queues: dict) -> bool:
    """Some pool's children have min shares adding up to more than its
    steady share: YARN then grants every min share in full (the cluster is
    over-committed); Slotwise still scales them down (the design document's
    rule), a difference not yet removed."""
    for q in cfg.root.walk():
        mins = sum(c.min_resources.memory_mb for c in q.children if c.min_resources)
        if q.children and mins > yarn_queues[q.name]["steady"][0]:
            return True
    return False


def drf_under_fair(cfg) -> bool:
    return any("uses drf under a fair parent" in w for w in cfg.warnings)


def declared_as_leaf_and_parent(xml: str) -> bool:
    """A queue (by full name, across repeated declarations) declared once as
    a parent and once as a leaf: YARN ends with it in both of its configured
    sets (left out, above)."""
    from lxml import etree

    kinds: dict[str, set[bool]] = {}

    def walk(el, prefix: str) -> None:
        for child in el.findall("queue"):
            name = f"{prefix}.{(child.get('name') or '').strip()}"
            kinds.setdefault(name, set()).add(bool(child.findall("queue")) or child.get("type") == "parent")
            walk(child, name)

    walk(etree.fromstring(xml), "root")
    return any(len(k) > 1 for k in kinds.values())


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(xml=allocation_file())
def test_slotwise_reads_generated_files_as_yarn_3_5_does(yarn, xml):
    assume(not declared_as_leaf_and_parent(xml))
    try:
        cfg = parse_allocations(xml, "gen.xml")
    except ConfigErrors as e:
        answer = yarn.ask(xml, *CLUSTER)
        assert not answer["ok"], f"Slotwise refused what YARN loads: {e}\n{xml}"
        return
    leaves = [q.name for q in cfg.root.walk() if not q.children and not q.is_parent and q.name != "root"]
    answer = yarn.ask(xml, *CLUSTER, active=leaves)  # one runnable app in every leaf
    assert answer["ok"], f"Slotwise loaded what YARN refuses ({answer['error'][-1]}):\n{xml}"
    if drf_under_fair(cfg):
        return  # a named difference (above)
    ours = cfg.queues()
    theirs = answer["queues"]
    assert set(theirs) == set(ours), xml
    for name, row in theirs.items():
        q = ours[name]
        where = f"{name} in\n{xml}"
        assert row["weight"] == pytest.approx(q.weight), where
        if name != "root":
            minimum = q.min_resources
            assert row["min"] == ([minimum.memory_mb, minimum.vcores] if minimum else [0, 0]), where
        limit = q.max_running_apps if q.max_running_apps is not None else cfg.queue_max_apps_default
        # Below 0 no app runs in YARN; Slotwise stores that as 0.
        assert max(row["max_running_apps"], 0) == (limit if limit is not None else 2**31 - 1), where
        policy = q.scheduling_policy or cfg.default_queue_scheduling_policy
        assert row["policy"].lower() == policy, where
        if q.fair_share_preemption_threshold is not None:
            assert row["fair_share_preemption_threshold"] == pytest.approx(q.fair_share_preemption_threshold), where
        if row["leaf"]:
            share = q.max_am_share if q.max_am_share is not None else cfg.queue_max_am_share_default
            assert row["max_am_share"] == pytest.approx(share), where
    if mins_overcommit(cfg, theirs):
        return  # min shares over their parent's share: YARN grants them all (issue 10, item 3: not yet)
    steady = slotwise_steady(cfg, CLUSTER)
    fair = slotwise_shares(xml, *CLUSTER, leaves)
    for name, row in theirs.items():
        if name != "root":
            for what, ours, yarn_mb in (("steady", steady[name], row["steady"][0]),
                                        ("fair", fair[name][0], row["fair"][0])):
                assert abs(ours - yarn_mb) <= max(1.0, 0.005 * yarn_mb), f"{what} share of {name} in\n{xml}"
