"""An embedded, real Hadoop YARN cluster on this machine.

One ResourceManager and N NodeManagers, each its own JVM, built from the
Hadoop jars that ``java-shim/pom.xml`` lists (resolved by Maven from Maven
Central), with generated configuration under one cluster directory. For
newcomers (``slotwise cluster up``) and for integration tests
(``with LocalCluster(...) as cluster:``). See ``docs/local-cluster.md``.
"""

from .cluster import FIFO_SCHEDULER, SHIM_SCHEDULER, LocalCluster
from .errors import ClusterError
from .jobs import JobResult
from .paths import default_cluster_dir, find_repo

__all__ = [
    "FIFO_SCHEDULER",
    "SHIM_SCHEDULER",
    "ClusterError",
    "JobResult",
    "LocalCluster",
    "default_cluster_dir",
    "find_repo",
]
