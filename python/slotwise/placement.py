"""queuePlacementPolicy: which queue an app lands in, decided as YARN 3.5's
FairScheduler decides it (its PlacementManager, then addApplication).

Rules are tried in order.  A rule that names a queue it may not create and
that the file does not declare yields nothing, and the next rule is tried.
The first queue a rule yields is final: if no app can sit there (root, a
parent, a queue under a leaf, a bad name) or its ACLs shut the user out, the
app is rejected, not passed on to the next rule."""

from __future__ import annotations

from typing import Callable, Sequence

from .config.model import MAX_QUEUE_NAME, PlacementRule


class PlacementRejected(Exception):
    pass


def queue_path(name: str) -> str:
    return name if name == "root" or name.startswith("root.") else "root." + name


def valid_queue_name(name: str) -> bool:
    """Each dotted part non-empty and without surrounding whitespace (YARN
    cannot create any other queue), and the whole within the protocol's bound."""
    return len(name) <= MAX_QUEUE_NAME and all(part and part == part.strip() for part in name.split("."))


def _clean(name: str) -> str:
    """User and group names become queue names: dots would nest."""
    return name.strip().replace(".", "_dot_")


def place(
    rules: Sequence[PlacementRule],
    requested: str | None,
    user: str,
    groups: Sequence[str],
    *,
    configured: Callable[[str], bool],
    leaf: Callable[[str], bool],
    problem: Callable[[str], str | None],
    may_submit: Callable[[str, str, Sequence[str]], bool],
    passing: bool = False,
    trace: list | None = None,
) -> str:
    """The full name of the leaf queue for an app, or PlacementRejected.

    ``configured``: the file declares the queue (YARN's test for a rule that
    may not create it; queues made at runtime do not count).  ``leaf``: the
    queue exists now as a leaf (a nested rule's parent may not be one).
    ``problem``: why no app can sit in the queue, or None.  ``passing``: a
    rule that would reject (a queue with a problem, closed ACLs) falls
    through to the next instead (an app the RM already holds, being
    recovered: YARN skips placement failures then).  ``trace``, when given,
    receives one entry per rule tried (``rule_trace``'s), for an operator
    asking why the app went where it went."""
    note = trace.append if trace is not None else (lambda _entry: None)
    for rule in rules:
        if rule.name == "reject":
            note(rule_trace(rule, None, "rejected"))
            raise PlacementRejected(f"rejected by the placement policy (rule at line {rule.line})")
        try:
            name = _decide(rule, requested, user, groups, configured, leaf)
        except PlacementRejected as e:
            note(rule_trace(rule, None, "rejected", str(e)))
            if passing:
                continue
            raise
        if name is None:
            note(rule_trace(rule, None, "skipped", _why_skipped(rule, requested)))
            continue
        why = problem(name) if valid_queue_name(name) else f"{name!r} is not a valid queue name"
        if why is None and not may_submit(name, user, groups):
            why = f"{user} may not submit to {name} (its ACLs, or those of a queue above it)"
        if why is None:
            note(rule_trace(rule, name, "placed"))
            return name
        note(rule_trace(rule, name, "rejected", why))
        if not passing:
            raise PlacementRejected(why)
    raise PlacementRejected("no placement rule placed the app")


def rule_trace(rule: PlacementRule, queue: str | None, outcome: str, why: str | None = None) -> dict:
    """One rule's part in a placement: which rule (its name and line), the
    queue it named, and "placed", "skipped" (the next rule was tried) or
    "rejected", with why."""
    return {"rule": rule.name, "line": rule.line, "create": rule.create, "queue": queue, "outcome": outcome,
            "why": why}


def _why_skipped(rule: PlacementRule, requested: str | None) -> str:
    """Why a rule named no queue, in words an operator can act on."""
    not_made = 'is not a queue of the allocation file and this rule does not create it (create="false")'
    if rule.name == "specified":
        if not requested or requested == "default":
            return "the app asked for no queue"
        return f"{queue_path(requested)} {not_made}"
    if rule.name == "default":
        return f"{rule.queue or 'root.default'} {not_made}"
    if rule.name == "secondaryGroupExistingQueue":
        return "no queue is named after any of the user's groups"
    if rule.parent is not None:
        return "its nested rule named no parent queue (or named a leaf queue)"
    return f"the queue it names {not_made}"


def _decide(rule, requested, user, groups, configured, leaf) -> str | None:
    """The queue one rule yields, or None to go on: YARN's FSPlacementRule
    subclasses, which may also reject outright (a bad queue name asked for,
    a user without groups under a primaryGroup rule)."""
    kind = rule.name
    if kind == "specified":
        if not requested or requested == "default":  # "default" is what the RM sends for no queue
            return None
        if requested != requested.strip() or requested.startswith(".") or requested.endswith("."):
            raise PlacementRejected(f"illegal queue name {requested!r} asked for")
        return _if_allowed(rule, queue_path(requested), configured)
    if kind == "default":
        return _if_allowed(rule, rule.queue or "root.default", configured)
    if kind == "primaryGroup" and not groups:
        raise PlacementRejected(f"no groups for user {user} (primaryGroup rule at line {rule.line})")
    parent = None
    if rule.parent is not None:
        parent = _decide(rule.parent, requested, user, groups, configured, leaf)
        if parent is None or leaf(parent):
            return None
    if kind == "secondaryGroupExistingQueue":
        # YARN 3.5 tries every group in order, the primary group too.
        for group in groups:
            name = _child(parent, group)
            if configured(name):
                return name
        return None
    if kind in ("user", "nestedUserQueue"):
        return _if_allowed(rule, _child(parent, user), configured)
    if kind == "primaryGroup":
        return _if_allowed(rule, _child(parent, groups[0]), configured)
    raise ValueError(f"unknown placement rule {kind!r}")


def _child(parent: str | None, name: str) -> str:
    return queue_path(_clean(name)) if parent is None else parent + "." + _clean(name)


def _if_allowed(rule: PlacementRule, name: str, configured) -> str | None:
    return name if rule.create or configured(name) else None


def may_submit(name: str, user: str, groups: Sequence[str],
               acls: Callable[[str], tuple[str | None, str | None]]) -> bool:
    """Hadoop's rule: the submit or the administer ACL of the queue or of any
    queue above it lets the user in.  ``acls(name)`` is (submit, administer),
    None where unset: nobody, except at root, where unset means everyone."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        for acl in acls(".".join(parts[:i])):
            if acl is None and i == 1 or acl is not None and acl_allows(acl, user, groups):
                return True
    return False


def acl_allows(acl: str, user: str, groups: Sequence[str]) -> bool:
    """Hadoop's ACL string "user1,user2 group1,group2": the first space parts
    users from groups; "*" on either side is everyone."""
    users_part, _, groups_part = acl.strip("\n").partition(" ")
    if "*" in (users_part.strip(), groups_part.strip()):
        return True
    users = {u.strip() for u in users_part.split(",") if u.strip()}
    grps = {g.strip() for g in groups_part.split(",") if g.strip()}
    return user in users or any(g in grps for g in groups)
