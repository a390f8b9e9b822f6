"""The docs that follow one heartbeat file by file (docs/shim.md,
docs/mrv1.md, docs/engine.md) name only files and functions that exist:
a rename or a move that leaves them behind fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = ("docs/shim.md", "docs/mrv1.md", "docs/engine.md")
TOKEN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w./-]+\.(py|java)$")
SCHEMA = (REPO / "python" / "slotwise" / "protocol" / "schema.json").read_text()
NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


def heartbeat_section(doc: str) -> str:
    text = (REPO / doc).read_text()
    m = re.search(r"^## One (heartbeat|assignTasks).*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"{doc} has no '## One heartbeat' (or, on MRv1, '## One assignTasks') section"
    return m.group(2)


def named(section: str) -> tuple[list[str], list[str]]:
    """The files and the dotted names the section cites, in order."""
    paths, names = [], []
    for token in TOKEN.findall(section):
        token = token.strip()
        if PATH.match(token):
            paths.append(token)
        elif NAME.match(token) and not token.startswith(("slotwise.scheduling", "yarn.", "mapred.")):
            names.append(token)
    return paths, names


def python_has(path: str, dotted: str) -> bool:
    """``dotted`` is in the module (``module.name`` too, by its file's stem)."""
    module = importlib.import_module(path.removeprefix("python/").removesuffix(".py").replace("/", "."))
    if dotted.split(".")[0] == Path(path).stem:
        dotted = dotted.split(".", 1)[1]
    obj = module
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def java_has(text: str, dotted: str) -> bool:
    """Every part is a class, a method or a field of the file."""
    return all(re.search(rf"\b(class|interface|record|enum)\s+{part}\b|\b{part}\s*\(|\b{part}\s*[=;]", text)
               for part in dotted.split("."))


@pytest.mark.parametrize("doc", DOCS)
def test_every_file_and_function_a_heartbeat_doc_names_exists(doc):
    paths, names = named(heartbeat_section(doc))
    assert paths, f"{doc} names no file"
    missing = [p for p in paths if not (REPO / p).is_file()]
    assert not missing, f"{doc} names files that do not exist: {missing}"
    python = [p for p in paths if p.endswith(".py")]
    java = "\n".join((REPO / p).read_text() for p in paths if p.endswith(".java"))
    unknown = []
    for dotted in names:
        head = dotted.split(".")[0]
        if head in ("python", "docs", "tests"):
            continue
        if head == "Messages":  # generated from the schema at build time (protocol/java.py)
            if dotted.split(".")[1] in SCHEMA:
                continue
        if any(python_has(p, dotted) for p in python) or (java and java_has(java, dotted)):
            continue
        unknown.append(dotted)
    assert not unknown, f"{doc} names functions no file it cites has: {unknown}"


def test_the_check_catches_a_name_that_does_not_exist():
    paths, names = named("1. `python/slotwise/engine/engine.py` `Engine.heartbeet`")
    assert paths == ["python/slotwise/engine/engine.py"] and not python_has(paths[0], names[0])
    assert python_has(paths[0], "Engine.heartbeat")
