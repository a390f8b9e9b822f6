"""Serve's side of the shadow's pipe at bench_engine's scale (1,000 nodes,
1,000 apps, 3,000 heartbeats through a real door): the CPU the feeder's
frames take to pickle per heartbeat, and the start copy's pickle, with
the packing of the 2026-11-30 ninth session (a heartbeat's answer as
tuples, ``Resource.__reduce__``) against the one before it, alternated in
one process.

Run: python benchmarks/bench_shadow_feed.py [--quick]
"""
import os
import pickle
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_engine import build_cluster  # noqa: E402
import shadow_door  # noqa: E402
from slotwise.resources import Resource  # noqa: E402
from slotwise.shadow import Shadow, capture  # noqa: E402
from slotwise.shadow_process import _PAYLOAD_ENC, MAX_BATCH, _packed  # noqa: E402

HEARTBEATS = 3_000


class Tap:
    """Stands where the shadow does at the door: keeps what it is handed."""

    state = "running"

    def __init__(self) -> None:
        self.items: list[tuple] = []

    def offer(self, call, t, msg, answer=None) -> None:
        self.items.append(("input", call, t, msg, answer))

    def input(self, call, t, msg) -> None:
        self.offer(call, t, msg)


def packed_before(item: tuple) -> tuple:
    """The packing before: the message as msgpack, the answer as it is."""
    if item[0] == "input" and type(item[3]).__name__ == "Payload":
        return ("payload", item[1], item[2], _PAYLOAD_ENC.encode(item[3]), item[4])
    return item


def feed_us(items: list, pack) -> float:
    """CPU to pickle every frame the feeder would write, per heartbeat (us)."""
    t0 = time.thread_time()
    for i in range(0, len(items), MAX_BATCH):
        pickle.dumps([pack(x) for x in items[i:i + MAX_BATCH]], protocol=pickle.HIGHEST_PROTOCOL)
    return (time.thread_time() - t0) / HEARTBEATS * 1e6


def start_ms(start) -> tuple[float, int]:
    """CPU to pickle the start's copy (ms), and its size."""
    t0 = time.thread_time()
    data = pickle.dumps(start, protocol=pickle.HIGHEST_PROTOCOL)
    return (time.thread_time() - t0) * 1e3, len(data)


def main() -> None:
    core = shadow_door.door(build_cluster, random.Random(1), 100, 1_000, 1_000)
    tap = core.shadow = Tap()
    shadow_door.Driver(core).run(HEARTBEATS, 0.0)
    core.shadow = None
    print(f"{len(tap.items):,} inputs from {HEARTBEATS:,} heartbeats")
    start = capture(core, Shadow(shadow_door.candidate(core._engine.config, 4.0), threaded=False))
    reduce_now = Resource.__reduce__
    rows: dict[str, list] = {"before": [], "now": []}
    for r in range(2 if "--quick" in sys.argv else 6):
        for side in (("before", "now") if r % 2 == 0 else ("now", "before")):
            if side == "before":
                del Resource.__reduce__  # pickled the default way, through copyreg
                try:
                    rows[side].append((feed_us(tap.items, packed_before), *start_ms(start)))
                finally:
                    Resource.__reduce__ = reduce_now
            else:
                rows[side].append((feed_us(tap.items, _packed), *start_ms(start)))
    for side, got in rows.items():
        print(f"{side}: the feeder's frames {statistics.median(g[0] for g in got):.1f} us per heartbeat, "
              f"the start's copy pickled in {statistics.median(g[1] for g in got):.0f} ms "
              f"({got[0][2] / 2**20:.2f} MiB) (medians of {len(got)}, alternated)")


if __name__ == "__main__":
    main()
