"""The web UI and REST API.

``create_app`` wires a SchedulerService, the admin token and the metrics
into one FastAPI app: HTML pages from Jinja2 templates, JSON under /api/v1
(described at /openapi.json), Prometheus text at /metrics.  Reads are open
(bind to loopback, the default, or put it behind your proxy); every change
needs the admin token, as ``Authorization: Bearer TOKEN``, or the UI's
session cookie (a random id with an expiry, kept server-side) plus the
``X-Slotwise-CSRF`` header a cross-site form cannot send.  A request's body
is read only after that check (but the login form's, which carries the
token), and never past its cap (413; docs/admin.md).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from urllib.parse import parse_qsl

from fastapi import Depends, FastAPI, Header, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, TypeAdapter, ValidationError

from .. import __version__
from ..admin import FILE_NAME_HEADER, MAX_FILE_NAME, AdminError, AdminToken, SchedulerService, Sessions, sent_file_name
from ..config.loader import MAX_FILE_BYTES
from ..market.api import MAX_QUERY, Answer
from . import jobtracker, legacy, market_charts, rm_scheduler, schemas, shadow_panel, share_charts, views
from ..forecaster import Forecaster
from ..forecaster import as_text as forecast_text
from ..forecaster import counterfactual_text
from .history import History

HERE = os.path.dirname(__file__)
COOKIE = "slotwise_session"
CSRF_HEADER = "X-Slotwise-CSRF"

# Every body has a cap (docs/admin.md).  A body is read only by the handler's
# own dependency, after the admin check: never by FastAPI before it (no route
# declares a pydantic or Form body parameter).
#: An admin JSON action (move, priority): a few dozen bytes in practice.
MAX_JSON_BYTES = 64 * 1024
#: An allocation file for dry-run: the allocation-file parser's own limit.
MAX_DRY_RUN_BYTES = MAX_FILE_BYTES
#: The UI's login form (``admin_token=...``): read before any check, as it
#: carries the token itself, so it is kept small.
MAX_LOGIN_BYTES = 4096
#: A signed Dynamic Priority request as a POST body: the API's own limit.
MAX_DP_BYTES = MAX_QUERY
#: An unsigned Dynamic Priority POST body can only be ``price`` or ``time``.
MAX_DP_UNSIGNED_BYTES = 64


def _finite(x):
    if isinstance(x, float) and math.isinf(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


async def read_body(request: Request, limit: int, what: str = "the body") -> bytes:
    """The request's body, at most ``limit`` bytes: a Content-Length over it
    answers 413 before a byte is read, and a body without one (chunked) is
    read a chunk at a time and refused as soon as it passes the limit."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise AdminError(400, f"bad Content-Length {declared[:40]!r}") from None
        if size > limit:
            raise AdminError(413, f"{what} is over {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise AdminError(413, f"{what} is over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class _NonFinite:
    """Where a JSON body held NaN, Infinity, -Infinity or a number too large
    for a float (1e999): kept as a marker to name its field in the error."""

    def __init__(self, text: str) -> None:
        self.text = text


def _parse_float(text: str):
    x = float(text)
    return x if math.isfinite(x) else _NonFinite(text)


def _non_finite(doc) -> tuple[str, str] | None:
    """(field path, text) of the first non-finite number in ``doc``, walked
    without recursion (a deeply nested body must not overflow the stack)."""
    todo = [("", doc)]
    while todo:
        path, x = todo.pop()
        if isinstance(x, _NonFinite):
            return path, x.text
        if isinstance(x, dict):
            todo.extend((f"{path}.{k}" if path else str(k), v) for k, v in reversed(list(x.items())))
        elif isinstance(x, list):
            todo.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(x))))
    return None


def _field(loc) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return f"field '{path}'" if path else "the body"


def parse_json_body(raw: bytes, model: type[BaseModel]) -> BaseModel:
    """``raw`` as ``model``; AdminError 422 with one line naming the field
    otherwise.  NaN and Infinity (which Python's json accepts) are refused."""
    try:
        doc = json.loads(raw, parse_constant=_NonFinite, parse_float=_parse_float)
    except RecursionError:
        raise AdminError(422, "the body is not JSON this API accepts: nested too deep") from None
    except ValueError as e:  # JSONDecodeError, bad UTF-8, an int of over 4,300 digits
        raise AdminError(422, f"the body is not JSON: {str(e).splitlines()[0]}") from None
    bad = _non_finite(doc)
    if bad is not None:
        path, text = bad
        where = f"field '{path}'" if path else "the body"
        raise AdminError(422, f"{where}: {text} is not a finite number (JSON has no NaN or Infinity)")
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise AdminError(422, "; ".join(f"{_field(err['loc'])}: {err['msg']}" for err in e.errors())) from None


def _json_request_body(model: type[BaseModel]) -> dict:
    """The OpenAPI requestBody of a handler that reads ``model`` itself."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": model.model_json_schema()}}}}


def create_app(service: SchedulerService, token: AdminToken, metrics=None, refresh_seconds: float = 2.0,
               dp=None, history: History | None = None, forecaster: Forecaster | None = None,
               shadow=None) -> FastAPI:
    """``dp``: the Dynamic Priority API (slotwise.market.api.DpApi), served
    at /scheduler (XML, the paper's) and /api/v1/dp (JSON); None: 404.
    ``history``: the queues' samples behind the console's charts; None: a
    History of ``service`` sampled every 5 s by its own thread.
    ``forecaster``: the apps' forecasts; None: one of ``service`` made
    every 5 s by its own thread.  /docs and
    /redoc load their scripts from this server (fastapi-offline), no CDN."""
    history = history or History(service)
    if shadow is None:  # a shadow may still be started at run time; promote needs serve's file
        from ..shadow_service import ShadowService

        shadow = ShadowService(service.core, None)
    forecaster = forecaster or Forecaster(service)

    @contextlib.asynccontextmanager
    async def lifespan(a):
        async with history.lifespan(a), forecaster.lifespan(a):
            yield

    app = FastAPIOffline(title="Slotwise", version=__version__, lifespan=lifespan,
                         description="Queues, apps and the allocation file of a running Slotwise scheduler. "
                                     "Mutating calls need the admin token (Authorization: Bearer TOKEN).")
    templates = Jinja2Templates(directory=os.path.join(HERE, "templates"))
    templates.env.filters["breakable"] = views.breakable
    dry_runs = threading.Lock()  # one at a time: each copies the engine
    sessions = Sessions()
    app.mount("/static", StaticFiles(directory=os.path.join(HERE, "static")), name="static")

    def admin(request: Request, authorization: str | None = Header(default=None),
              csrf: str | None = Header(default=None, alias=CSRF_HEADER)) -> None:
        if authorization and authorization.lower().startswith("bearer "):
            if token.check(authorization[7:].strip()):
                return
        elif sessions.valid(request.cookies.get(COOKIE)) and csrf:
            return
        raise AdminError(401, "admin token required (Authorization: Bearer TOKEN)")

    # Each reads its body only once ``admin`` has passed (a sub-dependency runs first).
    def json_body(model: type[BaseModel]):
        async def body(request: Request, _: None = Depends(admin)) -> BaseModel:
            return parse_json_body(await read_body(request, MAX_JSON_BYTES), model)
        return body

    def sent_name(name: str | None = Header(default=None, alias=FILE_NAME_HEADER,
                                            description="the file's name as the client knows it (percent-encoded "
                                                        f"UTF-8, at most {MAX_FILE_NAME} characters): the "
                                                        "name its errors give it"),
                  _: None = Depends(admin)) -> str:
        return sent_file_name(name)

    async def allocation_file(request: Request, _: None = Depends(admin)) -> str:
        raw = await read_body(request, MAX_DRY_RUN_BYTES, "the file")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise AdminError(400, "the file is not UTF-8") from None

    @app.exception_handler(AdminError)
    async def _admin_error(_request: Request, e: AdminError):
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
        return JSONResponse({"detail": e.message}, status_code=e.status, headers=headers)

    # ------------------------------------------------------------------- API
    @app.get("/api/v1/queues", response_model=list[schemas.QueueOut], tags=["read"])
    def get_queues():
        """Every queue: weight, min share, fair shares, usage, demand, starvation.
        While the master is gone its starvation clocks stand at the moment the
        link was lost: nothing is preempted until it is back."""
        return _finite(service.queues())

    @app.get("/api/v1/apps", response_model=list[schemas.AppOut], tags=["read"])
    def get_apps():
        """Every app the scheduler knows, oldest first."""
        return _finite(service.apps())

    @app.get("/api/v1/cluster", response_model=schemas.ClusterOut, tags=["read"])
    def get_cluster():
        """The cluster as the scheduler sees it: capacity, nodes, usage."""
        return _finite(service.cluster())

    @app.get("/api/v1/nodes", response_model=list[schemas.NodeOut], tags=["read"])
    def get_nodes():
        """Each node: capacity, in use, free room, containers, room held for a starved queue."""
        return _finite(service.nodes())

    @app.get("/api/v1/history", response_model=schemas.HistoryOut, tags=["read"])
    def get_history():
        """Each queue's usage and shares as this server sampled them (every few
        seconds, the last hour at most; memory in MB on YARN, map and reduce
        slots together on MRv1): what the console's charts draw."""
        return _finite(history.series())

    @app.get("/api/v1/config", response_model=schemas.ConfigOut, tags=["read"])
    def get_config():
        """The allocation file in force, when it was loaded, and the errors of
        the file on disk if it does not parse (the last good one stays)."""
        return service.config()

    @app.get("/api/v1/status", response_model=schemas.StatusOut, tags=["read"])
    def get_status():
        """The link to the ResourceManager: is this server its policy, is the RM
        scheduling without Python right now (since when, why), and counts."""
        return service.link_status()

    @app.get("/api/v1/apps/{app_id}/placement", response_model=schemas.PlacementOut, tags=["read"],
             responses={404: {"model": schemas.ErrorOut}})
    def placement(app_id: str):
        """How the placement policy placed an app (or rejected it): the queue it
        asked for and each rule tried; `slotwise cluster submit` prints it."""
        return service.placement(app_id)

    @app.get("/api/v1/apps/{app_id}/explain", response_model=schemas.ExplainOut, tags=["read"],
             responses={404: {"model": schemas.ErrorOut}})
    def explain_app(app_id: str):
        """Why an app runs no more than it does now, in words and figures: a
        running-app limit, a max share, maxAMShare, delay scheduling, no node
        with room, its turn, Python away; and why its containers were preempted."""
        out = service.explain_app(app_id)
        if out.get("state") not in ("finished", "rejected"):
            f = forecaster.of(app_id)
            out = {**out, "forecast": forecast_text(f) if f is not None else None}
        if out.get("state") in ("pending", "waiting to run"):
            cf = service.core.views.counterfactual(app_id)
            out["counterfactual"] = counterfactual_text(cf) if cf else None
        return _finite(out)

    @app.get("/api/v1/apps/{app_id}/forecast", response_model=schemas.ForecastOut, tags=["read"],
             responses={404: {"model": schemas.ErrorOut}})
    def forecast_app(app_id: str):
        """When an app starts and ends, played forward from the live state in
        the background every few seconds (the last forecast made)."""
        r = forecaster.of(app_id)
        if r is None:
            raise AdminError(404, f"no forecast for {app_id}: not scheduled now, or not forecast yet "
                                  f"(forecasts are made every {forecaster.every:g} s)")
        return {**r, "text": forecast_text(r)}

    @app.get("/api/v1/forecasts", response_model=schemas.ForecastsOut, tags=["read"])
    def forecasts():
        """Every app's last forecast (as /api/v1/apps/{id}/forecast gives
        one), the most recently submitted first, at most 10,000."""
        rows = sorted(forecaster.all().values(), key=lambda r: r["app"], reverse=True)[:10_000]
        return {"every_s": forecaster.every, "apps": [{**r, "text": forecast_text(r)} for r in rows]}

    @app.post("/api/v1/config/dry-run", response_model=schemas.DryRunOut, tags=["admin"],
              responses={400: {"model": schemas.ErrorOut}, 401: {"model": schemas.ErrorOut},
                         409: {"model": schemas.ErrorOut},
                         413: {"model": schemas.ErrorOut}}, dependencies=[Depends(admin)],
              openapi_extra={"requestBody": {"required": True, "content": {"application/xml": {
                  "schema": {"type": "string", "maxLength": MAX_DRY_RUN_BYTES}}}}})
    def dry_run(source: str = Depends(sent_name), text: str = Depends(allocation_file)):
        """Send an allocation file (the body, as is; at most 4 MiB, the allocation
        file's own limit: 413 over it): what saving it would do to the live
        demands, changing nothing.  Its errors name it as the X-Slotwise-File-Name
        header does (`slotwise diff` sends the path it was given), else "the file
        sent".  Admin: it copies the engine, which holds the scheduler's
        lock for that long (docs/admin.md)."""
        if not dry_runs.acquire(blocking=False):
            raise AdminError(409, "another dry run is under way; try again when it is done")
        try:
            return _finite(service.dry_run(text, source))
        finally:
            dry_runs.release()

    async def whatif_body(request: Request, _: None = Depends(admin)) -> schemas.WhatIfIn:
        return parse_json_body(await read_body(request, MAX_DRY_RUN_BYTES + 4096), schemas.WhatIfIn)

    @app.post("/api/v1/whatif", response_model=schemas.WhatIfOut, tags=["admin"],
              responses={400: {"model": schemas.ErrorOut}, 401: {"model": schemas.ErrorOut},
                         409: {"model": schemas.ErrorOut}, 413: {"model": schemas.ErrorOut}},
              dependencies=[Depends(admin)], openapi_extra=_json_request_body(schemas.WhatIfIn))
    def whatif(body: schemas.WhatIfIn = Depends(whatif_body)):
        """What one change would do: the live state played forward without it
        and with it (a queue setting, an app moved, an app's priority, a whole
        allocation file), per app its start and finish both ways; nothing live
        changes. Admin: it copies the engine, as a dry run does."""
        if not dry_runs.acquire(blocking=False):
            raise AdminError(409, "another dry run or what-if is under way; try again when it is done")
        try:
            return _finite(service.whatif(body))
        finally:
            dry_runs.release()

    @app.get("/api/v1/shadow", response_model=schemas.ShadowOut, tags=["read"])
    def get_shadow():
        """The shadow policy: a candidate file deciding beside the live one on
        the same heartbeats, never acting; how often it agreed, per queue what
        each side gave over the last 10 minutes, the last diverging decisions."""
        return _finite(shadow.status())

    async def shadow_body(request: Request, _: None = Depends(admin)) -> schemas.ShadowIn:
        return parse_json_body(await read_body(request, MAX_DRY_RUN_BYTES + 4096), schemas.ShadowIn)

    def _shadow_call(fn, *args):
        from ..shadow_service import ShadowError

        try:
            return _finite(fn(*args))
        except ShadowError as e:
            raise AdminError(e.status, e.message) from None

    @app.post("/api/v1/shadow", response_model=schemas.ShadowOut, tags=["admin"],
              responses={400: {"model": schemas.ErrorOut}, 401: {"model": schemas.ErrorOut},
                         413: {"model": schemas.ErrorOut}},
              dependencies=[Depends(admin)], openapi_extra=_json_request_body(schemas.ShadowIn))
    def start_shadow(body: schemas.ShadowIn = Depends(shadow_body), source: str = Depends(sent_name)):
        """Start (or replace) a shadow: the candidate file is validated as a
        reload is (400: its FILE:LINE: errors), then decides beside the live one."""
        return _shadow_call(shadow.start_text, body.allocations, source)

    @app.delete("/api/v1/shadow", response_model=schemas.ShadowOut, tags=["admin"],
                responses={401: {"model": schemas.ErrorOut}}, dependencies=[Depends(admin)])
    def stop_shadow():
        """Stop the shadow (its figures stay readable)."""
        return _shadow_call(shadow.stop)

    @app.get("/api/v1/shadow/report", response_model=schemas.ShadowReportOut, tags=["admin"],
             responses={400: {"model": schemas.ErrorOut}, 401: {"model": schemas.ErrorOut},
                        409: {"model": schemas.ErrorOut}, 500: {"model": schemas.ErrorOut},
                        504: {"model": schemas.ErrorOut}},
             dependencies=[Depends(admin)])
    def shadow_report(since: str = Query("3600", description="the window: the log's last SECONDS (1 to 604800)")):
        """The recorded window (serve --record --event-log) played again under
        the live file and under the candidate the shadow runs, per queue beside
        what happened (`slotwise shadow report`). Played by a child process at
        a lower priority, never in this one; at most 300 s, one at a time, and
        an answer is given again for 60 s. Admin: it costs up to minutes of a
        core, as a dry run copies the engine."""
        return _shadow_call(shadow.report, since)

    @app.post("/api/v1/shadow/promote", response_model=schemas.PromoteOut, tags=["admin"],
              responses={401: {"model": schemas.ErrorOut}, 409: {"model": schemas.ErrorOut}},
              dependencies=[Depends(admin)])
    def promote_shadow():
        """Write the candidate as the live allocation file (atomically; the
        old one kept as FILE.bak-<timestamp>); the file's watcher applies it
        as any reload."""
        return _shadow_call(shadow.promote)

    @app.post("/api/v1/apps/{app_id}/queue", response_model=schemas.MoveOut, tags=["admin"],
              responses={401: {"model": schemas.ErrorOut}, 404: {"model": schemas.ErrorOut},
                         409: {"model": schemas.ErrorOut}, 413: {"model": schemas.ErrorOut},
                         422: {"model": schemas.ErrorOut}},
              dependencies=[Depends(admin)], openapi_extra=_json_request_body(schemas.MoveIn))
    def move_app(app_id: str, body: schemas.MoveIn = Depends(json_body(schemas.MoveIn))):
        """Move an app to another queue (as the Fair Scheduler's UI does). The JSON
        body is read after the admin check, 64 KiB at most (413). 422 for
        a queue no app can go to: a parent, or a missing one the placement
        policy may not create (as YARN refuses such moves)."""
        return {"id": app_id, "queue": service.move_app(app_id, body.queue)}

    @app.post("/api/v1/apps/{app_id}/priority", response_model=schemas.PriorityOut, tags=["admin"],
              responses={401: {"model": schemas.ErrorOut}, 404: {"model": schemas.ErrorOut},
                         409: {"model": schemas.ErrorOut}, 413: {"model": schemas.ErrorOut},
                         422: {"model": schemas.ErrorOut}},
              dependencies=[Depends(admin)], openapi_extra=_json_request_body(schemas.PriorityIn))
    def set_priority(app_id: str, body: schemas.PriorityIn = Depends(json_body(schemas.PriorityIn))):
        """Change an app's priority (its weight inside its queue is 2^priority).
        The JSON body is read after the admin check, 64 KiB at most (413)."""
        return {"id": app_id, "priority": service.set_priority(app_id, body.priority)}

    # The paths of before one vocabulary (queue and app, wire to UI) answer in
    # their old shape (web/legacy.py, docs/admin.md); not in the OpenAPI document.
    def shaped(model, data):
        """``data`` as the new path's response model has it, before renaming."""
        return TypeAdapter(model).dump_python(TypeAdapter(model).validate_python(data), mode="json")

    @app.get("/api/v1/pools", include_in_schema=False)
    def get_pools():
        return legacy.pool_rows(shaped(list[schemas.QueueOut], get_queues()))

    @app.get("/api/v1/jobs", include_in_schema=False)
    def get_jobs():
        return legacy.job_rows(shaped(list[schemas.AppOut], get_apps()))

    @app.get("/api/v1/jobs/{app_id}/explain", include_in_schema=False)
    def explain_job(app_id: str):
        return legacy.job_explain(shaped(schemas.ExplainOut, explain_app(app_id)))

    @app.post("/api/v1/jobs/{app_id}/pool", include_in_schema=False, dependencies=[Depends(admin)])
    def move_job(app_id: str, body: schemas.MoveIn = Depends(json_body(schemas.MoveIn))):
        return legacy.moved(move_app(app_id, body))

    app.add_api_route("/api/v1/jobs/{app_id}/priority", set_priority, methods=["POST"],
                      response_model=schemas.PriorityOut, include_in_schema=False, dependencies=[Depends(admin)])

    # ------------------------------------------------------ Dynamic Priority
    async def dp_query(request: Request, authorization: str | None = Header(default=None)) -> str | Answer:
        """The request's query string, or the answer that refuses it.  A POST
        without one carries it as its body, read after the Authorization
        header is looked at: unsigned, it can only be price or time (64 bytes
        at most; longer: 401 unread); signed, at most the API's 4096."""
        query = request.url.query
        if request.method != "POST" or query or dp is None:
            return query
        limit = MAX_DP_BYTES if authorization else MAX_DP_UNSIGNED_BYTES
        try:
            body = await read_body(request, limit, "the request")
        except AdminError as e:
            if e.status == 413 and not authorization:
                return Answer(401, {"error": "missing Authorization header (Base64 HMAC-SHA1 of the query string); "
                                             f"only price and time may be sent unsigned ({limit} bytes at most)"})
            return Answer(e.status, {"error": e.message})
        try:
            return body.decode("ascii")
        except UnicodeDecodeError:
            return Answer(400, {"error": "the body is not ASCII (a form-encoded query string)"})

    def dp_answer(query: str | Answer, authorization: str | None):
        if dp is None:
            return None
        if isinstance(query, Answer):
            return query
        return dp.handle(query, authorization)

    @app.api_route("/scheduler", methods=["GET", "POST"], include_in_schema=False)
    def dp_xml(query: str | Answer = Depends(dp_query), authorization: str | None = Header(default=None)):
        """The paper's REST API (Table 1), XML answers as Listing 1.1."""
        ans = dp_answer(query, authorization)
        if ans is None:
            return Response("<error>Dynamic Priority is not served here</error>\n", status_code=404,
                            media_type="application/xml")
        return Response(ans.xml(), status_code=ans.status, media_type="application/xml")

    dp_doc = ("One operation per request, as the query string (or a form body on POST): price, time "
              "(anyone); info=QUEUE, setSpending=RATE&queue=QUEUE (the queue's holder or an admin); infos, "
              "addBudget=AMOUNT&queue=QUEUE, addQueue=QUEUE, removeQueue=QUEUE (admin).  Signed requests end "
              "with &user=USER&timestamp=MILLIS and carry the Base64 HMAC-SHA1 of the whole query string under "
              "the user's key as the Authorization header.  A POST body is at most 4096 bytes when signed (413 "
              "over it) and 64 unsigned (401 over it, unread).  The XML twin is /scheduler.")

    def dp_json(query: str | Answer = Depends(dp_query), authorization: str | None = Header(default=None)):
        """Dynamic Priority: the market's price, budgets and spending rates."""
        ans = dp_answer(query, authorization)
        if ans is None:
            return JSONResponse({"detail": "Dynamic Priority is not served here"}, status_code=404)
        return JSONResponse(_finite(ans.body), status_code=ans.status)

    for method in ("GET", "POST"):
        app.add_api_route("/api/v1/dp", dp_json, methods=[method], response_model=schemas.DpOut,
                          tags=["dynamic priority"], operation_id=f"dp_{method.lower()}", description=dp_doc,
                          responses={400: {"model": schemas.DpOut}, 401: {"model": schemas.DpOut},
                                     403: {"model": schemas.DpOut}, 404: {"model": schemas.ErrorOut},
                                     413: {"model": schemas.DpOut}})

    @app.get("/metrics", response_class=PlainTextResponse, tags=["read"])
    def get_metrics():
        """Prometheus text format."""
        if metrics is None:
            return PlainTextResponse("", status_code=404)
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    # ------------------------------------ the JobTracker's /scheduler page
    @app.get("/jobtracker/scheduler", response_class=HTMLResponse, include_in_schema=False)
    def jobtracker_page():
        """The fragment SlotwiseSchedulerServlet frames (web/jobtracker.py)."""
        return HTMLResponse(jobtracker.fragment(service))

    @app.post("/jobtracker/scheduler", response_class=HTMLResponse, include_in_schema=False)
    async def jobtracker_action(request: Request, authorization: str | None = Header(default=None)):
        """The page's form: the Bearer token checked, then its JSON read (64 KiB at most)."""
        try:
            admin(request, authorization, None)
            form = await json_body(schemas.JobTrackerActionIn)(request, None)
            status, said = await run_in_threadpool(jobtracker.act, service, form.job, form.queue, form.priority)
        except AdminError as e:
            status, said = e.status, ("slotwise serve refused the admin token" if e.status == 401
                                      else f"slotwise serve refused the form ({e.status}): {e.message}")
            said += "; nothing was changed."
        return HTMLResponse(jobtracker.fragment(service, said, status == 200), status_code=status)

    # ------------- the ResourceManager's scheduler REST view and page (web/rm_scheduler.py)
    app.include_router(rm_scheduler.router(service))

    # -------------------------------------------------------------------- UI
    def context(request: Request) -> dict:
        status = service.link_status()
        link = status["resource_manager"]
        cluster = service.cluster()
        return {
            "link": link, "link_since": views.when(link.get("since")), "master": views.link_view(link),
            "request": request, "version": __version__, "refresh": refresh_seconds,
            "queues": views.queue_rows(service.queues(), cluster["capacity"], views.gone_master(link)),
            "apps": views.app_rows(service.apps(), forecaster.all()),
            "cluster": views.cluster_line(cluster), "slots": "map_slots" in cluster["capacity"],
            "nodes": views.node_rows(service.nodes()),
            "history": share_charts.history_charts(history.series(), "map_slots" in cluster["capacity"]),
            "targets": service.leaf_queues(), "config": service.config(),
            "loaded_at": views.when(service.status.loaded_at), "error_at": views.when(service.status.error_at),
            "rounds": views.preemption_rounds(service.preemptions()),
            "admin": sessions.valid(request.cookies.get(COOKIE)),
            "market": market_charts.market_view(getattr(service.core, "services", {}).get("market"),
                                                service.core.views.market_accounts()),
        }

    def shadow_context(request: Request) -> dict:
        """The shadow panel's (web/shadow_panel.py): apart from ``context``,
        so the page's 2 s refresh of #state does not diff the files too."""
        from ..shadow import SAMPLE_S

        return {"request": request, "admin": sessions.valid(request.cookies.get(COOKIE)),
                "shadow": shadow_panel.panel(_finite(shadow.status()), service.config(), shadow.candidate_text()),
                "shadow_sample_s": f"{SAMPLE_S:g}"}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request):
        return templates.TemplateResponse(request, "index.html", {**context(request), **shadow_context(request)})

    @app.get("/ui/shadow", response_class=HTMLResponse, include_in_schema=False)
    def shadow_figures(request: Request):
        return templates.TemplateResponse(request, "_shadow.html", shadow_context(request))

    @app.get("/ui/state", response_class=HTMLResponse, include_in_schema=False)
    def state(request: Request):
        return templates.TemplateResponse(request, "_state.html", context(request))

    async def login_form(request: Request) -> dict:
        """The login form's fields: the token is in the body, so it is read
        before any check, capped small."""
        raw = await read_body(request, MAX_LOGIN_BYTES, "the login form")
        try:
            return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=8))
        except (UnicodeDecodeError, ValueError):
            raise AdminError(400, "the login form is not a urlencoded form") from None

    @app.post("/ui/login", include_in_schema=False)
    def login(request: Request, form: dict = Depends(login_form)):
        if not token.check(str(form.get("admin_token", "")).strip()):
            return templates.TemplateResponse(request, "index.html", {**context(request), **shadow_context(request),
                                              "login_error": "wrong admin token"}, status_code=401)
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie(COOKIE, sessions.create(), httponly=True, samesite="strict",
                        max_age=int(sessions.ttl), secure=request.url.scheme == "https")
        return resp

    @app.post("/ui/logout", include_in_schema=False)
    def logout(request: Request):
        sessions.revoke(request.cookies.get(COOKIE))
        resp = RedirectResponse("/", status_code=303)
        resp.delete_cookie(COOKIE)
        return resp

    return app
