"""The slotwise/hadoop image's entrypoint, outside docker: its rack rule,
its reverse DNS (against a real UDP server on loopback), the site files it
writes, its network (SLOTWISE_NET: the settings, the tc plan, the workers
it finds, applying it with the real tc between two network namespaces when
run as root), and how the worker stops its two daemons."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
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
    stop.thread = t  # join it before closing the socket it reads
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
        stop.thread.join()
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


def test_net_settings_default_to_flat_and_refuse_bad_values_in_one_line(ep):
    flat = ep.net_settings({})
    assert flat["mode"] == "flat" and flat["nic_kbit"] == ep.NET_NIC_KBIT
    dc = ep.net_settings({"SLOTWISE_NET": "datacenter", "SLOTWISE_RACKS": "2", "SLOTWISE_WORKERS": "4",
                          "SLOTWISE_NET_NIC_KBIT": "", "SLOTWISE_NET_OVERSUBSCRIPTION": "8"})
    assert (dc["mode"], dc["racks"], dc["expected_workers"]) == ("datacenter", 2, 4)
    assert dc["offrack_kbit"] == ep.NET_NIC_KBIT // 8
    for env, says in [({"SLOTWISE_NET": "dc"}, "SLOTWISE_NET='dc': expected one of flat, datacenter"),
                      ({"SLOTWISE_NET_NIC_KBIT": "fast"}, "SLOTWISE_NET_NIC_KBIT='fast'"),
                      ({"SLOTWISE_NET_OVERSUBSCRIPTION": "0"}, "from 1 to 100")]:
        with pytest.raises(SystemExit, match=re.escape(says)) as e:
            ep.net_settings(env)
        assert "\n" not in str(e.value)


def test_the_default_rates_are_a_scaled_1_gbit_nic_and_its_oversubscribed_uplink(ep):
    """docs/docker.md states these figures: keep them in step."""
    s = ep.net_settings({"SLOTWISE_NET": "datacenter"})
    assert s["nic_kbit"] == round(1_000_000 * ep.NET_BLOCK_MB / ep.DC_BLOCK_MB * ep.DC_MAP_S / ep.NET_MAP_S) == 3125
    assert s["offrack_kbit"] == s["nic_kbit"] // ep.NET_OVERSUBSCRIPTION
    doc = (ENTRYPOINT.parents[2] / "docs" / "docker.md").read_text()
    assert f"{s['nic_kbit'] / 1000:g} Mbit/s" in doc and f"{s['offrack_kbit'] / 1000:g} Mbit/s" in doc
    assert f"{ep.NET_OVERSUBSCRIPTION}:1" in doc


def test_the_plan_sends_each_worker_to_its_racks_class_and_leaves_the_rest_unshaped(ep):
    settings = ep.net_settings({"SLOTWISE_NET": "datacenter", "SLOTWISE_NET_NIC_KBIT": "8000",
                                "SLOTWISE_NET_OVERSUBSCRIPTION": "4"})
    workers = {"10.0.0.10": "p-worker-10", "10.0.0.2": "p-worker-2", "10.0.0.3": "p-worker-3",
               "10.0.0.4": "p-worker-4"}
    peers = ep.peer_classes("p-worker-2", workers, 2)
    assert peers == {"10.0.0.10": "rack", "10.0.0.3": "offrack", "10.0.0.4": "rack"}  # 10 and 4: /rack2 as 2
    plan = ep.tc_plan("eth0", settings, peers)
    assert plan[0] == "qdisc add dev eth0 root handle 1: htb"  # no default class: the rest goes out unshaped
    assert "classid 1:1 htb rate 8000kbit ceil 8000kbit" in plan[1]
    assert "classid 1:10 htb rate 6000kbit ceil 8000kbit" in plan[2]  # borrows the NIC when nothing leaves
    assert "classid 1:20 htb rate 2000kbit ceil 2000kbit" in plan[3]  # never above its uplink share
    assert plan[4:] == [
        "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.3/32 flowid 1:20",
        "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.4/32 flowid 1:10",
        "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.10/32 flowid 1:10"]


def test_workers_are_found_by_the_service_name_and_named_by_ptr(ep, monkeypatch):
    sock, stop = dns_server({"10.0.0.7": "proj-worker-2.proj_default", "10.0.0.8": "proj-worker-1.proj_default",
                             "10.0.0.9": "proj-rm-1.proj_default"})
    monkeypatch.setattr(ep, "_nameserver", lambda: "127.0.0.1")
    monkeypatch.setattr(ep, "DNS_PORT", sock.getsockname()[1])
    monkeypatch.setattr(socket, "gethostbyname_ex",
                        lambda name: (name, [], ["10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.6"]))
    try:
        assert ep.discover_workers() == {"10.0.0.7": "proj-worker-2", "10.0.0.8": "proj-worker-1"}
    finally:
        stop.set()
        stop.thread.join()
        sock.close()


def net_paths(ep, monkeypatch, tmp_path):
    for name in ("NET_STATE", "NET_LOCK", "NET_OK"):
        monkeypatch.setattr(ep, name, str(tmp_path / getattr(ep, name).rsplit("/", 1)[1]))


def test_datacenter_without_tc_rights_says_why_and_is_not_ready(ep, monkeypatch, tmp_path, capsys):
    """A worker without cap_add NET_ADMIN (or without the image's tc) cannot
    shape: the state says so and the healthcheck's file is not there."""
    net_paths(ep, monkeypatch, tmp_path)
    monkeypatch.setattr(ep, "TC", str(tmp_path / "no-such-tc"))
    monkeypatch.setattr(ep, "own_address", lambda: "10.0.0.7")
    monkeypatch.setattr(ep, "discover_workers", lambda: {"10.0.0.7": "p-worker-1", "10.0.0.8": "p-worker-2"})
    state = ep.net_apply(ep.net_settings({"SLOTWISE_NET": "datacenter", "SLOTWISE_RACKS": "2",
                                          "SLOTWISE_WORKERS": "2"}))
    assert state["in_force"] == "flat" and "cap_add: [NET_ADMIN]" in state["errors"][0]
    assert not os.path.exists(ep.NET_OK)
    assert "datacenter asked, NOT in force" in capsys.readouterr().err
    assert ep.read_net_state()["errors"] == state["errors"]


NETNS_APPLY = textwrap.dedent(r"""
    import importlib.machinery, importlib.util, json, sys
    loader = importlib.machinery.SourceFileLoader("ep", sys.argv[1])
    spec = importlib.util.spec_from_loader("ep", loader)
    ep = importlib.util.module_from_spec(spec)
    loader.exec_module(ep)
    d = sys.argv[2]
    ep.NET_STATE, ep.NET_LOCK, ep.NET_OK = d + "/state.json", d + "/lock", d + "/ok"
    ep.TC = "tc"
    # Docker's DNS, as a worker of a 3-worker, 2-rack project would find it.
    ep.own_address = lambda: "10.9.0.1"
    ep.discover_workers = lambda: {"10.9.0.1": "p-worker-1", "10.9.0.2": "p-worker-2", "10.9.0.3": "p-worker-3"}
    settings = ep.net_settings({"SLOTWISE_NET": sys.argv[3], "SLOTWISE_RACKS": "2", "SLOTWISE_WORKERS": "3",
                                "SLOTWISE_NET_NIC_KBIT": "16000", "SLOTWISE_NET_OVERSUBSCRIPTION": "4"})
    print(json.dumps(ep.net_apply(settings, quiet=True)))
""")

RECEIVE = "import socket,sys,time\n" \
    "s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',7777));s.listen(1)\n" \
    "print('ready',flush=True)\n" \
    "for _ in range(2):\n" \
    " c,a=s.accept();t=time.monotonic();n=0\n" \
    " while (b:=c.recv(1<<20)): n+=len(b)\n" \
    " print(a[0],n,time.monotonic()-t,flush=True)\n"
SEND = "import socket,sys\nc=socket.create_connection((sys.argv[1],7777),source_address=(sys.argv[2],0))\n" \
    "c.sendall(b'x'*1_000_000);c.close()\n"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("tc") or not shutil.which("ip"),
                    reason="needs root, tc and ip (network namespaces)")
def test_the_plan_applied_with_tc_shapes_a_transfer_by_rack_between_namespaces(ep, tmp_path):
    """The real tc between two network namespaces joined by a veth pair:
    worker 1 sends 1 MB to worker 2's address (off its rack: 4 Mbit/s)
    and to worker 3's (its rack: 16 Mbit/s, both addresses on the other
    side), and `net flat` takes the shaping off again."""
    tag = f"swt{os.getpid()}"
    a, b = f"{tag}a", f"{tag}b"

    def ip(*args, ns=None):
        subprocess.run([*(["ip", "netns", "exec", ns] if ns else []), "ip", *args], check=True, capture_output=True,
                       timeout=30)

    ip("netns", "add", a)
    ip("netns", "add", b)
    try:
        ip("link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", b, ns=a)
        ip("addr", "add", "10.9.0.1/24", "dev", "v0", ns=a)
        ip("link", "set", "v0", "up", ns=a)
        ip("link", "set", "lo", "up", ns=a)
        for addr in ("10.9.0.2/24", "10.9.0.3/24"):
            ip("addr", "add", addr, "dev", "v1", ns=b)
        ip("link", "set", "v1", "up", ns=b)
        ip("route", "add", "default", "via", "10.9.0.2", "dev", "v0", ns=a)

        def apply(mode):
            out = subprocess.run(["ip", "netns", "exec", a, sys.executable, "-c", NETNS_APPLY, str(ENTRYPOINT),
                                  str(tmp_path), mode], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout)

        state = apply("datacenter")
        assert state["in_force"] == "datacenter" and state["complete"] and not state["errors"]
        assert state["interface"] == "v0" and state["self"] == {"name": "p-worker-1", "ip": "10.9.0.1",
                                                                "rack": "/rack1"}
        assert {p["name"]: p["class"] for p in state["peers"].values()} == {"p-worker-2": "offrack",
                                                                            "p-worker-3": "rack"}
        assert (tmp_path / "ok").read_text() == "datacenter\n"

        def transfers():
            rx = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c", RECEIVE], stdout=subprocess.PIPE,
                                  text=True)
            try:
                assert rx.stdout.readline().strip() == "ready"
                got = {}
                for dst in ("10.9.0.2", "10.9.0.3"):
                    subprocess.run(["ip", "netns", "exec", a, sys.executable, "-c", SEND, dst, "10.9.0.1"],
                                   check=True, timeout=60)
                    _src, n, secs = rx.stdout.readline().split()
                    got[dst] = int(n) * 8 / float(secs) / 1000  # kbit/s
                return got
            finally:
                rx.kill()
                rx.wait()

        shaped = transfers()
        # 1 MB: 0.5 s at 16 Mbit/s to its rack, 2 s at 4 Mbit/s off it; htb never lets either run much faster.
        assert 4000 * 0.5 < shaped["10.9.0.2"] < 4000 * 1.2, shaped
        assert 16000 * 0.5 < shaped["10.9.0.3"] < 16000 * 1.2, shaped
        assert apply("flat")["in_force"] == "flat"
        unshaped = transfers()
        assert min(unshaped.values()) > 3 * 16000, unshaped
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


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
    ep.net_watch = lambda settings: None  # the network's own tests are above
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
