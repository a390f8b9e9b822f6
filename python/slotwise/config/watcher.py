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

import dataclasses
import hashlib
import logging
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from .errors import ConfigError, ConfigErrors
from .loader import parse_allocations, read_allocation_file
from .model import AllocationConfig, PlacementRule, QueueConfig, ResourceSpec

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
                 on_error: Callable[[list[str]], None] | None = None,
                 failed_words: str = "allocation file not reloaded, keeping the last good one") -> None:
        self.path = os.path.abspath(path)
        self.on_config = on_config
        self.on_error = on_error
        #: What the log says before each error of a version not taken.
        self.failed_words = failed_words
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
        self._config: AllocationConfig | None = None  # the last one handed over
        # What the watcher has reacted to, for tests that must know it has
        # seen everything before saying "nothing happened": the paths of the
        # last event on any file in the directory, the changes to the file
        # noticed, the checks asked for and done, and how many changes had
        # been noticed when the last check done began.
        self.last_event: tuple[str, ...] = ()
        self.changes = 0
        self.checks_asked = 0
        self.checks = 0
        self.checked_changes = 0

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
                if not event.is_directory:
                    watcher.last_event = tuple(sorted(paths))
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
            self.changes += 1
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
        with self._lock:
            self.checks_asked += 1
        with self._check_lock:
            begun = self.changes
            try:
                return self._check()
            except Exception as e:  # never a silent stop: the status (API, UI) shows it
                log.exception("checking %s failed", self.status.path)
                self._seen = None
                self._failed([str(ConfigError(self.status.path, None,
                                              f"cannot reload: {type(e).__name__}: {e}"))], None)
                return False
            finally:
                self.checked_changes = begun
                self.checks += 1

    def _check(self) -> bool:
        if self._stop.is_set():
            return False
        self._stat = self._signature()
        try:
            data = read_allocation_file(self.path)
        except FileNotFoundError:
            # Deleted (or mid-rename): keep the last good config, say so, and
            # take whatever comes back, even the same content, as new.
            if self._seen is not None:
                self._seen = None
                self._failed([f"{self.status.path}: file is missing; the last good version stays in force"],
                             None)
            return False
        except ConfigErrors as e:  # not a regular file, too big, unreadable: the last good stays
            self._seen = None
            self._failed([str(x) for x in e.errors], None)
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
        previous = self._in_force()
        s = self.status
        s.loaded_at, s.sha256, s.text = time.time(), digest, text
        s.errors, s.error_at, s.warnings = [], None, list(config.warnings)
        s.reloads += 1
        self._config = config
        try:
            log.info("%s", reload_message(self.status.path, previous, config))
        except Exception:  # the file is in force; a log line must not say otherwise
            log.exception("reloaded %s (what changed could not be described)", self.status.path)
        for w in config.warnings:
            log.warning("%s", w)
        return True

    def _in_force(self) -> AllocationConfig | None:
        """The config in force before this reload: the last one handed over,
        else the start-up file's (parsed again from its text)."""
        if self._config is None and self.status.text:
            try:
                self._config = parse_allocations(self.status.text.encode("utf-8"), self.status.path)
            except Exception:  # it loaded once; if not now, the log line just says less
                log.debug("cannot parse the previous %s again", self.status.path, exc_info=True)
        return self._config

    def _failed(self, errors: list[str], digest) -> None:
        s = self.status
        s.errors, s.error_at = errors, time.time()
        s.failures += 1
        for e in errors:
            log.error("%s: %s", self.failed_words, e)
        if self.on_error:
            self.on_error(errors)


# ------------------------------------------------- what a reload changed
def _elements(fmt: str) -> tuple[dict[str, str], dict[str, str], str]:
    """The file format's own element names for the queue (MRv1: pool) fields, the
    top-level fields and a user's limit, from its parser's tables; fields a
    format derives (an MRv1 pool's min resources are its minMaps) have none."""
    if fmt == "mrv1":
        from . import mrv1_xml as parser

        queue, top = parser.POOL_FIELDS, parser.TOP_FIELDS
    else:
        from . import yarn_xml as parser

        queue, top = parser.QUEUE_FIELDS, parser.TOP_FIELDS

    def by_field(table, cls) -> dict[str, str]:
        known = {f.name for f in dataclasses.fields(cls)}
        out: dict[str, str] = {}
        for element, (name, _check) in table.items():
            if isinstance(name, str) and name in known and name not in out:  # the first name; aliases after it
                out[name] = element
        return out

    return (by_field(queue, QueueConfig), by_field(top, AllocationConfig), next(iter(parser.USER_FIELDS)))


def _value(v) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "infinite" if math.isinf(v) else f"{v:g}"
    if isinstance(v, ResourceSpec):
        parts = []
        for dim, unit in (("memory", "mb"), ("vcores", "vcores")):
            absolute = getattr(v, "memory_mb" if dim == "memory" else "vcores")
            pct = getattr(v, f"{dim}_pct")
            if absolute is not None:
                parts.append(f"{absolute:g} {unit}")
            elif pct is not None:
                parts.append(f"{dim} {pct:g}%")
        return ", ".join(parts) or "unlimited"
    return str(v)


def _settings(obj, elements: dict[str, str]) -> dict[str, str]:
    """The values a queue (or the file's top level) sets, as text, by
    element name; a queue's weight first, as an operator reads it."""
    out = {}
    if isinstance(obj, QueueConfig) and "min_resources" in elements:  # YARN: the type="parent" attribute
        out["type"] = "parent" if obj.is_parent else "leaf"
    for name in sorted(elements, key=lambda n: n != "weight"):
        out[elements[name]] = _value(getattr(obj, name))
    return out


def _rule(r: PlacementRule) -> str:
    args = [f"create={'true' if r.create else 'false'}"] if r.name not in ("default", "reject") else []
    if r.queue:
        args.append(f"queue={r.queue}")
    if r.parent is not None:
        args.append(f"parent={_rule(r.parent)}")
    return f"{r.name}({', '.join(args)})" if args else r.name


def _diff(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [f"{k} {before.get(k, 'unset')} -> {after.get(k, 'unset')}" for k in after | before
            if before.get(k, "unset") != after.get(k, "unset")]


def describe_changes(old: AllocationConfig, new: AllocationConfig) -> list[str]:
    """What a reload changes, in the file's own words, one item per queue or
    setting: ``added root.x``, ``removed root.y``,
    ``root.prod weight 2 -> 3, maxRunningApps 4 -> 6``.  Comments, layout,
    line numbers and the order of queues are no change."""
    out: list[str] = []
    if old.format != new.format:
        out.append(f"format {old.format} -> {new.format}")
    queue_el, top_el, user_el = _elements(new.format)
    before: dict[str, QueueConfig] = old.queues()
    after: dict[str, QueueConfig] = new.queues()
    added = [q for q in after if q not in before]
    removed = [q for q in before if q not in after]
    if added:
        out.append("added " + ", ".join(added))
    if removed:
        out.append("removed " + ", ".join(removed))
    for name, q in after.items():
        if name in before:
            changed = _diff(_settings(before[name], queue_el), _settings(q, queue_el))
            if changed:
                out.append(f"{name} " + ", ".join(changed))
    changed = _diff(_settings(old, top_el), _settings(new, top_el))
    if changed:
        out.append(", ".join(changed))
    for user in sorted(set(old.users) | set(new.users)):
        a = old.users.get(user)
        b = new.users.get(user)
        va = _value(a.max_running_apps) if a else "unset"
        vb = _value(b.max_running_apps) if b else "unset"
        if va != vb:
            out.append(f"user {user} {user_el} {va} -> {vb}")
    rules_before = [_rule(r) for r in old.placement_rules]
    rules_after = [_rule(r) for r in new.placement_rules]
    if rules_before != rules_after:
        out.append(f"queuePlacementPolicy {' > '.join(rules_before) or 'unset'} -> "
                   f"{' > '.join(rules_after) or 'unset'}")
    return out


def reload_message(path: str, old: AllocationConfig | None, new: AllocationConfig) -> str:
    """The log line of a good reload: the file and what changed."""
    if old is None:
        return f"reloaded {path}"
    changes = describe_changes(old, new)
    if changes:
        return f"reloaded {path}: " + "; ".join(changes)
    if new.warnings:  # an element YARN ignores is no "layout only" change: say what was ignored
        said = "; ".join(str(w) for w in new.warnings[:3]) + (
            f"; and {len(new.warnings) - 3} more" if len(new.warnings) > 3 else "")
        return f"reloaded {path}: nothing that takes effect changed; {len(new.warnings)} warning(s): {said}"
    return f"reloaded {path}: nothing that takes effect changed (comments or layout only)"


def load_with_status(path: str) -> tuple[AllocationConfig, ConfigStatus]:
    """The first load, at start-up (raises ConfigErrors), with its status."""
    try:
        data = read_allocation_file(path)
    except FileNotFoundError as e:
        raise ConfigErrors([ConfigError(path, None, f"cannot read allocation file: {e.strerror or e}")]) from None
    config = parse_allocations(data, path)
    text = data.decode("utf-8", errors="replace")
    for w in config.warnings:
        log.warning("%s", w)
    return config, ConfigStatus(path, time.time(), hashlib.sha256(data).hexdigest(), text,
                                warnings=list(config.warnings))
