"""Where input blocks live: HDFS's default rack-aware placement."""

from __future__ import annotations

import random


def place_blocks(n_blocks: int, racks: dict[str, list[str]], replication: int,
                 rng: random.Random) -> list[tuple[str, ...]]:
    """Hosts of each block's replicas, as HDFS's default policy places them:
    the first on a node of its own (the writer's), the second on a node of
    another rack, the third on another node of that second rack, any more
    at random; never two replicas on one node."""
    rack_names = sorted(racks)
    hosts = [h for r in rack_names for h in racks[r]]
    rack_of = {h: r for r in rack_names for h in racks[r]}
    k = max(1, min(replication, len(hosts)))
    out = []
    for _ in range(n_blocks):
        first = rng.choice(hosts)
        chosen = [first]
        others = [r for r in rack_names if r != rack_of[first]]
        if k >= 2 and others:
            remote = rng.choice(others)
            hosts = racks[remote]
            second = rng.choice(hosts)
            chosen.append(second)
            if k >= 3 and len(hosts) > 1:
                chosen.append(rng.choice([h for h in hosts if h != second]))
        while len(chosen) < k:
            h = rng.choice(hosts)
            if h not in chosen:
                chosen.append(h)
        out.append(tuple(chosen))
    return out
