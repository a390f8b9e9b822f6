"""The YARN allocation file (fair-scheduler.xml), as Hadoop's FairScheduler
documents it.

Unlike Hadoop, which logs and skips what it does not know, every mistake here
is an error with its line, and all of them are reported at once.  The small
XML helpers (``Reporter``, ``scan``, ``parse_users``) serve the MRv1 parser too.
"""

from __future__ import annotations

from typing import Callable

from lxml import etree

from . import values as v
from .errors import ConfigError, ConfigErrors
from .model import AllocationConfig, PlacementRule, QueueConfig, UserConfig, default_placement_rules

# element -> (field of QueueConfig / AllocationConfig, or None to validate only; value parser)
Fields = dict[str, tuple[str | None, Callable[[str], object]]]

QUEUE_FIELDS: Fields = {
    "minResources": ("min_resources", v.min_resource),
    "maxResources": ("max_resources", v.max_resource),
    "maxChildResources": ("max_child_resources", v.max_resource),
    "maxContainerAllocation": (None, v.max_resource),
    "maxRunningApps": ("max_running_apps", v.non_negative_int),
    "maxAMShare": ("max_am_share", v.am_share),
    "weight": ("weight", v.non_negative_float),
    "schedulingPolicy": ("scheduling_policy", v.policy_name),
    "schedulingMode": ("scheduling_policy", v.policy_name),  # Hadoop's old alias
    "minSharePreemptionTimeout": ("min_share_preemption_timeout", v.seconds),
    "fairSharePreemptionTimeout": ("fair_share_preemption_timeout", v.seconds),
    "fairSharePreemptionThreshold": ("fair_share_preemption_threshold", v.fraction),
    "allowPreemptionFrom": ("allow_preemption_from", v.boolean),
    "aclSubmitApps": ("acl_submit_apps", v.acl),
    "aclAdministerApps": ("acl_administer_apps", v.acl),
    "aclAdministerReservations": (None, v.acl),
    "aclListReservations": (None, v.acl),
    "aclSubmitReservations": (None, v.acl),
}

# Deprecated top-level fairSharePreemptionTimeout: used only when the default is absent.
_LEGACY_FAIR_TIMEOUT = "legacy_fair_share_preemption_timeout"

TOP_FIELDS: Fields = {
    "userMaxAppsDefault": ("user_max_apps_default", v.non_negative_int),
    "queueMaxAppsDefault": ("queue_max_apps_default", v.non_negative_int),
    "queueMaxResourcesDefault": ("queue_max_resources_default", v.max_resource),
    "queueMaxAMShareDefault": ("queue_max_am_share_default", v.am_share),
    "defaultQueueSchedulingPolicy": ("default_queue_scheduling_policy", v.policy_name),
    "defaultQueueSchedulingMode": ("default_queue_scheduling_policy", v.policy_name),
    "defaultMinSharePreemptionTimeout": ("default_min_share_preemption_timeout", v.seconds),
    "defaultFairSharePreemptionTimeout": ("default_fair_share_preemption_timeout", v.seconds),
    "defaultFairSharePreemptionThreshold": ("default_fair_share_preemption_threshold", v.fraction),
    "fairSharePreemptionTimeout": (_LEGACY_FAIR_TIMEOUT, v.seconds),
    "reservation-agent": (None, v.trimmed),
    "reservation-policy": (None, v.trimmed),
    "reservation-planner": (None, v.trimmed),
}

USER_FIELDS: Fields = {"maxRunningApps": ("max_running_apps", v.non_negative_int)}

QUEUE_TAGS = ("queue", "pool")
RULE_NAMES = (
    "specified", "user", "primaryGroup", "secondaryGroupExistingQueue",
    "nestedUserQueue", "default", "reject",
)

# Elements that MRv1 files share with YARN ones; the rest are YARN's own.
SHARED_ELEMENTS = frozenset({
    "pool", "user", "weight", "schedulingMode", "minSharePreemptionTimeout",
    "fairSharePreemptionTimeout", "defaultMinSharePreemptionTimeout",
})
YARN_ONLY_ELEMENTS = frozenset(
    set(QUEUE_FIELDS) | set(TOP_FIELDS) | {"queue", "reservation", "queuePlacementPolicy", "rule"}
) - SHARED_ELEMENTS


class Reporter:
    """Collects errors so that one pass reports every mistake in the file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[ConfigError] = []

    def error(self, line: int | None, message: str) -> None:
        self.errors.append(ConfigError(self.source, line, message))

    def raise_if_any(self) -> None:
        if self.errors:  # in file order, whatever order the checks ran in
            raise ConfigErrors(sorted(self.errors, key=lambda e: e.line or 0))


Unknown = Callable[[etree._Element, str], str]


def unknown_element(el: etree._Element, where: str) -> str:
    return f"unknown element <{el.tag}> in {where}"


def elements(el: etree._Element):
    """Child elements only: comments, processing instructions and entities are skipped."""
    return (c for c in el if isinstance(c.tag, str))


def text_of(el: etree._Element, rep: Reporter) -> str | None:
    """An element's text, or None (reported) if it holds elements or entities."""
    for c in el:
        if isinstance(c.tag, str):
            rep.error(c.sourceline, f"<{el.tag}> must hold a value, not element <{c.tag}>")
            return None
        if c.tag is etree.Entity:
            rep.error(c.sourceline, f"entity {c.text} in <{el.tag}> is not expanded")
            return None
    return "".join(el.itertext())


def check_attributes(el: etree._Element, allowed: tuple[str, ...], where: str, rep: Reporter) -> None:
    for name in el.attrib:
        if name not in allowed:
            rep.error(el.sourceline, f'unknown attribute "{name}" on <{el.tag}> in {where}')


def scan(
    el: etree._Element,
    table: Fields,
    rep: Reporter,
    where: str,
    structure: dict[str, Callable[[etree._Element], None]] | None = None,
    unknown: Unknown = unknown_element,
) -> dict[str, tuple[object, int]]:
    """Read the child elements of ``el``: values through ``table``, nested
    structure through ``structure`` handlers, anything else is reported.
    Returns {field: (value, line)} for the stored fields that parsed."""
    structure = structure or {}
    found: dict[str, tuple[object, int]] = {}
    first: dict[str, int] = {}
    for child in elements(el):
        tag, line = child.tag, child.sourceline
        if tag in structure:
            structure[tag](child)
            continue
        if tag not in table:
            rep.error(line, unknown(child, where))
            continue
        field, parse = table[tag]
        key = field or tag
        if key in first:
            rep.error(line, f"<{tag}> given twice in {where} (first at line {first[key]})")
            continue
        first[key] = line
        text = text_of(child, rep)
        if text is None:
            continue
        try:
            value = parse(text)
        except v.BadValue as e:
            rep.error(line, f'{tag} in {where} {e}, got "{text.strip()}"')
            continue
        if field is not None:
            found[field] = (value, line)
    return found


def apply(target: object, found: dict[str, tuple[object, int]]) -> None:
    for field, (value, _line) in found.items():
        setattr(target, field, value)


def check_name(raw: str | None, what: str, line: int, rep: Reporter) -> str | None:
    """A queue (or pool) name: present, trimmed, without the "." separator."""
    if raw is None or not raw.strip():
        rep.error(line, f"{what} needs a non-empty name attribute")
        return None
    if raw != raw.strip():
        rep.error(line, f'{what} name "{raw}" has leading or trailing whitespace')
        return None
    if "." in raw:
        rep.error(line, f'{what} name "{raw}" must not contain "." (nest the element instead)')
        return None
    return raw


def parse_users(
    els: list[etree._Element],
    cfg: AllocationConfig,
    rep: Reporter,
    table: Fields,
    unknown: Unknown = unknown_element,
) -> None:
    for el in els:
        name = el.get("name")
        check_attributes(el, ("name",), "<allocations>", rep)
        if name is None or not name.strip():
            rep.error(el.sourceline, "<user> needs a non-empty name attribute")
            scan(el, table, rep, "an unnamed user", unknown=unknown)
            continue
        user = UserConfig(name, line=el.sourceline)
        apply(user, scan(el, table, rep, f"user {name}", unknown=unknown))
        if name in cfg.users:
            rep.error(el.sourceline, f"duplicate user {name} (first at line {cfg.users[name].line})")
        else:
            cfg.users[name] = user


# --- queues ----------------------------------------------------------------


def _fill_queue(el: etree._Element, q: QueueConfig, rep: Reporter) -> None:
    """Read a queue element into ``q``, its nested queues included."""
    where = f"queue {q.name}"
    check_attributes(el, ("name", "type"), where, rep)
    kind = el.get("type")
    if kind is not None and kind != "parent":
        rep.error(el.sourceline, f'type of queue {q.name} must be "parent", got "{kind}"')
    q.is_parent = kind == "parent"
    nested: list[etree._Element] = []
    reservations: list[etree._Element] = []
    structure = {"queue": nested.append, "pool": nested.append, "reservation": reservations.append}
    found = scan(el, QUEUE_FIELDS, rep, where, structure)
    apply(q, found)
    _add_children(q, nested, rep)

    is_parent = bool(q.children) or q.is_parent or q.name == "root"
    policy = found.get("scheduling_policy")
    if policy and is_parent and v.is_leaf_only(policy[0]):
        rep.error(policy[1], f'schedulingPolicy "{policy[0]}" is for leaf queues only, '
                             f"but {q.name} is a parent queue")
    if reservations and is_parent:
        rep.error(reservations[0].sourceline,
                  f"<reservation> is for leaf queues only, but {q.name} is a parent queue")


def _add_children(parent: QueueConfig, els: list[etree._Element], rep: Reporter) -> None:
    seen: dict[str, int] = {}
    for el in els:
        short = check_name(el.get("name"), f"<{el.tag}> in queue {parent.name}", el.sourceline, rep)
        q = QueueConfig(f"{parent.name}.{short or '?'}", line=el.sourceline)
        _fill_queue(el, q, rep)  # even when misnamed, to report what is inside
        if short is None:
            continue
        if short in seen:
            rep.error(el.sourceline, f"duplicate queue {q.name} (first at line {seen[short]})")
        else:
            seen[short] = el.sourceline
            parent.children.append(q)


def _parse_queues(els: list[etree._Element], root: QueueConfig, rep: Reporter) -> None:
    """Top-level queues are root's children, unless the file configures root
    itself; then, as in Hadoop, every other queue must be inside it."""
    roots = [el for el in els if (el.get("name") or "").lower() == "root"]
    if not roots:
        _add_children(root, els, rep)
        return
    if len(els) > 1:
        rep.error(roots[0].sourceline,
                  '<queue name="root"> must be the only top-level queue: put the other queues inside it')
    root.line = roots[0].sourceline
    _fill_queue(roots[0], root, rep)
    others = [el for el in els if el is not roots[0]]
    _add_children(QueueConfig("root"), others, rep)  # only for their errors


# --- placement policy --------------------------------------------------------


#: Rules that always place the app when they may create its queue (YARN 3.5's
#: QueuePlacementPolicy.RULES); reject always ends the walk; specified and
#: secondaryGroupExistingQueue never do.
TERMINAL_IF_CREATE = frozenset({"user", "primaryGroup", "nestedUserQueue", "default"})


#: Rules YARN 3.5 refuses inside nestedUserQueue (a user rule itself).
NOT_NESTED = frozenset({"nestedUserQueue", "reject", "user"})


def rule_is_terminal(rule: PlacementRule) -> bool:
    """Whether a rule always places or rejects, as YARN 3.5 decides it
    (YARN-8967): a rule with a parent rule only if the parent is too."""
    if rule.name == "nestedUserQueue" and (rule.parent is None or rule.parent.name in NOT_NESTED):
        return False  # refused anyway, with its own error
    own = rule.name == "reject" or (rule.name in TERMINAL_IF_CREATE and rule.create)
    return own and (rule.parent is None or rule_is_terminal(rule.parent))


def _queue_target(raw: str, line: int, rep: Reporter) -> str | None:
    parts = raw.split(".")
    if not raw or any(not p or p != p.strip() for p in parts):
        rep.error(line, f'queue "{raw}" of the default rule is not a valid queue name')
        return None
    return raw if raw.startswith("root.") else "root." + raw


def _parse_rule(el: etree._Element, rep: Reporter) -> PlacementRule | None:
    line = el.sourceline
    name = el.get("name")
    if not name:
        rep.error(line, "<rule> needs a name attribute")
        return None
    if name not in RULE_NAMES:
        rep.error(line, f'unknown placement rule "{name}" (known: {", ".join(RULE_NAMES)})')
        return None
    where = f'rule "{name}"'
    check_attributes(el, ("name", "create", "queue") if name == "default" else ("name", "create"), where, rep)
    rule = PlacementRule(name, line=line)
    if "create" in el.attrib:
        try:
            rule.create = v.boolean(el.get("create"))
        except v.BadValue as e:
            rep.error(line, f'create of {where} {e}, got "{el.get("create")}"')
            return None  # whether it is terminal is unknown: judge no other rule by it
    if name == "default":
        rule.queue = _queue_target(el.get("queue", "default"), line, rep)

    nested = []
    for child in elements(el):
        if child.tag == "rule" and name == "nestedUserQueue":
            nested.append(child)
        else:
            rep.error(child.sourceline, unknown_element(child, where))
    if name == "nestedUserQueue":
        if len(nested) != 1:
            rep.error(line, f"nestedUserQueue needs exactly one nested <rule>, found {len(nested)}")
        if nested:
            rule.parent = _parse_rule(nested[0], rep)
            if rule.parent and rule.parent.name in NOT_NESTED:
                # YARN 3.5 runs nestedUserQueue as a user rule: a user parent is the same type.
                rep.error(nested[0].sourceline,
                          f'the rule inside nestedUserQueue cannot be "{rule.parent.name}"')
    return rule


def _parse_placement(el: etree._Element, rep: Reporter) -> list[PlacementRule]:
    check_attributes(el, (), "<allocations>", rep)
    parsed: list[tuple[PlacementRule | None, etree._Element]] = []
    for child in elements(el):
        if child.tag == "rule":
            parsed.append((_parse_rule(child, rep), child))
        else:
            rep.error(child.sourceline, unknown_element(child, "queuePlacementPolicy"))
    if not parsed:
        rep.error(el.sourceline, "queuePlacementPolicy has no rules")
        return []
    terminal = None
    for rule, child in parsed:
        if terminal is not None:
            name = child.get("name")
            rep.error(child.sourceline,
                      f'rule "{name}" at line {child.sourceline} can never be reached: rule '
                      f'"{terminal.name}" at line {terminal.line} always places or rejects the app')
            break
        if rule is not None and rule_is_terminal(rule):
            terminal = rule
    last = parsed[-1][0]
    if terminal is None and last is not None:
        rep.error(last.line,
                  f'the last placement rule "{last.name}" may fall through and leave the app '
                  'without a queue: end the policy with default, reject, or a user or '
                  'primaryGroup rule with create="true"')
    return [rule for rule, _ in parsed if rule is not None]


# --- the file ----------------------------------------------------------------


def parse_yarn(root: etree._Element, source: str) -> AllocationConfig:
    """Build the config from a parsed <allocations> element; raises
    ``ConfigErrors`` with every error found."""
    rep = Reporter(source)
    cfg = AllocationConfig(source=source, format="yarn")
    queues: list[etree._Element] = []
    users: list[etree._Element] = []
    policies: list[etree._Element] = []
    structure = {"queue": queues.append, "pool": queues.append, "user": users.append,
                 "queuePlacementPolicy": policies.append}
    found = scan(root, TOP_FIELDS, rep, "<allocations>", structure)

    legacy = found.pop(_LEGACY_FAIR_TIMEOUT, None)
    if legacy is not None:
        found.setdefault("default_fair_share_preemption_timeout", legacy)
    policy = found.get("default_queue_scheduling_policy")
    if policy and v.is_leaf_only(policy[0]):
        rep.error(policy[1], f'the default scheduling policy cannot be "{policy[0]}": it would '
                             "apply to parent queues too; set it on each leaf queue instead")
    apply(cfg, found)

    _parse_queues(queues, cfg.root, rep)
    parse_users(users, cfg, rep, USER_FIELDS)
    for extra in policies[1:]:
        rep.error(extra.sourceline,
                  f"<queuePlacementPolicy> given twice (first at line {policies[0].sourceline})")
    cfg.placement_rules = _parse_placement(policies[0], rep) if policies else default_placement_rules()
    rep.raise_if_any()
    return cfg
