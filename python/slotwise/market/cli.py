"""``slotwise dp``: signed Dynamic Priority requests from the shell, for
operators and for scripts (the paper's budget-optimising agents)."""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
import urllib.error
import urllib.request

from ..cliargs import add_server
from ..secretfile import read_secret
from .api import signed_query

#: subcommand -> (operation, positional args, signed)
COMMANDS = {
    "price": ("price", (), False),
    "time": ("time", (), False),
    "info": ("info", ("queue",), True),
    "infos": ("infos", (), True),
    "set-spending": ("setSpending", ("queue", "rate"), True),
    "add-budget": ("addBudget", ("queue", "amount"), True),
    "add-queue": ("addQueue", ("queue",), True),
    "remove-queue": ("removeQueue", ("queue",), True),
}

POSITIONAL_HELP = {"queue": "the queue: its name under the dynamic-priority queue (alice) or its full name",
                   "rate": "the spending rate, budget units per slot per allocation interval",
                   "amount": "budget units to add"}


def _params(op: str, args) -> list[tuple[str, str]]:
    if op in ("price", "time", "infos"):
        return [(op, "")]
    if op in ("info", "addQueue", "removeQueue"):
        return [(op, args.queue)]
    value = args.rate if op == "setSpending" else args.amount
    return [(op, value), ("queue", args.queue)]


def cmd_dp(args) -> int:
    op, _, signed = COMMANDS[args.dp_command]
    params = _params(op, args)
    headers = {}
    if signed:
        if not args.key_file:
            print(f"slotwise dp {args.dp_command}: --key-file FILE is required (the key of your line in "
                  "the server's --dp-acl file)", file=sys.stderr)
            return 2
        try:
            key = read_secret(os.path.expanduser(args.key_file), "key")
        except (OSError, ValueError) as e:
            print(f"slotwise dp: {e}", file=sys.stderr)
            return 2
        query, sig = signed_query(params, args.user, key)
        headers["Authorization"] = sig
    else:
        query = "&".join(k for k, _ in params)
    base = args.server
    path = "/scheduler" if args.xml else "/api/v1/dp"
    req = urllib.request.Request(f"{base}{path}", data=query.encode(), method="POST",
                                 headers={**headers, "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req, timeout=args.timeout) as r:
            status, body = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read().decode()
    except (urllib.error.URLError, OSError) as e:
        print(f"slotwise dp: cannot reach {base}: {getattr(e, 'reason', e)}", file=sys.stderr)
        return 1
    if args.xml:  # the paper's XML, as the server wrote it
        print(body.rstrip(), file=sys.stdout if status == 200 else sys.stderr)
        return 0 if status == 200 else 1
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {"error": f"HTTP {status}: {body.strip()[:300]}"}
    if status != 200 or "error" in answer:
        print(f"slotwise dp {args.dp_command}: refused (HTTP {status}): {answer.get('error')}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(answer, sys.stdout, indent=2)
        print()
    else:
        print(human(answer))
    return 0


def human(answer: dict) -> str:
    """An answer as an operator reads it: the price, the clock, or a table of queues."""
    if "price" in answer:
        return (f"price {answer['price']:g}: the sum of the spending rates of the queues with work "
                f"(server {answer['host']})")
    if "time" in answer:
        ms = int(answer["time"])
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))
        return f"server time {ms} ms ({when}, server {answer['host']})"
    rows = answer.get("queues") or []
    head = f"{'queue':<28} {'budget':>12} {'spending':>9} {'share':>7} {'used':>6} {'pending':>8}"
    lines = [head] + [f"{q['queue']:<28} {q['budget']:>12.2f} {q['spending']:>9g} {q['share']:>7.3f} "
                      f"{q['used']:>6g} {q['pending']:>8g}" for q in rows]
    return "\n".join(lines) if rows else "no Dynamic Priority queues"


def add_parsers(sub) -> None:
    d = sub.add_parser("dp", help="Dynamic Priority: the price, budgets and spending rates (signed requests)",
                       description="Talks to `slotwise serve`'s Dynamic Priority API. Signed commands need "
                                   "--key-file (your key from the server's --dp-acl file, mode 0600). Prints "
                                   "a table; --json the API's JSON, --xml the paper's XML.")
    dsub = d.add_subparsers(dest="dp_command", required=True, metavar="COMMAND")
    helps = {"price": "the current price (anyone)", "time": "the server's clock, ms (anyone)",
             "info": "a queue's budget, spending, share, used, pending (its holder or an admin)",
             "infos": "every queue (admin)", "set-spending": "set a queue's spending rate (its holder or an admin)",
             "add-budget": "add to a queue's budget (admin)", "add-queue": "open a queue (admin)",
             "remove-queue": "close a queue (admin)"}
    for name, (_op, positional, _signed) in COMMANDS.items():
        c = dsub.add_parser(name, help=helps[name])
        for p in positional:
            c.add_argument(p, metavar=p.upper(), help=POSITIONAL_HELP[p])
        add_server(c, "the server")
        c.add_argument("--user", default=os.environ.get("USER") or getpass.getuser(), metavar="NAME",
                       help="sign as this user (default $USER)")
        c.add_argument("--key-file", metavar="FILE", help="your key, alone in a mode-0600 file")
        out = c.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="print the JSON answer (/api/v1/dp)")
        out.add_argument("--xml", action="store_true", help="print the paper's XML answer (/scheduler)")
        c.add_argument("--timeout", type=float, default=10.0, metavar="S", help="give up after S seconds (default 10)")
        c.set_defaults(func=cmd_dp)
