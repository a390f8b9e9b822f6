"""``slotwise explain``, ``slotwise forecast`` and ``slotwise diff``: questions to a running
``slotwise serve``, over its REST API (docs/admin.md)."""

from __future__ import annotations

import json
import math
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from .admin import FILE_NAME_HEADER, MAX_FILE_NAME
from .views.explain import as_text
from .cliargs import add_server
from .secretfile import read_secret


class ServerError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status; None: no answer


def call(server: str, path: str, body: bytes | None = None, token: str | None = None,
         timeout: float = 60.0, headers: dict | None = None, method: str | None = None) -> dict:
    """``path`` of serve's API at ``server`` (a base URL, as --server gives it),
    JSON in and out; ServerError with the server's own reason."""
    url = f"{server}{path}"
    headers = {**({"Content-Type": "application/xml"} if body is not None else {}), **(headers or {})}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method=method or ("POST" if body is not None else "GET"),
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            detail = json.load(e).get("detail")
        except (ValueError, AttributeError):
            detail = None
        raise ServerError(detail or f"{url}: HTTP {e.code}", e.code) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ServerError(f"no Slotwise server answers at {server} ({reason}); start `slotwise serve` "
                          "or give --server HOST:PORT") from None


def _dump(out: dict, status: int) -> int:
    """--json: the API's answer as it came."""
    json.dump(out, sys.stdout, indent=2)
    print()
    return status


def _about_app(args, what: str, say) -> int:
    """``slotwise WHAT APP``: GET /api/v1/apps/APP/WHAT, printed with ``say``
    (or as JSON with --json)."""
    try:
        out = call(args.server, f"/api/v1/apps/{urllib.parse.quote(args.app, safe='')}/{what}")
    except ServerError as e:
        print(f"slotwise {what}: {e}", file=sys.stderr)
        return 1
    if args.json:
        return _dump(out, 0)
    print(say(out))
    return 0


def cmd_explain(args) -> int:
    return _about_app(args, "explain", as_text)


def cmd_forecast(args) -> int:
    return _about_app(args, "forecast", lambda out: f"{out['app']}: {out['text']}")


def _horizon(text: str, most: float = 86400) -> float:
    """10m, 90s, 1h or plain seconds, from 1 to ``most``."""
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:].lower())
    try:
        value = float(text[:-1] if scale else text) * (scale or 1)
    except ValueError:
        raise ValueError(f"--horizon {text}: expected seconds, or a number with s, m or h (e.g. 10m)") from None
    if not 1 <= value <= most:
        raise ValueError(f"--horizon {text}: from 1 s to {most / 3600:g} h")
    return value


def _ahead(x) -> str:
    from .forecaster import seconds
    return "-" if x is None else "now" if x == 0 else f"~{seconds(x)}"


def cmd_whatif(args) -> int:
    try:
        body: dict = {"horizon_s": _horizon(args.horizon)}
        if args.set:
            body["set"] = args.set
        elif args.move:
            body["move"] = list(args.move)
        elif args.priority:
            body["priority"] = [args.priority[0], int(args.priority[1])]
        else:
            with open(args.allocations, encoding="utf-8") as f:
                body["allocations"] = f.read()
    except (ValueError, OSError) as e:
        print(f"slotwise whatif: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return 2
    try:
        out = admin_call(args, "/api/v1/whatif", json.dumps(body).encode(), {"Content-Type": "application/json"})
    except ServerError as e:
        print(f"slotwise whatif: {e}", file=sys.stderr)
        return 1
    if args.json:
        return _dump(out, 1 if out["error"] else 0)
    return print_whatif(out, "whatif")


def print_whatif(out: dict, command: str) -> int:
    """A what-if answer as ``slotwise whatif`` and ``diff --horizon`` print
    it: the apps whose start or finish moves, then the queues whose mean
    share does; its error as one line on stderr (status 1)."""
    if out["error"]:
        print(f"slotwise {command}: {out['error']}", file=sys.stderr)
        return 1
    print(f"{out['change']}, played {out['horizon_s']:g} s ahead (nothing live changes):")
    rows = [r for r in out["apps"] if r["changed"]]
    if not rows:
        print("no app starts or ends more than a heartbeat sooner or later")
    for r in rows:
        print(f"  {r['app']} ({r['queue']}): starts {_ahead(r['start_before'])} -> {_ahead(r['start_after'])}, "
              f"ends {_ahead(r['finish_before'])} -> {_ahead(r['finish_after'])}")
    moved = [q for q in out.get("queues", []) if abs(q["share_after"] - q["share_before"]) >= 0.005]
    if moved:
        print("mean share over the horizon:")
    for q in moved:
        print(f"  {q['queue']}: {100 * q['share_before']:.1f}% -> {100 * q['share_after']:.1f}%")
    pb, pa = out.get("preemptions_before") or {}, out.get("preemptions_after") or {}
    taken = [q for q in sorted(set(pb) | set(pa)) if pb.get(q, 0) != pa.get(q, 0)]
    if taken:
        print("containers taken back by preemption over the horizon:")
    for q in taken:
        print(f"  {q}: {pb.get(q, 0)} -> {pa.get(q, 0)}")
    return 0


def cmd_diff(args) -> int:
    try:
        horizon = None if args.horizon is None else _horizon(args.horizon)
    except ValueError as e:
        print(f"slotwise diff: {e}", file=sys.stderr)
        return 2
    try:
        with open(args.file, "rb") as f:
            body = f.read()
    except OSError as e:
        print(f"slotwise diff: {args.file}: {e.strerror or e}", file=sys.stderr)
        return 1
    try:
        out = admin_call(args, "/api/v1/config/dry-run", body, {FILE_NAME_HEADER: _file_name(args.file)})
        # --horizon: the file played forward too, as `whatif --allocations` plays it (a file a
        # reload would refuse is not played: the dry run's lines say why).
        ahead = None if horizon is None or not out["valid"] or out["conflicts"] else admin_call(
            args, "/api/v1/whatif", json.dumps({"allocations": body.decode("utf-8", "replace"),
                                                "horizon_s": horizon}).encode(),
            {"Content-Type": "application/json"})
    except ServerError as e:
        print(f"slotwise diff: {e}", file=sys.stderr)
        return 1
    if args.json and horizon is not None:
        return _dump({"dry_run": out, "whatif": ahead}, 0 if ahead is not None and not ahead["error"] else 1)
    if args.json:
        return _dump(out, 0 if out["valid"] else 1)
    status = _say_dry_run(out, args.file)
    return status if status or ahead is None else print_whatif(ahead, "diff")


def _say_dry_run(out: dict, name: str) -> int:
    """A dry run's answer as ``slotwise diff`` prints it: errors and
    conflicts on stderr (status 1), warnings, then the table."""
    for line in out["errors"] + out["conflicts"]:
        print(line, file=sys.stderr)
    if out["errors"]:
        return 1
    for w in out["warnings"]:
        print(w)
    if out["conflicts"]:
        print(f"{name}: a reload would be refused; nothing would change", file=sys.stderr)
        return 1
    print(diff_table(out, name))
    return 0


def _file_name(path: str) -> str:
    """The name the server's errors are to give the file: the path as given
    (as ``validate`` says it), or its last part where that is over the cap."""
    quoted = urllib.parse.quote(path, safe="/")
    return quoted if len(quoted) <= MAX_FILE_NAME else urllib.parse.quote(os.path.basename(path))[:MAX_FILE_NAME]


def admin_call(args, path: str, body: bytes | None = None, headers: dict | None = None,
               method: str | None = None, timeout: float = 60.0) -> dict:
    """An admin call with the token from --admin-token-file; a refusal names
    that file and how to give another."""
    where = os.path.expanduser(args.admin_token_file)
    token = _admin_token(where)
    try:
        return call(args.server, path, body, token, timeout=timeout, headers=headers, method=method)
    except ServerError as e:
        if e.status != 401:
            raise
        why = (f"the server at {args.server} refused the admin token in {where} (one of another serve, or of "
               "an earlier one?)" if token else f"no admin token: {where} does not exist")
        raise ServerError(f"{why}; give serve's token file with --admin-token-file FILE (serve's log names it: "
                          "\"admin token in FILE\")", 401) from None


def _admin_token(path: str) -> str | None:
    """The admin token serve wrote (a dry run copies the engine: admin only);
    None if there is none here, and the server says so."""
    try:
        return read_secret(path, "admin token")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ServerError(str(e)) from None


def diff_table(out: dict, name: str) -> str:
    """A dry run's answer as ``slotwise diff`` prints it: per queue its weight
    and shares before -> after, and under it every other field the answer
    reports that a reload would change; then what would become preemptable."""
    rule = "YARN's rule" if out.get("share_rule") == "yarn" else "the design document's rule"
    rows = out["queues"]
    mrv1 = any("map_slots" in (r.get("fair_share_after") or r.get("fair_share_before") or {}) for r in rows)
    lines = [f"{name} against the live demands (fair shares by {rule}; "
             f"{'map+reduce slots' if mrv1 else 'memory MB'}):",
             f"{'queue':<32} {'weight':>11} {'fair share':>21} {'steady fair share':>21}"]
    for r in rows:
        lines.append(f"{r['queue']:<32} {_change(r, 'weight', _brief):>11} {_change(r, 'fair_share', _brief):>21} "
                     f"{_change(r, 'steady_fair_share', _brief):>21}"
                     + ("" if r["status"] == "kept" else f"  ({r['status']})"))
        if r["status"] != "kept":
            continue
        names = MRV1_NAMES if mrv1 else FIELD_NAMES
        for key in (k[:-len("_before")] for k in r if k.endswith("_before")):
            if key not in TABLE_FIELDS and r[f"{key}_before"] != r[f"{key}_after"]:
                lines.append(f"    {names.get(key, key.replace('_', ' '))}: {_change(r, key, _full(key))}")
    taken = out["newly_preemptable"]
    off = "" if out.get("preemption", True) else " (preemption is off in this server)"
    if taken:
        lines.append(f"would become preemptable: {len(taken)} container(s){off}")
        lines += [f"  - {c['container']} of {c['app']} in {c['queue']} on {c['node']} ({_resource(c['resource'])})"
                  for c in taken]
    else:
        lines.append("no container would become preemptable")
    return "\n".join(lines)


#: The table's columns; every other field of a row gets a line when it changes.
TABLE_FIELDS = ("weight", "fair_share", "steady_fair_share")
#: Each field by the name the operator knows it by, the allocation file's.
FIELD_NAMES = {"min_share": "min share (minResources)", "max_share": "max share (maxResources)",
               "policy": "schedulingPolicy", "max_running_apps": "maxRunningApps", "max_am_share": "maxAMShare",
               "min_share_timeout": "minSharePreemptionTimeout", "fair_share_timeout": "fairSharePreemptionTimeout",
               "fair_share_threshold": "fairSharePreemptionThreshold",
               "preemption_due": "preemption due (its next round may act at the next update pass)"}
MRV1_NAMES = {**FIELD_NAMES, "min_share": "min share (minMaps, minReduces)",
              "max_share": "max share (maxMaps, maxReduces)", "policy": "schedulingMode",
              "max_running_apps": "maxRunningJobs"}
_UNITS = (("memory_mb", "MB"), ("vcores", "vcores"), ("map_slots", "map slots"), ("reduce_slots", "reduce slots"))


def _endless(v) -> bool:
    """No limit: null over JSON (which has no infinity), inf from the service itself."""
    return v is None or (isinstance(v, float) and math.isinf(v))


def _brief(v) -> str:
    """A table cell: a number, or a resource's memory (MRv1: its slots)."""
    if isinstance(v, dict):
        slots = (v.get("map_slots"), v.get("reduce_slots"))
        v = v["memory_mb"] if "memory_mb" in v else None if any(map(_endless, slots)) else sum(slots)
    return "unlimited" if _endless(v) else f"{v:g}"


def _full(key: str):
    def say(v) -> str:
        if isinstance(v, dict):
            return _resource(v)
        if key == "preemption_due":
            return "yes" if v else "no round coming" if v is None else "no"
        if _endless(v):
            return "never" if key.endswith("_timeout") else "unlimited"
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return f"{v:g} s" if key.endswith("_timeout") else f"{v:g}"
        return str(v)
    return say


def _resource(r: dict) -> str:
    if all(_endless(v) for v in r.values()):
        return "unlimited"
    return ", ".join(f"unlimited {unit}" if _endless(r[k]) else f"{r[k]:g} {unit}" for k, unit in _UNITS if k in r)


def _change(row: dict, key: str, say) -> str:
    b, a = row.get(f"{key}_before"), row.get(f"{key}_after")
    before = "-" if row["status"] == "added" else say(b)
    after = "-" if row["status"] == "removed" else say(a)
    return before if before == after else f"{before} -> {after}"


def cmd_shadow_report(args) -> int:
    """``slotwise shadow report``: the recorded window played under the live
    file and the candidate (slotwise/shadow_report.py); with --event-log in
    this process, else by the server, in a child process of its own."""
    from .shadow_report import CHILD_WALL_S, MAX_SINCE_S, ReportError, report, text
    from .sim.cli import _allocations

    path = args.candidate or args.file
    if path and not args.event_log:
        print("slotwise shadow report: a candidate file needs --event-log FILE (serve's, read here); without it "
              "the server reports the candidate its shadow runs", file=sys.stderr)
        return 2
    try:
        since = _horizon(args.since, MAX_SINCE_S)
        if not args.event_log:  # the server plays its own log under its shadow's candidate
            out = admin_call(args, f"/api/v1/shadow/report?since={since:.0f}", timeout=CHILD_WALL_S + 60)
        else:
            if path is None:  # the file the server's shadow runs, read here (the same host)
                path = call(args.server, "/api/v1/shadow").get("file")
                if not path:
                    print("slotwise shadow report: no shadow runs on the server: give --candidate FILE",
                          file=sys.stderr)
                    return 2
            candidate = _allocations(path)  # (its errors printed, FILE:LINE each)
            if candidate is False:
                return 1
            out = report(args.event_log, candidate, since, max_bytes=args.max_bytes, max_cpu_s=args.max_cpu)
    except (ReportError, ServerError, ValueError) as e:
        print(f"slotwise shadow report: {str(e).replace('--horizon', '--since')}", file=sys.stderr)
        return 1
    if args.json:
        return _dump(out, 0)
    print(text(out))
    return 0


def cmd_shadow(args) -> int:
    """``slotwise shadow start FILE | stop | status | promote``."""
    if args.action == "report":
        return cmd_shadow_report(args)
    try:
        if args.action == "start":
            if not args.file:
                print("slotwise shadow start: give the candidate file (slotwise shadow start FILE)", file=sys.stderr)
                return 2
            from .config.loader import read_allocation_file
            from .config import ConfigErrors

            try:
                text = read_allocation_file(args.file).decode("utf-8", "replace")
            except ConfigErrors as e:
                for err in e.errors:
                    print(err, file=sys.stderr)
                return 1
            except OSError as e:
                print(f"{args.file}: cannot read: {e.strerror or e}", file=sys.stderr)
                return 1
            out = admin_call(args, "/api/v1/shadow", json.dumps({"allocations": text}).encode(),
                             {"Content-Type": "application/json", FILE_NAME_HEADER: _file_name(args.file)})
        elif args.file:
            print(f"slotwise shadow {args.action}: takes no file", file=sys.stderr)
            return 2
        elif args.action == "stop":
            out = admin_call(args, "/api/v1/shadow", method="DELETE")
        elif args.action == "promote":
            out = admin_call(args, "/api/v1/shadow/promote", b"", method="POST")
            if args.json:
                return _dump(out, 0)
            print(f"wrote {out['candidate']} as {out['file']} (the old one is {out['backup']}); "
                  "the server applies it as any reload")
            return 0
        else:
            out = call(args.server, "/api/v1/shadow")
    except ServerError as e:
        print(f"slotwise shadow {args.action}: {e}", file=sys.stderr)
        return 1
    if args.json:
        return _dump(out, 0)
    print(shadow_text(out))
    return 0 if out["state"] != "stopped" or not out.get("error") else 1


def shadow_text(out: dict) -> str:
    """``slotwise shadow status``: the counts, then per queue live against shadow."""
    lines = [f"shadow {out['state']}" + (f" ({out['file']})" if out.get("file") else "")
             + (f": {out['error']}" if out.get("error") else "")]
    lines += [f"  {e}" for e in out.get("file_errors") or []]
    if out["state"] == "off":
        return lines[0]
    lines.append(f"compared {out['compared']} heartbeat(s), diverged {out['diverged']}, skipped {out['skipped']}; "
                 f"update passes {out['updates_compared']}, their preemptions diverged {out['updates_diverged']}")
    if out["queues"]:
        lines.append(f"last {out['window_s'] / 60:.0f} min: {'queue':<30} {'live':>8} {'shadow':>8}  "
                     "containers (preemptions)")
        for q in out["queues"]:
            lv, sh = q["live"], q["shadow"]
            lines.append(f"{'':<15}{q['queue']:<30} {lv['containers']:>8} {sh['containers']:>8}  "
                         f"({lv['preemptions']} / {sh['preemptions']})")
    return "\n".join(lines)


def add_parsers(sub) -> None:
    e = sub.add_parser("explain", help="why an app runs no more than it does now (asks a running serve)")
    e.add_argument("app", metavar="APP", help="the application id, e.g. application_1700000000000_0001")
    d = sub.add_parser("diff", help="what saving NEW.xml would do to the running queues, changing nothing")
    d.add_argument("file", metavar="NEW.xml", help="the allocation file you are about to save")
    d.add_argument("--horizon", metavar="DURATION", help="also play the file forward this far (e.g. 10m; s, m or "
                   "h), as `whatif --allocations` does: the apps whose start or finish moves")
    d.add_argument("--admin-token-file", default="~/.config/slotwise/admin.token", metavar="FILE",
                   help="serve's admin token (default ~/.config/slotwise/admin.token)")
    f = sub.add_parser("forecast", help="when an app will start and end, played forward from the live state "
                                        "(asks a running serve)")
    f.add_argument("app", metavar="APP", help="the application id, e.g. application_1700000000000_0001")
    w = sub.add_parser("whatif", help="what one change would do: the live state played forward without it and "
                                      "with it (asks a running serve; nothing live changes)")
    change = w.add_mutually_exclusive_group(required=True)
    change.add_argument("--set", metavar="QUEUE.SETTING=VALUE", help="e.g. root.adhoc.weight=3")
    change.add_argument("--move", nargs=2, metavar=("APP", "QUEUE"))
    change.add_argument("--priority", nargs=2, metavar=("APP", "N"))
    change.add_argument("--allocations", metavar="NEW.xml", help="a whole allocation file, as it would be saved")
    w.add_argument("--horizon", default="10m", metavar="DURATION", help="how far ahead to play (default 10m; s, m or h)")
    w.add_argument("--admin-token-file", default="~/.config/slotwise/admin.token", metavar="FILE",
                   help="serve's admin token (default ~/.config/slotwise/admin.token)")
    w.set_defaults(func=cmd_whatif)
    for p in (e, d, f, w):
        add_server(p)
        p.add_argument("--json", action="store_true", help="print the API's JSON answer")
    f.set_defaults(func=cmd_forecast)
    sh = sub.add_parser("shadow", help="a candidate allocation file deciding beside the live one, never acting "
                                       "(asks a running serve; start, stop and promote need the admin token)")
    sh.add_argument("action", choices=("start", "stop", "status", "promote", "report"),
                    help="start FILE (or replace the candidate), stop it, how it compares, write it as the "
                         "live allocation file, or report: the recorded --since window played under the live "
                         "file and the candidate, per queue (by the server, in a child process of its own, "
                         "under the candidate its shadow runs; with --event-log, here)")
    sh.add_argument("file", nargs="?", metavar="FILE",
                    help="with start (or report --event-log): the candidate allocation file")
    sh.add_argument("--since", default="1h", metavar="DURATION",
                    help="report: the window (default 1h; s, m or h; at most 168h)")
    sh.add_argument("--event-log", metavar="FILE",
                    help="report: play serve's event log (written with --record) here, not on the server")
    sh.add_argument("--candidate", metavar="FILE", help="report --event-log: the candidate (default: the file the "
                                                        "server's shadow runs, read on this host)")
    sh.add_argument("--max-cpu", type=float, default=600.0, metavar="S",
                    help="report --event-log: CPU seconds the plays may spend (default 600)")
    sh.add_argument("--max-bytes", type=int, default=2 * 1024**3, metavar="N",
                    help="report --event-log: the largest event log read (default 2 GiB)")
    sh.add_argument("--admin-token-file", default="~/.config/slotwise/admin.token", metavar="FILE",
                    help="serve's admin token (default ~/.config/slotwise/admin.token)")
    add_server(sh)
    sh.add_argument("--json", action="store_true", help="print the API's JSON answer")
    sh.set_defaults(func=cmd_shadow)
    e.set_defaults(func=cmd_explain)
    d.set_defaults(func=cmd_diff)
