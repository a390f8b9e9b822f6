"""Slotwise: a Hadoop YARN scheduler whose policy runs in Python.

The engine (``slotwise.engine``) is pure: events in, decisions out, time from
an injected clock.  The Py4J bridge and the simulator both drive it.
"""

__version__ = "0.1.0"
