"""Files that say what they hold: no module of the package over 700 lines,
no class over 30 methods or 500 lines (issue 39). engine/ is measured by its
own rewrite and left out here until then."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "slotwise"
LEFT_OUT = ("engine",)


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] not in LEFT_OUT:
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
