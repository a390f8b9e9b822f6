"""queuePlacementPolicy: which pool an app lands in.  Rules are tried in
order; a rule that names a queue which does not exist (and may not be
created) or that the user may not submit to falls through to the next."""

from __future__ import annotations

from typing import Callable, Sequence

from .config.model import PlacementRule


class PlacementRejected(Exception):
    pass


def queue_path(name: str) -> str:
    return name if name == "root" or name.startswith("root.") else "root." + name


def _clean(name: str) -> str:
    """User and group names become queue names: dots would nest."""
    return name.strip().replace(".", "_dot_")


def place(
    rules: Sequence[PlacementRule],
    requested: str | None,
    user: str,
    groups: Sequence[str],
    exists: Callable[[str], bool],
    can_create: Callable[[str], bool],
    may_submit: Callable[[str, str, Sequence[str]], bool],
) -> str:
    """The full name of the leaf pool for an app, or PlacementRejected."""
    for rule in rules:
        if rule.name == "reject":
            raise PlacementRejected(f"rejected by the placement policy (rule at line {rule.line})")
        name = _candidate(rule, requested, user, groups, exists)
        if name is None:
            continue
        if exists(name) or ((rule.create or rule.name == "default") and can_create(name)):
            if may_submit(name, user, groups):
                return name
    raise PlacementRejected("no placement rule matched")


def _candidate(rule, requested, user, groups, exists) -> str | None:
    kind = rule.name
    if kind == "specified":
        if not requested or requested in ("default", "root.default"):
            return None
        return queue_path(requested)
    if kind == "user":
        return "root." + _clean(user)
    if kind == "primaryGroup":
        return "root." + _clean(groups[0]) if groups else None
    if kind == "secondaryGroupExistingQueue":
        for g in groups[1:]:
            q = "root." + _clean(g)
            if exists(q):
                return q
        return None
    if kind == "nestedUserQueue":
        parent = _candidate(rule.parent, requested, user, groups, exists) if rule.parent else None
        if parent is None or (not exists(parent) and not rule.parent.create):
            return None
        return parent + "." + _clean(user)
    if kind == "default":
        return queue_path(rule.queue) if rule.queue else "root.default"
    raise ValueError(f"unknown placement rule {kind!r}")


def acl_allows(acl: str | None, user: str, groups: Sequence[str]) -> bool | None:
    """Hadoop's ACL string "user1,user2 group1,group2"; "*" is everyone.
    None means the queue sets no ACL of its own."""
    if acl is None:
        return None
    acl = acl.strip("\n")
    if acl.strip() == "*":
        return True
    users_part, _, groups_part = acl.partition(" ")
    users = {u.strip() for u in users_part.split(",") if u.strip()}
    grps = {g.strip() for g in groups_part.split(",") if g.strip()}
    return user in users or any(g in grps for g in groups)
