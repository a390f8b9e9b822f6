"""Real clusters, each started once per test module: YARN's (the Slotwise
shim, two NodeManagers, a Python policy server) in test_shim_cluster, and
Hadoop 1.2.1 MRv1 ones in test_mrv1_*.

The cluster tests need a JDK (17) and Maven; without them they are skipped.
Deselect them with ``pytest -m "not cluster"``.
"""

from __future__ import annotations

from support import skip_without_java


def skip_without_tools() -> None:
    skip_without_java("local YARN cluster")
