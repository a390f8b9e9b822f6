"""serve's shadow policy: started from a watched file (``serve --shadow
FILE``) or at run time (``POST /api/v1/shadow``), stopped, and promoted (the
candidate written as the live allocation file, which its watcher applies as
any reload). One shadow at a time; starting another replaces it. Its
report (``GET /api/v1/shadow/report``) plays serve's recorded log under the
candidate in a child process (shadow_report.py), never in this one."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time

from .config import ConfigErrors, parse_allocations
from .shadow import check_candidate, off_status
from .shadow_process import ShadowProcess, child_env
from .shadow_report import CHILD_WALL_S, MAX_SINCE_S

log = logging.getLogger("slotwise.shadow")

#: CPU seconds a report's child may spend (under its wall time, so a slow
#: play usually stops with its own line rather than being killed).
CHILD_CPU_S = 240.0
#: How much lower the child's priority is than serve's.
CHILD_NICE = 10
#: The largest event log the child reads, and the address space it may take
#: (a report reads the whole log: past these it says so, never pressing the
#: live policy's host for memory).
CHILD_LOG_BYTES = 256 * 2**20
CHILD_MEMORY_MB = 3072
#: The most of a child's stdout (its JSON) and of its stderr read.
CHILD_OUT_BYTES = 8 * 2**20
CHILD_ERR_BYTES = 64 * 2**10
#: How long a report is given again to the same question without a new play.
REPORT_KEPT_S = 60.0


class ShadowError(Exception):
    """A candidate refused (its FILE:LINE: lines) or an action that cannot be done now."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ShadowService:
    def __init__(self, core, allocations: str | None, event_log=None, poll: float | None = None,
                 log_path: str | None = None) -> None:
        self.core = core
        #: The live allocation file ``promote`` writes (None: no file to write).
        self.allocations = allocations
        self.event_log = event_log
        #: The event log's path, which a report plays when the core records inputs.
        self.log_path = log_path
        self.poll = poll
        self.shadow: ShadowProcess | None = None
        self.watcher = None
        self.errors: list[str] = []  # of the candidate file on disk, until fixed
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._reporting = threading.Lock()  # one report's child at a time
        self._reports: dict[tuple, tuple[float, dict]] = {}  # (text, source, since) -> (made, report)
        #: Report children started (each costs a play; the tests count them).
        self.reports_played = 0

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
        """One start at a time (the watcher's and a POST's): the last one
        started is the one ``self.shadow`` names and the one running."""
        with self._starting:
            check_candidate(self.core, config)  # ValueError: FILE:LINE: lines
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

    # ------------------------------------------------------------ reporting
    def report(self, since) -> dict:
        """``GET /api/v1/shadow/report``: the candidate the shadow runs against
        serve's recorded log, played by a child process (``play_report``);
        one at a time, and the same question answered from the last minute's
        report. Takes no lock the heartbeat takes."""
        seconds = _since(since)
        s = self.shadow
        if s is None or s.state != "running" or s.text is None:
            raise ShadowError(409, "no shadow runs: start one first")
        if not self.log_path or not self.core.record_inputs:
            raise ShadowError(409, "serve records no inputs: start serve with --record --event-log FILE")
        key = (s.text, s.source, seconds)
        kept = self._reports.get(key)
        if kept is not None and time.monotonic() - kept[0] < REPORT_KEPT_S:
            return kept[1]
        if not self._reporting.acquire(blocking=False):
            raise ShadowError(409, "another shadow report is under way; try again when it is done")
        try:
            self.reports_played += 1
            began = time.monotonic()
            out = play_report(self.log_path, *key)
            now = time.monotonic()
            log.info("shadow report of %s over the last %d s played in a child in %.1f s", s.source, seconds,
                     now - began)
            self._reports = {**{k: v for k, v in self._reports.items() if now - v[0] < REPORT_KEPT_S},
                             key: (now, out)}
        finally:
            self._reporting.release()
        return out


def _since(text) -> int:
    """The window in whole seconds (as the answers are kept): 1 s to 7 days."""
    try:
        seconds = round(float(text))
    except (TypeError, ValueError, OverflowError):
        raise ShadowError(400, f"since={str(text)[:40]}: expected seconds") from None
    if not 1 <= seconds <= MAX_SINCE_S:
        raise ShadowError(400, f"since={str(text)[:40]}: from 1 s to 7 days ({MAX_SINCE_S} s)")
    return seconds


def play_report(log_path: str, text: str, source: str, since: int) -> dict:
    """One report played by ``python -m slotwise.shadow_report`` as a child of
    serve: niced, killed past CHILD_WALL_S (504), its output read up to a
    bound; 500 with the child's last line if it fails."""
    cmd = [sys.executable, "-m", "slotwise.shadow_report", f"--event-log={log_path}", "--candidate=-",
           f"--name={source}", f"--since={since}", f"--max-cpu={CHILD_CPU_S:g}", f"--nice={CHILD_NICE}",
           f"--max-bytes={CHILD_LOG_BYTES}", f"--max-memory={CHILD_MEMORY_MB}"]
    try:
        with tempfile.TemporaryFile() as stdin:  # a file, not a pipe: nothing here can block writing it
            stdin.write(text.encode("utf-8"))
            stdin.seek(0)
            child = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=child_env())
    except OSError as e:
        raise ShadowError(500, f"cannot start the shadow report: {e.strerror or e}") from None
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [threading.Thread(target=_read_some, args=(child.stdout, CHILD_OUT_BYTES, out, child.kill), daemon=True),
               threading.Thread(target=_read_some, args=(child.stderr, CHILD_ERR_BYTES, err, child.kill), daemon=True)]
    for r in readers:
        r.start()
    try:
        child.wait(CHILD_WALL_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise ShadowError(504, f"the shadow report took over {CHILD_WALL_S:.0f} s and was stopped (it plays "
                               "serve's event log from its start: rotate the log, or run slotwise shadow report "
                               "--event-log FILE where the log is)") from None
    finally:
        for r in readers:
            r.join()
        child.stdout.close()
        child.stderr.close()
    return _answer(child.returncode, out[0], err[0])


def _answer(status: int, out: bytes, err: bytes) -> dict:
    """The child's report, or ShadowError 500 with its last line."""
    if len(out) > CHILD_OUT_BYTES or len(err) > CHILD_ERR_BYTES:
        raise ShadowError(500, "the shadow report's child wrote more than it may and was stopped")
    lines = err.decode("utf-8", "replace").strip().splitlines()
    if status != 0:
        raise ShadowError(500, lines[-1] if lines else f"the shadow report's child ended with status {status}")
    try:
        return json.loads(out)
    except ValueError:
        raise ShadowError(500, "the shadow report's child wrote no report") from None


def _read_some(stream, limit: int, into: list, over) -> None:
    """A child's stream up to ``limit`` bytes (and one more); past them the
    child is stopped (``over``) rather than read on."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        over()
    into.append(data)
