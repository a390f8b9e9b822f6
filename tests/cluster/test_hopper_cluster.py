"""Hopper on a real YARN cluster: MapReduce jobs with speculation on, in a
pool whose schedulingPolicy is hopper.  One job has a straggler; the
MapReduce AM's speculator asks the ResourceManager for a speculative
attempt (an ordinary map request), Python places it, the copy wins, and
both jobs finish."""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from support import skip_without_java
from test_shim_cluster import Serve

pytestmark = pytest.mark.cluster

ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
  <queue name="jobs">
    <schedulingPolicy>hopper</schedulingPolicy>
  </queue>
  <queue name="default"/>
</allocations>
"""
JAVA_SRC = os.path.join(os.path.dirname(__file__), "java", "StragglerJob.java")


def build_straggler_jar(state, out_dir) -> str:
    """Compile the test's MapReduce job against the cluster's Hadoop jars."""
    classes = out_dir / "classes"
    classes.mkdir()
    javac = os.path.join(state.java_home, "bin", "javac")
    jar = os.path.join(state.java_home, "bin", "jar")
    subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", os.pathsep.join(state.classpath), JAVA_SRC],
                   check=True, capture_output=True, timeout=300)
    path = out_dir / "straggler.jar"
    subprocess.run([jar, "cfe", str(path), "StragglerJob", "-C", str(classes), "."], check=True, timeout=120)
    return str(path)


def counter(log: str, name: str) -> int | None:
    m = re.search(rf"\b{re.escape(name)}=(\d+)", log)
    return int(m.group(1)) if m else None


def test_speculative_attempts_go_through_hopper_and_jobs_finish(tmp_path):
    import threading

    from slotwise.localcluster import SHIM_SCHEDULER, LocalCluster

    skip_without_java("local YARN cluster")
    allocations = tmp_path / "allocations.xml"
    allocations.write_text(ALLOCATIONS)
    cluster = LocalCluster(tmp_path / "cluster", nodes=2, scheduler=SHIM_SCHEDULER, start_timeout=300,
                           conf={"slotwise.policy.timeout-ms": "2000"})
    serve = Serve(cluster, allocations, tmp_path / "events.jsonl")
    try:
        cluster.up()
        jar = build_straggler_jar(cluster.state, tmp_path)
        serve.start()
        results = {}

        def run(name, program, args):
            results[name] = cluster.submit(program, args, pool="root.jobs", timeout=400)

        # A straggler job (6 maps of 3 s, the first attempt of map 0 takes
        # 120 s) beside a sleep job of 8 maps: both ask Hopper for containers.
        t_strag = threading.Thread(target=run, args=("straggler", jar, ["6", "3000", "120000"]))
        t_sleep = threading.Thread(target=run, args=("sleep", "sleep", ["-m", "8", "-r", "0", "-mt", "4000"]))
        started = time.time()
        t_strag.start()
        time.sleep(2)
        t_sleep.start()
        t_strag.join(450)
        t_sleep.join(450)
        strag, sleep = results["straggler"], results["sleep"]
        assert sleep.succeeded, sleep.log
        assert strag.succeeded, strag.log
        log = open(strag.log, encoding="utf-8", errors="replace").read()
        # MapReduce launched a seventh map attempt (the speculative one), and
        # the job ended before the straggler's 120 s would have let it: the
        # copy won (the loser's "Killed map tasks" counter is not always
        # reported by the time the job ends).
        assert counter(log, "Launched map tasks") == 7, log[-3000:]
        assert strag.seconds < 115, strag.seconds
        events = serve.events()
        assigns = [e for e in events if e["event"] == "assign" and e.get("app") == strag.app_id]
        # The AM's container and all seven map attempts were Python's decisions, in root.jobs.
        assert len(assigns) >= 8, assigns
        assert all(e["pool"] == "root.jobs" for e in assigns)
        # No FIFO episode began once the jobs were in (the one before Python
        # registered may end a heartbeat after it).
        assert not [e for e in events if e["event"] == "fallback" and e["started"] > started]
    finally:
        serve.stop()
        cluster.down()
