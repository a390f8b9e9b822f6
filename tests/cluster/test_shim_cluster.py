"""The whole path on a real cluster: YARN's ResourceManager with the Slotwise
shim, two NodeManagers, real MapReduce jobs, and ``slotwise serve`` as its
own process making the decisions."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import skip_without_tools
from support import CLUSTER_START_TIMEOUT, key_paths, scheduler_queues
from slotwise.localcluster import SHIM_SCHEDULER, LocalCluster
from slotwise.localcluster.ports import free_ports

pytestmark = pytest.mark.cluster

ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
  <queue name="prod"><weight>2</weight></queue>
  <queue name="research"/>
  <queue name="limited"><maxRunningApps>1</maxRunningApps></queue>
  <queue name="other"/>
  <queue name="sla">
    <minResources>2048 mb, 2 vcores</minResources>
    <minSharePreemptionTimeout>5</minSharePreemptionTimeout>
  </queue>
  <queue name="eng" type="parent"><queue name="web"/></queue>
  <queue name="jobs"><schedulingPolicy>hopper</schedulingPolicy></queue>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="default" queue="research"/>
  </queuePlacementPolicy>
</allocations>
"""


class Serve:
    """``slotwise serve`` as a separate process, as operators run it."""

    def __init__(self, cluster: LocalCluster, allocations: Path, event_log: Path) -> None:
        self.cluster = cluster
        self.allocations = allocations
        self.event_log = event_log
        self.proc: subprocess.Popen | None = None
        self.http_port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.admin_token_file = event_log.with_name("admin.token")

    def spawn(self, *extra: str, http_port: int | None = None) -> subprocess.Popen:
        info = self.cluster.gateway_info_file
        return subprocess.Popen(
            [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(self.allocations),
             "--event-log", str(self.event_log), "--record", "--gateway-info", str(info),
             "--http", f"127.0.0.1:{http_port or self.http_port}", "--admin-token-file", str(self.admin_token_file),
             "--token-file", str(info.with_name("gateway.token")), *extra],
            stdout=open(self.event_log.with_suffix(".out"), "a"), stderr=subprocess.STDOUT)

    def start(self, timeout: float = 60) -> float:
        """Start and wait until registered and resynced and its API answers;
        returns the seconds from spawning the process to its registration."""
        mark = len(self.events())
        started = time.time()
        self.proc = self.spawn()
        registered = self.wait_for(lambda e: e["event"] == "register" and e.get("pid") == self.proc.pid,
                                   timeout, since=mark)
        self.wait_for(lambda e: e["event"] == "resync", timeout, since=mark)
        self.wait_http(timeout)  # on a loaded machine the API came up 20 s after the registration
        return registered["ts"] - started

    def wait_http(self, timeout: float) -> None:
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/status", timeout=10):
                    return
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise AssertionError(f"slotwise serve's API at {self.url} did not answer in {timeout} s")
                if self.proc.poll() is not None:
                    raise AssertionError(f"slotwise serve exited ({self.proc.returncode}); "
                                         f"see {self.event_log.with_suffix('.out')}")
                time.sleep(0.2)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def signal(self, sig: int) -> int:
        """Send a signal and wait for the process to end; its exit code."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            return self.proc.wait(30)
        return self.proc.returncode if self.proc else 0

    def ensure_running(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def events(self) -> list[dict]:
        if not self.event_log.exists():
            return []
        return [json.loads(line) for line in self.event_log.read_text().splitlines() if line.strip()]

    def wait_for(self, pred, timeout: float, since: int = 0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.events()[since:]:
                if pred(e):
                    return e
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"slotwise serve exited ({self.proc.returncode}); "
                                     f"see {self.event_log.with_suffix('.out')}")
            time.sleep(0.2)
        raise AssertionError(f"no matching event within {timeout} s in {self.event_log}")


#: The shim's deadline for Python's answer, its socket read timeout, and a holder's lease.
CALL_DEADLINE_MS = 10_000
READ_TIMEOUT_MS = 30_000
LEASE_MS = 20_000


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    skip_without_tools()
    base = tmp_path_factory.mktemp("shim")
    allocations = base / "allocations.xml"
    allocations.write_text(ALLOCATIONS)
    # A generous deadline: this 2-core machine also runs every job JVM (2 s
    # was missed every few seconds on a loaded one), and a busy Python is not
    # cut off as a hung one. A stopped or killed serve still fails at once.
    cluster = LocalCluster(base / "cluster", nodes=2, scheduler=SHIM_SCHEDULER, start_timeout=CLUSTER_START_TIMEOUT,
                           conf={"slotwise.policy.timeout-ms": str(CALL_DEADLINE_MS),
                                 "slotwise.policy.read-timeout-ms": str(READ_TIMEOUT_MS),
                                 "slotwise.policy.lease-ms": str(LEASE_MS),
                                 "yarn.cluster.max-application-priority": "10",
                                 # Off by default, as in Hadoop; the shim tells Python at registration.
                                 "yarn.scheduler.fair.preemption": "true"})
    serve = Serve(cluster, allocations, base / "events.jsonl")
    try:
        cluster.up()
        serve.start()
        yield cluster, serve
    finally:
        serve.stop()
        cluster.down()


def gateway_status(cluster) -> dict:
    from slotwise.bridge.server import gateway_status as read

    info = cluster.gateway_info_file
    return read(str(info), str(info.with_name("gateway.token")))


def after(events: list[dict], t: float) -> list[dict]:
    return [e for e in events if e["ts"] >= t]


def run_async(cluster, *args, **kw):
    """Submit in a thread; returns (thread, holder) with holder["result"]."""
    holder = {}
    t = threading.Thread(target=lambda: holder.setdefault("result", cluster.submit(*args, **kw)), daemon=True)
    t.start()
    return t, holder


def app_ids_in(cluster, queue: str) -> list[str]:
    return [a["id"] for a in cluster.rest.apps() if a["queue"] == queue]


def wait_running_app(cluster, queue: str, timeout: float = 600) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for a in cluster.rest.apps():
            if a["queue"] == queue and a["state"] == "RUNNING":
                return a["id"]
        time.sleep(0.5)
    raise AssertionError(f"no running app in {queue} within {timeout} s")


def test_jobs_in_two_queues_are_scheduled_by_python(shim):
    cluster, serve = shim
    mark = len(serve.events())
    t1, r1 = run_async(cluster, "pi", ["2", "10"], queue="prod")
    t2, r2 = run_async(cluster, "sleep", ["-m", "2", "-r", "1", "-mt", "500", "-rt", "500"], queue="research")
    t1.join(900)
    t2.join(900)
    pi, sleep = r1["result"], r2["result"]
    assert pi.succeeded, pi.log
    assert sleep.succeeded, sleep.log
    assert pi.queue == "root.prod" and sleep.queue == "root.research"
    events = serve.events()[mark:]
    for result, queue in ((pi, "root.prod"), (sleep, "root.research")):
        mine = [e for e in events if e["event"] == "assign" and e["app"] == result.app_id]
        # The AM, two maps and one reduce: every container came from Python.
        assert len(mine) >= 4, mine
        assert {e["queue"] for e in mine} == {queue}
        assert sum(1 for e in mine if e["am"]) >= 1
        assert all(e["locality"] in ("node_local", "rack_local", "off_switch") for e in mine)
    # Python decided every heartbeat in the window (the episode before it registered is older).
    started = events[0]["ts"] if events else time.time()
    assert not [e for e in events if e["event"] == "fallback" and e["ended"] >= started]
    # The RM said how each ended when it removed it (apps_finished): explain tells it.
    import httpx

    for result in (pi, sleep):
        deadline = time.time() + 120
        while True:
            out = httpx.get(f"{serve.url}/api/v1/apps/{result.app_id}/explain", timeout=30).json()
            if out.get("state") == "finished" or time.time() > deadline:
                break
            time.sleep(0.5)
        assert out["state"] == "finished" and out["outcome"]["final_state"] == "SUCCEEDED", out
        assert out["outcome"]["message"].startswith("finished SUCCEEDED at "), out["outcome"]


def test_the_recorded_event_log_replays_to_the_same_decisions(shim):
    """The contract between the live bridge and the simulator: the messages
    ``slotwise serve --record`` logged from a real ResourceManager, fed to a
    fresh engine on a simulated clock, give the very decisions made live."""
    from slotwise.sim.replay import replay

    cluster, serve = shim
    lines = serve.event_log.read_text().splitlines()
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # serve may be mid-line
            break
    # Stop before the last call: its answer may not be in the log yet.
    last_input = max(i for i, e in enumerate(events) if e["event"] == "input")
    events = events[:last_input]
    result = replay(events)  # the recording carries the allocation file itself
    assert result.calls > 20
    assert len(result.recorded_assignments) >= 8  # the first test's two jobs at least
    assert result.matches, result.first_difference()


def test_gateway_refuses_missing_or_wrong_token(shim):
    from py4j.java_gateway import GatewayParameters, JavaGateway

    cluster, _ = shim
    port = json.loads(cluster.gateway_info_file.read_text())["port"]
    token_file = cluster.gateway_info_file.with_name("gateway.token")
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    for token in (None, "0" * 64):
        gw = JavaGateway(gateway_parameters=GatewayParameters(address="127.0.0.1", port=port, auth_token=token,
                                                              read_timeout=5))
        try:
            with pytest.raises(Exception):
                gw.entry_point.status("{}")
        finally:
            gw.close()
    good = JavaGateway(gateway_parameters=GatewayParameters(address="127.0.0.1", port=port,
                                                            auth_token=token_file.read_text().strip()))
    try:
        assert "heartbeats" in json.loads(good.entry_point.status("{}"))
    finally:
        good.close()


def test_queue_with_max_running_apps_one_holds_the_second_job(shim):
    cluster, serve = shim
    mark = len(serve.events())
    jobs = [run_async(cluster, "sleep", ["-m", "1", "-r", "0", "-mt", "3000"], queue="limited") for _ in range(2)]
    for t, _ in jobs:
        t.join(900)
    results = [h["result"] for _, h in jobs]
    assert all(r.succeeded for r in results), [r.log for r in results]
    events = serve.events()[mark:]
    first_assign = {r.app_id: min(e["ts"] for e in events if e["event"] == "assign" and e["app"] == r.app_id)
                    for r in results}
    first, second = sorted(results, key=lambda r: first_assign[r.app_id])
    finished = cluster.rest.app(first.app_id)["finishedTime"] / 1000.0
    # Not one container (not even its AM) for the second job before the first ended.
    assert first_assign[second.app_id] >= finished - 0.5


def test_a_waiting_apps_forecast_holds_its_real_start(shim):
    """Issue 41: an app waiting behind a queue's running-app limit is given
    a start by the forecast, and its real start (Python's first container
    for it) falls in the forecast's range (widened by a heartbeat and an
    update pass: the play decides on its own pass, the live one on the RM's)."""
    import httpx

    cluster, serve = shim
    args = ["-m", "1", "-r", "0", "-mt", "3000"]
    # A first run of the same job teaches what it does: its AM, one map of about 3 s, its AM's end.
    assert cluster.submit("sleep", args, queue="limited", user="forecaster").succeeded
    t1, r1 = run_async(cluster, "sleep", args, queue="limited", user="forecaster")
    running = wait_running_app(cluster, "root.limited")
    t2, r2 = run_async(cluster, "sleep", args, queue="limited", user="forecaster")
    said = None
    deadline = time.monotonic() + 300
    while said is None and time.monotonic() < deadline and t2.is_alive():
        for row in httpx.get(f"{serve.url}/api/v1/forecasts", timeout=30).json()["apps"]:
            waiting = row["app"] != running and not row["started"] and row["start_in_s"] is not None
            if waiting and row["app"] in app_ids_in(cluster, "root.limited"):
                said = row
        time.sleep(0.5)
    t1.join(900)
    t2.join(900)
    assert r1["result"].succeeded and r2["result"].succeeded
    assert said is not None, "no forecast gave the waiting app a start"
    assert said["app"] == r2["result"].app_id
    shift = said["made_at"] - said["at"]  # engine time (monotonic) to the wall clock
    real = min(e["ts"] for e in serve.events() if e["event"] == "assign" and e["app"] == said["app"])
    low, high = said["at"] + shift + said["start_in_low_s"], said["at"] + shift + said["start_in_high_s"]
    assert low - 1.5 <= real <= high + 1.5, (said, real - said["at"] - shift)


def test_movetoqueue_changes_the_queue_in_python(shim):
    cluster, serve = shim
    mark = len(serve.events())
    t, holder = run_async(cluster, "sleep", ["-m", "2", "-r", "1", "-mt", "8000", "-rt", "500"], queue="research")
    app_id = wait_running_app(cluster, "root.research")
    # As YARN: no move to a queue that does not exist (no create rule here) or to a parent.
    for target, why in (("root.nosuch", "no queue root.nosuch"), ("root.eng", "root.eng is a parent queue")):
        refused = cluster.yarn(["application", "-movetoqueue", app_id, "-queue", target])
        assert refused.returncode != 0 and why in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert cluster.rest.app(app_id)["queue"] == "root.research"
    r = cluster.yarn(["application", "-movetoqueue", app_id, "-queue", "root.other"])
    assert r.returncode == 0, r.stdout + r.stderr
    serve.wait_for(lambda e: e["event"] == "move" and e["app"] == app_id and e["queue"] == "root.other", 30,
                   since=mark)
    t.join(900)
    result = holder["result"]
    assert result.succeeded, result.log
    assert cluster.rest.app(app_id)["queue"] == "root.other"
    later = [e for e in serve.events()[mark:] if e["event"] == "assign" and e["app"] == app_id]
    assert later[-1]["queue"] == "root.other"  # the reduce, placed after the move


def test_move_from_the_rest_api_moves_the_app_in_the_resourcemanager(shim):
    """The admin move goes through the RM's own path, so YARN and Python agree."""
    import httpx

    cluster, serve = shim
    mark = len(serve.events())
    assert httpx.get(f"{serve.url}/api/v1/config").json()["resource_manager_connected"] is True
    t, holder = run_async(cluster, "sleep", ["-m", "2", "-r", "1", "-mt", "8000", "-rt", "500"], queue="research")
    app_id = wait_running_app(cluster, "root.research")
    jobs = {j["id"]: j for j in httpx.get(f"{serve.url}/api/v1/apps").json()}
    assert jobs[app_id]["queue"] == "root.research"
    refused = httpx.post(f"{serve.url}/api/v1/apps/{app_id}/queue", json={"queue": "other"})
    assert refused.status_code == 401
    token = serve.admin_token_file.read_text().strip()
    r = httpx.post(f"{serve.url}/api/v1/apps/{app_id}/queue", json={"queue": "other"},
                   headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["queue"] == "root.other"
    assert cluster.rest.app(app_id)["queue"] == "root.other"
    serve.wait_for(lambda e: e["event"] == "move" and e["app"] == app_id and e["queue"] == "root.other", 30,
                   since=mark)
    t.join(900)
    assert holder["result"].succeeded, holder["result"].log
    later = [e for e in serve.events()[mark:] if e["event"] == "assign" and e["app"] == app_id]
    assert later[-1]["queue"] == "root.other"


def test_queue_status_shows_python_queues(shim):
    cluster, _ = shim
    r = cluster.yarn(["queue", "-status", "root.prod"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "root.prod" in r.stdout
    # The limits are Python's: maxRunningApps 1 shows as YARN's "Maximum Parallel Apps".
    deadline = time.monotonic() + 20  # the queue table comes with Python's next update
    while True:
        limited = cluster.yarn(["queue", "-status", "root.limited"])
        if re.search(r"Maximum Parallel Apps\s*:\s*1\b", limited.stdout) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert re.search(r"Maximum Parallel Apps\s*:\s*1\b", limited.stdout), limited.stdout + limited.stderr


def test_resourcemanager_web_ui_still_loads(shim):
    import urllib.request

    cluster, _ = shim
    base = cluster.state.rm_web.rstrip("/")
    for page in ("/cluster", "/cluster/apps", "/cluster/scheduler"):
        with urllib.request.urlopen(base + page, timeout=60) as r:
            assert r.status == 200
            body = r.read().decode("utf-8", "replace")
    assert "root.prod" in body  # the scheduler page lists Python's queues
    title = re.search(r"<title>\s*(.*?)\s*</title>", body, re.S)
    assert title and title.group(1) == "Slotwise Scheduler", title and title.group(0)
    assert "root.default" not in body  # only real queues


def test_the_scheduler_page_has_no_script_error_in_chromium_and_shows_shares_in_one_unit(shim):
    """Issue 29: RmView set up a table over appsTableData, which this page
    never wrote ("appsTableData is not defined" in the console); the fair
    share read in % beside the steady fair share in MB; the two fallback
    counts stood side by side with no word on how they relate."""
    from test_web_ui import CHROMIUM, playwright_or_skip

    sync_api = playwright_or_skip("the RM scheduler page in chromium")
    cluster, _ = shim
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                     "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(cluster.state.rm_web.rstrip("/") + "/cluster/scheduler", wait_until="load", timeout=120_000)
            page.wait_for_load_state("networkidle", timeout=60_000)
            assert errors == []
            assert page.locator("#counts td#fifo-heartbeats").inner_text().strip().isdigit()
            meaning = page.locator("#counts tr", has=page.locator("td#failures")).inner_text()
            assert "a failed update or placement none, so the two counts differ" in meaning
            head = [c.strip() for c in page.locator("#queues thead th").all_inner_texts()]
            cells = page.locator("#queues tbody tr", has_text="root.prod").first.locator("td").all_inner_texts()
            row = dict(zip(head, (c.strip() for c in cells)))
            for share in ("Steady fair share", "Fair share"):
                assert re.fullmatch(r"\d+ MB \(\d+\.\d%\)", row[share]), row
        finally:
            browser.close()


# ------------------------------------------ YARN's REST view of the scheduler
#: The answer of a real YARN 3.5.0 FairScheduler RM to GET /ws/v1/cluster/scheduler,
#: with this module's ALLOCATIONS; the file says how it was recorded.
FAIR_SCHEDULER_ANSWER = Path(__file__).resolve().parents[1] / "data" / "fairscheduler-3.5.0-ws-scheduler.json"


def scheduler_rest(cluster, accept: str | None = None):
    import httpx

    return httpx.get(cluster.state.rm_web.rstrip("/") + "/ws/v1/cluster/scheduler",
                     headers={"Accept": accept} if accept else {}, timeout=60)


def test_rm_rest_scheduler_answers_as_a_fair_scheduler_with_pythons_queues_shares_and_job_names(shim):
    """GET /ws/v1/cluster/scheduler, which YARN answers only for its own
    schedulers, answers in the FairScheduler's shape: the allocation file's
    queues as childQueues, Python's fair shares, YARN's usage. The key sets of
    root, a parent and a leaf are those of a real 3.5.0 FairScheduler RM, as
    recorded in tests/data/fairscheduler-3.5.0-ws-scheduler.json by
    ``slotwise cluster up --scheduler fair --nodes 1 --conf
    yarn.scheduler.fair.allocation.file=ALLOC.xml`` (ALLOC.xml: this module's
    ALLOCATIONS without the jobs queue, whose hopper policy YARN lacks) and ``curl -s RM-WEB/ws/v1/cluster/scheduler``. Python's job
    rows carry the name the job was submitted with."""
    import httpx

    cluster, serve = shim
    serve.ensure_running()
    t, holder = run_async(cluster, "sleep", ["-m", "2", "-r", "1", "-mt", "6000", "-rt", "500"], queue="prod")
    app_id = wait_running_app(cluster, "root.prod")
    deadline = time.monotonic() + 30
    while True:  # the shim holds Python's table of its last update (every 500 ms): retry until both agree
        r = scheduler_rest(cluster)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json"), r.text
        rest = scheduler_queues(r.json())
        queues = {p["queue"]: p for p in httpx.get(f"{serve.url}/api/v1/queues", timeout=60).json()}
        differ = {name: (rest[name]["fairResources"], p["fair_share"], rest[name]["steadyFairResources"],
                         p["steady_fair_share"])
                  for name, p in queues.items()
                  if name not in rest
                  or abs(rest[name]["fairResources"]["memory"] - p["fair_share"]["memory_mb"]) > 0.5
                  or abs(rest[name]["fairResources"]["vCores"] - p["fair_share"]["vcores"]) > 0.5
                  or abs(rest[name]["steadyFairResources"]["memory"] - p["steady_fair_share"]["memory_mb"]) > 0.5}
        if (not differ and rest["root.prod"]["usedResources"]["memory"] > 0) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not differ, differ
    info = r.json()["scheduler"]["schedulerInfo"]
    assert info["type"] == "fairScheduler"
    root = info["rootQueue"]
    assert {q["queueName"] for q in root["childQueues"]["queue"]} >= {
        "root.prod", "root.research", "root.limited", "root.other", "root.sla", "root.eng"}
    prod, eng, sla = rest["root.prod"], rest["root.eng"], rest["root.sla"]
    assert prod["fairResources"]["memory"] > 0  # the only queue with demand
    assert prod["type"] == "fairSchedulerLeafQueueInfo" and "type" not in eng and "type" not in root
    assert [q["queueName"] for q in eng["childQueues"]["queue"]] == ["root.eng.web"]
    assert rest["root.limited"]["maxApps"] == 1 and prod["maxApps"] == 2 ** 31 - 1
    assert sla["minResources"]["memory"] == 2048 and sla["minResources"]["vCores"] == 2
    assert prod["numActiveApps"] == 1 and prod["amUsedResources"]["memory"] == 512  # its AM, as YARN counts it
    # maxAMShare (0.5, the default) x its fair share, as YARN's amMaxResources.
    assert abs(prod["amMaxResources"]["memory"] - 0.5 * prod["fairResources"]["memory"]) <= 1
    assert root["clusterResources"]["memory"] == cluster.rest.metrics()["totalMB"]
    # The keys of a real FairScheduler's answer, nested ones included.
    recorded = json.loads(FAIR_SCHEDULER_ANSWER.read_text())
    assert recorded["hadoop_version"] == cluster.state.hadoop_version, \
        f"re-record {FAIR_SCHEDULER_ANSWER.name} for Hadoop {cluster.state.hadoop_version} (see this docstring)"
    yarn = scheduler_queues(recorded["answer"])
    assert list(recorded["answer"]["scheduler"]["schedulerInfo"]) == list(info)
    for name in ("root", "root.eng", "root.eng.web", "root.prod"):
        assert key_paths(rest[name]) == key_paths(yarn[name]), name
    # JSON only, as YARN says it; the rest of YARN's REST API is YARN's.
    xml = scheduler_rest(cluster, accept="application/xml")
    assert xml.status_code == 406 and "JSON only" in xml.json()["RemoteException"]["message"]
    assert httpx.get(cluster.state.rm_web.rstrip("/") + "/ws/v1/cluster/info", timeout=60).json()["clusterInfo"]
    # YARN's own simple authentication (user.name=) still runs in front: it signs the caller in with a cookie.
    who = httpx.get(cluster.state.rm_web.rstrip("/") + "/ws/v1/cluster/info?user.name=alice", timeout=60)
    assert "hadoop.auth=" in who.headers.get("set-cookie", "") and "u=alice" in who.headers["set-cookie"]
    # The job's name, from the RM to Python's job rows.
    jobs = {j["id"]: j for j in httpx.get(f"{serve.url}/api/v1/apps", timeout=60).json()}
    assert jobs[app_id]["name"] == cluster.rest.app(app_id)["name"] == "Sleep job"
    t.join(900)
    assert holder["result"].succeeded, holder["result"].log


def test_rm_scheduler_views_say_why_while_python_is_away(shim):
    """The RM's scheduler views are drawn by serve (web/rm_scheduler.py); the
    shim only forwards them. Without Python the RM's FIFO schedules, the REST
    view answers 503 in YARN's error shape saying why, and the page still
    shows the link's part and why the queues are missing."""
    import urllib.request

    cluster, serve = shim
    serve.ensure_running()
    serve.signal(signal.SIGTERM)
    try:
        t, holder = run_async(cluster, "sleep", ["-m", "1", "-r", "0", "-mt", "5000"], queue="research")
        wait_running_app(cluster, "root.research")
        assert gateway_status(cluster)["registered"] is False
        r = scheduler_rest(cluster)
        assert r.status_code == 503 and r.headers["content-type"].startswith("application/json"), r.text
        e = r.json()["RemoteException"]
        assert e["exception"] == "ServiceUnavailableException" and "No policy server is registered" in e["message"]
        with urllib.request.urlopen(cluster.state.rm_web.rstrip("/") + "/cluster/scheduler", timeout=60) as page:
            body = page.read().decode("utf-8", "replace")
        assert 'id="fifo-heartbeats"' in body and "No policy server is registered" in body, body
        t.join(900)
        assert holder["result"].succeeded, holder["result"].log
    finally:
        serve.start()


# ------------------------------------------------ Python stops, in every way
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_serve_stopped_mid_job_the_job_completes_and_a_new_serve_decides_again(shim, how):
    cluster, serve = shim
    serve.ensure_running()
    mark = time.time()
    t, holder = run_async(cluster, "sleep", ["-m", "4", "-r", "1", "-mt", "3000", "-rt", "500"], queue="prod")
    app_id = wait_running_app(cluster, "root.prod")
    serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == app_id, 60)
    old_pid = serve.proc.pid
    code = serve.signal(getattr(signal, how))
    assert code == (0 if how != "SIGKILL" else -signal.SIGKILL), code
    stopped = time.time()
    own = [e for e in after(serve.events(), mark) if e["event"] == "unregister"]
    assert bool(own) == (how != "SIGKILL")  # a clean exit says goodbye
    time.sleep(3)
    status = gateway_status(cluster)  # the RM's gateway is still up, and schedules without Python
    assert status["registered"] is False and status["in_fallback"] is True, status
    assert status.get("holder") is None
    seconds = serve.start()
    print(f"{how}: a new serve registered {seconds:.2f} s after it was started")
    assert serve.proc.pid != old_pid
    t.join(900)
    assert holder["result"].succeeded, holder["result"].log
    events = after(serve.events(), stopped)
    episodes = [e for e in events if e["event"] == "fallback"]
    assert episodes and sum(e["count"] for e in episodes) > 0, events[-5:]
    # The new Python decides again: a new job's containers all come from it.
    again = cluster.submit("pi", ["1", "10"], queue="prod")
    assert again.succeeded, again.log
    assert [e for e in serve.events() if e["event"] == "assign" and e["app"] == again.app_id]


def test_a_listener_on_the_dead_callback_port_gets_no_token_that_works(shim):
    import socket
    from py4j.java_gateway import GatewayParameters, JavaGateway

    cluster, serve = shim
    serve.ensure_running()
    reg = [e for e in serve.events() if e["event"] == "register" and e.get("pid") == serve.proc.pid][-1]
    port = reg["callback_port"]
    t, holder = run_async(cluster, "sleep", ["-m", "2", "-r", "0", "-mt", "4000"], queue="prod")
    wait_running_app(cluster, "root.prod")
    serve.kill()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))  # what another local process could do
    listener.listen(16)
    listener.settimeout(0.5)
    received = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        conn.settimeout(2)
        try:
            data = conn.recv(4096).decode(errors="replace")
        except OSError:
            data = ""
        received.append(data)
        conn.close()  # answer nothing, as a thief would
    listener.close()
    t.join(900)
    assert holder["result"].succeeded, holder["result"].log
    gateway_token = cluster.gateway_info_file.with_name("gateway.token").read_text().strip()
    assert len(received) <= 2, f"the shim kept calling a dead port: {len(received)} connections"
    for data in received:
        lines = data.split("\n")
        token = lines[1] if len(lines) > 1 else ""
        assert token != gateway_token
        # Whatever it got, it does not open the RM's gateway.
        gw = JavaGateway(gateway_parameters=GatewayParameters(
            address="127.0.0.1", port=json.loads(cluster.gateway_info_file.read_text())["port"],
            auth_token=token or "x", read_timeout=5))
        try:
            with pytest.raises(Exception):
                gw.entry_point.status("{}")
        finally:
            gw.close()
    serve.start()


def python_places_a_job(cluster, serve) -> None:
    done = cluster.submit("pi", ["1", "10"], queue="prod")
    assert done.succeeded, done.log
    assert [e for e in serve.events() if e["event"] == "assign" and e["app"] == done.app_id]


def refused_second_serve(serve) -> str:
    """Start a second serve (no --takeover), which must be refused (exit 3); the servers' output."""
    second = serve.spawn(http_port=free_ports(1)[0])
    try:
        assert second.wait(60) == 3
    finally:
        if second.poll() is None:
            second.kill()
    return serve.event_log.with_suffix(".out").read_text()


def test_a_second_serve_is_refused_unless_it_takes_over(shim, tmp_path):
    cluster, serve = shim
    serve.ensure_running()
    first = serve.proc
    out = refused_second_serve(serve)
    assert f"already has a live policy server: pid {first.pid}" in out
    assert first.poll() is None and gateway_status(cluster)["holder"]["pid"] == first.pid
    # On the same host and the same web port: the new server serves the port
    # once the old one, replaced, has let go of it (issue 29).
    third = serve.spawn("--takeover")
    try:
        serve.wait_for(lambda e: e["event"] == "register" and e.get("pid") == third.pid, 60)
        assert first.wait(30) == 3  # it learns it was replaced, and says by whom
        assert f"replaced by another policy server: slotwise serve pid {third.pid}" in \
            serve.event_log.with_suffix(".out").read_text()
        serve.proc = third
        serve.wait_http(120)  # the old server's port, now the new one's
        assert gateway_status(cluster)["holder"]["pid"] == third.pid and third.poll() is None
        python_places_a_job(cluster, serve)
    finally:
        third.send_signal(signal.SIGTERM)
        third.wait(30)
    serve.start()


@pytest.mark.parametrize("queue, recovered", [("root", "root.research"), ("root.eng", "root.research")])
def test_an_app_the_rm_accepted_where_no_job_can_be_is_moved_and_scheduled_by_python(shim, queue, recovered):
    cluster, serve = shim
    serve.ensure_running()
    serve.signal(signal.SIGTERM)  # Python away: the RM takes the queue the client asked for
    t, holder = run_async(cluster, "sleep", ["-m", "2", "-r", "1", "-mt", "3000", "-rt", "500"], queue=queue)
    deadline = time.monotonic() + 60
    app = None
    while time.monotonic() < deadline and app is None:
        app = next((a for a in cluster.rest.apps() if a["queue"] == queue and a["state"] != "FINISHED"), None)
        time.sleep(0.5)
    assert app is not None, f"no app accepted into {queue}"
    mark = time.time()
    serve.start()
    serve.wait_for(lambda e: e["event"] == "recover" and e["app"] == app["id"], 60)
    serve.wait_for(lambda e: e["event"] == "move" and e["app"] == app["id"] and e["queue"] == recovered, 60)
    t.join(900)
    result = holder["result"]
    assert result.succeeded, result.log
    assert cluster.rest.app(app["id"])["queue"] == recovered  # YARN agrees
    mine = [e for e in after(serve.events(), mark) if e["event"] == "assign" and e["app"] == app["id"]]
    assert mine and {e["queue"] for e in mine} == {recovered}


def test_a_starved_queue_with_a_min_share_gets_its_job_running_through_preemption(shim):
    cluster, serve = shim
    serve.ensure_running()
    mark = time.time()
    # research takes the whole cluster (AM + 15 maps of 512 MB on 2 x 4 GB) for minutes.
    t1, hog = run_async(cluster, "sleep", ["-m", "30", "-r", "0", "-mt", "120000"], queue="research")
    hog_id = wait_running_app(cluster, "root.research")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and cluster.rest.metrics().get("availableMB", 1) > 0:
        time.sleep(1)
    assert cluster.rest.metrics()["availableMB"] == 0, "the research job did not fill the cluster"
    import httpx

    usage = []  # root.sla's usage as Python sees it, sampled through serve's API

    def sample():
        while t2.is_alive():
            try:
                queues = httpx.get(f"{serve.url}/api/v1/queues", timeout=30).json()
                usage.append(next(p["usage"]["memory_mb"] for p in queues if p["queue"] == "root.sla"))
            except Exception:
                pass
            time.sleep(0.5)

    t2, sla = run_async(cluster, "sleep", ["-m", "2", "-r", "0", "-mt", "4000"], queue="sla")
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    sla_id = wait_running_app(cluster, "root.sla", timeout=600)
    t2.join(900)
    sampler.join(10)
    assert sla["result"].succeeded, sla["result"].log
    # Its whole demand (AM and two maps: 1,536 MB, under the 2,048 MB min share) ran at once.
    assert max(usage, default=0) >= 1536, usage
    events = after(serve.events(), mark)
    registered = [e for e in serve.events() if e["event"] == "register"][-1]
    assert (registered["preemption"], registered["preemption_from"]) == (True, "yarn.scheduler.fair.preemption")
    preempted = [e for e in events if e["event"] == "preempt"]
    assert preempted and {e["queue"] for e in preempted} == {"root.research"}
    assert {e["reason"] for e in preempted} <= {"min_share", "fair_share", "warned"}
    placed = [e for e in events if e["event"] == "assign" and e["app"] == sla_id]
    assert sum(1 for e in placed if e["am"]) >= 1 and len(placed) >= 3  # its AM and both maps
    assert not [e for e in events if e["event"] in ("divergence", "bad_message")]
    # Python never offered the RM room it did not have (killed containers hold theirs until the NM reports them).
    refused = [r for e in events if e["event"] == "input" for r in e["msg"].get("rejected", [])]
    assert not [r for r in refused if r["engine_id"].startswith(sla_id)], refused
    cluster.yarn(["application", "-kill", hog_id])
    t1.join(900)


def test_a_paused_serve_keeps_the_rm_falls_back_and_decides_again_when_resumed(shim):
    """A busy Python is not a dead one: paused past the call deadline (FIFO
    heartbeats) and past one socket read timeout, it keeps its registration;
    a second serve started within its lease is refused; resumed, it decides
    again without registering anew."""
    cluster, serve = shim
    serve.ensure_running()
    t, holder = run_async(cluster, "sleep", ["-m", "4", "-r", "1", "-mt", "3000", "-rt", "500"], queue="prod")
    wait_running_app(cluster, "root.prod")
    registrations = len([e for e in serve.events() if e["event"] == "register"])
    before = gateway_status(cluster)["fallback_heartbeats"]
    serve.proc.send_signal(signal.SIGSTOP)
    paused = time.monotonic()
    try:
        out = refused_second_serve(serve)
        assert f"already has a live policy server: pid {serve.proc.pid}" in out and "lease" in out
        deadline = time.monotonic() + CALL_DEADLINE_MS / 1000 + 60
        while gateway_status(cluster)["fallback_heartbeats"] <= before and time.monotonic() < deadline:
            time.sleep(1)
        assert gateway_status(cluster)["fallback_heartbeats"] > before, "the FIFO never stood in"
        time.sleep(max(0.0, READ_TIMEOUT_MS / 1000 + 3 - (time.monotonic() - paused)))
    finally:
        serve.proc.send_signal(signal.SIGCONT)
    t.join(900)
    assert holder["result"].succeeded, holder["result"].log
    again = cluster.submit("pi", ["1", "10"], queue="prod")
    assert again.succeeded, again.log
    assert [e for e in serve.events() if e["event"] == "assign" and e["app"] == again.app_id]
    assert len([e for e in serve.events() if e["event"] == "register"]) == registrations, "it was dropped"
    assert gateway_status(cluster)["holder"]["pid"] == serve.proc.pid


def test_a_serve_paused_past_its_lease_is_taken_over_without_takeover(shim):
    cluster, serve = shim
    serve.ensure_running()
    first = serve.proc
    first.send_signal(signal.SIGSTOP)
    second = None
    try:
        time.sleep(LEASE_MS / 1000 + 2)  # no status call renews its lease meanwhile
        second = serve.spawn(http_port=free_ports(1)[0])
        serve.wait_for(lambda e: e["event"] == "register" and e.get("pid") == second.pid, 60)
    finally:
        first.send_signal(signal.SIGCONT)
    try:
        assert first.wait(30) == 3  # resumed, it learns it was replaced
        python_places_a_job(cluster, serve)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(30)
    serve.start()


# ------------------------------------------------ a restarted ResourceManager
def rm_figures(cluster, queue: str) -> dict:
    """What TestWorkPreservingRMRestart compares across a restart, from the
    RM's REST API: the cluster's and the queue's allocations, each node's
    used and available resources and containers."""
    m = cluster.rest.metrics()
    q = scheduler_queues(scheduler_rest(cluster).json())[queue]
    return {"cluster": {k: m.get(k) for k in ("allocatedMB", "allocatedVirtualCores", "containersAllocated",
                                               "availableMB", "availableVirtualCores", "appsRunning")},
            "queue": {k: q.get(k) for k in ("usedResources", "numActiveApps", "numPendingApps")},
            "nodes": sorted((n["id"], n.get("usedMemoryMB"), n.get("availMemoryMB"), n.get("usedVirtualCores"),
                             n.get("availableVirtualCores"), n.get("numContainers")) for n in cluster.rest.nodes())}


def nm_running(cluster, app_id: str) -> int:
    """The app's containers the NodeManagers themselves run (the RM counts a
    container from its allocation, before the AM has it launched: one not
    yet launched is rightly lost when the RM restarts)."""
    import httpx

    n = 0
    for d in cluster.state.nodemanagers:
        got = httpx.get(f"http://127.0.0.1:{d.ports['webapp']}/ws/v1/node/containers", timeout=30).json()
        rows = (got.get("containers") or {}).get("container") or []
        n += sum(1 for c in rows if c.get("state") == "RUNNING" and app_id.replace("application_", "_") in c["id"])
    return n


def wait_steady(cluster, app_id: str, containers: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not (cluster.rest.app(app_id).get("runningContainers", 0) >= containers
               and nm_running(cluster, app_id) >= containers):
        assert time.monotonic() < deadline, f"{app_id} never ran {containers} containers on its NodeManagers"
        time.sleep(0.5)


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_a_restarted_rm_keeps_its_work_and_the_same_serve_decides_again(shim, kill):
    """Work-preserving RM restart: the maps keep running through it, the RM
    recovers its apps and containers and its figures match what they were;
    `serve`, never restarted, registers with the new RM, is sent what it
    recovered, agrees with it, and places the job's reduce."""
    cluster, serve = shim
    serve.ensure_running()
    pid = serve.proc.pid
    known = set(app_ids_in(cluster, "root.prod"))
    t, holder = run_async(cluster, "sleep", ["-m", "4", "-r", "1", "-mt", "60000", "-rt", "1000"], queue="prod")
    deadline = time.monotonic() + 600
    while not (mine := [a for a in app_ids_in(cluster, "root.prod") if a not in known]):
        assert time.monotonic() < deadline, "the job was never accepted"
        time.sleep(0.5)
    app_id = mine[0]
    try:
        _restart_and_check(cluster, serve, kill, app_id, t, holder, pid)
    finally:
        if t.is_alive():  # failed: leave no job behind for the next test
            cluster.yarn(["application", "-kill", app_id])
            t.join(300)


def _restart_and_check(cluster, serve, kill, app_id, t, holder, pid):
    import httpx

    wait_steady(cluster, app_id, 5)  # its AM and 4 maps of 60 s
    before = rm_figures(cluster, "root.prod")
    mark = time.time()
    took = cluster.restart_master(kill=kill)
    gateway_at = cluster.gateway_info_file.stat().st_mtime
    registered = serve.wait_for(lambda e: e["event"] == "register" and e["ts"] >= mark, 60)
    serve.wait_for(lambda e: e["event"] == "resync" and e["ts"] >= registered["ts"], 60)
    print(f"\nRM restart ({'SIGKILL' if kill else 'SIGTERM'}): every NodeManager back in {took:.1f} s; "
          f"serve registered {registered['ts'] - gateway_at:.2f} s after the new gateway file")
    # The NodeManagers are back; the RM recovers their containers as it handles their registrations.
    deadline = time.monotonic() + 120
    while (now := rm_figures(cluster, "root.prod")) != before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert now == before
    # Python registered at once (often before the NodeManagers were back): the
    # recovered containers reach it in its first full call or in the deltas after.

    def python_prod() -> float:
        rows = httpx.get(f"{serve.url}/api/v1/queues", timeout=30).json()
        return next(q for q in rows if q["queue"] == "root.prod")["usage"]["memory_mb"]

    deadline = time.monotonic() + 60
    while python_prod() != before["queue"]["usedResources"]["memory"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert python_prod() == before["queue"]["usedResources"]["memory"]
    t.join(900)
    assert holder["result"].succeeded, holder["result"].log
    assert serve.proc.pid == pid and serve.proc.poll() is None, "serve was never restarted"
    events = after(serve.events(), mark)
    assert [e for e in events if e["event"] == "assign" and e["app"] == app_id], "Python placed the reduce"
    assert not [e for e in events if e["event"] in ("divergence", "recover")]
    assert cluster.rest.app(app_id)["queue"] == "root.prod"


# ------------------------------------------------ Hopper's speculative copies
STRAGGLER_SRC = Path(__file__).resolve().parent / "java" / "StragglerJob.java"


def build_straggler_jar(state, out_dir: Path) -> str:
    """Compile the test's MapReduce job against the cluster's Hadoop jars."""
    import os

    classes = out_dir / "classes"
    classes.mkdir()
    javac = os.path.join(state.java_home, "bin", "javac")
    jar = os.path.join(state.java_home, "bin", "jar")
    subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", os.pathsep.join(state.classpath), str(STRAGGLER_SRC)],
                   check=True, capture_output=True, timeout=300)
    path = out_dir / "straggler.jar"
    subprocess.run([jar, "cfe", str(path), "StragglerJob", "-C", str(classes), "."], check=True, timeout=120)
    return str(path)


def counter(log: str, name: str) -> int | None:
    m = re.search(rf"\b{re.escape(name)}=(\d+)", log)
    return int(m.group(1)) if m else None


def test_speculative_attempts_go_through_hopper_and_jobs_finish(shim, tmp_path):
    """Hopper on the real cluster: MapReduce jobs with speculation on, in
    root.jobs (schedulingPolicy hopper). One job has a straggler; the
    MapReduce AM's speculator asks the RM for a speculative attempt (an
    ordinary map request), Python places it, the copy wins, and both jobs
    finish."""
    cluster, serve = shim
    serve.ensure_running()
    jar = build_straggler_jar(cluster.state, tmp_path)
    results = {}

    def run(name, program, args):
        results[name] = cluster.submit(program, args, queue="root.jobs", timeout=900)

    # A straggler job (6 maps of 3 s, the first attempt of map 0 takes 120 s)
    # beside a sleep job of 8 maps: both ask Hopper for containers.
    t_strag = threading.Thread(target=run, args=("straggler", jar, ["6", "3000", "120000"]))
    t_sleep = threading.Thread(target=run, args=("sleep", "sleep", ["-m", "8", "-r", "0", "-mt", "4000"]))
    started = time.time()
    t_strag.start()
    time.sleep(2)
    t_sleep.start()
    t_strag.join(900)
    t_sleep.join(900)
    strag, sleep = results["straggler"], results["sleep"]
    assert sleep.succeeded, sleep.log
    assert strag.succeeded, strag.log
    log = open(strag.log, encoding="utf-8", errors="replace").read()
    # MapReduce launched a seventh map attempt (the speculative one), and the
    # job ended before the straggler's 120 s would have let it: the copy won
    # (the loser's "Killed map tasks" counter is not always reported by the
    # time the job ends).
    assert counter(log, "Launched map tasks") == 7, log[-3000:]
    assert strag.seconds < 115, strag.seconds
    events = after(serve.events(), started)
    assigns = [e for e in events if e["event"] == "assign" and e.get("app") == strag.app_id]
    # The AM's container and all seven map attempts were Python's decisions, in root.jobs.
    assert len(assigns) >= 8, assigns
    assert all(e["queue"] == "root.jobs" for e in assigns)
    # No FIFO episode began once the jobs were in (one that began earlier may
    # be reported after).
    assert not [e for e in serve.events() if e["event"] == "fallback" and e["started"] > started]


# ---------------------------------------------- Dynamic Priority on YARN
DP_ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
  <queue name="market" type="parent">
    <schedulingPolicy>dynamic-priority</schedulingPolicy>
    <queue name="alice"/>
  </queue>
  <queue name="default"/>
</allocations>
"""


def test_yarn_rejects_a_job_from_a_user_the_acl_does_not_allow_and_runs_the_holders(shim, tmp_path):
    """A Dynamic Priority queue on YARN: a job from a user the ACL does not
    let spend the queue's budget is rejected with the reason, the holder's
    runs. On this module's cluster, with a serve of its own."""
    cluster, serve = shim
    allocations = tmp_path / "allocations.xml"
    allocations.write_text(DP_ALLOCATIONS)
    acl = tmp_path / "dp.acl"
    acl.write_text("alice user alice-secret-key-123\nops admin ops-secret-key-0123456789\n")
    acl.chmod(0o600)

    class YarnDpServe(Serve):
        def spawn(self, *extra, http_port=None):
            return super().spawn("--dp-acl", str(acl), "--dp-store", str(tmp_path / "m.sqlite"), *extra,
                                 http_port=http_port)

    serve.stop()
    dp = YarnDpServe(cluster, allocations, tmp_path / "events.jsonl")
    try:
        dp.start()
        refused = cluster.submit("pi", ["1", "10"], queue="root.market.alice", user="mallory", timeout=600)
        assert not refused.succeeded
        reason = "root.market.alice is a dynamic-priority queue and mallory may not spend its budget"
        client = open(refused.log, encoding="utf-8", errors="replace").read()
        assert "Rejected by the Slotwise policy: " + reason in client, client[-2000:]
        assert any(e["event"] == "reject" and e["user"] == "mallory" and reason in e["reason"]
                   for e in dp.events())
        ran = cluster.submit("pi", ["1", "10"], queue="root.market.alice", user="alice", timeout=600)
        assert ran.succeeded, ran.log
        assert any(e["event"] == "assign" and e["queue"] == "root.market.alice" for e in dp.events())
    finally:
        dp.stop()
        serve.start()


# -- the local cluster's own tools, on this module's cluster; the last test
# -- takes it down ----------------------------------------------------------

def rest(cluster, path):
    req = urllib.request.Request(cluster.state.rm_web + path, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


def cluster_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "slotwise.cli", "cluster", *args],
                          capture_output=True, text=True, timeout=900, **kw)


def test_both_nodemanagers_running_with_the_shim(shim):
    cluster, _ = shim
    nodes = rest(cluster, "/ws/v1/cluster/nodes")["nodes"]["node"]
    assert sorted(n["state"] for n in nodes) == ["RUNNING", "RUNNING"]
    assert {n["id"] for n in nodes} == {d.node_id for d in cluster.state.nodemanagers}
    assert all(n["totalResource"]["memory"] == 4096 for n in nodes)
    assert rest(cluster, "/ws/v1/cluster/info")["clusterInfo"]["state"] == "STARTED"
    assert cluster.state.scheduler == SHIM_SCHEDULER


def _listening() -> dict[int, str]:
    """Port to local address of every listening TCP socket (IPv4 and IPv6)."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            addr, port = fields[1].split(":")
            if len(addr) == 8:
                ip = ".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                ip = "::1" if addr == "0" * 24 + "01000000" else ("::" if set(addr) == {"0"} else addr)
            out[int(port, 16)] = ip
    return out


def test_daemon_ports_and_the_gateway_bind_to_loopback_only(shim):
    cluster, _ = shim
    listening = _listening()
    if not listening:
        pytest.skip("no /proc/net/tcp here")
    ports = [p for d in cluster.state.daemons for name, p in d.ports.items() if name != "shuffle"]
    assert len(ports) == 5 + 3 * 2
    ports.append(json.loads(cluster.gateway_info_file.read_text())["port"])
    for port in ports:
        assert listening.get(port) == "127.0.0.1", (port, listening.get(port))


def rule_line(rule: str) -> int:
    return next(i for i, line in enumerate(ALLOCATIONS.splitlines(), 1) if f'<rule name="{rule}"' in line)


def test_submit_cli_says_where_the_job_went_and_why_and_fails_for_a_failed_job(shim, tmp_path):
    cluster, serve = shim
    serve.ensure_running()
    where = ("--dir", str(cluster.dir), "--server", serve.url)
    # pi writes its scratch directory into the working directory, as `hadoop jar` would.
    ok = cluster_cli("submit", *where, "--queue", "research", "--user", "alice", "-q", "--", "pi", "1", "5",
                     cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    app = re.search(r"(application_\d+_\d+) SUCCEEDED", ok.stdout).group(1)
    assert ok.stdout.startswith(f"submitted {app} to root.research (placed by rule specified (line "
                                f"{rule_line('specified')}))\n"), ok.stdout
    # A queue the file lacks and the policy does not create: said, with the rule that placed it instead.
    moved = cluster_cli("submit", *where, "--queue", "nosuch", "-q", "--", "pi", "1", "5", cwd=tmp_path)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert f"to root.research (placed by rule default (line {rule_line('default')}))" in moved.stdout
    assert ("  queue root.nosuch does not exist and the placement policy does not create it; the app went to "
            "root.research instead") in moved.stdout
    # A queue the policy rejects: its reason, not the client's exit code.
    rejected = cluster_cli("submit", *where, "--queue", "root", "-q", "--", "pi", "1", "5", cwd=tmp_path)
    assert rejected.returncode == 1
    last = rejected.stdout.splitlines()[-1]
    assert re.match(r"application_\d+_\d+ REJECTED: Rejected by the Slotwise policy: \S", last), rejected.stdout
    assert "client exit" not in rejected.stdout
    as_json = cluster_cli("submit", *where, "--queue", "root", "-q", "--json", "--", "pi", "1", "5", cwd=tmp_path)
    got = json.loads(as_json.stdout)
    assert got["succeeded"] is False and got["placement"]["rejected"] and got["state"] == "FAILED"
    assert got["diagnostics"].startswith("Rejected by the Slotwise policy: ")
    bad = cluster_cli("submit", *where, "--queue", "research", "-q", "--", "no-such-program", cwd=tmp_path)
    assert bad.returncode == 1
    assert "FAILED" in bad.stdout


def test_status(shim):
    cluster, _ = shim
    text = cluster_cli("status", "--dir", str(cluster.dir))
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert f"cluster {cluster.dir}: running" in out
    for name in ("rm", "nm1", "nm2"):
        assert re.search(rf"^  {name}\s+pid \d+\s+alive", out, re.M), out
    assert len(re.findall(r"^  localhost:\d+\s+RUNNING", out, re.M)) == 2
    assert re.search(r"application_\d+_\d+\s+FINISHED\s+SUCCEEDED\s+user alice", out), out
    st = json.loads(cluster_cli("status", "--dir", str(cluster.dir), "--json").stdout)
    assert st["running"] and [n["state"] for n in st["nodes"]] == ["RUNNING", "RUNNING"]
    assert {a["finalStatus"] for a in st["apps"]} >= {"SUCCEEDED"}


def test_yarn_cli_runs_against_the_cluster(shim):
    cluster, _ = shim
    nodes = cluster_cli("yarn", "--dir", str(cluster.dir), "--", "node", "-list")
    assert nodes.returncode == 0, nodes.stderr
    assert "Total Nodes:2" in nodes.stdout and len(re.findall(r"localhost:\d+\s+RUNNING", nodes.stdout)) == 2
    apps = cluster_cli("yarn", "--dir", str(cluster.dir), "--", "application", "-list", "-appStates", "FINISHED")
    assert apps.returncode == 0 and re.search(r"application_\d+_\d+", apps.stdout), apps.stdout + apps.stderr


def test_a_job_client_asking_after_the_am_has_gone_gets_the_rms_final_state(shim, tmp_path):
    """No JobHistoryServer runs here.  A job client that asks about a finished
    job after its AM has exited (the AM lingers 5 s; a slow client on a
    loaded machine misses that, as a soak once did) gets the final state from
    the RM, not ten retries of a history server and an exception."""
    cluster, _ = shim
    ok = cluster_cli("submit", "--dir", str(cluster.dir), "--queue", "research", "-q", "--", "pi", "1", "5",
                     cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    app = re.search(r"application_(\d+_\d+)", ok.stdout).group(1)
    deadline = time.monotonic() + 120
    while any(f"application_{app}" in " ".join(a) for a in _java_command_lines()):  # the AM's JVM
        assert time.monotonic() < deadline, f"the AM of application_{app} did not exit"
        time.sleep(0.5)
    status = cluster_cli("yarn", "--dir", str(cluster.dir), "--", "job", "-status", f"job_{app}")
    assert "Job state: SUCCEEDED" in status.stdout, status.stdout + status.stderr
    assert "10020" not in status.stdout + status.stderr  # mapred-default's history server address


def test_a_shadow_beside_python_compares_every_heartbeat_and_its_promotion_takes_effect(shim):
    """Issue 42 on the real cluster: a candidate identical to the live file,
    started at run time, compares the heartbeats of a real job and never
    diverges; the job succeeds as without it. Promoted (with one queue
    added), the watcher applies it within 2 s; the live file is put back."""
    import httpx

    cluster, serve = shim
    url = f"{serve.url}/api/v1/shadow"
    auth = {"Authorization": f"Bearer {serve.admin_token_file.read_text().strip()}"}
    started = httpx.post(url, json={"allocations": ALLOCATIONS}, headers={**auth, "X-Slotwise-File-Name": "same.xml"},
                         timeout=60)
    assert started.status_code == 200 and started.json()["state"] == "running", started.text
    try:
        job = cluster.submit("sleep", ["-m", "2", "-r", "0", "-mt", "1000"], queue="research")
        assert job.succeeded, job.log
        st = httpx.get(url, timeout=60).json()
        assert st["state"] == "running" and st["compared"] > 0, st
        assert st["diverged"] == 0 and st["error"] is None, st["diverging"][:3]
        added = ALLOCATIONS.replace("<queue name=\"other\"/>", "<queue name=\"other\"/><queue name=\"promoted\"/>")
        assert added != ALLOCATIONS
        assert httpx.post(url, json={"allocations": added}, headers=auth, timeout=60).status_code == 200
        promoted = httpx.post(url + "/promote", headers=auth, timeout=60)
        assert promoted.status_code == 200, promoted.text
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if "root.promoted" in {q["queue"] for q in httpx.get(f"{serve.url}/api/v1/queues", timeout=60).json()}:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the promoted file was not in force within 2 s")
    finally:
        httpx.delete(url, headers=auth, timeout=60)
        serve.allocations.write_text(ALLOCATIONS)  # the module's other tests run on the live file
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "root.promoted" not in {q["queue"] for q in httpx.get(f"{serve.url}/api/v1/queues", timeout=60).json()}:
                break
            time.sleep(0.2)


def _java_command_lines() -> list[list[str]]:
    from slotwise.localcluster import process

    found = []
    for entry in os.listdir("/proc"):
        args = process.cmdline(int(entry)) if entry.isdigit() else None
        if args and "java" in Path(args[0]).name:
            found.append(args)
    return found


def _our_java_processes(cluster_dir: Path) -> list[str]:
    """Every java process whose command line mentions the cluster directory."""
    return [" ".join(args)[:200] for args in _java_command_lines() if any(str(cluster_dir) in a for a in args)]


def test_down_leaves_no_java_process(shim):
    """Last in this file: it takes the module's cluster down."""
    cluster, serve = shim
    serve.ensure_running()
    assert len(_our_java_processes(cluster.dir)) >= 3
    # A job still running when the cluster goes down: said so, not "RM state None".
    job = subprocess.Popen([sys.executable, "-m", "slotwise.cli", "cluster", "submit", "--dir", str(cluster.dir),
                            "--server", serve.url, "--queue", "research", "-q", "--", "sleep", "-m", "1", "-r", "0",
                            "-mt", "600000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_running_app(cluster, "root.research")
    serve.stop()
    stopped = cluster.down()
    out, err = job.communicate(timeout=300)
    assert job.returncode == 1
    assert re.search(r"^application_\d+_\d+ did not finish: the cluster went down before the job finished; "
                     r"client log ", out, re.M), out + err
    assert "None" not in out
    assert {"rm", "nm1", "nm2"} <= set(stopped)
    assert _our_java_processes(cluster.dir) == []
    assert not cluster.state  # cluster.json is gone
    assert cluster.down() == []  # idempotent
    status = cluster_cli("status", "--dir", str(cluster.dir))
    assert status.returncode == 1 and "no cluster" in status.stdout
