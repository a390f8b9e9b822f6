"""The docker tier: docker/compose.yaml's cluster (a ResourceManager with the
shim, a NameNode, two workers each a NodeManager and a DataNode, the policy
server), brought up once for these tests
by testcontainers' ``DockerCompose`` under its own project name, with free
host ports and an allocation directory of its own, and taken down (volumes
too) at the end, passed or not.

``make docker-test`` prepares the machine (engine, Compose v2, images) and
sets SLOTWISE_REQUIRE_DOCKER=1, which turns a missing engine or image into a
failure; run directly without them, the tier skips and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from dockertools import PROJECT, REPO, STATE, DockerCluster, docker_problem


@pytest.fixture(scope="module")
def docker_cluster():
    problem = docker_problem()
    if problem:
        if os.environ.get("SLOTWISE_REQUIRE_DOCKER") == "1":
            pytest.fail(f"the docker tier cannot run, and SLOTWISE_REQUIRE_DOCKER=1 requires it: {problem}")
        pytest.skip(f"docker tier skipped: {problem}")
    from testcontainers.compose import DockerCompose

    allocations = STATE / "test-allocations"
    shutil.rmtree(allocations, ignore_errors=True)
    allocations.mkdir(parents=True)
    allocations.chmod(0o755)  # the policy container reads it as uid 1000
    shutil.copy(REPO / "docker" / "allocations" / "fair-scheduler.xml", allocations / "fair-scheduler.xml")
    (allocations / "fair-scheduler.xml").chmod(0o644)
    env = {"COMPOSE_PROJECT_NAME": PROJECT, "SLOTWISE_RM_WEB_PORT": "", "SLOTWISE_HTTP_PORT": "",
           "SLOTWISE_NN_WEB_PORT": "", "SLOTWISE_WORKERS": "2", "SLOTWISE_RACKS": "2",
           "SLOTWISE_ALLOCATIONS_DIR": str(allocations), "TESTCONTAINERS_RYUK_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    compose = DockerCompose(REPO / "docker", compose_file_name="compose.yaml", wait=True)
    # What an interrupted run may have left.
    subprocess.run([*compose.compose_command_property, "down", "--volumes", "--remove-orphans"],
                   cwd=REPO / "docker", capture_output=True, timeout=300)
    started = time.monotonic()
    try:
        compose.start()
        cluster = DockerCluster(compose, allocations)
        cluster.wait_ready()
        print(f"\ndocker tier: compose cluster up in {time.monotonic() - started:.0f} s "
              f"(RM web 127.0.0.1:{cluster.rm_port}, Slotwise 127.0.0.1:{cluster.http_port}, "
              f"NameNode 127.0.0.1:{cluster.nn_port})")
        yield cluster
    finally:
        logs = subprocess.run([*compose.compose_command_property, "logs", "--no-color", "--timestamps"],
                              cwd=REPO / "docker", capture_output=True, text=True, timeout=300)
        (STATE / "test-compose.log").write_text(logs.stdout + logs.stderr)
        compose.stop()  # down --volumes
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
