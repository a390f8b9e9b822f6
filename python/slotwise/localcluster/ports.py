"""Free TCP ports on the loopback interface."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """``n`` distinct ports that are free on ``host`` right now.

    All sockets stay open until every port is picked, so the kernel cannot
    hand out the same port twice; a daemon may still lose a race with another
    program between this call and its bind (then ``up`` fails and names the
    log that says so).
    """
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
