"""An app (a YARN application or an MRv1 job): a leaf of the scheduling
tree with the same shape as a queue, its asks (``Request``), the delay rule
it asks where it may run (``TimeDelay``, ``CountDelay``; the locality
levels as YARN's NodeType: a container runs on a host its request names,
node-local, on a rack it names, rack-local, or anywhere, off-switch), and
what the shim refused it."""

from __future__ import annotations

import math
from collections.abc import Iterable

from .node import Container, Node
from ..resources import ZERO, Resource


# ------------------------------------------------------------ locality levels and the delay rule
NODE_LOCAL, RACK_LOCAL, OFF_SWITCH = 0, 1, 2
LEVELS = (NODE_LOCAL, RACK_LOCAL, OFF_SWITCH)
LOCALITY_NAMES = ("node_local", "rack_local", "off_switch")
ANY = "*"


def level_by_wait(lv: int, w: float, t1: float, t2: float) -> int:
    """The level an app at ``lv`` since its last launch may take after
    waiting ``w``: T1 from node-local to rack-local, T2 more to off-switch
    (infinite thresholds leave it at the level it is at). It never falls
    as ``lv`` or ``w`` grow (T1 >= 0)."""
    if lv == NODE_LOCAL:
        return OFF_SWITCH if w >= t1 + t2 else RACK_LOCAL if w >= t1 else NODE_LOCAL
    if lv == RACK_LOCAL:
        return OFF_SWITCH if w >= t2 else RACK_LOCAL
    return OFF_SWITCH


#: The slack the bound below allows a wait summed heartbeat by heartbeat
#: against the same time taken at once (rounding): only ever in the
#: direction that reads the apps.
_SLACK = 1e-6


def offered_by_wait(apps, host: str | None, rack: str | None, t1: float, t2: float, wants=None,
                    now: float = 0.0) -> dict:
    """The delay rule (``TimeDelay.offered_all``) with thresholds ``t1``
    and ``t2``."""
    return TimeDelay(t1, t2).offered_all(apps, host, rack, wants, now)


class TimeDelay:
    """Delay scheduling as the paper has it: an app waits T1 seconds for a
    node-local container, then T2 more for a rack-local one, then runs
    anywhere. The wait counts the time it was passed over since its last
    launch (the engine adds it up between heartbeats)."""

    __slots__ = ("t1", "t2")
    #: It changes nothing as it reads the apps (``withdrawn`` does
    #: nothing): a walk may ask it one app at a time (``nobody``, ``level_of``).
    pure = True
    #: Whether the waits are for an app whose data is on one node, and an
    #: app whose asks name k hosts waits 1/k of them (``TargetDelay``: its
    #: node-local offers come k times as often), or for every app alike.
    per_host = False

    def __init__(self, t1: float, t2: float) -> None:
        self.t1, self.t2 = t1, t2

    def spread(self, app) -> int:
        """How many times its data is spread: the hosts its asks name when
        the waits are per host, else 1 (its waits divide by it)."""
        return max(1, len(app.want_hosts)) if self.per_host else 1

    def level(self, app) -> int:
        """How far from its data ``app`` may run now (read only)."""
        return self.offered_all((app,), None, None)[app.app_id]

    def offered_all(self, apps, host: str | None, rack: str | None, wants=None, now: float = 0.0) -> dict:
        """The delay rule, written once: each app's level by how long it
        has waited since its last launch (``level_by_wait``), for the apps
        with something they may run on a node on ``host`` in ``rack`` at
        that level (any ask once off-switch is allowed, an ask with no
        preference, one naming the host, or one naming the rack once
        rack-local is allowed): app id -> level. ``host`` None: every app.
        One call per queue's apps, as the heartbeat's walk asks it.

        ``wants``, when given, is what the apps asked for together when
        their queue kept them at time ``since`` (``queue.wants_of``:
        (hosts, racks, whether one asks for anywhere, the highest level and
        the longest wait among them, since)), kept only while their asks
        and levels stand. A wait grows by at most the time that has passed
        since (the engine adds the time between heartbeats, once per app),
        so when none asks for the host, and the furthest any may go by
        ``now`` is neither off-switch nor a rack one asks for, nobody may
        run there and the apps are not read one by one."""
        t1, t2, per_host = self.t1, self.t2, self.per_host
        if self.nobody(host, rack, wants, now):
            return {}
        out = {}
        for app in apps:
            w = app.locality_wait * max(1, len(app.want_hosts)) if per_host else app.locality_wait
            level = level_by_wait(app.locality_level, w, t1, t2)
            if (host is None or level == OFF_SWITCH or app.want_anywhere or host in app.want_hosts
                    or (level == RACK_LOCAL and rack in app.want_racks)):
                out[app.app_id] = level
        return out

    def nobody(self, host: str | None, rack: str | None, wants, now: float) -> bool:
        """``offered_all``'s bound: True when ``wants`` shows that none of
        the apps may run on ``host`` in ``rack`` (False: read them)."""
        t1 = self.t1
        if wants is not None and host is not None and t1 >= 0:
            hosts, racks, anywhere, level, waited, since = wants
            if not anywhere and host not in hosts and now >= since:
                k = max(1, len(hosts)) if self.per_host else 1  # no app's data is on more hosts than all of theirs
                furthest = level_by_wait(level, (waited + (now - since)) * k * (1 + _SLACK) + _SLACK, t1, self.t2)
                if furthest == NODE_LOCAL or (furthest == RACK_LOCAL and rack not in racks):
                    return True
        return False

    def level_of(self, app, host: str, rack: str) -> int | None:
        """``offered_all``'s answer for one app (None: not offered)."""
        w = app.locality_wait * max(1, len(app.want_hosts)) if self.per_host else app.locality_wait
        level = level_by_wait(app.locality_level, w, self.t1, self.t2)
        if (level == OFF_SWITCH or app.want_anywhere or host in app.want_hosts
                or (level == RACK_LOCAL and rack in app.want_racks)):
            return level
        return None

    def offered(self, app, host: str, rack: str) -> int | None:
        return self.offered_all((app,), host, rack).get(app.app_id)

    def withdrawn(self, app) -> None:
        """The offer counted by ``offered`` was never made after all."""

    def progress(self, app) -> tuple[float, float, str]:
        """How far ``app`` is towards its next level: (done, needed, unit)."""
        lvl = self.level(app)
        need = self.t1 if lvl == NODE_LOCAL else self.t1 + self.t2 if app.locality_level == NODE_LOCAL else self.t2
        return app.locality_wait, need / self.spread(app), "s"


class CountDelay:
    """YARN's FairScheduler rule: an app moves a level on once it has been
    passed over by more nodes than its threshold (a fraction of the
    cluster's nodes) since its last launch; negative: no wait there."""

    __slots__ = ("node_threshold", "rack_threshold", "nodes")
    pure = False  # reading an app counts a missed opportunity

    def __init__(self, node_threshold: float, rack_threshold: float, nodes) -> None:
        self.node_threshold, self.rack_threshold = node_threshold, rack_threshold
        self.nodes = nodes  # the engine's live node registry: thresholds scale with it

    def level(self, app) -> int:
        return app.locality_level

    def offered_all(self, apps, host: str, rack: str, wants=None, now: float = 0.0) -> dict:
        """Each app counts a missed opportunity (``withdrawn`` undoes it)
        and moves a level on past its threshold; then, at the level it is
        at, as ``TimeDelay.offered_all``."""
        n = len(self.nodes)
        node_after, rack_after = self.node_threshold * n, self.rack_threshold * n
        for app in apps:
            app.touch_wait()
            app.missed_opportunities += 1
            if app.locality_level == NODE_LOCAL and app.missed_opportunities >= node_after:
                app.locality_level = RACK_LOCAL
                app.missed_opportunities = 0
            if app.locality_level == RACK_LOCAL and app.missed_opportunities >= rack_after:
                app.locality_level = OFF_SWITCH
                app.missed_opportunities = 0
        return _STILL.offered_all(apps, host, rack)  # levels just moved: ``wants`` is not read

    def offered(self, app, host: str, rack: str) -> int | None:
        return self.offered_all((app,), host, rack).get(app.app_id)

    def withdrawn(self, app) -> None:
        app.touch_wait()
        app.missed_opportunities -= 1

    def progress(self, app) -> tuple[float, float, str]:
        threshold = self.node_threshold if app.locality_level == NODE_LOCAL else self.rack_threshold
        return app.missed_opportunities, threshold * len(self.nodes), "offers"


#: The time rule that never moves a level on: the count rule's levels as they are.
_STILL = TimeDelay(math.inf, math.inf)


class Anywhere:
    """The delay rule set aside (an offer that waits for no locality, or
    capacity preemption took back for the apps' queue): any level their
    asks allow, and nobody is counted as passed over for locality."""

    __slots__ = ()
    pure = True

    def offered_all(self, apps, host: str, rack: str, wants=None, now: float = 0.0) -> dict:
        return {app.app_id: OFF_SWITCH for app in apps}

    def nobody(self, host: str, rack: str, wants, now: float) -> bool:
        return False

    def level_of(self, app, host: str, rack: str) -> int:
        return OFF_SWITCH

    def offered(self, app, host: str, rack: str) -> int:
        return OFF_SWITCH

    def withdrawn(self, app) -> None:
        pass


ANYWHERE = Anywhere()


def delay_rule(settings, nodes):
    """The one delay-scheduling rule an engine's apps follow, chosen once
    from its settings."""
    if settings.locality_mode == "count":
        return CountDelay(settings.node_locality_threshold, settings.rack_locality_threshold, nodes)
    return TimeDelay(settings.t1, settings.t2)


# ------------------------------------------------------------ an ask
class Request:
    """An app's outstanding containers at one request priority, in YARN's
    shape: a total (``*``) plus counts per host and per rack that prefer them."""

    __slots__ = ("priority", "resource", "num_containers", "hosts", "racks", "relax_locality", "strict_racks")

    def __init__(self, priority: int, resource: Resource, num_containers: int,
                 hosts: dict[str, int] | None = None, racks: dict[str, int] | None = None,
                 relax_locality: bool = True, strict_racks: Iterable[str] = ()) -> None:
        if num_containers < 0:
            raise ValueError("num_containers must be >= 0")
        self.priority = priority
        self.resource = resource
        self.num_containers = num_containers
        self.hosts = dict(hosts or {})
        self.racks = dict(racks or {})
        self.relax_locality = relax_locality
        self.strict_racks = frozenset(strict_racks)

    @property
    def has_locality(self) -> bool:
        return bool(self.hosts) or bool(self.racks)

    def locality_on(self, node: Node) -> int | None:
        """The best level this request can run at on ``node``, or None, by
        YARN's relaxLocality rules as the shim checks them (FifoFallback):
        node-local needs the node's host and rack asked for (a request that
        names no racks at all, the simulator's shorthand, needs the host
        only); rack-local the rack asked for, on a rack whose own ask allows
        relaxing; off-switch a relaxable ANY ask, on such a rack. An AM whose
        rack names differ from the RM's topology gets no node-local
        container, or Java would refuse each one and Python offer it again."""
        rack = node.rack  # allows_on's rule, written out: this runs for every app a heartbeat walks
        if self.hosts.get(node.host, 0) > 0 and (not self.racks or self.racks.get(rack, 0) > 0):
            return NODE_LOCAL
        if rack in self.strict_racks:
            return None
        if self.racks.get(rack, 0) > 0:
            return RACK_LOCAL
        return OFF_SWITCH if self.relax_locality else None

    def allows_on(self, node: Node, level: int) -> bool:
        """Whether one container may go on ``node`` at ``level``
        (locality_on is the best level this allows)."""
        rack = node.rack
        if level == NODE_LOCAL:
            return self.hosts.get(node.host, 0) > 0 and (not self.racks or self.racks.get(rack, 0) > 0)
        if rack in self.strict_racks:
            return False
        if level == RACK_LOCAL:
            return self.racks.get(rack, 0) > 0
        return self.relax_locality

    def take(self, node: Node, level: int) -> None:
        """Count one container as placed, as YARN's AppSchedulingInfo does."""
        self.num_containers -= 1
        if level == NODE_LOCAL:
            dec(self.hosts, node.host)
        if level <= RACK_LOCAL:
            dec(self.racks, node.rack)


def dec(counts: dict[str, int], key: str) -> None:
    n = counts.get(key, 0)
    if n > 1:
        counts[key] = n - 1
    elif key in counts:
        del counts[key]


# ------------------------------------------------------------ the app
#: Seconds a lasting refusal holds even if nothing the shim reports changes:
#: some causes (an app's blacklist, a tracker's free disk) reach Python only
#: as the refusal itself.
REFUSAL_HOLD = 30.0


def _weight(priority: int) -> float:
    """An app's weight in its queue: 2^priority, the exponent held within
    [-64, 64] so any priority YARN sends stays a finite, usable weight."""
    return 2.0 ** max(-64, min(64, priority))


def asks_key(requests) -> tuple:
    """An app's asks as the shim states them, comparable."""
    return tuple(sorted((r.priority, r.num_containers, r.resource.memory_mb, r.resource.vcores,
                         r.resource.map_slots, r.resource.reduce_slots,
                         tuple(sorted(r.hosts.items())), tuple(sorted(r.racks.items())), r.relax_locality,
                         tuple(sorted(r.strict_racks))) for r in requests))


class App:
    """An app: a leaf of the scheduling tree with the same shape as a queue."""

    __slots__ = ("app_id", "name", "app_name", "user", "groups", "queue", "priority", "weight", "start_time",
                 "requests", "containers", "usage", "pending", "demand", "fair_share",
                 "steady_fair_share", "min_share", "max_share", "runnable", "active", "has_am", "unmanaged", "want_hosts", "want_racks",
                 "want_anywhere",
                 "locality_level", "waited", "passed", "joined_at", "missed_opportunities", "delay", "refused", "refused_asks",
                 "refused_until", "kinds", "ran", "preempted", "kept")

    def __init__(self, app_id: str, user: str, priority: int, start_time: float,
                 groups: tuple[str, ...] = ()) -> None:
        self.app_id = app_id
        self.name = app_id  # its name as a schedulable (ties in a policy's order): the id, as YARN's FSAppAttempt.getName()
        self.app_name: str | None = None  # what the user called it (YARN's application name), for the UI
        self.user = user
        self.groups = groups
        self.queue = None  # the leaf Queue, set by the engine
        self.priority = priority
        self.weight = _weight(priority)
        self.start_time = start_time
        self.requests: dict[int, Request] = {}
        # Where the app's outstanding containers would like to run, summed over
        # priorities, so a heartbeat can pass over it without reading requests.
        self.want_hosts: dict[str, int] = {}
        self.want_racks: dict[str, int] = {}
        self.want_anywhere = 0  # containers with no locality preference
        self.containers: dict[str, Container] = {}
        self.usage = ZERO
        self.pending = ZERO
        self.demand = ZERO
        self.fair_share = ZERO
        self.steady_fair_share = ZERO
        self.min_share = ZERO
        self.max_share = Resource(*[float("inf")] * 4)
        self.runnable = False
        self.active = False  # runnable and has outstanding requests
        self.kinds: frozenset = frozenset()  # on a slot cluster: the kinds of slot it asks for now
        self.has_am = False  # its AM container runs (or it has none: unmanaged)
        self.unmanaged = False
        self.locality_level = NODE_LOCAL
        # Its wait (``locality_wait``): its own part, plus what the group the
        # walk passes it over with (``queue.Passed``) gained since it joined.
        self.waited = 0.0
        self.passed = None
        self.joined_at = 0.0
        self.missed_opportunities = 0
        self.delay = None  # the engine's delay-scheduling rule (locality.delay_rule), set when added
        # (node id, level) offers the shim refused for a reason that stays
        # true until the app's asks or the node change: not offered again.
        self.refused: set[tuple[str, int]] = set()
        self.refused_asks: tuple = ()  # the asks they were refused under
        self.refused_until = 0.0  # when they are forgotten anyway
        # Its life so far, for what explain says of it once it has finished.
        self.ran = 0  # containers launched
        self.preempted = 0  # of those, taken back by preemption
        #: What the engine's forks keep of its apps (``fork.Kept``), or None
        #: while it keeps nothing.
        self.kept = None

    # Every write to an app's state goes with one of these three, so the
    # engine's next fork copies again what changed and only that.
    def touch(self) -> None:
        """Anything in it changed: the next fork copies it again."""
        k = self.kept
        if k is not None:
            k.changed.add(self)

    def touch_wait(self) -> None:
        """Only its delay state changed (``fork.WAIT``)."""
        k = self.kept
        if k is not None:
            k.waits_changed.add(self)

    def touch_share(self) -> None:
        """Only what the update pass sets changed: its demand, its fair share."""
        k = self.kept
        if k is not None:
            k.shares_changed.add(self)

    # ------------------------------------------------------- delay scheduling
    @property
    def locality_wait(self) -> float:
        """How long it has been passed over since its last launch."""
        g = self.passed
        return self.waited if g is None else self.waited + (g.acc - self.joined_at)

    @locality_wait.setter
    def locality_wait(self, seconds: float) -> None:
        self.touch_wait()
        self.waited = seconds
        g = self.passed
        if g is not None:
            self.joined_at = g.acc

    def join(self, passed) -> None:
        """From now on it is passed over with ``passed`` (a queue's asking
        apps, credited together: ``queue.Passed``)."""
        self.touch_wait()
        self.waited = self.locality_wait
        self.passed = passed
        self.joined_at = passed.acc

    def allowed_level(self) -> int:
        """How far from its data this app may run now (read only)."""
        return self.delay.level(self)

    def offered(self, host: str, rack: str) -> int | None:
        """A node on ``host`` in ``rack`` is offered to this app: counted
        as passed over (``withdrawn`` undoes it), and the level it may take
        a container there at, or None when it has nothing it may run there."""
        return self.delay.offered(self, host, rack)

    def withdrawn(self) -> None:
        """The node counted by ``offered`` went to an app before this one."""
        self.delay.withdrawn(self)

    def launched(self, level: int, local_ask: bool, now: float, hosts: int = 1) -> None:
        """A container launched at ``level``: the wait starts again, from
        that level when the ask named places (and its queue counts the
        launch, the wait and the ``hosts`` its asks named before it towards
        its data-local fraction)."""
        self.wants_moved()
        if local_ask:
            self.queue.launches.add(now, level, self.locality_wait, self.locality_level, hosts)
            self.locality_level = level
        self.locality_wait = 0.0
        self.missed_opportunities = 0

    def assign(self, walk, allowed: int):
        """The app's first request (by priority) of the kind on offer that
        fits the node's free room at a level its asks, the shim's refusals
        and ``allowed`` (its delay rule's answer) permit, within its
        queues' max shares and AM limit: (app, request, level, is_am), or
        None. Changes nothing."""
        offer, node, free, now = walk.offer, walk.node, walk.free, walk.now
        requests = self.requests
        for prio in sorted(requests):
            req = requests[prio]
            if req.num_containers <= 0 or not offer.fits(req.resource, free):
                continue
            level = req.locality_on(node)
            # A level the shim refused here: the next one this node allows.
            while level is not None and self.refused and self.is_refused(node.node_id, level, now):
                level = next((lv for lv in LEVELS[level + 1:] if req.allows_on(node, lv)), None)
            if level is None or (level > allowed and req.has_locality and req.relax_locality):
                continue
            is_am = not self.has_am and not self.containers
            if not self.queue.fits(req.resource, is_am, walk.cluster):
                continue
            return self, req, level, is_am
        return None

    def set_priority(self, priority: int) -> None:
        self.priority = priority
        self.weight = _weight(priority)
        self.changed()

    def changed(self) -> None:
        """Its usage, asks, runnability or weight changed: its queue adds
        its apps up again on the next update pass (``Queue.update_demand``)."""
        k = self.kept
        if k is not None:
            k.changed.add(self)
        q = self.queue
        if q is not None:
            q.stale = True
            q.apps_moved.add(self)  # its key in a kept order may have moved

    def set_requests(self, requests) -> None:
        self.wants_moved()
        self.changed()
        self.requests = {r.priority: r for r in requests}
        if self.refused and asks_key(self.requests.values()) != self.refused_asks:
            self.refused.clear()  # new asks: what the shim refused may now be allowed
        live = [r for r in self.requests.values() if r.num_containers > 0]
        if len(live) == 1:  # the common case: copy the counts, no summing
            r = live[0]
            n = r.num_containers
            self.pending = r.resource * n
            self.want_hosts = dict(r.hosts)
            self.want_racks = dict(r.racks)
            self.want_anywhere = 0 if r.has_locality else n
            return
        total = ZERO  # whole amounts summed exactly: count x size can pass 2^53
        hosts: dict[str, int] = {}
        racks: dict[str, int] = {}
        anywhere = 0
        for r in self.requests.values():
            n = r.num_containers
            if n <= 0:
                continue
            total = total + r.resource * n
            if not r.has_locality:
                anywhere += n
            for h, k in r.hosts.items():
                hosts[h] = hosts.get(h, 0) + k
            for k_rack, k in r.racks.items():
                racks[k_rack] = racks.get(k_rack, 0) + k
        self.pending = total
        self.want_hosts = hosts
        self.want_racks = racks
        self.want_anywhere = anywhere

    def refuse(self, node_id: str, level: int, now: float) -> None:
        """The shim refused this app ``node_id`` at ``level`` for a reason
        that lasts while its asks do (they are the shim's, just resent), or
        for REFUSAL_HOLD seconds."""
        self.touch()
        if not self.refused:
            self.refused_asks = asks_key(self.requests.values())
            self.refused_until = now + REFUSAL_HOLD
        self.refused.add((node_id, level))

    def is_refused(self, node_id: str, level: int, now: float) -> bool:
        if now >= self.refused_until:
            if self.refused:
                self.touch()
            self.refused.clear()
            return False
        return (node_id, level) in self.refused

    def refresh_asking(self, offers) -> bool:
        """Whether it asks for anything now (``active``) and for which of
        ``offers`` (``kinds``), counted in every queue above; True if either
        changed."""
        active = self.runnable and self.pending.any_positive()
        kinds = frozenset(o.key for o in offers if active and o.asked(self.pending))
        changed = False
        if kinds != self.kinds or active != self.active:
            self.touch()
        if kinds != self.kinds:
            for k in kinds ^ self.kinds:
                d = 1 if k in kinds else -1
                for p in self.queue.ancestors():
                    p.wanting[k] = p.wanting.get(k, 0) + d
            self.kinds = kinds
            changed = True
        if active != self.active:
            self.active = active
            d = 1 if active else -1
            for p in self.queue.ancestors():
                p.active_apps += d
            changed = True
        return changed

    def add(self, c: Container) -> None:
        """A container of this app started."""
        self.containers[c.container_id] = c
        self.usage = self.usage + c.resource
        self.changed()
        self.ran += 1

    def remove(self, c: Container) -> None:
        """A container of this app ended."""
        self.containers.pop(c.container_id, None)
        self.usage = self.usage - c.resource
        self.changed()

    def wants_moved(self) -> None:
        """Where it wants to run, or its level, changed: the queues above
        forget what they kept of their apps' wants (``queue.wants_of``)."""
        q = self.queue
        while q is not None:
            for cached in q.asking_cache.values():
                cached[3] = None
            q = q.parent

    def take(self, req: Request, node: Node, level: int) -> None:
        """One container of ``req`` placed on ``node`` at ``level`` (its
        ``add`` follows, and marks the queue for the update pass)."""
        self.touch()
        self.wants_moved()
        had_locality = req.has_locality
        req.take(node, level)
        self.pending = self.pending - req.resource
        if not had_locality:
            self.want_anywhere -= 1
        elif not req.has_locality and req.num_containers > 0:
            self.want_anywhere += req.num_containers  # preferences used up: the rest may go anywhere
        if level == NODE_LOCAL:
            dec(self.want_hosts, node.host)
        if level <= RACK_LOCAL:
            dec(self.want_racks, node.rack)
