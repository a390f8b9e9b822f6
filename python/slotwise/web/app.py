"""The web UI and REST API.

``create_app`` wires a SchedulerService, the admin token and the metrics
into one FastAPI app: HTML pages from Jinja2 templates, JSON under /api/v1
(described at /openapi.json), Prometheus text at /metrics.  Reads are open
(bind to loopback, the default, or put it behind your proxy); every change
needs the admin token, as ``Authorization: Bearer TOKEN``, or the UI's
session cookie (a random id with an expiry, kept server-side) plus the
``X-Slotwise-CSRF`` header a cross-site form cannot send.
"""

from __future__ import annotations

import math
import os
import threading

import anyio.from_thread

from fastapi import Depends, FastAPI, Form, Header, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from .. import __version__
from ..admin import AdminError, AdminToken, SchedulerService, Sessions
from ..config.loader import MAX_FILE_BYTES
from . import schemas, views

HERE = os.path.dirname(__file__)
MAX_DRY_RUN_BYTES = MAX_FILE_BYTES  # the allocation-file parser's own limit
COOKIE = "slotwise_session"
CSRF_HEADER = "X-Slotwise-CSRF"


def _finite(x):
    if isinstance(x, float) and math.isinf(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _read_body(request: Request, limit: int) -> bytes:
    """The body of a sync handler (FastAPI runs it on a worker thread), read
    in chunks so that a body over ``limit`` is refused before it is all in memory."""
    async def read() -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise AdminError(413, f"the file is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    return anyio.from_thread.run(read)


def create_app(service: SchedulerService, token: AdminToken, metrics=None, refresh_seconds: float = 2.0,
               dp=None) -> FastAPI:
    """``dp``: the Dynamic Priority API (slotwise.market.api.DpApi), served
    at /scheduler (XML, the paper's) and /api/v1/dp (JSON); None: 404."""
    app = FastAPI(title="Slotwise", version=__version__,
                  description="Pools, jobs and the allocation file of a running Slotwise scheduler. "
                              "Mutating calls need the admin token (Authorization: Bearer TOKEN).")
    templates = Jinja2Templates(directory=os.path.join(HERE, "templates"))
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

    @app.exception_handler(AdminError)
    async def _admin_error(_request: Request, e: AdminError):
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
        return JSONResponse({"detail": e.message}, status_code=e.status, headers=headers)

    # ------------------------------------------------------------------- API
    @app.get("/api/v1/pools", response_model=list[schemas.PoolOut], tags=["read"])
    def get_pools():
        """Every pool: weight, min share, fair shares, usage, demand, starvation."""
        return _finite(service.pools())

    @app.get("/api/v1/jobs", response_model=list[schemas.JobOut], tags=["read"])
    def get_jobs():
        """Every job the scheduler knows, oldest first."""
        return _finite(service.jobs())

    @app.get("/api/v1/cluster", response_model=schemas.ClusterOut, tags=["read"])
    def get_cluster():
        """The cluster as the scheduler sees it: capacity, nodes, usage."""
        return _finite(service.cluster())

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

    @app.get("/api/v1/jobs/{job_id}/explain", response_model=schemas.ExplainOut, tags=["read"],
             responses={404: {"model": schemas.ErrorOut}})
    def explain_job(job_id: str):
        """Why a job runs no more than it does now, in words and figures: a
        running-app limit, a max share, maxAMShare, delay scheduling, no node
        with room, its turn, Python away; and why its containers were preempted."""
        return _finite(service.explain_job(job_id))

    @app.post("/api/v1/config/dry-run", response_model=schemas.DryRunOut, tags=["admin"],
              responses={401: {"model": schemas.ErrorOut}, 409: {"model": schemas.ErrorOut},
                         413: {"model": schemas.ErrorOut}}, dependencies=[Depends(admin)])
    def dry_run(request: Request, content_length: int | None = Header(default=None)):
        """Send an allocation file (the body, as is): what saving it would do
        to the live demands, changing nothing.  Admin: it copies the engine,
        which holds the scheduler's lock for that long (docs/admin.md)."""
        if content_length is not None and content_length > MAX_DRY_RUN_BYTES:
            raise AdminError(413, f"the file is over {MAX_DRY_RUN_BYTES} bytes")
        body = _read_body(request, MAX_DRY_RUN_BYTES)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise AdminError(400, "the file is not UTF-8") from None
        if not dry_runs.acquire(blocking=False):
            raise AdminError(409, "another dry run is under way; try again when it is done")
        try:
            return _finite(service.dry_run(text))
        finally:
            dry_runs.release()

    @app.post("/api/v1/jobs/{job_id}/pool", response_model=schemas.MoveOut, tags=["admin"],
              responses={401: {"model": schemas.ErrorOut}, 404: {"model": schemas.ErrorOut},
                         409: {"model": schemas.ErrorOut}, 422: {"model": schemas.ErrorOut}},
              dependencies=[Depends(admin)])
    def move_job(job_id: str, body: schemas.MoveIn):
        """Move a job to another pool (as the Fair Scheduler's UI does). 422 for
        a pool no job can go to: a parent, or a missing one the placement
        policy may not create (as YARN refuses such moves)."""
        return {"id": job_id, "pool": service.move_job(job_id, body.pool)}

    @app.post("/api/v1/jobs/{job_id}/priority", response_model=schemas.PriorityOut, tags=["admin"],
              responses={401: {"model": schemas.ErrorOut}, 404: {"model": schemas.ErrorOut},
                         409: {"model": schemas.ErrorOut}}, dependencies=[Depends(admin)])
    def set_priority(job_id: str, body: schemas.PriorityIn):
        """Change a job's priority (its weight inside its pool is 2^priority)."""
        return {"id": job_id, "priority": service.set_priority(job_id, body.priority)}

    # ------------------------------------------------------ Dynamic Priority
    def dp_answer(request: Request, authorization: str | None):
        if dp is None:
            return None
        query = request.url.query
        if request.method == "POST" and not query:
            body = _read_body(request, 4096 + 1)
            try:
                query = body.decode("ascii")
            except UnicodeDecodeError:
                query = "\x00" * 5000  # refused below as too long, changing nothing
        return dp.handle(query, authorization)

    @app.api_route("/scheduler", methods=["GET", "POST"], include_in_schema=False)
    def dp_xml(request: Request, authorization: str | None = Header(default=None)):
        """The paper's REST API (Table 1), XML answers as Listing 1.1."""
        ans = dp_answer(request, authorization)
        if ans is None:
            return Response("<error>Dynamic Priority is not served here</error>\n", status_code=404,
                            media_type="application/xml")
        return Response(ans.xml(), status_code=ans.status, media_type="application/xml")

    dp_doc = ("One operation per request, as the query string (or a form body on POST): price, time "
              "(anyone); info=QUEUE, setSpending=RATE&queue=QUEUE (the queue's holder or an admin); infos, "
              "addBudget=AMOUNT&queue=QUEUE, addQueue=QUEUE, removeQueue=QUEUE (admin).  Signed requests end "
              "with &user=USER&timestamp=MILLIS and carry the Base64 HMAC-SHA1 of the whole query string under "
              "the user's key as the Authorization header.  The XML twin is /scheduler.")

    def dp_json(request: Request, authorization: str | None = Header(default=None)):
        """Dynamic Priority: the market's price, budgets and spending rates."""
        ans = dp_answer(request, authorization)
        if ans is None:
            return JSONResponse({"detail": "Dynamic Priority is not served here"}, status_code=404)
        return JSONResponse(_finite(ans.body), status_code=ans.status)

    for method in ("GET", "POST"):
        app.add_api_route("/api/v1/dp", dp_json, methods=[method], response_model=schemas.DpOut,
                          tags=["dynamic priority"], operation_id=f"dp_{method.lower()}", description=dp_doc,
                          responses={400: {"model": schemas.DpOut}, 401: {"model": schemas.DpOut},
                                     403: {"model": schemas.DpOut}, 404: {"model": schemas.ErrorOut}})

    @app.get("/metrics", response_class=PlainTextResponse, tags=["read"])
    def get_metrics():
        """Prometheus text format."""
        if metrics is None:
            return PlainTextResponse("", status_code=404)
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    # -------------------------------------------------------------------- UI
    def context(request: Request) -> dict:
        status = service.link_status()
        link = status["resource_manager"]
        return {
            "link": link, "link_since": views.when(link.get("since")),
            "request": request, "version": __version__, "refresh": refresh_seconds,
            "pools": views.pool_rows(service.pools()), "jobs": views.job_rows(service.jobs()),
            "cluster": views.cluster_line(service.cluster()),
            "targets": service.leaf_pools(), "config": service.config(),
            "loaded_at": views.when(service.status.loaded_at), "error_at": views.when(service.status.error_at),
            "preemptions": views.preemption_rows(service.preemptions()[:20]),
            "admin": sessions.valid(request.cookies.get(COOKIE)),
            "market": views.market_view(getattr(service.core, "services", {}).get("market")),
        }

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request):
        return templates.TemplateResponse(request, "index.html", context(request))

    @app.get("/ui/state", response_class=HTMLResponse, include_in_schema=False)
    def state(request: Request):
        return templates.TemplateResponse(request, "_state.html", context(request))

    @app.post("/ui/login", include_in_schema=False)
    def login(request: Request, admin_token: str = Form(...)):
        if not token.check(admin_token.strip()):
            return templates.TemplateResponse(request, "index.html", {**context(request),
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
