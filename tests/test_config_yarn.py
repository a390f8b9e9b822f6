"""The YARN allocation-file parser: every element, every error, the lines."""

from __future__ import annotations

import math
from pathlib import Path
from textwrap import dedent

import pytest

from slotwise.config import ConfigError, ConfigErrors, load_allocations, parse_allocations
from slotwise.config import values as v
from slotwise.config.loader import detect_format
from slotwise.config.model import PlacementRule, ResourceSpec, default_placement_rules
from slotwise.config.yarn_xml import rule_is_terminal
from slotwise.resources import Resource
from support import warnings_of

CONF = Path(__file__).resolve().parent.parent / "conf"


def doc(body: str) -> str:
    """<allocations> on line 1, so the body's first line is line 2."""
    return "<allocations>\n" + dedent(body).strip("\n") + "\n</allocations>\n"


def parse(body: str):
    return parse_allocations(doc(body), "t.xml")


def errors(body: str) -> list[tuple[int, str]]:
    with pytest.raises(ConfigErrors) as info:
        parse(body)
    return [(e.line, e.message) for e in info.value.errors]


def warns(body: str) -> list[tuple[int, str]]:
    """The warnings of a file that loads: (line, message)."""
    return warnings_of(parse(body))


def one_error(body: str) -> tuple[int, str]:
    errs = errors(body)
    assert len(errs) == 1, errs
    return errs[0]


# --- the Hadoop documentation example ------------------------------------------


@pytest.fixture(scope="module")
def hadoop_doc():
    return load_allocations(CONF / "hadoop-doc-example.xml")


def test_doc_example_queues(hadoop_doc):
    cfg = hadoop_doc
    assert cfg.format == "yarn" and cfg.source.endswith("hadoop-doc-example.xml")
    assert set(cfg.queues()) == {
        "root", "root.sample_queue", "root.sample_queue.sample_sub_queue",
        "root.sample_queue.sample_reservable_queue", "root.secondary_group_queue",
    }
    q = cfg.queues()["root.sample_queue"]
    assert q.line == 5
    assert q.min_resources == Resource(10000, 0)
    assert q.max_resources == ResourceSpec(memory_mb=90000, vcores=0)
    assert q.max_running_apps == 50
    assert q.max_am_share is None  # moved to the leaf: YARN 3.5 refuses it on a parent
    assert q.weight == 2.0
    assert q.scheduling_policy == "fair"
    sub = cfg.queues()["root.sample_queue.sample_sub_queue"]
    assert sub.acl_submit_apps == "charlie"
    assert sub.min_resources == Resource(5000, 0)
    assert sub.max_am_share == 0.1
    assert [c.short_name for c in q.children] == ["sample_sub_queue", "sample_reservable_queue"]
    sgq = cfg.queues()["root.secondary_group_queue"]
    assert sgq.is_parent and sgq.weight == 3.0 and not sgq.children
    assert sgq.max_child_resources == ResourceSpec(memory_mb=4096, vcores=4)


def test_doc_example_top_level(hadoop_doc):
    cfg = hadoop_doc
    assert cfg.users["sample_user"].max_running_apps == 30
    assert cfg.user_max_apps("sample_user") == 30
    assert cfg.user_max_apps("someone_else") == 5
    assert cfg.user_max_apps_default == 5
    assert cfg.queue_max_am_share_default == 0.5
    assert cfg.queue_max_resources_default == ResourceSpec(memory_mb=40000, vcores=0)
    assert cfg.default_queue_scheduling_policy == "fair"
    assert cfg.default_min_share_preemption_timeout == math.inf


def test_doc_example_placement(hadoop_doc):
    rules = hadoop_doc.placement_rules
    assert [(r.name, r.create, r.line) for r in rules] == [
        ("specified", True, 38), ("primaryGroup", False, 39),
        ("nestedUserQueue", True, 40), ("default", True, 43),
    ]
    assert rules[2].parent == PlacementRule("secondaryGroupExistingQueue", create=False, line=41)
    assert rules[3].queue == "root.sample_queue"


def test_the_verbatim_doc_example_is_refused_as_yarn_3_5_refuses_it():
    """tests/data keeps the documentation's example as published; YARN 3.5
    refuses it (tests/test_yarn_reference.py), and so does Slotwise."""
    path = Path(__file__).resolve().parent / "data" / "hadoop-doc-example.xml"
    with pytest.raises(ConfigErrors) as info:
        load_allocations(path)
    assert [str(e) for e in info.value.errors] == [
        f"{path}:7: maxAMShare is for leaf queues only, but root.sample_queue is a parent queue "
        "(YARN 3.5 refuses the file)"]
    text = path.read_text()
    assert text.startswith('<?xml version="1.0"?>\n<allocations>\n  <queue name="sample_queue">\n')
    assert "  <queue name=\"secondary_group_queue\" type=\"parent\">\n  <weight>3.0</weight>\n" in text
    assert text.endswith("  </queuePlacementPolicy>\n</allocations>\n")


def test_demo_allocations():
    cfg = load_allocations(CONF / "allocations.xml")
    qs = cfg.queues()
    assert set(qs) == {"root", "root.prod", "root.research", "root.adhoc", "root.users"}
    prod = qs["root.prod"]
    assert (prod.weight, prod.min_resources, prod.min_share_preemption_timeout, prod.scheduling_policy) == (
        2.0, Resource(4096, 4), 30.0, "fifo")
    assert (qs["root.research"].scheduling_policy, qs["root.research"].max_running_apps) == ("fair", 3)
    assert qs["root.adhoc"].max_resources.resolve(Resource(1000, 10)).to_dict() == Resource(500, 5).to_dict()
    assert qs["root.users"].is_parent
    assert cfg.default_fair_share_preemption_timeout == 60
    assert cfg.default_fair_share_preemption_threshold == 0.5
    names = [(r.name, r.create, r.queue) for r in cfg.placement_rules]
    assert names == [("specified", False, None), ("nestedUserQueue", True, None)]
    assert cfg.placement_rules[1].parent.queue == "root.users"


# --- every element ----------------------------------------------------------------


def test_every_queue_element():
    cfg = parse("""
        <queue name="a">
          <minResources>1024 mb, 2 vcores</minResources>
          <maxResources>vcores=8, memory-mb=8192</maxResources>
          <maxChildResources>25% cpu, 50% memory</maxChildResources>
          <maxContainerAllocation>2048 mb, 2 vcores</maxContainerAllocation>
          <maxRunningApps>7</maxRunningApps>
          <maxAMShare>-1</maxAMShare>
          <weight>0</weight>
          <schedulingPolicy>DRF</schedulingPolicy>
          <minSharePreemptionTimeout>2</minSharePreemptionTimeout>
          <fairSharePreemptionTimeout>20</fairSharePreemptionTimeout>
          <fairSharePreemptionThreshold>0.8</fairSharePreemptionThreshold>
          <allowPreemptionFrom>FALSE</allowPreemptionFrom>
          <aclSubmitApps> admins,ops</aclSubmitApps>
          <aclAdministerApps>alice bob</aclAdministerApps>
          <aclAdministerReservations>alice</aclAdministerReservations>
          <aclListReservations>*</aclListReservations>
          <aclSubmitReservations>bob</aclSubmitReservations>
          <reservation/>
        </queue>
    """)
    q = cfg.queues()["root.a"]
    assert q.min_resources == Resource(1024, 2)
    assert q.max_resources == ResourceSpec(memory_mb=8192, vcores=8)
    assert q.max_child_resources == ResourceSpec(memory_pct=50, vcores_pct=25)
    assert q.max_running_apps == 7
    assert q.max_am_share == -1
    assert q.weight == 0
    assert q.scheduling_policy == "drf"
    assert q.min_share_preemption_timeout == 2
    assert q.fair_share_preemption_timeout == 20
    assert q.fair_share_preemption_threshold == 0.8
    assert q.allow_preemption_from is False
    assert q.acl_submit_apps == " admins,ops"  # leading space: groups only
    assert q.acl_administer_apps == "alice bob"


def test_every_top_level_element():
    cfg = parse("""
        <userMaxAppsDefault>4</userMaxAppsDefault>
        <queueMaxAppsDefault>9</queueMaxAppsDefault>
        <queueMaxResourcesDefault>vcores=50%, memory-mb=40%</queueMaxResourcesDefault>
        <queueMaxAMShareDefault>0.25</queueMaxAMShareDefault>
        <defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>
        <defaultMinSharePreemptionTimeout>15</defaultMinSharePreemptionTimeout>
        <defaultFairSharePreemptionTimeout>45</defaultFairSharePreemptionTimeout>
        <defaultFairSharePreemptionThreshold>0.3</defaultFairSharePreemptionThreshold>
        <reservation-agent>org.example.Agent</reservation-agent>
        <reservation-policy>org.example.Policy</reservation-policy>
        <reservation-planner>org.example.Planner</reservation-planner>
        <user name="bob"><maxRunningApps>2</maxRunningApps></user>
    """)
    assert cfg.user_max_apps_default == 4
    assert cfg.queue_max_apps_default == 9
    assert cfg.queue_max_resources_default == ResourceSpec(memory_pct=40, vcores_pct=50)
    assert cfg.queue_max_am_share_default == 0.25
    assert cfg.default_queue_scheduling_policy == "drf"
    assert cfg.default_min_share_preemption_timeout == 15
    assert cfg.default_fair_share_preemption_timeout == 45
    assert cfg.default_fair_share_preemption_threshold == 0.3
    assert cfg.users["bob"].max_running_apps == 2 and cfg.users["bob"].line == 13


def test_deprecated_aliases():
    cfg = parse("""
        <defaultQueueSchedulingMode>DRF</defaultQueueSchedulingMode>
        <fairSharePreemptionTimeout>70</fairSharePreemptionTimeout>
        <queue name="a"><schedulingMode>fifo</schedulingMode></queue>
    """)
    assert cfg.format == "yarn"  # schedulingMode next to YARN elements is the old YARN alias
    assert cfg.default_queue_scheduling_policy == "drf"
    assert cfg.default_fair_share_preemption_timeout == 70
    assert cfg.queues()["root.a"].scheduling_policy == "fifo"


def test_default_fair_share_timeout_wins_over_deprecated_alias():
    cfg = parse("""
        <fairSharePreemptionTimeout>70</fairSharePreemptionTimeout>
        <defaultFairSharePreemptionTimeout>80</defaultFairSharePreemptionTimeout>
    """)
    assert cfg.default_fair_share_preemption_timeout == 80


def test_empty_file_is_the_default_config():
    cfg = parse_allocations("<allocations/>", "e.xml")
    assert cfg.format == "yarn" and cfg.root.children == [] and cfg.users == {}
    assert cfg.placement_rules == default_placement_rules()
    assert cfg.queue_max_am_share_default == 0.5 and cfg.default_fair_share_preemption_threshold == 0.5
    assert cfg.default_min_share_preemption_timeout == math.inf


def test_comments_processing_instructions_and_whitespace_are_ignored():
    cfg = parse("""
        <!-- a comment -->
        <?some-pi data?>
        <queue name="a">
          <!-- inside -->
          <weight> 2.5 <!-- split --> </weight>
          some stray text
        </queue>
    """)
    assert cfg.queues()["root.a"].weight == 2.5


def test_nested_queues_and_pool_alias():
    cfg = parse("""
        <pool name="a">
          <queue name="b">
            <pool name="c"><weight>4</weight></pool>
          </queue>
        </pool>
        <queue name="b"/>
    """)
    assert list(cfg.queues()) == ["root", "root.a", "root.a.b", "root.a.b.c", "root.b"]
    assert cfg.queues()["root.a.b.c"].weight == 4 and cfg.queues()["root.a.b.c"].line == 4


def test_explicit_root_queue():
    cfg = parse("""
        <queue name="root">
          <aclSubmitApps> </aclSubmitApps>
          <maxRunningApps>100</maxRunningApps>
          <queue name="a"/>
          <queue name="b"><queue name="c"/></queue>
        </queue>
    """)
    assert list(cfg.queues()) == ["root", "root.a", "root.b", "root.b.c"]
    assert cfg.root.max_running_apps == 100 and cfg.root.acl_submit_apps == " " and cfg.root.line == 2


def test_str_bytes_and_encoding():
    xml = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<allocations><queue name="caf\u00e9"/></allocations>'
    assert "root.caf\u00e9" in parse_allocations(xml).queues()
    assert "root.caf\u00e9" in parse_allocations(xml.encode("iso-8859-1")).queues()


# --- resource strings --------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("10000 mb,0vcores", Resource(10000, 0)),
    ("1024 mb, 2 vcores", Resource(1024, 2)),
    ("2 vcores, 1024 mb", Resource(1024, 2)),
    ("  1024MB ,2VCores ", Resource(1024, 2)),
    ("2 vcores 5120 mb", Resource(5120, 2)),
    ("512.5 mb, 1.5 vcores", Resource(512, 1)),  # YARN reads the whole part
    ("vcores=3, memory-mb=2048", Resource(2048, 3)),
    (" memory-mb = 100 ", Resource(100, 0)),
    ("vcores=1", Resource(0, 1)),
])
def test_min_resource_forms(text, expected):
    assert v.min_resource(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("90000 mb, 0 vcores", ResourceSpec(memory_mb=90000, vcores=0)),
    ("vcores=4, memory-mb=4096", ResourceSpec(memory_mb=4096, vcores=4)),
    ("50%", ResourceSpec(memory_pct=50, vcores_pct=50)),
    ("12.5 %", ResourceSpec(memory_pct=12.5, vcores_pct=12.5)),
    ("40% cpu, 60% memory", ResourceSpec(memory_pct=60, vcores_pct=40)),
    ("60% MEMORY,40%CPU", ResourceSpec(memory_pct=60, vcores_pct=40)),
    ("vcores=10%, memory-mb=20%", ResourceSpec(memory_pct=20, vcores_pct=10)),
    ("vcores=10%", ResourceSpec(vcores_pct=10)),
])
def test_max_resource_forms(text, expected):
    assert v.max_resource(text) == expected


def test_percentages_resolve_against_the_cluster():
    cluster = Resource(10000, 40)
    assert v.max_resource("50%").resolve(cluster).to_dict() == Resource(5000, 20).to_dict()
    assert v.max_resource("25% cpu, 10% memory").resolve(cluster).to_dict() == Resource(1000, 10).to_dict()
    assert v.max_resource("vcores=50%").resolve(cluster).to_dict() == Resource(math.inf, 20).to_dict()
    with pytest.raises(v.Adjusted) as adjusted:  # unlimited vcores, as documented; a warning says YARN 3.5 differs
        v.max_resource("memory-mb=2048")
    assert adjusted.value.value.resolve(cluster).to_dict() == Resource(2048, math.inf).to_dict()
    assert "YARN 3.5 ends with 0 vcores" in str(adjusted.value)
    assert v.max_resource("2048 mb, 3 vcores").resolve(cluster).to_dict() == Resource(2048, 3).to_dict()


@pytest.mark.parametrize("parser, text, message", [
    (v.min_resource, "", "must not be empty"),
    (v.min_resource, "1024 mb", "must give both memory and vcores"),
    (v.min_resource, "4 vcores", "must give both memory and vcores"),
    (v.min_resource, "-1 mb, 2 vcores", "must not be negative"),
    (v.min_resource, "1 mb, -2 vcores", "must not be negative"),
    (v.min_resource, "1 mb, 2 vcores, 3 mb", 'gives "mb" twice'),
    (v.min_resource, "1 gb, 2 vcores", 'unknown unit "gb"'),
    (v.min_resource, "5120mb mb, 2 vcores", "must look like"),
    (v.min_resource, "lots", "must look like"),
    (v.min_resource, "gpu=1, vcores=2", 'unknown resource "gpu"'),
    (v.min_resource, "vcores=2, vcores=3", 'gives "vcores" twice'),
    (v.min_resource, "vcores=2.5", 'bad value "2.5"'),
    (v.min_resource, "vcores=-2", "must not be negative"),
    (v.min_resource, "vcores", "must look like"),
    (v.min_resource, "vcores=", "must look like"),
    (v.max_resource, "vcores=10%, memory-mb=100", "all values as percentages or none"),
    (v.max_resource, "-5%", "must not be negative"),
    (v.max_resource, "50% memory", 'must look like "X%"'),
    (v.max_resource, "50% cpu, 20% disk", 'must look like "X%"'),
    (v.max_resource, "50% cpu, 20% cpu", 'gives "cpu" twice'),
    (v.max_resource, "1024 mb", "must give both memory and vcores"),
])
def test_bad_resources(parser, text, message):
    with pytest.raises(v.BadValue, match=message):
        parser(text)


# --- scalar values ------------------------------------------------------------------


@pytest.mark.parametrize("parser, good, bad", [
    (v.non_negative_int, [("0", 0), (" 12 ", 12), ("+3", 3)], ["-1", "1.5", "abc", "", "1e3"]),
    (v.non_negative_float, [("0", 0.0), ("2.5", 2.5), (".5", 0.5), ("1e2", 100.0)], ["-0.1", "nan", "inf", "x"]),
    (v.seconds, [("0", 0.0), ("30", 30.0), (" +7 ", 7.0)], ["0.25", "30s", "inf", "1e3"]),
    (v.app_count, [("0", 0), ("+3", 3)], ["1.5", "x", "1e3"]),
    (v.weight, [("0", 0.0), ("2.5", 2.5), ("1e2", 100.0), ("-0", 0.0)], ["x", "nan", "--1"]),
    (v.fraction, [("0", 0.0), ("1", 1.0), ("0.5", 0.5)], ["1.01", "-0.5", "half"]),
    (v.am_share, [("-1", -1.0), ("0", 0.0), ("1.0", 1.0)], ["-0.5", "-2", "x"]),
    (v.threshold, [("0", 0.0), ("1", 1.0), ("0.5", 0.5)], ["half", ""]),
    (v.boolean, [("true", True), ("FALSE", False), (" True ", True)], ["yes", "1", ""]),
    (v.policy_name, [("fair", "fair"), ("FIFO", "fifo"), (" drf ", "drf")], ["lottery", ""]),
])
def test_scalar_values(parser, good, bad):
    for text, expected in good:
        assert parser(text) == expected
    for text in bad:
        with pytest.raises(v.BadValue):
            parser(text)


@pytest.mark.parametrize("parser, text, used", [
    (v.threshold, "1.5", 1.0), (v.threshold, "-0.2", 0.0), (v.am_share, "2", 1.0), (v.seconds, "-1", 0.0),
    (v.min_resource, "50%", Resource(0, 0)), (v.min_resource, "vcores=50%", Resource(0, 0)),
    (v.app_count, "-3", 0), (v.weight, "-2", -2.0)])
def test_values_yarn_adjusts(parser, text, used):
    with pytest.raises(v.Adjusted) as info:
        parser(text)
    assert info.value.value == used and "YARN" in str(info.value)


@pytest.mark.parametrize("element, value, message", [
    ("maxRunningApps", "abc", 'maxRunningApps in queue root.a must be a non-negative integer, got "abc"'),
    ("maxRunningApps", "1.5", 'maxRunningApps in queue root.a must be a non-negative integer, got "1.5"'),
    ("weight", "heavy", 'weight in queue root.a must be a number, got "heavy"'),
    ("maxAMShare", "-0.5", "maxAMShare in queue root.a must be a number between 0 and 1, or -1"),
    ("fairSharePreemptionThreshold", "high", "must be a number between 0 and 1"),
    ("minSharePreemptionTimeout", "1.5", "must be a whole number of seconds"),
    ("fairSharePreemptionTimeout", "soon", "must be a whole number of seconds"),
    ("allowPreemptionFrom", "maybe", 'allowPreemptionFrom in queue root.a must be "true" or "false"'),
    ("schedulingPolicy", "lottery", "schedulingPolicy in queue root.a must be one of "),
    ("maxResources", "1 mb", "maxResources in queue root.a must give both memory and vcores"),
    ("maxChildResources", "-1%", "must not be negative"),
    ("maxContainerAllocation", "x", "maxContainerAllocation in queue root.a must look like"),
])
def test_bad_queue_values_report_element_and_line(element, value, message):
    line, msg = one_error(f"""
        <queue name="a">
          <aclSubmitApps>x</aclSubmitApps>
          <{element}>{value}</{element}>
        </queue>
    """)
    assert line == 4
    assert message in msg


@pytest.mark.parametrize("element, value, message", [
    ("userMaxAppsDefault", "1.5", "must be a non-negative integer"),
    ("queueMaxAppsDefault", "many", "must be a non-negative integer"),
    ("queueMaxResourcesDefault", "10 vcores", "must give both memory and vcores"),
    ("queueMaxAMShareDefault", "-1.5", "between 0 and 1, or -1"),
    ("defaultQueueSchedulingPolicy", "x", "must be one of"),
    ("defaultMinSharePreemptionTimeout", "0.5", "seconds"),
    ("defaultFairSharePreemptionTimeout", "x", "seconds"),
    ("defaultFairSharePreemptionThreshold", "x", "between 0 and 1"),
    ("fairSharePreemptionTimeout", "5.5", "seconds"),
])
def test_bad_top_level_values(element, value, message):
    line, msg = one_error(f"""
        <queue name="a"/>
        <{element}>{value}</{element}>
    """)
    assert line == 3 and msg.startswith(f"{element} in <allocations> ") and message in msg


def test_what_yarn_clamps_loads_clamped_with_a_warning():
    body = """
        <queue name="a">
          <fairSharePreemptionThreshold>1.5</fairSharePreemptionThreshold>
          <maxAMShare>3</maxAMShare>
        </queue>
        <defaultFairSharePreemptionThreshold>2</defaultFairSharePreemptionThreshold>
    """
    cfg = parse(body)
    a = cfg.queues()["root.a"]
    assert (a.fair_share_preemption_threshold, a.max_am_share, cfg.default_fair_share_preemption_threshold) == (1, 1, 1)
    assert warns(body) == [
        (3, 'fairSharePreemptionThreshold in queue root.a is outside 0..1: YARN uses 1, got "1.5"'),
        (4, 'maxAMShare in queue root.a is above 1: YARN uses 1, got "3"'),
        (6, 'defaultFairSharePreemptionThreshold in <allocations> is outside 0..1: YARN uses 1, got "2"'),
    ]


def test_element_given_twice():
    body = """
        <queue name="a">
          <weight>1</weight>
          <weight>2</weight>
          <schedulingPolicy>fair</schedulingPolicy>
          <schedulingMode>drf</schedulingMode>
        </queue>
        <defaultQueueSchedulingPolicy>fair</defaultQueueSchedulingPolicy>
        <defaultQueueSchedulingMode>drf</defaultQueueSchedulingMode>
    """
    assert warns(body) == [
        (4, "<weight> given twice in queue root.a (first at line 3): the last one counts, as in YARN"),
        (6, "<schedulingMode> given twice in queue root.a (first at line 5): the last one counts, as in YARN"),
        (9, "<defaultQueueSchedulingMode> given twice in <allocations> (first at line 8): the last one counts, "
            "as in YARN"),
    ]
    cfg = parse(body)
    assert cfg.queues()["root.a"].weight == 2 and cfg.queues()["root.a"].scheduling_policy == "drf"
    assert cfg.default_queue_scheduling_policy == "drf"


def test_value_element_holding_elements():
    assert one_error("""
        <queue name="a">
          <weight>
            <value>2</value>
          </weight>
        </queue>
    """) == (4, "<weight> must hold a value, not element <value>")


# --- unknown elements and attributes ----------------------------------------------------


def test_unknown_elements_everywhere_are_ignored_with_a_warning():
    assert warns("""
        <fooBar>1</fooBar>
        <queue name="prod">
          <fooBar/>
          <queue name="etl"><maxApps>3</maxApps></queue>
        </queue>
        <user name="bob"><weight>2</weight></user>
        <queuePlacementPolicy>
          <specified/>
          <rule name="specified"><extra/></rule>
          <rule name="reject"/>
        </queuePlacementPolicy>
    """) == [
        (2, "unknown element <fooBar> in <allocations> is ignored, as YARN ignores it"),
        (4, "unknown element <fooBar> in queue root.prod is ignored, as YARN ignores it"),
        (5, "unknown element <maxApps> in queue root.prod.etl is ignored, as YARN ignores it; "
            "did you mean <maxRunningApps>?"),
        (7, "unknown element <weight> in user bob is ignored, as YARN ignores it"),
        (9, "unknown element <specified> in queuePlacementPolicy is ignored, as YARN ignores it"),
        (10, 'unknown element <extra> in rule "specified" is ignored, as YARN ignores it'),
    ]


def test_misspelt_and_misplaced_elements_real_files_have():
    body = """
        <defaultSchedulingMode>fair</defaultSchedulingMode>
        <queue name="a"><defaultQueueSchedulingPolicy>fair</defaultQueueSchedulingPolicy></queue>
        <user name="bob"><maxRunningJobs>3</maxRunningJobs></user>
        <queuePlacementPolicy><rule name="specified" create="false" team="x"/><rule name="default"/>
        </queuePlacementPolicy>
    """
    cfg = parse(body)
    assert cfg.format == "yarn" and set(cfg.queues()) == {"root", "root.a"}
    assert cfg.users["bob"].max_running_apps is None
    lines = warns(body)
    assert [line for line, _ in lines] == [2, 3, 4, 5]
    assert "did you mean <defaultQueueSchedulingMode>?" in lines[0][1]
    assert lines[1][1].startswith("unknown element <defaultQueueSchedulingPolicy> in queue root.a is ignored")
    assert "did you mean <maxRunningApps>?" in lines[2][1]
    assert lines[3][1] == 'unknown attribute "team" on <rule> in rule "specified" is ignored, as YARN ignores it'


def test_queue_attributes():
    body = """
        <queue name="a" weight="2"/>
        <queue name="b" type="leaf"/>
        <queue name="c" type="parent"/>
    """
    assert warns(body) == [
        (2, 'unknown attribute "weight" on <queue> in queue root.a is ignored, as YARN ignores it'),
        (3, 'type of queue root.b is "leaf", not "parent": YARN takes it as a leaf unless it has queues inside'),
    ]
    qs = parse(body).queues()
    assert qs["root.a"].weight == 1 and not qs["root.b"].is_parent and qs["root.c"].is_parent


# --- queue names -----------------------------------------------------------------------------


def test_bad_queue_names():
    errs = errors("""
        <queue name=""/>
        <queue name="   "/>
        <queue/>
        <queue name="a.b"/>
        <queue name=" a"/>
        <queue name="ok">
          <queue name="x.y"><weight>heavy</weight></queue>
        </queue>
    """)
    assert [line for line, _ in errs] == [2, 3, 4, 5, 8, 8]
    assert errs[0][1] == "<queue> in queue root needs a non-empty name attribute"
    assert errs[3][1] == '<queue> in queue root name "a.b" must not contain "." (nest the element instead)'
    assert errs[4][1].startswith('<queue> in queue root.ok name "x.y"')
    assert "weight in queue root.ok.? must be a number" in errs[5][1]


def test_names_with_spaces_around_are_trimmed_as_yarn_does():
    body = '<queue name=" a "><queue name="b\t"/></queue>'
    assert set(parse(body).queues()) == {"root", "root.a", "root.a.b"}
    assert [m for _, m in warns(body)] == [
        '<queue> in queue root name " a " has spaces around it: YARN trims them, so it is "a"',
        '<queue> in queue root.a name "b " has spaces around it: YARN trims them, so it is "b"']  # XML: tab is space


def test_a_queue_declared_twice_is_merged_as_yarn_does():
    body = """
        <queue name="a">
          <queue name="x"><weight>2</weight><maxRunningApps>4</maxRunningApps></queue>
          <pool name="x"><weight>3</weight></pool>
        </queue>
        <pool name="a"><weight>5</weight><queue name="y"/></pool>
        <queue name="b"><queue name="x"/></queue>
    """
    assert warns(body) == [
        (4, "queue root.a.x declared again (first at line 3): merged, later values win, as in YARN"),
        (6, "queue root.a declared again (first at line 2): merged, later values win, as in YARN"),
    ]
    qs = parse(body).queues()
    assert set(qs) == {"root", "root.a", "root.a.x", "root.a.y", "root.b", "root.b.x"}
    assert (qs["root.a.x"].weight, qs["root.a.x"].max_running_apps, qs["root.a"].weight) == (3, 4, 5)


def test_root_must_be_alone():
    errs = errors("""
        <queue name="root"><queue name="a"/></queue>
        <queue name="b"/>
    """)
    assert errs == [(2, '<queue name="root"> must be the only top-level queue: put the other queues inside it')]
    errs = errors("""
        <queue name="root"/>
        <queue name="root"/>
    """)
    assert errs[0][0] == 2 and "only top-level queue" in errs[0][1]


# --- scheduling policies on parents, reservations ------------------------------------------


def test_fifo_only_on_leaves():
    assert errors("""
        <queue name="a">
          <schedulingPolicy>fifo</schedulingPolicy>
          <queue name="leaf"><schedulingPolicy>fifo</schedulingPolicy></queue>
        </queue>
        <queue name="p" type="parent">
          <schedulingPolicy>FIFO</schedulingPolicy>
        </queue>
        <queue name="root2"><schedulingPolicy>fifo</schedulingPolicy></queue>
    """) == [
        (3, 'schedulingPolicy "fifo" is for leaf queues only, but root.a is a parent queue'),
        (7, 'schedulingPolicy "fifo" is for leaf queues only, but root.p is a parent queue'),
    ]


def test_fifo_on_explicit_root_and_as_default():
    assert errors("""
        <queue name="root">
          <schedulingPolicy>fifo</schedulingPolicy>
        </queue>
        <defaultQueueSchedulingPolicy>fifo</defaultQueueSchedulingPolicy>
    """) == [
        (3, 'schedulingPolicy "fifo" is for leaf queues only, but root is a parent queue'),
        (5, 'the default scheduling policy cannot be "fifo": it would apply to parent queues too; '
            "set it on each leaf queue instead"),
    ]


def test_reservation_only_on_leaves():
    assert one_error("""
        <queue name="a">
          <reservation/>
          <queue name="b"><reservation/></queue>
        </queue>
    """) == (3, "<reservation> is for leaf queues only, but root.a is a parent queue")


# --- users ------------------------------------------------------------------------------------


def test_user_errors_and_warnings():
    assert errors("""
        <user name="eve" admin="yes"><maxRunningApps>x</maxRunningApps></user>
    """) == [(2, 'maxRunningApps in user eve must be a non-negative integer, got "x"')]
    body = """
        <user><maxRunningApps>1</maxRunningApps></user>
        <user name="bob"><maxRunningApps>1</maxRunningApps></user>
        <user name="bob"><maxRunningApps>2</maxRunningApps></user>
        <user name="eve" admin="yes"/>
    """
    assert warns(body) == [
        (2, "<user> without a name is ignored: it limits no user"),
        (4, "user bob declared again (first at line 3): merged, later values win, as in YARN"),
        (5, 'unknown attribute "admin" on <user> in <allocations> is ignored, as YARN ignores it'),
    ]
    assert parse(body).users["bob"].max_running_apps == 2


# --- placement policy ----------------------------------------------------------------------


def rules_of(policy: str) -> list[PlacementRule]:
    return parse(f"<queuePlacementPolicy>{policy}</queuePlacementPolicy>").placement_rules


def test_no_policy_gives_the_default_rules():
    assert parse('<queue name="a"/>').placement_rules == default_placement_rules()


def test_every_rule():
    rules = rules_of("""
        <rule name="specified" create="false"/>
        <rule name="secondaryGroupExistingQueue"/>
        <rule name="primaryGroup" create="false"/>
        <rule name="user" create="false"/>
        <rule name="nestedUserQueue" create="false"><rule name="default" queue="root.a.b"/></rule>
        <rule name="default" queue="dflt" create="false"/>
        <rule name="nestedUserQueue"><rule name="primaryGroup"/></rule>
    """)
    assert [(r.name, r.create) for r in rules] == [
        ("specified", False), ("secondaryGroupExistingQueue", True), ("primaryGroup", False),
        ("user", False), ("nestedUserQueue", False), ("default", False), ("nestedUserQueue", True),
    ]
    assert rules[6].parent.name == "primaryGroup" and rules[6].parent.create
    assert rules[4].parent.queue == "root.a.b"
    assert rules[5].queue == "root.dflt"
    assert rules_of('<rule name="default"/>')[0].queue == "root.default"
    assert rules_of('<rule name="reject"/>')[0].name == "reject"


@pytest.mark.parametrize("rule, terminal", [
    (PlacementRule("specified"), False),
    (PlacementRule("user"), True),
    (PlacementRule("user", create=False), False),
    (PlacementRule("primaryGroup"), True),
    (PlacementRule("primaryGroup", create=False), False),
    (PlacementRule("secondaryGroupExistingQueue"), False),
    (PlacementRule("nestedUserQueue", parent=PlacementRule("primaryGroup")), True),
    (PlacementRule("nestedUserQueue", parent=PlacementRule("primaryGroup", create=False)), False),
    (PlacementRule("nestedUserQueue", parent=PlacementRule("secondaryGroupExistingQueue")), False),
    (PlacementRule("nestedUserQueue", create=False, parent=PlacementRule("default")), False),
    (PlacementRule("default"), True),
    (PlacementRule("default", create=False), False),
    (PlacementRule("reject"), True),
])
def test_terminal_rules_match_yarn_3_5(rule, terminal):
    assert rule_is_terminal(rule) is terminal


def test_unreachable_rule():
    assert one_error("""
        <queuePlacementPolicy>
          <rule name="user"/>
          <rule name="default"/>
          <rule name="reject"/>
        </queuePlacementPolicy>
    """) == (4, 'rule "default" at line 4 can never be reached: rule "user" at line 3 always places or rejects the app')


@pytest.mark.parametrize("last", [
    '<rule name="specified"/>',
    '<rule name="user" create="false"/>',
    '<rule name="primaryGroup" create="false"/>',
    '<rule name="secondaryGroupExistingQueue"/>',
    '<rule name="nestedUserQueue"><rule name="secondaryGroupExistingQueue"/></rule>',
    '<rule name="default" create="false"/>',
])
def test_last_rule_may_fall_through(last):
    line, msg = one_error(f"""
        <queuePlacementPolicy>
          <rule name="specified"/>
          {last}
        </queuePlacementPolicy>
    """)
    assert line == 4 and "may fall through" in msg and "end the policy with default, reject" in msg


def test_placement_errors():
    assert errors("""
        <queuePlacementPolicy>
          <rule/>
          <rule name="magic"/>
          <rule name="nestedUserQueue"/>
          <rule name="nestedUserQueue">
            <rule name="reject"/>
          </rule>
          <rule name="nestedUserQueue"><rule name="user"/></rule>
          <rule name="reject"/>
        </queuePlacementPolicy>
    """) == [
        (3, "<rule> needs a name attribute"),
        (4, 'unknown placement rule "magic" (known: specified, user, primaryGroup, '
            "secondaryGroupExistingQueue, nestedUserQueue, default, reject)"),
        (5, "nestedUserQueue needs a nested <rule> (its parent rule)"),
        (7, 'the rule inside nestedUserQueue cannot be "reject"'),
        (9, 'the rule inside nestedUserQueue cannot be "user"'),
    ]


def test_placement_quirks_yarn_accepts():
    body = """
        <queuePlacementPolicy>
          <rule name="user" create="yes" queue="x"/>
          <rule name="nestedUserQueue"><rule name="default"/><rule name="secondaryGroupExistingQueue"/></rule>
          <rule name="default" queue="a..b"/>
        </queuePlacementPolicy>
    """
    assert warns(body) == [
        (3, 'unknown attribute "queue" on <rule> in rule "user" is ignored, as YARN ignores it'),
        (3, 'create of rule "user" is "yes": YARN reads anything but "true" as false'),
        (4, "nestedUserQueue has 2 nested rules: YARN uses the last one"),
        (5, 'queue "a..b" of the default rule is not a valid queue name: YARN keeps it and fails (an exception '
            "in the scheduler) on the first app it places there; Slotwise uses root.default"),
    ]
    rules = parse(body).placement_rules
    assert rules[0].create is False and rules[1].parent.name == "secondaryGroupExistingQueue"
    assert rules[2].queue == "root.default"


def test_empty_and_repeated_policy():
    assert errors("<queuePlacementPolicy/>") == [
        (2, "queuePlacementPolicy is empty (YARN: Empty configuration for QueuePlacementPolicy is not allowed)")]
    body = """
        <queuePlacementPolicy>
        </queuePlacementPolicy>
        <queuePlacementPolicy><rule name="reject"/></queuePlacementPolicy>
    """
    assert warns(body) == [  # only the last one is read, as in YARN
        (4, "<queuePlacementPolicy> given again (first at line 2): the last one counts, as in YARN")]
    assert [r.name for r in parse(body).placement_rules] == ["reject"]
    body = "<queuePlacementPolicy>\n</queuePlacementPolicy>"
    assert warns(body) == [(2, "queuePlacementPolicy has no rules: YARN keeps its default rules")]
    assert parse(body).placement_rules == default_placement_rules()


# --- errors: collection, syntax, files ---------------------------------------------------------


def test_all_errors_are_collected():
    with pytest.raises(ConfigErrors) as info:
        parse_allocations(doc("""
            <queue name="a">
              <maxRunningApps>abc</maxRunningApps>
              <bogus/>
            </queue>
            <userMaxAppsDefault>x</userMaxAppsDefault>
        """), "alloc.xml")
    errs = info.value.errors
    assert len(errs) == 2 and all(isinstance(e, ConfigError) for e in errs)
    assert [(e.file, e.line) for e in errs] == [("alloc.xml", 3), ("alloc.xml", 6)]
    assert str(errs[0]) == 'alloc.xml:3: maxRunningApps in queue root.a must be a non-negative integer, got "abc"'
    assert str(info.value).count("\n") == 1


def test_xml_syntax_error_has_lxml_line():
    with pytest.raises(ConfigErrors) as info:
        parse_allocations("<allocations>\n  <queue name='a'>\n</allocations>\n", "bad.xml")
    (err,) = info.value.errors
    assert err.line == 3 and err.message.startswith("XML syntax error:")
    with pytest.raises(ConfigErrors) as info:
        parse_allocations(b"", "empty.xml")
    assert info.value.errors[0].line == 1


def test_root_element_must_be_allocations():
    with pytest.raises(ConfigErrors) as info:
        parse_allocations('<?xml version="1.0"?>\n\n<configuration/>', "x.xml")
    assert [(e.line, e.message) for e in info.value.errors] == [
        (3, "the root element must be <allocations>, not <configuration>")]


def test_entities_are_not_expanded(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("42")
    xml = (f'<!DOCTYPE allocations [<!ENTITY x SYSTEM "file://{secret}">]>\n'
           "<allocations>\n<userMaxAppsDefault>&x;</userMaxAppsDefault>\n</allocations>")
    with pytest.raises(ConfigErrors) as info:
        parse_allocations(xml, "x.xml")
    assert [(e.line, e.message) for e in info.value.errors] == [
        (1, "a DOCTYPE is not allowed in an allocation file")]


def test_load_missing_file(tmp_path):
    missing = tmp_path / "nope.xml"
    with pytest.raises(ConfigErrors) as info:
        load_allocations(missing)
    (err,) = info.value.errors
    assert err.file == str(missing) and err.line is None and "cannot read allocation file" in err.message
    assert str(err) == f"{missing}: cannot read allocation file: No such file or directory"
    with pytest.raises(ConfigErrors):
        load_allocations(tmp_path)  # a directory


def test_load_reports_the_path(tmp_path):
    f = tmp_path / "fair-scheduler.xml"
    f.write_text("<allocations>\n<userMaxAppsDefault>x</userMaxAppsDefault>\n</allocations>")
    with pytest.raises(ConfigErrors) as info:
        load_allocations(str(f))
    assert str(info.value) == f'{f}:2: userMaxAppsDefault in <allocations> must be a non-negative integer, got "x"'


def test_detect_format():
    from lxml import etree

    assert detect_format(etree.fromstring("<allocations/>")) == "yarn"
    assert detect_format(etree.fromstring('<allocations><pool name="a"/></allocations>')) == "yarn"
    assert detect_format(etree.fromstring(
        '<allocations><pool name="a"><schedulingMode>fair</schedulingMode></pool></allocations>')) == "mrv1"
    assert detect_format(etree.fromstring(
        '<allocations><queue name="a"><schedulingMode>fair</schedulingMode></queue></allocations>')) == "yarn"
    assert detect_format(etree.fromstring("<allocations><maxMaps>1</maxMaps></allocations>")) == "mrv1"
