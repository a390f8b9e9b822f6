"""SlotCore: the one door for an MRv1 JobTracker (map and reduce slots).

As in the Fair Scheduler design, maps and reduces are shared separately: one
PolicyCore per slot kind, each on the allocation file's view for that kind
(minMaps/maxMaps, minReduces/maxReduces).  The shim speaks the same protocol
as the YARN shim with slots as the resource (``map_slots``, ``reduce_slots``);
this splits each message by kind, lets each core decide, and joins the
answers.  The read views join the two kinds into one row per pool or job,
with resources as ``{"map_slots": m, "reduce_slots": r}``.
"""

from __future__ import annotations

import collections
import threading

from . import protocol as wire
from .config.model import AllocationConfig
from .core import PolicyCore, TableDiff
from .protocol import ProtocolError

KINDS = ("map", "reduce")
#: The resource field of each kind, on the wire and in the joined rows.
FIELD = {"map": "map_slots", "reduce": "reduce_slots"}
RESOURCE_KEYS = ("min_share", "max_share", "demand", "usage", "fair_share", "steady_fair_share")


def _slots(n) -> "wire.Resource":
    """n slots as one engine counts them (a slot is Resource(1, 1))."""
    return wire.Resource(memory_mb=n, vcores=n)


def _kind_of(resource) -> str | None:
    if resource.map_slots and not resource.reduce_slots:
        return "map"
    if resource.reduce_slots and not resource.map_slots:
        return "reduce"
    return None


class SlotCore:
    """PolicyCore's surface for a slot cluster: JSON calls from the bridge,
    typed calls, runtime admin and read views."""

    kind = "mrv1"

    def __init__(self, config: AllocationConfig, settings=None, clock=None, event_log=None,
                 record_inputs: bool = False, log_decisions: bool = True, stats=None,
                 config_text: str | None = None, services: dict | None = None) -> None:
        self.config = config
        #: One for both kinds: a queue pays one budget for its maps and reduces.
        self.services = {} if services is None else services
        self.cores = {k: PolicyCore(config.slot_view(k), settings, clock, event_log, record_inputs=record_inputs,
                                    log_decisions=log_decisions, stream=k, config_text=config_text,
                                    container_tag=k[0], services=self.services)
                      for k in KINDS}
        self.settings = self.cores["map"].settings
        self.log = self.cores["map"].log
        self._lock = threading.RLock()  # one message is split and applied as one
        self._table = TableDiff()
        self.stats = stats

    def set_preemption(self, on: bool) -> None:
        with self._lock:
            for c in self.cores.values():
                c.set_preemption(on)
            self.settings = self.cores["map"].settings

    @property
    def stats(self):
        return self.cores["map"].stats

    @stats.setter
    def stats(self, value) -> None:
        self.cores["map"].stats = value  # one heartbeat counts once

    @property
    def counters(self) -> collections.Counter:
        out = collections.Counter()
        for c in self.cores.values():
            out.update(c.counters)
        return out

    @property
    def refusals(self) -> collections.Counter:
        out = collections.Counter()
        for c in self.cores.values():
            out.update(c.refusals)
        return out

    # ------------------------------------------------ the protocol, as JSON
    def heartbeat(self, text: str) -> str:
        try:
            msg = wire.decode("Payload", text)
            parts = self._split(msg)
            with self._lock:
                self._refuse_if_inconsistent(parts)
                assigned = []
                for k in KINDS:
                    assigned += self.cores[k].handle_heartbeat(parts[k], checked=True)
        except ProtocolError as e:
            return wire.encode(wire.HeartbeatAnswer(error=str(e)))
        except Exception:
            return wire.encode(wire.HeartbeatAnswer(error=self.cores["map"]._internal_error("heartbeat")))
        return wire.encode(wire.HeartbeatAnswer(assign=[
            wire.Assignment(app=a.app_id, node=a.node_id, priority=a.priority, locality=a.locality,
                            engine_id=a.container_id) for a in assigned]))

    def update(self, text: str) -> str:
        with self._lock:
            try:
                msg = wire.decode("Payload", text)
                parts = self._split(msg)
                self._refuse_if_inconsistent(parts)
                results = {k: self.cores[k].handle_update(parts[k], checked=True) for k in KINDS}
            except ProtocolError as e:
                return wire.encode(wire.UpdateAnswer(error=str(e)))
            except Exception:
                return wire.encode(wire.UpdateAnswer(error=self.cores["map"]._internal_error("update")))
            resynced = [self.cores[k].take_resynced() for k in KINDS]
            table = self._table.answer(self._queue_table(), any(resynced))
        return wire.encode(wire.UpdateAnswer(
            preempt=[wire.Preemption(container=p.container_id, kill=p.kill)
                     for k in KINDS for p in results[k].preempt],
            resync=any(r.resync for r in results.values()), **table))

    def place(self, text: str) -> str:
        return self.cores["map"].place(text)

    def move(self, text: str) -> str:
        return wire.encode(wire.MoveAnswer(error="an MRv1 job stays in the pool it was submitted to"))

    # ------------------------------------------------------------ splitting
    def _split(self, msg) -> dict:
        """One Payload per kind; raises ProtocolError if a resource is not
        exactly one kind of slot.  Finished containers and rejected
        assignments go to the core that holds them."""
        nodes = {k: [] for k in KINDS}
        for n in msg.nodes:
            for k in KINDS:
                nodes[k].append(wire.Node(id=n.id, host=n.host, rack=n.rack,
                                          capacity=_slots(getattr(n.capacity, FIELD[k]))))
        apps = {k: [] for k in KINDS}
        for i, a in enumerate(msg.apps):
            reqs = {k: [] for k in KINDS}
            for j, r in enumerate(a.requests):
                k = _kind_of(r.resource)
                if k is None:
                    raise ProtocolError(f"Payload: apps[{i}].requests[{j}]: a request is for map slots "
                                        "or for reduce slots")
                reqs[k].append(wire.Request(priority=r.priority, resource=_slots(getattr(r.resource, FIELD[k])),
                                            count=r.count, hosts=r.hosts, racks=r.racks,
                                            relax_locality=r.relax_locality, strict_racks=r.strict_racks))
            for k in KINDS:
                apps[k].append(wire.App(id=a.id, user=a.user, name=a.name, queue=a.queue, priority=a.priority,
                                        submit_ms=a.submit_ms, unmanaged=True, requests=reqs[k]))
        launched = {k: [] for k in KINDS}
        for i, c in enumerate(msg.launched):
            k = _kind_of(c.resource)
            if k is None:
                raise ProtocolError(f"Payload: launched[{i}]: a task holds one map or one reduce slot")
            launched[k].append(wire.Container(id=c.id, app=c.app, node=c.node,
                                              resource=_slots(getattr(c.resource, FIELD[k])),
                                              am=False, priority=c.priority, engine_id=c.engine_id))
        beats = {k: [] for k in KINDS}
        for b in msg.beats:
            for k in KINDS:
                beats[k].append(wire.Beat(node=b.node, free=None if b.free is None
                                          else _slots(getattr(b.free, FIELD[k]))))
        finished = {k: [] for k in KINDS}
        for cid in msg.finished:
            finished[self._holder(cid)].append(cid)
        rejected = {k: [] for k in KINDS}
        for r in msg.rejected:
            rejected[self._holder(r.engine_id)].append(r)
        return {k: wire.Payload(full=msg.full, now_ms=msg.now_ms, nodes=nodes[k], nodes_removed=msg.nodes_removed,
                                apps=apps[k], apps_removed=msg.apps_removed, launched=launched[k],
                                rejected=rejected[k], finished=finished[k], beats=beats[k],
                                fallbacks=msg.fallbacks if k == "map" else [], check=None)
                for k in KINDS}

    def _refuse_if_inconsistent(self, parts: dict) -> None:
        """Both halves are checked before either is applied: a message is
        applied whole or not at all, never its map half alone."""
        for k in KINDS:
            self.cores[k].refuse_if_inconsistent(parts[k])

    def _holder(self, container_id: str) -> str:
        return "reduce" if self.cores["reduce"].holds_container(container_id) else "map"

    # ----------------------------------------------------- runtime admin
    def set_config(self, config: AllocationConfig, text: str | None = None) -> None:
        with self._lock:
            views = {k: config.slot_view(k) for k in KINDS}
            problems = []
            for k in KINDS:
                problems += self.cores[k].config_conflicts(views[k])
            if problems:
                raise ValueError("\n".join(dict.fromkeys(problems)))
            for k in KINDS:
                self.cores[k].set_config(views[k], text)
            self.config = config

    def config_failed(self, errors: list[str]) -> None:
        self.cores["map"].config_failed(errors)

    def admin_move(self, app_id: str, pool: str) -> str:
        raise ValueError("an MRv1 job stays in the pool it was submitted to (the JobTracker has no move)")

    def move_target_problem(self, pool: str) -> str | None:
        return "the JobTracker cannot move jobs between pools"

    def admin_priority(self, app_id: str, priority: int) -> None:
        with self._lock:
            for c in self.cores.values():
                c.admin_priority(app_id, priority)

    # -------------------------------------------------------- read views
    def pools(self) -> list[dict]:
        with self._lock:
            rows = {k: self.cores[k].pools() for k in KINDS}
        reduce_rows = {r["pool"]: r for r in rows["reduce"]}
        out = []
        for m in rows["map"]:
            r = reduce_rows.get(m["pool"], m)
            row = dict(m)
            for key in RESOURCE_KEYS:
                row[key] = {"map_slots": m[key]["memory_mb"], "reduce_slots": r[key]["memory_mb"]}
            for key in ("min_share_starved_for", "fair_share_starved_for"):
                row[key] = max(m[key], r[key])
            for key in ("below_min_share", "below_fair_share"):
                row[key] = m[key] or r[key]
            out.append(row)
        return out

    def jobs(self) -> list[dict]:
        with self._lock:
            rows = {k: self.cores[k].jobs() for k in KINDS}
        reduce_rows = {r["id"]: r for r in rows["reduce"]}
        out = []
        for m in rows["map"]:
            r = reduce_rows.get(m["id"], m)
            row = dict(m)
            for key in ("usage", "demand", "fair_share"):
                row[key] = {"map_slots": m[key]["memory_mb"], "reduce_slots": r[key]["memory_mb"]}
            row["running_containers"] = m["running_containers"] + (r["running_containers"] if r is not m else 0)
            out.append(row)
        return out

    def job_pool(self, app_id: str) -> str | None:
        return self.cores["map"].job_pool(app_id)

    def leaf_pools(self) -> list[str]:
        return self.cores["map"].leaf_pools()

    def explain(self, app_id: str) -> dict | None:
        with self._lock:
            out = {k: self.cores[k].explain(app_id) for k in KINDS}
        if out["map"] is None:
            return None
        joined = dict(out["map"])
        joined["holds"] = [{**h, "message": f"maps: {h['message']}"} for h in out["map"]["holds"]] + \
            [{**h, "message": f"reduces: {h['message']}"} for h in (out["reduce"] or {}).get("holds", [])]
        joined["reduce"] = out["reduce"]
        return joined

    def dry_run(self, config: AllocationConfig) -> dict:
        runs = {k: self.cores[k].dry_run(config.slot_view(k)) for k in KINDS}
        reduce_rows = {r["pool"]: r for r in runs["reduce"]["pools"]}
        pools = []
        for m in runs["map"]["pools"]:
            r = reduce_rows.get(m["pool"], m)
            row = dict(m)
            for key in ("fair_share", "steady_fair_share", "min_share", "max_share"):
                for when in ("before", "after"):
                    f = f"{key}_{when}"
                    row[f] = None if m[f] is None else {"map_slots": m[f]["memory_mb"],
                                                        "reduce_slots": (r[f] or {}).get("memory_mb", 0)}
            pools.append(row)
        out = dict(runs["map"])
        out["pools"] = pools
        out["conflicts"] = list(dict.fromkeys(runs["map"]["conflicts"] + runs["reduce"]["conflicts"]))
        out["newly_preemptable"] = runs["map"]["newly_preemptable"] + runs["reduce"]["newly_preemptable"]
        return out

    def cluster(self) -> dict:
        with self._lock:
            views = {k: self.cores[k].cluster() for k in KINDS}
        m, r = views["map"], views["reduce"]
        return {"capacity": {"map_slots": m["capacity"]["memory_mb"], "reduce_slots": r["capacity"]["memory_mb"]},
                "nodes": m["nodes"],
                "usage": {"map_slots": m["usage"]["memory_mb"], "reduce_slots": r["usage"]["memory_mb"]},
                "share_rule": m["share_rule"]}

    def recent_preemptions(self) -> list[dict]:
        rows = self.cores["map"].recent_preemptions() + self.cores["reduce"].recent_preemptions()
        return sorted(rows, key=lambda p: -p["time"])

    def running_by_pool(self) -> dict[str, int]:
        out: dict[str, int] = collections.Counter()
        for c in self.cores.values():
            out.update(c.running_by_pool())
        return dict(out)

    def share_rule(self) -> str:
        return self.cores["map"].share_rule()

    def _queue_table(self) -> list:
        tables = {k: self.cores[k].queue_table() for k in KINDS}
        reduce_rows = {r.name: r for r in tables["reduce"]}
        out = []
        for m in tables["map"]:
            r = reduce_rows.get(m.name, m)

            def join(a, b):
                return None if a is None else wire.Amount(map_slots=a.memory_mb,
                                                          reduce_slots=0 if b is None else b.memory_mb)
            out.append(wire.QueueRow(
                name=m.name, parent=m.parent, weight=m.weight, min=join(m.min, r.min), max=join(m.max, r.max),
                fair=join(m.fair, r.fair), steady=join(m.steady, r.steady), usage=join(m.usage, r.usage),
                demand=join(m.demand, r.demand), running_apps=m.running_apps, apps=m.apps,
                max_running_apps=m.max_running_apps, recovery=m.recovery, policy=m.policy,
                am_max=None, preemptable=m.preemptable, is_parent=m.is_parent))
        return out
