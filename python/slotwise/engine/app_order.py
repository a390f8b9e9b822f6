"""A leaf's walk over its apps, cheaper, for a keyed policy and a delay
rule that changes nothing as it reads (``TimeDelay``, ``TargetDelay``,
``Anywhere``: ``pure``): the apps' order kept between heartbeats, and each
app's level read only when the walk reaches it. Reading fewer apps then
decides exactly as ``Queue.assign_apps``'s full walk does
(tests/test_forward_cost.py compares the two)."""

from __future__ import annotations

import bisect


def walk_kept(queue, walk, rule, cached: list, wants: tuple):
    """The app ``queue`` (a leaf) gives the node ``walk`` offers, or None."""
    node = walk.node
    host, rack = node.host, node.rack
    if rule.nobody(host, rack, wants, walk.now):
        return None
    order = kept_app_order(queue, walk.offer, cached)
    level_of = rule.level_of
    for i, app in enumerate(order):
        level = level_of(app, host, rack)
        if level is None:
            continue
        pick = app.assign(walk, level)
        if pick is not None:
            walk.skipped.take_back(order[i + 1:])  # never offered this node after all
            return pick
    return None


def rekey(ks: list, order: list, at: dict, moved, key) -> None:
    """A kept sorted order (``ks``: (key, tie) pairs, ``order``: the items
    in that order, ``at``: item -> its pair) with the items of ``moved``
    placed again by their new ``key(item)``, ties kept; an item not in it
    is passed by. Parents keep their children so too (``Queue.kept_order``)."""
    for item in moved:
        old = at.get(item)
        if old is None:
            continue
        j = bisect.bisect_left(ks, old)
        del ks[j], order[j]
        new = at[item] = (key(item), old[1])
        j = bisect.bisect_left(ks, new)
        ks.insert(j, new)
        order.insert(j, item)


def kept_app_order(queue, offer, cached: list) -> list:
    """A keyed policy's order of a leaf's asking apps (``cached``: the
    ``asking_cache`` entry they are from), as ``policy.order`` sorts
    them (one key per app, ties in submit order), kept while the apps
    asking stay the same: only those whose key may have moved
    (``apps_moved``) are placed again, as ``kept_order`` does for
    queues. The update pass (demand) forgets it (``forget_order``)."""
    policy = queue.policy
    if queue.apps_moved:
        for _, of, ks, order, at in queue.app_order.values():
            rekey(ks, order, at, queue.apps_moved, lambda a, of=of: of.key_of(policy, a))
        queue.apps_moved.clear()
    entry = queue.app_order.get(offer.key)
    if entry is not None and entry[0] is not cached and entry[0][1] == cached[1]:
        # kept again after the engine's order version moved, the same
        # apps asking here: the same order (ties by their place in it)
        entry = queue.app_order[offer.key] = (cached, *entry[1:])
    if entry is None or entry[0] is not cached:
        apps = cached[1]
        ks = sorted((offer.key_of(policy, a), i) for i, a in enumerate(apps))
        entry = queue.app_order[offer.key] = (cached, offer, ks, [apps[i] for _, i in ks],
                                             {apps[i]: (k, i) for k, i in ks})
    return entry[3]
