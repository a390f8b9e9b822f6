"""Real two-NodeManager YARN clusters: one with YARN's FIFO scheduler, one
with the Slotwise shim and a Python policy server, each started once per
test module (never both at once: this machine has two cores).

The cluster tests need a JDK (17) and Maven; without them they are skipped.
Deselect them with ``pytest -m "not cluster"``.
"""

from __future__ import annotations

import os
import shutil

import pytest

from slotwise.localcluster import LocalCluster
from support import skip_without_java


def skip_without_tools() -> None:
    skip_without_java("local YARN cluster")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    skip_without_tools()
    cluster = LocalCluster(tmp_path_factory.mktemp("yarn"), nodes=2, start_timeout=300)
    try:
        cluster.up()  # on failure up() itself stops whatever it started
        yield cluster
    finally:
        cluster.down()  # idempotent; never leave a JVM behind
