"""The shim's side of the protocol in the simulator: one stream of
messages to one PolicyCore, with the deltas buffered between calls as the
Java shim buffers them (``Deltas``)."""

from __future__ import annotations

from .. import protocol as wire
from ..clock import ManualClock
from ..core import PolicyCore
from ..engine.decisions import Assignment


class Feed:
    """One stream of protocol messages to one PolicyCore, with the deltas
    buffered between calls as the shim buffers them."""

    def __init__(self, core: PolicyCore, kind: str, clock: ManualClock) -> None:
        self.core = core
        self.kind = kind
        self.clock = clock
        self.nodes: list = []  # wire.Node
        self.apps: dict[str, dict] = {}  # every job this stream knows: its App fields
        self.changed_apps: set[str] = set()
        self.launched: list = []  # wire.Container
        self.finished: list[str] = []
        self.apps_removed: list[str] = []
        self.nodes_removed: list[str] = []
        self.beats: dict[str, list] = {}  # node -> [wire.Beat], made once
        self.changed = True  # anything new since the last update call

    def _message(self, beats: list):
        apps = []
        if self.changed_apps:
            apps = [wire.App(**self.apps[a]) for a in sorted(self.changed_apps) if a in self.apps]
            self.changed_apps = set()
        msg = wire.Payload(now_ms=round(self.clock._now * 1000), nodes=self.nodes, apps=apps,
                           launched=self.launched, finished=self.finished, apps_removed=self.apps_removed,
                           nodes_removed=self.nodes_removed, beats=beats)
        if self.nodes or apps or self.launched or self.finished or self.apps_removed or self.nodes_removed:
            self.changed = True
            self.nodes, self.launched, self.finished, self.apps_removed, self.nodes_removed = [], [], [], [], []
        return msg

    def heartbeat(self, node_id: str) -> list[Assignment]:
        beats = self.beats.get(node_id)
        if beats is None:
            beats = self.beats[node_id] = [wire.Beat(node=node_id)]
        return self.core.handle_heartbeat(self._message(beats))

    def update(self):
        msg = self._message([])
        self.changed = False
        return self.core.handle_update(msg)

    def node_added(self, node) -> None:
        """As the shim's Deltas.nodeChanged: a node back before its removal
        was sent cancels the removal (its lost containers went as finished)."""
        if node.id in self.nodes_removed:
            self.nodes_removed.remove(node.id)
        self.nodes.append(node)

    def app_changed(self, app_id: str) -> dict:
        """The job's App fields, to change; it goes out with the next call."""
        self.changed_apps.add(app_id)
        return self.apps[app_id]

    def new_asks(self, i: int) -> bool:
        """Whether an app changed since the last call asks for its ``i``-th
        request (maps 0, reduces 1): news the engine has not heard."""
        apps = self.apps
        for a in self.changed_apps:
            reqs = apps[a]["requests"] if a in apps else ()
            if len(reqs) > i and reqs[i].count > 0:
                return True
        return False

    def has_deltas(self) -> bool:
        return bool(self.nodes or self.changed_apps or self.launched or self.finished or self.apps_removed
                    or self.nodes_removed)

    def may_skip(self, has_room: bool) -> bool:
        """A heartbeat the engine would answer with nothing and no change of
        state (StateViews.idle_heartbeat_is_noop); its deltas wait for the
        next call. Not one that carries containers that ended: a real
        NodeManager reports them on its next heartbeat, and the engine learns
        run times from when it sees them end (engine/durations.py)."""
        if self.finished:
            return False
        views = self.core.views
        if not views.idle_heartbeat_is_noop():
            return False
        return not has_room or (not self.changed_apps and not views.has_pending())
