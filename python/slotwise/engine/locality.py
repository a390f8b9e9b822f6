"""Locality levels, as YARN's NodeType: a container runs on a host its
request names (node-local), on a rack it names (rack-local), or anywhere
(off-switch)."""

import math

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

    def __init__(self, t1: float, t2: float) -> None:
        self.t1, self.t2 = t1, t2

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
        t1, t2 = self.t1, self.t2
        if wants is not None and host is not None and t1 >= 0:
            hosts, racks, anywhere, level, waited, since = wants
            if not anywhere and host not in hosts and now >= since:
                furthest = level_by_wait(level, (waited + (now - since)) * (1 + _SLACK) + _SLACK, t1, t2)
                if furthest == NODE_LOCAL or (furthest == RACK_LOCAL and rack not in racks):
                    return {}
        out = {}
        for app in apps:
            level = level_by_wait(app.locality_level, app.locality_wait, t1, t2)
            if (host is None or level == OFF_SWITCH or app.want_anywhere or host in app.want_hosts
                    or (level == RACK_LOCAL and rack in app.want_racks)):
                out[app.app_id] = level
        return out

    def offered(self, app, host: str, rack: str) -> int | None:
        return self.offered_all((app,), host, rack).get(app.app_id)

    def withdrawn(self, app) -> None:
        """The offer counted by ``offered`` was never made after all."""

    def progress(self, app) -> tuple[float, float, str]:
        """How far ``app`` is towards its next level: (done, needed, unit)."""
        lvl = self.level(app)
        need = self.t1 if lvl == NODE_LOCAL else self.t1 + self.t2 if app.locality_level == NODE_LOCAL else self.t2
        return app.locality_wait, need, "s"


class CountDelay:
    """YARN's FairScheduler rule: an app moves a level on once it has been
    passed over by more nodes than its threshold (a fraction of the
    cluster's nodes) since its last launch; negative: no wait there."""

    __slots__ = ("node_threshold", "rack_threshold", "nodes")

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

    def offered_all(self, apps, host: str, rack: str, wants=None, now: float = 0.0) -> dict:
        return {app.app_id: OFF_SWITCH for app in apps}

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
