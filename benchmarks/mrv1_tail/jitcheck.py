"""The JobTracker's JIT compilations (gc-slotwise.log with jit+compilation=debug, tn
decorations) that fall inside heartbeat calls over 10 ms: usage: jitcheck.py OUT."""
import re, sys, bisect, collections
d = sys.argv[1]
jt = [l.split() for l in open(f"{d}/slotwise-jtrace.txt") if l.startswith("hb")]
comp = []
for l in open(f"{d}/gc-slotwise.log"):
    m = re.match(r"\[(\d+)ns\]\[(\d+)\]\s+\d+\s+\S*\s*\d\s+(\S+)", l)
    if m:
        comp.append((int(m.group(1)), m.group(3)))
comp.sort()
print("compilations in the log:", len(comp))
calls = sorted(((int(x[6]) - int(x[1])), int(x[1]), int(x[6])) for x in jt)
start = min(c[1] for c in calls)
print("compilations after the first heartbeat:", sum(1 for t, _ in comp if t > start))
slow = [c for c in calls if c[0] > 10e6]
fast = [c for c in calls if c[0] <= 10e6]
def n_in(c):
    i = bisect.bisect_left(comp, (c[1],)); j = bisect.bisect_right(comp, (c[2], "~"))
    return comp[i:j]
pkg = collections.Counter()
for c in slow:
    got = n_in(c)
    for _, m in got:
        pkg[".".join(m.split("::")[0].split(".")[:3])] += 1
    print(f"{c[0]/1e6:6.1f} ms: {len(got)} compilations")
print("slow calls:", len(slow), "with any compilation:", sum(1 for c in slow if n_in(c)))
print("fast calls:", len(fast), "with any compilation:", sum(1 for c in fast if n_in(c)))
print(pkg.most_common(15))
allm = collections.Counter()
for c in slow:
    for _, m in n_in(c):
        allm[m] += 1
print("\n".join(f"{v} {k}" for k, v in allm.most_common(60)))
# how compilations spread over the run (per 10 s after first heartbeat)
b = collections.Counter((t - start) // 10_000_000_000 for t, _ in comp if t > start)
print(sorted(b.items()))
