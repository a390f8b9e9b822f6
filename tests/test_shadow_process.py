"""The shadow in a process of its own (slotwise/shadow_process.py): the same
comparisons as on a thread, the child's stops reported, its death noticed,
and the door never held up."""

from __future__ import annotations

import os
import signal
import time

from slotwise.eventlog import EventLog, read_events
from slotwise.shadow_process import ShadowProcess

from test_shadow import _door, _drive, allocations


def _settled(s, compared: int = 1, timeout: float = 30.0) -> dict:
    """The child's status once it has taken every input sent (its backlog
    empty) and compared at least ``compared`` heartbeats."""
    deadline = time.monotonic() + timeout
    st = s.status()
    while time.monotonic() < deadline and (st["state"] == "running" and (st["backlog"] or st["compared"] < compared)):
        time.sleep(0.1)
        st = s.status()
    return st


def test_an_identical_candidate_in_its_process_agrees_on_every_heartbeat():
    config, text = allocations()
    core, clock = _door(config, text)
    _drive(core, clock, 60)  # the door has state before the shadow starts: the child is built of a copy
    s = ShadowProcess(allocations(name="candidate.xml")[0])
    s.attach(core)
    assert core.shadow is s and s.proc.pid != os.getpid()
    _drive(core, clock, 300, seed=8)
    st = _settled(s)
    assert st["state"] == "running", st
    # every heartbeat since the start compared, or skipped had the child been behind by more than LAG
    assert st["compared"] + st["skipped"] == 1 + 150 and st["compared"] > 0, st
    assert st["diverged"] == 0 and st["updates_diverged"] == 0, st
    assert st["copies"] == 1 or st["skipped"], st  # made of the live state once, at its start
    s.stop()
    assert s.state == "stopped" and s.error is None and core.shadow is None
    assert s.status()["compared"] == st["compared"]  # its figures stay readable after the stop
    assert s.proc.wait(10) == 0


def test_a_changed_candidate_diverges_where_its_queue_is_concerned_and_logs_apart(tmp_path):
    config, text = allocations()
    core, clock = _door(config, text)
    log = EventLog(str(tmp_path / "events.jsonl"))
    s = ShadowProcess(allocations(a="4", name="candidate.xml")[0], event_log=log)
    s.attach(core)
    _drive(core, clock, 400)
    st = _settled(s)
    assert st["state"] == "running" and st["diverged"] > 0, st
    assert s.summary()["diverged"] == st["diverged"]
    s.stop()
    s.proc.wait(10)
    log.close()
    shadow = [e for e in read_events(str(tmp_path / "events.jsonl")) if e["event"] == "shadow"]
    assert shadow, "the child appends its diverging decisions to serve's event log"
    assert any("a" in {d["queue"].split(".")[-1] for d in e["live"] + e["shadow"]} for e in shadow)


def test_a_child_killed_stops_the_shadow_and_the_door_goes_on():
    config, text = allocations()
    core, clock = _door(config, text)
    before = _drive(*_door(config, text), 200)
    s = ShadowProcess(allocations(name="candidate.xml")[0])
    s.attach(core)
    _settled(s, compared=0)
    os.kill(s.proc.pid, signal.SIGKILL)
    assert _drive(core, clock, 200) == before  # the live decisions as without a shadow
    deadline = time.monotonic() + 10
    while s.state == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.state == "stopped" and "exited" in s.error, s.error
    assert core.shadow is None


def test_a_paused_child_falls_behind_and_is_stopped_not_the_door(monkeypatch):
    from slotwise import shadow_process

    monkeypatch.setattr(shadow_process, "MAX_BACKLOG", 50)
    monkeypatch.setattr(shadow_process, "MAX_BATCH", 1)
    config, text = allocations()
    core, clock = _door(config, text)
    s = ShadowProcess(allocations(name="candidate.xml")[0])
    s.attach(core)
    _settled(s, compared=0)
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        # a pipe fills (64 KiB), the feeder blocks on it, the backlog grows past its bound
        _drive(core, clock, 3000)
        deadline = time.monotonic() + 10
        while s.state == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert s.state == "stopped" and "fell behind" in s.error, (s.state, s.error)
        assert core.shadow is None
        s.proc.wait(10)  # killed: it does not answer its closed pipe while paused
    finally:
        if s.proc.poll() is None:
            os.kill(s.proc.pid, signal.SIGCONT)
    assert s.proc.poll() is not None


def test_a_candidate_reloaded_goes_to_the_child_in_the_streams_order():
    config, text = allocations()
    core, clock = _door(config, text)
    s = ShadowProcess(allocations(name="candidate.xml")[0])
    s.attach(core)
    _drive(core, clock, 200)
    assert _settled(s)["diverged"] == 0
    s.set_candidate(*allocations(a="4", name="candidate.xml"))
    _drive(core, clock, 300, seed=9)
    st = _settled(s)
    assert st["diverged"] > 0 and st["state"] == "running", st
    s.stop()


def test_a_shadow_replaced_is_stopped_outside_the_doors_lock():
    """Starting a candidate over a running one stops the old one (its final
    figures asked of its process) only after the hold of the door's lock:
    a heartbeat arriving meanwhile is not kept waiting for the old process."""
    import threading

    config, text = allocations()
    core, clock = _door(config, text)
    _drive(core, clock, 40)
    old = ShadowProcess(allocations(name="old.xml")[0])
    old.attach(core)
    _settled(old, compared=0)
    held = []
    real_stop = ShadowProcess.stop

    def stop(self, why="stopped by the operator"):
        def probe():  # the lock is an RLock: another thread tells whether this one holds it
            got = core._lock.acquire(timeout=0.5)
            held.append(not got)
            if got:
                core._lock.release()

        t = threading.Thread(target=probe)
        t.start()
        t.join()
        real_stop(self, why)

    ShadowProcess.stop = stop
    try:
        new = ShadowProcess(allocations(name="new.xml")[0])
        new.attach(core)
    finally:
        ShadowProcess.stop = real_stop
    assert held == [False], "the old shadow was stopped while the door's lock was held"
    assert old.state == "stopped" and core.shadow is new
    new.stop()


def test_a_heartbeats_message_crosses_the_pipe_as_msgpack_and_arrives_equal():
    """The feeder's packing: a protocol message as msgpack bytes, its answer
    as tuples (cheap for serve), made again in the child into an equal
    message and equal assignments, through a real pickle; other inputs as they are."""
    import pickle

    from slotwise import protocol as wire
    from slotwise.engine.decisions import Assignment, Preemption
    from slotwise.resources import Resource
    from slotwise.shadow_process import _packed, _unpacked
    from wiretools import app, node, payload, req

    msg = payload(nodes=[node("n0", "h0", "/r1", 4096, 4)], apps=[app("x", "root.a", [req(1, 1024, 1, 5)])],
                  finished=["c1"])
    answer = [Assignment("e1", "x", "root.a", "n0", 1, "node_local", Resource(1024, 1), False),
              Assignment("e2", "x", "root.a", "n0", 0, "off_switch", Resource(512, 2, 1, 0), True)]
    item = pickle.loads(pickle.dumps(_packed(("input", "heartbeat", 12.5, msg, answer))))
    assert item[0] == "payload" and isinstance(item[3], bytes) and item[1:3] == ("heartbeat", 12.5)
    call, t, back, got = _unpacked(item)
    assert (call, t) == ("heartbeat", 12.5) and type(back) is wire.Payload and back == msg
    assert got == answer and all(type(a) is Assignment for a in got)
    cut = [Preemption("e1", "x", "root.a", "n0", False, "fair_share")]
    item = _packed(("input", "update", 13.0, msg, cut))
    assert _unpacked(item) == ("update", 13.0, msg, cut)
    other = ("input", "market", 13.0, {"op": "set_spending", "args": {}}, None)
    assert _packed(other) is other
