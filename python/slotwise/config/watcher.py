"""Hot reload: watch the allocation file and hand over each good version.

Editors save by writing a temporary file and renaming it over the old one,
so the watch is on the file's directory, not the file.  Docker's single-file
bind mounts hide those renames from the container, so a cheap stat check
runs beside the watch as a safety net; with ``poll`` set (filesystems without
inotify: NFS, some container mounts) watchdog's polling observer does the
watching instead.  Every change is debounced, then the whole file is parsed;
a bad file never replaces the last good one, and its errors stay reported
until a good version arrives.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from .errors import ConfigError, ConfigErrors
from .loader import parse_allocations
from .model import AllocationConfig

log = logging.getLogger("slotwise.reload")


@dataclass
class ConfigStatus:
    """What the UI and API show about the allocation file."""

    path: str
    loaded_at: float | None = None  # wall-clock time of the last good load
    sha256: str | None = None  # of the loaded (good) content
    text: str = ""  # the loaded file's content
    errors: list[str] = field(default_factory=list)  # FILE:LINE: message, until fixed
    warnings: list[str] = field(default_factory=list)  # of the file in force: what YARN ignores or adjusts
    error_at: float | None = None
    reloads: int = 0
    failures: int = 0

    def to_dict(self) -> dict:
        return {"path": self.path, "loaded_at": self.loaded_at, "sha256": self.sha256,
                "errors": list(self.errors), "warnings": list(self.warnings), "error_at": self.error_at,
                "reloads": self.reloads,
                "failures": self.failures, "content": self.text}


class ConfigWatcher:
    def __init__(self, path: str, on_config: Callable[[AllocationConfig, str], None],
                 status: ConfigStatus | None = None, poll: float | None = None,
                 debounce: float = 0.1, stat_interval: float = 1.0,
                 on_error: Callable[[list[str]], None] | None = None) -> None:
        self.path = os.path.abspath(path)
        self.on_config = on_config
        self.on_error = on_error
        self.status = status or ConfigStatus(path)
        self.poll = poll
        self.debounce = debounce
        self.stat_interval = stat_interval
        self._seen: str | None = self.status.sha256  # hash of the last content looked at
        self._stat = self._signature()
        self._lock = threading.Lock()
        self._check_lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._stop = threading.Event()
        self._observer = None
        self._ticker: threading.Thread | None = None

    # -------------------------------------------------------------- running
    def start(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event):
                # Opens and read-only closes change nothing (and our own read
                # of the file makes them: reacting would loop forever).
                if event.event_type in ("opened", "closed_no_write"):
                    return
                paths = {os.path.abspath(p) for p in (event.src_path, getattr(event, "dest_path", ""))
                         if p}
                name = os.path.basename(watcher.path)
                # The file itself, or anything an editor's or a ConfigMap's
                # rename dance touches in its directory.
                if watcher.path in paths or any(os.path.basename(p).startswith((name, "..")) for p in paths):
                    watcher.changed()

        self._observer = PollingObserver(timeout=self.poll) if self.poll else Observer()
        self._observer.schedule(Handler(), os.path.dirname(self.path), recursive=False)
        self._observer.daemon = True
        self._observer.start()
        if not self.poll and self.stat_interval > 0:
            self._ticker = threading.Thread(target=self._tick, name="slotwise-config-stat", daemon=True)
            self._ticker.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            if self._timer:
                self._timer.cancel()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(5)

    def _tick(self) -> None:
        while not self._stop.wait(self.stat_interval):
            sig = self._signature()
            if sig != self._stat:
                self.changed()

    def _signature(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def changed(self) -> None:
        """Something happened to the file: look again once it is quiet."""
        with self._lock:
            if self._timer:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self.check)
            self._timer.daemon = True
            self._timer.start()

    # ------------------------------------------------------------- checking
    def check(self) -> bool:
        """Read and parse the file if its content changed; True if a new
        config was handed over.  One at a time, so an older version can
        never land after a newer one."""
        with self._check_lock:
            return self._check()

    def _check(self) -> bool:
        if self._stop.is_set():
            return False
        self._stat = self._signature()
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            # Deleted (or mid-rename): keep the last good config, say so, and
            # take whatever comes back, even the same content, as new.
            if self._seen is not None:
                self._seen = None
                self._failed([f"{self.status.path}: file is missing; the last good version stays in force"],
                             None)
            return False
        except OSError as e:
            self._failed([f"{self.status.path}: cannot read: {e.strerror or e}"], None)
            return False
        digest = hashlib.sha256(data).hexdigest()
        if digest == self._seen:
            return False
        self._seen = digest
        try:
            config = parse_allocations(data, self.status.path)
        except ConfigErrors as e:
            self._failed([str(x) for x in e.errors], digest)
            return False
        except Exception as e:  # a parser bug: still an error the status shows, never a silent skip
            log.exception("parsing %s failed", self.status.path)
            self._failed([str(ConfigError(self.status.path, None, f"cannot parse: {type(e).__name__}: {e}"))],
                         digest)
            return False
        text = data.decode("utf-8", errors="replace")
        try:
            self.on_config(config, text)
        except ValueError as e:  # valid on its own, but not over the running state
            self._failed(str(e).splitlines(), digest)
            self._seen = None  # the same content may fit once the jobs are gone
            return False
        s = self.status
        s.loaded_at, s.sha256, s.text = time.time(), digest, text
        s.errors, s.error_at, s.warnings = [], None, list(config.warnings)
        s.reloads += 1
        log.info("reloaded %s", self.status.path)
        for w in config.warnings:
            log.warning("%s", w)
        return True

    def _failed(self, errors: list[str], digest) -> None:
        s = self.status
        s.errors, s.error_at = errors, time.time()
        s.failures += 1
        for e in errors:
            log.error("allocation file not reloaded, keeping the last good one: %s", e)
        if self.on_error:
            self.on_error(errors)


def load_with_status(path: str) -> tuple[AllocationConfig, ConfigStatus]:
    """The first load, at start-up (raises ConfigErrors), with its status."""
    with open(path, "rb") as f:
        data = f.read()
    config = parse_allocations(data, path)
    text = data.decode("utf-8", errors="replace")
    for w in config.warnings:
        log.warning("%s", w)
    return config, ConfigStatus(path, time.time(), hashlib.sha256(data).hexdigest(), text,
                                warnings=list(config.warnings))
