"""serve's shadow policy: started from a watched file (``serve --shadow
FILE``) or at run time (``POST /api/v1/shadow``), stopped, and promoted (the
candidate written as the live allocation file, which its watcher applies as
any reload). One shadow at a time; starting another replaces it."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time

from .config import ConfigErrors, parse_allocations
from .shadow import off_status
from .shadow_process import ShadowProcess

log = logging.getLogger("slotwise.shadow")


class ShadowError(Exception):
    """A candidate refused (its FILE:LINE: lines) or an action that cannot be done now."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ShadowService:
    def __init__(self, core, allocations: str | None, event_log=None, poll: float | None = None) -> None:
        self.core = core
        #: The live allocation file ``promote`` writes (None: no file to write).
        self.allocations = allocations
        self.event_log = event_log
        self.poll = poll
        self.shadow: ShadowProcess | None = None
        self.watcher = None
        self.errors: list[str] = []  # of the candidate file on disk, until fixed
        self._lock = threading.Lock()

    # ------------------------------------------------------------- starting
    def watch(self, path: str) -> None:
        """``serve --shadow FILE``: the file checked now and on every change,
        as the live file is; a bad version is logged (FILE:LINE: message) and
        leaves the shadow as it was."""
        from .config.watcher import ConfigStatus, ConfigWatcher

        self.stop_watching()
        watcher = ConfigWatcher(path, self._from_file, ConfigStatus(path), poll=self.poll,
                                on_error=self._file_failed,
                                failed_words="shadow candidate not taken (the live policy is unaffected)")
        self.watcher = watcher
        watcher.check()
        watcher.start()

    def _from_file(self, config, text: str) -> None:
        self.errors = []
        with self._lock:
            s = self.shadow
            if s is not None and s.state == "running":
                s.set_candidate(config, text)  # ValueError: the watcher reports it as a failed reload
                log.info("shadow candidate %s reloaded", config.source)
                return
        self._start(config, text, config.source)

    def _file_failed(self, errors: list[str]) -> None:
        self.errors = list(errors)

    def start_text(self, text: str, source: str) -> dict:
        """``POST /api/v1/shadow``: a candidate sent whole (the watch of a
        file, if any, ends: the last one started wins)."""
        try:
            config = parse_allocations(text, source)
        except ConfigErrors as e:
            raise ShadowError(400, "\n".join(str(x) for x in e.errors)) from None
        self.stop_watching()
        try:
            self._start(config, text, source)
        except ValueError as e:
            raise ShadowError(400, str(e)) from None
        return self.status()

    def _start(self, config, text: str, source: str) -> None:
        with self.core._lock:  # validated as a reload is: over the live state
            conflicts = self.core._engine.config_conflicts(config)
        if conflicts:
            raise ValueError("\n".join(conflicts))
        s = ShadowProcess(config, text, source, event_log=self.event_log)  # on a core of its own
        with self._lock:
            self.shadow = s
        s.attach(self.core)  # replaces (and stops) the one before

    # ------------------------------------------------------------- stopping
    def stop_watching(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        self.errors = []

    def stop(self) -> dict:
        """``DELETE /api/v1/shadow``."""
        self.stop_watching()
        s = self.shadow
        if s is not None:
            s.stop()
        return self.status()

    def close(self) -> None:
        self.stop()

    # ---------------------------------------------------------- promoting
    def promote(self) -> dict:
        """The candidate written as the live allocation file, atomically
        (a temporary file beside it renamed over it), the old one kept as
        FILE.bak-<timestamp>; the live file's watcher applies it."""
        s = self.shadow
        if s is None or s.text is None:
            raise ShadowError(409, "no candidate to promote: start a shadow first")
        if not self.allocations:
            raise ShadowError(409, "this server watches no allocation file to write")
        path = self.allocations
        directory = os.path.dirname(os.path.abspath(path))
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = f"{path}.bak-{stamp}"
        n = 1
        while os.path.exists(backup):
            n += 1
            backup = f"{path}.bak-{stamp}-{n}"
        try:
            with open(path, "rb") as old:
                before = old.read()
            mode = os.stat(path).st_mode & 0o777
            with open(backup, "xb") as out:
                out.write(before)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".slotwise-promote-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(s.text.encode("utf-8"))
                    out.flush()
                    os.fsync(out.fileno())
                os.chmod(tmp, mode)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as e:
            raise ShadowError(500, f"cannot write {path}: {e.strerror or e}") from None
        log.info("promoted the shadow's candidate %s to %s (the old one kept as %s)", s.source, path, backup)
        return {"file": path, "backup": backup, "candidate": s.source}

    # ------------------------------------------------------------- reading
    def summary(self) -> dict:
        """The counts alone (for /metrics: cheap)."""
        s = self.shadow
        return s.summary() if s is not None else {"state": "off", "compared": 0, "diverged": 0, "skipped": 0}

    def candidate_text(self) -> str | None:
        """The candidate file as started (the console diffs it against the live one)."""
        s = self.shadow
        return s.text if s is not None else None

    def status(self) -> dict:
        s = self.shadow
        out = s.status() if s is not None else off_status()
        if self.watcher is not None:
            out["file"] = self.watcher.status.path
        out["file_errors"] = list(self.errors)
        return out
