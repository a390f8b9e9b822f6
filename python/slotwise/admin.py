"""What operators can see and do while the scheduler runs.

The web UI and the REST API both go through this service; it reads the
engine under the PolicyCore's lock and carries out admin actions.  With a
ResourceManager connected, a move or a priority change goes through the
RM's own path (which calls Python's ``move`` or sends the new priority in
the next payload), so the RM and Python never disagree; with none, the
engine takes it directly.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from typing import Protocol

from .bridge.protocol import PolicyCore
from .config.watcher import ConfigStatus
from .placement import queue_path


class AdminError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ResourceManagerControl(Protocol):
    def connected(self) -> bool: ...
    def move(self, app_id: str, queue: str) -> str: ...  # "" or why not
    def priority(self, app_id: str, priority: int) -> str: ...


class SchedulerService:
    def __init__(self, core: PolicyCore, status: ConfigStatus,
                 rm: ResourceManagerControl | None = None) -> None:
        self.core = core
        self.status = status
        self.rm = rm

    # ------------------------------------------------------------------ reads
    def pools(self) -> list[dict]:
        with self.core.lock:
            return self.core.engine.describe_pools()

    def jobs(self) -> list[dict]:
        with self.core.lock:
            return self.core.engine.describe_apps()

    def leaf_pools(self) -> list[str]:
        """Where a job can be moved: the file's leaf pools and any dynamic leaf."""
        with self.core.lock:
            return sorted(p.name for p in self.core.engine.pools.values()
                          if not p.children and not p.is_parent and p.name != "root")

    def config(self) -> dict:
        d = self.status.to_dict()
        d["resource_manager_connected"] = bool(self.rm and self.rm.connected())
        return d

    def preemptions(self) -> list[dict]:
        return list(reversed(self.core.recent_preemptions))

    # ---------------------------------------------------------------- actions
    def move_job(self, app_id: str, pool: str) -> str:
        pool = (pool or "").strip()
        if not pool:
            raise AdminError(400, "field 'pool': a pool name is required")
        target = queue_path(pool)
        self._known(app_id)
        if self.rm is not None and self.rm.connected():
            err = self.rm.move(app_id, target)
            if err:
                raise AdminError(409, f"the ResourceManager refused to move {app_id} to {target}: {err}")
            return self._pool_of(app_id)
        try:
            return self.core.admin_move(app_id, target)
        except KeyError:
            raise AdminError(404, f"unknown job {app_id}") from None
        except ValueError as e:
            raise AdminError(409, str(e)) from None

    def set_priority(self, app_id: str, priority: int) -> int:
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise AdminError(400, "field 'priority': an integer is required")
        self._known(app_id)
        if self.rm is not None and self.rm.connected():
            err = self.rm.priority(app_id, priority)
            if err:
                raise AdminError(409, f"the ResourceManager refused priority {priority} for {app_id}: {err}")
            return priority
        try:
            self.core.admin_priority(app_id, priority)
        except KeyError:
            raise AdminError(404, f"unknown job {app_id}") from None
        return priority

    def _known(self, app_id: str) -> None:
        with self.core.lock:
            if app_id not in self.core.engine.apps:
                raise AdminError(404, f"unknown job {app_id}")

    def _pool_of(self, app_id: str) -> str:
        with self.core.lock:
            app = self.core.engine.apps.get(app_id)
            return app.pool.name if app else ""


class AdminToken:
    """The admin secret: read from a 0600 file, or made with ``secrets`` and
    written there (0600) on first start."""

    def __init__(self, value: str) -> None:
        if len(value) < 16:
            raise ValueError("admin token too short (at least 16 characters)")
        self.value = value

    @classmethod
    def from_file(cls, path: str) -> "AdminToken":
        if os.path.exists(path):
            st = os.stat(path)
            if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError(f"{path}: admin token file must be mode 0600, is {stat.filemode(st.st_mode)}")
            with open(path, encoding="utf-8") as f:
                return cls(f.read().strip())
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        value = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(value + "\n")
        return cls(value)

    def check(self, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), self.value.encode())

    def session(self) -> str:
        """The UI's cookie value: derived from the token, never the token."""
        return hmac.new(self.value.encode(), b"slotwise-ui-session", "sha256").hexdigest()

    def check_session(self, cookie: str | None) -> bool:
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self.session().encode())
