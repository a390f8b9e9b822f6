"""The events about nodes and containers, part of the Engine (its base
class: the registries they change, ``nodes``, ``containers``, ``apps`` and
the queues, are the Engine's own). A node joins, changes size or is lost; a
container the driver started, one that ended, one the driver refused or
confirmed under its real id."""

from __future__ import annotations

from ..resources import Resource
from .app import App
from .node import Container, Node


class NodeEvents:
    # ------------------------------------------------------------------ nodes
    def add_node(self, node_id: str, host: str, rack: str, capacity: Resource) -> None:
        if node_id in self.nodes:
            self.update_node(node_id, capacity)
            return
        self.nodes[node_id] = Node(node_id, host, rack, capacity)
        self._set_cluster(self.cluster + capacity)
        self._node_changed(node_id)

    def update_node(self, node_id: str, capacity: Resource) -> None:
        node = self.nodes[node_id]
        self._set_cluster(self.cluster - node.capacity + capacity)
        node.capacity = capacity
        self._node_changed(node_id)

    def remove_node(self, node_id: str) -> list[str]:
        """Forget a node; its containers are gone with it (ids returned)."""
        node = self.nodes.pop(node_id, None)
        if node is None:
            return []
        self._node_changed(node_id)
        lost = list(node.containers)
        for cid in lost:
            self.container_finished(cid)
        self._set_cluster(self.cluster - node.capacity)
        return lost

    def _set_cluster(self, total: Resource) -> None:
        self.cluster = total
        for p in self.queues.values():  # percentages in maxResources follow the cluster
            if p.max_share_spec is not None:
                p.resolve_max_share(total)

    def _node_changed(self, node_id: str) -> None:
        """A node added, resized or removed: refusals on it may no longer hold."""
        for app_id in list(self._refused_apps):
            app = self.apps.get(app_id)
            if app is not None:
                app.touch()
                app.refused = {r for r in app.refused if r[0] != node_id}
            if app is None or not app.refused:
                self._refused_apps.discard(app_id)

    # ------------------------------------------------------------- containers
    def container_launched(self, container_id: str, app_id: str, node_id: str, resource: Resource,
                           is_am: bool = False, priority: int = 0,
                           launch_time: float | None = None) -> None:
        """A container the driver started itself (a FIFO fallback, a resync)."""
        if container_id in self.containers or app_id not in self.apps or node_id not in self.nodes:
            return
        now = self.clock.now() if launch_time is None else launch_time
        self._launch(Container(container_id, app_id, node_id, resource, now, is_am, priority))

    def _launch(self, c: Container) -> None:
        app = self.apps[c.app_id]
        self._touch_container(c.container_id)
        self.containers[c.container_id] = c
        self.nodes[c.node_id].add(c)
        app.add(c)
        if c.is_am and not app.has_am:
            app.has_am = True
            self._without_am -= 1
        app.queue.charge(c.resource, c.is_am, 1)

    def _touch_container(self, container_id: str) -> None:
        """A container started, ended or changed: the next fork copies it
        again (``fork.Kept``)."""
        k = self._kept
        if k is not None:
            k.containers_changed.add(container_id)

    def container_finished(self, container_id: str) -> None:
        c = self.containers.pop(container_id, None)
        if c is None:
            return
        self._touch_container(container_id)
        node = self.nodes.get(c.node_id)
        if node is not None:
            node.remove(c)
            if c.taken_for is not None:
                self.preemption.released(c, node, self.clock.now())
        app = self.apps.get(c.app_id)
        if app is None:
            return
        if self.durations is not None:
            self.durations.ended(app, c, self.clock.now())
        app.remove(c)
        app.queue.charge(c.resource, c.is_am, -1)
        if c.is_am:
            self._sync_has_am(app)

    def container_refused(self, engine_id: str, remember: bool) -> Container | None:
        """The driver did not carry out the assignment ``engine_id``: its
        container goes and its ask comes back (the driver resends the app).
        With ``remember`` (the refusal stays true until something changes)
        the app is not offered that node at that level again until its asks
        or the node change. Returns the container, or None if unknown."""
        c = self.containers.get(engine_id)
        if c is None:
            return None
        self.container_finished(engine_id)
        app = self.apps.get(c.app_id)
        if remember and app is not None and c.level is not None:
            app.refuse(c.node_id, c.level, self.clock.now())
            self._refused_apps.add(c.app_id)
        return c

    def confirm_container(self, engine_id: str, container_id: str, is_am: bool) -> None:
        """The driver started the engine's container ``engine_id`` as
        ``container_id``; whether it is the app's AM is the driver's word
        (an earlier AM assignment may have been refused)."""
        c = self.containers.get(engine_id)
        if c is None:
            return
        self.rename_container(engine_id, container_id)
        if c.is_am != is_am:
            app = self.apps[c.app_id]
            app.queue.charge_am(c.resource, 1 if is_am else -1)
            self._touch_container(c.container_id)
            c.is_am = is_am
            self._sync_has_am(app)

    def _sync_has_am(self, app: App) -> None:
        has = app.unmanaged or any(c.is_am for c in app.containers.values())
        if has != app.has_am:
            app.touch()
            app.has_am = has
            self._without_am += -1 if has else 1

    def rename_container(self, old_id: str, new_id: str) -> None:
        """The driver's real id for a container the engine placed."""
        c = self.containers.pop(old_id, None) if old_id != new_id else None
        if c is None:
            return
        self._touch_container(old_id)
        self._touch_container(new_id)
        c.container_id = new_id
        self.containers[new_id] = c
        app = self.apps[c.app_id]
        app.touch()
        app.containers[new_id] = app.containers.pop(old_id)
        self.nodes[c.node_id].rename(old_id, new_id)
