"""serve's line when its poll finds the master without Python says what
happened: a failed call with no heartbeat sent to the FIFO is not "the
master schedules by its FIFO" (issue 39)."""

from __future__ import annotations

import logging
import types

from slotwise import protocol as wire
from slotwise.bridge.server import PolicyServer


def poll_with(status: wire.ShimStatus, kind: str = "mrv1") -> PolicyServer:
    server = PolicyServer(types.SimpleNamespace(kind=kind), "unused.json", "unused.token")
    server.gateway = types.SimpleNamespace(entry_point=types.SimpleNamespace(status=lambda _: wire.encode(status)))
    server.session = "s"
    assert server.poll() == "ok"
    return server


def status(heartbeats: int, reason: str) -> wire.ShimStatus:
    return wire.ShimStatus(registered=True, holder=None, in_fallback=True, reason=reason, since_ms=1_700_000_000_000,
                           episode_heartbeats=heartbeats, heartbeats=10, fallback_heartbeats=heartbeats, failures=1,
                           now_ms=1_700_000_000_500)


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "slotwise.serve" and r.levelno >= logging.WARNING]


def test_a_failed_call_that_sent_no_heartbeat_to_the_fifo_says_so(caplog):
    caplog.set_level(logging.INFO, logger="slotwise.serve")
    poll_with(status(0, "update: no answer within 100 ms"))
    [line] = said(caplog)
    assert line.startswith("a call from the JobTracker to Python failed at ")
    assert line.endswith("(update: no answer within 100 ms); no heartbeat has gone to its FIFO so far")
    assert "schedules" not in line


def test_heartbeats_the_fifo_scheduled_are_counted(caplog):
    caplog.set_level(logging.INFO, logger="slotwise.serve")
    poll_with(status(3, "heartbeat: no answer within 100 ms"), kind="yarn")
    [line] = said(caplog)
    assert line.startswith("the ResourceManager's FIFO has scheduled 3 heartbeat(s) without Python since ")
    assert line.endswith(": heartbeat: no answer within 100 ms")
