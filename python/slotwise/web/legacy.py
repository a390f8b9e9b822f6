"""The REST paths of before one vocabulary (``/api/v1/pools``,
``/api/v1/jobs``, ``/api/v1/jobs/{id}/explain|pool|priority``) answer in
their old shape, so a client written for them keeps working: ``pool`` where
the new paths say ``queue`` (rows, explain, a move's answer), and explain's
hold codes and fields as they were named then. Fields added since come as
the new paths give them. docs/admin.md says which path answers what."""

from __future__ import annotations

#: Explain's hold codes under their old names.
OLD_CODES = {"queue_max_running_apps": "pool_max_running_apps", "queue_at_max_share": "pool_at_max_share"}
#: A hold's fields under their old names.
OLD_FIELDS = {"queue": "pool", "queue_usage": "pool_usage", "queue_fair_share": "pool_fair_share"}


def _renamed(d: dict, names: dict) -> dict:
    return {names.get(k, k): v for k, v in d.items()}


def pool_rows(rows: list[dict]) -> list[dict]:
    """``GET /api/v1/pools``: each queue row with ``pool`` for ``queue``."""
    return [_renamed(r, {"queue": "pool"}) for r in rows]


def job_rows(rows: list[dict]) -> list[dict]:
    """``GET /api/v1/jobs``: each app row with ``pool`` for ``queue``."""
    return [_renamed(r, {"queue": "pool"}) for r in rows]


def job_explain(out: dict) -> dict:
    """``GET /api/v1/jobs/{id}/explain``: ``pool`` for ``queue``, and the
    holds' old codes and field names."""
    old = _renamed(out, {"queue": "pool"})
    old["holds"] = [_renamed({**h, "code": OLD_CODES.get(h["code"], h["code"])}, OLD_FIELDS)
                    for h in out.get("holds", [])]
    return old


def moved(answer: dict) -> dict:
    """``POST /api/v1/jobs/{id}/pool``: ``{"id", "pool"}``."""
    return _renamed(answer, {"queue": "pool"})
