"""``slotwise explain`` and ``slotwise diff``: questions to a running
``slotwise serve``, over its REST API (docs/admin.md)."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from .explain import as_text
from .cliargs import add_server
from .secretfile import read_secret


class ServerError(Exception):
    pass


def call(server: str, path: str, body: bytes | None = None, token: str | None = None,
         timeout: float = 60.0) -> dict:
    """``path`` of serve's API at ``server`` (a base URL, as --server gives it),
    JSON in and out; ServerError with the server's own reason."""
    url = f"{server}{path}"
    headers = {"Content-Type": "application/xml"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            detail = json.load(e).get("detail")
        except (ValueError, AttributeError):
            detail = None
        raise ServerError(detail or f"{url}: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ServerError(f"no Slotwise server answers at {server} ({reason}); start `slotwise serve` "
                          "or give --server HOST:PORT") from None


def _dump(out: dict, status: int) -> int:
    """--json: the API's answer as it came."""
    json.dump(out, sys.stdout, indent=2)
    print()
    return status


def cmd_explain(args) -> int:
    try:
        out = call(args.server, f"/api/v1/apps/{urllib.parse.quote(args.app, safe='')}/explain")
    except ServerError as e:
        print(f"slotwise explain: {e}", file=sys.stderr)
        return 1
    if args.json:
        return _dump(out, 0)
    print(as_text(out))
    return 0


def cmd_diff(args) -> int:
    try:
        with open(args.file, "rb") as f:
            body = f.read()
    except OSError as e:
        print(f"slotwise diff: {args.file}: {e.strerror or e}", file=sys.stderr)
        return 1
    try:
        token = _admin_token(args.admin_token_file)
        out = call(args.server, "/api/v1/config/dry-run", body, token)
    except ServerError as e:
        print(f"slotwise diff: {e}", file=sys.stderr)
        return 1
    if args.json:
        return _dump(out, 0 if out["valid"] else 1)
    for line in out["errors"] + out["conflicts"]:
        print(line, file=sys.stderr)
    if out["errors"]:
        return 1
    for w in out["warnings"]:
        print(w)
    if out["conflicts"]:
        print(f"{args.file}: a reload would be refused; nothing would change", file=sys.stderr)
        return 1
    rule = "YARN's rule" if out.get("share_rule") == "yarn" else "the design document's rule"
    print(f"{args.file} against the live demands (fair shares by {rule}; memory MB):")
    print(f"{'queue':<32} {'weight':>11} {'fair share':>21} {'steady fair share':>21}")
    for p in out["queues"]:
        print(f"{p['queue']:<32} {_change(p, 'weight', None):>11} {_change(p, 'fair_share', 'memory_mb'):>21} "
              f"{_change(p, 'steady_fair_share', 'memory_mb'):>21}" + ("" if p["status"] == "kept" else
                                                                         f"  ({p['status']})"))
    taken = out["newly_preemptable"]
    off = "" if out.get("preemption", True) else " (preemption is off in this server)"
    if taken:
        print(f"would become preemptable: {len(taken)} container(s){off}")
        for c in taken:
            print(f"  - {c['container']} of {c['app']} in {c['queue']} on {c['node']} "
                  f"({c['resource']['memory_mb']:.0f} MB)")
    else:
        print("no container would become preemptable")
    return 0


def _admin_token(path: str) -> str | None:
    """The admin token serve wrote (a dry run copies the engine: admin only);
    None if there is none here, and the server says so."""
    try:
        return read_secret(os.path.expanduser(path), "admin token")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ServerError(str(e)) from None


def _change(row: dict, key: str, dim: str | None) -> str:
    def one(v):
        if v is None:
            return "-"
        v = v[dim] if dim else v
        return "unlimited" if v is None else f"{v:g}"

    before, after = one(row[f"{key}_before"]), one(row[f"{key}_after"])
    return before if before == after else f"{before} -> {after}"


def add_parsers(sub) -> None:
    e = sub.add_parser("explain", help="why an app runs no more than it does now (asks a running serve)")
    e.add_argument("app", metavar="APP", help="the application id, e.g. application_1700000000000_0001")
    d = sub.add_parser("diff", help="what saving NEW.xml would do to the running queues, changing nothing")
    d.add_argument("file", metavar="NEW.xml", help="the allocation file you are about to save")
    d.add_argument("--admin-token-file", default="~/.config/slotwise/admin.token", metavar="FILE",
                   help="serve's admin token (default ~/.config/slotwise/admin.token)")
    for p in (e, d):
        add_server(p)
        p.add_argument("--json", action="store_true", help="print the API's JSON answer")
    e.set_defaults(func=cmd_explain)
    d.set_defaults(func=cmd_diff)
