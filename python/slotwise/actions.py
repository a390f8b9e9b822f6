"""An operator's actions on the engine when no master carries them out
(with one, the RM's own move reaches the door's ``move``, and a priority
comes in the next payload): move an app, set its priority. Recorded as
inputs, so a replay does what the live run did."""

from __future__ import annotations

from . import protocol as wire


class AdminActions:
    """Actions on one door's engine, under its lock and on its call clock."""

    def __init__(self, door) -> None:
        self._door = door

    def target_problem(self, queue: str) -> str | None:
        """Why no app may be moved to ``queue`` now (YARN's rule, MRv1's too), or None."""
        door = self._door
        with door._lock:
            return door._engine.move_target_problem(queue)

    def move(self, app_id: str, queue: str) -> str:
        """Move an app; the queue it is in now. Raises KeyError/ValueError."""
        door = self._door
        with door._lock, door._clock:
            if app_id not in door._engine.apps:
                raise KeyError(app_id)
            door.recorder.call("move", wire.MoveRequest(app=app_id, queue=queue))
            target = door._engine.move_app(app_id, queue, may_create=False)
            door.log.write("move", app=app_id, queue=target, by="admin")
            return target

    def priority(self, app_id: str, priority: int) -> None:
        """Set an app's priority (its weight in its queue is 2^priority). Raises KeyError."""
        door = self._door
        with door._lock, door._clock:
            if app_id not in door._engine.apps:
                raise KeyError(app_id)
            door.recorder.action("priority", {"app": app_id, "priority": int(priority)})
            door._engine.set_app_priority(app_id, int(priority))
            door.log.write("priority", app=app_id, priority=int(priority), by="admin")
