"""Trace loaders: Hadoop SLS traces and our JSON lines become the same Workload."""

import json

import pytest

from slotwise.resources import Resource
from slotwise.sim.traces import TraceError, dump_jsonl, load_jsonl, load_sls, load_trace
from slotwise.sim.workload import ClusterSpec, JobSpec, Workload

# Modelled on hadoop-sls src/test/resources/inputsls.json (concatenated
# objects, pretty-printed), plus the newer keys: count, duration.ms,
# container.duration.ms, container.memory-mb / container.vcores, reduces.
SLS = """\
{
  "am.type": "mapreduce",
  "job.start.ms": 1000,
  "job.end.ms": 95375,
  "job.queue.name": "sls_queue_1",
  "job.id": "job_1",
  "job.user": "default",
  "job.tasks": [
    {
      "container.host": "/default-rack/node1",
      "container.start.ms": 6664,
      "container.end.ms": 23707,
      "container.priority": 20,
      "container.type": "map",
      "container.execution.type": "GUARANTEED"
    },
    {
      "container.host": "/default-rack/node3",
      "container.start.ms": 6665,
      "container.end.ms": 21593,
      "container.priority": 20,
      "container.type": "map"
    }
  ]
}
{
  "am.type": "mapreduce",
  "am.memory-mb": 2048,
  "job.start.ms": 106204,
  "job.queue.name": "root.sls_queue_2",
  "job.id": "job_2",
  "job.user": "alice",
  "job.tasks": [
    {
      "count": 3,
      "container.host": "/rack2/node7",
      "duration.ms": 5000,
      "container.memory-mb": 2048,
      "container.vcores": 2
    },
    {
      "container.host": "/default-rack/node1",
      "container.duration.ms": 30000,
      "container.priority": 10,
      "container.type": "reduce"
    }
  ]
}
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_sls_trace_loads_times_durations_hosts_queues_and_sizes(tmp_path):
    w = load_sls(write(tmp_path, "trace.json", SLS))
    j1, j2 = w.jobs
    assert (j1.job_id, j1.submit, j2.job_id, j2.submit) == ("job_1", 0.0, "job_2", 105.204)
    assert j1.maps == pytest.approx([17.043, 14.928]) and j1.reduces == []
    assert j1.map_hosts == [("node1",), ("node3",)]
    assert (j1.user, j1.queue, j2.user, j2.queue) == ("default", "sls_queue_1", "alice",
                                                    "root.sls_queue_2")
    assert j1.map_resource == Resource(1024, 1) == j1.reduce_resource
    # "count": 3 makes three maps; the reduce's host is not an input location
    assert j2.maps == [5.0, 5.0, 5.0] and j2.reduces == [30.0]
    assert j2.map_hosts == [("node7",)] * 3
    assert j2.map_resource == Resource(2048, 2) and j2.reduce_resource == Resource(1024, 1)
    # topology from the trace's hosts; container sizes make it a YARN cluster
    assert w.cluster.node_list() == [("node1", "/default-rack"), ("node3", "/default-rack"),
                                     ("node7", "/rack2")]
    assert w.cluster.node_resource == Resource(8192, 8) and not w.cluster.slot_mode
    assert w.name == "trace"


def test_sls_without_sizes_is_a_slot_cluster_and_options_override(tmp_path):
    p = write(tmp_path, "t.json", SLS.split("}\n{", 1)[0] + "}\n")
    c = load_sls(p).cluster
    assert c.slot_mode and (c.map_slots, c.reduce_slots) == (4, 2)
    c = load_sls(p, map_slots=8, reduce_slots=3, node_resource=Resource(4096, 4)).cluster
    assert (c.map_slots, c.reduce_slots, c.node_resource) == (8, 3, Resource(4096, 4))
    assert load_sls(write(tmp_path, "t2.json", SLS), node_resource=None).cluster.slot_mode


def test_sls_json_array_and_job_count(tmp_path):
    jobs = [{"job.id": "a", "job.start.ms": 5000, "job.count": 2,
             "job.tasks": [{"container.host": "/r1/h1", "container.duration.ms": 1500}]},
            {"job.start.ms": 7000,
             "job.tasks": [{"duration.ms": 2000, "container.type": "reduce"}]},
            {"job.id": "nohost", "job.start.ms": 6000,
             "job.tasks": [{"container.host": "/r1/h2", "duration.ms": 1000},
                           {"duration.ms": 1000}]}]
    w = load_sls(write(tmp_path, "arr.json", json.dumps(jobs, indent=2)))
    assert [(j.job_id, j.submit) for j in w.jobs] == [("a.0", 0.0), ("a.1", 0.0), ("nohost", 1.0),
                                                      ("1", 2.0)]
    assert w.jobs[0].map_hosts == [("h1",)] and w.jobs[2].map_hosts == [("h2",), ()]
    assert w.jobs[3].maps == [] and w.jobs[3].reduces == [2.0] and w.jobs[3].map_hosts is None
    assert w.jobs[3].user == "default" and w.jobs[3].queue is None
    assert w.cluster.node_list() == [("h1", "/r1"), ("h2", "/r1")]


def test_sls_nodes_file_sets_topology(tmp_path):
    nodes = write(tmp_path, "nodes.json", """\
{"rack": "rack1", "nodes": [{"node": "node1"}, {"node": "node3"}]}
{"rack": "rack2", "nodes": [{"node": "node7"}, {"node": "node8", "labels": "x"}]}
""")
    w = load_sls(write(tmp_path, "trace.json", SLS), nodes)
    assert w.cluster.node_list() == [("node1", "/rack1"), ("node3", "/rack1"),
                                     ("node7", "/rack2"), ("node8", "/rack2")]
    # node sizes in the nodes file make a YARN cluster of that size
    sized = write(tmp_path, "sized.json", '{"rack": "r", "nodes": [{"node": "node1", "memory-mb": '
                  '4096, "vcores": 4}, {"node": "node3", "memory-mb": 4096, "vcores": 4}]}')
    p = write(tmp_path, "one.json", SLS.split("}\n{", 1)[0] + "}\n")
    assert load_sls(p, sized).cluster.node_resource == Resource(4096, 4)


def test_sls_num_nodes_record_generates_nodes(tmp_path):
    p = write(tmp_path, "t.json", '{"num.nodes": 4, "num.racks": 2}\n'
              '{"job.tasks": [{"container.host": "/rack1/node1", "duration.ms": 10}]}')
    assert load_sls(p).cluster.node_list() == [("node0", "/rack0"), ("node1", "/rack1"),
                                               ("node2", "/rack0"), ("node3", "/rack1")]


WORKLOAD = Workload(
    ClusterSpec(map_slots=3, reduce_slots=1, node_resource=Resource(8192, 8),
                hosts=[("node0001", "/rack1"), ("node0002", "/rack1"), ("node0030", "/rack2")]),
    [JobSpec("j1", 12.5, [12.0, 13.1], [30.0, 30.0], user="alice", queue="research", priority=2,
             io=0.8, map_hosts=[("node0001", "node0030"), ("node0002",)], label="bin3", kind="io",
             map_resource=Resource(2048, 1), reduce_resource=Resource(1024, 2)),
     JobSpec("j0", 0.0, [5.0] * 10),
     JobSpec("j2", 1.0, [], [7.25])])


def test_jsonl_round_trip(tmp_path):
    p = tmp_path / "w.jsonl"
    dump_jsonl(WORKLOAD, p)
    back = load_jsonl(p)
    assert back.jobs == WORKLOAD.jobs and back.cluster == WORKLOAD.cluster
    assert load_trace(p).jobs == WORKLOAD.jobs  # picked by extension
    assert '"maps": 10, "map_time": 5.0' in p.read_text()  # equal durations stay compact


def test_jsonl_count_form_comments_and_default_cluster(tmp_path):
    p = write(tmp_path, "w.txt", '# a comment\n\n'
              '{"job": "j1", "submit": 3, "maps": 2, "map_time": 4, "reduces": 1, "reduce_time": 9,'
              ' "inputs": [["node0001"], ["node0002", "node0003"]]}\n')
    w = load_trace(p)  # no known extension: recognised by content
    (j,) = w.jobs
    assert (j.submit, j.maps, j.reduces) == (3.0, [4.0, 4.0], [9.0])
    assert j.map_hosts == [("node0001",), ("node0002", "node0003")]
    assert w.cluster == ClusterSpec() and (j.user, j.queue, j.io) == ("user", None, 0.5)


def test_a_trace_written_with_the_old_key_pool_still_loads(tmp_path):
    p = write(tmp_path, "old.jsonl", '{"job": "j1", "submit": 0, "maps": 1, "map_time": 1, "pool": "research"}\n')
    assert load_jsonl(p).jobs[0].queue == "research"
    both = write(tmp_path, "both.jsonl",
                 '{"job": "j1", "submit": 0, "maps": 1, "map_time": 1, "pool": "a", "queue": "b"}\n')
    with pytest.raises(TraceError, match="pool"):
        load_jsonl(both)


def test_load_trace_by_content_and_format(tmp_path):
    p = write(tmp_path, "trace.txt", SLS)
    assert [j.job_id for j in load_trace(p).jobs] == ["job_1", "job_2"]
    assert load_trace(p, fmt="sls", map_slots=6).cluster.map_slots == 6
    with pytest.raises(ValueError, match="unknown trace format"):
        load_trace(p, fmt="rumen")


JOB = '{"job": "j3", "submit": 1, "maps": [1, 2]}'


@pytest.mark.parametrize("line, message", [
    ('{"job": "j3", "submit": 1, "maps": [1, 2}',
     'bad JSON: '),
    ('{"job": "j3", "submit": 1, "reduces": [1]}',
     'job j3: field "maps": missing; expected a list of positive numbers or a count'),
    ('{"job": "j3", "submit": 1, "maps": [12.0, -3]}',
     'job j3: field "maps": expected a list of positive numbers or a count (item 1 is -3)'),
    ('{"job": "j3", "submit": 1, "maps": [1], "mpas": [2]}',
     'job j3: field "mpas": unknown key'),
    ('{"job": "j3", "submit": 1, "maps": [1, 2], "inputs": [["node1"]]}',
     'job j3: field "inputs": 1 host lists for 2 maps'),
    ('{"job": "j3", "submit": 1, "maps": 4}',
     'job j3: field "map_time": "maps" is a count, so the task duration is required'),
    ('{"job": "j3", "submit": -1, "maps": [1]}',
     'job j3: field "submit": expected a number >= 0, got -1'),
    ('{"job": "j3", "submit": 1, "maps": [1], "io": 2}',
     'job j3: field "io": expected a number from 0 to 1, got 2'),
    ('{"cluster": {"racks": 2, "node_memory_mb": 4096}}',
     'field "node_vcores": node_memory_mb and node_vcores go together'),
    ('{"job": "j1", "submit": 1, "maps": [1]}',
     'job j1: field "job": duplicate job id (first on line 2)'),
])
def test_jsonl_errors_name_file_line_and_field(tmp_path, line, message):
    p = write(tmp_path, "jobs.jsonl", f'# header\n{{"job": "j1", "submit": 0, "maps": [1]}}\n\n'
              f'{JOB.replace("j3", "j2")}\n# note\n\n{line}\n')
    with pytest.raises(TraceError) as e:
        load_jsonl(p)
    assert str(e.value).startswith(f"{p}:7: {message}")
    assert isinstance(e.value, ValueError) and e.value.line == 7


def sls_error(tmp_path, second_job: str, nodes=None) -> TraceError:
    first = SLS.split("}\n{", 1)[0] + "}\n"  # job_1 on lines 1-25; job_2 starts on line 27
    p = write(tmp_path, "jobs.json", first + "\n" + second_job)
    with pytest.raises(TraceError) as e:
        load_sls(p, nodes)
    return e.value


@pytest.mark.parametrize("job, message", [
    ('{"job.id": "job_2",\n "job.tasks": [{"duration.ms": 10}, {"container.start.ms": 50,'
     ' "container.end.ms": 20}]}',
     'job job_2: field "job.tasks[1].container.end.ms": ends at 20 ms, not after its start at '
     '50 ms'),
    ('{"job.id": "job_2", "job.tasks": [{"container.host": "/r/n"}]}',
     'job job_2: field "job.tasks[0]": no duration'),
    ('{"job.id": "job_2", "job.tasks": [{"duration.ms": -5}]}',
     'job job_2: field "job.tasks[0].duration.ms": expected a positive duration in ms, got -5'),
    ('{"job.id": "job_2", "job.tasks": [{"duration.ms": 5, "container.gpu": 1}]}',
     'job job_2: field "job.tasks[0].container.gpu": resource type not modelled'),
    ('{"job.id": "job_2", "job.tasks": [{"duration.ms": 5, "container.type": "shuffle"}]}',
     'job job_2: field "job.tasks[0].container.type": expected "map" or "reduce", got "shuffle"'),
    ('{"job.id": "job_2", "job.queue": "q", "job.tasks": [{"duration.ms": 5}]}',
     'job job_2: field "job.queue": unknown key'),
    ('{"job.id": "job_2", "am.type": "stream", "job.tasks": [{"duration.ms": 5}]}',
     'job job_2: field "am.type": only "mapreduce" jobs can be simulated'),
    ('{"job.id": "job_2", "job.tasks": []}',
     'job job_2: field "job.tasks": missing or empty'),
    ('{"job.id": "job_2", "job.tasks": [{"duration.ms": 5, "container.memory-mb": 2048},'
     ' {"duration.ms": 5}]}',
     'job job_2: field "job.tasks": its maps ask for different sizes'),
    ('{"job.id": "job_1", "job.tasks": [{"duration.ms": 5}]}',
     'job job_1: field "job.id": duplicate job id (first on line 1)'),
])
def test_sls_errors_name_the_line_where_the_job_starts(tmp_path, job, message):
    err = sls_error(tmp_path, job)
    assert str(err).startswith(f"{tmp_path / 'jobs.json'}:27: {message}")


def test_sls_bad_json_and_unknown_host(tmp_path):
    err = sls_error(tmp_path, '{"job.id": "job_2",\n "job.tasks": [}')
    assert str(err).startswith(f"{tmp_path / 'jobs.json'}:28: bad JSON: ")
    nodes = write(tmp_path, "nodes.json", '{"rack": "rack1", "nodes": [{"node": "node1"}]}\n'
                  '{"rack": "rack2", "nodes": [{}]}')
    err = sls_error(tmp_path, '{"job.tasks": [{"duration.ms": 5}]}', nodes)
    assert str(err) == f'{nodes}:2: field "nodes[0].node": missing or not a host name'
    nodes.write_text('{"rack": "rack1", "nodes": [{"node": "node1"}]}')
    err = sls_error(tmp_path, '{"job.tasks": [{"duration.ms": 5}]}', nodes)
    assert str(err).startswith(f'{tmp_path / "jobs.json"}:1: job job_1: field "container.host": '
                               f"host node3 is not in the nodes file")


def test_sls_task_bigger_than_a_node_is_refused(tmp_path):
    p = write(tmp_path, "t.json", '{"job.id": "big", "job.tasks": [{"duration.ms": 5, '
              '"container.memory-mb": 16384}]}')
    with pytest.raises(TraceError, match=r't.json:1: job big: field "job.tasks": a map asks for '
                                         r"16384 mb, 1 vcores, more than a node has"):
        load_sls(p)
    assert load_sls(p, node_resource=Resource(32768, 8)).jobs[0].map_resource.memory_mb == 16384
