"""The YARN allocation-file parser: the documentation's example, every element, resource
strings and values, and errors of the file as a whole (syntax, files), with their lines."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from slotwise.config import ConfigError, ConfigErrors, load_allocations, parse_allocations
from slotwise.config import values as v
from slotwise.config.loader import detect_format
from slotwise.config.model import PlacementRule, ResourceSpec, default_placement_rules
from slotwise.resources import Resource
from yarnxml import doc, one_error, parse, warns

CONF = Path(__file__).resolve().parent.parent / "conf"


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
