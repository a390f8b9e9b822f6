"""The scheduling engine: events in, decisions out; pure (no I/O, no
threads, time only from the injected clock).

Its parts, each about one object of the tree:
  engine.py      the Engine: registries of nodes, apps and containers, the
                 apps' events, the heartbeat (offer, commit), the update pass
  events.py      the events about nodes and containers (the Engine's base)
  fork.py        the state copied into an independent engine
  tree.py        the queue tree: building it from the file, dynamic queues,
                 placement and move targets
  queue.py       a queue (an MRv1 pool): its settings, usage and shares; the
                 walk that offers a node to its children and apps
  app.py         an app (an MRv1 job or a YARN application): its asks (one
                 priority's each, and where a container of it may run),
                 usage, delay-scheduling wait and the delay rule (the
                 locality levels), and which ask takes an offered node
  node.py        nodes and containers
  limits.py      running-app limits (maxRunningApps), a unit of their own
  preemption.py  starvation, victims, and capacity held for starved queues
  decisions.py   what the engine answers: assignments and preemptions
  describe.py    the state as plain rows for the read side
"""

from .app import ANY, LEVELS, LOCALITY_NAMES, NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, REFUSAL_HOLD, App, Request
from .decisions import Assignment, Preemption
from .node import Container, Node
from .engine import MAX_ASSIGN_PER_HEARTBEAT, RECOVERY_QUEUE, Engine, PlacementRejected
from .queue import Queue

__all__ = ["ANY", "App", "Assignment", "Container", "Engine", "LEVELS", "LOCALITY_NAMES",
           "MAX_ASSIGN_PER_HEARTBEAT", "NODE_LOCAL", "Node", "OFF_SWITCH", "PlacementRejected",
           "Queue", "Preemption", "RACK_LOCAL", "RECOVERY_QUEUE", "REFUSAL_HOLD", "Request"]
