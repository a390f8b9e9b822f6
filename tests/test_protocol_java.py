"""The Java binding generator (python/slotwise/protocol/java.py), which Maven runs at build time."""

import copy
import json
import subprocess
import sys

import pytest

from slotwise.protocol import java

SCHEMA = json.loads(java.SCHEMA.read_text(encoding="utf-8"))


def test_every_object_definition_becomes_a_record_and_a_checker():
    text = java.Gen(copy.deepcopy(SCHEMA)).java()
    objects = [n for n, d in SCHEMA["$defs"].items() if d.get("type") == "object"]
    assert len(objects) >= 30
    for name in objects:
        assert f"public record {name}(" in text
        assert f"static void check{name}(JsonNode v, P at)" in text
    assert f"PROTOCOL = {SCHEMA['version']};" in text
    assert text == java.Gen(copy.deepcopy(SCHEMA)).java(), "the same schema makes the same file"


def test_a_keyword_the_generator_does_not_know_fails_the_build_rather_than_being_ignored():
    s = copy.deepcopy(SCHEMA)
    s["$defs"]["HeartbeatAnswer"]["properties"]["assign"]["uniqueItems"] = True
    with pytest.raises(ValueError, match=r"HeartbeatAnswer/properties/assign.*uniqueItems"):
        java.Gen(s)


def test_a_limit_in_the_schema_is_a_check_in_java():
    s = copy.deepcopy(SCHEMA)
    s["$defs"]["Preemption"]["properties"]["container"] = {"type": "string", "maxLength": 77}
    assert "string(x, a, 0, 77);" in java.Gen(s).java()


def test_the_generator_runs_on_the_standard_library_alone(tmp_path):
    """Maven runs it with the machine's python3, before any virtualenv exists."""
    out = subprocess.run([sys.executable, "-I", "-S", str(java.__file__), str(tmp_path)],
                         capture_output=True, text=True, check=True)
    assert out.stderr == ""
    assert (tmp_path / "org/slotwise/shim/Messages.java").read_text().startswith("// Generated")
