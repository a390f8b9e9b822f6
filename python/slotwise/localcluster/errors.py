"""The one exception the local cluster raises for anything a user can act on."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """Something went wrong starting, using or stopping the local cluster.

    The message says what happened and, where there is one, which log file to
    read; the CLI prints it as is.
    """
