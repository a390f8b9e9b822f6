"""The market knows no policy: no module of slotwise/market imports a policy
module, at its top or inside a function (the Dynamic Priority policy reads
the market; the market's accounts follow the file through
policies.dynamic_priority.follow_config), so the two import no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

MARKET = Path(__file__).resolve().parent.parent / "python" / "slotwise" / "market"


def test_the_market_imports_no_policy():
    found = []
    for path in sorted(MARKET.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and "policies" in (node.module or ""):
                found.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.Import) and any("policies" in a.name for a in node.names):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, found
