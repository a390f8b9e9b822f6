"""Placement as YARN 3.5 decides it (python/slotwise/placement.py through a
real Engine), without a JVM: the cases where Slotwise used to differ, each
checked against YARN itself in test_yarn_placement.py, and what only
Slotwise has (recovery, Hadoop's ACL strings)."""

from __future__ import annotations

import pytest

from slotwise.clock import ManualClock
from slotwise.config import ConfigErrors, parse_allocations
from slotwise.engine import Engine, PlacementRejected
from slotwise.placement import acl_allows
from slotwise.settings import EngineSettings


def slotwise_places(xml: str, groups: dict[str, list[str]], apps) -> list[tuple] | None:
    """Each app in turn through a real Engine: ("placed", queue, created) or
    ("rejected",); None when Slotwise refuses the file."""
    try:
        cfg = parse_allocations(xml, "gen.xml")
    except ConfigErrors:
        return None
    engine = Engine(cfg, ManualClock(), EngineSettings(preemption=False))
    out = []
    for i, (user, queue) in enumerate(apps):
        before = set(engine.queues)
        try:
            name = engine.add_app(f"app{i}", user, queue, groups=groups.get(user, []))
        except PlacementRejected:
            out.append(("rejected",))
            continue
        out.append(("placed", name, name not in before))
    return out


def policy(*rules: str, queues: str = "") -> str:
    return f"<allocations>{queues}<queuePlacementPolicy>{''.join(rules)}</queuePlacementPolicy></allocations>"


GROUPS = {"alice": ["eng", "ops"], "bob": ["ops"], "carol": [], "a.b": ["e.x"], "root": ["root"]}


# What differed before this suite, each as the smallest file that shows it:
# (file, apps, YARN's answer, now Slotwise's as well).
DIFFERENCES = [
    # default create="false" falls through when its queue is not declared (Slotwise created root.default).
    (policy('<rule name="default" create="false"/>', '<rule name="user"/>'), [("alice", None)],
     [("placed", "root.alice", True)]),
    # secondaryGroupExistingQueue tries the primary group too (Slotwise skipped it and went on to root.default).
    (policy('<rule name="secondaryGroupExistingQueue"/>', '<rule name="default"/>', queues='<queue name="eng"/>'),
     [("alice", None)], [("placed", "root.eng", False)]),
    # primaryGroup for a user without groups rejects the app (Slotwise went on to the next rule).
    (policy('<rule name="primaryGroup" create="false"/>', '<rule name="default"/>'), [("carol", None)],
     [("rejected",)]),
    # "root.default" asked for is a queue like any other (Slotwise went on to the user rule).
    (policy('<rule name="specified"/>', '<rule name="user"/>'), [("alice", "root.default")],
     [("placed", "root.default", True)]),
    # A queue name with whitespace at an end rejects the app (Slotwise created "root. eng").
    (policy('<rule name="specified"/>', '<rule name="user"/>'), [("alice", " eng")], [("rejected",)]),
    # A queue a rule may create but no app can sit in rejects the app, no next rule (Slotwise fell through).
    (policy('<rule name="specified"/>', '<rule name="user"/>', queues='<queue name="eng"/>'),
     [("alice", "eng.x"), ("alice", "root")], [("rejected",), ("rejected",)]),
    # A declared parent without children holds no app either (Slotwise put it there).
    (policy('<rule name="primaryGroup"/>', queues='<queue name="ops" type="parent"/>'), [("bob", None)],
     [("rejected",)]),
    # A user named root: the user rule gives root itself, which no app can use (Slotwise made root.root).
    (policy('<rule name="user"/>'), [("root", None)], [("rejected",)]),
    # A create="false" rule takes only queues the file declares, not ones apps made (Slotwise took root.alice).
    (policy('<rule name="specified" create="false"/>', '<rule name="user"/>'),
     [("alice", None), ("bob", "alice")], [("placed", "root.alice", True), ("placed", "root.bob", True)]),
    # A nested rule under user or primaryGroup is its parent rule, as under nestedUserQueue (Slotwise ignored it).
    (policy('<rule name="user"><rule name="primaryGroup"/></rule>'), [("bob", None)],
     [("placed", "root.ops.bob", True)]),
    # Closed ACLs reject the app (Slotwise went on to the next rule); root's unset administer ACL lets all in.
    (policy('<rule name="specified" create="false"/>', '<rule name="default"/>',
            queues='<queue name="root"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>'
                   '<queue name="eng"><aclSubmitApps>alice</aclSubmitApps></queue>'
                   '<queue name="default"><aclSubmitApps>*</aclSubmitApps></queue></queue>'),
     [("bob", "eng"), ("alice", "eng")], [("rejected",), ("placed", "root.eng", False)]),
    (policy('<rule name="specified"/>', '<rule name="reject"/>',
            queues='<queue name="root"><aclSubmitApps> </aclSubmitApps>'
                   '<queue name="eng"><aclSubmitApps>alice</aclSubmitApps></queue></queue>'),
     [("bob", "eng")], [("placed", "root.eng", False)]),
]


@pytest.mark.parametrize("xml,apps,expected", DIFFERENCES)
def test_slotwise_decides_the_known_differences_as_yarn(xml, apps, expected):
    assert slotwise_places(xml, GROUPS, apps) == expected


def test_recovery_passes_what_would_reject_to_the_next_rule():
    """An app the RM already holds is not rejected: a queue no job can be in,
    a closed ACL or a rule's own refusal sends it on to the next rule."""
    xml = policy('<rule name="specified"/>', '<rule name="primaryGroup" create="false"/>', '<rule name="user"/>',
                 queues='<queue name="root"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>'
                        '<queue name="p" type="parent"/><queue name="shut"/><queue name="alice">'
                        '<aclSubmitApps>alice</aclSubmitApps></queue></queue>')
    engine = Engine(parse_allocations(xml, "r.xml"), ManualClock(), EngineSettings(preemption=False))
    for asked in ("p", "shut", "root"):
        with pytest.raises(PlacementRejected):
            engine.place_app("alice", asked)
        assert engine.place_app("alice", asked, recovering=True) == "root.alice"


@pytest.mark.parametrize("acl,user,groups,allowed", [
    ("*", "x", [], True), (" * ", "x", [], True), ("alice *", "x", [], True), (" ", "alice", ["eng"], False),
    ("alice,bob", "bob", [], True), ("alice, bob", "bob", [], False), (" eng", "alice", ["eng"], True),
    (" eng", "eng", [], False), ("carol eng,ops", "x", ["ops"], True), ("alice\n", "alice", [], True),
])
def test_acl_strings_read_as_hadoop_reads_them(acl, user, groups, allowed):
    assert acl_allows(acl, user, groups) is allowed
