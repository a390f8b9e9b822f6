"""Placement decisions against YARN 3.5's own FairScheduler (tests/yarnref.py):
for generated queuePlacementPolicy files and apps (user, groups, queue asked
for), Slotwise's Engine puts each app where YARN's PlacementManager and
FairScheduler.addApplication put it, makes a new queue exactly when YARN
makes a new queue, and rejects exactly when YARN rejects (a rule's
exception, no rule placing the app, a queue no app can sit in, closed
ACLs).  Apps are submitted in turn; an admitted app keeps its queue.

Deliberate differences, left out of the generator or mapped here:
- a name YARN places an app in but cannot create (an empty or spaced part
  inside, e.g. ``a..b`` asked for): YARN's queue creation throws inside the
  scheduler (a real RM's dispatcher dies on it); Slotwise rejects the app.
  The comparison counts YARN's throw as a rejection.
- the default rule's queue with such a name: YARN keeps it and throws at the
  first app; Slotwise warns at load and uses root.default (test_config_yarn).
  Not generated.
- groups: Slotwise gets a user's groups from the RM (UGI), which gives an
  empty list when the lookup fails; YARN's secondaryGroupExistingQueue
  rejects on a failed lookup but falls through on no groups.  Only "no
  groups" is generated.
- an empty queue asked for: the RM sends "default" for a missing queue, and
  so does the Slotwise shim for an empty one; Slotwise's ``None`` is that.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from test_placement import DIFFERENCES, GROUPS, policy, slotwise_places
from yarnref import EXAMPLES, yarn  # noqa: F401 (the fixture)

USERS = ["alice", "bob", "carol", "a.b", "root"]


def yarn_places(yarn, xml: str, groups: dict[str, list[str]], apps) -> list[tuple] | None:
    answer = yarn.place(xml, groups, apps)
    if not answer["ok"]:
        return None
    return [("rejected",) if "rejected" in row else ("placed", row["queue"], not row["existed"])
            for row in answer["placements"]]


def compare(yarn, xml: str, groups: dict[str, list[str]], apps) -> list[tuple] | None:
    theirs = yarn_places(yarn, xml, groups, apps)
    ours = slotwise_places(xml, groups, apps)
    assert (ours is None) == (theirs is None), f"load verdicts differ (YARN loads: {theirs is not None}):\n{xml}"
    if ours is not None:
        for (user, queue), mine, ref in zip(apps, ours, theirs):
            assert mine == ref, (f"{user} (groups {groups.get(user)}) asking for {queue!r}: Slotwise {mine}, "
                                 f"YARN {ref}\napps {apps}\n{xml}")
    return theirs


def test_yarn_resolves_groups_from_the_static_mapping_it_is_given(yarn):
    answer = yarn.place(policy('<rule name="primaryGroup"/>'), GROUPS, [("alice", None), ("carol", None)])
    assert answer["ok"], answer
    # The placement rules' mapping service and UGI (the ACL check) both see exactly these groups.
    assert answer["groups_seen"] == {user: [gs, gs] for user, gs in GROUPS.items()}
    assert answer["placements"][0] == {"queue": "root.eng", "existed": False, "configured": False}
    assert answer["placements"][1] == {"rejected": "No groups returned for user carol"}
    # Each request brings its own mapping: the static mapping service is rebuilt, not cached.
    again = yarn.place(policy('<rule name="primaryGroup"/>'), {"alice": ["ops"]}, [("alice", None)])
    assert again["groups_seen"] == {"alice": [["ops"], ["ops"]]}
    assert again["placements"] == [{"queue": "root.ops", "existed": False, "configured": False}]


@pytest.mark.parametrize("xml,apps,expected", DIFFERENCES)
def test_known_differences_are_decided_as_yarn_decides(yarn, xml, apps, expected):
    assert compare(yarn, xml, GROUPS, apps) == expected


# ------------------------------------------------------------ generated cases
NAMES = ["eng", "ops", "alice", "bob", "default", "e_dot_x", "team", "a_dot_b"]
ACL = st.sampled_from(["*", " ", "alice", "bob,carol", " ops", "carol eng", "alice *"])


@st.composite
def queue(draw, name: str, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["leaf", "leaf", "parent", "children"] if depth == 0 else ["leaf", "parent"]))
    attrs = ' type="parent"' if kind == "parent" else ""
    body = ""
    for tag in ("aclSubmitApps", "aclAdministerApps"):
        if draw(st.integers(0, 4)) == 0:
            body += f"<{tag}>{draw(ACL)}</{tag}>"
    if kind == "children":
        kids = draw(st.lists(st.sampled_from(["alice", "bob", "carol", "x"]), min_size=1, max_size=2, unique=True))
        body += "".join(draw(queue(kid, depth + 1)) for kid in kids)
    return f'<queue name="{name}"{attrs}>{body}</queue>'


CREATE = st.sampled_from(["", ' create="true"', ' create="false"'])
DEFAULT_QUEUE = st.sampled_from(["", ' queue="eng"', ' queue="root.ops"', ' queue="team.alice"', ' queue="x.y"',
                                 ' queue="root"', ' queue=".bad"', ' queue="default"'])


PASSING = ("specified", "secondaryGroupExistingQueue")  # rules that never always place


@st.composite
def rule(draw, inner: bool = False, passing: bool = False, loads: bool = False) -> tuple[str, bool]:
    """Any rule, or with ``passing`` one that may fall through: the rule's XML
    and whether it may.  ``loads``: no nesting YARN refuses."""
    kinds = ["specified", "user", "primaryGroup", "secondaryGroupExistingQueue", "default"]
    kinds += ([] if inner else ["nestedUserQueue", "nestedUserQueue"]) + ([] if passing or loads else ["reject"])
    kind = draw(st.sampled_from(kinds))
    nested, parent_passes = "", False
    parents_allowed = not passing or kind in ("user", "primaryGroup", "secondaryGroupExistingQueue")
    if not inner and (kind == "nestedUserQueue" or parents_allowed and draw(st.integers(0, 3)) == 0):
        nested, parent_passes = draw(rule(inner=True, passing=passing and draw(st.booleans()), loads=passing))
    if passing and not parent_passes and kind not in PASSING:
        create = ' create="false"'
    else:
        create = draw(CREATE)
    attrs = create + (draw(DEFAULT_QUEUE) if kind == "default" else "")
    passes = kind in PASSING or create == ' create="false"' or parent_passes
    return f'<rule name="{kind}"{attrs}>{nested}</rule>', passes


LAST = st.sampled_from(['<rule name="reject"/>', '<rule name="default"/>', '<rule name="user"/>',
                        '<rule name="default" queue="eng"/>', '<rule name="primaryGroup"/>'])


@st.composite
def placement_file(draw) -> str:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
    queues = "".join(draw(queue(name)) for name in names)
    if draw(st.integers(0, 3)) == 0:
        root_acls = "".join(f"<{tag}>{draw(ACL)}</{tag}>" for tag in ("aclSubmitApps", "aclAdministerApps")
                            if draw(st.booleans()))
        queues = f'<queue name="root">{root_acls}{queues}</queue>'
    if draw(st.integers(0, 4)):  # mostly a policy that loads: rules that may pass, one that always places
        rules = [xml for xml, _ in draw(st.lists(rule(passing=True), max_size=3))] + [draw(LAST)]
    else:
        rules = [xml for xml, _ in draw(st.lists(rule(), max_size=3))]
    if not rules and draw(st.booleans()):
        return f"<allocations>{queues}</allocations>"  # YARN's default policy: specified, then user
    return policy(*rules, queues=queues)


GROUP_NAMES = st.sampled_from(["eng", "ops", "e.x", "team", "alice", "root"])
ASKED = st.sampled_from([None, None, "default", "root.default", "eng", "root.eng", "ops", "ops.bob", "root.ops.new",
                         "x", "x.y", "team.alice", "root", "root.", ".eng", " eng", "a..b", "alice", "e_dot_x",
                         "ROOT.eng"])


@st.composite
def submissions(draw):
    groups = {user: draw(st.lists(GROUP_NAMES, max_size=2, unique=True)) for user in USERS}
    apps = draw(st.lists(st.tuples(st.sampled_from(USERS), ASKED), min_size=1, max_size=5))
    return groups, apps


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(xml=placement_file(), case=submissions())
def test_generated_placements_match_yarn_3_5(yarn, xml, case):
    groups, apps = case
    theirs = compare(yarn, xml, groups, apps)
    if theirs is None:
        event("policy refused by both")
        return
    for row in theirs:
        event(row[0] if row[0] == "rejected" else f"placed ({'new' if row[2] else 'existing'} queue)")
