"""The YARN allocation-file parser on queues: unknown elements and attributes,
queue names, scheduling policies on parents, reservations, users."""

from __future__ import annotations



from yarnxml import errors, one_error, parse, warns

# --- unknown elements and attributes ----------------------------------------------------


def test_unknown_elements_everywhere_are_ignored_with_a_warning():
    assert warns("""
        <fooBar>1</fooBar>
        <queue name="prod">
          <fooBar/>
          <queue name="etl"><maxApps>3</maxApps></queue>
        </queue>
        <user name="bob"><weight>2</weight></user>
        <queuePlacementPolicy>
          <specified/>
          <rule name="specified"><extra/></rule>
          <rule name="reject"/>
        </queuePlacementPolicy>
    """) == [
        (2, "unknown element <fooBar> in <allocations> is ignored, as YARN ignores it"),
        (4, "unknown element <fooBar> in queue root.prod is ignored, as YARN ignores it"),
        (5, "unknown element <maxApps> in queue root.prod.etl is ignored, as YARN ignores it; "
            "did you mean <maxRunningApps>?"),
        (7, "unknown element <weight> in user bob is ignored, as YARN ignores it"),
        (9, "unknown element <specified> in queuePlacementPolicy is ignored, as YARN ignores it"),
        (10, 'unknown element <extra> in rule "specified" is ignored, as YARN ignores it'),
    ]


def test_misspelt_and_misplaced_elements_real_files_have():
    body = """
        <defaultSchedulingMode>fair</defaultSchedulingMode>
        <queue name="a"><defaultQueueSchedulingPolicy>fair</defaultQueueSchedulingPolicy></queue>
        <user name="bob"><maxRunningJobs>3</maxRunningJobs></user>
        <queuePlacementPolicy><rule name="specified" create="false" team="x"/><rule name="default"/>
        </queuePlacementPolicy>
    """
    cfg = parse(body)
    assert cfg.format == "yarn" and set(cfg.queues()) == {"root", "root.a"}
    assert cfg.users["bob"].max_running_apps is None
    lines = warns(body)
    assert [line for line, _ in lines] == [2, 3, 4, 5]
    assert "did you mean <defaultQueueSchedulingMode>?" in lines[0][1]
    assert lines[1][1].startswith("unknown element <defaultQueueSchedulingPolicy> in queue root.a is ignored")
    assert "did you mean <maxRunningApps>?" in lines[2][1]
    assert lines[3][1] == 'unknown attribute "team" on <rule> in rule "specified" is ignored, as YARN ignores it'


def test_queue_attributes():
    body = """
        <queue name="a" weight="2"/>
        <queue name="b" type="leaf"/>
        <queue name="c" type="parent"/>
    """
    assert warns(body) == [
        (2, 'unknown attribute "weight" on <queue> in queue root.a is ignored, as YARN ignores it'),
        (3, 'type of queue root.b is "leaf", not "parent": YARN takes it as a leaf unless it has queues inside'),
    ]
    qs = parse(body).queues()
    assert qs["root.a"].weight == 1 and not qs["root.b"].is_parent and qs["root.c"].is_parent


# --- queue names -----------------------------------------------------------------------------


def test_bad_queue_names():
    errs = errors("""
        <queue name=""/>
        <queue name="   "/>
        <queue/>
        <queue name="a.b"/>
        <queue name=" a"/>
        <queue name="ok">
          <queue name="x.y"><weight>heavy</weight></queue>
        </queue>
    """)
    assert [line for line, _ in errs] == [2, 3, 4, 5, 8, 8]
    assert errs[0][1] == "<queue> in queue root needs a non-empty name attribute"
    assert errs[3][1] == '<queue> in queue root name "a.b" must not contain "." (nest the element instead)'
    assert errs[4][1].startswith('<queue> in queue root.ok name "x.y"')
    assert "weight in queue root.ok.? must be a number" in errs[5][1]


def test_names_with_spaces_around_are_trimmed_as_yarn_does():
    body = '<queue name=" a "><queue name="b\t"/></queue>'
    assert set(parse(body).queues()) == {"root", "root.a", "root.a.b"}
    assert [m for _, m in warns(body)] == [
        '<queue> in queue root name " a " has spaces around it: YARN trims them, so it is "a"',
        '<queue> in queue root.a name "b " has spaces around it: YARN trims them, so it is "b"']  # XML: tab is space


def test_a_queue_declared_twice_is_merged_as_yarn_does():
    body = """
        <queue name="a">
          <queue name="x"><weight>2</weight><maxRunningApps>4</maxRunningApps></queue>
          <pool name="x"><weight>3</weight></pool>
        </queue>
        <pool name="a"><weight>5</weight><queue name="y"/></pool>
        <queue name="b"><queue name="x"/></queue>
    """
    assert warns(body) == [
        (4, "queue root.a.x declared again (first at line 3): merged, later values win, as in YARN"),
        (6, "queue root.a declared again (first at line 2): merged, later values win, as in YARN"),
    ]
    qs = parse(body).queues()
    assert set(qs) == {"root", "root.a", "root.a.x", "root.a.y", "root.b", "root.b.x"}
    assert (qs["root.a.x"].weight, qs["root.a.x"].max_running_apps, qs["root.a"].weight) == (3, 4, 5)


def test_root_must_be_alone():
    errs = errors("""
        <queue name="root"><queue name="a"/></queue>
        <queue name="b"/>
    """)
    assert errs == [(2, '<queue name="root"> must be the only top-level queue: put the other queues inside it')]
    errs = errors("""
        <queue name="root"/>
        <queue name="root"/>
    """)
    assert errs[0][0] == 2 and "only top-level queue" in errs[0][1]


# --- scheduling policies on parents, reservations ------------------------------------------


def test_fifo_only_on_leaves():
    assert errors("""
        <queue name="a">
          <schedulingPolicy>fifo</schedulingPolicy>
          <queue name="leaf"><schedulingPolicy>fifo</schedulingPolicy></queue>
        </queue>
        <queue name="p" type="parent">
          <schedulingPolicy>FIFO</schedulingPolicy>
        </queue>
        <queue name="root2"><schedulingPolicy>fifo</schedulingPolicy></queue>
    """) == [
        (3, 'schedulingPolicy "fifo" is for leaf queues only, but root.a is a parent queue'),
        (7, 'schedulingPolicy "fifo" is for leaf queues only, but root.p is a parent queue'),
    ]


def test_fifo_on_explicit_root_and_as_default():
    assert errors("""
        <queue name="root">
          <schedulingPolicy>fifo</schedulingPolicy>
        </queue>
        <defaultQueueSchedulingPolicy>fifo</defaultQueueSchedulingPolicy>
    """) == [
        (3, 'schedulingPolicy "fifo" is for leaf queues only, but root is a parent queue'),
        (5, 'the default scheduling policy cannot be "fifo": it would apply to parent queues too; '
            "set it on each leaf queue instead"),
    ]


def test_reservation_only_on_leaves():
    assert one_error("""
        <queue name="a">
          <reservation/>
          <queue name="b"><reservation/></queue>
        </queue>
    """) == (3, "<reservation> is for leaf queues only, but root.a is a parent queue")


# --- users ------------------------------------------------------------------------------------


def test_user_errors_and_warnings():
    assert errors("""
        <user name="eve" admin="yes"><maxRunningApps>x</maxRunningApps></user>
    """) == [(2, 'maxRunningApps in user eve must be a non-negative integer, got "x"')]
    body = """
        <user><maxRunningApps>1</maxRunningApps></user>
        <user name="bob"><maxRunningApps>1</maxRunningApps></user>
        <user name="bob"><maxRunningApps>2</maxRunningApps></user>
        <user name="eve" admin="yes"/>
    """
    assert warns(body) == [
        (2, "<user> without a name is ignored: it limits no user"),
        (4, "user bob declared again (first at line 3): merged, later values win, as in YARN"),
        (5, 'unknown attribute "admin" on <user> in <allocations> is ignored, as YARN ignores it'),
    ]
    assert parse(body).users["bob"].max_running_apps == 2


