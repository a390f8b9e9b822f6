"""The ResourceManager's scheduler views as serve draws them
(python/slotwise/web/rm_scheduler.py; java-shim's SchedulerInfoFilter only
forwards them): YARN's GET /ws/v1/cluster/scheduler
in the FairScheduler's shape, its keys against the answer of a real YARN 3.5
FairScheduler recorded in tests/data (see the file for how), and the queues of
the cluster and queues of the RM's scheduler page. These were the JUnit SchedulerInfoFilterTest's when
Java drew them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from slotwise.admin import AdminToken, SchedulerService
from slotwise.serve import start_http
from slotwise.config.watcher import ConfigStatus
from slotwise.web.app import create_app
from support import key_paths, scheduler_queues
from test_core import call, make_core
from wiretools import app, container, node, req
from webtools import TOKEN, free_port

RECORDED = Path(__file__).resolve().parent / "data" / "fairscheduler-3.5.0-ws-scheduler.json"
ALLOC = """<allocations>
  <queue name="eng" type="parent"><schedulingPolicy>drf</schedulingPolicy>
    <queue name="web"><maxResources>100000 mb, 2 vcores</maxResources><maxRunningApps>2</maxRunningApps>
      <schedulingPolicy>fifo</schedulingPolicy></queue>
  </queue>
  <queue name="prod"><minResources>1024 mb, 1 vcores</minResources><allowPreemptionFrom>false</allowPreemptionFrom></queue>
  <queue name="users" type="parent"/>
</allocations>"""


@pytest.fixture
def rm():
    core = make_core(ALLOC)
    n = node("h1:1", "h1", "/r1", 8192, 16)
    apps = [app("application_1_0001", "root.prod", [req(1, 512, 1, 2)]),
            app("application_1_0002", "root.prod", [req(1, 512, 1, 1)]),
            app("application_1_0003", "root.prod", [req(1, 512, 1, 1)])]
    call(core, "update", full=True, nodes=[n], apps=apps,
         launched=[container("container_1_0001_01_000001", "application_1_0001", "h1:1", 512, 1, am=True)])
    call(core, "update")
    service = SchedulerService(core, ConfigStatus("a.xml"))
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN)), "127.0.0.1", port)
    yield f"http://127.0.0.1:{port}", core
    server.should_exit = True


def test_queues_are_fair_scheduler_queues_with_pythons_numbers(rm):
    base, core = rm
    r = httpx.get(base + "/rm/ws/scheduler?max_mb=4096&max_vcores=8")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    info = r.json()["scheduler"]["schedulerInfo"]
    assert info["type"] == "fairScheduler"
    root = info["rootQueue"]
    q = scheduler_queues(r.json())
    table = {row.name: row for row in core.queue_table()}
    assert root["queueName"] == "root" and "type" not in root  # YARN marks only leaves
    assert [c["queueName"] for c in root["childQueues"]["queue"]] == ["root.eng", "root.prod", "root.users"]
    eng, web, prod, users = q["root.eng"], q["root.eng.web"], q["root.prod"], q["root.users"]
    assert "type" not in eng and "numActiveApps" not in eng
    assert "type" not in users and "childQueues" not in users  # a declared parent with no children yet
    assert web["type"] == "fairSchedulerLeafQueueInfo" and "childQueues" not in web
    # Python's numbers, rounded to whole MB and vcores.
    assert prod["fairResources"]["memory"] == round(table["root.prod"].fair.memory_mb) > 0
    assert prod["steadyFairResources"]["memory"] == round(table["root.prod"].steady.memory_mb)
    assert prod["minResources"]["memory"] == 1024 and prod["minResources"]["vCores"] == 1
    assert prod["demandResources"]["memory"] == 512 + 4 * 512
    assert prod["usedResources"]["memory"] == 512
    assert prod["numActiveApps"] + prod["numPendingApps"] == 3
    assert prod["numActiveApps"] == table["root.prod"].running_apps
    # YARN's containers and AM usage, from Python's own view of them.
    assert prod["allocatedContainers"] == 1 and prod["pendingContainers"] == 4
    assert prod["amUsedResources"]["memory"] == 512 and root["amUsedResources"]["memory"] == 512
    assert abs(prod["amMaxResources"]["memory"] - 0.5 * prod["fairResources"]["memory"]) <= 1
    assert eng["amMaxResources"]["memory"] == 0
    assert prod["preemptable"] is False and eng["preemptable"] is True
    # The cluster's and the RM's largest container; no max: the cluster; a max over it: the cluster's.
    assert prod["clusterResources"]["memory"] == 8192
    assert prod["maxContainerAllocation"] == {**prod["maxContainerAllocation"], "memory": 4096, "vCores": 8}
    assert prod["maxResources"]["memory"] == 8192
    assert web["maxResources"]["memory"] == 8192 and web["maxResources"]["vCores"] == 2
    assert prod["maxApps"] == 2 ** 31 - 1 and web["maxApps"] == 2
    assert [root["schedulingPolicy"], eng["schedulingPolicy"], web["schedulingPolicy"],
            prod["schedulingPolicy"]] == ["fair", "DRF", "FIFO", "fair"]


def test_the_keys_are_those_of_a_real_fair_scheduler(rm):
    base, _ = rm
    ours = scheduler_queues(httpx.get(base + "/rm/ws/scheduler").json())
    recorded = json.loads(RECORDED.read_text())
    yarn = scheduler_queues(recorded["answer"])
    for name in ("root", "root.eng", "root.eng.web", "root.prod"):
        assert key_paths(ours[name]) == key_paths(yarn[name]), name


def test_json_only_in_yarns_error_shape_and_the_callers_figures_are_bounded(rm):
    base, _ = rm
    r = httpx.get(base + "/rm/ws/scheduler", headers={"Accept": "application/xml"})
    assert r.status_code == 406
    e = r.json()["RemoteException"]
    assert set(e) == {"exception", "message", "javaClassName"} and "JSON only" in e["message"]
    assert e["javaClassName"].endswith("NotAcceptableException")
    assert httpx.get(base + "/rm/ws/scheduler", headers={"Accept": "*/*"}).status_code == 200
    assert httpx.get(base + "/rm/ws/scheduler?max_mb=-1").status_code == 422
    assert httpx.get(base + "/rm/ws/scheduler?max_mb=1e300").status_code == 422


def test_the_page_lists_the_queues_with_shares_in_mb_and_of_the_cluster(rm):
    base, _ = rm
    r = httpx.get(base + "/rm/scheduler")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    head = re.findall(r"<th>(.*?)</th>", r.text)
    assert head[:6] == ["Queue", "Weight", "Min share", "Steady fair share", "Fair share", "Max share"]
    row = re.search(r"<tr><td>root\.prod</td>(.*?)</tr>", r.text).group(1)
    cells = dict(zip(head[1:], re.findall(r"<td>(.*?)</td>", row)))
    for share in ("Steady fair share", "Fair share", "Min share"):
        assert re.fullmatch(r"\d+ MB \(\d+\.\d%\)", cells[share]), cells
    assert cells["Min share"] == "1024 MB (12.5%)" and cells["Max share"] == "unlimited"
    assert cells["Used MB"] == "512" and cells["Pending MB"] == "2048" and cells["Apps running"] != ""
    assert "root.default" not in r.text  # only the queues Python has


def test_the_page_says_the_cluster_as_the_rms_own_page_did(rm):
    """The cluster line that replaced YARN's cluster metrics on the RM's page
    (the shim no longer draws a YARN page around serve's queues)."""
    base, _ = rm
    text = httpx.get(base + "/rm/scheduler").text
    line = re.search(r'<p id="cluster">(.*?)</p>', text).group(1)
    assert line == "Cluster: 1 nodes, 8192 MB and 16 vcores; in use 512 MB (6.2%) and 1 vcores; " \
                   "apps: 3 running, 0 pending.", line
