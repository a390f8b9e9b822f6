"""Running-app limits, a unit of their own (as YARN's
MaxRunningAppsEnforcer): an app runs once its user and every queue above it
have room under maxRunningApps; until then it waits and demands nothing.
Waiting apps start in order of priority, then submit time."""

from __future__ import annotations


class MaxRunningApps:
    def __init__(self, config) -> None:
        self.config = config  # the engine sets the new one on a reload
        self.user_running: dict[str, int] = {}
        self.waiting = 0  # apps not yet runnable

    def count(self, app, sign: int) -> None:
        """A runnable app joins (+1) or leaves (-1) its user's count."""
        if not app.runnable:
            return
        n = self.user_running.get(app.user, 0) + sign
        if n:
            self.user_running[app.user] = n
        else:  # a user with nothing running is forgotten: 10,000 users must not stay
            self.user_running.pop(app.user, None)

    def may_run(self, app) -> bool:
        limit = self.config.user_max_apps(app.user)
        if limit is not None and self.user_running.get(app.user, 0) >= limit:
            return False
        return all(p.running_apps < p.max_running_apps for p in app.queue.ancestors())

    def over_on_move(self, app, target):
        """The queue above ``target`` (and not above the app's own queue)
        whose maxRunningApps moving the runnable ``app`` there would pass,
        or None."""
        mine = set(app.queue.ancestors())
        for p in target.ancestors():
            if p not in mine and p.running_apps + 1 > p.max_running_apps:
                return p
        return None

    def settle(self, apps):
        """The waiting apps that may run now, made runnable one by one and
        counted in their queues before the next is looked at."""
        waiting = sorted((a for a in apps if not a.runnable), key=lambda a: (-a.priority, a.start_time, a.app_id))
        for app in waiting:
            if not self.may_run(app):
                continue
            app.runnable = True
            app.changed()
            self.waiting -= 1
            self.user_running[app.user] = self.user_running.get(app.user, 0) + 1
            for p in app.queue.ancestors():
                p.running_apps += 1
            yield app
