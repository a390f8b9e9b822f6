"""Running-job limits, placement, moves, priorities and reloads."""

import pytest

from slotwise.config.model import PlacementRule, UserConfig
from slotwise.engine import PlacementRejected
from enginecheck import check_invariants
from support import fill, make_config, make_engine, running, submit


def test_queue_running_app_limit_holds_later_jobs():
    e, clock = make_engine({"q": {"max_running_apps": 1}}, nodes=1, slots=4)
    submit(e, "first", "q", tasks=2)
    clock.advance(1)
    submit(e, "second", "q", tasks=2)
    assert e.apps["first"].runnable and not e.apps["second"].runnable
    e.update()
    assert e.apps["second"].demand.memory_mb == 0  # a job that cannot run demands nothing
    assert {a.app_id for a in fill(e)} == {"first"}
    e.remove_app("first")
    assert e.apps["second"].runnable
    assert {a.app_id for a in fill(e)} == {"second"}


def test_runnable_order_is_priority_then_submit_time():
    e, clock = make_engine({"q": {"max_running_apps": 1}}, nodes=1, slots=4)
    submit(e, "running", "q")
    clock.advance(1)
    submit(e, "old_normal", "q")
    clock.advance(1)
    submit(e, "new_high", "q", priority=1)
    e.remove_app("running")
    assert e.apps["new_high"].runnable and not e.apps["old_normal"].runnable


def test_user_limit_and_default():
    e, _ = make_engine(users={"ann": UserConfig("ann", max_running_apps=2)}, user_max_apps_default=1)
    for i in range(3):
        submit(e, f"ann{i}", "q", user="ann")
        submit(e, f"bob{i}", "q", user="bob")
    assert sum(e.apps[f"ann{i}"].runnable for i in range(3)) == 2
    assert sum(e.apps[f"bob{i}"].runnable for i in range(3)) == 1


def test_parent_queue_limit_counts_all_children():
    e, _ = make_engine({"p": {"max_running_apps": 2, "children": {"a": {}, "b": {}}}})
    submit(e, "1", "p.a")
    submit(e, "2", "p.b")
    submit(e, "3", "p.a")
    assert [e.apps[x].runnable for x in "123"] == [True, True, False]


def test_queue_max_apps_default_applies_to_unconfigured_queues():
    e, _ = make_engine(queue_max_apps_default=1)
    submit(e, "1", "adhoc")
    submit(e, "2", "adhoc")
    assert [e.apps[x].runnable for x in "12"] == [True, False]


def test_placement_default_is_specified_then_user():
    e, _ = make_engine()
    assert e.add_app("a1", "alice", queue="etl") == "root.etl"
    assert e.add_app("a2", "alice") == "root.alice"
    assert e.add_app("a3", "bob.smith", queue="default") == "root.bob_dot_smith"


def test_placement_rules_create_false_falls_through_and_reject():
    rules = [PlacementRule("specified", create=False), PlacementRule("primaryGroup", create=False),
             PlacementRule("reject")]
    e, _ = make_engine({"prod": {}, "analysts": {}}, placement_rules=rules)
    assert e.add_app("a", "u", queue="prod") == "root.prod"
    assert e.add_app("b", "u", queue="nope", groups=["analysts"]) == "root.analysts"
    with pytest.raises(PlacementRejected):
        e.add_app("c", "u", queue="nope", groups=["other"])


def test_nested_user_queue_and_secondary_group_and_default():
    rules = [PlacementRule("nestedUserQueue", create=True,
                           parent=PlacementRule("secondaryGroupExistingQueue", create=False)),
             PlacementRule("default", queue="root.catchall")]
    e, _ = make_engine({"team": {"is_parent": True}}, placement_rules=rules)
    assert e.add_app("a", "ann", groups=["ann", "team"]) == "root.team.ann"
    assert e.add_app("b", "bob", groups=["bob", "nobody"]) == "root.catchall"


def test_closed_acls_reject_the_app_as_yarn_does():
    """YARN 3.5 checks ACLs after placement: a queue closed to the user
    rejects the app (no next rule); submit or administer access will do."""
    rules = [PlacementRule("specified", create=False), PlacementRule("default", queue="root.public")]
    cfg = make_config({"secret": {"acl_submit_apps": "alice", "acl_administer_apps": " ops"},
                       "public": {"acl_submit_apps": "*"}}, placement_rules=rules)
    cfg.root.acl_submit_apps = " "  # root's unset ACLs let everyone in: both closed, child ACLs decide
    from slotwise.engine import Engine
    e = Engine(cfg)
    assert e.place_app("mallory", "secret") == "root.secret"  # root still open to administer
    cfg.root.acl_administer_apps = " "
    e = Engine(cfg)
    assert e.add_app("a", "alice", queue="secret") == "root.secret"
    assert e.add_app("b", "olga", queue="secret", groups=["ops"]) == "root.secret"
    with pytest.raises(PlacementRejected, match="may not submit to root.secret"):
        e.add_app("c", "mallory", queue="secret")
    assert e.add_app("d", "mallory", groups=["x"], queue="root.elsewhere") == "root.public"


def test_move_app_transfers_usage_and_changes_order():
    e, _ = make_engine(nodes=1, slots=4)
    submit(e, "a", "one", tasks=10)
    fill(e)
    assert running(e, "root.one") == 4
    e.move_app("a", "two")
    assert "root.one" not in e.queues  # a dynamic queue goes with its last app, as in YARN
    assert running(e, "root.two") == 4
    assert e.root.usage.memory_mb == e.queues["root.two"].usage.memory_mb
    assert e.apps["a"].queue.name == "root.two"


def test_move_refused_when_target_is_full():
    e, _ = make_engine({"full": {"max_running_apps": 1}})
    submit(e, "x", "full")
    submit(e, "y", "other")
    with pytest.raises(ValueError, match="maxRunningApps"):
        e.move_app("y", "full")
    assert e.apps["y"].queue.name == "root.other"


def test_priority_change_reorders_a_fifo_queue():
    e, clock = make_engine({"q": {"scheduling_policy": "fifo"}}, nodes=1, slots=2)
    submit(e, "a", "q")
    clock.advance(1)
    submit(e, "b", "q")
    e.set_app_priority("b", 2)
    assert {x.app_id for x in fill(e)} == {"b"}


def test_reload_keeps_running_apps_in_removed_queues():
    e, _ = make_engine({"old": {"weight": 2.0}}, nodes=1, slots=4)
    submit(e, "a", "old", tasks=10)
    fill(e)
    e.set_config(make_config({"new": {}}))
    assert e.apps["a"].queue.name == "root.old"
    assert running(e, "root.old") == 4
    assert e.queues["root.old"].weight == 1.0  # now an ordinary dynamic queue
    assert "root.new" in e.queues


def _busy_tree():
    """A two-level tree with running apps (their AMs among the containers)
    and apps waiting on a queue's running limit."""
    e, clock = make_engine({"p": {"children": {"a": {}, "b": {"max_running_apps": 1}}}, "c": {}}, nodes=2, slots=4)
    for app, queue in (("x", "p.a"), ("y", "p.b"), ("z", "p.b"), ("w", "p.b"), ("v", "c")):
        submit(e, app, queue, tasks=6, needs_am=True)
        clock.advance(1)
    fill(e, 2)
    check_invariants(e)
    return e


def test_a_reload_on_the_same_tree_keeps_every_count_true():
    """The same queues under the same parents: the counts are not made
    again (a shadow's candidate pays for that per copy), and they stay true,
    waiting apps that a raised limit lets run included."""
    e = _busy_tree()
    assert not e.apps["z"].runnable and e.queues["root.p"].running_apps == 2
    usage = {name: q.usage for name, q in e.queues.items()}
    e.set_config(make_config({"p": {"weight": 3.0, "children": {"a": {}, "b": {"max_running_apps": 3}}},
                              "c": {"weight": 0.5}}))
    check_invariants(e)
    assert e.apps["z"].runnable and e.apps["w"].runnable and e.queues["root.p"].running_apps == 4
    assert {name: q.usage for name, q in e.queues.items()} == usage
    assert e.queues["root.p"].weight == 3.0
    fill(e)
    check_invariants(e)


def test_a_reload_that_moves_the_tree_counts_again():
    """A queue dropped while it holds apps stays on as a new dynamic queue,
    a new parent comes: everything is counted anew, and true."""
    e = _busy_tree()
    e.set_config(make_config({"p": {"children": {"a": {}}}, "d": {"children": {"e": {}}}}))
    assert e.apps["y"].queue.name == "root.p.b" and "root.d.e" in e.queues
    check_invariants(e)
    assert e.queues["root.p.b"].usage == e.apps["y"].usage + e.apps["z"].usage + e.apps["w"].usage
    fill(e)
    check_invariants(e)


def test_a_fork_under_another_file_counts_true():
    """A shadow's candidate: the live engine forked, another file set."""
    e = _busy_tree()
    f = e.fork()
    f.set_config(make_config({"p": {"children": {"a": {"weight": 4.0}, "b": {"max_running_apps": 2}}}, "c": {}}))
    check_invariants(f)
    check_invariants(e)
    assert f.queues["root.p.a"].weight == 4.0 and e.queues["root.p.a"].weight == 1.0
    assert f.apps["z"].runnable and not e.apps["z"].runnable


def test_reload_applies_new_weights():
    e, _ = make_engine({"a": {}, "b": {}}, nodes=3, slots=4)
    submit(e, "x", "a", tasks=50)
    submit(e, "y", "b", tasks=50)
    e.set_config(make_config({"a": {"weight": 2.0}, "b": {}}))
    e.update()
    assert e.queues["root.a"].fair_share.memory_mb == pytest.approx(8)
