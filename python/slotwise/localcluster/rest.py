"""The ResourceManager's REST API (``/ws/v1/cluster/...``), read-only."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


class RestError(OSError):
    pass


class RMRest:
    def __init__(self, base_url: str, timeout: float = 5.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str) -> dict:
        req = urllib.request.Request(self.base_url + path, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode() or "{}")
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise RestError(f"GET {self.base_url + path}: {e}") from e

    def info(self) -> dict:
        """``clusterInfo``: state (STARTED when up), haState, hadoopVersion..."""
        return self.get("/ws/v1/cluster/info").get("clusterInfo", {})

    def nodes(self) -> list[dict]:
        """All NodeManagers the RM knows, in any state."""
        nodes = self.get("/ws/v1/cluster/nodes?states=NEW,RUNNING,UNHEALTHY,DECOMMISSIONING,"
                         "DECOMMISSIONED,LOST,REBOOTED,SHUTDOWN").get("nodes") or {}
        return nodes.get("node") or []

    def apps(self) -> list[dict]:
        apps = self.get("/ws/v1/cluster/apps").get("apps") or {}
        return sorted(apps.get("app") or [], key=lambda a: a.get("id", ""))

    def app(self, app_id: str) -> dict:
        return self.get(f"/ws/v1/cluster/apps/{app_id}").get("app", {})

    def metrics(self) -> dict:
        return self.get("/ws/v1/cluster/metrics").get("clusterMetrics", {})
