"""The MRv1 allocation file (Hadoop 0.20/0.21 fair scheduler "pools" file).

Pools are flat and count map and reduce slots.  They map onto YARN's model:
pool p becomes queue root.p, and minMaps/minReduces and maxMaps/maxReduces
are its min and max resources in the map_slots and reduce_slots dimensions.
"""

from __future__ import annotations

from lxml import etree

from . import values as v
from ..resources import Resource
from .model import AllocationConfig, PlacementRule, QueueConfig, ResourceSpec
from .yarn_xml import (
    YARN_ONLY_ELEMENTS,
    Fields,
    Reporter,
    apply,
    check_attributes,
    check_name,
    parse_users,
    scan,
)

POOL_FIELDS: Fields = {
    "minMaps": ("min_maps", v.non_negative_int),
    "minReduces": ("min_reduces", v.non_negative_int),
    "maxMaps": ("max_maps", v.non_negative_int),
    "maxReduces": ("max_reduces", v.non_negative_int),
    "maxRunningJobs": ("max_running_apps", v.non_negative_int),
    "weight": ("weight", v.non_negative_float),
    "minSharePreemptionTimeout": ("min_share_preemption_timeout", v.seconds),
    "schedulingMode": ("scheduling_policy", v.mrv1_mode),
    "localityTarget": ("locality_target", v.fraction),
}

TOP_FIELDS: Fields = {
    "poolMaxJobsDefault": ("queue_max_apps_default", v.non_negative_int),
    "userMaxJobsDefault": ("user_max_apps_default", v.non_negative_int),
    "defaultMinSharePreemptionTimeout": ("default_min_share_preemption_timeout", v.seconds),
    "fairSharePreemptionTimeout": ("default_fair_share_preemption_timeout", v.seconds),
    "defaultPoolSchedulingMode": ("default_queue_scheduling_policy", v.mrv1_mode),
    "defaultLocalityTarget": ("default_locality_target", v.fraction),
}

USER_FIELDS: Fields = {"maxRunningJobs": ("max_running_apps", v.non_negative_int)}



def _unknown(el: etree._Element, where: str) -> str:
    if el.tag in YARN_ONLY_ELEMENTS:
        return f"<{el.tag}> in {where} is a YARN element in an MRv1 pools file: ignored"
    return f"unknown element <{el.tag}> in {where} is ignored, as Hadoop 1 ignores it"


def _parse_pool(el: etree._Element, rep: Reporter) -> QueueConfig | None:
    name = check_name(el.get("name"), "<pool>", el.sourceline, rep)
    pool = QueueConfig(f"root.{name or '?'}", line=el.sourceline)
    where = f"pool {name or '?'}"
    check_attributes(el, ("name",), where, rep)

    def nested(child: etree._Element) -> None:
        rep.error(child.sourceline, f"MRv1 pools are flat: <pool> inside {where} is not allowed")

    apply(pool, scan(el, POOL_FIELDS, rep, where, {"pool": nested}, _unknown))
    # Each kind of slot has its own limits, as in the original Fair
    # Scheduler: a pool with minMaps alone has no min share of reduces.
    if pool.min_maps is not None or pool.min_reduces is not None:
        pool.min_resources = Resource(map_slots=pool.min_maps or 0, reduce_slots=pool.min_reduces or 0)
    if pool.max_maps is not None or pool.max_reduces is not None:
        pool.max_resources = ResourceSpec(map_slots=pool.max_maps, reduce_slots=pool.max_reduces)
    return pool if name is not None else None


def parse_mrv1(root: etree._Element, source: str) -> AllocationConfig:
    """Build the config from a parsed MRv1 <allocations> element; raises
    ``ConfigErrors`` with every error found."""
    rep = Reporter(source)
    cfg = AllocationConfig(source=source, format="mrv1")
    pools: list[etree._Element] = []
    users: list[etree._Element] = []
    found = scan(root, TOP_FIELDS, rep, "<allocations>",
                 {"pool": pools.append, "user": users.append}, _unknown)
    apply(cfg, found)

    seen: dict[str, int] = {}
    for el in pools:
        pool = _parse_pool(el, rep)
        if pool is None:
            continue
        if pool.short_name in seen:
            rep.error(el.sourceline, f"duplicate pool {pool.short_name} (first at line {seen[pool.short_name]})")
        else:
            seen[pool.short_name] = el.sourceline
            cfg.root.children.append(pool)
    parse_users(users, cfg, rep, USER_FIELDS, _unknown)
    # The job's pool-name property if set, else one pool per user.
    cfg.placement_rules = [PlacementRule("specified", create=True), PlacementRule("user", create=True)]
    rep.raise_if_any()
    cfg.warnings = rep.warning_lines()
    return cfg
