"""Files that say what they hold: no module of the package over 700 lines,
no class over 30 methods or 500 lines, and the Engine itself under 450
lines (issue 39)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "slotwise"
def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path


def test_no_module_over_700_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in modules() if (n := p.read_text().count("\n")) > 700}
    assert not long, long


def test_no_class_over_30_methods_or_500_lines():
    big = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                lines = node.end_lineno - node.lineno + 1
                if methods > 30 or lines > 500:
                    big[f"{path.relative_to(PACKAGE)}:{node.name}"] = (methods, lines)
    assert not big, big


def test_the_engine_keeps_registries_events_and_the_update_pass_in_under_450_lines():
    n = (PACKAGE / "engine" / "engine.py").read_text().count("\n")
    assert n < 450, n
