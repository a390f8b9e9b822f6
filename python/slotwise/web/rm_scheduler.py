"""The ResourceManager's scheduler views, drawn here from serve's own tree.

YARN's RM describes only its own schedulers at ``GET /ws/v1/cluster/scheduler``
and on its ``/cluster/scheduler`` page.  For an RM scheduled by Slotwise the
shim only forwards both (java-shim's SchedulerInfoFilter, through shim-link's
ServeWeb, as the JobTracker's /scheduler page is forwarded to
web/jobtracker.py), so the cluster, the queues and their shares are drawn
once, here, from the same tree that decides:

- ``GET /rm/ws/scheduler``: the FairScheduler's JSON shape (YARN's
  FairSchedulerInfo, FairSchedulerQueueInfo, FairSchedulerLeafQueueInfo), each
  queue with the keys a real YARN 3.5 FairScheduler gives
  (tests/data/fairscheduler-3.5.0-ws-scheduler.json); the RM adds its largest
  container (``max_mb``, ``max_vcores``), which only it knows.  JSON only:
  another ``Accept`` is 406 in YARN's error shape.
- ``GET /rm/scheduler``: the cluster line and the queues table of the RM's
  scheduler page (an HTML fragment the shim frames with its link's state and
  counts).

docs/shim.md says which key comes from where.
"""

from __future__ import annotations

import math
from html import escape

from fastapi import APIRouter, Header, Query
from fastapi.responses import HTMLResponse, JSONResponse

from ..engine import RECOVERY_QUEUE

#: YARN's maxApps when a queue has no limit (Integer.MAX_VALUE).
UNLIMITED_APPS = 2 ** 31 - 1
#: YARN's names of the policies it has; another (hopper, ...) is shown as Python names it.
YARN_POLICY_NAMES = {"fair": "fair", "fifo": "FIFO", "drf": "DRF"}
#: The most a caller may claim for the RM's largest container (YARN's own bound is a long).
MAX_AMOUNT = 2 ** 53


def _res(memory_mb: float, vcores: float) -> dict:
    """YARN's ResourceInfo: memory, vCores, and the same again per resource type, whole."""
    mb, vc = int(round(memory_mb)), int(round(vcores))
    return {"memory": mb, "vCores": vc, "resourceInformations": {"resourceInformation": [
        {"maximumAllocation": 2 ** 63 - 1, "minimumAllocation": 0, "name": name, "resourceType": "COUNTABLE",
         "units": units, "value": value} for name, units, value in (("memory-mb", "Mi", mb), ("vcores", "", vc))]}}


def _amount(a) -> tuple[float, float]:
    return (0.0, 0.0) if a is None else (a.memory_mb, a.vcores)


def scheduler_info(service, max_mb: float = 0, max_vcores: float = 0) -> dict:
    """``{"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": ...}}}``."""
    core = service.core
    rows = [r for r in core.queue_table() if not (r.name == RECOVERY_QUEUE and not r.apps)]
    capacity = service.cluster()["capacity"]
    cluster = (capacity.get("memory_mb", 0), capacity.get("vcores", 0))
    facts = core.views.queue_containers()
    children: dict[str | None, list] = {}
    for r in rows:
        children.setdefault(r.parent, []).append(r)

    def subtree(name: str, key: str):
        if name in facts:
            yield facts[name][key]
        for c in children.get(name, ()):
            yield from subtree(c.name, key)

    def queue(r) -> dict:
        kids = sorted(children.get(r.name, ()), key=lambda c: c.name)
        leaf = not kids and r.parent is not None and not r.is_parent
        used = _amount(r.usage)
        am = [sum(x) for x in zip((0.0, 0.0), *subtree(r.name, "am"))]
        top = r.max
        n = {"type": "fairSchedulerLeafQueueInfo"} if leaf else {}
        n.update({
            "maxApps": UNLIMITED_APPS if r.max_running_apps is None else r.max_running_apps,
            "minResources": _res(*_amount(r.min)),
            "maxResources": _res(*cluster) if top is None else _res(
                min(top.memory_mb, cluster[0]), min(top.vcores, cluster[1])),
            "usedResources": _res(*used),
            "amUsedResources": _res(*am),
            "amMaxResources": _res(*_amount(r.am_max)),
            "demandResources": _res(*_amount(r.demand)),
            "steadyFairResources": _res(*_amount(r.steady)),
            "fairResources": _res(*_amount(r.fair)),
            "clusterResources": _res(*cluster),
            "reservedResources": _res(0, 0),  # Slotwise reserves nothing
            "maxContainerAllocation": _res(max_mb, max_vcores),
            "pendingContainers": sum(subtree(r.name, "pending")),
            "allocatedContainers": sum(subtree(r.name, "containers")),
            "reservedContainers": 0,
            "queueName": r.name,
            "schedulingPolicy": YARN_POLICY_NAMES.get(r.policy or "fair", r.policy),
            "preemptable": r.preemptable is not False,
        })
        if leaf:
            n["numPendingApps"] = max(0, r.apps - r.running_apps)
            n["numActiveApps"] = r.running_apps
        elif kids:  # YARN leaves it out when empty
            n["childQueues"] = {"queue": [queue(c) for c in kids]}
        return n

    root = next(r for r in rows if r.parent is None)
    return {"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": queue(root)}}}


def yarn_error(status: int, exception: str, message: str) -> JSONResponse:
    """YARN's shape of a REST error."""
    return JSONResponse({"RemoteException": {"exception": exception, "message": message,
                                             "javaClassName": "javax.ws.rs." + exception}}, status_code=status)


def _mb(mb: float, cluster_mb: float) -> str:
    """An amount of memory in MB and as a share of the cluster's."""
    mb = int(round(mb))
    return f"{mb} MB" + (f" ({100.0 * mb / cluster_mb:.1f}%)" if cluster_mb > 0 else "")


def fragment(service) -> str:
    """The RM scheduler page: the cluster (nodes, memory and vcores, in use,
    apps), then its queues: weight, min, steady fair, fair and max share of
    memory (in MB and of the cluster's), use, pending, apps."""
    cluster = service.cluster()
    capacity, usage = cluster["capacity"], cluster["usage"]
    cluster_mb = capacity.get("memory_mb", 0)
    rows = [r for r in service.core.queue_table() if not (r.name == RECOVERY_QUEUE and not r.apps)]
    apps = sum(r.apps for r in rows)  # a queue's own apps; running_apps counts its subtree's
    running = sum(r.running_apps for r in rows if r.parent is None)
    out = [f'<p id="cluster">Cluster: {cluster["nodes"]} nodes, {int(cluster_mb)} MB and '
           f'{int(capacity.get("vcores", 0))} vcores; in use {_mb(usage.get("memory_mb", 0), cluster_mb)} and '
           f'{int(round(usage.get("vcores", 0)))} vcores; apps: {running} running, {apps - running} pending.</p>',
           f"<p>Shares are of memory, in MB and as a share of the cluster's {int(cluster_mb)} MB: YARN's "
           "fair policy shares memory only (a DRF queue's vcores are in /ws/v1/cluster/scheduler). From "
           "slotwise serve's tree now.</p>",
           '<table id="queues"><thead><tr>' + "".join(f"<th>{h}</th>" for h in (
               "Queue", "Weight", "Min share", "Steady fair share", "Fair share", "Max share", "Used MB",
               "Used vcores", "Pending MB", "Apps running", "Apps pending")) + "</tr></thead><tbody>"]
    for r in sorted(rows, key=lambda r: r.name):
        used, demand = _amount(r.usage), _amount(r.demand)
        cells = [escape(r.name), f"{r.weight:g}", _mb(r.min.memory_mb, cluster_mb),
                 _mb(r.steady.memory_mb, cluster_mb), _mb(r.fair.memory_mb, cluster_mb),
                 "unlimited" if r.max is None or math.isinf(r.max.memory_mb)
                 else _mb(min(r.max.memory_mb, cluster_mb), cluster_mb),
                 int(round(used[0])), int(round(used[1])), int(round(max(0.0, demand[0] - used[0]))),
                 r.running_apps, max(0, r.apps - r.running_apps)]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _json_accepted(accept: str | None) -> bool:
    if not accept or not accept.strip():
        return True
    a = accept.lower()
    return "json" in a or "*/*" in a or "application/*" in a


def router(service) -> APIRouter:
    """The two routes the RM's shim forwards to (not in the OpenAPI: they are the RM's, not serve's API)."""
    r = APIRouter(include_in_schema=False)

    @r.get("/rm/ws/scheduler")
    def rm_scheduler_info(max_mb: float = Query(0, ge=0, le=MAX_AMOUNT),
                          max_vcores: float = Query(0, ge=0, le=MAX_AMOUNT),
                          accept: str | None = Header(default=None)):
        """YARN's GET /ws/v1/cluster/scheduler, as SchedulerInfoFilter forwards it."""
        if not _json_accepted(accept):
            return yarn_error(406, "NotAcceptableException", "Slotwise answers /ws/v1/cluster/scheduler in "
                                                             "JSON only: ask with Accept: application/json")
        return JSONResponse(scheduler_info(service, max_mb, max_vcores), headers={"Cache-Control": "no-cache"})

    @r.get("/rm/scheduler", response_class=HTMLResponse)
    def rm_scheduler_page():
        """The cluster and queues of the RM's /cluster/scheduler page, as SchedulerInfoFilter frames them."""
        return HTMLResponse(fragment(service))

    return r
