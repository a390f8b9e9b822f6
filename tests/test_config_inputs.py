"""Allocation files that try to hurt: huge or non-finite numbers, DOCTYPEs and
entities, oversized files, values that would break an error onto two lines.
Each gives exactly one clear one-line error and changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slotwise.config import ConfigErrors, load_allocations, parse_allocations
from slotwise.config.loader import MAX_FILE_BYTES
from slotwise.config.values import MAX_INT
from slotwise.config.watcher import ConfigWatcher, load_with_status

ROOT = Path(__file__).resolve().parent.parent
GOOD = "<allocations>\n  <queue name=\"a\">\n    <weight>2</weight>\n  </queue>\n</allocations>\n"


def with_weight(text: str) -> str:
    return GOOD.replace("<weight>2</weight>", f"<weight>{text}</weight>")


def with_max_apps(text: str) -> str:
    return GOOD.replace("<weight>2</weight>", f"<maxRunningApps>{text}</maxRunningApps>")


def only_error(data: str | bytes, source: str = "t.xml") -> str:
    with pytest.raises(ConfigErrors) as info:
        parse_allocations(data, source)
    errs = info.value.errors
    assert len(errs) == 1, [str(e) for e in errs]
    text = str(errs[0])
    assert "\n" not in text and "\r" not in text, text
    return text


@pytest.mark.parametrize("value, expected", [
    ("9" * 4301, f"at most {MAX_INT}"),
    (str(MAX_INT + 1), f"at most {MAX_INT}"),
    ("+-1", "non-negative integer"),
    ("1.5", "non-negative integer"),
])
def test_counts_are_java_ints(value, expected):
    text = only_error(with_max_apps(value))
    assert text.startswith("t.xml:3: maxRunningApps") and expected in text
    assert len(text) < 500  # the 4,301 digits are cut, not echoed whole


def test_the_largest_int_is_accepted():
    cfg = parse_allocations(with_max_apps(str(MAX_INT)), "t.xml")
    assert cfg.queues()["root.a"].max_running_apps == MAX_INT


@pytest.mark.parametrize("value", ["1e999", "1e16", "9" * 400, "-1e999"])
def test_numbers_must_be_finite_and_bounded(value):
    text = only_error(with_weight(value))
    assert text.startswith("t.xml:3: weight") and ("finite" in text or "non-negative" in text), text


def test_amounts_in_resources_are_bounded():
    doc = GOOD.replace("<weight>2</weight>", f"<maxResources>{'9' * 400} mb, 1 vcores</maxResources>")
    assert "t.xml:3: maxResources" in only_error(doc)


def test_a_doctype_is_refused_and_its_entities_never_expand():
    doc = ('<?xml version="1.0"?>\n<!DOCTYPE allocations [\n  <!ENTITY x "' + "y" * 1000 + '">\n]>\n'
           '<allocations>\n  <queue name="&x;&x;&x;"/>\n</allocations>\n')
    assert only_error(doc) == "t.xml:2: a DOCTYPE is not allowed in an allocation file"
    assert only_error('<!DOCTYPE allocations>\n<allocations/>').endswith("DOCTYPE is not allowed in an allocation file")


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path):
    big = tmp_path / "big.xml"
    padding = "<!-- " + "x" * 1000 + " -->\n"
    big.write_text("<allocations>\n" + padding * (MAX_FILE_BYTES // len(padding) + 1) + "</allocations>\n")
    with pytest.raises(ConfigErrors) as info:
        load_allocations(big)
    (err,) = info.value.errors
    assert str(err).startswith(f"{big}: the file is ") and f"at most {MAX_FILE_BYTES:,}" in str(err)


def test_a_missing_file_is_reported_as_missing_without_a_line(tmp_path):
    with pytest.raises(ConfigErrors) as info:
        load_allocations(tmp_path / "nope.xml")
    assert str(info.value.errors[0]) == f"{tmp_path / 'nope.xml'}: cannot read allocation file: No such file or directory"


def test_a_value_with_newlines_cannot_forge_a_second_error_line():
    text = only_error(with_weight("x\nt.xml:1: forged\tend"))
    assert text.startswith("t.xml:3: weight") and "x\\nt.xml:1: forged\\tend" in text


def test_the_message_escapes_control_characters_from_any_source():
    from slotwise.config import ConfigError

    err = ConfigError("a\nb.xml", 2, "bad \x1b[31m value\r\nnext: " + "v" * 1000)
    text = str(err)
    assert text.startswith("a\\nb.xml:2: bad \\x1b[31m value\\r\\nnext: ") and len(text) < 450


def test_an_xml_syntax_error_is_one_line():
    text = only_error("<allocations>\n  <queue name='a\n    b'>\n</allocations>\n")
    assert text.startswith("t.xml:") and "XML syntax error" in text


def test_validate_and_shares_print_one_line_per_error_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text(with_max_apps("9" * 4301))
    for args in (["validate", str(bad)],
                 ["shares", "--allocations", str(bad), "--capacity", "10", "--demand", "a=5"]):
        r = subprocess.run([sys.executable, "-m", "slotwise.cli", *args], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "Traceback" not in r.stderr, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{bad}:3: maxRunningApps"), lines
        assert r.stdout == (f"{bad}: invalid, 1 error(s)\n" if args[0] == "validate" else "")  # the verdict


def test_shares_json_never_prints_infinity(tmp_path):
    f = tmp_path / "a.xml"
    f.write_text(with_weight("1e15"))
    r = subprocess.run([sys.executable, "-m", "slotwise.cli", "shares", "--allocations", str(f), "--capacity", "10",
                        "--demand", "a=5", "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "Infinity" not in r.stdout and "NaN" not in r.stdout
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def test_hot_reload_reports_a_hostile_file_and_keeps_the_last_good_one(tmp_path):
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(GOOD)
    configs, errors = [], []
    _, status = load_with_status(str(path))
    w = ConfigWatcher(str(path), lambda cfg, text: configs.append(cfg), status,
                      on_error=errors.append, debounce=0.05)
    w.start()
    try:
        path.write_text(with_max_apps("9" * 4301))
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            time.sleep(0.05)
        assert errors and status.errors and status.errors[0].startswith(f"{path}:3: maxRunningApps")
        assert configs == [] and status.text == GOOD
    finally:
        w.stop()
