"""The embedded YARN cluster end to end: two NodeManagers RUNNING, a pi and a
sleep job through the FIFO scheduler, ``status``, and ``down`` leaving no JVM.

The tests run in file order against one session-scoped cluster; the last one
takes it down.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from slotwise.localcluster import FIFO_SCHEDULER, process

pytestmark = pytest.mark.cluster

APP_ID = re.compile(r"^application_\d+_\d{4,}$")


def rest(cluster, path):
    req = urllib.request.Request(cluster.state.rm_web + path, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "slotwise.cli", "cluster", *args],
                          capture_output=True, text=True, timeout=600, **kw)


def test_both_nodemanagers_running(cluster):
    nodes = rest(cluster, "/ws/v1/cluster/nodes")["nodes"]["node"]
    assert sorted(n["state"] for n in nodes) == ["RUNNING", "RUNNING"]
    ours = {d.node_id for d in cluster.state.nodemanagers}
    assert {n["id"] for n in nodes} == ours
    assert all(n["totalResource"]["memory"] == 4096 for n in nodes)
    info = rest(cluster, "/ws/v1/cluster/info")["clusterInfo"]
    assert info["state"] == "STARTED"
    scheduler = rest(cluster, "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
    assert scheduler["type"] == "fifoScheduler"
    assert cluster.state.scheduler == FIFO_SCHEDULER


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


def test_daemon_ports_bind_to_loopback_only(cluster):
    listening = _listening()
    if not listening:
        pytest.skip("no /proc/net/tcp here")
    state = cluster.state
    ports = [p for d in state.daemons for name, p in d.ports.items() if name != "shuffle"]
    assert len(ports) == 5 + 3 * 2
    for port in ports:
        assert listening.get(port) == "127.0.0.1", (port, listening.get(port))


def test_resourcemanager_web_ui_serves_pages(cluster):
    with urllib.request.urlopen(cluster.state.rm_web + "/cluster/nodes", timeout=10) as resp:
        assert resp.status == 200
        assert "localhost" in resp.read().decode(errors="replace")


def test_pi(cluster):
    result = cluster.submit("pi", ["2", "10"], pool="research", timeout=300)
    print(f"pi 2 10: {result.app_id} {result.final_status} in {result.seconds} s")
    assert result.succeeded, Path(result.log).read_text()[-3000:]
    assert APP_ID.match(result.app_id)
    assert (result.state, result.final_status) == ("FINISHED", "SUCCEEDED")
    assert "Estimated value of Pi is" in Path(result.log).read_text()
    app = rest(cluster, f"/ws/v1/cluster/apps/{result.app_id}")["app"]
    assert app["finalStatus"] == "SUCCEEDED"
    assert app["queue"] == result.queue


def test_sleep_as_another_user(cluster):
    result = cluster.submit("sleep", ["-m", "2", "-r", "1", "-mt", "500", "-rt", "500"],
                            pool="prod", user="alice", timeout=300)
    print(f"sleep: {result.app_id} {result.final_status} in {result.seconds} s")
    assert result.succeeded, Path(result.log).read_text()[-3000:]
    assert result.app_user == "alice"
    # The AM, two maps and a reduce ran as containers (FIFO may put them all on one node).
    containers = [c for nm in cluster.state.nodemanagers
                  for c in Path(nm.home, "logs").glob(f"{result.app_id}/container_*")]
    assert len(containers) >= 4, containers


def test_submit_cli_prints_the_application_id_and_fails_for_a_failed_job(cluster, tmp_path):
    # pi writes its scratch directory into the working directory, as `hadoop jar` would.
    ok = cli("submit", "--dir", str(cluster.dir), "--pool", "adhoc", "--user", "alice", "-q",
             "--", "pi", "1", "5", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert re.search(r"application_\d+_\d+ SUCCEEDED", ok.stdout)
    bad = cli("submit", "--dir", str(cluster.dir), "--pool", "adhoc", "-q", "--", "no-such-program",
              cwd=tmp_path)
    assert bad.returncode == 1
    assert "FAILED" in bad.stdout


def test_status(cluster):
    text = cli("status", "--dir", str(cluster.dir))
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert f"cluster {cluster.dir}: running" in out
    for name in ("rm", "nm1", "nm2"):
        assert re.search(rf"^  {name}\s+pid \d+\s+alive", out, re.M), out
    assert len(re.findall(r"^  localhost:\d+\s+RUNNING", out, re.M)) == 2
    assert re.search(r"application_\d+_\d+\s+FINISHED\s+SUCCEEDED\s+user alice", out), out
    st = json.loads(cli("status", "--dir", str(cluster.dir), "--json").stdout)
    assert st["running"] and [n["state"] for n in st["nodes"]] == ["RUNNING", "RUNNING"]
    assert {a["finalStatus"] for a in st["apps"]} >= {"SUCCEEDED"}


def test_yarn_cli_runs_against_the_cluster(cluster):
    nodes = cli("yarn", "--dir", str(cluster.dir), "--", "node", "-list")
    assert nodes.returncode == 0, nodes.stderr
    assert "Total Nodes:2" in nodes.stdout and len(re.findall(r"localhost:\d+\s+RUNNING", nodes.stdout)) == 2
    apps = cli("yarn", "--dir", str(cluster.dir), "--", "application", "-list", "-appStates", "FINISHED")
    assert apps.returncode == 0 and re.search(r"application_\d+_\d+", apps.stdout), apps.stdout + apps.stderr


def test_serve_waiting_for_a_gateway_says_the_rm_runs_another_scheduler(cluster):
    from slotwise.bridge.server import _why_local

    why = _why_local(str(cluster.dir), str(cluster.dir / "rm" / "tmp" / "slotwise" / "gateway.json"))
    assert "runs the fifo scheduler, not Slotwise" in why and "slotwise cluster up" in why


def _our_java_processes(cluster_dir: Path) -> list[str]:
    """Every java process whose command line mentions the cluster directory."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        args = process.cmdline(int(entry))
        if args and "java" in Path(args[0]).name and any(str(cluster_dir) in a for a in args):
            found.append(f"{entry}: {' '.join(args)[:200]}")
    return found


def test_down_leaves_no_java_process(cluster):
    assert len(_our_java_processes(cluster.dir)) >= 3
    stopped = cluster.down()
    assert {"rm", "nm1", "nm2"} <= set(stopped)
    assert _our_java_processes(cluster.dir) == []
    assert not cluster.state  # cluster.json is gone
    assert cluster.down() == []  # idempotent
    status = cli("status", "--dir", str(cluster.dir))
    assert status.returncode == 1 and "no cluster" in status.stdout
