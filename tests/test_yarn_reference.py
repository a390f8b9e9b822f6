"""Slotwise against YARN 3.5's own FairScheduler (tests/yarnref.py): the
example files load in YARN as they do in Slotwise, and fair shares agree
where the two rules agree (weights, nesting, min shares that fit, max
shares). Cases where they are known to differ are not here yet (issue 10:
demand caps, max below min, over-committed min shares)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slotwise.config import ConfigErrors, parse_allocations
from support import slotwise_shares
from yarnref import yarn  # noqa: F401 (the fixture)

CONF = Path(__file__).resolve().parent.parent / "conf"
DATA = Path(__file__).resolve().parent / "data"



def close(a: float, b: float) -> bool:
    return abs(a - b) <= max(1.0, 0.005 * max(abs(a), abs(b)))


def test_the_demo_allocation_file_loads_in_yarn_without_a_warning(yarn):
    answer = yarn.ask((CONF / "allocations.xml").read_text(), 16384, 16)
    assert answer["ok"], answer.get("error")
    assert answer["warnings"] == []
    assert {"root.prod", "root.research", "root.adhoc", "root.users"} <= set(answer["queues"])
    q = answer["queues"]
    assert q["root.prod"]["weight"] == 2.0 and q["root.prod"]["min"] == [4096, 4]
    assert q["root.prod"]["policy"] == "FIFO" and q["root.research"]["max_running_apps"] == 3
    assert q["root.prod"]["min_share_preemption_timeout_ms"] == 30_000
    assert q["root.research"]["fair_share_preemption_timeout_ms"] == 60_000
    assert [r["rule"].rsplit(".", 1)[-1] for r in answer["placement"]] == ["SpecifiedPlacementRule", "UserPlacementRule"]
    # Slotwise reads the same values from it.
    cfg = parse_allocations((CONF / "allocations.xml").read_text(), "allocations.xml")
    for name, queue in cfg.queues().items():
        yarn_row = q[name]
        assert yarn_row["weight"] == queue.weight, name
        minimum = queue.min_resources
        assert yarn_row["min"] == ([minimum.memory_mb, minimum.vcores] if minimum else [0, 0]), name
        assert yarn_row["max_running_apps"] == (queue.max_running_apps if queue.max_running_apps is not None
                                                else 2**31 - 1), name
        assert yarn_row["leaf"] == (not queue.children and not queue.is_parent), name


def test_the_hadoop_documentation_example_is_refused_by_yarn_3_5(yarn):
    """The Fair Scheduler page's own example puts maxAMShare on a parent queue,
    which YARN 3.5 refuses (as Slotwise does: test_config_yarn); the copy in
    conf/ has it on the leaf instead."""
    answer = yarn.ask((DATA / "hadoop-doc-example.xml").read_text())
    assert not answer["ok"]
    assert "cannot also include a maxAMShare element" in answer["error"][-1]
    fixed = yarn.ask((CONF / "hadoop-doc-example.xml").read_text())
    assert fixed["ok"], fixed.get("error")
    assert fixed["queues"]["root.sample_queue.sample_sub_queue"]["max_am_share"] == pytest.approx(0.1)


CASES = [
    # flat weights
    ('<allocations><queue name="a"><weight>3</weight></queue><queue name="b"/><queue name="c"/></allocations>',
     ["root.a", "root.b"]),
    # nested queues, fair inside fair
    ('<allocations><queue name="eng"><weight>2</weight><queue name="x"/><queue name="y"><weight>3</weight></queue>'
     '</queue><queue name="ops"/></allocations>', ["root.eng.x", "root.eng.y", "root.ops"]),
    # a min share that fits, and a max share that binds
    ('<allocations><queue name="prod"><minResources>8192 mb, 8 vcores</minResources></queue>'
     '<queue name="research"><weight>4</weight></queue><queue name="adhoc"><maxResources>2048 mb, 2 vcores'
     '</maxResources><weight>4</weight></queue></allocations>', ["root.prod", "root.research", "root.adhoc"]),
    # an idle queue: no fair share, but its steady share
    ('<allocations><queue name="a"/><queue name="b"><weight>2</weight></queue><queue name="idle"><weight>5</weight>'
     '</queue></allocations>', ["root.a", "root.b"]),
    # min shares over the cluster: YARN grants them all
    ('<allocations><queue name="a"><minResources>24576 mb, 8 vcores</minResources></queue><queue name="b">'
     '<minResources>16384 mb, 4 vcores</minResources></queue><queue name="c"/></allocations>',
     ["root.a", "root.b", "root.c"]),
    # weight 0: exactly the min share, taken off the top
    ('<allocations><queue name="a"><weight>0</weight><minResources>4096 mb, 4 vcores</minResources></queue>'
     '<queue name="z"><weight>0</weight></queue><queue name="b"/></allocations>', ["root.a", "root.z", "root.b"]),
    # a max below the min: raised to the min
    ('<allocations><queue name="a"><minResources>8192 mb, 8 vcores</minResources><maxResources>2048 mb, 2 vcores'
     '</maxResources></queue><queue name="b"/></allocations>', ["root.a", "root.b"]),
    # DRF: every resource shared on its own
    ('<allocations><defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy><queue name="a"><weight>3'
     '</weight><minResources>1024 mb, 12 vcores</minResources></queue><queue name="b"><maxResources>4096 mb, '
     '30 vcores</maxResources></queue><queue name="c"><queue name="d"/><queue name="e"><weight>2</weight></queue>'
     '</queue></allocations>', ["root.a", "root.b", "root.c.d", "root.c.e"]),
]


@pytest.mark.parametrize("xml, active", CASES,
                         ids=["flat", "nested", "min-max", "idle", "mins-over", "weight-0", "max-below-min", "drf"])
@pytest.mark.parametrize("demand", ["whole-cluster", "small"])
def test_fair_and_steady_shares_match_yarn(yarn, xml, active, demand):
    """Memory and vcores, steady and fair; YARN's apps ask for nothing, so a
    small demand in Slotwise must not change a share (YARN's rule)."""
    answer = yarn.ask(xml, 32768, 32, active)
    assert answer["ok"], answer.get("error")
    demands = [1024 * (i + 1) for i in range(len(active))] if demand == "small" else None
    ours = slotwise_shares(xml, 32768, 32, active, demands)
    for name, row in answer["queues"].items():
        if name == "root":
            continue
        for what in ("fair", "steady"):
            for dim in (0, 1):
                assert close(ours[name][what][dim], row[what][dim]), (name, what, dim, ours[name], row)


# What YARN 3.5 loads (ignoring or adjusting something): Slotwise loads it too,
# with a warning, and reads the values YARN uses.
LENIENT = {
    "misspelt-top-level": '<allocations><defaultSchedulingMode>fair</defaultSchedulingMode><queue name="a"/>'
                          '</allocations>',
    "default-policy-in-a-queue": '<allocations><queue name="a"><defaultQueueSchedulingPolicy>fair'
                                 '</defaultQueueSchedulingPolicy><weight>2</weight></queue></allocations>',
    "mrv1-element-under-user": '<allocations><queue name="a"/><user name="bob"><maxRunningJobs>3</maxRunningJobs>'
                               '</user></allocations>',
    "unknown-rule-attribute": '<allocations><queue name="a"/><queuePlacementPolicy><rule name="specified" '
                              'team="x"/><rule name="default" queue="a"/></queuePlacementPolicy></allocations>',
    "queue-declared-twice": '<allocations><queue name="a"><weight>2</weight><maxRunningApps>4</maxRunningApps>'
                            '</queue><queue name="a"><weight>3</weight></queue></allocations>',
    "spaces-around-a-name": '<allocations><queue name=" prod "><weight>2</weight></queue></allocations>',
    "threshold-above-one": '<allocations><queue name="a"><fairSharePreemptionThreshold>1.5'
                           '</fairSharePreemptionThreshold></queue></allocations>',
    "am-share-above-one": '<allocations><queue name="a"><maxAMShare>3</maxAMShare></queue></allocations>',
    "policy-twice": '<allocations><queue name="a"/><queuePlacementPolicy><rule name="reject"/>'
                    '</queuePlacementPolicy><queuePlacementPolicy><rule name="specified"/><rule name="default"/>'
                    '</queuePlacementPolicy></allocations>',
    "type-leaf": '<allocations><queue name="a" type="leaf"><weight>2</weight></queue></allocations>',
    "user-without-name": '<allocations><queue name="a"/><user><maxRunningApps>2</maxRunningApps></user>'
                         '</allocations>',
    "two-parent-rules": '<allocations><queue name="users" type="parent"/><queuePlacementPolicy>'
                        '<rule name="nestedUserQueue"><rule name="primaryGroup"/><rule name="default" queue="users"/>'
                        '</rule></queuePlacementPolicy></allocations>',
    "bad-default-queue": '<allocations><queue name="a"/><queuePlacementPolicy><rule name="default" queue="a..b"/>'
                         '</queuePlacementPolicy></allocations>',
    "create-yes": '<allocations><queue name="a"/><queuePlacementPolicy><rule name="user" create="yes"/>'
                  '<rule name="default"/></queuePlacementPolicy></allocations>',
    "value-twice": '<allocations><queue name="a"><weight>1</weight><weight>2</weight></queue></allocations>',
}


@pytest.mark.parametrize("case", sorted(LENIENT))
def test_what_yarn_loads_slotwise_loads_with_a_warning_and_the_same_values(yarn, case):
    xml = LENIENT[case]
    answer = yarn.ask(xml, 8192, 8)
    assert answer["ok"], answer.get("error")
    cfg = parse_allocations(xml, "case.xml")
    assert cfg.warnings, "Slotwise should warn about what YARN ignores or adjusts"
    ours = cfg.queues()
    theirs = {name: row for name, row in answer["queues"].items() if name != "root"}
    assert set(theirs) == set(ours) - {"root"}
    for name, row in theirs.items():
        q = ours[name]
        assert row["weight"] == q.weight, name
        assert row["max_running_apps"] == (q.max_running_apps if q.max_running_apps is not None else 2**31 - 1)
        if q.fair_share_preemption_threshold is not None:
            assert row["fair_share_preemption_threshold"] == q.fair_share_preemption_threshold, name
        if q.max_am_share is not None:
            assert row["max_am_share"] == pytest.approx(q.max_am_share), name


# What YARN 3.5 refuses, Slotwise refuses.
REFUSED = {
    "am-share-on-a-parent": '<allocations><queue name="p"><maxAMShare>0.2</maxAMShare><queue name="c"/></queue>'
                            '</allocations>',
    "reservation-on-a-parent": '<allocations><queue name="p"><reservation/><queue name="c"/></queue></allocations>',
    "rule-after-a-terminal-one": '<allocations><queuePlacementPolicy><rule name="user"/><rule name="default"/>'
                                 '</queuePlacementPolicy></allocations>',
    "last-rule-falls-through": '<allocations><queuePlacementPolicy><rule name="specified"/></queuePlacementPolicy>'
                               '</allocations>',
    "nested-without-parent": '<allocations><queuePlacementPolicy><rule name="nestedUserQueue"/>'
                             '<rule name="default"/></queuePlacementPolicy></allocations>',
    "nested-under-user": '<allocations><queuePlacementPolicy><rule name="nestedUserQueue"><rule name="user"/>'
                         '</rule><rule name="default"/></queuePlacementPolicy></allocations>',
    "unknown-rule": '<allocations><queuePlacementPolicy><rule name="magic"/><rule name="default"/>'
                    '</queuePlacementPolicy></allocations>',
    "empty-policy": '<allocations><queuePlacementPolicy/></allocations>',
    "dot-in-a-name": '<allocations><queue name="a.b"/></allocations>',
    "empty-name": '<allocations><queue name="  "/></allocations>',
    "root-beside-others": '<allocations><queue name="root"/><queue name="b"/></allocations>',
    "bad-number": '<allocations><queue name="a"><maxRunningApps>abc</maxRunningApps></queue></allocations>',
    "bad-resource": '<allocations><queue name="a"><minResources>lots</minResources></queue></allocations>',
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_yarn_refuses_slotwise_refuses(yarn, case):
    xml = REFUSED[case]
    answer = yarn.ask(xml)
    assert not answer["ok"], f"YARN 3.5 loaded it: {answer.get('queues')}"
    with pytest.raises(ConfigErrors):
        parse_allocations(xml, "case.xml")
