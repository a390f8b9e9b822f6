"""Scheduling policies: small plugins behind one interface.

A queue's ``schedulingPolicy`` names one.  Built-ins register here; others
come from the ``slotwise.policies`` entry-point group, so Dynamic Priority and
Hopper plug in without touching the engine.
"""

from .base import PolicyContext, SchedulingPolicy, get_policy, known_policy_names, register_policy

__all__ = ["PolicyContext", "SchedulingPolicy", "get_policy", "known_policy_names", "register_policy"]
