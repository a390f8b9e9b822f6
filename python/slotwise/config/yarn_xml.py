"""The YARN allocation file (fair-scheduler.xml), as Hadoop's FairScheduler
documents it.

A file YARN 3.5 loads loads here too: what YARN ignores or adjusts (unknown
elements and attributes, a value given twice, a queue declared twice, names
with spaces around them, thresholds above 1) is a warning with its line,
and the value YARN would use is used (``validate --strict`` makes them
errors). What YARN refuses is an error with its line; all of them are
reported at once.  The small XML helpers (``Reporter``, ``scan``,
``parse_users``) serve the MRv1 parser too.
"""

from __future__ import annotations

import difflib
from typing import Callable, Iterable

from lxml import etree

from . import values as v
from .errors import ConfigError, ConfigErrors
from .model import MAX_QUEUE_NAME, AllocationConfig, PlacementRule, QueueConfig, UserConfig, default_placement_rules

# element -> (field of QueueConfig / AllocationConfig, or None to validate only; value parser)
Fields = dict[str, tuple[str | None, Callable[[str], object]]]

QUEUE_FIELDS: Fields = {
    "minResources": ("min_resources", v.min_resource),
    "maxResources": ("max_resources", v.max_resource),
    "maxChildResources": ("max_child_resources", v.max_resource),
    "maxContainerAllocation": (None, v.max_resource),
    "maxRunningApps": ("max_running_apps", v.app_count),
    "maxAMShare": ("max_am_share", v.am_share),
    "weight": ("weight", v.weight),
    "schedulingPolicy": ("scheduling_policy", v.policy_name),
    "schedulingMode": ("scheduling_policy", v.policy_name),  # Hadoop's old alias
    "minSharePreemptionTimeout": ("min_share_preemption_timeout", v.seconds),
    "fairSharePreemptionTimeout": ("fair_share_preemption_timeout", v.seconds),
    "fairSharePreemptionThreshold": ("fair_share_preemption_threshold", v.threshold),
    "allowPreemptionFrom": ("allow_preemption_from", v.boolean),
    "localityTarget": ("locality_target", v.fraction),
    "aclSubmitApps": ("acl_submit_apps", v.acl),
    "aclAdministerApps": ("acl_administer_apps", v.acl),
    "aclAdministerReservations": (None, v.acl),
    "aclListReservations": (None, v.acl),
    "aclSubmitReservations": (None, v.acl),
}

# Deprecated top-level fairSharePreemptionTimeout: used only when the default is absent.
_LEGACY_FAIR_TIMEOUT = "legacy_fair_share_preemption_timeout"

TOP_FIELDS: Fields = {
    "userMaxAppsDefault": ("user_max_apps_default", v.app_count),
    "queueMaxAppsDefault": ("queue_max_apps_default", v.app_count),
    "queueMaxResourcesDefault": ("queue_max_resources_default", v.max_resource),
    "queueMaxAMShareDefault": ("queue_max_am_share_default", v.am_share),
    "defaultQueueSchedulingPolicy": ("default_queue_scheduling_policy", v.policy_name),
    "defaultQueueSchedulingMode": ("default_queue_scheduling_policy", v.policy_name),
    "defaultMinSharePreemptionTimeout": ("default_min_share_preemption_timeout", v.seconds),
    "defaultFairSharePreemptionTimeout": ("default_fair_share_preemption_timeout", v.seconds),
    "defaultFairSharePreemptionThreshold": ("default_fair_share_preemption_threshold", v.threshold),
    "defaultLocalityTarget": ("default_locality_target", v.fraction),
    "fairSharePreemptionTimeout": (_LEGACY_FAIR_TIMEOUT, v.seconds),
    "reservation-agent": (None, v.trimmed),
    "reservation-policy": (None, v.trimmed),
    "reservation-planner": (None, v.trimmed),
}

USER_FIELDS: Fields = {"maxRunningApps": ("max_running_apps", v.app_count)}

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
# Elements only an MRv1 file has: with no YARN-only element, any of them makes the loader pick the MRv1 parser.
# (schedulingMode is also an old YARN alias, so it only counts without YARN elements.)
MRV1_ONLY_ELEMENTS = frozenset({
    "minMaps", "minReduces", "maxMaps", "maxReduces", "maxRunningJobs",
    "poolMaxJobsDefault", "userMaxJobsDefault", "defaultPoolSchedulingMode",
})
YARN_ONLY_ELEMENTS = frozenset(
    set(QUEUE_FIELDS) | set(TOP_FIELDS) | {"queue", "reservation", "queuePlacementPolicy", "rule"}
) - SHARED_ELEMENTS


class Reporter:
    """Collects errors and warnings so that one pass reports every mistake in
    the file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[ConfigError] = []
        self.warnings: list[ConfigError] = []

    def error(self, line: int | None, message: str) -> None:
        self.errors.append(ConfigError(self.source, line, message))

    def warn(self, line: int | None, message: str) -> None:
        """What YARN ignores or adjusts: reported, and the file still loads."""
        self.warnings.append(ConfigError(self.source, line, "warning: " + message))

    def raise_if_any(self) -> None:
        if self.errors:  # in file order, whatever order the checks ran in
            raise ConfigErrors(sorted(self.errors, key=lambda e: e.line or 0), self.warnings)

    def warning_lines(self) -> list[str]:
        return [str(w) for w in sorted(self.warnings, key=lambda e: e.line or 0)]


Unknown = Callable[[etree._Element, str], str]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in known}
        close = [lowered[word.lower()]] if word.lower() in lowered else []
    return f"; did you mean <{close[0]}>?" if close else ""


def unknown_element(el: etree._Element, where: str) -> str:
    if el.tag in MRV1_ONLY_ELEMENTS:
        return f"<{el.tag}> in {where} is an MRv1 element; a YARN file ignores it, as YARN does"
    return f"unknown element <{el.tag}> in {where} is ignored, as YARN ignores it"


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
            rep.warn(el.sourceline, f'unknown attribute "{name}" on <{el.tag}> in {where} is ignored, '
                                    f"as YARN ignores it")


def scan(
    el: etree._Element,
    table: Fields,
    rep: Reporter,
    where: str,
    structure: dict[str, Callable[[etree._Element], None]] | None = None,
    unknown: Unknown = unknown_element,
    only_last: frozenset[str] = frozenset(),
) -> dict[str, tuple[object, int]]:
    """Read the child elements of ``el``: values through ``table``, nested
    structure through ``structure`` handlers, anything else is reported.
    Elements in ``only_last`` are read only at their last occurrence (YARN
    keeps such top-level values as text and parses the last one).
    Returns {field: (value, line)} for the stored fields that parsed."""
    structure = structure or {}
    found: dict[str, tuple[object, int]] = {}
    first: dict[str, int] = {}
    last = {c.tag: c for c in elements(el) if c.tag in only_last}
    for child in elements(el):
        tag, line = child.tag, child.sourceline
        if tag in structure:
            structure[tag](child)
            continue
        if tag not in table:
            rep.warn(line, unknown(child, where) + did_you_mean(tag, [*table, *structure]))
            continue
        field, parse = table[tag]
        key = field or tag
        if key in first:
            rep.warn(line, f"<{tag}> given twice in {where} (first at line {first[key]}): "
                           "the last one counts, as in YARN")
        first[key] = line
        if tag in last and last[tag] is not child:
            continue
        text = text_of(child, rep)
        if text is None:
            continue
        try:
            value = parse(text)
        except v.Adjusted as e:
            rep.warn(line, f'{tag} in {where} {e}, got "{text.strip()}"')
            value = e.value
        except v.BadValue as e:
            rep.error(line, f'{tag} in {where} {e}, got "{text.strip()}"')
            continue
        if field is not None:
            found[field] = (value, line)
    return found


def apply(target: object, found: dict[str, tuple[object, int]]) -> None:
    for field, (value, _line) in found.items():
        setattr(target, field, value)


def check_name(raw: str | None, what: str, line: int, rep: Reporter, parent: str = "root") -> str | None:
    """A queue (or pool) name: present, trimmed, without the "." separator,
    and short enough that its full name under ``parent`` fits the protocol."""
    if raw is None or not raw.strip():
        rep.error(line, f"{what} needs a non-empty name attribute")
        return None
    if raw != raw.strip():
        rep.warn(line, f'{what} name "{raw}" has spaces around it: YARN trims them, so it is "{raw.strip()}"')
        raw = raw.strip()
    if "." in raw:
        rep.error(line, f'{what} name "{raw}" must not contain "." (nest the element instead)')
        return None
    full = len(parent) + 1 + len(raw)
    if full > MAX_QUEUE_NAME:
        rep.error(line, f'{what} name "{raw[:40]}..." makes a full queue name of {full:,} characters; '
                        f"at most {MAX_QUEUE_NAME:,} are allowed")
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
            rep.warn(el.sourceline, "<user> without a name is ignored: it limits no user")
            scan(el, table, rep, "an unnamed user", unknown=unknown)
            continue
        found = scan(el, table, rep, f"user {name}", unknown=unknown)
        if name in cfg.users:
            rep.warn(el.sourceline, f"user {name} declared again (first at line {cfg.users[name].line}): "
                                    "merged, later values win, as in YARN")
            apply(cfg.users[name], found)
        else:
            user = UserConfig(name, line=el.sourceline)
            apply(user, found)
            cfg.users[name] = user


# --- queues ----------------------------------------------------------------


def _fill_queue(el: etree._Element, q: QueueConfig, rep: Reporter) -> set[str]:
    """Read a queue element into ``q``, its nested queues included; returns
    the fields the element set (for merging a queue declared twice)."""
    where = f"queue {q.name}"
    check_attributes(el, ("name", "type"), where, rep)
    kind = el.get("type")
    if kind is not None and kind != "parent":
        rep.warn(el.sourceline, f'type of queue {q.name} is "{kind}", not "parent": YARN takes it as a leaf '
                                "unless it has queues inside")
    q.is_parent = kind == "parent"
    nested: list[etree._Element] = []
    reservations: list[etree._Element] = []
    structure = {"queue": nested.append, "pool": nested.append, "reservation": reservations.append}
    found = scan(el, QUEUE_FIELDS, rep, where, structure)
    apply(q, found)
    _add_children(q, nested, rep)

    is_parent = bool(nested) or q.is_parent or q.name == "root"
    policy = found.get("scheduling_policy")
    if policy and is_parent and v.is_leaf_only(policy[0]):
        rep.error(policy[1], f'schedulingPolicy "{policy[0]}" is for leaf queues only, '
                             f"but {q.name} is a parent queue")
    if reservations and is_parent:
        rep.error(reservations[0].sourceline,
                  f"<reservation> is for leaf queues only, but {q.name} is a parent queue")
    am_share = found.get("max_am_share")
    if am_share and is_parent and q.name != "root":
        rep.error(am_share[1], f"maxAMShare is for leaf queues only, but {q.name} is a parent queue "
                               "(YARN 3.5 refuses the file)")
    return set(found) | ({"is_parent"} if q.is_parent else set())


def _merge(into: QueueConfig, again: QueueConfig, fields: set[str]) -> None:
    """A queue declared twice: YARN keeps one queue, the later declaration's
    values winning; nested queues merge the same way."""
    for name in fields:
        setattr(into, name, getattr(again, name))
    into.declared |= fields
    mine = {c.short_name: c for c in into.children}
    for child in again.children:
        if child.short_name in mine:
            _merge(mine[child.short_name], child, child.declared)
        else:
            into.children.append(child)


def _add_children(parent: QueueConfig, els: list[etree._Element], rep: Reporter) -> None:
    seen: dict[str, tuple[int, QueueConfig]] = {}
    for el in els:
        short = check_name(el.get("name"), f"<{el.tag}> in queue {parent.name}", el.sourceline, rep, parent.name)
        q = QueueConfig(f"{parent.name}.{short or '?'}", line=el.sourceline)
        q.declared = _fill_queue(el, q, rep)  # even when misnamed, to report what is inside
        if short is None:
            continue
        if short in seen:
            first_line, first = seen[short]
            rep.warn(el.sourceline, f"queue {q.name} declared again (first at line {first_line}): merged, "
                                    "later values win, as in YARN")
            _merge(first, q, q.declared)
        else:
            seen[short] = (el.sourceline, q)
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


def _check_policy_pairs(q: QueueConfig, default: str, rep: Reporter, parent_policy: str | None = None) -> None:
    """YARN 3.5 refuses a drf queue under a fair parent: it logs an error and
    leaves the queue (and what is under it) out. Slotwise runs it as drf and
    says so."""
    policy = q.scheduling_policy or default
    if parent_policy == "fair" and policy == "drf":
        rep.warn(q.line, f"{q.name} uses drf under a fair parent: YARN 3.5 refuses that pair and leaves "
                         f"{q.name} out; Slotwise runs it as drf")
    for child in q.children:
        _check_policy_pairs(child, default, rep, policy)


# --- placement policy --------------------------------------------------------


#: Rules that always place the app when they may create its queue (YARN 3.5's
#: QueuePlacementPolicy.RULES); reject always ends the walk; specified and
#: secondaryGroupExistingQueue never do.
TERMINAL_IF_CREATE = frozenset({"user", "primaryGroup", "nestedUserQueue", "default"})


#: Rules YARN 3.5 refuses as any rule's parent (the rule nested in it).
NOT_PARENTS = frozenset({"nestedUserQueue", "reject"})
#: Rules that take no parent rule in YARN 3.5.
NO_PARENT = frozenset({"specified", "default", "reject"})
#: YARN 3.5 runs nestedUserQueue as a user rule: a parent may not be its own type.
_RULE_CLASS = {"nestedUserQueue": "user"}


def _parent_problem(rule: PlacementRule) -> str | None:
    """Why YARN 3.5 refuses this rule's nested (parent) rule, or None."""
    parent = rule.parent
    if parent is None:
        return "nestedUserQueue needs a nested <rule> (its parent rule)" if rule.name == "nestedUserQueue" else None
    if rule.name in NO_PARENT:
        return f'rule "{rule.name}" takes no nested rule (YARN: no parent rule for it)'
    if parent.name in NOT_PARENTS or _RULE_CLASS.get(parent.name, parent.name) == _RULE_CLASS.get(rule.name, rule.name):
        return f'the rule inside {rule.name} cannot be "{parent.name}"'
    return None


def rule_is_terminal(rule: PlacementRule) -> bool:
    """Whether a rule always places or rejects, as YARN 3.5 decides it
    (YARN-8967): a rule with a parent rule only if the parent is too."""
    if _parent_problem(rule):
        return False  # refused anyway, with its own error
    own = rule.name == "reject" or (rule.name in TERMINAL_IF_CREATE and rule.create)
    return own and (rule.parent is None or rule_is_terminal(rule.parent))


def _queue_target(raw: str, line: int, rep: Reporter) -> str:
    """The default rule's queue; YARN falls back to root.default for a name
    with a dot or whitespace at either end, and keeps one with an empty or
    spaced part inside, where it can never create a queue."""
    if not raw or raw != raw.strip() or raw.startswith(".") or raw.endswith("."):
        rep.warn(line, f'queue "{raw}" of the default rule is not a valid queue name: YARN uses root.default')
        return "root.default"
    if any(not p or p != p.strip() for p in raw.split(".")):
        rep.warn(line, f'queue "{raw}" of the default rule is not a valid queue name: YARN keeps it and fails '
                       "(an exception in the scheduler) on the first app it places there; Slotwise uses root.default")
        return "root.default"
    return raw if raw == "root" or raw.startswith("root.") else "root." + raw


def _parse_rule(el: etree._Element, rep: Reporter, nested_in: str | None = None) -> PlacementRule | None:
    """One <rule>; any rule but a parent (``nested_in``) may hold a nested
    rule, its parent rule, as YARN 3.5 reads it (not only nestedUserQueue)."""
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
        raw = el.get("create")
        try:
            rule.create = v.boolean(raw) if raw.strip() else True
        except v.BadValue:
            rep.warn(line, f'create of {where} is "{raw}": YARN reads anything but "true" as false')
            rule.create = False
    if name == "default":
        rule.queue = _queue_target(el.get("queue", "default"), line, rep)

    nested = []
    for child in elements(el):
        if child.tag == "rule" and nested_in is None:
            nested.append(child)
        elif child.tag == "rule":
            rep.warn(child.sourceline, f'a <rule> inside the parent rule of {nested_in} is ignored, as YARN ignores it')
        else:
            rep.warn(child.sourceline, unknown_element(child, where))
    if len(nested) > 1:
        rep.warn(line, f"{name} has {len(nested)} nested rules: YARN uses the last one")
    if nested:
        rule.parent = _parse_rule(nested[-1], rep, nested_in=name)
        if rule.parent is None:
            return rule
    problem = _parent_problem(rule) if nested_in is None else None
    if problem:
        rep.error(nested[-1].sourceline if nested else line, problem)
    return rule


def _parse_placement(el: etree._Element, rep: Reporter) -> list[PlacementRule]:
    check_attributes(el, (), "<allocations>", rep)
    parsed: list[tuple[PlacementRule | None, etree._Element]] = []
    for child in elements(el):
        if child.tag == "rule":
            parsed.append((_parse_rule(child, rep), child))
        else:
            rep.warn(child.sourceline, unknown_element(child, "queuePlacementPolicy"))
    if not parsed:
        if len(el) == 0 and not el.text:
            rep.error(el.sourceline, "queuePlacementPolicy is empty (YARN: Empty configuration for "
                                     "QueuePlacementPolicy is not allowed)")
            return []
        rep.warn(el.sourceline, "queuePlacementPolicy has no rules: YARN keeps its default rules")
        return default_placement_rules()
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
    found = scan(root, TOP_FIELDS, rep, "<allocations>", structure,
                 only_last=frozenset(TOP_FIELDS) - {"defaultQueueSchedulingPolicy", "defaultQueueSchedulingMode"})

    legacy = found.pop(_LEGACY_FAIR_TIMEOUT, None)
    if legacy is not None:
        found.setdefault("default_fair_share_preemption_timeout", legacy)
    policy = found.get("default_queue_scheduling_policy")
    if policy and v.is_leaf_only(policy[0]):
        rep.error(policy[1], f'the default scheduling policy cannot be "{policy[0]}": it would '
                             "apply to parent queues too; set it on each leaf queue instead")
    apply(cfg, found)

    _parse_queues(queues, cfg.root, rep)
    _check_policy_pairs(cfg.root, cfg.default_queue_scheduling_policy, rep)
    parse_users(users, cfg, rep, USER_FIELDS)
    for extra in policies[1:]:
        rep.warn(extra.sourceline, f"<queuePlacementPolicy> given again (first at line {policies[0].sourceline}): "
                                   "the last one counts, as in YARN")
    cfg.placement_rules = _parse_placement(policies[-1], rep) if policies else default_placement_rules()
    rep.raise_if_any()
    cfg.warnings = rep.warning_lines()
    return cfg
