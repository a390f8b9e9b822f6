"""docs/admin.md's REST API table: one table, every route of the OpenAPI
document in it, no row stranded below a later section's text."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from webtools import web  # noqa: F401 (the fixture)

DOC = Path(__file__).resolve().parent.parent / "docs" / "admin.md"


def rest_api_section() -> list[str]:
    text = DOC.read_text()
    start = text.index("\n## REST API\n")
    end = text.index("\n## ", start + 1)
    return text[start:end].splitlines()


def test_every_route_is_a_row_of_one_table_with_none_stranded(web):
    lines = rest_api_section()
    head = lines.index("| call | what |")
    table = []
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        table.append(line)
    rows = [(i, line) for i, line in enumerate(lines) if re.match(r"\| `(GET|POST) /", line)]
    # A row whose line above is not part of a table was cut off from it (the
    # Explain section was once inserted mid-table, leaving /metrics below it).
    stranded = [line for i, line in rows if not lines[i - 1].startswith("|")]
    assert stranded == []
    documented = {m.group(1) for line in table for m in [re.match(r"\| `(?:GET|POST) (\S+?)`", line)] if m}
    spec = httpx.get(f"{web.url}/openapi.json").json()["paths"]
    routes = {p.replace("{app_id}", "{id}") for p in spec} - {"/api/v1/dp"}  # docs/dynamic-priority.md's
    assert routes - documented == set()
    assert "/api/v1/dp" in (DOC.parent / "dynamic-priority.md").read_text()
