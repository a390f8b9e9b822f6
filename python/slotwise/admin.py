"""What operators can see and do while the scheduler runs.

The web UI and the REST API both go through this service; it reads the
PolicyCore's views (``core.views``: slotwise.views, with the link this
service knows) and carries out admin actions (``core.actions``).  With a
ResourceManager connected, a move or a priority change goes through the
RM's own path (which calls Python's ``move`` or sends the new priority in
the next payload), so the RM and Python never disagree; with none, the
engine takes it directly.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
import unicodedata
import urllib.parse
from typing import Protocol

from .config import ConfigErrors, parse_allocations
from .config.errors import one_line
from .core import PolicyCore
from .config.watcher import ConfigStatus
from .placement import queue_path
from .secretfile import read_secret


class AdminError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


#: The header a dry run's client names the file it sends in (percent-encoded
#: UTF-8, as ``urllib.parse.quote`` gives it), and its cap: errors say
#: FILE:LINE with the operator's file, not the one the server watches.
FILE_NAME_HEADER = "X-Slotwise-File-Name"
MAX_FILE_NAME = 1024
#: What they say when the client names none.
SENT_FILE = "the file sent"


def sent_file_name(header: str | None) -> str:
    """The name a dry run's errors give the file sent: the client's
    (``FILE_NAME_HEADER``) decoded, each control or format character escaped
    (one line, nothing a terminal acts on), or ``SENT_FILE``.  Over the cap:
    400."""
    if header is None or not header.strip():
        return SENT_FILE
    if len(header) > MAX_FILE_NAME:
        raise AdminError(400, f"header {FILE_NAME_HEADER}: at most {MAX_FILE_NAME} characters, "
                              f"got {len(header)}")
    name = urllib.parse.unquote(header.strip(), errors="replace")
    name = "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c)[0] == "C" else c
                   for c in name)  # controls, bidi overrides, zero-width...
    return one_line(name, MAX_FILE_NAME)


#: YARN priorities are non-negative; an app's weight is 2^priority, so keep
#: it where floats and the fair-share search stay exact.
MAX_PRIORITY = 64
#: An MRv1 job's: VERY_LOW -2 ... VERY_HIGH 2 (the protocol's, docs/mrv1.md).
MRV1_PRIORITIES = (-2, 2)


class ResourceManagerControl(Protocol):
    def connected(self) -> bool: ...
    def seen(self) -> bool: ...
    def status(self) -> dict: ...  # the link: registered, in_fallback, reason, since...
    def move(self, app_id: str, queue: str) -> dict: ...  # {"queue"} or {"error"}
    def priority(self, app_id: str, priority: int) -> dict: ...  # {"priority"} or {"error"}


class SchedulerService:
    def __init__(self, core: PolicyCore, status: ConfigStatus,
                 rm: ResourceManagerControl | None = None) -> None:
        self.core = core
        self.status = status
        self.rm = rm

    # ------------------------------------------------------------------ reads
    def queues(self) -> list[dict]:
        """Each queue, with how long it has been below its min share and its
        fair-share threshold (0 unless it is below now; None while below but
        not timed) and when preemption's next round may act for it, read
        with the link (views.StateViews.queue_rows)."""
        return self.core.views.queue_rows(self.link_status()["resource_manager"])

    def apps(self) -> list[dict]:
        """Each app, with its running containers by the locality they were placed at."""
        return self.core.views.apps()

    def nodes(self) -> list[dict]:
        return self.core.views.nodes()

    @property
    def master(self) -> str:
        """The kind of master this server decides for, by its name in messages."""
        return "JobTracker" if self.core.kind == "mrv1" else "ResourceManager"

    def leaf_queues(self) -> list[str]:
        return self.core.views.leaf_queues()

    def cluster(self) -> dict:
        """The cluster as Python sees it: capacity, nodes, usage, share rule."""
        return self.core.views.cluster()

    def config(self) -> dict:
        d = self.status.to_dict()
        d["resource_manager_connected"] = bool(self.rm and self.rm.connected())
        d["share_rule"] = self.core.views.share_rule()
        return d

    def link_status(self) -> dict:
        """The ResourceManager link (is this server its policy; is the RM
        scheduling without Python right now, since when, why) and the
        policy's own counts."""
        link = {"connected": False, "registered": False, "in_fallback": False}
        if self.rm is not None:
            link.update(self.rm.status())
            link["seen"] = self.rm.seen()
        link.setdefault("seen", False)
        link["master"] = self.master
        return {"resource_manager": link,
                "policy": {**self.core.counters, "refused_by_reason": dict(self.core.refusals)}}

    def preemptions(self) -> list[dict]:
        return self.core.views.recent_preemptions()

    def placement(self, app_id: str) -> dict:
        """How an app was placed (each rule tried), or 404 once forgotten."""
        out = self.core.views.placement(app_id)
        if out is None:
            raise AdminError(404, f"no placement remembered for {app_id} (placed before this server "
                                  "started, or long ago)")
        return out

    def explain_app(self, app_id: str) -> dict:
        """Why an app runs no more than it does now (slotwise.views.explain), how
        it ended, or why it was rejected at placement; the ResourceManager
        scheduling without Python comes first when it is so."""
        out = self.core.views.explain(app_id, self.link_status()["resource_manager"])
        if out is None:
            raise AdminError(404, f"unknown app {app_id}: not scheduled now, nor among the last "
                             f"{self.core.finished.limit} that finished")
        return out

    def dry_run(self, text: str, source: str = SENT_FILE) -> dict:
        """What saving ``text`` as the allocation file would do now, changing
        nothing: its errors and warnings (FILE:LINE with ``source``, the name
        the client gave the file: sent_file_name), or each queue's shares and
        settings before and after and the containers that would become
        preemptable."""
        try:
            config = parse_allocations(text, source)
        except ConfigErrors as e:
            return {"valid": False, "errors": [str(x) for x in e.errors],
                    "warnings": [str(x) for x in e.warnings], "queues": [], "conflicts": [], "newly_preemptable": []}
        out = self.core.views.dry_run(config)
        return {"valid": not out["conflicts"], "errors": [], "warnings": [str(w) for w in config.warnings], **out}

    def whatif(self, body) -> dict:
        """``body`` (schemas.WhatIfIn) played forward beside the live state
        (views.StateViews.whatif): per app its start and finish without and
        with the change, in seconds from now; nothing live changes."""
        from .engine.whatif import Change, parse_set

        given = [k for k in ("set", "move", "priority", "allocations") if getattr(body, k) is not None]
        if len(given) != 1:
            raise AdminError(400, "give exactly one change: set, move, priority or allocations")
        kind = given[0]
        try:
            if kind == "set":
                change = parse_set(body.set)
            elif kind == "move":
                change = Change("move", body.move[0], value=body.move[1], said=f"--move {' '.join(body.move)}")
            elif kind == "priority":
                change = Change("priority", str(body.priority[0]), value=int(body.priority[1]),
                                said=f"--priority {body.priority[0]} {body.priority[1]}")
            else:
                change = Change("allocations", value=parse_allocations(body.allocations, SENT_FILE),
                                said="--allocations (the file sent)")
        except ConfigErrors as e:
            raise AdminError(400, "; ".join(str(x) for x in e.errors)) from None
        except ValueError as e:
            raise AdminError(400, str(e)) from None
        cpu = time.process_time()
        out = self.core.views.whatif(change, body.horizon_s)
        at, beat = out["at"], out["heartbeat"]

        def rel(t):
            return None if t is None else round(max(0.0, t - at), 1)

        apps = []
        for app_id, ba in out["apps"].items():
            b, a = ba["before"], ba["after"]
            sb, sa = (None if b.start is not None and b.start <= at else rel(b.start)), \
                (None if a is None or (a.start is not None and a.start <= at) else rel(a.start))
            fb, fa = rel(b.finish), rel(a.finish) if a is not None else None
            moved = any(x != y and (x is None or y is None or abs(x - y) > beat) for x, y in ((sb, sa), (fb, fa)))
            apps.append({"app": app_id, "queue": out["queues"].get(app_id, ""), "start_before": sb, "start_after": sa,
                         "finish_before": fb, "finish_after": fa, "why_before": b.why,
                         "why_after": a.why if a is not None else None, "changed": moved})
        queues = []
        traces = out.get("traces")
        if traces:
            b, a = traces["before"], traces["after"]
            mb, ma = b.mean(), a.mean()
            for name in sorted(set(b.queues) | set(a.queues)):
                queues.append({"queue": name, "share_before": mb.get(name, 0.0), "share_after": ma.get(name, 0.0),
                               "before": [[t, x] for t, x in zip(b.t, b.queues.get(name, []))],
                               "after": [[t, x] for t, x in zip(a.t, a.queues.get(name, []))]})
        taken = out.get("preemptions") or {}
        return {"change": change.said, "error": out["error"], "at": at, "horizon_s": body.horizon_s,
                "cpu_ms": round((time.process_time() - cpu) * 1000, 1), "apps": apps, "queues": queues,
                "preemptions_before": taken.get("before") or {}, "preemptions_after": taken.get("after") or {}}

    # ---------------------------------------------------------------- actions
    def _through_rm(self) -> bool:
        """True: the RM carries the action out.  With an RM that is away
        (restarting), refuse: its resync would undo a local change."""
        if self.rm is None:
            return False
        if self.rm.connected():
            return True
        if self.rm.seen():
            raise AdminError(503, f"the {self.master} is not connected; try again when it is back")
        return False

    def move_app(self, app_id: str, queue: str) -> str:
        queue = (queue or "").strip()
        if not queue:
            raise AdminError(400, "field 'queue': a queue name is required")
        target = queue_path(queue)
        self._known(app_id)
        problem = self.core.actions.target_problem(target)
        if problem:
            raise AdminError(422, problem)
        if self._through_rm():
            answer = _granted(self.rm.move(app_id, target), f"to move {app_id} to {target}", self.master)
            return answer.get("queue") or self._queue_of(app_id)
        try:
            return self.core.actions.move(app_id, target)
        except KeyError:
            raise AdminError(404, f"unknown app {app_id}") from None
        except ValueError as e:
            raise AdminError(409, str(e)) from None

    def set_priority(self, app_id: str, priority: int) -> int:
        """Returns the priority in force (the RM caps it at
        yarn.cluster.max-application-priority)."""
        low, high = MRV1_PRIORITIES if self.core.kind == "mrv1" else (0, MAX_PRIORITY)
        if not isinstance(priority, int) or isinstance(priority, bool) or not low <= priority <= high:
            raise AdminError(422, f"field 'priority': an integer from {low} to {high} is required"
                             + (" (VERY_LOW to VERY_HIGH)" if low < 0 else ""))
        self._known(app_id)
        if self._through_rm():
            answer = _granted(self.rm.priority(app_id, priority), f"priority {priority} for {app_id}", self.master)
            return int(answer.get("priority", priority))
        try:
            self.core.actions.priority(app_id, priority)
        except KeyError:
            raise AdminError(404, f"unknown app {app_id}") from None
        return priority

    def _known(self, app_id: str) -> None:
        if self.core.views.app_queue(app_id) is None:
            raise AdminError(404, f"unknown app {app_id}")

    def _queue_of(self, app_id: str) -> str:
        return self.core.views.app_queue(app_id) or ""


def _granted(answer: dict, what: str, master: str) -> dict:
    if "error" in answer:
        raise AdminError(409, f"the {master} refused {what}: {answer['error']}")
    return answer


class AdminToken:
    """The admin secret: read from a 0600 file, or made with ``secrets`` and
    written there (0600) on first start."""

    def __init__(self, value: str) -> None:
        if len(value) < 16:
            raise ValueError("admin token too short (at least 16 characters)")
        self.value = value

    @classmethod
    def from_file(cls, path: str) -> "AdminToken":
        if os.path.exists(path):
            return cls(read_secret(path, "admin token"))
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        value = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(value + "\n")
        return cls(value)

    def check(self, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), self.value.encode())



class Sessions:
    """The UI's logins: random ids kept here with an expiry, so logging out
    (or a restart) really ends them and a leaked cookie dies on its own."""

    def __init__(self, ttl: float = 8 * 3600.0, clock=time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._ids: dict[str, float] = {}
        self._lock = threading.Lock()

    def create(self) -> str:
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._ids = {k: t for k, t in self._ids.items() if t > now}  # drop the expired
            self._ids[sid] = now + self.ttl
        return sid

    def valid(self, sid: str | None) -> bool:
        if not sid:
            return False
        with self._lock:
            expires = self._ids.get(sid)
        return expires is not None and expires > self._clock()

    def revoke(self, sid: str | None) -> None:
        with self._lock:
            self._ids.pop(sid or "", None)
