"""For each slow heartbeat call (> 10 ms), how much of its wall time the
chain's threads (the IPC handler that runs assignTasks, the link's call thread,
Python's callback thread) spent runnable but waiting for a CPU (sched delay),
from `perf sched timehist -w` output (trace.py run under `perf sched record -k
CLOCK_MONOTONIC`). usage: schedsplit.py OUT TIMEHIST JOBTRACKER_PID"""
import bisect
import collections
import re
import sys

d, th, jt_pid = sys.argv[1], sys.argv[2], sys.argv[3]
jt = [l.split() for l in open(f"{d}/slotwise-jtrace.txt") if l.startswith("hb")]
py = [l.split() for l in open(f"{d}/slotwise-pytrace.txt")]
py_tids = {x[4] for x in py if x[0] == "py_hb"}
delays = collections.defaultdict(list)  # tid -> [(start, end)] runnable-waiting intervals
runs = collections.defaultdict(list)
wakes = []  # (time, waker comm/tid, wakee tid)
line = re.compile(r"^\s*([\d.]+)\s+\[(\d+)\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+(.*)$")
for l in open(th):
    m = line.match(l)
    if not m:
        continue
    t = float(m.group(1))
    comm, tid, pid, rest = m.group(3), m.group(4), m.group(5) or m.group(4), m.group(6)
    if rest.startswith("awakened:"):
        w = re.search(r"\[(\d+)(?:/(\d+))?\]", rest)
        if w:
            wakes.append((t, tid, pid, comm, w.group(1)))
        continue
    f = rest.split()
    if len(f) >= 3:
        try:
            sch, run = float(f[1]) / 1e3, float(f[2]) / 1e3
        except ValueError:
            continue
        # switch-out at t: ran [t-run, t]; waited for CPU [t-run-sch, t-run]
        delays[tid].append((t - run - sch, t - run))
        runs[tid].append((t - run, t))
for v in delays.values():
    v.sort()
comm_of = {}
for t, tid, pid, comm, wakee in wakes:
    comm_of[tid] = (comm, pid)


def overlap(tid, a, b):
    s = 0.0
    v = delays.get(tid, [])
    i = bisect.bisect_left(v, (a - 1.0,))
    while i < len(v) and v[i][0] < b:
        x, y = v[i]
        s += max(0.0, min(b, y) - max(a, x))
        i += 1
    return s


call_tids = {tid for tid, (c, p) in comm_of.items() if c.startswith("slotwise-polic") and p == jt_pid}
tot = wait_sum = 0.0
rows = []
role = collections.Counter()  # per role, over the slow calls
for x in jt:
    e, done = int(x[1]) / 1e9, int(x[6]) / 1e9
    if done - e < 0.010:
        continue
    # the IPC handler: the JT thread that woke the call thread inside the window, else any IPC handler
    handlers = {tid for (t, tid, pid, comm, wakee) in wakes if e <= t <= done and pid == jt_pid
                and comm.startswith("IPC Server hand") and wakee in call_tids}
    chain = handlers | call_tids | py_tids
    waited = sum(overlap(t, e, done) for t in chain)
    rows.append((done - e, waited, len(handlers)))
    tot += done - e
    wait_sum += waited
    for name, tids in (("IPC handler (assignTasks)", handlers), ("link call thread", call_tids),
                       ("Python callback thread", py_tids)):
        role[name] += sum(overlap(t, e, done) for t in tids)
for r in sorted(rows):
    print(f"call {r[0] * 1e3:7.1f} ms: chain threads waiting for a CPU {r[1] * 1e3:7.1f} ms (handlers found {r[2]})")
print(f"{len(rows)} calls over 10 ms, {tot * 1e3:.0f} ms in all; the chain waited for a CPU {wait_sum * 1e3:.0f} ms "
      f"({100 * wait_sum / tot if tot else 0:.0f}%)")
for k, v in role.items():
    print(f"  {k}: {v * 1e3:.0f} ms waiting for a CPU")
