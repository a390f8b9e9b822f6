"""A discrete-event cluster simulator that plays the shim's part.

The simulator speaks the shim protocol to ``PolicyCore``: each node
heartbeat becomes one heartbeat message carrying the deltas since the last
call (new nodes and apps, requests, launched and finished containers), as
the Java shim sends them, and the answer's assignments become running tasks.
So the engine, the policies and the message handling are the very code that
runs behind a real ResourceManager; only time is simulated (a ManualClock).

An MRv1 cluster's nodes have map and reduce slots, a YARN cluster's memory
and vcores: the same one stream to one PolicyCore of that kind (its
``kind``), with maps and reduces asked for as they differ, by resource.
"""

from __future__ import annotations

import gc
import heapq
import random
from collections import deque
from typing import Callable

from ..clock import ManualClock
from .. import protocol as wire
from ..config.model import AllocationConfig, default_config
from ..core import PolicyCore
from ..engine.decisions import Assignment
from ..eventlog import EventLog
from ..resources import KIND_DIMS
from ..settings import EngineSettings
from .feed import Feed
from .hdfs import place_blocks
from .results import NODE, OFF, RACK, JobRecord, Result, SimSettings, TaskRecord
from .tasks import JobTasks, SimNode, TaskRun
from .workload import JobSpec, Workload, pareto_draw

MAP_PRIORITY, REDUCE_PRIORITY = 20, 10  # MapReduce's request priorities on YARN

# event kinds, in the order they run when they fall on the same instant
_FINISH, _FAIL, _RECOVER, _ARRIVE, _UPDATE, _HEARTBEAT, _SAMPLE, _ACTION = range(8)


class Simulation:
    """One run of a workload under one scheduler configuration."""

    def __init__(self, workload: Workload, settings: EngineSettings | None = None,
                 config: AllocationConfig | None = None, sim: SimSettings | None = None,
                 label: str = "", event_log: EventLog | None = None, record_inputs: bool = False,
                 progress: Callable[[float, int, int], None] | None = None,
                 config_text: str | None = None, services: dict | None = None,
                 on_complete: Callable[["Simulation", JobRecord], None] | None = None,
                 shadow: AllocationConfig | None = None) -> None:
        """``services``: shared with the policies, as ``slotwise serve`` shares
        its market (one dict for both slot kinds).  ``on_complete``: called as
        each job finishes; it may ``submit`` more (a closed-loop stream).
        ``shadow``: a candidate file deciding beside the run's (slotwise.shadow,
        inline: the simulator has no thread to spare); the result's ``shadow``
        says how far it agreed."""
        self.workload = workload
        self.sim = sim or SimSettings()
        self.settings = settings or EngineSettings(heartbeat_interval=self.sim.heartbeat_interval)
        self.config = config or default_config()
        self.clock = ManualClock()
        self.progress = progress
        self.result = Result(label or "run")
        spec = workload.cluster
        log = event_log or EventLog()
        self.slot_mode = self.result.slot_mode = spec.slot_mode
        self.services = {} if services is None else services
        self.on_complete = on_complete
        kind = "mrv1" if self.slot_mode else "yarn"
        #: The cluster's two dimensions: a node's room and a task's size in them.
        self.dims = KIND_DIMS[kind]
        self.feeds = [Feed(PolicyCore(self.config, self.settings, self.clock, log, record_inputs,
                                       log_decisions=event_log is not None, config_text=config_text,
                                       services=self.services, kind=kind), kind, self.clock)]
        self.feed = self.feeds[0]
        self.shadow = None
        if shadow is not None:
            from ..shadow import Shadow

            self.shadow = Shadow(shadow, event_log=log, threaded=False, budget_s=float("inf"))
            self.shadow.attach(self.feed.core)
        rng = random.Random(self.sim.seed)
        self.nodes: dict[str, SimNode] = {}
        self._speculate = self.sim.speculation != "none"
        for host, rack in spec.node_list():
            self.nodes[host] = SimNode(host, host, rack)
        nodes = list(self.nodes.values())
        for n in rng.sample(nodes, round(self.sim.slow_nodes * len(nodes))):
            n.speed = self.sim.slow_factor
        rack_of = self._rack_of = {n.host: n.rack for n in nodes}
        self.jobs: dict[str, JobTasks] = {}
        racks = self._racks = nodes_by_rack(nodes)
        self._rng = rng
        for job in workload.jobs:
            blocks = job.map_hosts if job.map_hosts is not None else place_blocks(
                len(job.maps), racks, self.sim.replication, rng)
            self.jobs[job.job_id] = JobTasks(job, [tuple(b) for b in blocks], rack_of)
        self._events: list = []
        self._seq = 0
        for n in nodes:
            self._push(rng.uniform(0, self.sim.heartbeat_interval), _HEARTBEAT, (n, 0))
        lo, hi = self.sim.failure_window
        for n in rng.sample(nodes, min(self.sim.node_failures, len(nodes))):
            self._push(rng.uniform(lo, hi), _FAIL, n)
        for job in workload.jobs:
            self._push(job.submit, _ARRIVE, self.jobs[job.job_id])
        self._push(0.0, _UPDATE, None)
        self._push(0.0, _SAMPLE, None)
        self.containers: dict[str, TaskRun] = {}
        if self.sim.speculation not in ("none", "late"):
            raise ValueError(f"unknown speculation {self.sim.speculation!r} (known: none, late)")
        self._copy_rng = random.Random(f"copies-{self.sim.seed}")
        self._copies_running = 0
        self._last_spec = -1e18
        self._unfinished = len(self.jobs)
        for n in nodes:
            self._add_node(n)
        # Capacity in the report's unit: slots, or vcores on a YARN cluster.
        self.result.total_slots = sum(n.capacity[0] + n.capacity[1] if self.slot_mode else n.capacity[1]
                                      for n in nodes)
        self._copy_cap = self.sim.speculative_cap * self.result.total_slots

    # ------------------------------------------------- a run's own additions
    def submit(self, spec: JobSpec) -> None:
        """Add a job while the run goes on (it arrives at ``spec.submit``, not
        before now)."""
        if spec.job_id in self.jobs:
            raise ValueError(f"job {spec.job_id} submitted twice")
        blocks = spec.map_hosts if spec.map_hosts is not None else place_blocks(
            len(spec.maps), self._racks, self.sim.replication, self._rng)
        self.jobs[spec.job_id] = job = JobTasks(spec, [tuple(b) for b in blocks], self._rack_of)
        self._unfinished += 1
        self._push(max(spec.submit, self.clock.now()), _ARRIVE, job)

    def at(self, when: float, action: Callable[["Simulation"], None]) -> None:
        """Run ``action(self)`` at simulated time ``when`` (an operator's
        change: a budget reset, a new rate)."""
        self._push(when, _ACTION, action)

    def _on_action(self, action) -> None:
        action(self)

    # ----------------------------------------------------------------- events
    def _push(self, when: float, kind: int, data) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, kind, self._seq, data))

    def run(self) -> Result:
        import time as _time

        t0 = _time.perf_counter()
        until = self.sim.until
        events = self._events
        pop = heapq.heappop
        clock = self.clock
        handlers = {_FINISH: self._on_finish, _FAIL: self._on_fail, _RECOVER: self._on_recover,
                    _ARRIVE: self._on_arrive, _UPDATE: self._on_update, _HEARTBEAT: self._on_heartbeat,
                    _SAMPLE: self._on_sample, _ACTION: self._on_action}
        n = 0
        report_every = 20000
        # The run makes millions of short-lived objects and few cycles; the
        # cyclic collector's passes cost ~a fifth of the time, so it waits.
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            n = self._loop(events, pop, clock, handlers, until, report_every)
        finally:
            if gc_was_on:
                gc.enable()
        r = self.result
        r.end_time = clock.now()
        r.events = n
        r.wall_seconds = _time.perf_counter() - t0
        if self.shadow is not None:
            r.shadow = self.shadow.summary()
        self._report_progress()
        return r

    def _report_progress(self) -> None:
        """(simulated time, jobs finished, jobs so far) to the progress
        callback; jobs submitted while the run goes on count from then."""
        if self.progress:
            total = len(self.jobs)
            self.progress(self.clock.now(), total - self._unfinished, total)

    def _loop(self, events, pop, clock, handlers, until, report_every) -> int:
        n = 0
        while events and self._unfinished:
            when, kind, _, data = pop(events)
            if until is not None and when > until:
                break
            if when > clock._now:
                clock.set(when)
            handlers[kind](data)
            n += 1
            if n % report_every == 0:
                self._report_progress()
        return n

    def _add_node(self, n: SimNode) -> None:
        spec = self.workload.cluster
        if self.slot_mode:
            cap = (int(spec.map_slots), int(spec.reduce_slots))
        else:
            cap = (int(spec.node_resource.memory_mb), int(spec.node_resource.vcores))
        n.capacity = cap
        n.free = list(cap)
        self.feed.node_added(wire.Node(id=n.node_id, host=n.host, rack=n.rack, capacity=self._wire(cap)))

    def _wire(self, size) -> "wire.Resource":
        return wire.Resource(**{self.dims[0]: int(size[0]), self.dims[1]: int(size[1])})

    def _on_arrive(self, job: JobTasks) -> None:
        s = job.spec
        core = self.feeds[0].core
        answer = core.handle_place(wire.PlaceRequest(app=s.job_id, user=s.user, queue=s.queue or "default",
                                                     priority=s.priority))
        if answer.reject is not None:
            self.result.rejected.append(s.job_id)
            self._unfinished -= 1
            return
        job.queue = answer.queue
        self.result.jobs[s.job_id] = JobRecord(s.job_id, job.queue, s.label, s.kind, len(s.maps),
                                               len(s.reduces), self.clock.now())
        feed = self.feed
        feed.apps[s.job_id] = {"id": s.job_id, "user": s.user, "queue": job.queue, "priority": s.priority,
                               "submit_ms": round(self.clock.now() * 1000), "unmanaged": True, "requests": []}
        feed.changed_apps.add(s.job_id)
        self._refresh(job)

    def _refresh(self, job: JobTasks) -> None:
        """Put the job's current requests in the next message: a map and a
        reduce ask, told apart by their resource (a container's size, or a
        map or a reduce slot)."""
        s = job.spec
        if self.slot_mode:
            map_size, reduce_size = _MAP_SLOT, _REDUCE_SLOT
        else:
            map_size, reduce_size = job.map_resource, job.reduce_resource
        self.feed.app_changed(s.job_id)["requests"] = [
            wire.Request(priority=MAP_PRIORITY, resource=map_size,
                         count=len(job.pending_maps) + job.asks["map"], hosts=job.host_count, racks=job.rack_count),
            wire.Request(priority=REDUCE_PRIORITY, resource=reduce_size,
                         count=job.pending_reduces + job.asks["reduce"])]

    def _on_heartbeat(self, beat) -> None:
        node, epoch = beat
        if not node.alive or epoch != node.epoch:
            return
        self.result.heartbeats += 1
        feed = self.feed
        free = node.free
        # A YARN node needs memory and vcores for a container; a TaskTracker
        # a map slot some job asks for, or a reduce slot.
        if self.slot_mode:
            core = feed.core
            room = ((free[0] > 0 and (core.views.has_pending("map_slots") or feed.new_asks(0)))
                    or (free[1] > 0 and (core.views.has_pending("reduce_slots") or feed.new_asks(1))))
        else:
            room = free[0] > 0 and free[1] > 0
        if not feed.may_skip(room):
            self.result.engine_calls += 1
            touched = None
            for a in feed.heartbeat(node.node_id):
                job = self._start(a, node)
                if job is not None:
                    if touched is None:
                        touched = {}
                    touched[job.spec.job_id] = job
            if touched:
                for job in touched.values():
                    self._refresh(job)
        self._push(self.clock.now() + self.sim.heartbeat_interval, _HEARTBEAT, beat)

    def _start(self, a: Assignment, node: SimNode) -> JobTasks | None:
        job = self.jobs.get(a.app_id)
        feed = self.feed
        s = job.spec if job else None
        kind = "map" if a.priority == MAP_PRIORITY else "reduce"
        copy = job is not None and not job.waiting(kind)
        i = self._pick_copy(job, kind) if copy else None
        if job is None or (copy and i is None):
            # Nothing to run after all (the AM would release it): hand it back.
            feed.finished.append(a.container_id)
            return None
        now = self.clock.now()
        if kind == "map":
            if copy:
                level = NODE if node.host in job.blocks[i] else RACK if node.rack in job.block_racks[i] else OFF
                base = self._copy_time(job, kind)
            else:
                i, level = job.take_map(node.host, node.rack)
                base = s.maps[i]
            slow = 1.0 if level == NODE else (self.sim.rack_read_slowdown if level == RACK
                                              else self.sim.off_rack_read_slowdown)
            duration = base * (1.0 + s.io * (slow - 1.0))
            res = s.map_resource
        else:
            if not copy:
                i = job.reduce_queue.popleft()
            level = OFF
            duration = self._copy_time(job, kind) if copy else s.reduces[i]
            res = s.reduce_resource
        duration *= node.speed
        if self.slot_mode:
            size = (1, 0) if kind == "map" else (0, 1)
        else:
            size = (res.memory_mb, res.vcores)
        free = node.free
        free[0] -= size[0]
        free[1] -= size[1]
        cid = a.container_id
        self.containers[cid] = TaskRun(job, kind, i, node, level, now, size, now + duration, copy)
        job.running.setdefault((kind, i), []).append(cid)
        if copy:
            self.result.speculative += 1
            self._copies_running += 1
            job.asks[kind] = max(job.asks[kind] - 1, 0)
        node.running.add(cid)
        feed.launched.append(wire.Container(id=cid, app=a.app_id, node=node.node_id,
                                            resource=self._wire(size),
                                            priority=a.priority, engine_id=cid))
        self._push(now + duration, _FINISH, cid)
        return job

    def _on_finish(self, cid: str) -> None:
        run = self.containers.pop(cid, None)
        if run is None:  # killed earlier (preempted, its node failed, or a copy of its task won)
            return
        job, kind, i, node = run.job, run.kind, run.i, run.node
        now = self.clock.now()
        self._drop(run, cid)
        self.result.tasks.append(TaskRecord(job.spec.job_id, kind, node.host, run.level, run.start, now))
        if run.copy:
            self.result.speculative_won += 1
        for other in job.running.pop((kind, i), ()):  # the first copy wins; the others die
            loser = self.containers.pop(other, None)
            if loser is not None:
                self._drop(loser, other)
                self.result.copies_killed += 1
        job.finished_one(kind, now - run.start)
        if kind == "map":
            job.maps_done += 1
            if job.maps_done == len(job.spec.maps) and job.spec.reduces:
                job.reduce_queue = deque(range(len(job.spec.reduces)))  # reduces start after their maps
                self._refresh(job)
        else:
            job.reduces_done += 1
        if job.done:
            self._complete(job)
        elif self._speculate:
            n = self._asks(job, kind)
            if n != job.asks[kind]:
                job.asks[kind] = n
                self._refresh(job)

    def _drop(self, run: TaskRun, cid: str) -> None:
        """A container's end, whatever the cause: its slot is free and the
        ResourceManager hears it finished."""
        self._release(run.node, run.size, cid)
        self.feed.finished.append(cid)
        if run.copy:
            self._copies_running -= 1

    # ------------------------------------------------------------ speculation
    def _candidates(self, job: JobTasks, kind: str) -> list[tuple[float, int]]:
        """(time left, task) of the running tasks worth a copy: one copy
        running, longer left than a fresh copy should take."""
        typical = job.typical[kind]
        if typical is None:
            return []  # nothing finished yet: no estimate of a task's time
        now = self.clock.now()
        out = []
        containers = self.containers
        for (k, i), cids in job.running.items():
            if k != kind or len(cids) != 1:
                continue
            left = containers[cids[0]].end - now  # LATE's progress-rate estimate, exact here
            if left > typical:
                out.append((left, i))
        return out

    def _asks(self, job: JobTasks, kind: str) -> int:
        if job.waiting(kind) or not job.running:
            return 0
        room = int(self._copy_cap - self._copies_running)
        if room <= 0:
            return 0
        return min(len(self._candidates(job, kind)), room)

    def _pick_copy(self, job: JobTasks, kind: str) -> int | None:
        if not self._speculate or self._copies_running + 1 > self._copy_cap:
            return None
        cands = self._candidates(job, kind)
        return max(cands)[1] if cands else None

    def _copy_time(self, job: JobTasks, kind: str) -> float:
        """A fresh copy's time at normal speed and local read: a new draw from
        the job's Pareto tail if it has one, else one of its own tasks' times."""
        s = job.spec
        if s.tail is not None and kind == "map":
            return pareto_draw(self._copy_rng, *s.tail)
        return self._copy_rng.choice(s.maps if kind == "map" else s.reduces)

    def _refresh_speculation(self) -> None:
        """Time passes and tasks' times left shrink: jobs ask again."""
        for job in {r.job for r in self.containers.values()}:
            for kind in ("map", "reduce"):
                n = self._asks(job, kind)
                if n != job.asks[kind]:
                    job.asks[kind] = n
                    self._refresh(job)

    def _release(self, node: SimNode, size, cid: str) -> None:
        free = node.free
        free[0] += size[0]
        free[1] += size[1]
        node.running.discard(cid)

    def _complete(self, job: JobTasks) -> None:
        app_id = job.spec.job_id
        self.result.jobs[app_id].finish = self.clock.now()
        for feed in self.feeds:
            feed.apps.pop(app_id, None)
            feed.changed_apps.discard(app_id)
            feed.apps_removed.append(app_id)
        self._unfinished -= 1
        if self.on_complete is not None:
            self.on_complete(self, self.result.jobs[app_id])

    def _kill(self, cid: str) -> None:
        """A container lost (preempted or with its node): its task runs again
        later unless another copy of it still runs."""
        run = self.containers.pop(cid, None)
        if run is None:
            return
        job, kind, i = run.job, run.kind, run.i
        self._drop(run, cid)
        self.result.failed_tasks += 1
        copies = job.running.get((kind, i), [])
        if cid in copies:
            copies.remove(cid)
        if copies:
            return
        job.running.pop((kind, i), None)
        if kind == "map":
            job.requeue_map(i)
        else:
            job.reduce_queue.appendleft(i)
        if not job.done:
            self._refresh(job)

    def _on_update(self, _=None, sampling: bool = False) -> None:
        """The shim's periodic update call.  When no decision reads its
        results (Engine.decisions_need_update), it is only made when the
        report samples the shares, which changes no decision and saves most
        of the simulator's time on busy clusters."""
        if self._speculate and not sampling and self.clock.now() - self._last_spec >= self.sim.heartbeat_interval:
            self._last_spec = self.clock.now()
            self._refresh_speculation()
        for feed in self.feeds:
            if not (feed.changed or feed.has_deltas() or feed.core.views.acts_on_update()):
                continue
            if not sampling and not feed.core.views.decisions_need_update():
                continue
            self._flush(feed)
        if not sampling:
            self._push(self.clock.now() + self.settings.update_interval, _UPDATE, None)

    def _on_fail(self, node: SimNode) -> None:
        node.alive = False
        for cid in list(node.running):
            self._kill(cid)  # lost containers finish, as the RM reports them
        for feed in self.feeds:
            feed.nodes_removed.append(node.node_id)
        if self.sim.repair_time is not None:
            self._push(self.clock.now() + self.sim.repair_time, _RECOVER, node)

    def _on_recover(self, node: SimNode) -> None:
        node.alive = True
        node.epoch += 1
        self._add_node(node)
        self._push(self.clock.now() + self.sim.heartbeat_interval, _HEARTBEAT, (node, node.epoch))

    def _flush(self, feed: Feed) -> None:
        """Send the buffered deltas now, with the shim's periodic call."""
        for p in feed.update().preempt:
            if p.kill:
                self.result.preempted += 1
                self._kill(p.container_id)

    def _on_sample(self, _) -> None:
        now = self.clock.now()
        self._on_update(sampling=True)
        queues: dict[str, list[float]] = {}
        busy = 0.0
        # Shares in memory (the one resource both rules share: YARN's fair
        # policy leaves vcores at 0), or in map slots.
        first = self.dims[0]
        for run in self.containers.values():
            busy += run.size[0] + run.size[1] if self.slot_mode else run.size[1]
            if run.size[0]:
                row = queues.setdefault(run.job.queue, [0.0, 0.0])
                row[0] += run.size[0]
        for name, share in self.feed.core.views.leaf_fair_shares().items():
            row = queues.setdefault(name, [0.0, 0.0])
            row[1] = share.get(first)
        self.result.samples.append((now, {k: (v[0], v[1]) for k, v in queues.items()}, busy))
        self._push(now + self.sim.sample_interval, _SAMPLE, None)


_MAP_SLOT = wire.Resource(map_slots=1)
_REDUCE_SLOT = wire.Resource(reduce_slots=1)


def nodes_by_rack(nodes) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for n in nodes:
        out.setdefault(n.rack, []).append(n.host)
    return out
