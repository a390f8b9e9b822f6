"""The log line of a reload says what changed."""

from __future__ import annotations

import logging
from pathlib import Path

from slotwise.config import parse_allocations
from slotwise.config.watcher import ConfigWatcher, describe_changes, load_with_status, reload_message

BEFORE = """<?xml version="1.0"?>
<allocations>
  <queue name="prod">
    <weight>2</weight>
    <maxRunningApps>4</maxRunningApps>
    <minResources>2048 mb, 2 vcores</minResources>
  </queue>
  <queue name="y"/>
  <queue name="research"><maxResources>50%</maxResources></queue>
  <user name="alice"><maxRunningApps>2</maxRunningApps></user>
  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="default" queue="research"/>
  </queuePlacementPolicy>
</allocations>
"""

AFTER = """<?xml version="1.0"?>
<!-- reordered, commented, re-indented: none of that is a change -->
<allocations>
  <queue name="research"><maxResources>50%</maxResources></queue>
  <queue name="x"><queue name="etl"/></queue>
  <queue name="prod">
      <maxRunningApps>6</maxRunningApps>
      <weight>3</weight>
      <minResources>2048 mb, 2 vcores</minResources>
  </queue>
  <user name="alice"><maxRunningApps>2</maxRunningApps></user>
  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="default" queue="research"/>
  </queuePlacementPolicy>
</allocations>
"""


def parse(text: str):
    return parse_allocations(text, "fair-scheduler.xml")


def test_the_changes_of_the_issue_example():
    assert describe_changes(parse(BEFORE), parse(AFTER)) == [
        "added root.x, root.x.etl", "removed root.y", "root.prod weight 2 -> 3, maxRunningApps 4 -> 6"]
    assert reload_message("fair-scheduler.xml", parse(BEFORE), parse(AFTER)) == (
        "reloaded fair-scheduler.xml: added root.x, root.x.etl; removed root.y; "
        "root.prod weight 2 -> 3, maxRunningApps 4 -> 6")


def test_every_kind_of_setting_is_named_as_the_file_names_it():
    after = (BEFORE.replace("<minResources>2048 mb, 2 vcores</minResources>",
                            "<minResources>4096 mb, 2 vcores</minResources><schedulingPolicy>fifo</schedulingPolicy>")
             .replace("<maxResources>50%</maxResources>", "<maxResources>8192 mb, 8 vcores</maxResources>")
             .replace('<queue name="y"/>', '<queue name="y" type="parent"/>')
             .replace("<maxRunningApps>2</maxRunningApps></user>", "<maxRunningApps>5</maxRunningApps></user>"
                      '<user name="bob"><maxRunningApps>1</maxRunningApps></user>')
             .replace("<defaultFairSharePreemptionTimeout>60", "<defaultFairSharePreemptionTimeout>30")
             .replace('<rule name="default" queue="research"/>', '<rule name="user" create="true"/>'))
    assert describe_changes(parse(BEFORE), parse(after)) == [
        "root.prod minResources 2048 mb, 2 vcores -> 4096 mb, 2 vcores, schedulingPolicy unset -> fifo",
        "root.y type leaf -> parent",
        "root.research maxResources memory 50%, vcores 50% -> 8192 mb, 8 vcores",
        "defaultFairSharePreemptionTimeout 60 -> 30",
        "user alice maxRunningApps 2 -> 5",
        "user bob maxRunningApps unset -> 1",
        "queuePlacementPolicy specified(create=false) > default(queue=root.research) -> "
        "specified(create=false) > user(create=true)",
    ]


def test_same_meaning_is_no_change():
    assert describe_changes(parse(BEFORE), parse(BEFORE.replace("  <queue", "    <queue"))) == []
    assert reload_message("f.xml", parse(BEFORE), parse(BEFORE)) == (
        "reloaded f.xml: nothing that takes effect changed (comments or layout only)")
    assert reload_message("f.xml", None, parse(BEFORE)) == "reloaded f.xml"


def test_the_watcher_logs_what_each_reload_changed(tmp_path, caplog):
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(BEFORE)
    config, status = load_with_status(str(path))
    handed = []
    watcher = ConfigWatcher(str(path), lambda cfg, text: handed.append(cfg), status)
    caplog.set_level(logging.INFO, logger="slotwise.reload")
    path.write_text(AFTER)
    assert watcher.check() is True
    path.write_text(AFTER.replace("<weight>3</weight>", "<weight>5</weight>"))
    assert watcher.check() is True
    path.write_text(AFTER.replace("<weight>3</weight>", "<weight>heavy</weight>"))  # refused: no reload line
    assert watcher.check() is False
    path.write_text(AFTER.replace("<weight>3</weight>", "<weight>5</weight>").replace("<allocations>",
                                                                                       "<allocations>\n"))
    assert watcher.check() is True
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reloaded")]
    assert lines == [
        f"reloaded {path}: added root.x, root.x.etl; removed root.y; root.prod weight 2 -> 3, maxRunningApps 4 -> 6",
        f"reloaded {path}: root.prod weight 3 -> 5",  # against the last file in force, not the start-up one
        f"reloaded {path}: nothing that takes effect changed (comments or layout only)",
    ]
    assert len(handed) == 3


def test_an_mrv1_file_is_described_in_its_own_words():
    text = (Path(__file__).parent.parent / "conf" / "mrv1-pools.xml").read_text()
    old = parse_allocations(text, "pools.xml")
    new = parse_allocations(text.replace("<minMaps>20</minMaps>", "<minMaps>30</minMaps>")
                            .replace("<maxRunningJobs>6</maxRunningJobs>", "<maxRunningJobs>7</maxRunningJobs>")
                            .replace("<schedulingMode>fifo</schedulingMode>", "<schedulingMode>fair</schedulingMode>"),
                            "pools.xml")
    # minMaps, not the min resources Slotwise derives from it; MRv1's names for the rest.
    assert describe_changes(old, new) == ["root.production minMaps 20 -> 30", "root.research schedulingMode fifo -> fair",
                                          "user etl maxRunningJobs 6 -> 7"]


def test_a_reload_that_only_adds_an_ignored_element_says_its_warning(tmp_path, caplog):
    """A mistyped element YARN ignores changes nothing in force, but it is no
    "comments or layout only" change: the reload line counts and says the
    warnings (FILE:LINE), as the console and /api/v1/config do."""
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(BEFORE)
    config, status = load_with_status(str(path))
    typo = BEFORE.replace("<weight>2</weight>", "<weight>2</weight>\n    <maxRunningApp>3</maxRunningApp>")
    assert typo != BEFORE
    path.write_text(typo)
    watcher = ConfigWatcher(str(path), lambda cfg, text: None, status)
    caplog.set_level(logging.INFO, logger="slotwise.reload")
    assert watcher.check() is True
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reloaded")]
    assert line.startswith(f"reloaded {path}: nothing that takes effect changed; 1 warning(s): ")
    assert "unknown element <maxRunningApp>" in line and "layout only" not in line
    assert status.warnings and "maxRunningApp" in status.warnings[0] and status.errors == []
