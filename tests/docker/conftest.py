"""The docker tier: docker/compose.yaml's YARN cluster (a ResourceManager
with the shim, a NameNode, two workers each a NodeManager and a DataNode,
the policy server), docker/compose-mrv1.yaml's MRv1 cluster (Hadoop
1.2.1's NameNode, a JobTracker with the shim, two workers each a
TaskTracker and a DataNode, the policy server) and docker/compose.ha.yaml's
HA cluster (ZooKeeper, two ResourceManagers each with its policy server). Each is brought up once for
the tests of its module by testcontainers' ``DockerCompose`` under a project
name of its own, with free host ports and an allocation directory of its
own, and taken down (volumes too) at the end, passed or not.

``make docker-test`` prepares the machine (engine, Compose v2, images) and
sets SLOTWISE_REQUIRE_DOCKER=1, which turns a missing engine or image into a
failure; run directly without them, the tier skips and says why.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from dockertools import REPO, STATE, DockerCluster, HaDockerCluster, Mrv1DockerCluster, docker_problem, fresh_allocations


def compose_cluster(cls):
    problem = docker_problem()
    if problem:
        if os.environ.get("SLOTWISE_REQUIRE_DOCKER") == "1":
            pytest.fail(f"the docker tier cannot run, and SLOTWISE_REQUIRE_DOCKER=1 requires it: {problem}", pytrace=False)
        pytest.skip(f"docker tier skipped: {problem}")
    from testcontainers.compose import DockerCompose

    source = REPO / "docker" / cls.ALLOCATIONS
    allocations = fresh_allocations(source, STATE / f"test-{source.parent.name}")
    env = {"COMPOSE_PROJECT_NAME": cls.PROJECT, **cls.PORTS, "SLOTWISE_WORKERS": "2", "SLOTWISE_RACKS": "2",
           "SLOTWISE_ALLOCATIONS_DIR": str(allocations), "TESTCONTAINERS_RYUK_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    compose = DockerCompose(REPO / "docker", compose_file_name=cls.COMPOSE_FILE, wait=True)
    # What an interrupted run may have left.
    subprocess.run([*compose.compose_command_property, "down", "--volumes", "--remove-orphans"],
                   cwd=REPO / "docker", capture_output=True, timeout=300)
    started = time.monotonic()
    try:
        compose.start()
        cluster = cls(compose, allocations)
        cluster.wait_ready()
        print(f"\ndocker tier: {cls.PROJECT} up in {time.monotonic() - started:.0f} s ({cluster.describe()})")
        yield cluster
    finally:
        logs = subprocess.run([*compose.compose_command_property, "logs", "--no-color", "--timestamps"],
                              cwd=REPO / "docker", capture_output=True, text=True, timeout=300)
        (STATE / f"{cls.PROJECT}-compose.log").write_text(logs.stdout + logs.stderr)
        compose.stop()  # down --volumes
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def docker_cluster():
    yield from compose_cluster(DockerCluster)


@pytest.fixture(scope="module")
def mrv1_cluster():
    yield from compose_cluster(Mrv1DockerCluster)


@pytest.fixture(scope="module")
def ha_cluster():
    yield from compose_cluster(HaDockerCluster)
