"""A server's background task done every few seconds on a thread of its
own (the console's history, the forecasts), started and stopped with the
web app's lifespan; one that fails is logged and done again next time."""

from __future__ import annotations

import contextlib
import logging
import threading

log = logging.getLogger(__name__)


class Periodic:
    """Calls ``tick`` every ``every`` seconds (``pause`` may ask for longer)
    on a daemon thread named ``name`` once ``start`` runs; ``thread=False``
    for a test that calls ``tick`` itself."""

    name = "slotwise-periodic"
    what = "a periodic task"

    def __init__(self, every: float, thread: bool = True) -> None:
        self.every = every
        self._own_thread = thread
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        raise NotImplementedError

    def pause(self) -> float:
        """Seconds to the next tick."""
        return self.every

    def _run(self) -> None:
        while not self._stop.wait(self.pause()):
            try:
                self.tick()
            except Exception:  # one lost is no reason to stop doing the rest
                log.exception("%s failed", self.what)

    def start(self):
        if self._thread is None and self._own_thread:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app):
        """The web app's lifespan: ticks while the server serves."""
        self.start()
        try:
            yield
        finally:
            self.stop()
