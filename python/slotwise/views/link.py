"""The link to the master, read one way: the console's banner, the API's
queue rows and explain all ask ``link_state`` whether the master is there,
and ``gone`` whether nothing is preempted now."""

from __future__ import annotations

#: The link states in which the master is gone (lost, or this server no
#: longer registered): its FIFO decides and nothing is preempted.
GONE = ("lost", "dropped")


def link_state(link: dict | None) -> str | None:
    """The one reading of the link (SchedulerService.link_status's):
    standby (an HA standby's sidecar), lost, dropped (no longer registered),
    fallback, or None while deciding (or with no master to speak of)."""
    if not link:
        return None
    if link.get("ha_state") == "standby":
        return "standby"
    if link.get("seen") and not link.get("connected"):
        return "lost"
    if link.get("seen") and not link.get("registered"):
        return "dropped"
    return "fallback" if link.get("in_fallback") else None


def gone(link: dict | None) -> bool:
    """Whether the master is gone: nothing is preempted until it is back."""
    return link_state(link) in GONE


def master_name(link: dict | None) -> str:
    return (link or {}).get("master") or "ResourceManager"
