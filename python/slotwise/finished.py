"""A bounded record of the apps that have left the scheduler, so ``explain``
of a finished app tells its outcome instead of "unknown app"."""

from __future__ import annotations

import collections
import time

#: Finished apps remembered, oldest forgotten first.
KEEP = 1000

#: How an app left, in words (the master: the ResourceManager or the JobTracker).
HOW = {"removed": "the {master} removed it", "resync": "the {master} no longer had it at a resync"}


class FinishedApps:
    """The last ``limit`` apps that left, by id (an id seen again replaces
    its older record)."""

    def __init__(self, limit: int = KEEP) -> None:
        self.limit = limit
        self._apps: collections.OrderedDict[str, dict] = collections.OrderedDict()

    def record(self, app, now: float, wall: float, how: str, dims, master: str = "ResourceManager",
               final_state: str | None = None) -> None:
        """``app`` (an engine App) is leaving now (engine clock ``now``, Unix
        time ``wall``) as ``master`` said (``how``: removed or resync);
        ``final_state``: as the master reported it, if it did."""
        pending = sum(r.num_containers for r in app.requests.values() if r.num_containers > 0)
        self._apps.pop(app.app_id, None)
        self._apps[app.app_id] = {
            "id": app.app_id, "name": app.app_name, "user": app.user, "queue": app.queue.name,
            "priority": app.priority, "t_submitted": app.start_time, "t_finished": now, "finished": wall,
            "final_state": final_state, "how": how, "master": master, "containers_ran": app.ran,
            "containers_preempted": app.preempted, "running_at_end": len(app.containers),
            "pending_at_end": pending, "usage_at_end": app.usage.to_dict(dims),
        }
        while len(self._apps) > self.limit:
            self._apps.popitem(last=False)

    def get(self, app_id: str) -> dict | None:
        return self._apps.get(app_id)

    def __len__(self) -> int:
        return len(self._apps)


def outcome(rec: dict, now: float) -> dict:
    """A finished app's record with its outcome in words, for explain:
    ``finished`` a Unix time, ``finished_s_ago`` and ``ran_for_s`` by the
    engine's clock (at ``now``)."""
    ago = max(0.0, now - rec["t_finished"])
    ran = max(0.0, rec["t_finished"] - rec["t_submitted"])
    state = f"finished {rec['final_state']}" if rec["final_state"] else "finished"
    at = time.strftime("%H:%M:%S", time.localtime(rec["finished"]))
    words = [f"{state} at {at} ({ago:.0f} s ago) in {rec['queue']} after {ran:.0f} s",
             f"it ran {rec['containers_ran']} container(s)"
             + (f", {rec['containers_preempted']} of them taken back by preemption"
                if rec["containers_preempted"] else "")]
    left = [f"held {rec['running_at_end']} container(s)" if rec["running_at_end"] else "",
            f"asked for {rec['pending_at_end']} more" if rec["pending_at_end"] else ""]
    if any(left):
        words.append("when it left it still " + " and ".join(x for x in left if x))
    words.append(HOW[rec["how"]].format(master=rec["master"])
                 + ("" if rec["final_state"] else " without saying how it ended"))
    public = {k: v for k, v in rec.items() if not k.startswith("t_")}
    return {**public, "finished_s_ago": ago, "ran_for_s": ran, "message": "; ".join(words)}
