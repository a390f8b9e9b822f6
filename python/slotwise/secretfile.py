"""Secrets on disk (the gateway token, the admin token): readable by their
owner only, or refused."""

from __future__ import annotations

import os
import stat


def read_secret(path: str, what: str) -> str:
    """The stripped content of ``path``; ValueError if group or others may
    read it, since whoever reads it controls the scheduler."""
    st = os.stat(path)
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"{path}: {what} file must be mode 0600, is {stat.filemode(st.st_mode)}")
    with open(path, encoding="utf-8") as f:
        return f.read().strip()
