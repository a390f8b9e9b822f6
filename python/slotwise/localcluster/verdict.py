"""What ``slotwise cluster submit`` says of a job: where it went and by which
placement rule (asked of the running ``slotwise serve``), and how it ended
(the ResourceManager's report and diagnostics, which carry the policy's
rejection), in words, with no "state None" when the cluster is gone."""

from __future__ import annotations

import urllib.parse

from ..placement import queue_path


def placement_of(server: str, app_id: str) -> tuple[dict | None, str | None]:
    """(how serve placed the app, None) or (None, why it could not say)."""
    from ..client import ServerError, call

    try:
        return call(server, f"/api/v1/apps/{urllib.parse.quote(app_id, safe='')}/placement", timeout=10), None
    except ServerError as e:
        return None, str(e)


def _rule(r: dict) -> str:
    where = f"line {r['line']}" if r.get("line") else "the built-in policy"
    return f"rule {r['rule']} ({where})"


def placed_lines(app_id: str, asked: str | None, queue: str | None, record: dict | None,
                 unknown_why: str | None = None) -> list[str]:
    """"submitted APP to root.x (placed by rule R (line N))", and when the
    queue asked for is not the one it went to, each earlier rule's reason."""
    if record and record.get("queue"):
        placed = next((r for r in reversed(record["rules"]) if r["outcome"] == "placed"), None)
        by = f" (placed by {_rule(placed)})" if placed else ""
        lines = [f"submitted {app_id} to {record['queue']}{by}"]
        wanted = queue_path(asked) if asked and asked != "default" else None
        if wanted and wanted != record["queue"]:
            skipped = [r for r in record["rules"] if r["outcome"] == "skipped"]
            if any(r["rule"] == "specified" for r in skipped):
                lines.append(f"  queue {wanted} does not exist and the placement policy does not create it; "
                             f"the app went to {record['queue']} instead")
            for r in skipped:
                lines.append(f"  {_rule(r)} passed it on: {r['why']}")
        return lines
    if record and record.get("rejected"):
        return [f"{app_id} was rejected by the placement policy: {record['rejected']}"]
    line = f"submitted {app_id} to {queue or asked}"
    if queue and asked and queue_path(asked) != queue:
        line += f" (asked for {queue_path(asked)}; " + (
            f"the policy server cannot say why: {unknown_why})" if unknown_why else "placed there by the policy)")
    return [line]


def outcome_line(result, *, master: str, master_up: bool, mrv1: bool, rejected: str | None = None) -> str:
    """The last line: SUCCEEDED, FAILED with the master's diagnostics,
    REJECTED with the policy's reason (the master's diagnostics, else
    ``rejected``: the policy's own record), or that the cluster went down."""
    what = result.app_id or ("the job" if mrv1 else "the application")
    log = f"client log {result.log}"
    if not result.app_id:
        return (f"FAILED: the job client exited ({result.returncode}) before it submitted "
                f"{'a job' if mrv1 else 'an application'}; {log}")
    if result.state is None:
        if not master_up:
            return f"{what} did not finish: the cluster went down before the job finished; {log}"
        return (f"{what}: the {master} has no report of it (client exit {result.returncode}); {log}")
    diagnostics = " ".join((getattr(result, "diagnostics", None) or "").split())
    if rejected and not result.succeeded and not diagnostics.startswith("Rejected by"):
        diagnostics = f"Rejected by the Slotwise policy: {' '.join(rejected.split())}"
    if diagnostics.startswith("Rejected by"):
        return f"{what} REJECTED: {diagnostics[:600]}; {log}"
    verdict = "SUCCEEDED" if result.succeeded else (result.final_status or result.state or "FAILED")
    if verdict == "SUCCEEDED" and not result.succeeded:
        verdict = "FAILED"  # the master says it succeeded, the client did not
    facts = [f"queue {result.queue}", f"user {result.app_user}"]
    if not result.succeeded:
        facts.insert(0, f"{master} state {result.state}" + ("" if mrv1 else f"/{result.final_status}"))
        facts.append(f"client exit {result.returncode}")
    line = f"{what} {verdict} in {result.seconds:.1f} s ({', '.join(facts)})"
    if diagnostics and not result.succeeded:
        line += f": {diagnostics[:600]}"
    return f"{line}; {log}"
