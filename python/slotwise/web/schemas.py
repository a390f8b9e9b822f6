"""The REST API's shapes, for validation and the OpenAPI document."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictInt, StrictStr


class ResourceAmount(BaseModel):
    """null: unlimited (a max share with no limit)."""

    model_config = ConfigDict(extra="forbid")
    memory_mb: float | None
    vcores: float | None


class SlotAmount(BaseModel):
    """An MRv1 JobTracker's queues and apps count slots; null: unlimited."""

    model_config = ConfigDict(extra="forbid")
    map_slots: float | None
    reduce_slots: float | None


Amount = ResourceAmount | SlotAmount


class QueueOut(BaseModel):
    queue: str
    parent: str | None
    policy: str
    weight: float
    min_share: Amount
    max_share: Amount
    demand: Amount
    usage: Amount
    fair_share: Amount
    steady_fair_share: Amount
    running_apps: int
    apps: int
    dynamic: bool
    below_min_share: bool = Field(description="usage is below min(min share, demand) now")
    below_fair_share: bool = Field(description="usage is below min(threshold x fair share, demand) now")
    min_share_starved_for: float | None = Field(description="seconds it has been below min(min share, demand): "
                                                "0 when it is not below; null when below but not timed "
                                                "(preemption off, or a parent queue); while the master is gone "
                                                "(status: lost_at set), as of when the link was lost: nothing is "
                                                "preempted until it is back")
    fair_share_starved_for: float | None = Field(description="seconds it has been below min(threshold x fair "
                                                 "share, demand): 0 when it is not below; null when below but "
                                                 "not timed (preemption off, or a parent queue); while the master "
                                                 "is gone (status: lost_at set), as of when the link was lost: "
                                                 "nothing is preempted until it is back")
    min_share_timeout: float | None = Field(None, description="seconds below its min share before preemption "
                                            "acts for it (its own, inherited or the default); null: never")
    fair_share_timeout: float | None = Field(None, description="seconds below threshold x fair share before "
                                             "preemption acts for it; null: never")
    fair_share_threshold: float | None = Field(None, description="the fraction of its fair share it may fall to")
    locality_target: float | None = Field(None, description="the data-local fraction asked for "
                                          "(localityTarget, its own or inherited); null: fixed waits")
    data_local: float | None = Field(None, description="a leaf queue: the fraction of its launches with places "
                                     "asked for that were node-local in the last 10 minutes; null: none")
    locality_waits: dict[str, float] | None = Field(None, description="a leaf queue: the delay-scheduling waits "
                                                    "in force, seconds ({node, rack}: T1, then T2 more); tuned "
                                                    "for the target when it has one, and then per host (for "
                                                    "an app whose data is on one node; 1/k of them for one "
                                                    "on k nodes); null: a count rule")
    locality_tuned: bool = Field(False, description="the waits are tuned for its locality target")
    compared: list[str] = Field(default_factory=list, description="the dimensions its shares are compared in "
                                "(its parent's policy: memory_mb for fair and fifo, with vcores for drf)")
    preemption: bool | None = Field(None, description="whether this server preempts at all")
    preemption_due: bool | None = Field(None, description="a leaf queue below a share: the preemption unit's "
                                        "next round may act for it at the next update pass (its timeout has "
                                        "passed since it was last at that share), as explain says it; false: "
                                        "not yet, or no round will (preemption off, no timeout, the master "
                                        "gone); null: at its shares, or a parent")
    next_preemption_in_s: float | None = Field(None, description="seconds until that round may act (0 when "
                                               "due); null when none will. A round that served the queue "
                                               "restarts this wait while its *_starved_for clock runs on")


class ClusterOut(BaseModel):
    capacity: Amount = Field(description="the sum of the nodes' resources")
    nodes: int = Field(description="NodeManagers the scheduler knows")
    usage: Amount = Field(description="held by running containers")
    share_rule: str = Field(description='fair shares by "yarn" or "design" (see /api/v1/config)')


class AppOut(BaseModel):
    id: str
    name: str | None = Field(default=None, description="the application's name, as submitted")
    user: str
    queue: str
    priority: int
    weight: float
    submit_time: float
    runnable: bool
    running_containers: int
    usage: Amount
    demand: Amount
    fair_share: Amount
    locality_level: str = Field(description="node_local, rack_local or off_switch: how far it may run now")
    locality_wait: float = Field(description="seconds skipped waiting for a local slot")
    placed: dict[str, int] = Field(default_factory=dict, description="its running containers by the locality "
                                   "they were placed at: node_local, rack_local, off_switch; rm: placed by the "
                                   "master itself (an AM, its fallback)")


class NodeOut(BaseModel):
    node: str
    host: str
    rack: str
    capacity: Amount
    used: Amount
    free: Amount = Field(description="capacity less what its containers hold")
    containers: int
    held_for: list[str] = Field(description="starved queues that room freed by preemption is held for")


class HistoryOut(BaseModel):
    t: list[float] = Field(description="Unix time of each sample, oldest first")
    every: float = Field(description="seconds between samples")
    cap: int = Field(description="samples kept at most")
    queues: dict[str, dict[str, list[float | None]]] = Field(
        description="per queue, per field (usage, fair_share, steady_fair_share, min_share, demand): one value "
                    "per sample (memory MB on YARN, map plus reduce slots on MRv1); null: not there then")


class ConfigOut(BaseModel):
    path: str
    loaded_at: float | None = Field(description="Unix time the file in force was loaded")
    sha256: str | None
    content: str = Field(description="the allocation file in force")
    errors: list[str] = Field(description="FILE:LINE: message for the file on disk, until it is fixed")
    warnings: list[str] = Field(default_factory=list, description="FILE:LINE: warning: ... for the file in force: "
                                "what YARN ignores or adjusts (it still loads)")
    error_at: float | None
    reloads: int
    failures: int
    resource_manager_connected: bool
    share_rule: str = Field(description='fair shares by "yarn" (YARN 3.5\'s rule) or "design" (the MRv1 design '
                            'document\'s): serve --share-rule, by default the file format\'s')


class LinkOut(BaseModel):
    connected: bool = Field(description="this server has the ResourceManager's gateway open")
    registered: bool = Field(description="this server is the RM's policy now")
    seen: bool = Field(description="an RM has registered this server at some time")
    in_fallback: bool = Field(description="the RM schedules without Python (its FIFO) right now")
    ha_state: str | None = Field(None, description='the RM\'s HA state, "active" or "standby" (serve --rm-web '
                                 'and RM HA on); a standby RM schedules nothing and has no gateway')
    reason: str | None = Field(None, description="why, while in_fallback")
    since: float | None = Field(None, description="Unix time the fallback began")
    episode_heartbeats: int = Field(0, description="heartbeats the FIFO scheduled in this episode")
    heartbeats: int = Field(0, description="node heartbeats since the RM started")
    fallback_heartbeats: int = Field(0, description="of those, scheduled by the FIFO")
    failures: int = Field(0, description="failed calls to Python since the RM started")
    deadline_ms: int | None = Field(None, description="the shim's deadline for one call")
    shim: str | None = None
    preemption: bool | None = Field(None, description="whether Python preempts (set at registration)")
    preemption_from: str | None = Field(None, description="what said so: the master's yarn.scheduler.fair."
                                        "preemption or mapred.fairscheduler.preemption, or serve --preemption")
    master: str = Field("ResourceManager", description="the kind of master this server decides for: "
                        "ResourceManager (YARN) or JobTracker (MRv1)")
    lost_at: float | None = Field(None, description="Unix time the link to the master was lost (unset once "
                                  "it registers again)")
    waiting: str | None = Field(None, description="why there is no link now, while waiting for the master")
    connect_failures: int = Field(0, description="tries to reach the master's gateway that failed since this "
                                  "server started (it tries again every second while waiting)")


class PolicyCounts(BaseModel):
    calls: int = 0
    resyncs: int = Field(0, description="full payloads reconciled")
    rejected_messages: int = Field(0, description="payloads refused as inconsistent (nothing applied)")
    divergences: int = Field(0, description="checks that found Python's view different from the RM's")
    recoveries: int = Field(0, description="apps the RM held where no app can be, placed and moved")
    fallback_episodes: int = Field(0, description="fallback episodes the shim reported after they ended")
    fallback_heartbeats: int = Field(0, description="heartbeats in those episodes")
    refused: int = Field(0, description="Python's assignments the shim did not carry out")
    refused_by_reason: dict[str, int] = Field(default_factory=dict, description="those, by the shim's reason "
                                              "(locality, no_room, blacklisted, no_task, no_attempt, no_node, error)")


class StatusOut(BaseModel):
    resource_manager: LinkOut
    policy: PolicyCounts


class MoveIn(BaseModel):
    queue: StrictStr = Field(validation_alias=AliasChoices("queue", "pool"),
                             description="target queue, e.g. root.research or research (\"pool\": its old name)")


class WhatIfIn(BaseModel):
    """One change to play forward beside the live state (exactly one of
    set, move, priority, allocations)."""

    set: StrictStr | None = Field(None, max_length=4096, description="QUEUE.SETTING=VALUE, e.g. root.adhoc.weight=3 "
                                  "(weight, minResources, maxRunningApps, maxAMShare, localityTarget)")
    move: list[StrictStr] | None = Field(None, min_length=2, max_length=2, description="[APP, QUEUE]")
    priority: list[StrictStr | int] | None = Field(None, min_length=2, max_length=2, description="[APP, N]")
    allocations: StrictStr | None = Field(None, max_length=4 * 1024 * 1024,
                                          description="a whole allocation file, as it would be saved")
    horizon_s: float = Field(600.0, ge=1, le=86400, description="how far ahead to play, seconds (default 600)")


class WhatIfApp(BaseModel):
    app: str
    queue: str
    start_before: float | None = Field(description="seconds from `at` to its start without the change; "
                                       "null: past the horizon or started")
    start_after: float | None
    finish_before: float | None = Field(description="seconds from `at` to its end without the change; "
                                        "null: see why_before")
    finish_after: float | None
    why_before: str | None = None
    why_after: str | None = None
    changed: bool = Field(description="its start or finish moves by more than a heartbeat")


class WhatIfQueue(BaseModel):
    queue: str
    share_before: float = Field(description="its mean share of the cluster over the horizon without the change "
                                "(memory on YARN, slots on MRv1; 0 to 1)")
    share_after: float
    before: list[list[float]] = Field(description="[seconds from `at`, share] over the horizon without the change")
    after: list[list[float]]


class WhatIfOut(BaseModel):
    change: str
    error: str | None = Field(description="why the change cannot be made (nothing played)")
    at: float = Field(description="the engine's time both plays start from")
    horizon_s: float
    cpu_ms: float
    apps: list[WhatIfApp]
    queues: list[WhatIfQueue] = Field(default_factory=list, description="each leaf queue's share over the horizon")
    preemptions_before: dict[str, int] = Field(default_factory=dict, description="containers the play without "
                                               "the change takes back by preemption, by the queue they are "
                                               "taken from (the median play)")
    preemptions_after: dict[str, int] = Field(default_factory=dict, description="the same with the change")


class JobTrackerActionIn(BaseModel):
    """The JobTracker's /scheduler form, as its servlet forwards it (the token in the header)."""

    job: StrictStr = Field(max_length=256)
    queue: StrictStr | None = Field(default=None, max_length=1024)
    priority: StrictStr | None = Field(default=None, max_length=16)


class PriorityIn(BaseModel):
    """Strict: "3", 3.0 and true are refused, as YARN's own API would."""

    priority: StrictInt = Field(ge=-2, le=64, description="higher runs first: YARN's, 0 to 64 (with a "
                          "ResourceManager, capped at yarn.cluster.max-application-priority); an MRv1 job's, "
                          "-2 (VERY_LOW) to 2 (VERY_HIGH)")


class MoveOut(BaseModel):
    id: str
    queue: str


class PriorityOut(BaseModel):
    id: str
    priority: int = Field(description="the priority in force")


class ErrorOut(BaseModel):
    detail: str


class PlacementRuleOut(BaseModel):
    rule: str = Field(description="the queuePlacementPolicy rule: specified, user, primaryGroup, "
                      "secondaryGroupExistingQueue, nestedUserQueue, default or reject")
    line: int = Field(description="its line in the allocation file (0: the built-in policy)")
    create: bool
    queue: str | None = Field(description="the queue it named, if any")
    outcome: str = Field(description="placed, skipped (the next rule was tried) or rejected")
    why: str | None


class PlacementOut(BaseModel):
    """How an app was placed when the ResourceManager asked."""

    app: str
    user: str
    asked: str | None = Field(description="the queue the app asked for")
    queue: str | None = Field(description="where the policy put it; null if rejected")
    rejected: str | None = Field(description="why the policy rejected it")
    rules: list[PlacementRuleOut] = Field(description="each rule tried, in order")


class ForecastOut(BaseModel):
    """When an app will get its first container and when its last one will
    end, played forward from the live state (docs/admin.md, "Forecasts"):
    the estimate with the median run times, the range with the 10th and
    90th percentiles; null where it cannot tell, and ``why``."""

    app: str
    at: float = Field(description="the engine's time the forecast starts from (a monotonic clock: "
                                  "start and finish are on it; add made_at - at for the wall clock)")
    made_at: float = Field(description="when it was made (wall clock, seconds since the epoch)")
    cpu_ms: float = Field(description="the CPU the whole forecast (every app's) took")
    started: bool = Field(description="it had its first container already")
    start: float | None = Field(description="when it got or gets its first container (engine time)")
    start_in_s: float | None = Field(description="seconds from `at` to its start; null once started or "
                                     "past the horizon")
    start_in_low_s: float | None = None
    start_in_high_s: float | None = None
    finish: float | None = Field(description="when its last container ends (engine time); null: see why")
    finish_in_s: float | None = None
    finish_in_low_s: float | None = None
    finish_in_high_s: float | None = Field(None, description="null with a finish: its long end is past the horizon")
    why: str | None = Field(description="why there is no finish (no run time seen yet, its AM has not asked, "
                            "a running-app limit behind apps whose ends cannot be told, past the horizon, the "
                            "master gone)")
    text: str = Field(description="in words: starts in ~40 s (25-70 s), ends in ~3 min (2-4 min)")


class ForecastsOut(BaseModel):
    every_s: float = Field(description="how often the forecasts are made again, seconds")
    apps: list[ForecastOut]


class HoldOut(BaseModel):
    """One reason an app runs no more than it does, with the figures behind it."""

    model_config = ConfigDict(extra="allow")
    code: str = Field(description="user_max_running_apps, queue_max_running_apps, admission, nothing_asked, "
                      "queue_at_max_share, max_am_share, locality_wait, no_node_with_room, no_nodes, "
                      "waiting_turn, python_away, or policy (what a parent queue's policy says of the app's queue, e.g. "
                      "its Dynamic Priority budget and rate)")
    message: str


class PreemptionOutlookOut(BaseModel):
    """What the engine's preemption unit will do for a starved queue, as things stand now."""

    enabled: bool = Field(description="whether preemption may act for this queue at all")
    next_round_in_s: float | None = Field(description="seconds until a round may act for its shortfall (0: at "
                                          "the next update pass); null: off, or no timeout applies")
    due: bool = Field(description="its timeout has passed: the next update pass may act")
    victims: list[dict] = Field(description="the containers that round would take for it (container, app, "
                                "queue, node, am, resource), chosen by the engine's own rule")
    asked_back: list[dict] = Field(description="containers already being taken back for it (container, app, "
                                   "queue, node, killed)")
    held: Amount = Field(description="freed by earlier victims and held on their nodes for it")
    last_round_s_ago: float | None = Field(description="seconds since a round last took containers for it")
    message: str


class StarvationOut(BaseModel):
    """The app's queue below its min share or fair-share threshold, with its wait and what preemption will do."""

    queue: str
    kind: str = Field(description="min_share or fair_share: the share it is below (min share first)")
    below: list[str] = Field(description="every share it is below now")
    usage: Amount
    share: Amount = Field(description="what it is judged against: min(min share, demand), or min(threshold x "
                          "fair share, demand)")
    min_share: Amount
    fair_share: Amount
    threshold: float = Field(description="its fair share preemption threshold")
    since: float = Field(description="Unix time it fell below, counted across the preemption rounds that serve it")
    for_s: float = Field(description="seconds it has been below")
    timeout_s: float | None = Field(description="its preemption timeout for that share; null: none")
    preemption: PreemptionOutlookOut
    message: str


class StandingOut(BaseModel):
    """A live app in its queue: what it runs against its fair share, and what it still asks for."""

    running_containers: int
    usage: Amount
    fair_share: Amount = Field(description="its fair share within its queue")
    position: str = Field(description="over, under or at its fair share")
    queue: str
    queue_usage: Amount
    queue_fair_share: Amount
    queue_position: str = Field(description="the queue over, under or at its own fair share")
    asks: dict = Field(description="containers it asks for and their total resource")
    not_placed_because: list[str] = Field(description="the codes of the holds that keep those from being placed")
    message: str


class OutcomeOut(BaseModel):
    """How an app that has left ended, from the scheduler's record of the last 1,000."""

    model_config = ConfigDict(extra="allow")
    final_state: Literal["SUCCEEDED", "FAILED", "KILLED", "UNDEFINED"] | None = Field(
        description="how it ended as the master (ResourceManager or JobTracker) reported it when it removed the "
                    "app; null: not reported (it left at a resync, or the shim is older)")
    finished: float = Field(description="Unix time it left")
    finished_s_ago: float
    ran_for_s: float = Field(description="seconds from submission to leaving")
    how: str = Field(description="removed (the master removed it) or resync (the master no longer had it)")
    containers_ran: int
    containers_preempted: int
    running_at_end: int
    pending_at_end: int
    message: str


class RejectedOut(BaseModel):
    """Why the placement policy rejected an app (its placement record)."""

    asked: str | None = Field(description="the queue the app asked for")
    reason: str = Field(description="the policy's reason, as the master was told")
    rules: list[PlacementRuleOut] = Field(description="each rule tried, in order")
    message: str


class ExplainOut(BaseModel):
    id: str
    name: str | None
    user: str
    queue: str | None = Field(description="its queue; null for an app rejected at placement")
    state: str = Field(description="running (holds containers; it may ask for more), pending (asks, holds none), "
                       "waiting to run (a running-app limit), idle (neither), finished (it has left: see "
                       "outcome), or rejected (the placement policy rejected it: see rejected)")
    running_containers: int
    pending_containers: int
    usage: Amount
    fair_share: Amount
    holds: list[HoldOut] = Field(description="what holds it back now, in the order a heartbeat checks")
    standing: StandingOut | None = Field(None, description="a live app's standing in its queue")
    queue_starvation: StarvationOut | None = Field(None, description="its queue's starvation, when it is below "
                                                   "its min share or fair-share threshold now")
    outcome: OutcomeOut | None = Field(None, description="a finished app's outcome")
    rejected: RejectedOut | None = Field(None, description="why the placement policy rejected it (the last 10,000 "
                                         "placements are remembered)")
    preempting: list[dict] = Field(description="its containers being taken back now, and why each was chosen")
    preempted_recently: list[dict] = Field(description="the last preemptions of its containers, with why")
    forecast: str | None = Field(None, description="when it starts and ends, in words (the last forecast: "
                                 "/api/v1/apps/{id}/forecast); null when none was made for it")
    counterfactual: str | None = Field(None, description="a waiting app: the smallest single change that would "
                                       "start it within a minute, found by what-if plays of a few candidates "
                                       "(its priority, its queue's weight, a move) within 1 s of CPU; null: none")


class DryRunQueue(BaseModel):
    model_config = ConfigDict(extra="allow")
    queue: str
    status: str = Field(description="added, removed or kept")


class DryRunOut(BaseModel):
    valid: bool = Field(description="false: the file has errors, or a reload would be refused (conflicts)")
    errors: list[str]
    warnings: list[str]
    conflicts: list[str] = Field(description="why a reload would be refused: a queue holding apps would become a parent")
    share_rule: str | None = None
    preemption: bool | None = Field(None, description="whether this server preempts at all")
    queues: list[DryRunQueue] = Field(description="each queue's fair_share, steady_fair_share, weight, min_share, "
                                    "max_share, policy, max_running_apps, max_am_share, min_share_timeout, "
                                    "fair_share_timeout and fair_share_threshold (in force: inherited or the "
                                    "file's default; null: unlimited or never), _before and _after, against the "
                                    "live demands")
    newly_preemptable: list[dict] = Field(description="containers over their queue's new fair share that are not now")


class DpQueueOut(BaseModel):
    """One queue of the Dynamic Priority market (the paper's Fig. 2 columns)."""
    queue: str
    budget: float
    spending: float = Field(description="the rate asked for, per slot per allocation interval")
    rate: float = Field(description="the rate in force this interval")
    share: float = Field(description="spending / price: the fraction of capacity granted (0..1)")
    used: float = Field(description="slots used now")
    pending: float = Field(description="slots wanted beyond those used")
    owner: str | None = None


class DpOut(BaseModel):
    """The answer of a Dynamic Priority request: the price, the server's time
    (milliseconds, for signing), or queues; ``error`` when refused."""
    host: str | None = None
    price: float | None = None
    time: int | None = None
    queues: list[DpQueueOut] | None = None
    error: str | None = None


class ShadowIn(BaseModel):
    """A candidate allocation file to decide beside the live one."""

    allocations: StrictStr = Field(max_length=4 * 1024 * 1024, description="the candidate file, whole")


class ShadowSide(BaseModel):
    containers: int
    resource: dict
    preemptions: int
    data_local: float | None = Field(None, description="node-local launches over launches that were not AMs")


class ShadowQueue(BaseModel):
    queue: str
    live: ShadowSide
    shadow: ShadowSide


class ShadowOut(BaseModel):
    state: str = Field(description="off (none started), running or stopped")
    file: str | None = Field(None, description="the candidate's file (or the name it was sent under)")
    error: str | None = Field(None, description="why it stopped, if it did not stop on request")
    file_errors: list[str] = Field(default_factory=list, description="FILE:LINE: errors of the candidate on disk "
                                   "(the version in force stays)")
    started_at: float | None = None
    compared: int = Field(description="heartbeats the candidate decided and compared")
    diverged: int = Field(description="heartbeats whose decisions differ from the live ones")
    skipped: int = Field(description="heartbeats not compared because the shadow was behind")
    updates_compared: int
    updates_diverged: int = Field(description="update passes whose preemptions differ")
    copies: int = Field(description="times the candidate was made again from the live state after a divergence")
    backlog: int = Field(description="inputs handed over and not yet taken (serve's queue and the shadow's)")
    cpu_s: float = Field(description="the CPU seconds the candidate's comparisons took (copies included)")
    pid: int | None = Field(None, description="the shadow's process (it runs outside serve's interpreter)")
    rss_mb: float | None = Field(None, description="the shadow process's resident memory, MB")
    start_cpu_s: float | None = Field(None, description="the CPU seconds serve's feeder thread spent pickling the "
                                      "live state's copy for the shadow's process, once at its start")
    feed_cpu_s: float | None = Field(None, description="the CPU seconds serve's feeder thread spent handing the "
                                     "inputs to the shadow's process since (what the shadow costs serve itself)")
    window_s: float
    queues: list[ShadowQueue] = Field(description="per queue over the window: what each side gave")
    diverging: list[dict] = Field(description="the last 50 diverging heartbeats or passes, newest first")
    timeline: list[list[float]] = Field(default_factory=list, description="[t, compared, diverged] every 5 s of "
                                        "engine time (the last hour), the counts as they stood then; the last "
                                        "at the last heartbeat seen")


class ShadowReportSide(BaseModel):
    containers: int
    resource_seconds: dict = Field(description="per dimension: each container held for its app's mean lifetime "
                                   "in the recording, cut at the window's end")
    mean_wait_s: float | None = Field(None, description="from an app's submission to its first container")
    data_local: float | None = Field(None, description="node-local launches over launches that were not AMs")
    preemptions: int


class ShadowReportQueue(BaseModel):
    queue: str
    recorded: ShadowReportSide = Field(description="what really happened: the recording's own containers")
    live: ShadowReportSide = Field(description="the window played under the live file")
    candidate: ShadowReportSide = Field(description="played the same way under the candidate")


class ShadowReportOut(BaseModel):
    log: str = Field(description="serve's event log, as serve names it")
    candidate: str = Field(description="the candidate's file (or the name it was sent under)")
    window: list[float] = Field(description="[start, end], engine time: the log's last `since` seconds")
    queues: list[ShadowReportQueue]


class PromoteOut(BaseModel):
    file: str
    backup: str
    candidate: str | None = None
