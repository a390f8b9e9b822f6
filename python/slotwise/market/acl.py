"""Who may use the Dynamic Priority API and spend which queue's budget: the
ACL file given with ``slotwise serve --dp-acl FILE``.

One line per user: ``USER ROLE KEY [QUEUE,...]``; ROLE is ``user`` or
``admin``; KEY is the secret the user signs requests with; the optional
fourth field names queues the user holds besides the one named like them.
Blank lines and ``#`` comments are skipped.  The file must be mode 0600.  A
changed file is read again on the next request; if it does not parse, the
last good one stays in force and the error is logged.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import dataclass

log = logging.getLogger(__name__)

ROLES = ("user", "admin")
MAX_BYTES = 1 << 20


class AclError(ValueError):
    """FILE:LINE: message (or FILE: message)."""


@dataclass(frozen=True)
class Signer:
    user: str
    role: str
    key: str
    queues: frozenset[str] = frozenset()

    @property
    def admin(self) -> bool:
        return self.role == "admin"


def parse_acl(path: str) -> dict[str, Signer]:
    """The ACL file's signers by user; AclError naming FILE:LINE on the first bad line."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise AclError(f"{path}: cannot read: {e.strerror or e}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AclError(f"{path}: the ACL holds keys and must be mode 0600, is {stat.filemode(st.st_mode)}")
    if st.st_size > MAX_BYTES:
        raise AclError(f"{path}: over {MAX_BYTES} bytes")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise AclError(f"{path}: cannot read: {e}") from None
    out: dict[str, Signer] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) not in (3, 4):
            raise AclError(f"{path}:{n}: expected USER ROLE KEY [QUEUE,...], got {len(parts)} field(s)")
        user, role, key = parts[:3]
        if role not in ROLES:
            raise AclError(f"{path}:{n}: role must be user or admin, not {role!r}")
        if user in out:
            raise AclError(f"{path}:{n}: user {user!r} appears twice")
        if len(key) < 8:
            raise AclError(f"{path}:{n}: the key of {user!r} is too short (at least 8 characters)")
        queues = frozenset(q for q in parts[3].split(",") if q) if len(parts) == 4 else frozenset()
        out[user] = Signer(user, role, key, queues)
    return out


class Acl:
    """The ACL in force, read again when the file changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._signers = parse_acl(path)  # raises: a server must not start on a bad ACL
        self._stamp = _stamp(path)
        self.error: str | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lock")
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _fresh(self) -> dict[str, Signer]:
        with self._lock:
            stamp = _stamp(self.path)
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._signers = parse_acl(self.path)
                    self.error = None
                    log.info("dynamic priority: reloaded the ACL %s (%d users)", self.path, len(self._signers))
                except AclError as e:
                    self.error = str(e)
                    log.error("%s (the previous ACL stays in force)", e)
            return self._signers

    def signer(self, user: str) -> Signer | None:
        return self._fresh().get(user)

    def may_use(self, user: str, queue: str, holder: str) -> bool:
        """Whether ``user`` may act on (and submit to) ``queue``: an admin, its
        holder, or a user whose line lists it (full path or short name)."""
        s = self._fresh().get(user)
        if s is None:
            return False
        if s.admin or user == holder:
            return True
        short = queue.rsplit(".", 1)[-1]
        return queue in s.queues or short in s.queues


def _stamp(path: str):
    try:
        st = os.stat(path)
        return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
    except OSError:
        return None
