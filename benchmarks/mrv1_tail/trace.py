"""bench_mrv1.py with per-call timestamps on both sides of the link (issue 39's
tail investigation; docs/benchmarks.md, "Issue 39, third session").

    git apply benchmarks/mrv1_tail/shim-trace.patch     # the JobTracker's side (not for commit)
    PYTHONPATH=python .venv/bin/python benchmarks/mrv1_tail/trace.py OUT [bench_mrv1 args...]

The patched shim appends one line per assignTasks to OUT/NAME-jtrace.txt
(System.nanoTime at entry, line taken, payload built, answer back, carried
out, return; whether the FIFO scheduled it; the link's observer figures).
This process wraps PolicyCore.heartbeat/update and Py4J's callback dispatch
and records time.monotonic_ns (the same clock as Java's System.nanoTime on
Linux) in OUT/NAME-pytrace.txt, and Python's collections in OUT/NAME-pygc.txt.
Add --jt-opts=-Xlog:gc,safepoint,jit+compilation=debug:file=OUT/gc-{name}.log:tn,tid
for the JobTracker's pauses and compilations on the same clock, and run it
under `perf sched record -k CLOCK_MONOTONIC` for the threads' CPU waits.
split.py, schedsplit.py, jitcheck.py and pygc.py read the results.
"""
import gc
import os
import sys
import threading
import time
from pathlib import Path

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
sys.argv = [sys.argv[0]] + sys.argv[2:]
sys.path.insert(0, os.environ.get("BENCH_DIR", str(Path(__file__).resolve().parents[1])))

import bench_mrv1  # noqa: E402
from py4j import java_gateway  # noqa: E402
from slotwise.core import PolicyCore  # noqa: E402

REC: list = []
GCS: list = []
mono = time.monotonic_ns


def timed(kind, method):
    def wrapper(self, payload):
        t0, c0 = mono(), time.thread_time_ns()
        r = method(self, payload)
        REC.append((kind, t0, mono(), time.thread_time_ns() - c0, threading.get_native_id(), len(payload)))
        return r
    return wrapper


PolicyCore.heartbeat = timed("py_hb", PolicyCore.heartbeat)
PolicyCore.update = timed("py_up", PolicyCore.update)
_call_proxy = java_gateway.CallbackConnection._call_proxy


def call_proxy(self, obj_id, input):  # entered once Py4J has read the command's first lines
    t0 = mono()
    r = _call_proxy(self, obj_id, input)
    REC.append(("py_cp", t0, mono(), 0, threading.get_native_id(), 0))
    return r


java_gateway.CallbackConnection._call_proxy = call_proxy
gc.callbacks.append(lambda phase, info: GCS.append((phase, info.get("generation"), mono(),
                                                    threading.get_native_id())))
_run = bench_mrv1.run


def run(name, delegate, repo, work, timer, shim, jobs, **kw):
    conf = dict(kw.pop("conf", None) or {})
    conf["slotwise.bench.trace"] = os.path.join(out, f"{name}-jtrace.txt")
    try:
        return _run(name, delegate, repo, work, timer, shim, jobs, conf=conf, **kw)
    finally:
        for what, rows in (("pytrace", REC), ("pygc", GCS)):
            with open(os.path.join(out, f"{name}-{what}.txt"), "w") as f:
                f.writelines(" ".join(map(str, r)) + "\n" for r in rows)
            rows.clear()


bench_mrv1.run = run
sys.exit(bench_mrv1.main())
