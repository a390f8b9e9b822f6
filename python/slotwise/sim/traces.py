"""Load workload traces into :class:`Workload`, refusing anything we would misread.

Two formats.

**JSON lines** (ours, ``.jsonl``): one JSON object per line; blank lines and
lines starting with ``#`` are skipped.  At most one cluster record, e.g.::

    {"cluster": {"racks": 4, "nodes_per_rack": 25, "map_slots": 4, "reduce_slots": 2}}
    {"cluster": {"hosts": [["node1", "/rack1"]], "node_memory_mb": 8192, "node_vcores": 8}}

``node_memory_mb`` + ``node_vcores`` make a YARN cluster; without a cluster
record the default :class:`ClusterSpec` is used.  Every other line is a job::

    {"job": "j1", "submit": 12.5, "user": "alice", "queue": "research", "priority": 0,
     "maps": [12.0, 13.1], "reduces": 2, "reduce_time": 30, "io": 0.8,
     "inputs": [["node0001", "node0030"], ["node0002"]], "label": "bin3", "kind": "io",
     "map_memory_mb": 1024, "map_vcores": 1, "reduce_memory_mb": 2048, "reduce_vcores": 1}

Only ``job``, ``submit`` (seconds) and ``maps`` are required.  ``maps`` and
``reduces`` are task durations in seconds, or a count with ``map_time`` /
``reduce_time``.  ``inputs`` has one host list per map (where its block
lives).  Unknown keys are errors.  :func:`dump_jsonl` writes this format.

**SLS**: the "sls" job trace of Hadoop's Scheduler Load Simulator
(hadoop-tools/hadoop-sls), JSON objects one after another (or one array).
Times are in ms; submit times are made relative to the earliest
``job.start.ms``.  A task's duration is ``container.duration.ms``, else
``duration.ms``, else ``container.end.ms - container.start.ms`` (Hadoop's
order).  ``count`` repeats a task, ``job.count`` a job (ids get ``.0``,
``.1``, ...).  A map's ``container.host`` ("/rack/host") is where its input
lives (a map without one has no known location: an empty host tuple).
Sizes are ``container.memory-mb`` and ``container.vcores`` (default 1024 MB,
1 vcore; ``container.memory`` is accepted for the memory too).
Not modelled and so ignored: AM containers (``am.*`` other than
``am.type``, which must be "mapreduce"), ``job.end.ms``, node labels,
container priorities, execution types, allocation ids and request delays.
Any other key is an error.

Every problem raises :class:`TraceError` naming file, line, job and field.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..resources import Resource
from .workload import ClusterSpec, JobSpec, Workload

__all__ = ["TraceError", "load_jsonl", "dump_jsonl", "load_sls", "load_trace"]

DEFAULT_TASK = Resource(1024, 1)
DEFAULT_NODE = Resource(8192, 8)


class TraceError(ValueError):
    """A trace that cannot become a workload; the message says where and why."""

    def __init__(self, path, line: int | None, message: str, *, job: str | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.job, self.field = str(path), line, job, field
        parts = [f"{path}:{line}" if line else str(path)]
        if job is not None:
            parts.append(f"job {job}")
        if field is not None:
            parts.append(f'field "{field}"')
        super().__init__(": ".join(parts + [message]))


@dataclass(frozen=True)
class _At:
    """Where we are in a file, so every error can say so."""

    path: str
    line: int | None
    job: str | None = None

    def err(self, message: str, field: str | None = None) -> TraceError:
        return TraceError(self.path, self.line, message, job=self.job, field=field)

    def of(self, job: str) -> "_At":
        return _At(self.path, self.line, job)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _get(rec: dict, key: str, at: _At, ok, expected: str, default=None, field: str | None = None):
    """rec[key] if present and ok(value), default if absent, else a TraceError."""
    if key not in rec:
        return default
    v = rec[key]
    if not ok(v):
        raise at.err(f"expected {expected}, got {json.dumps(v)}", field or key)
    return v


def _positive(v: Any) -> bool:
    return _is_num(v) and v > 0


# ---------------------------------------------------------------- JSON lines

_CLUSTER_KEYS = {"racks", "nodes_per_rack", "map_slots", "reduce_slots", "hosts",
                 "node_memory_mb", "node_vcores"}
_JOB_KEYS = {"job", "submit", "user", "queue", "priority", "maps", "map_time", "reduces",
             "reduce_time", "io", "inputs", "label", "kind", "map_memory_mb", "map_vcores",
             "reduce_memory_mb", "reduce_vcores"}


def load_jsonl(path) -> Workload:
    """Read our JSON-lines format (see the module docstring)."""
    cluster, cluster_line, jobs, seen = None, 0, [], {}
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            at = _At(str(path), lineno)
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as e:
                raise at.err(f"bad JSON: {e.msg} (column {e.colno})") from None
            if not isinstance(rec, dict):
                raise at.err("expected a JSON object (a job or a cluster record)")
            if "cluster" in rec:
                if len(rec) != 1:
                    raise at.err("a cluster record has no other keys",
                                 sorted(set(rec) - {"cluster"})[0])
                if cluster is not None:
                    raise at.err(f"second cluster record (the first is on line {cluster_line})",
                                 "cluster")
                cluster, cluster_line = _jsonl_cluster(rec["cluster"], at), lineno
                continue
            job = _jsonl_job(rec, at)
            if job.job_id in seen:
                raise at.of(job.job_id).err(f"duplicate job id (first on line {seen[job.job_id]})",
                                            "job")
            seen[job.job_id] = lineno
            jobs.append(job)
    if not jobs:
        raise TraceError(path, None, "no jobs in the trace")
    return Workload(cluster or ClusterSpec(), jobs, name=Path(path).stem)


def _jsonl_cluster(c: Any, at: _At) -> ClusterSpec:
    if not isinstance(c, dict):
        raise at.err("expected an object", "cluster")
    for k in c:
        if k not in _CLUSTER_KEYS:
            raise at.err(f"unknown key (known: {', '.join(sorted(_CLUSTER_KEYS))})", k)
    kw = {k: _get(c, k, at, lambda v: _is_int(v) and v > 0, "a positive integer")
          for k in ("racks", "nodes_per_rack", "map_slots", "reduce_slots") if k in c}
    if "hosts" in c:
        hosts = c["hosts"]
        pair = lambda h: (isinstance(h, list) and len(h) == 2 and h[1].startswith("/")
                          and all(isinstance(s, str) and s for s in h))
        if not isinstance(hosts, list) or not hosts or not all(pair(h) for h in hosts):
            raise at.err('expected a list of [host, "/rack"] pairs', "hosts")
        names = [h for h, _ in hosts]
        if len(set(names)) != len(names):
            raise at.err("a host is listed twice", "hosts")
        kw["hosts"] = [(h, r) for h, r in hosts]
    mem = _get(c, "node_memory_mb", at, _positive, "a positive number")
    cores = _get(c, "node_vcores", at, _positive, "a positive number")
    if (mem is None) != (cores is None):
        raise at.err("node_memory_mb and node_vcores go together",
                     "node_vcores" if cores is None else "node_memory_mb")
    if mem is not None:
        kw["node_resource"] = Resource(mem, cores)
    return ClusterSpec(**kw)


def _durations(rec: dict, key: str, time_key: str, at: _At, required: bool) -> list[float]:
    """A task list given as durations, or as a count plus one duration."""
    v, t = rec.get(key), rec.get(time_key)
    expected = "expected a list of positive numbers or a count"
    if v is None:
        if required:
            raise at.err(f"missing; {expected}", key)
        if t is not None:
            raise at.err(f'needs a count in "{key}"', time_key)
        return []
    if isinstance(v, list):
        for i, d in enumerate(v):
            if not _positive(d):
                raise at.err(f"{expected} (item {i} is {json.dumps(d)})", key)
        if t is not None:
            raise at.err(f'only goes with a count in "{key}"', time_key)
        return [float(d) for d in v]
    if not (_is_int(v) and v >= 0):
        raise at.err(f"{expected}, got {json.dumps(v)}", key)
    if v and t is None:
        raise at.err(f'"{key}" is a count, so the task duration is required', time_key)
    if t is not None and not _positive(t):
        raise at.err(f"expected a positive number, got {json.dumps(t)}", time_key)
    return [float(t)] * v


def _jsonl_job(rec: dict, at: _At) -> JobSpec:
    job_id = rec.get("job")
    if not isinstance(job_id, str) or not job_id:
        raise at.err("missing; expected the job id" if job_id is None
                     else f"expected a non-empty string, got {json.dumps(job_id)}", "job")
    at = at.of(job_id)
    if "pool" in rec:  # the key's old name, still read
        if "queue" in rec:
            raise at.err("both queue and its old name pool are given", "pool")
        rec = {("queue" if k == "pool" else k): v for k, v in rec.items()}
    for k in rec:
        if k not in _JOB_KEYS:
            raise at.err("unknown key", k)
    if "submit" not in rec:
        raise at.err("missing; expected seconds since the trace start", "submit")
    submit = _get(rec, "submit", at, lambda v: _is_num(v) and v >= 0, "a number >= 0")
    maps = _durations(rec, "maps", "map_time", at, required=True)
    reduces = _durations(rec, "reduces", "reduce_time", at, required=False)
    if not maps and not reduces:
        raise at.err("a job needs at least one task", "maps")
    map_hosts = None
    if "inputs" in rec:
        inputs = rec["inputs"]
        ok = isinstance(inputs, list) and all(
            isinstance(h, list) and all(isinstance(s, str) and s for s in h) for h in inputs)
        if not ok:
            raise at.err("expected one list of host names per map", "inputs")
        if len(inputs) != len(maps):
            raise at.err(f"{len(inputs)} host lists for {len(maps)} maps", "inputs")
        map_hosts = [tuple(h) for h in inputs]

    def res(kind: str) -> Resource:
        return Resource(*(_get(rec, f"{kind}_{key}", at, _positive, "a positive number", default)
                          for key, default in (("memory_mb", DEFAULT_TASK.memory_mb),
                                               ("vcores", DEFAULT_TASK.vcores))))

    string = lambda v: isinstance(v, str)
    return JobSpec(
        job_id=job_id, submit=float(submit), maps=maps, reduces=reduces,
        user=_get(rec, "user", at, lambda v: string(v) and v, "a non-empty string", "user"),
        queue=_get(rec, "queue", at, lambda v: v is None or string(v) and v, "a queue name or null"),
        priority=_get(rec, "priority", at, _is_int, "an integer", 0),
        io=float(_get(rec, "io", at, lambda v: _is_num(v) and 0 <= v <= 1,
                      "a number from 0 to 1", 0.5)),
        map_hosts=map_hosts, map_resource=res("map"), reduce_resource=res("reduce"),
        label=_get(rec, "label", at, string, "a string", ""),
        kind=_get(rec, "kind", at, string, "a string", ""))


def dump_jsonl(workload: Workload, path) -> None:
    """Write ``workload`` so that :func:`load_jsonl` gives back equal jobs and cluster."""
    lines = ["# slotwise workload, JSON lines (format: slotwise.sim.traces)",
             json.dumps({"cluster": _cluster_record(workload.cluster)})]
    lines += [json.dumps(_job_record(j)) for j in workload.jobs]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _cluster_record(c: ClusterSpec) -> dict:
    rec: dict = {"racks": c.racks, "nodes_per_rack": c.nodes_per_rack,
                 "map_slots": c.map_slots, "reduce_slots": c.reduce_slots}
    if c.hosts is not None:
        rec["hosts"] = [list(h) for h in c.hosts]
    if c.node_resource is not None:
        rec.update(node_memory_mb=c.node_resource.memory_mb, node_vcores=c.node_resource.vcores)
    return rec


def _job_record(j: JobSpec) -> dict:
    rec: dict = {"job": j.job_id, "submit": j.submit}
    for key, tasks in (("map", j.maps), ("reduce", j.reduces)):
        if len(tasks) > 1 and len(set(tasks)) == 1:
            rec[key + "s"], rec[key + "_time"] = len(tasks), tasks[0]
        elif tasks or key == "map":
            rec[key + "s"] = list(tasks)
    optional = {"user": (j.user, "user"), "queue": (j.queue, None), "priority": (j.priority, 0),
                "io": (j.io, 0.5), "label": (j.label, ""), "kind": (j.kind, "")}
    rec.update({k: v for k, (v, default) in optional.items() if v != default})
    if j.map_hosts is not None:
        rec["inputs"] = [list(h) for h in j.map_hosts]
    for kind, r in (("map", j.map_resource), ("reduce", j.reduce_resource)):
        if r.memory_mb != DEFAULT_TASK.memory_mb:
            rec[f"{kind}_memory_mb"] = r.memory_mb
        if r.vcores != DEFAULT_TASK.vcores:
            rec[f"{kind}_vcores"] = r.vcores
    return rec


# ---------------------------------------------------------------- SLS

_SLS_JOB_KEYS = {"am.type", "job.id", "job.user", "job.queue.name", "job.start.ms", "job.count",
                 "job.tasks"}
_SLS_JOB_IGNORED = {"job.end.ms", "job.label.expression"}  # and am.<resource>
_SLS_TASK_KEYS = {"count", "container.host", "container.type", "container.start.ms",
                  "container.end.ms", "container.duration.ms", "duration.ms",
                  "container.memory-mb", "container.memory", "container.vcores"}
_SLS_TASK_IGNORED = {"container.priority", "container.execution.type",
                     "container.allocation.id", "container.request.delay"}
_NODE_KEYS = {"node", "memory-mb", "vcores", "labels"}
_WS = re.compile(r"\s*")
_AUTO = object()


def _json_values(path) -> Iterator[tuple[int, Any]]:
    """(line, value) for each top-level JSON value: concatenated, or items of one array."""
    text = Path(path).read_text(encoding="utf-8")
    dec, line, counted = json.JSONDecoder(), 1, 0

    def line_at(pos: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    def bad(e: json.JSONDecodeError):
        return TraceError(path, e.lineno, f"bad JSON: {e.msg} (column {e.colno})")

    pos = _WS.match(text).end()
    in_array = text.startswith("[", pos)
    if in_array:
        pos = _WS.match(text, pos + 1).end()
    while pos < len(text):
        if in_array and text[pos] == "]":
            pos = _WS.match(text, pos + 1).end()
            if pos < len(text):
                raise TraceError(path, line_at(pos), "bad JSON: extra data after the closing ']'")
            return
        start = line_at(pos)
        try:
            value, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise bad(e) from None
        yield start, value
        pos = _WS.match(text, end).end()
        if in_array:
            if text.startswith(",", pos):
                pos = _WS.match(text, pos + 1).end()
            elif not text.startswith("]", pos):
                raise TraceError(path, line_at(pos), "bad JSON: expected ',' or ']' in the array")
    if in_array:
        raise TraceError(path, line_at(pos), "bad JSON: the array is not closed with ']'")


def _split_host(s: str) -> tuple[str, str]:
    """'/rack/host' -> ('host', '/rack'); a bare host is on Hadoop's /default-rack."""
    rack, _, host = s.rpartition("/")
    return host, rack or "/default-rack"


@dataclass
class _SlsJob:
    at: _At
    ids: list[str]
    start_ms: float
    spec: dict
    hosts: dict[str, str]  # host -> rack, all tasks' hosts


def _sls_task(t: Any, at: _At, i: int
              ) -> tuple[str, int, float, tuple[str, str] | None, Resource | None]:
    """One task entry -> (type, count, seconds, (host, rack) or None, size if given)."""
    f = f"job.tasks[{i}]"
    if not isinstance(t, dict):
        raise at.err("expected a task object", f)
    for k in t:
        if k not in _SLS_TASK_KEYS and k not in _SLS_TASK_IGNORED:
            what = "resource type not modelled" if k.startswith("container.") else "unknown key"
            raise at.err(what, f"{f}.{k}")
    get = lambda k, ok, exp, d=None: _get(t, k, at, ok, exp, d, field=f"{f}.{k}")
    kind = get("container.type", lambda v: v in ("map", "reduce"), '"map" or "reduce"', "map")
    count = get("count", lambda v: _is_int(v) and v >= 1, "an integer >= 1", 1)
    nonneg = lambda v: _is_num(v) and v >= 0
    start = get("container.start.ms", nonneg, "a time in ms >= 0")
    end = get("container.end.ms", nonneg, "a time in ms >= 0")
    for key in ("container.duration.ms", "duration.ms"):
        if key in t:
            ms = get(key, _positive, "a positive duration in ms")
            break
    else:
        if start is None or end is None:
            raise at.err('no duration: give "container.duration.ms", "duration.ms", or '
                         '"container.start.ms" and "container.end.ms"', f)
        if end <= start:
            raise at.err(f"ends at {end} ms, not after its start at {start} ms",
                         f"{f}.container.end.ms")
        ms = end - start
    host = get("container.host", lambda v: isinstance(v, str) and _split_host(v)[0],
               'a host name like "/rack/host"')
    if "container.memory" in t and "container.memory-mb" in t:
        raise at.err('give "container.memory-mb" or "container.memory", not both',
                     f"{f}.container.memory")
    mem = get("container.memory-mb", _positive, "a positive number of MB")
    mem = mem if mem is not None else get("container.memory", _positive, "a positive number of MB")
    cores = get("container.vcores", _positive, "a positive number")
    res = None
    if mem is not None or cores is not None:
        res = Resource(mem if mem is not None else DEFAULT_TASK.memory_mb,
                       cores if cores is not None else DEFAULT_TASK.vcores)
    return kind, count, ms / 1000.0, (_split_host(host) if host else None), res


def _sls_job(rec: dict, at: _At, ordinal: int) -> tuple[_SlsJob, bool]:
    """One job object -> its parsed form, and whether it named container sizes."""
    raw_id = rec.get("job.id")
    at = at.of(raw_id if isinstance(raw_id, str) and raw_id else str(ordinal))
    for k in rec:
        if k not in _SLS_JOB_KEYS and k not in _SLS_JOB_IGNORED and not k.startswith("am."):
            raise at.err("unknown key", k)
    string = lambda v: isinstance(v, str) and v != ""
    job_id = _get(rec, "job.id", at, string, "a non-empty string", str(ordinal))
    amtype = _get(rec, "am.type", at, string, "a string", "mapreduce")
    if amtype != "mapreduce":
        raise at.err(f'only "mapreduce" jobs can be simulated, not "{amtype}"', "am.type")
    count = _get(rec, "job.count", at, lambda v: _is_int(v) and v >= 1, "an integer >= 1", 1)
    tasks = rec.get("job.tasks")
    if not isinstance(tasks, list) or not tasks:
        raise at.err("missing or empty; a job needs a list of tasks", "job.tasks")
    maps, reduces, map_hosts, hosts = [], [], [], {}
    sizes: dict[str, set] = {"map": set(), "reduce": set()}
    sized = False
    for i, t in enumerate(tasks):
        kind, n, secs, where, res = _sls_task(t, at, i)
        if where:
            host, rack = where
            if hosts.setdefault(host, rack) != rack:
                raise at.err(f"host {host} is in {hosts[host]} and {rack}",
                             f"job.tasks[{i}].container.host")
        sized |= res is not None
        sizes[kind].add(res or DEFAULT_TASK)
        (maps if kind == "map" else reduces).extend([secs] * n)
        if kind == "map":
            map_hosts.extend([(where[0],) if where else ()] * n)
    for kind, s in sizes.items():
        if len(s) > 1:
            sizes_text = " vs ".join(sorted(map(str, s)))
            raise at.err(f"its {kind}s ask for different sizes ({sizes_text}); "
                         f"a job has one {kind} size", "job.tasks")
    spec = dict(maps=maps, reduces=reduces, map_hosts=map_hosts if maps else None,
                user=_get(rec, "job.user", at, string, "a non-empty string", "default"),
                queue=_get(rec, "job.queue.name", at, string, "a queue name"),
                map_resource=next(iter(sizes["map"]), DEFAULT_TASK),
                reduce_resource=next(iter(sizes["reduce"]), DEFAULT_TASK))
    start = _get(rec, "job.start.ms", at, _is_num, "a time in ms", 0)
    ids = [job_id] if count == 1 else [f"{job_id}.{k}" for k in range(count)]
    return _SlsJob(at, ids, start, spec, hosts), sized


def _sls_num_nodes(rec: dict, at: _At) -> list[tuple[str, str]]:
    """SLS's {"num.nodes": N, "num.racks": R} record: nodes named and racked as Hadoop does."""
    for k in rec:
        if k not in ("num.nodes", "num.racks"):
            raise at.err('a "num.nodes" record has no other keys', k)
    n = _get(rec, "num.nodes", at, lambda v: _is_int(v) and v >= 1, "an integer >= 1")
    racks = _get(rec, "num.racks", at, lambda v: _is_int(v) and v >= 1, "an integer >= 1", 1)
    racks = min(n, racks)
    return [(f"node{i}", f"/rack{i % racks}") for i in range(n)]


def _sls_nodes(path) -> tuple[list[tuple[str, str]], list[tuple[_At, dict, str]]]:
    """An SLS nodes file -> (host, rack) pairs, and (where, sizes given, field) per node."""
    hosts, sizes, lines = [], [], {}
    for line, rec in _json_values(path):
        at = _At(str(path), line)
        if not isinstance(rec, dict):
            raise at.err('expected a {"rack": ..., "nodes": [...]} object')
        for k in rec:
            if k not in ("rack", "nodes"):
                raise at.err("unknown key", k)
        rack = _get(rec, "rack", at, lambda v: isinstance(v, str) and v, "a rack name", None)
        nodes = rec.get("nodes")
        if rack is None or not isinstance(nodes, list) or not nodes:
            raise at.err("missing or empty", "rack" if rack is None else "nodes")
        rack = rack if rack.startswith("/") else "/" + rack
        for i, node in enumerate(nodes):
            f = f"nodes[{i}]"
            if not isinstance(node, dict):
                raise at.err("expected a node object", f)
            for k in node:
                if k not in _NODE_KEYS:
                    raise at.err("unknown key", f"{f}.{k}")
            name = node.get("node")
            if not isinstance(name, str) or not name:
                raise at.err("missing or not a host name", f"{f}.node")
            if name in lines:
                raise at.err(f"node listed twice (also on line {lines[name]})", f"{f}.node")
            lines[name] = line
            size = {k: _get(node, k, at, _positive, "a positive number", field=f"{f}.{k}")
                    for k in ("memory-mb", "vcores") if k in node}
            sizes.append((at, size, f))
            hosts.append((name, rack))
    if not hosts:
        raise TraceError(path, None, "no nodes in the file")
    return hosts, sizes


def load_sls(jobs_path, nodes_path=None, *, map_slots: int = 4, reduce_slots: int = 2,
             node_resource: Resource | None = _AUTO) -> Workload:  # type: ignore[assignment]
    """Read a Hadoop SLS job trace (and optionally an SLS nodes file).

    Topology comes from ``nodes_path``, else from a ``num.nodes`` record and
    the tasks' hosts.  The cluster is slot-mode (``map_slots``/``reduce_slots``)
    unless node or container sizes appear, then YARN mode with nodes of
    8192 MB / 8 vcores (or the nodes file's sizes); ``node_resource``
    overrides this (``None`` forces slots).
    """
    parsed: list[_SlsJob] = []
    generated: list[tuple[str, str]] = []
    sized = False
    for line, rec in _json_values(jobs_path):
        at = _At(str(jobs_path), line)
        if not isinstance(rec, dict):
            raise at.err("expected a JSON object (a job)")
        if "num.nodes" in rec or "num.racks" in rec:
            generated += _sls_num_nodes(rec, at)
            continue
        job, job_sized = _sls_job(rec, at, len(parsed))
        parsed.append(job)
        sized |= job_sized
    if not parsed:
        raise TraceError(jobs_path, None, "no jobs in the trace")

    file_size = None
    if nodes_path is not None:
        hosts, sizes = _sls_nodes(nodes_path)
        if any(s for _, s, _ in sizes):
            given = {Resource(s.get("memory-mb", DEFAULT_NODE.memory_mb),
                              s.get("vcores", DEFAULT_NODE.vcores)) for _, s, _ in sizes}
            if len(given) > 1:
                at, _, f = next((a, s, f) for a, s, f in sizes if s)
                raise at.err(f"nodes of different sizes ({' vs '.join(sorted(map(str, given)))}) "
                             "are not supported", f)
            file_size = given.pop()
        known = {h for h, _ in hosts}
        for job in parsed:
            for h in job.hosts:
                if h not in known:
                    raise job.at.err(f"host {h} is not in the nodes file {nodes_path}",
                                     "container.host")
    else:
        racks: dict[str, str] = dict((h, r) for h, r in generated)
        for job in parsed:
            for h, r in job.hosts.items():
                if racks.setdefault(h, r) != r:
                    raise job.at.err(f"host {h} is in {racks[h]} here and in {r} elsewhere",
                                     "container.host")
        hosts = list(racks.items()) or None

    if node_resource is _AUTO:
        node_resource = file_size or (DEFAULT_NODE if sized else None)
    cluster = ClusterSpec(map_slots=map_slots, reduce_slots=reduce_slots,
                          node_resource=node_resource, hosts=hosts)

    base = min(j.start_ms for j in parsed)
    jobs, seen = [], {}
    for job in parsed:
        for kind in ("map", "reduce"):
            r = job.spec[f"{kind}_resource"]
            if node_resource is not None and job.spec[kind + "s"] and not r.fits_in(node_resource):
                raise job.at.err(f"a {kind} asks for {r}, more than a node has ({node_resource})",
                                 "job.tasks")
        for job_id in job.ids:
            if job_id in seen:
                raise job.at.of(job_id).err(f"duplicate job id (first on line {seen[job_id]})",
                                            "job.id")
            seen[job_id] = job.at.line
            jobs.append(JobSpec(job_id=job_id, submit=(job.start_ms - base) / 1000.0, **job.spec))
    return Workload(cluster, jobs, name=Path(jobs_path).stem)


# ---------------------------------------------------------------- either

def load_trace(path, fmt: str | None = None, **kw) -> Workload:
    """Load ``path`` as ``fmt`` ("jsonl" or "sls"); without fmt, guess from the
    extension (.jsonl, .json) or else from the first record."""
    fmt = fmt or _sniff(path)
    if fmt == "jsonl":
        if kw:
            raise TypeError(f"load_jsonl takes no options, got {', '.join(kw)}")
        return load_jsonl(path)
    if fmt == "sls":
        return load_sls(path, **kw)
    raise ValueError(f'unknown trace format "{fmt}" (expected "jsonl" or "sls")')


def _sniff(path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "sls"
    with open(path, encoding="utf-8") as f:
        for raw in f:
            text = raw.strip()
            if text.startswith("#"):
                return "jsonl"  # JSON has no comments, SLS files neither
            if text:
                try:
                    rec = json.loads(text)
                except json.JSONDecodeError:
                    return "sls"  # a multi-line object
                ours = isinstance(rec, dict) and ("job" in rec or "cluster" in rec)
                return "jsonl" if ours else "sls"
    return "jsonl"
