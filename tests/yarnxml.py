"""Helpers of the YARN allocation-file parser's tests: a body wrapped in
<allocations> on line 1, parsed, and its errors and warnings by line."""

from __future__ import annotations

from textwrap import dedent

import pytest

from slotwise.config import ConfigErrors, parse_allocations
from support import warnings_of


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
