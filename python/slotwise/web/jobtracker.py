"""The JobTracker's /scheduler page, drawn here.

Hadoop 1's Fair Scheduler page lists the pools and the running jobs with
their fair shares, and its advanced view moves a job or sets its priority.
Slotwise's JobTracker shim only frames this fragment with its link's status
(SlotwiseSchedulerServlet): the shares, the queue rules and the actions are
the policy server's, so they are written once, here and in admin.py, not
again in Java.  GET gives the fragment; POST (the servlet forwards the
operator's form as JSON, the token as ``Authorization: Bearer``) acts and
gives the fragment with what was done.  The token is checked before the
body is read, as for every admin call.
"""

from __future__ import annotations

import math
import time
from html import escape

from ..admin import AdminError, SchedulerService

#: MRv1's priorities by name, and their value on the wire (docs/mrv1.md).
PRIORITIES = {"VERY_HIGH": 2, "HIGH": 1, "NORMAL": 0, "LOW": -1, "VERY_LOW": -2}
PRIORITY_NAMES = {v: k for k, v in PRIORITIES.items()}


def act(service: SchedulerService, job: str, queue: str | None, priority: str | None) -> tuple[int, str]:
    """Moves ``job`` and/or sets its priority (a name of PRIORITIES); the
    HTTP status and what happened, in words."""
    queue, priority = (queue or "").strip(), (priority or "").strip()
    if not queue and not priority:
        return 400, "Choose a queue, a priority or both; nothing was changed."
    if priority and priority not in PRIORITIES:
        return 400, f"A priority is one of {', '.join(PRIORITIES)}; nothing was changed."
    done: list[str] = []
    try:
        if queue:
            done.append(f"moved {job} to {service.move_app(job, queue)}")
        if priority:
            service.set_priority(job, PRIORITIES[priority])
            done.append(f"set {job}'s priority to {priority}")
    except AdminError as e:
        what = f"setting {job}'s priority" if done or not queue else f"moving {job} to {queue}"
        if not done:
            return e.status, f"slotwise serve refused {what} ({e.status}): {e.message}; nothing was changed."
        return e.status, f"Done: {done[0]}. But slotwise serve refused {what} ({e.status}): {e.message}; " \
                         "the priority stays as it was."
    return 200, f"Done: {'; '.join(done)}."


def fragment(service: SchedulerService, outcome: str | None = None, ok: bool = True) -> str:
    """The page below the servlet's status line: queues, jobs, the form."""
    out = []
    if outcome:
        out.append(f'<p id="outcome" class="{"done" if ok else "refused"}"><b>{escape(outcome)}</b></p>')
    out.append('<h2>Queues</h2><table border="1" id="queues"><tr><th>queue</th><th>weight</th>'
               '<th>running jobs</th><th>jobs</th>' + "".join(
                   f"<th>{k} {kind}</th>" for kind in ("maps", "reduces")
                   for k in ("min", "max", "fair", "running", "demand")) + "</tr>")
    for q in service.queues():
        cells = [escape(q["queue"]), _num(q["weight"]), q["running_apps"], q["apps"]]
        for dim in ("map_slots", "reduce_slots"):
            cells += [_num(q[k].get(dim)) for k in ("min_share", "max_share", "fair_share", "usage", "demand")]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append('</table><p>In slots, from the policy server\'s tree now; max "-": no limit.</p>')
    apps = sorted(service.apps(), key=lambda a: a["submit_time"])
    out.append('<h2>Running jobs</h2><table border="1" id="jobs"><tr><th>submitted</th><th>job</th><th>user</th>'
               '<th>name</th><th>queue</th><th>priority</th><th>running maps</th><th>demand maps</th>'
               '<th>fair maps</th><th>running reduces</th><th>demand reduces</th><th>fair reduces</th></tr>')
    for a in apps:
        jid = escape(a["id"])
        cells = [time.strftime("%b %d, %H:%M:%S", time.localtime(a["submit_time"])),
                 f'<a href="/jobdetails.jsp?jobid={jid}">{jid}</a>', escape(a["user"]), escape(a.get("name") or ""),
                 escape(a["queue"]), PRIORITY_NAMES.get(a["priority"], str(a["priority"]))]
        for dim in ("map_slots", "reduce_slots"):
            cells += [_num(a[k].get(dim)) for k in ("usage", "demand", "fair_share")]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    if not apps:
        out.append("<p>No running jobs.</p>")
        return "\n".join(out)
    jobs = "".join(f"<option>{escape(a['id'])}</option>" for a in apps)
    leaves = "".join(f'<option value="{escape(q)}">' for q in service.leaf_queues())
    prios = "".join(f"<option>{p}</option>" for p in PRIORITIES)
    out.append('<h2>Move a job or set its priority</h2><form id="admin" method="post" action="/scheduler" '
               f'autocomplete="off"><label>Job <select name="job">{jobs}</select></label> '
               '<label>to queue <input name="queue" list="leaf-queues" placeholder="(keep)"></label>'
               f'<datalist id="leaf-queues">{leaves}</datalist> <label>priority <select name="priority">'
               f'<option value="">(keep)</option>{prios}</select></label> <label>admin token '
               '<input type="password" name="token" required></label> <button>Apply</button></form>'
               "<p>The admin token is <code>slotwise serve</code>'s (<code>--admin-token-file</code>); serve "
               "checks it and acts, as its own console does. It is not kept here, but it crosses the network "
               "as this page does: over plain HTTP unless the JobTracker's web server is behind TLS.</p>")
    return "\n".join(out)


def _num(x) -> str:
    if x is None or math.isinf(x):
        return "-"
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"
