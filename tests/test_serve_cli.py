"""`slotwise serve` as operators start it, before any ResourceManager exists."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import httpx
import pytest

from webtools import ALLOCATIONS, free_port


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            return httpx.get(url, timeout=10)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer in {timeout} s")


def serve(tmp_path, *extra, session: bool = False):
    """serve without a ResourceManager (``session``: in a process group of
    its own, which a terminal's Ctrl-C reaches whole)."""
    port = free_port()
    alloc = tmp_path / "fair-scheduler.xml"
    if not alloc.exists():
        alloc.write_text(ALLOCATIONS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(alloc),
         "--gateway-info", str(tmp_path / "no-rm" / "gateway.json"), "--http", f"127.0.0.1:{port}",
         "--admin-token-file", str(tmp_path / "secret" / "admin.token"),
         "--event-log", str(tmp_path / "events.jsonl"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=session)
    return proc, f"http://127.0.0.1:{port}", alloc


def test_serve_shows_its_config_without_a_resourcemanager_and_reloads_a_rename_save(tmp_path):
    proc, url, alloc = serve(tmp_path)
    try:
        cfg = wait_http(f"{url}/api/v1/config", proc).json()
        assert cfg["path"] == str(alloc) and cfg["resource_manager_connected"] is False
        assert cfg["content"] == ALLOCATIONS
        token = tmp_path / "secret" / "admin.token"
        assert stat.S_IMODE(os.stat(token).st_mode) == 0o600 and len(token.read_text().strip()) >= 32
        assert "root.prod" in httpx.get(f"{url}/", timeout=60).text
        # An editor's save: a temporary file renamed over the original.
        tmp = tmp_path / ".fair-scheduler.xml.swp"
        tmp.write_text(ALLOCATIONS.replace("<queue name=\"other\"/>", "<queue name=\"later\"/>"))
        os.replace(tmp, alloc)
        deadline = time.monotonic() + 30  # a loaded machine's watcher is slow to notice; a fast one breaks at once
        while time.monotonic() < deadline:
            queues = [p["queue"] for p in httpx.get(f"{url}/api/v1/queues", timeout=60).json()]
            if "root.later" in queues:
                break
            time.sleep(0.05)
        assert "root.later" in queues and "root.other" not in queues
        events = (tmp_path / "events.jsonl").read_text()
        assert '"event":"reload"' in events
    finally:
        proc.terminate()
        proc.wait(60)


def test_serve_share_rule_is_in_force_and_shown(tmp_path):
    proc, url, _alloc = serve(tmp_path, "--share-rule", "design")
    try:
        assert wait_http(f"{url}/api/v1/config", proc).json()["share_rule"] == "design"
        assert "Fair shares by the design document" in httpx.get(f"{url}/", timeout=60).text
    finally:
        proc.terminate()
        proc.wait(60)


def test_serve_refuses_a_token_file_others_can_read_and_a_bad_listen_address(tmp_path):
    (tmp_path / "secret").mkdir()
    token = tmp_path / "secret" / "admin.token"
    token.write_text("x" * 40)
    os.chmod(token, 0o644)
    proc, _url, _alloc = serve(tmp_path)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "must be mode 0600" in out
    os.chmod(token, 0o600)
    r = subprocess.run([sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(tmp_path / "fair-scheduler.xml"),
                        "--http", "localhost", "--admin-token-file", str(token)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr


def test_serve_with_a_broken_file_says_where_and_does_not_start(tmp_path):
    (tmp_path / "fair-scheduler.xml").write_text("<allocations>\n  <queue name='a'>\n    <weight>x</weight>\n"
                                                 "  </queue>\n</allocations>\n")
    proc, _url, alloc = serve(tmp_path)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1 and f"{alloc}:3:" in out


def test_serve_waiting_for_a_resourcemanager_says_why(tmp_path):
    """With no gateway, serve says what is missing: no local cluster at all,
    or (for another RM) the gateway file and the scheduler class to set."""
    alloc = tmp_path / "fair-scheduler.xml"
    alloc.write_text(ALLOCATIONS)
    common = [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(alloc), "--no-watch",
              "--admin-token-file", str(tmp_path / "secret" / "admin.token")]
    for extra, expected in (
            (["--cluster-dir", str(tmp_path / "nowhere")], f"no local cluster in {tmp_path / 'nowhere'}: "
                                                           "start one with `slotwise cluster up`"),
            (["--gateway-info", str(tmp_path / "rm" / "gateway.json")],
             "yarn.resourcemanager.scheduler.class=org.slotwise.shim.SlotwiseScheduler")):
        port = free_port()
        proc = subprocess.Popen([*common, "--http", f"127.0.0.1:{port}", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_http(f"http://127.0.0.1:{port}/api/v1/status", proc)
            # A second and a third try, each failing for the same reason, which is not logged again.
            deadline = time.monotonic() + 60
            while (link := httpx.get(f"http://127.0.0.1:{port}/api/v1/status",
                                     timeout=60).json()["resource_manager"])["connect_failures"] < 3:
                assert time.monotonic() < deadline, link
                time.sleep(0.1)
            assert expected in link["waiting"]
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=60)
        waiting = [line for line in out.splitlines() if "waiting for the ResourceManager's gateway" in line]
        assert len(waiting) == 1 and expected in waiting[0], out


def test_serve_locality_delays_are_in_force_and_bad_ones_refused(tmp_path):
    """Delay scheduling's waits come from the command line (0: no wait, as
    YARN's FairScheduler by default); the recording carries them, so a
    replay decides with the same waits."""
    proc, url, _alloc = serve(tmp_path, "--node-locality-delay", "0", "--rack-locality-delay", "2.5", "--record")
    try:
        wait_http(f"{url}/api/v1/config", proc)
        rec = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()
               if '"recording"' in line]
        assert rec and rec[0]["settings"]["node_locality_delay"] == 0.0
        assert rec[0]["settings"]["rack_locality_delay"] == 2.5
    finally:
        proc.terminate()
        proc.wait(60)
    bad, _url, _alloc = serve(tmp_path, "--rack-locality-delay", "-1")
    out, _ = bad.communicate(timeout=30)
    assert bad.returncode == 2 and "--rack-locality-delay must be 0 or more seconds, not -1" in out


def test_a_dead_resourcemanager_is_named_only_when_its_pid_is_in_our_namespace(tmp_path):
    """The gateway file names the RM's pid and pid namespace: a pid from our
    namespace that no process holds is a stopped RM; one from another
    namespace (the RM's container, beside the policy's) is not ours to look
    up, and the connection error is said instead."""
    from slotwise.bridge.server import PolicyServer

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    info = tmp_path / "gateway.json"
    server = PolicyServer(None, str(info), str(tmp_path / "gateway.token"))
    ours = os.readlink("/proc/self/ns/pid")
    info.write_text(json.dumps({"port": 1, "pid": dead.pid, "pid_ns": ours}))
    assert f"(pid {dead.pid}) that is no longer running" in server.why_waiting(OSError("connection refused"))
    info.write_text(json.dumps({"port": 1, "pid": dead.pid, "pid_ns": "pid:[1]"}))
    assert server.why_waiting(OSError("connection refused")) == "connection refused"
    info.write_text(json.dumps({"port": 1, "pid": dead.pid}))  # an older shim's file: as before
    assert "no longer running" in server.why_waiting(OSError("connection refused"))


def test_serve_on_a_jobtracker_names_the_jobtracker_and_tells_it_where_its_api_is(tmp_path):
    """Every message of a serve attached to a JobTracker names the JobTracker
    (issue 29), and its registration says where its API is, for the
    JobTracker's /scheduler page (its fair shares, moves and priorities)."""
    from slotwise.bridge.server import PolicyServer, RMControl
    from slotwise.serve import local_url
    from slotwise.config.loader import parse_allocations
    from slotwise.core import PolicyCore

    core = PolicyCore(parse_allocations('<allocations><pool name="prod"/></allocations>', "pools.xml"), kind="mrv1")
    info = tmp_path / "gateway.json"
    server = PolicyServer(core, str(info), str(tmp_path / "gateway.token"), web=local_url("0.0.0.0", 9797))
    assert server.server_info.web == "http://127.0.0.1:9797"
    assert local_url("::", 80) == "http://[::1]:80" and local_url("10.0.0.5", 1) == "http://10.0.0.5:1"
    why = server.why_waiting(OSError("connection refused"))
    assert "is the JobTracker running with mapred.jobtracker.taskScheduler=" in why and "ResourceManager" not in why
    assert RMControl(server).move("job_1_0001", "root.prod") == {"error": "no JobTracker connected"}


def test_preemption_follows_the_masters_switch_unless_serve_says_otherwise():
    """Off unless the master's configuration turns it on, as in Hadoop
    (yarn.scheduler.fair.preemption, mapred.fairscheduler.preemption); the
    shim reports it at registration and serve --preemption wins."""
    from slotwise import protocol as wire
    from slotwise.bridge.server import preemption_setting
    from slotwise.core import PolicyCore
    from slotwise.config import parse_allocations

    def shim(kind, **kw):
        return wire.decode("ShimInfo", json.dumps({"version": "t", "kind": kind, "protocol": 1, "deadline_ms": 100,
                                                   "update_interval_ms": 500, "resource_types": [], **kw}))

    assert shim("yarn").preemption is False  # an older shim that does not say: off
    assert preemption_setting(shim("yarn"), None) == (False, "yarn.scheduler.fair.preemption")
    assert preemption_setting(shim("yarn", preemption=True), None) == (True, "yarn.scheduler.fair.preemption")
    assert preemption_setting(shim("mrv1", preemption=True), None) == (True, "mapred.fairscheduler.preemption")
    assert preemption_setting(shim("yarn", preemption=True), False) == (False, "serve --preemption")
    assert preemption_setting(shim("mrv1"), True) == (True, "serve --preemption")

    core = PolicyCore(parse_allocations(ALLOCATIONS))
    core.set_preemption(False)
    assert core.settings.preemption is False and core._engine.settings.preemption is False
    slots = PolicyCore(parse_allocations("<allocations><pool name='a'/></allocations>"), kind="mrv1")
    slots.set_preemption(True)
    assert slots.settings.preemption and slots._engine.settings.preemption


def test_a_recorded_run_replays_with_the_preemption_switch_it_was_told(tmp_path):
    from slotwise.config import parse_allocations
    from slotwise.core import PolicyCore
    from slotwise.eventlog import EventLog
    from slotwise.settings import EngineSettings
    from slotwise.sim.replay import replay

    log = tmp_path / "events.jsonl"
    core = PolicyCore(parse_allocations(ALLOCATIONS), EngineSettings(preemption=True), event_log=EventLog(str(log)),
                      record_inputs=True)
    core.set_preemption(False)
    seen = {}
    replay(str(log), taps={None: lambda c: seen.setdefault("core", c)})
    assert seen["core"].settings.preemption is False


def test_serve_preemption_flag_is_checked(tmp_path):
    out = subprocess.run([sys.executable, "-m", "slotwise.cli", "serve", "--allocations", "x.xml", "--preemption",
                          "maybe"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--preemption" in out.stderr and "'on', 'off'" in out.stderr


def test_py4j_records_are_kept_out_of_serves_log_even_on_the_root_logger():
    """Py4J logs a lost connection's traceback on the root logger at INFO
    (java_gateway.py calls logging.info); serve says what it means itself."""
    import logging

    from slotwise.serve import _not_py4j

    def record(path: str) -> logging.LogRecord:
        return logging.LogRecord("root", logging.INFO, path, 1056, "Exception while sending command.", None, None)

    assert not _not_py4j(record("/usr/lib/python3/dist-packages/py4j/java_gateway.py"))
    assert not _not_py4j(record("/x/.venv/lib/python3.11/site-packages/py4j/clientserver.py"))
    assert _not_py4j(record("/work/python/slotwise/bridge/server.py"))


def _rm_info(answers: dict):
    """A web server answering /ws/v1/cluster/info as a ResourceManager does."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"clusterInfo": answers}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_serve_reads_the_ha_state_of_its_resourcemanager(tmp_path):
    """A standby RM of an HA pair has no gateway: serve says standby (not
    "waiting"), and nothing when HA is off or no RM answers."""
    from slotwise.bridge.server import PolicyServer

    class Core:
        kind = "yarn"

    answers = {"haState": "STANDBY", "haZooKeeperConnectionState": "CONNECTED", "state": "STARTED"}
    srv = _rm_info(answers)
    try:
        server = PolicyServer(Core(), str(tmp_path / "gateway.json"), str(tmp_path / "gateway.token"),
                              rm_web=f"http://127.0.0.1:{srv.server_address[1]}/")
        assert server.ha_state() == "standby" and server.status()["ha_state"] == "standby"
        answers["haState"] = "ACTIVE"
        assert server.ha_state() == "active"
        answers.update(haZooKeeperConnectionState="ResourceManager HA is not enabled.")
        assert server.ha_state() is None
    finally:
        srv.shutdown()
    assert server.ha_state() is None  # no RM answers
    assert PolicyServer(Core(), "g", "t").ha_state() is None  # no --rm-web


def _serve_to_file(tmp_path, name: str, port: int, *extra, queues: str = '<queue name="other"/>'):
    """A serve with no ResourceManager, its own allocation file and its output in NAME.out."""
    alloc = tmp_path / f"{name}.xml"
    alloc.write_text(ALLOCATIONS.replace('<queue name="other"/>', queues))
    out = tmp_path / f"{name}.out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(alloc), "--no-watch",
         "--gateway-info", str(tmp_path / "no-rm" / "gateway.json"), "--http", f"127.0.0.1:{port}",
         "--admin-token-file", str(tmp_path / "secret" / "admin.token"), *extra],
        stdout=open(out, "w"), stderr=subprocess.STDOUT, text=True)
    return proc, out


def _wait_line(out, text: str, proc, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in out.read_text():
        assert proc.poll() is None, out.read_text()
        assert time.monotonic() < deadline, out.read_text()
        time.sleep(0.1)


def test_a_serve_taking_over_on_the_same_host_serves_the_web_port_once_the_old_one_lets_go(tmp_path):
    """Two real serve processes on one --http port: the one taking over
    waits for the port (and says so) while the old one holds it, and serves
    it once the old one has exited; without --takeover a port in use is an
    error at once, in words."""
    port = free_port()
    old, _ = _serve_to_file(tmp_path, "old", port)
    new = None
    try:
        url = f"http://127.0.0.1:{port}"
        assert "root.other" in {q["queue"] for q in wait_http(f"{url}/api/v1/queues", old).json()}
        refused, refused_out = _serve_to_file(tmp_path, "refused", port)
        assert refused.wait(120) == 1
        assert (f"slotwise serve: cannot listen on 127.0.0.1:{port}: Address already in use (another process "
                "holds it: a running `slotwise serve`? --http HOST:PORT picks another port)") in refused_out.read_text()
        new, new_out = _serve_to_file(tmp_path, "new", port, "--takeover", queues='<queue name="later"/>')
        _wait_line(new_out, f"127.0.0.1:{port} is in use (the server this one took over from lets go of it as it "
                            "exits); waiting up to 30 s", new)
        old.terminate()  # what a replaced server does by itself once its ResourceManager says so
        assert old.wait(60) == 0
        deadline = time.monotonic() + 60
        while True:
            try:
                queues = {q["queue"] for q in httpx.get(f"{url}/api/v1/queues", timeout=10).json()}
            except httpx.TransportError:
                queues = set()
            if "root.later" in queues or time.monotonic() > deadline:
                break
            assert new.poll() is None, new_out.read_text()
            time.sleep(0.1)
        assert "root.later" in queues and "root.other" not in queues, new_out.read_text()
    finally:
        for proc in (old, new):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(60)


def test_a_serve_stopped_while_it_waits_for_its_web_port_stops_at_once(tmp_path):
    """SIGTERM during --takeover's wait for the port: a clean exit, not 30 s later."""
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        proc, out = _serve_to_file(tmp_path, "waiting", port, "--takeover")
        _wait_line(out, f"127.0.0.1:{port} is in use", proc)
        proc.terminate()
        assert proc.wait(60) == 0, out.read_text()
        assert "cannot listen" not in out.read_text()
    finally:
        holder.close()


def test_a_clean_stop_is_logged_with_its_signal(tmp_path):
    """SIGTERM and Ctrl-C (SIGINT) stop serve cleanly, and its log says so."""
    import signal

    for sig, said in ((signal.SIGTERM, "serve stopped on SIGTERM"), (signal.SIGINT, "serve stopped on SIGINT (Ctrl-C)")):
        proc, url, _alloc = serve(tmp_path)
        try:
            wait_http(f"{url}/api/v1/status", proc)
        finally:
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        [line] = [x for x in out.splitlines() if "serve stopped" in x]
        assert " INFO slotwise.serve: " + said in line


def test_a_local_cluster_stopped_by_cluster_down_is_said_to_be_down(tmp_path):
    """`slotwise cluster down` removes the cluster's state file and keeps its
    directory: serve says the cluster is down, as it did while its master
    was stopping, not that there is no cluster."""
    from slotwise.bridge.server import _why_local
    from slotwise.localcluster.paths import Layout

    down = f"the local cluster in {tmp_path} is down: start it with `slotwise cluster up`"
    Layout(tmp_path).tag.write_text("A Slotwise cluster directory (slotwise cluster up).\n")
    assert _why_local(str(tmp_path), str(tmp_path / "gateway.json")) == down
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _why_local(str(empty), str(empty / "gateway.json")).startswith(f"no local cluster in {empty}: ")


def test_serve_does_not_preempt_before_a_master_says_so(tmp_path):
    """Before any master has registered, serve preempts only with
    --preemption on (Hadoop's default is off; the master's switch comes at
    registration): its queues say preemption is off and the recording a
    replay decides from carries preemption off. Fails if serve's default
    before registration is on."""
    for extra, on in (((), False), (("--preemption", "on"), True)):
        run = tmp_path / ("on" if on else "default")
        run.mkdir()
        proc, url, _alloc = serve(run, "--record", *extra)
        try:
            queues = wait_http(f"{url}/api/v1/queues", proc).json()
            assert queues and {q["preemption"] for q in queues} == {on}, queues
            rec = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()
                   if '"recording"' in line]
            assert rec and rec[0]["settings"]["preemption"] is on
            assert httpx.get(f"{url}/api/v1/status", timeout=60).json()["resource_manager"]["registered"] is False
        finally:
            proc.terminate()
            proc.wait(60)


def test_serve_reports_its_shadow_against_its_own_recorded_log(tmp_path):
    """serve --record --event-log F: GET /api/v1/shadow/report plays F in a
    child; with no RM yet F holds no inputs, which the child says in one line."""
    candidate = tmp_path / "candidate.xml"
    candidate.write_text(ALLOCATIONS.replace("<weight>2</weight>", "<weight>5</weight>"))
    proc, url, _alloc = serve(tmp_path, "--record", "--shadow", str(candidate))
    try:
        wait_http(f"{url}/api/v1/config", proc)
        deadline = time.monotonic() + 60
        while httpx.get(f"{url}/api/v1/shadow", timeout=60).json()["state"] != "running":
            assert time.monotonic() < deadline, "the shadow did not start"
            time.sleep(0.1)
        token = (tmp_path / "secret" / "admin.token").read_text().strip()
        r = httpx.get(f"{url}/api/v1/shadow/report", params={"since": "600"},
                      headers={"Authorization": f"Bearer {token}"}, timeout=300)
        assert r.status_code == 500 and r.json() == {"detail": f"{tmp_path / 'events.jsonl'}: no recorded inputs"}
    finally:
        proc.terminate()
        proc.wait(60)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_the_shadow_process_ends_with_serve_however_serve_ends(tmp_path, sig):
    """The shadow runs in a process of its own: serve stopped by SIGTERM,
    Ctrl-C (to the whole group, as a terminal sends it) or SIGKILL takes it
    along (its pipe closes), never leaving it behind, and Ctrl-C prints no
    traceback of it."""
    candidate = tmp_path / "candidate.xml"
    candidate.write_text(ALLOCATIONS.replace("<weight>2</weight>", "<weight>5</weight>"))
    proc, url, _alloc = serve(tmp_path, "--shadow", str(candidate), session=True)
    try:
        wait_http(f"{url}/api/v1/config", proc)
        deadline = time.monotonic() + 60
        while (st := httpx.get(f"{url}/api/v1/shadow", timeout=60).json())["state"] != "running":
            assert time.monotonic() < deadline, "the shadow did not start"
            time.sleep(0.1)
        pid = st["pid"]
        assert pid and pid != proc.pid and os.path.exists(f"/proc/{pid}")
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), f"the shadow process {pid} outlived serve ({sig.name})"
        assert "Traceback" not in out, out[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
