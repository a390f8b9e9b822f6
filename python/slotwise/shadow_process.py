"""The shadow in a process of its own: serve's default.

A shadow on a thread of serve (``shadow.Shadow``, ``threaded=True``) shares
serve's interpreter with the live heartbeat: while its two engines decide,
the door's next call waits for the interpreter (up to the switch interval),
and a candidate that copies the live state often costs the live p99 a
third or more (docs/benchmarks.md, "Shadow overhead"). Here the same
``Shadow`` runs in a child process on its own core; serve's part is the
door's hand-off (an append, as before) and a feeder thread that pickles the
inputs in batches onto a pipe.

- Start: the live state captured in one hold of the door's lock
  (``shadow.capture``), pickled, and the child builds the follower and the
  candidate from it (``Shadow.begin``).
- Reading: ``status`` asks the child over the pipe (the console, the API
  and ``/metrics`` read it; a summary is kept a second).
- Stop: by the operator, the child's own stop (a raise, its budget, a
  backlog), or the child's death: serve's door stops handing it inputs and
  the live policy never notices. The child ends when its pipe closes, so a
  serve that dies (even by SIGKILL) takes it along; it ignores Ctrl-C (the
  terminal sends it to the whole group; serve decides when it ends).
- The event log: the child appends its ``shadow`` records to serve's log
  file itself (one write per line, the file opened for appending).

The pipe carries pickles between serve and the child it started, and
nothing else reads it.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import operator
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time

import msgspec

from . import protocol as wire
from .engine.decisions import Assignment
from . import shadow as shadow_mod
from .shadow import MAX_BACKLOG, Shadow, capture

log = logging.getLogger("slotwise.shadow")

#: The feeder hands the door's inputs over every FEED_S seconds (at once with a
#: question, a candidate or a stop): the door only appends, and serve's
#: interpreter is woken a few times a second for the shadow, not per heartbeat.
FEED_S = 0.25
#: Inputs pickled into one frame at most (the interpreter may switch between frames).
MAX_BATCH = 8
#: The largest frame read from the child (its status).
MAX_FRAME = 64 * 1024 * 1024
#: How long a status question waits for the child (seconds).
ASK_S = 2.0
#: How long a summary (``/metrics``) is reused (seconds).
SUMMARY_S = 1.0
#: The child's nice increment: the live policy and the master go first.
NICE = 5


#: A heartbeat's or pass's message crosses the pipe as msgpack, not pickled:
#: pickling its structs one by one cost serve's feeder about 0.8 ms a heartbeat
#: at 100 apps, msgpack about 0.04 ms (and the child decodes it 5 times faster).
_PAYLOAD_ENC = msgspec.msgpack.Encoder()
_PAYLOAD_DEC = msgspec.msgpack.Decoder(wire.Payload)


#: An assignment's fields in the dataclass's order (``Assignment(*fields)`` makes it again).
_ASSIGNMENT_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Assignment)))


def _packed(item: tuple) -> tuple:
    """An input as it crosses the pipe: a protocol message as msgpack bytes,
    a heartbeat's answer as plain tuples (pickling the dataclasses took
    most of the feeder's time at bench_engine's scale)."""
    if item[0] == "input" and type(item[3]) is wire.Payload:
        answer = item[4]
        if item[1] == "heartbeat" and answer:
            answer = [_ASSIGNMENT_FIELDS(a) for a in answer]
        return ("payload", item[1], item[2], _PAYLOAD_ENC.encode(item[3]), answer)
    return item


def _unpacked(item: tuple) -> tuple:
    """A ``payload`` item as the door offered it (``_packed``'s inverse)."""
    _, call, t, raw, answer = item
    if call == "heartbeat" and answer:
        answer = [Assignment(*a) for a in answer]
    return call, t, _PAYLOAD_DEC.decode(raw), answer


def _write(out, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(struct.pack("!I", len(data)) + data)
    out.flush()


def _read_bytes(inp, limit: int | None = None) -> bytes | None:
    """The next frame's bytes, or None at the pipe's end (or a frame past ``limit``)."""
    head = inp.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("!I", head)
    if limit is not None and n > limit:
        return None
    data = inp.read(n)
    return data if len(data) == n else None


def _read(inp, limit: int | None = None):
    """The next frame, or None at the pipe's end (or a frame past ``limit``)."""
    data = _read_bytes(inp, limit)
    return None if data is None else pickle.loads(data)


def child_env() -> dict:
    """serve's environment, with the directory serve's slotwise comes from
    first on PYTHONPATH: a child (the shadow, a shadow report) runs the same
    code."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(shadow_mod.__file__)))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


class ShadowProcess:
    """``Shadow``'s interface (attach, offer, input, set_candidate, stop,
    status, summary) over a child process running it. Its state goes
    off -> running -> stopped, once (``_end``, under ``_state_lock``)."""

    def __init__(self, config, text: str | None = None, source: str | None = None, event_log=None,
                 budget_s: float = shadow_mod.BUDGET_S, window_s: float = shadow_mod.WINDOW_S) -> None:
        self.config = config
        self.text = text
        self.source = source or config.source
        self.log_path = getattr(event_log, "path", None)
        self.budget_s = budget_s
        self.window_s = window_s
        self.state = "off"
        self.error: str | None = None
        self.started_at: float | None = None
        self.proc: subprocess.Popen | None = None
        self.start_cpu_s = self.feed_cpu_s = 0.0  # serve's feeder thread: the start's pickling, then the rest
        self._core = None
        self._state_lock = threading.Lock()
        self._items: collections.deque = collections.deque()
        self._wake = threading.Event()
        self._behind = threading.Event()  # the door's queue passed its bound: the watcher ends it
        self._cond = threading.Condition()
        self._asked = 0
        self._waiting: set[int] = set()  # questions asked and not given up on
        self._replies: dict[int, dict] = {}
        self._last: dict | None = None  # the child's last status
        self._last_at = 0.0

    # ------------------------------------------------------------ the door's side
    def attach(self, core) -> None:
        self._core = core
        try:
            start = capture(core, self)  # from here on the door hands its inputs to offer()
            start.build()  # here, outside the door's lock, as a dry run builds its copy
            self.proc = subprocess.Popen([sys.executable, "-m", "slotwise.shadow_process"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, env=child_env(), close_fds=True)
        except Exception as e:
            self._end(f"cannot start the shadow process: {type(e).__name__}: {e}")
            return
        self._items.appendleft(("start", {
            "start": start, "config": self.config, "text": self.text, "source": self.source,
            "log": self.log_path, "budget_s": self.budget_s, "window_s": self.window_s}))
        with self._state_lock:
            if self.state == "off":  # not stopped while it was starting
                self.state, self.started_at = "running", time.time()
        if self.state != "running":  # stopped while it started: detached, its process ended
            core.swap_shadow(None, self)
            self.proc.kill()
            self.proc.wait()
            return
        for target, name in ((self._feed, "feed"), (self._listen, "listen"), (self._watch, "watch")):
            threading.Thread(target=target, name=f"slotwise-shadow-{name}", daemon=True).start()
        log.info("shadow of %s started in process %d", self.source, self.proc.pid)

    def offer(self, call: str, t: float, msg, answer=None) -> None:
        """The door's hand-off (under its lock): an append, and never raises."""
        try:
            items = self._items
            if len(items) >= MAX_BACKLOG:
                self._behind.set()  # ended by its watcher, off the door's path
                return
            items.append(("input", call, t, msg, answer))  # the feeder takes it within FEED_S
        except Exception:  # nothing the shadow does may reach the live heartbeat
            pass

    def input(self, call: str, t: float, msg) -> None:
        self.offer(call, t, msg)

    def set_candidate(self, config, text: str | None = None) -> None:
        """A new version of the candidate file, validated as a reload is
        (ValueError with FILE:LINE: lines), then sent in the stream's order."""
        if self._core is not None:
            shadow_mod.check_candidate(self._core, config)
        self.config, self.text = config, text
        self._items.append(("candidate", config, text))
        self._wake.set()

    # ---------------------------------------------------------------- threads
    def _feed(self) -> None:
        """Serve's side of the pipe: the inputs, pickled in batches."""
        out = self.proc.stdin
        items = self._items
        try:
            _write(out, [items.popleft()])  # the start: the live state's copy, pickled once
            self.start_cpu_s = base = time.thread_time()
            while self.state == "running":
                self._wake.wait(FEED_S)
                self._wake.clear()
                while items and self.state == "running":
                    batch = [_packed(items.popleft()) for _ in range(min(MAX_BATCH, len(items)))]
                    _write(out, batch)
                self.feed_cpu_s = time.thread_time() - base  # what feeding costs serve, after the start
        except Exception as e:  # the child gone (a broken pipe), or an input that cannot be pickled
            self._end(self._exited() if isinstance(e, OSError) else
                      f"cannot feed the shadow process: {type(e).__name__}: {e}")
        try:
            out.close()  # the child's end of input: it stops and exits
        except Exception:
            pass

    def _listen(self) -> None:
        """The child's answers; its end."""
        inp = self.proc.stdout
        try:
            while True:
                frame = _read(inp, MAX_FRAME)
                if frame is None:
                    break
                with self._cond:
                    n = frame.get("reply")
                    if n in self._waiting:
                        self._replies[n] = frame["status"]
                    self._keep(frame["status"])
                    self._cond.notify_all()
                if frame["status"]["state"] == "stopped":
                    self._end(frame["status"].get("error"))
        except Exception as e:
            log.warning("shadow process: unreadable answer: %s", e)
        if self.state == "running":
            self._end(self._exited())

    def _watch(self) -> None:
        """Ends the shadow once the door's queue for it passed its bound."""
        while self.state == "running":
            if self._behind.wait(1.0):
                self._end(f"fell behind by {MAX_BACKLOG:,} inputs")

    def _exited(self) -> str:
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            return "the shadow process closed its pipe"
        return f"the shadow process exited (code {code})"

    def _keep(self, status: dict) -> None:
        self._last, self._last_at = status, time.monotonic()

    # ---------------------------------------------------------------- reading
    def _ask(self, timeout: float = ASK_S, what: str = "status") -> dict | None:
        """The child's status now (None if it does not answer in time)."""
        if self.state != "running":
            return None
        with self._cond:
            self._asked += 1
            n = self._asked
            self._waiting.add(n)
        try:
            self._items.append((what, n))
            self._wake.set()
            with self._cond:
                self._cond.wait_for(lambda: n in self._replies or self.state != "running", timeout)
                return self._replies.pop(n, None)
        finally:
            with self._cond:
                self._waiting.discard(n)
                self._replies.pop(n, None)

    def status(self) -> dict:
        st = self._ask() if self.state == "running" else None
        out = dict(st or self._last or shadow_mod.off_status())
        out.update(state=self.state, file=self.source, error=self.error, started_at=self.started_at,
                   backlog=out.get("backlog", 0) + len(self._items), pid=self.proc.pid if self.proc else None,
                   start_cpu_s=self.start_cpu_s, feed_cpu_s=self.feed_cpu_s)
        return out

    def memory(self, timeout: float = 120.0) -> dict | None:
        """The status with tracemalloc's count of the shadow's objects
        (``traced_bytes``) if its process traces (benchmarks: it was
        started with SLOTWISE_SHADOW_TRACEMALLOC set)."""
        return self._ask(timeout, "memory")

    def summary(self) -> dict:
        st = self._last
        if self.state == "running" and (st is None or time.monotonic() - self._last_at > SUMMARY_S):
            st = self._ask() or st
        st = st or shadow_mod.off_status()
        return {"state": self.state, "error": self.error,
                **{k: st[k] for k in ("compared", "diverged", "skipped", "updates_compared", "updates_diverged",
                                      "copies")}}

    # ---------------------------------------------------------------- stopping
    def stop(self, why: str = "stopped by the operator") -> None:
        """Stopped on request: no more inputs, its last figures kept."""
        if self.state == "running":
            core = self._core
            if core is not None:
                core.swap_shadow(None, self)  # no more inputs
            st = self._ask()  # its figures stay readable
            if st is not None:
                self._keep(st)
        self._end(why, error=False)

    def _end(self, why: str | None, error: bool = True) -> None:
        """The one way to stopped (the first reason stays): logged, the
        door hands it nothing more, and its process ends."""
        with self._state_lock:
            if self.state == "stopped":
                return
            self.state, self.error = "stopped", why if error else None
        core = self._core
        if core is not None:
            core.swap_shadow(None, self)
        self._items.clear()
        self._wake.set()
        self._behind.set()
        with self._cond:
            self._cond.notify_all()
        if self.proc is not None:
            threading.Thread(target=self._reap, daemon=True).start()
        (log.warning if error else log.info)("shadow of %s stopped: %s", self.source, why)

    def _reap(self) -> None:
        """The child exits once its pipe closes; one that does not in 5 s
        (paused, or stuck) is killed, which also frees a feeder blocked on it."""
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ------------------------------------------------------------------ the child
def _child() -> int:
    """The shadow process: a ``Shadow`` fed from stdin, answering on stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.nice(NICE)
    except OSError:
        pass
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write on the pipe
    raw = _read_bytes(inp)
    if raw is None:
        return 2
    traced = _Traced(raw) if os.environ.get("SLOTWISE_SHADOW_TRACEMALLOC") else None
    first = pickle.loads(raw)
    del raw
    if first[0][0] != "start":
        return 2
    s = _shadow(first[0][1], threaded=True)
    try:
        return _serve(s, first[1:], inp, out, traced)
    except OSError:  # serve closed the pipe while an answer was written: it is gone or done
        s.stop()
        return 0


def _serve(s: Shadow, rest: list, inp, out, traced) -> int:
    """The child's loop: inputs to the shadow, questions answered."""
    while s.state == "running":
        for item in rest:
            kind = item[0]
            if kind == "payload":
                s.offer(*_unpacked(item))
            elif kind == "input":
                s.offer(*item[1:])
            elif kind in ("status", "memory"):
                _write(out, {"reply": item[1], "status": _status(s, traced if kind == "memory" else None)})
            elif kind == "candidate":
                s.set_candidate(item[1], item[2])
        rest = _read(inp)
        if rest is None:  # serve stopped it, or serve is gone
            s.stop()
            return 0
    _write(out, {"status": _status(s, None)})  # stopped by itself: serve learns why
    return 0


def _shadow(how: dict, threaded: bool) -> Shadow:
    """The shadow the start frame describes, begun."""
    from .eventlog import EventLog

    s = Shadow(how["config"], how["text"], how["source"], event_log=EventLog(how["log"]) if how["log"] else None,
               threaded=threaded, budget_s=how["budget_s"], window_s=how["window_s"])
    s.begin(how["start"])
    return s


class _Traced:
    """The bytes the shadow's objects hold (benchmarks: tracemalloc from
    before the live state arrives, after a first build of it has imported
    the modules it needs and filled the process's caches, as the live
    engine's count is made; costs a full collection per question)."""

    def __init__(self, raw: bytes) -> None:
        import tracemalloc

        _shadow(pickle.loads(raw)[0][1], threaded=False).stop()
        tracemalloc.start()
        self.base = self._now()

    @staticmethod
    def _now() -> int:
        import gc
        import tracemalloc

        gc.collect()
        imports = [tracemalloc.Filter(False, f) for f in ("<frozen importlib._bootstrap>",
                                                           "<frozen importlib._bootstrap_external>")]
        return sum(t.size for t in tracemalloc.take_snapshot().filter_traces(imports).traces)

    def bytes(self) -> int:
        return self._now() - self.base


def _status(s: Shadow, traced: _Traced | None) -> dict:
    """The shadow's status, with this process's resident memory."""
    from .localcluster.process import rss_mb

    out = s.status()
    out["rss_mb"] = rss_mb()
    if traced is not None:
        out["traced_bytes"] = traced.bytes()
    return out


if __name__ == "__main__":
    sys.exit(_child())
