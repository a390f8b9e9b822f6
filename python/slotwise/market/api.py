"""The Dynamic Priority REST API of the paper (Table 1, Listing 1.1), with
requests signed as in AWS Query Authentication.

A request is a query string with one operation: ``price`` or ``time``
(anyone), ``info=QUEUE`` and ``setSpending=RATE&queue=QUEUE`` (the queue's
holder or an admin), ``infos``, ``addBudget=AMOUNT&queue=QUEUE``,
``addQueue=QUEUE``, ``removeQueue=QUEUE`` (admin).  Signed requests end with
``&user=USER&timestamp=MILLIS``; the ``Authorization`` header is the Base64
HMAC-SHA1 of the whole query string, as sent, under the user's key.  A
timestamp not newer than the user's last accepted one, or outside the
window, is refused: a captured request cannot be played again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape, quoteattr

from .ledger import Market, MarketError

OPEN = ("price", "time")
QUEUE_OPS = ("info", "setSpending")
ADMIN_OPS = ("infos", "addBudget", "addQueue", "removeQueue")
OPERATIONS = OPEN + QUEUE_OPS + ADMIN_OPS
MAX_QUERY = 4096


def sign(query: str, key: str) -> str:
    """The Authorization header value for ``query`` (as sent) under ``key``."""
    return base64.b64encode(hmac.new(key.encode(), query.encode(), hashlib.sha1).digest()).decode()


def signed_query(params: list[tuple[str, str]], user: str, key: str, now_ms: int | None = None) -> tuple[str, str]:
    """(query string, signature) for ``params`` sent as ``user``."""
    from urllib.parse import urlencode

    ts = int(time.time() * 1000) if now_ms is None else now_ms
    query = urlencode(list(params) + [("user", user), ("timestamp", str(ts))])
    return query, sign(query, key)


@dataclass
class Answer:
    status: int
    #: The operation's result: {"host", "price"|"time"|"queues"} or {"error"}.
    body: dict

    def xml(self) -> str:
        b = self.body
        if "error" in b:
            return f"<error>{escape(b['error'])}</error>\n"
        out = ["<QueueInfo>", f"<host>{escape(b['host'])}</host>"]
        for k in ("price", "time"):
            if k in b:
                out.append(f"<{k}>{b[k]}</{k}>")
        for q in b.get("queues", []):
            out.append(f"<queue name={quoteattr(q['queue'])}>")
            for k in ("budget", "spending", "share", "used", "pending"):
                out.append(f"<{k}>{_num(q[k])}</{k}>")
            out.append("</queue>")
        out.append("</QueueInfo>")
        return "\n".join(out) + "\n"


def _num(x) -> str:
    return repr(float(x)) if isinstance(x, float) else str(x)


class DpApi:
    """Checks a request and carries it out on the market.  Never raises for
    bad input: every answer is an Answer (400 bad request, 401 not
    authenticated, 403 not allowed), and a refused request changes nothing."""

    def __init__(self, market: Market, acl=None, window_s: float = 300.0, host: str | None = None) -> None:
        self.market = market
        self.acl = acl
        self.window_ms = int(window_s * 1000)
        self.host = host or socket.gethostname()

    def handle(self, query: str, authorization: str | None, now_ms: int | None = None) -> Answer:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        if len(query) > MAX_QUERY:
            return self._err(400, f"query over {MAX_QUERY} characters")
        try:
            params = parse_qsl(query, keep_blank_values=True, max_num_fields=32)
        except ValueError as e:
            return self._err(400, f"bad query string: {e}")
        ops = [k for k, _ in params if k in OPERATIONS]
        if len(ops) != 1:
            return self._err(400, f"exactly one operation expected ({', '.join(OPERATIONS)}); got "
                                  f"{', '.join(ops) or 'none'}")
        op = ops[0]
        args = dict(params)
        if len(args) != len(params):
            return self._err(400, "a parameter appears twice")
        if op == "price":
            return Answer(200, {"host": self.host, "price": self.market.price()})
        if op == "time":
            return Answer(200, {"host": self.host, "time": now_ms})
        signer, why = self._authenticate(query, params, authorization, now_ms)
        if signer is None:
            return self._err(401, why)
        # Only a request carried out advances the signer's last timestamp.
        answer = self.market.signed(signer.user, int(params[-1][1]), lambda: self._carry_out(op, args, signer))
        if answer is None:
            return self._err(401, "timestamp not newer than the last accepted request (replay?)")
        return answer

    def _carry_out(self, op: str, args: dict, signer) -> tuple[Answer, bool]:
        try:
            answer = self._run(op, args, signer)
        except MarketError as e:
            answer = self._err(400, str(e))
        return answer, answer.status == 200

    # ---------------------------------------------------------------- auth
    def _authenticate(self, query: str, params, authorization: str | None, now_ms: int):
        if self.acl is None:
            return None, "this server has no Dynamic Priority ACL (slotwise serve --dp-acl FILE)"
        if len(params) < 2 or params[-2][0] != "user" or params[-1][0] != "timestamp":
            return None, "a signed request ends with &user=USER&timestamp=MILLIS"
        user, ts_text = params[-2][1], params[-1][1]
        if not authorization:
            return None, "missing Authorization header (Base64 HMAC-SHA1 of the query string)"
        signer = self.acl.signer(user)
        # Compare against a signature either way, so an unknown user costs the same.
        expected = sign(query, signer.key if signer else "-" * 32)
        if not hmac.compare_digest(expected.encode(), authorization.strip().encode()) or signer is None:
            return None, "bad signature"
        try:
            ts = int(ts_text)
        except ValueError:
            return None, f"timestamp: not milliseconds: {ts_text!r}"
        if abs(now_ms - ts) > self.window_ms:
            return None, f"timestamp outside the {self.window_ms // 1000} s window (server time {now_ms})"
        return signer, None

    # ----------------------------------------------------------- operations
    def _run(self, op: str, args: dict, signer) -> Answer:
        m = self.market
        if op in ADMIN_OPS and not signer.admin:
            return self._err(403, f"{op} is for admins; {signer.user} is a {signer.role}")
        if op == "infos":
            return self._queues(m.infos())
        if op == "addQueue":
            return self._queues([m.info(m.add_queue(args["addQueue"]))])
        queue = args.get("queue") if op in ("setSpending", "addBudget") else args[op]
        if not queue:
            return self._err(400, f"{op} needs &queue=QUEUE")
        q = m.resolve(queue)
        if op in QUEUE_OPS and not self.acl.may_use(signer.user, q, m.holder(q)):
            return self._err(403, f"{signer.user} does not hold {q}")
        if op == "info":
            return self._queues([m.info(q)])
        if op == "setSpending":
            m.set_spending(q, args["setSpending"])
        elif op == "addBudget":
            m.add_budget(q, args["addBudget"])
        elif op == "removeQueue":
            row = m.info(q)
            m.remove_queue(q)
            return self._queues([row])
        return self._queues([m.info(q)])

    def _queues(self, rows) -> Answer:
        return Answer(200, {"host": self.host, "queues": rows})

    def _err(self, status: int, message: str) -> Answer:
        return Answer(status, {"error": message})
