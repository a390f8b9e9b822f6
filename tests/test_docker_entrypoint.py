"""The slotwise/hadoop image's entrypoint, outside docker: its rack rule,
its reverse DNS (against a real UDP server on loopback), the site files it
writes, and how the worker stops its two daemons."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

ENTRYPOINT = Path(__file__).resolve().parents[1] / "docker" / "hadoop" / "slotwise-hadoop"


def load():
    loader = importlib.machinery.SourceFileLoader("slotwise_hadoop_entry", str(ENTRYPOINT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.fixture()
def ep():
    return load()


def test_workers_round_robin_over_racks_and_others_on_the_default_rack(ep):
    assert ep.rack_of("slotwise-worker-1", 2) == "/rack1"
    assert ep.rack_of("slotwise-worker-2", 2) == "/rack2"
    assert ep.rack_of("slotwise-worker-3", 2) == "/rack1"
    assert ep.rack_of("bench-worker-4.bench_default", 2) == "/rack2"
    assert ep.rack_of("slotwise-worker-5", 3) == "/rack2"
    assert ep.rack_of("slotwise-worker-2", 1) == "/rack1"
    assert ep.rack_of("slotwise-rm-1", 2) == "/default-rack"
    assert ep.rack_of("nn", 2) == "/default-rack"
    assert ep.rack_of("slotwise-worker-2", 0) == "/default-rack"


def dns_server(answers: dict[str, str]):
    """A one-socket DNS server on loopback answering PTR queries from
    ``answers`` (ip -> name) with a compressed answer name, as resolvers do."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                q, peer = sock.recvfrom(512)
            except socket.timeout:
                continue
            qid = q[:2]
            at, labels = 12, []
            while q[at]:
                labels.append(q[at + 1:at + 1 + q[at]].decode())
                at += 1 + q[at]
            question = q[12:at + 5]
            ip = ".".join(reversed(labels[:4]))
            name = answers.get(ip)
            if name is None:
                sock.sendto(qid + struct.pack(">HHHHH", 0x8183, 1, 0, 0, 0) + question, peer)
                continue
            rdata = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
            answer = b"\xc0\x0c" + struct.pack(">HHIH", 12, 1, 600, len(rdata)) + rdata
            sock.sendto(qid + struct.pack(">HHHHH", 0x8180, 1, 1, 0, 0) + question + answer, peer)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return sock, stop


def test_reverse_dns_asks_the_resolver_and_the_topology_names_racks_from_ips(ep, monkeypatch, capsys):
    sock, stop = dns_server({"10.0.0.7": "proj-worker-2.proj_default", "10.0.0.9": "proj-nn-1.proj_default"})
    port = sock.getsockname()[1]
    monkeypatch.setattr(ep, "_nameserver", lambda: "127.0.0.1")
    monkeypatch.setattr(ep, "DNS_PORT", port)
    try:
        assert ep.reverse_dns("10.0.0.7") == "proj-worker-2.proj_default"
        assert ep.reverse_dns("10.0.0.8", timeout=0.5) is None  # NXDOMAIN
        assert ep.reverse_dns("not-an-ip") is None
        monkeypatch.setenv("SLOTWISE_RACKS", "2")
        # A host name that is not the container's name (its id) is named by its address.
        monkeypatch.setattr(socket, "gethostbyname", lambda h: {"3f2a1b9c8d7e": "10.0.0.7"}[h])
        ep.topology(["10.0.0.7", "10.0.0.9", "proj-worker-3", "3f2a1b9c8d7e"])
        assert capsys.readouterr().out.split() == ["/rack2", "/default-rack", "/rack1", "/rack2"]
    finally:
        stop.set()
        sock.close()


def test_node_name_is_the_host_name_unless_set(ep, monkeypatch):
    monkeypatch.delenv("SLOTWISE_NODE_NAME", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "3f2a1b9c8d7e")
    assert ep.node_name() == "3f2a1b9c8d7e"
    monkeypatch.setenv("SLOTWISE_NODE_NAME", "edge-7")
    assert ep.node_name() == "edge-7"


def test_site_files_name_the_node_alike_for_yarn_and_hdfs_and_take_the_environment(ep, monkeypatch):
    monkeypatch.setattr(ep, "jars", lambda: ["/opt/hadoop/jars/a.jar"])
    monkeypatch.setattr(ep, "flags", lambda: ["-Dx=1"])
    monkeypatch.setenv("SLOTWISE_NODE_NAME", "slotwise-worker-1")
    files = ep.site_files({"CORE-SITE.XML_fs.defaultFS": "hdfs://nn:8020", "HDFS-SITE.XML_dfs.replication": "3"})
    assert files["core-site.xml"]["fs.defaultFS"] == "hdfs://nn:8020"
    assert files["core-site.xml"]["net.topology.script.file.name"] == ep.TOPOLOGY
    assert files["hdfs-site.xml"]["dfs.replication"] == "3"
    assert files["hdfs-site.xml"]["dfs.datanode.hostname"] == "slotwise-worker-1"
    assert files["yarn-site.xml"]["yarn.nodemanager.hostname"] == "slotwise-worker-1"
    with pytest.raises(SystemExit, match="HDFS-SITE.XML_"):
        ep.site_files({"HDFS-SITE.XML_": "x"})


def test_topology_without_the_environment_reads_the_racks_a_daemon_saved(ep, monkeypatch, tmp_path, capsys):
    """A task container (the MapReduce AM) runs the script without the
    container's environment: the rack count must not fall back to 1."""
    monkeypatch.setattr(ep, "RACKS_FILE", str(tmp_path / "slotwise-racks"))
    monkeypatch.setenv("SLOTWISE_RACKS", "2")
    ep.save_racks()
    monkeypatch.delenv("SLOTWISE_RACKS")
    ep.topology(["p-worker-1", "p-worker-2"])
    assert capsys.readouterr().out.split() == ["/rack1", "/rack2"]


def test_topology_under_its_own_name_prints_racks(tmp_path):
    link = tmp_path / "slotwise-topology"
    link.symlink_to(ENTRYPOINT)
    out = subprocess.run([sys.executable, str(link), "a-worker-1", "a-worker-2", "rm"], capture_output=True,
                         text=True, env={**os.environ, "SLOTWISE_RACKS": "2"}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["/rack1", "/rack2", "/default-rack"]


WRITER = textwrap.dedent(r"""
    import importlib.machinery, importlib.util, sys
    loader = importlib.machinery.SourceFileLoader("ep", sys.argv[1])
    spec = importlib.util.spec_from_loader("ep", loader)
    ep = importlib.util.module_from_spec(spec)
    loader.exec_module(ep)
    for i in range(40):
        ep.write_conf(sys.argv[2], {"hdfs-site.xml": {"writer": sys.argv[3], "round": str(i)}})
""")


def test_clients_writing_one_conf_dir_at_once_never_trip_over_each_other(tmp_path):
    """Benchmark clients run side by side in one container (docker exec)
    and each writes the client configuration before it starts."""
    conf = tmp_path / "client-conf"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(ENTRYPOINT), str(conf), str(n)],
                                stderr=subprocess.PIPE, text=True) for n in range(6)]
    errors = [w.communicate(timeout=120)[1] for w in writers]
    assert [w.returncode for w in writers] == [0] * 6, errors
    site = (conf / "hdfs-site.xml").read_text()
    assert "<name>round</name><value>39</value>" in site
    assert [p.name for p in conf.iterdir()] == ["hdfs-site.xml"]


WORKER_HARNESS = textwrap.dedent(r"""
    import importlib.machinery, importlib.util, sys
    loader = importlib.machinery.SourceFileLoader("ep", {entry!r})
    spec = importlib.util.spec_from_loader("ep", loader)
    ep = importlib.util.module_from_spec(spec)
    loader.exec_module(ep)
    ep.write_conf = lambda *a: None
    ep.site_files = lambda: {{}}
    ep.daemon_props = lambda: []
    # Each daemon a Python child: prints its role, exits on SIGTERM, or by itself after {life!r}.
    def java_argv(conf, main, args, heap, cp_extra=(), props=()):
        role = "datanode" if "datanode" in main else "nodemanager"
        life = {life!r}.get(role, 3600)
        return [sys.executable, "-c",
                "import signal,sys,time;signal.signal(signal.SIGTERM,lambda *a: sys.exit(0));"
                f"sys.stdout.write('up {{role}}\\n');sys.stdout.flush();time.sleep({{life}});sys.exit(7)"]
    ep.java_argv = java_argv
    ep.worker()
""")


def run_worker(tmp_path, life):
    script = tmp_path / "harness.py"
    script.write_text(WORKER_HARNESS.format(entry=str(ENTRYPOINT), life=life))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_up(proc, n=2):
    seen = []
    while len(seen) < n:
        line = proc.stdout.readline()
        assert line, f"the worker exited early: {proc.stderr.read()}"
        seen.append(line.split()[1])
    return sorted(seen)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_worker_stops_both_daemons_on_sigterm_or_ctrl_c(tmp_path, sig):
    proc = run_worker(tmp_path, {})
    assert wait_up(proc) == ["datanode", "nodemanager"]
    proc.send_signal(sig)
    assert proc.wait(60) == 0
    assert "exited" not in proc.stderr.read()


def test_worker_exits_with_the_daemon_that_died_and_stops_the_other(tmp_path):
    proc = run_worker(tmp_path, {"datanode": 1})
    assert wait_up(proc) == ["datanode", "nodemanager"]
    started = time.monotonic()
    assert proc.wait(60) == 7
    err = proc.stderr.read()
    assert "the datanode exited (7)" in err
    assert time.monotonic() - started < 30  # the NodeManager stopped by SIGTERM, not left to its hour
