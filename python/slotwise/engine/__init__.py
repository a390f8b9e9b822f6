"""The scheduling engine: events in, decisions out; pure (no I/O, no
threads, time only from the injected clock).

Its parts, each about one object of the tree:
  partition.py   the Engine: registries of nodes, apps and queues, the
                 heartbeat walk from the root, the update pass, commit
  queue.py       a queue (an MRv1 pool): its settings, usage and shares
  app.py         an app (an MRv1 job or a YARN application): its asks, usage and delay-scheduling wait
  request.py     one priority's asks and where a container of it may run
  node.py        nodes and containers
  limits.py      running-app limits (maxRunningApps), a unit of their own
  preemption.py  starvation, victims, and capacity held for starved queues
  locality.py    the locality levels and the delay-scheduling rules
  decisions.py   what the engine answers: assignments and preemptions
"""

from .app import REFUSAL_HOLD, App
from .decisions import Assignment, Preemption
from .locality import ANY, LEVELS, LOCALITY_NAMES, NODE_LOCAL, OFF_SWITCH, RACK_LOCAL
from .node import Container, Node
from .partition import MAX_ASSIGN_PER_HEARTBEAT, RECOVERY_QUEUE, Engine, PlacementRejected
from .queue import Queue
from .request import Request

__all__ = ["ANY", "App", "Assignment", "Container", "Engine", "LEVELS", "LOCALITY_NAMES",
           "MAX_ASSIGN_PER_HEARTBEAT", "NODE_LOCAL", "Node", "OFF_SWITCH", "PlacementRejected",
           "Queue", "Preemption", "RACK_LOCAL", "RECOVERY_QUEUE", "REFUSAL_HOLD", "Request"]
