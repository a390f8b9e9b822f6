"""The YARN allocation-file parser on the queuePlacementPolicy: every rule,
terminal rules as YARN 3.5 has them, unreachable rules, errors and quirks."""

from __future__ import annotations


import pytest

from slotwise.config.model import PlacementRule, default_placement_rules
from slotwise.config.yarn_xml import rule_is_terminal
from yarnxml import errors, one_error, parse, warns

# --- placement policy ----------------------------------------------------------------------


def rules_of(policy: str) -> list[PlacementRule]:
    return parse(f"<queuePlacementPolicy>{policy}</queuePlacementPolicy>").placement_rules


def test_no_policy_gives_the_default_rules():
    assert parse('<queue name="a"/>').placement_rules == default_placement_rules()


def test_every_rule():
    rules = rules_of("""
        <rule name="specified" create="false"/>
        <rule name="secondaryGroupExistingQueue"/>
        <rule name="primaryGroup" create="false"/>
        <rule name="user" create="false"/>
        <rule name="nestedUserQueue" create="false"><rule name="default" queue="root.a.b"/></rule>
        <rule name="default" queue="dflt" create="false"/>
        <rule name="nestedUserQueue"><rule name="primaryGroup"/></rule>
    """)
    assert [(r.name, r.create) for r in rules] == [
        ("specified", False), ("secondaryGroupExistingQueue", True), ("primaryGroup", False),
        ("user", False), ("nestedUserQueue", False), ("default", False), ("nestedUserQueue", True),
    ]
    assert rules[6].parent.name == "primaryGroup" and rules[6].parent.create
    assert rules[4].parent.queue == "root.a.b"
    assert rules[5].queue == "root.dflt"
    assert rules_of('<rule name="default"/>')[0].queue == "root.default"
    assert rules_of('<rule name="reject"/>')[0].name == "reject"


@pytest.mark.parametrize("rule, terminal", [
    (PlacementRule("specified"), False),
    (PlacementRule("user"), True),
    (PlacementRule("user", create=False), False),
    (PlacementRule("primaryGroup"), True),
    (PlacementRule("primaryGroup", create=False), False),
    (PlacementRule("secondaryGroupExistingQueue"), False),
    (PlacementRule("nestedUserQueue", parent=PlacementRule("primaryGroup")), True),
    (PlacementRule("nestedUserQueue", parent=PlacementRule("primaryGroup", create=False)), False),
    (PlacementRule("nestedUserQueue", parent=PlacementRule("secondaryGroupExistingQueue")), False),
    (PlacementRule("nestedUserQueue", create=False, parent=PlacementRule("default")), False),
    (PlacementRule("default"), True),
    (PlacementRule("default", create=False), False),
    (PlacementRule("reject"), True),
])
def test_terminal_rules_match_yarn_3_5(rule, terminal):
    assert rule_is_terminal(rule) is terminal


def test_unreachable_rule():
    assert one_error("""
        <queuePlacementPolicy>
          <rule name="user"/>
          <rule name="default"/>
          <rule name="reject"/>
        </queuePlacementPolicy>
    """) == (4, 'rule "default" at line 4 can never be reached: rule "user" at line 3 always places or rejects the app')


@pytest.mark.parametrize("last", [
    '<rule name="specified"/>',
    '<rule name="user" create="false"/>',
    '<rule name="primaryGroup" create="false"/>',
    '<rule name="secondaryGroupExistingQueue"/>',
    '<rule name="nestedUserQueue"><rule name="secondaryGroupExistingQueue"/></rule>',
    '<rule name="default" create="false"/>',
])
def test_last_rule_may_fall_through(last):
    line, msg = one_error(f"""
        <queuePlacementPolicy>
          <rule name="specified"/>
          {last}
        </queuePlacementPolicy>
    """)
    assert line == 4 and "may fall through" in msg and "end the policy with default, reject" in msg


def test_placement_errors():
    assert errors("""
        <queuePlacementPolicy>
          <rule/>
          <rule name="magic"/>
          <rule name="nestedUserQueue"/>
          <rule name="nestedUserQueue">
            <rule name="reject"/>
          </rule>
          <rule name="nestedUserQueue"><rule name="user"/></rule>
          <rule name="reject"/>
        </queuePlacementPolicy>
    """) == [
        (3, "<rule> needs a name attribute"),
        (4, 'unknown placement rule "magic" (known: specified, user, primaryGroup, '
            "secondaryGroupExistingQueue, nestedUserQueue, default, reject)"),
        (5, "nestedUserQueue needs a nested <rule> (its parent rule)"),
        (7, 'the rule inside nestedUserQueue cannot be "reject"'),
        (9, 'the rule inside nestedUserQueue cannot be "user"'),
    ]


def test_placement_quirks_yarn_accepts():
    body = """
        <queuePlacementPolicy>
          <rule name="user" create="yes" queue="x"/>
          <rule name="nestedUserQueue"><rule name="default"/><rule name="secondaryGroupExistingQueue"/></rule>
          <rule name="default" queue="a..b"/>
        </queuePlacementPolicy>
    """
    assert warns(body) == [
        (3, 'unknown attribute "queue" on <rule> in rule "user" is ignored, as YARN ignores it'),
        (3, 'create of rule "user" is "yes": YARN reads anything but "true" as false'),
        (4, "nestedUserQueue has 2 nested rules: YARN uses the last one"),
        (5, 'queue "a..b" of the default rule is not a valid queue name: YARN keeps it and fails (an exception '
            "in the scheduler) on the first app it places there; Slotwise uses root.default"),
    ]
    rules = parse(body).placement_rules
    assert rules[0].create is False and rules[1].parent.name == "secondaryGroupExistingQueue"
    assert rules[2].queue == "root.default"


def test_empty_and_repeated_policy():
    assert errors("<queuePlacementPolicy/>") == [
        (2, "queuePlacementPolicy is empty (YARN: Empty configuration for QueuePlacementPolicy is not allowed)")]
    body = """
        <queuePlacementPolicy>
        </queuePlacementPolicy>
        <queuePlacementPolicy><rule name="reject"/></queuePlacementPolicy>
    """
    assert warns(body) == [  # only the last one is read, as in YARN
        (4, "<queuePlacementPolicy> given again (first at line 2): the last one counts, as in YARN")]
    assert [r.name for r in parse(body).placement_rules] == ["reject"]
    body = "<queuePlacementPolicy>\n</queuePlacementPolicy>"
    assert warns(body) == [(2, "queuePlacementPolicy has no rules: YARN keeps its default rules")]
    assert parse(body).placement_rules == default_placement_rules()


