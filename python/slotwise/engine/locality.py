"""Locality levels, as YARN's NodeType: a container runs on a host its
request names (node-local), on a rack it names (rack-local), or anywhere
(off-switch)."""

NODE_LOCAL, RACK_LOCAL, OFF_SWITCH = 0, 1, 2
LEVELS = (NODE_LOCAL, RACK_LOCAL, OFF_SWITCH)
LOCALITY_NAMES = ("node_local", "rack_local", "off_switch")
ANY = "*"


class TimeDelay:
    """Delay scheduling as the paper has it: an app waits T1 seconds for a
    node-local container, then T2 more for a rack-local one, then runs
    anywhere. The wait counts the time it was passed over since its last
    launch (the engine adds it up between heartbeats)."""

    __slots__ = ("t1", "t2")

    def __init__(self, t1: float, t2: float) -> None:
        self.t1, self.t2 = t1, t2

    def level(self, app) -> int:
        """How far from its data ``app`` may run now."""
        w = app.locality_wait
        if app.locality_level == NODE_LOCAL:
            return OFF_SWITCH if w >= self.t1 + self.t2 else RACK_LOCAL if w >= self.t1 else NODE_LOCAL
        if app.locality_level == RACK_LOCAL:
            return OFF_SWITCH if w >= self.t2 else RACK_LOCAL
        return OFF_SWITCH

    def offered(self, app, host: str, rack: str) -> int | None:
        """``app`` is offered a node on ``host`` in ``rack``: the level it
        may take a container there at, or None when it has nothing it may
        run there yet. (The heartbeat's hot path: one call per app walked.)"""
        w = app.locality_wait
        lv = app.locality_level
        if lv == NODE_LOCAL:
            level = OFF_SWITCH if w >= self.t1 + self.t2 else RACK_LOCAL if w >= self.t1 else NODE_LOCAL
        elif lv == RACK_LOCAL:
            level = OFF_SWITCH if w >= self.t2 else RACK_LOCAL
        else:
            level = OFF_SWITCH
        if (level == OFF_SWITCH or app.want_anywhere or host in app.want_hosts
                or (level == RACK_LOCAL and rack in app.want_racks)):
            return level
        return None

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

    def offered(self, app, host: str, rack: str) -> int | None:
        """Counted as a missed opportunity (``withdrawn`` undoes it); the
        level, moved on past a threshold, or None as ``TimeDelay.offered``."""
        app.missed_opportunities += 1
        n = len(self.nodes)
        if app.locality_level == NODE_LOCAL and app.missed_opportunities >= self.node_threshold * n:
            app.locality_level = RACK_LOCAL
            app.missed_opportunities = 0
        if app.locality_level == RACK_LOCAL and app.missed_opportunities >= self.rack_threshold * n:
            app.locality_level = OFF_SWITCH
            app.missed_opportunities = 0
        level = app.locality_level
        if (level == OFF_SWITCH or app.want_anywhere or host in app.want_hosts
                or (level == RACK_LOCAL and rack in app.want_racks)):
            return level
        return None

    def withdrawn(self, app) -> None:
        app.missed_opportunities -= 1

    def progress(self, app) -> tuple[float, float, str]:
        threshold = self.node_threshold if app.locality_level == NODE_LOCAL else self.rack_threshold
        return app.missed_opportunities, threshold * len(self.nodes), "offers"


def delay_rule(settings, nodes):
    """The one delay-scheduling rule an engine's apps follow, chosen once
    from its settings."""
    if settings.locality_mode == "count":
        return CountDelay(settings.node_locality_threshold, settings.rack_locality_threshold, nodes)
    return TimeDelay(settings.t1, settings.t2)
