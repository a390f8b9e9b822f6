"""Prometheus metrics for ``slotwise serve``.

PolicyCore reports each call here (``on_heartbeat``, fallback episodes,
resyncs, divergences); the queues' shares and the link's state are read at
scrape time, so a scrape always sees the state of the moment and costs
nothing between scrapes.
"""

from __future__ import annotations

import collections
import threading
import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

#: Heartbeat handling time buckets, seconds: 50 us to 100 ms.
BUCKETS = (5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1)
RATE_WINDOW = 10.0  # seconds behind slotwise_decisions_per_second


class Metrics:
    def __init__(self, core_ref=None, status_ref=None, clock=time.monotonic, link_ref=None,
                 shadow_ref=None) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter("slotwise_decisions", "Containers assigned by the policy",
                                 registry=self.registry)
        self.heartbeats = Histogram("slotwise_heartbeat_seconds",
                                    "Time to handle one heartbeat call in Python",
                                    buckets=BUCKETS, registry=self.registry)
        self.fallbacks = Counter("slotwise_fallbacks", "Heartbeats the shim scheduled with its FIFO "
                                 "fallback because Python did not answer in time", registry=self.registry)
        self.fallback_episodes = Counter("slotwise_fallback_episodes", "Stretches of time the shim scheduled "
                                         "without Python (reported when each one ends)", registry=self.registry)
        self.fallback_seconds = Counter("slotwise_fallback_seconds", "Time the shim scheduled without Python, "
                                        "over the episodes that ended", registry=self.registry)
        self.resyncs = Counter("slotwise_resyncs", "Full payloads reconciled with Python's view",
                               registry=self.registry)
        self.divergences = Counter("slotwise_divergences", "Checks that found Python's view of apps different "
                                   "from the ResourceManager's (each repaired by a resync)", registry=self.registry)
        self.reloads = Counter("slotwise_config_reloads", "Allocation file reloads", ["result"],
                               registry=self.registry)
        self.refusals = Counter("slotwise_refused_assignments", "Assignments the shim did not carry out, "
                                "by its reason", ["reason"], registry=self.registry)
        self._core_ref = core_ref or (lambda: None)
        self._link_ref = link_ref or (lambda: None)
        self._status_ref = status_ref or (lambda: None)
        #: The shadow policy (slotwise.shadow_service.ShadowService), or None.
        self._shadow_ref = shadow_ref or (lambda: None)
        self._clock = clock
        self._recent: collections.deque = collections.deque()  # (time, decisions)
        self._lock = threading.Lock()
        self.registry.register(_Collector(self))

    # ----------------------------------------------------- from PolicyCore
    def on_heartbeat(self, seconds: float, assigned: int) -> None:
        self.heartbeats.observe(seconds)
        if assigned:
            self.decisions.inc(assigned)
            now = self._clock()
            with self._lock:
                self._recent.append((now, assigned))
                self._prune(now)  # bounded even if nobody scrapes

    def on_fallback_episode(self, heartbeats: int, seconds: float) -> None:
        self.fallbacks.inc(heartbeats)
        self.fallback_episodes.inc()
        self.fallback_seconds.inc(seconds)

    def on_resync(self) -> None:
        self.resyncs.inc()

    def on_divergence(self, apps: int) -> None:
        self.divergences.inc()

    def on_refusal(self, reason: str) -> None:
        self.refusals.labels(reason).inc()

    def on_reload(self, ok: bool) -> None:
        self.reloads.labels("ok" if ok else "failed").inc()

    def decisions_per_second(self) -> float:
        now = self._clock()
        with self._lock:
            self._prune(now)
            return sum(n for _, n in self._recent) / RATE_WINDOW

    def _prune(self, now: float) -> None:
        recent = self._recent
        while recent and recent[0][0] < now - RATE_WINDOW:
            recent.popleft()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _Collector:
    """Gauges read at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.m = metrics

    def collect(self):
        rate = GaugeMetricFamily("slotwise_decisions_per_second",
                                 f"Containers assigned per second over the last {RATE_WINDOW:.0f} s")
        rate.add_metric([], self.m.decisions_per_second())
        yield rate
        core = self.m._core_ref()
        if core is not None:
            fair = GaugeMetricFamily("slotwise_queue_fair_share", "A queue's instantaneous fair share",
                                     labels=["queue", "resource"])
            steady = GaugeMetricFamily("slotwise_queue_steady_fair_share", "A queue's steady fair share",
                                       labels=["queue", "resource"])
            usage = GaugeMetricFamily("slotwise_queue_usage", "What a queue's containers hold",
                                      labels=["queue", "resource"])
            demand = GaugeMetricFamily("slotwise_queue_demand", "What a queue's apps hold and ask for",
                                       labels=["queue", "resource"])
            running = GaugeMetricFamily("slotwise_queue_running_apps", "Runnable apps in a queue", labels=["queue"])
            waits = GaugeMetricFamily("slotwise_queue_locality_wait_seconds", "The delay-scheduling wait in force "
                                      "for a leaf queue's apps at each level (tuned when it has a locality target, and then "
                                      "per host: for an app whose data is on one node, 1/k of it on k nodes)",
                                      labels=["queue", "level"])
            local = GaugeMetricFamily("slotwise_queue_data_local_fraction", "The fraction of a leaf queue's "
                                      "launches with places asked for that were node-local, last 10 minutes",
                                      labels=["queue"])
            target = GaugeMetricFamily("slotwise_queue_locality_target", "A queue's data-local target "
                                       "(localityTarget)", labels=["queue"])
            for r in core.views.queues():
                for fam, key in ((fair, "fair_share"), (steady, "steady_fair_share"), (usage, "usage"),
                                 (demand, "demand")):
                    for dim, value in r[key].items():  # memory_mb and vcores, or map_slots and reduce_slots
                        fam.add_metric([r["queue"], dim], float(value))
                running.add_metric([r["queue"]], r["running_apps"])
                for level, wait in (r.get("locality_waits") or {}).items():
                    waits.add_metric([r["queue"], level], wait)
                if r.get("data_local") is not None:
                    local.add_metric([r["queue"]], r["data_local"])
                if r.get("locality_target") is not None:
                    target.add_metric([r["queue"]], r["locality_target"])
            yield from (fair, steady, usage, demand, running, waits, local, target)
            market = getattr(core, "services", {}).get("market")
            if market is not None and market.accounts:
                price = GaugeMetricFamily("slotwise_dp_price", "Dynamic Priority: the price (sum of the rates "
                                          "in force of the queues with work)")
                price.add_metric([], market.price())
                budget = GaugeMetricFamily("slotwise_dp_budget", "Dynamic Priority: a queue's budget", labels=["queue"])
                spend = GaugeMetricFamily("slotwise_dp_spending_rate", "Dynamic Priority: a queue's spending rate "
                                          "in force", labels=["queue"])
                for row in market.infos():
                    budget.add_metric([row["queue"]], row["budget"])
                    spend.add_metric([row["queue"]], row["rate"])
                yield from (price, budget, spend)
        link = self.m._link_ref()
        if link is not None:
            state = link.status()
            up = GaugeMetricFamily("slotwise_resourcemanager_connected",
                                   "1 while this server is the ResourceManager's registered policy")
            up.add_metric([], 1.0 if state.get("registered") else 0.0)
            away = GaugeMetricFamily("slotwise_fallback_active",
                                     "1 while the ResourceManager schedules without Python (its FIFO fallback)")
            away.add_metric([], 1.0 if state.get("in_fallback") else 0.0)
            standby = GaugeMetricFamily("slotwise_resourcemanager_standby",
                                        "1 while this server's ResourceManager is the standby of an HA pair "
                                        "(serve --rm-web); the active one's policy server decides")
            standby.add_metric([], 1.0 if state.get("ha_state") == "standby" else 0.0)
            yield from (up, away, standby)
        yield from _shadow_metrics(self.m._shadow_ref())
        status = self.m._status_ref()
        if status is not None:
            ok = GaugeMetricFamily("slotwise_config_valid", "1 if the allocation file on disk is the one in force")
            ok.add_metric([], 0.0 if status.errors else 1.0)
            yield ok
            if status.loaded_at:
                at = GaugeMetricFamily("slotwise_config_loaded_timestamp_seconds",
                                       "When the allocation file in force was loaded")
                at.add_metric([], status.loaded_at)
                yield at


def _shadow_metrics(service):
    """The shadow's counts (they start again with each shadow started) and
    whether one runs."""
    st = service.summary() if service is not None else None
    up = GaugeMetricFamily("slotwise_shadow_up", "1 while a shadow policy (a candidate file) decides beside the "
                           "live one")
    up.add_metric([], 1.0 if st and st["state"] == "running" else 0.0)
    yield up
    for name, what in (("compared", "Heartbeats the shadow's candidate decided and compared"),
                       ("diverged", "Heartbeats whose shadow decisions differ from the live ones"),
                       ("skipped", "Heartbeats the shadow skipped, behind")):
        c = CounterMetricFamily(f"slotwise_shadow_{name}", what)
        c.add_metric([], float(st[name]) if st else 0.0)
        yield c
