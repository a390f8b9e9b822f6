"""Python's collections in trace.py's runs, and whether any fell inside a heartbeat
call: usage: pygc.py OUT..."""
import sys
for d in sys.argv[1:]:
    jt = [l.split() for l in open(f"{d}/slotwise-jtrace.txt") if l.startswith("hb")]
    g = [l.split() for l in open(f"{d}/slotwise-pygc.txt")]
    spans = []
    st = {}
    for ph, gen, t, tid in g:
        if ph == "start": st[tid] = (int(t), gen)
        elif tid in st: a, gen0 = st.pop(tid); spans.append((a, int(t), gen0))
    first = min(int(x[1]) for x in jt)
    inrun = [s for s in spans if s[0] > first]
    hit = [s for s in spans if any(int(x[1]) <= s[1] and int(x[6]) >= s[0] for x in jt)]
    print(d, "collections:", len(spans), "after the first heartbeat:", len(inrun), "gens", sorted({s[2] for s in spans}),
          "max ms %.2f" % (max((s[1]-s[0]) for s in spans)/1e6 if spans else 0), "during a heartbeat:", len(hit))
