"""The yarn-site snippet operators copy: well-formed, and naming the shim and
the properties the shim reads."""

from pathlib import Path

from lxml import etree

from slotwise.localcluster import SHIM_SCHEDULER

ROOT = Path(__file__).resolve().parent.parent


def test_yarn_site_snippet_names_the_shim_and_its_properties():
    doc = etree.parse(str(ROOT / "conf" / "yarn-site-slotwise.xml"))
    props = {p.findtext("name"): p.findtext("value") for p in doc.getroot().iter("property")}
    assert props["yarn.resourcemanager.scheduler.class"] == SHIM_SCHEDULER
    shim_source = "\n".join(p.read_text() for d in ("java-shim", "shim-link")  # the shim and its runtime
                            for p in (ROOT / d / "src" / "main").rglob("*.java"))
    for name in props:
        if name.startswith("slotwise.") or name == "yarn.scheduler.fair.preemption":
            assert f'"{name}"' in shim_source, f"{name} is not read by the shim"
    assert props["yarn.scheduler.fair.preemption"] == "false"  # Hadoop's default, stated


def test_shipped_traces_simulate(tmp_path):
    """The example traces in conf/traces run from the CLI, as the docs say."""
    import json

    from slotwise.cli import main

    traces = ROOT / "conf" / "traces"
    assert main(["simulate", "trace", "--trace", str(traces / "example-jobs.jsonl"), "--allocations",
                 str(traces / "example-pools.xml"), "--out", str(tmp_path / "a"), "-q"]) == 0
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert all(r["jobs_finished"] == r["jobs"] == 7 for r in report["runs"])
    assert main(["simulate", "trace", "--trace", str(traces / "sls-jobs.json"), "--nodes",
                 str(traces / "sls-nodes.json"), "--allocations", str(ROOT / "conf" / "allocations.xml"),
                 "--policy", "fair+delay", "--out", str(tmp_path / "b"), "-q"]) == 0
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["runs"][0]["jobs_finished"] == 12


def test_dynamic_priority_example_loads_with_the_policy_on_its_parent():
    from slotwise.config import load_allocations
    from slotwise.engine import Engine
    from slotwise.clock import ManualClock

    cfg = load_allocations(str(ROOT / "conf" / "dynamic-priority.xml"))
    e = Engine(cfg, ManualClock())
    assert e.queues["root.market"].policy.name == "dynamic-priority"
    assert [c.name for c in e.queues["root.market"].children] == ["root.market.alice", "root.market.bob",
                                                                  "root.market.carol"]
