"""The queue tree: which queues exist, where a new app goes and where an
app may be moved. Built from the allocation file; queues the placement
rules make come and go with their apps (as YARN's dynamic queues)."""

from __future__ import annotations

import bisect
from typing import Sequence

from ..config.model import AllocationConfig
from ..placement import PlacementRejected, may_submit, place, queue_path, valid_queue_name
from ..policies import get_policy
from ..resources import Resource
from .queue import Queue


def by_name(queue: Queue) -> str:
    return queue.name


class QueueTree:
    """The queues by full name, the root, and the rules about names: who
    may hold apps, what may be created, what the placement policy says."""

    def __init__(self, now: float) -> None:
        self.queues: dict[str, Queue] = {}
        self.root = Queue("root", None, now)
        self.config: AllocationConfig | None = None
        self.ctx = None  # the engine's PolicyContext, for policies that veto a placement

    def __getstate__(self):
        """The queues' links go by name (``Queue.__getstate__``); tied again here."""
        return {"queues": self.queues, "root": self.root.name, "config": self.config, "ctx": self.ctx}

    def __setstate__(self, state) -> None:
        self.queues = state["queues"]
        self.config = state["config"]
        self.ctx = state["ctx"]
        for queue in self.queues.values():
            if isinstance(queue.parent, str):
                queue.parent = self.queues[queue.parent]
            queue.children = [self.queues[c] if isinstance(c, str) else c for c in queue.children]
        self.root = self.queues[state["root"]]

    # -------------------------------------------------------------- the file
    def conflicts(self, config: AllocationConfig) -> list[str]:
        """Why ``config`` cannot replace the running one: a queue holding apps
        would become a parent (its apps would never be offered a container
        again).  FILE:LINE: message, like a parse error."""
        out = []
        for qc in config.root.walk():
            queue = self.queues.get(qc.name)
            if queue is not None and queue.apps and (qc.children or qc.is_parent):
                out.append(f"{config.source}:{qc.line}: {qc.name} holds {len(queue.apps)} running app(s) "
                           "and cannot become a parent queue; move or finish them first")
        return out

    def shape(self) -> dict:
        """Each queue (the object) and its parent's name: a reload that keeps
        it keeps the counts each queue holds of the apps beneath it."""
        return {name: (q, q.parent and q.parent.name) for name, q in self.queues.items()}

    def rebuild(self, config: AllocationConfig, cluster: Resource, rule: str, root_policy: str | None,
                now: float) -> None:
        """The tree of ``config``. Queues keep their runtime state by name;
        queues that vanished from the file but still hold apps stay on as
        dynamic queues, so a reload never loses a running app."""
        self.config = config
        old = self.queues
        self.queues = {}
        # What a parent's policy set on its children (on_update), kept below.
        kept = {name: (q.parent.name, type(q.parent.policy), {k: getattr(q, k) for k in q.parent.policy.sets_children})
                for name, q in old.items() if q.parent is not None and q.parent.policy.sets_children}

        def build(qc, parent):
            queue = old.get(qc.name) or Queue(qc.name, parent, now)
            queue.parent = parent
            queue.children = []
            if parent is not None:
                parent.children.append(queue)
            self.queues[qc.name] = queue
            queue.apply_config(qc, config, cluster, rule)
            for child in qc.children:
                build(child, queue)

        build(config.root, None)
        for queue in self.queues.values():
            queue.children.sort(key=by_name)
            queue.orders = {}
            queue.asking_cache = {}
            queue.forget_order()
        self.root = self.queues["root"]
        if root_policy:
            self.root.policy = get_policy(root_policy)
        for name, (parent, policy, values) in kept.items():
            q = self.queues.get(name)
            if q is not None and q.parent is not None and q.parent.name == parent and type(q.parent.policy) is policy:
                for k, v in values.items():
                    setattr(q, k, v)
        for name, queue in old.items():
            if name not in self.queues and queue.apps:
                leaf = self.ensure(name, cluster, rule, now, force=True)
                leaf.apps = queue.apps  # already in (start_time, app_id) order
                for app in leaf.apps:
                    app.queue = leaf

    # ------------------------------------------------------------- the names
    def can_create(self, name: str) -> bool:
        parts = name.split(".")
        if parts[0] != "root" or not valid_queue_name(name):
            return False
        for i in range(len(parts) - 1, 0, -1):
            anc = self.queues.get(".".join(parts[:i]))
            if anc is not None:
                return anc is self.root or anc.is_parent
        return False

    def can_hold(self, name: str) -> str | None:
        """Why an app cannot sit in queue ``name`` (a full name), or None if it
        can: root and parent queues hold no apps, and a queue holding apps
        never becomes a parent, whoever asks."""
        parts = name.split(".")
        if parts[0] != "root" or not valid_queue_name(name):
            return f"{name!r} is not a valid queue name"
        if name == "root":
            return "root is the parent of every queue; apps go in leaf queues"
        queue = self.queues.get(name)
        if queue is not None:
            return f"{name} is a parent queue; apps go in leaf queues" if not queue.is_leaf else None
        for i in range(len(parts) - 1, 0, -1):
            anc = self.queues.get(".".join(parts[:i]))
            if anc is not None:
                if anc.apps:
                    return f"{anc.name} holds apps and cannot become the parent of {name}"
                return None
        return None

    def ensure(self, name: str, cluster: Resource, rule: str, now: float, force: bool = False) -> Queue:
        """The queue of this name, made (with missing parents) if the rules
        allow it, or whatever they say when ``force``; never under a queue
        that holds apps."""
        queue = self.queues.get(name)
        if queue is not None:
            return queue
        if not force and not self.can_create(name):
            raise PlacementRejected(f"cannot create queue {name}")
        parent_name = name.rsplit(".", 1)[0]
        parent = self.ensure(parent_name, cluster, rule, now, force=True)
        if parent.apps:
            raise PlacementRejected(f"{parent_name} holds apps and cannot become the parent of {name}")
        queue = Queue(name, parent, now)
        bisect.insort(parent.children, queue, key=by_name)
        parent.forget_order()
        parent.is_parent = True
        self.queues[name] = queue
        queue.apply_config(None, self.config, cluster, rule)
        return queue

    def prune(self, queue: Queue | None) -> None:
        """Forget a dynamic queue once its last app has left, and each empty
        dynamic queue above it, as YARN's FairScheduler removes empty dynamic
        queues: a queue per user must not outlive the user's apps (10,000
        users would leave 10,000 queues in every table and every pass)."""
        while (queue is not None and queue.dynamic and queue.parent is not None and not queue.apps
               and not queue.children and queue.name in self.queues):
            parent = queue.parent
            parent.children.remove(queue)
            parent.forget_order()
            del self.queues[queue.name]
            queue = parent

    # ------------------------------------------------------------- placement
    def place(self, user: str, queue: str | None, groups: Sequence[str], recovering: bool,
              trace: list | None) -> str:
        """Where the placement policy puts a new app (raises
        PlacementRejected). When ``recovering`` an app the RM already holds
        in a queue no app can be in, rules that name such a queue (or one
        its ACLs close to the user) fall through to the next."""
        queues = self.queues
        name = place(self.config.placement_rules, queue, user, tuple(groups),
                     configured=lambda n: n in queues and not queues[n].dynamic,
                     leaf=lambda n: n in queues and queues[n].is_leaf, problem=self._placement_problem,
                     may_submit=self._may_submit, passing=recovering, trace=trace)
        if not recovering:
            why = self._vetoed(name, user)
            if why:
                if trace:
                    trace[-1].update(outcome="rejected", why=why)
                raise PlacementRejected(why)
        return name

    def _may_submit(self, name: str, user: str, groups: Sequence[str]) -> bool:
        def acls(n: str) -> tuple[str | None, str | None]:
            queue = self.queues.get(n)
            return (queue.acl_submit, queue.acl_administer) if queue is not None else (None, None)

        return may_submit(name, user, groups, acls)

    def _vetoed(self, name: str, user: str) -> str | None:
        """A policy above queue ``name`` refusing ``user`` there (Dynamic
        Priority: only the queue's holders may spend its budget)."""
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            above = self.queues.get(".".join(parts[:i]))
            if above is not None:
                why = above.policy.admits(above, name, user, self.ctx)
                if why:
                    return why
        return None

    def _placement_problem(self, name: str) -> str | None:
        """Why a new app cannot go to queue ``name``: as can_hold, and a new
        queue only under root or a parent queue (YARN never turns a leaf into
        a parent for an app)."""
        why = self.can_hold(name)
        if why is None and name not in self.queues and not self.can_create(name):
            return f"no queue {name}, and it cannot be made under a leaf queue"
        return why

    def target(self, app, queue: str, force: bool, may_create: bool, cluster: Resource, rule: str, now: float,
               limits) -> Queue:
        """The leaf queue ``app`` moves to (made if it may be), or ValueError
        why not: ``move_problem``, and never past a maxRunningApps above the
        target that the source does not share, unless ``force`` (the driver
        has already moved it)."""
        name = queue_path(queue)
        problem = None if force else self.move_problem(app, name, may_create)
        if problem:
            raise ValueError(problem)
        try:
            target = self.ensure(name, cluster, rule, now, force=force)
        except PlacementRejected as e:
            raise ValueError(str(e)) from None
        if not target.is_leaf:
            raise ValueError(f"{name} is a parent queue; apps go in leaf queues")
        if target is not app.queue and app.runnable and not force:
            over = limits.over_on_move(app, target)
            if over is not None:
                self.prune(target)  # made for this move only
                raise ValueError(f"moving {app.app_id} to {name} would exceed maxRunningApps of {over.name}")
        return target

    def move_problem(self, app, queue: str, may_create: bool = False) -> str | None:
        """Why an app cannot be moved to ``queue``, or None. As YARN: the
        target is an existing leaf queue; a new one only where the placement
        policy's specified rule may create queues (or ``may_create``: a move
        Python itself ordered to where its placement put the app); and
        never past a maxRunningApps above the target that the source does
        not share (``app``: the app, or None to ask of any)."""
        name = queue_path(queue)
        target = self.queues.get(name)
        if target is None:
            creating = may_create or any(r.name == "specified" and r.create for r in self.config.placement_rules)
            if not (creating and self.can_create(name)):
                return (f"no queue {name}: moves go to an existing leaf queue (or a new one only where the "
                        f"placement policy's specified rule may create it)")
            return None
        if not target.is_leaf:
            return f"{name} is a parent queue; apps go in leaf queues"
        return None
