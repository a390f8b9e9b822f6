"""Each heartbeat call split in time, from trace.py's output: usage: split.py OUT [NAME [N]].

wait (for the line), build (the payload), j2p (payload built to Py4J's dispatch in
Python), py_pre (Py4J reading the arguments), py (PolicyCore), py_post, p2j (back to
the heartbeat thread, the answer read), apply (carried out), after (the FIFO, if
the call failed); the N slowest calls, the medians, the JobTracker's pauses
(gc-NAME.log, if any) and Python's collections."""
import bisect
import re
import sys

d = sys.argv[1]
name = sys.argv[2] if len(sys.argv) > 2 else "slotwise"
jt = [l.split() for l in open(f"{d}/{name}-jtrace.txt")]
py = [l.split() for l in open(f"{d}/{name}-pytrace.txt")]
cps = sorted((int(x[1]), int(x[2]), int(x[4])) for x in py if x[0] == "py_cp")
calls = sorted((int(x[1]), int(x[2]), int(x[3]), x[0]) for x in py if x[0] in ("py_hb", "py_up"))
gcs = []
try:
    for l in open(f"{d}/gc-{name}.log"):
        m = re.search(r"\[(\d+)ns\].*(Pause \w+ \([^)]*\)) .* ([\d.]+)ms", l)
        if m:
            end = int(m.group(1))
            gcs.append((end - int(float(m.group(3)) * 1e6), end, m.group(2)))
        m = re.search(r"\[(\d+)ns\].*Safepoint \"(\w+)\".*Total: (\d+) ns", l)
        if m and int(m.group(3)) > 1_000_000:
            end = int(m.group(1))
            gcs.append((end - int(m.group(3)), end, "safepoint " + m.group(2)))
except FileNotFoundError:
    pass
pygc = [l.split() for l in open(f"{d}/{name}-pygc.txt")]


def find(lst, a, b):
    i = bisect.bisect_left(lst, (a,))
    while i < len(lst) and lst[i][0] <= b:
        yield lst[i]
        i += 1


rows = []
for x in jt:
    if x[0] != "hb":
        continue
    e, a0, a1, a2, a3, done, fifo = map(int, x[1:8])
    obs, inv, tot = int(x[8]), int(x[9]), int(x[10])
    r = {"total": done - e, "fifo": fifo, "e": e}
    if a0:
        r["wait"] = a0 - e
    if a1:
        r["build"] = a1 - a0
    if a2:
        cp = list(find(cps, a1, a2 or done))
        c = list(find(calls, a1, a2 or done))
        if cp and c:
            r["j2p"] = cp[0][0] - a1
            r["py_pre"] = c[0][0] - cp[0][0]
            r["py"] = c[0][1] - c[0][0]
            r["py_cpu"] = c[0][2]
            r["py_post"] = cp[0][1] - c[0][1]
            r["p2j"] = a2 - cp[0][1]
        r["send"] = a2 - a1
        if inv:
            r["invoke"] = inv
            r["handoff"] = tot - inv
    if a3:
        r["apply"] = a3 - a2
    r["after"] = done - max(a3, a1, a0, e)
    r["gc"] = [g[2] for g in gcs if g[0] < done and g[1] > e]
    rows.append(r)

rows.sort(key=lambda r: r["total"])
n = len(rows)
print("calls", n, "p50", rows[n // 2]["total"] / 1e6, "p99", rows[min(n - 1, int(n * .99))]["total"] / 1e6)
keys = ["total", "wait", "build", "j2p", "py_pre", "py", "py_cpu", "py_post", "p2j", "apply", "after"]
print(" ".join(f"{k:>7}" for k in keys), "fifo gc")
for r in rows[-(int(sys.argv[3]) if len(sys.argv) > 3 else 25):]:
    print(" ".join(f"{r[k] / 1e6:7.2f}" if k in r else f"{'-':>7}" for k in keys), r["fifo"], r["gc"])
# medians per segment
for k in keys:
    v = sorted(r[k] for r in rows if k in r)
    if v:
        print(f"{k:>8}: median {v[len(v) // 2] / 1e6:7.3f}  p90 {v[int(len(v) * .9)] / 1e6:7.3f}  max {v[-1] / 1e6:7.3f}")
print("JVM pauses:", [(round((g[1] - g[0]) / 1e6, 1), g[2]) for g in gcs])
print("python gc:", pygc)
print("slow calls (abs):")
for r in rows[-12:]:
    print(f"{r['e']/1e9:.6f} total {r['total']/1e6:.1f} j2p {r.get('j2p',0)/1e6:.1f} p2j {r.get('p2j',0)/1e6:.1f} build {r.get('build',0)/1e6:.1f} wait {r.get('wait',0)/1e6:.1f}")
