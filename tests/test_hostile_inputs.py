"""Nothing a message, a file or a client sends can stall, bloat or corrupt
the policy server (issue 25): each defect found by driving a real server
with hostile input, as a test at the door it came through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from slotwise import protocol as wire
from slotwise.config import parse_allocations
from slotwise.config.errors import ConfigErrors
from slotwise.config.loader import MAX_FILE_BYTES, load_allocations
from slotwise.config.model import MAX_QUEUE_NAME
from slotwise.config.watcher import ConfigWatcher
from slotwise.core import PolicyCore
from slotwise.engine import MAX_ASSIGN_PER_HEARTBEAT
from slotwise.placement import valid_queue_name
from test_core import ALLOC, NODES, call, engine, events, job, make_core
from wiretools import app, container, node, req

INT32 = 2**31 - 1

USERS_ALLOC = """<allocations>
  <queue name="prod"/>
  <queue name="users" type="parent"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="nestedUserQueue"><rule name="specified" create="false"/></rule>
    <rule name="user" create="true"/>
  </queuePlacementPolicy>
</allocations>"""


# ------------------------------------------------------------ heartbeats
def test_a_zero_size_ask_is_refused_whole_and_changes_nothing():
    """Was: 2,147,483,647 containers of 0 MB / 0 vcores kept the heartbeat
    placing forever with the policy lock held."""
    core = make_core()
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)])
    before = len(engine(core).containers), set(engine(core).apps)
    hostile = app("evil", "root.prod", [req(1, 0, 0, INT32), req(2, 1024, 1, 1)])
    ans = call(core, "heartbeat", apps=[hostile], node="n1:1")
    assert "of no size" in ans["error"] and "apps[0].requests[0]" in ans["error"]
    assert "assign" not in ans
    assert (len(engine(core).containers), set(engine(core).apps)) == before
    # An update carrying the same ask is refused the same way and returns.
    assert "of no size" in call(core, "update", apps=[hostile])["error"]
    # A zero-size request asking for no containers is a cancelled ask: fine.
    assert "error" not in call(core, "heartbeat", apps=[app("ok", "root.dev", [req(1, 0, 0, 0)])])


def test_the_engine_never_places_a_container_of_no_size_whatever_the_driver():
    from slotwise.engine import Request
    from slotwise.resources import Resource

    core = make_core()
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=0)])
    engine(core).update_requests("a1", [Request(1, Resource(0, 0), INT32)])  # past the door
    assert engine(core).heartbeat("n1:1") == []


def test_a_node_gets_at_most_the_ceiling_of_containers_in_one_heartbeat():
    """A node of absurd capacity and an app asking for 2^31-1 one-MB
    containers: the call returns, with at most the ceiling placed."""
    core = make_core()
    huge = node("big:1", "big", "/r1", 2**52, 2**40)
    done = {}

    def go():
        done["ans"] = call(core, "heartbeat", full=True, nodes=[huge],
                           apps=[app("a", "root.prod", [req(1, 1, 1, INT32)])], node="big:1")

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the heartbeat never returned"
    assert len(done["ans"]["assign"]) == MAX_ASSIGN_PER_HEARTBEAT
    # The lock is free again: a read view answers.
    assert core.views.queues()


def test_the_ceiling_holds_even_with_max_assign_set_above_it():
    core = make_core(max_assign=10 * MAX_ASSIGN_PER_HEARTBEAT)
    huge = node("big:1", "big", "/r1", 2**52, 2**40)
    ans = call(core, "heartbeat", full=True, nodes=[huge], apps=[app("a", "root.prod", [req(1, 1, 1, INT32)])],
               node="big:1")
    assert len(ans["assign"]) == MAX_ASSIGN_PER_HEARTBEAT


def test_an_apps_pending_total_is_summed_exactly():
    """Was summed in floats: 2 x (2^31-1) x 2^52 MB lost its low digits."""
    core = make_core()
    mb = 2**52
    call(core, "heartbeat", full=True, nodes=NODES,
         apps=[app("a", "root.prod", [req(1, mb, 1, INT32), req(2, mb + 1, 1, INT32)])])
    pending = engine(core).apps["a"].pending
    assert pending.memory_mb == INT32 * mb + INT32 * (mb + 1)
    assert isinstance(pending.memory_mb, int)


def test_a_container_naming_another_apps_assignment_is_refused():
    """Was: accepted, then the container was lost (renamed under the wrong app)."""
    core = make_core()
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1), job("a2", "root.dev", n=1)],
               node="n1:1")
    by_app = {a["app"]: a for a in ans["assign"]}
    theirs = by_app["a1"]["engine_id"]
    ans = call(core, "heartbeat", launched=[container("c9", "a2", "n1:1", 1024, 1, engine_id=theirs)])
    assert "names assignment" in ans["error"] and theirs in ans["error"]
    assert theirs in engine(core).containers and "c9" not in engine(core).containers
    assert engine(core).containers[theirs].app_id == "a1"


# ----------------------------------------------------- place and move
def test_place_and_move_never_raise_out_of_the_door():
    """Was: a lone surrogate in a name escaped place() as UnicodeEncodeError."""
    core = make_core()
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)])
    bad_user = '{"app": "x", "user": "ann\\ud800", "queue": "root.prod", "priority": 0}'
    answer = json.loads(core.place(bad_user))
    assert set(answer) == {"reject"}
    answer = json.loads(core.move('{"app": "a1", "queue": "root.\\udfff"}'))
    assert set(answer) == {"error"}
    raw = "\ud800"  # a Java string may carry one as it is, not escaped
    assert set(json.loads(core.place(json.dumps({"app": "x", "user": "u", "queue": "q", "priority": 0})[:-1]
                                     .replace('"u"', '"u' + raw + '"') + "}"))) == {"reject"}
    assert set(json.loads(core.heartbeat('{"now_ms": 0, "apps": [{"id": "' + raw + '"}]}'))) == {"error"}
    assert engine(core).apps.keys() == {"a1"}


# ---------------------------------------------------------- queue names
def test_queue_names_are_bounded_the_same_in_validate_and_on_the_wire():
    assert MAX_QUEUE_NAME == wire.DEFS["Name"]["maxLength"]
    long = "q" * (MAX_QUEUE_NAME - len("root."))
    parse_allocations(f'<allocations><queue name="{long}"/></allocations>', "ok.xml")
    with pytest.raises(ConfigErrors) as e:
        parse_allocations(f'<allocations>\n<queue name="{long}x"/></allocations>', "long.xml")
    assert str(e.value.errors[0]).startswith("long.xml:2:") and "1,025 characters" in str(e.value.errors[0])
    nested = "a" * 600
    with pytest.raises(ConfigErrors):
        parse_allocations(f'<allocations><queue name="{nested}"><queue name="{nested}"/></queue></allocations>',
                          "nested.xml")
    with pytest.raises(ConfigErrors):
        parse_allocations(f'<allocations><pool name="{long}x"><minMaps>1</minMaps></pool></allocations>',
                          "mrv1.xml")
    assert valid_queue_name("root." + long) and not valid_queue_name("root." + long + "x")


def test_a_user_queue_too_long_for_the_wire_is_never_made():
    core = make_core(USERS_ALLOC)
    long_user = "u" * (MAX_QUEUE_NAME - len("root.") + 1)
    answer = json.loads(core.place(json.dumps({"app": "x", "user": long_user, "queue": "default", "priority": 0})))
    assert "reject" in answer
    assert not any(len(p) > MAX_QUEUE_NAME for p in engine(core).queues)


# --------------------------------------------------------------- dry run
def test_dry_run_of_a_deep_tree_copies_state_without_recursion():
    """Was: a valid 165-level-deep file made dry-run answer 500 (RecursionError)."""
    depth = 200
    text = "<allocations>" + "".join(f'<queue name="l{i}">' for i in range(depth)) + \
        "</queue>" * depth + "</allocations>"
    cfg = parse_allocations(text, "deep.xml")
    core = PolicyCore(cfg)
    leaf = ".".join(["root"] + [f"l{i}" for i in range(depth)])
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", leaf, n=2)], node="n1:1")
    out = core.views.dry_run(parse_allocations(text.replace('<queue name="l199">', '<queue name="l199"><weight>2</weight>'),
                                         "deep.xml"))
    assert out["conflicts"] == [] and any(r["queue"] == leaf for r in out["queues"])
    # The live engine is untouched and its tree still whole.
    assert engine(core).queues[leaf].parent.name == leaf.rsplit(".", 1)[0]


def test_dry_run_copies_keep_the_tree_linked():
    core = make_core()
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=2)], node="n1:1")
    from slotwise.views.dry_run import fork

    copy = fork(engine(core)).engine(0.0)
    assert copy.queues["root.prod"].parent is copy.queues["root"]
    assert copy.queues["root.prod"] in copy.root.children
    assert copy.apps["a1"].queue is copy.queues["root.prod"]
    assert copy.queues["root.prod"] is not engine(core).queues["root.prod"]


# --------------------------------------------------- the allocation file
def test_the_allocation_file_is_read_through_one_capped_reader(tmp_path):
    with pytest.raises(ConfigErrors) as e:
        load_allocations("/dev/zero")
    assert "not a regular file" in str(e.value.errors[0]) and str(e.value.errors[0]).startswith("/dev/zero")
    big = tmp_path / "big.xml"
    big.write_bytes(b"<allocations>" + b" " * MAX_FILE_BYTES + b"</allocations>")
    with pytest.raises(ConfigErrors) as e:
        load_allocations(big)
    assert "at most" in str(e.value.errors[0])
    fifo = tmp_path / "fifo.xml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigErrors) as e:  # never blocks waiting for a writer
        load_allocations(fifo)
    assert "not a regular file" in str(e.value.errors[0])


def test_a_symlink_to_dev_zero_renamed_over_the_watched_file_keeps_the_last_good(tmp_path):
    """Was: RSS to 2 GB and an uncaught MemoryError while the API said errors: []."""
    path = tmp_path / "alloc.xml"
    path.write_text(ALLOC)
    from slotwise.config.watcher import load_with_status

    cfg, status = load_with_status(str(path))
    got = []
    w = ConfigWatcher(str(path), lambda c, t: got.append(c), status=status)
    link = tmp_path / "tmp-link"
    os.symlink("/dev/zero", link)
    os.rename(link, path)
    assert w.check() is False
    assert got == [] and status.errors and "not a regular file" in status.errors[0]
    # The same content back is taken again.
    tmp = tmp_path / "tmp.xml"
    tmp.write_text(ALLOC.replace("<weight>3</weight>", "<weight>4</weight>"))
    os.rename(tmp, path)
    assert w.check() is True and status.errors == []


def test_serve_refuses_dev_zero_at_start_with_one_line():
    slotwise = os.path.join(os.path.dirname(sys.executable), "slotwise")
    p = subprocess.run([slotwise, "serve", "--allocations", "/dev/zero"],
                       capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 1
    lines = [ln for ln in out.splitlines() if "/dev/zero" in ln]
    assert lines and "not a regular file" in lines[0], out
    assert "Traceback" not in out


# ------------------------------------------------------- dynamic queues
def test_an_empty_dynamic_queue_is_removed_when_its_last_app_leaves():
    """Was: 10,005 queues remained after 10,000 distinct users' apps finished."""
    core = make_core(USERS_ALLOC)
    call(core, "heartbeat", full=True, nodes=NODES)
    base = set(engine(core).queues)
    for i in range(300):
        user = f"user{i}"
        call(core, "heartbeat", apps=[job(f"a{i}", f"root.users.{user}", n=1, user=user)], node="n1:1")
        assert f"root.users.{user}" in engine(core).queues
        call(core, "heartbeat", apps_removed=[f"a{i}"])
    assert set(engine(core).queues) == base
    assert "root.users" in engine(core).queues  # declared in the file: stays
    # A moved app leaves its old dynamic queue behind no more either.
    call(core, "heartbeat", apps=[job("m", "root.users.kim", n=1, user="kim")])
    assert "root.users.kim" in engine(core).queues
    assert json.loads(core.move(json.dumps({"app": "m", "queue": "root.prod"}))) == {"queue": "root.prod"}
    assert "root.users.kim" not in engine(core).queues


def test_nested_dynamic_parents_go_with_their_last_child():
    alloc = ALLOC.replace('create="false"', 'create="true"')
    core = make_core(alloc)
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a", "root.x.y.z", n=1)])
    assert {"root.x", "root.x.y", "root.x.y.z"} <= set(engine(core).queues)
    call(core, "heartbeat", apps_removed=["a"])
    assert not any(p.startswith("root.x") for p in engine(core).queues)


def test_an_update_answer_carries_only_the_queues_that_changed():
    core = make_core(USERS_ALLOC)
    first = call(core, "update", full=True, nodes=NODES, apps=[job("a", "root.users.ann", n=2)])
    assert first["queues_full"] is True and {r["name"] for r in first["queues"]} >= {"root", "root.users.ann"}
    wire.convert("UpdateAnswer", first)
    assert "queues" not in call(core, "update")  # nothing changed: no rows at all
    call(core, "heartbeat", node="n1:1")  # a's containers placed: its queue and those above change
    changed = {r["name"] for r in call(core, "update")["queues"]}
    assert "root.users.ann" in changed and "root.prod" not in changed
    gone = call(core, "update", apps_removed=["a"])
    assert gone["queues_removed"] == ["root.users.ann"] and "queues_full" not in gone
    # A full payload (the shim starting afresh) gets the whole table.
    again = call(core, "update", full=True, nodes=NODES)
    assert again["queues_full"] is True and "root.prod" in {r["name"] for r in again["queues"]}


def test_thousands_of_distinct_users_leave_no_queues_and_small_answers():
    core = make_core(USERS_ALLOC)
    call(core, "update", full=True, nodes=NODES)
    base = set(engine(core).queues)
    for i in range(2_000):  # benchmarks/bench_hostile.py runs 10,000 and prints the memory
        call(core, "heartbeat", apps=[job(f"a{i}", f"root.users.u{i}", n=1, user=f"u{i}")], node="n1:1")
        call(core, "heartbeat", apps_removed=[f"a{i}"])
    assert set(engine(core).queues) == base == {"root", "root.prod", "root.users"}
    text = core.update(json.dumps({"now_ms": 0}))
    assert len(text) < 200, text
