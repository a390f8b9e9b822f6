"""The event log: one JSON object per line, like the Fair Scheduler's event
log, so operators can grep it and the simulator can replay it."""

from __future__ import annotations

import json
import threading
import time
from typing import IO


class EventLog:
    def __init__(self, path: str | None = None, stream: IO[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._own = path is not None
        #: The file, if one (a shadow process appends its records to it too).
        self.path = path
        self._out = open(path, "a", buffering=1, encoding="utf-8") if path else stream

    def write(self, event: str, **fields) -> None:
        if self._out is None:
            return
        record = {"ts": round(time.time(), 3), "event": event, **fields}
        line = json.dumps(record, separators=(",", ":"), default=str)
        with self._lock:
            self._out.write(line + "\n")

    def close(self) -> None:
        if self._own and self._out is not None:
            self._out.close()
        self._out = None


def read_events(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
