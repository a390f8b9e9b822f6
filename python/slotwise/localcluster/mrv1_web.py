"""The JobTracker as its web pages show it (Hadoop 1.2.1 has no REST API),
and one submitted MRv1 job."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .errors import ClusterError
from .jobs import JobResult
from .mrv1_hadoop import JOB_ID, Log


class JTWebError(OSError):
    pass


def _text(fragment: str) -> str:
    """An HTML fragment as plain text."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def html_tables(page: str) -> list[list[list[str]]]:
    """Every ``<table>`` of a page as rows of cell texts (not nested tables)."""
    tables = []
    for t in re.findall(r"<table\b[^>]*>(.*?)</table>", page, re.S | re.I):
        rows = []
        for r in re.findall(r"<tr\b[^>]*>(.*?)(?=<tr\b|$)", t, re.S | re.I):
            cells = [_text(c) for c in re.findall(r"<t[dh]\b[^>]*>(.*?)(?=<t[dh]\b|</tr>|$)", r, re.S | re.I)]
            if cells:
                rows.append(cells)
        tables.append(rows)
    return tables


def _records(page: str, key: str) -> list[dict[str, str]]:
    """The rows of every table of ``page`` whose header row has a ``key``
    column, as dicts keyed by that header (title rows above it are skipped)."""
    out = []
    for rows in html_tables(page):
        head_at = next((i for i, row in enumerate(rows) if key in row), None)
        if head_at is None:
            continue
        head = rows[head_at]
        for row in rows[head_at + 1:]:
            if len(row) >= len(head):
                out.append(dict(zip(head, row)))
    return out


def _table(page: str, table_id: str) -> str:
    """The ``<table id=...>`` of a page, or ""."""
    m = re.search(rf'<table\b[^>]*\bid="{table_id}"[^>]*>.*?</table>', page, re.S | re.I)
    return m.group(0) if m else ""


def scheduler_status(page: str) -> dict:
    """SlotwiseSchedulerServlet's page (``/scheduler``) as a dict: ``link``
    (its sentence on Python), ``registered``, ``fallback``, the link's counts,
    ``queues`` and ``jobs`` (rows keyed by each table's header)."""
    m = re.search(r'<p id="link">(.*?)</p>', page, re.S)
    link = _text(m.group(1)) if m else ""

    def count(name: str) -> int | None:
        found = re.search(rf'<td id="{name}">(\d+)</td>', page)
        return int(found.group(1)) if found else None

    return {"link": link, "registered": link.startswith("Python policy: pid "),
            "fallback": "schedules by its FIFO since" in link, "heartbeats": count("heartbeats"),
            "fifo_heartbeats": count("fifo-heartbeats"), "failures": count("failures"),
            "queues": _records(_table(page, "queues"), "queue"), "jobs": _records(_table(page, "jobs"), "job")}


#: jobtracker.jsp's job tables (``<h2 id=...>``) and the state each stands for.
JOB_SECTIONS = {"running_jobs": "RUNNING", "completed_jobs": "SUCCEEDED", "failed_jobs": "FAILED"}


def jobtracker_jobs(page: str) -> list[dict]:
    """The jobs of a jobtracker.jsp page (its cells carry ids: job_N, user_N...;
    progress bars are tables nested in cells, so no generic table parsing)."""
    out = []
    parts = re.split(r'<h2 id="(\w+)"', page)
    for section, text in zip(parts[1::2], parts[2::2]):
        state = JOB_SECTIONS.get(section)
        if state is None:
            continue
        rows = re.split(r'(?=<td id="job_\d+")', text)
        for row in rows[1:]:
            n = re.match(r'<td id="job_(\d+)"', row).group(1)
            m = JOB_ID.search(row)
            if not m:
                continue

            def cell(name: str) -> str:
                c = re.search(rf'<td id="{name}_{n}"[^>]*>(.*?)</td>', row, re.S)
                return _text(c.group(1)) if c else ""

            pct = re.findall(r">\s*(\d+(?:\.\d+)?)%", row)  # cell text, not the bars' width="N%"
            out.append({"id": m.group(1), "state": state, "user": cell("user"), "name": cell("name"),
                        "priority": cell("priority"), "started": cell("started"),
                        "map": float(pct[0]) if pct else None,
                        "reduce": float(pct[1]) if len(pct) > 1 else None})
    return sorted({j["id"]: j for j in out}.values(), key=lambda j: j["id"])


class JTWeb:
    """The JobTracker's JSP pages (Hadoop 1 has no REST API), read-only."""

    def __init__(self, base_url: str, timeout: float = 5.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str) -> str:
        try:
            with urllib.request.urlopen(self.base_url + path, timeout=self.timeout) as resp:
                return resp.read().decode(errors="replace")
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise JTWebError(f"GET {self.base_url + path}: {e}") from e

    def trackers(self) -> list[dict]:
        """The live TaskTrackers (machines.jsp?type=active)."""
        page = self.get("/machines.jsp?type=active")
        return [row for row in _records(page, "Name") if row["Name"].startswith("tracker_")]

    def jobs(self) -> list[dict]:
        """The running, completed and failed jobs of jobtracker.jsp: ``id``,
        ``state`` (RUNNING, SUCCEEDED, FAILED: its table), ``user``, ``name``,
        ``priority``, ``started``, ``map`` and ``reduce`` (percent complete)."""
        return jobtracker_jobs(self.get("/jobtracker.jsp"))

    def job(self, job_id: str) -> dict:
        """What jobdetails.jsp says of a job: its ``User``, ``Job Name``,
        ``Status`` (Running, Succeeded, Failed, Killed)... as a dict."""
        page = self.get(f"/jobdetails.jsp?jobid={job_id}")
        head = page.split("<hr", 1)[0] if "<hr" in page else page
        out = {}
        for key, value in re.findall(r"<b>([^<:]+):\s*</b>\s*([^<]*)", head):
            out.setdefault(key.strip(), html.unescape(value).strip())
        return out

    def job_conf(self, job_id: str) -> dict[str, str]:
        """The job's configuration as the JobTracker holds it (jobconf.jsp)."""
        page = self.get(f"/jobconf.jsp?jobid={job_id}")
        conf = {}
        for rows in html_tables(page):
            for row in rows:
                if len(row) == 2 and row[0] not in ("name", "Name"):
                    conf[row[0]] = row[1]
        return conf

    def scheduler_page(self) -> str:
        """The Slotwise shim's /scheduler page (its link to Python, and serve's queue and job tables)."""
        return self.get("/scheduler")

    def scheduler(self) -> dict:
        """The /scheduler page as a dict: ``link`` (its sentence on Python),
        ``registered``, ``fallback`` (the FIFO schedules), ``heartbeats``,
        ``fifo_heartbeats``, ``failures``, ``queues`` and ``jobs`` (rows keyed
        by the tables' headers: queue, weight, min maps, max maps, fair maps...;
        job, user, queue, priority, running maps, fair maps...)."""
        return scheduler_status(self.scheduler_page())


# -- jobs --------------------------------------------------------------------------

@dataclass
class Mrv1JobResult(JobResult):
    """A finished MRv1 job. ``app_id`` is the job id; ``state`` and
    ``final_status`` are the JobTracker's (SUCCEEDED, FAILED, KILLED);
    ``queue`` is the job's ``mapred.fairscheduler.pool`` and ``app_user`` its user, as the
    JobTracker has them."""

    @property
    def job_id(self) -> str | None:
        return self.app_id


class Mrv1Job:
    """A running job client (``submit(..., wait=False)``)."""

    def __init__(self, proc: subprocess.Popen, *, program: str, queue: str, user: str | None, job_dir: Path,
                 log_file: Path, web: JTWeb, echo: bool, log: Log, on_submitted: Log | None = None):
        self.proc, self.program, self.asked, self.user = proc, program, queue, user
        self.job_dir, self.log_file, self.web = job_dir, log_file, web
        self.started = time.monotonic()
        self._job_id: str | None = None
        self._result: Mrv1JobResult | None = None
        self._seen = threading.Event()
        self._echo, self._log, self._on_submitted = echo, log, on_submitted
        self._reader = threading.Thread(target=self._pump, name=f"mrv1-client-{proc.pid}", daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        with open(self.log_file, "wb") as f:
            for raw in iter(self.proc.stdout.readline, b""):
                f.write(raw)
                f.flush()
                line = raw.decode(errors="replace")
                if self._echo:  # the client's output is a log: stderr (the result is what stdout gets)
                    sys.stderr.write(line)
                    sys.stderr.flush()
                if self._job_id is None:
                    m = JOB_ID.search(line)
                    if m and "Running job" in line:
                        self._job_id = m.group(1)
                        self._seen.set()
                        if self._on_submitted:
                            self._on_submitted(self._job_id)
                            continue
                        self._log(f"submitted {self._job_id} ({self.program}) to queue {self.asked}"
                                  + (f" as {self.user}" if self.user else ""))
        self._seen.set()

    @property
    def job_id(self) -> str | None:
        """The JobTracker's id of the job, once the client has printed it."""
        return self._job_id

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        """Stop the job client (not the job: ``cluster.job_command(["-kill", job.job_id])`` does that)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def wait(self, timeout: float | None = None) -> Mrv1JobResult:
        """Wait for the client to exit; the result, with the JobTracker's view.
        On timeout the client is killed (the job goes on) and ClusterError raised."""
        if self._result is not None:
            return self._result
        try:
            returncode = self.proc.wait(timeout=timeout)
        except (subprocess.TimeoutExpired, KeyboardInterrupt) as e:
            self.kill()
            self._reader.join(5)
            if isinstance(e, KeyboardInterrupt):
                raise
            raise ClusterError(f"{self.program} did not finish in {timeout:.0f} s "
                               f"({self._job_id or 'no job id yet'}); client log: {self.log_file}") from None
        self._reader.join(10)
        if self._job_id is None:
            m = JOB_ID.search(self.log_file.read_text(errors="replace"))
            self._job_id = m.group(1) if m else None
        report: dict = {}
        conf: dict = {}
        if self._job_id:
            report = _final_report(self.web, self._job_id)
            try:
                conf = self.web.job_conf(self._job_id)
            except JTWebError:
                conf = {}
        status = (report.get("Status") or "").split()[0].upper() if report.get("Status") else None
        self._result = Mrv1JobResult(
            program=self.program, asked=self.asked, user=self.user, app_id=self._job_id, returncode=returncode,
            state=status, final_status=status, queue=conf.get("mapred.fairscheduler.pool"),
            app_user=report.get("User") or conf.get("user.name"),
            seconds=round(time.monotonic() - self.started, 1), job_dir=str(self.job_dir), log=str(self.log_file))
        return self._result


def _final_report(web: JTWeb, job_id: str, wait: float = 15.0) -> dict:
    deadline = time.monotonic() + wait
    report: dict = {}
    while True:
        try:
            report = web.job(job_id)
        except JTWebError:
            pass
        status = (report.get("Status") or "").lower()
        if status and not status.startswith(("running", "prep")) or time.monotonic() > deadline:
            return report
        time.sleep(0.3)


# -- the cluster ---------------------------------------------------------------------
