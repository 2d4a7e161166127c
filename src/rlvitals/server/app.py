"""The dashboard's routes: thin readers of a :class:`~rlvitals.server.workspace.Workspace`.

HTML: ``/`` (run list; ``?sort=updated``, the default, lists the most recently written first,
``?sort=name`` by name in natural order), ``/runs/{id}`` (the report's layered page, live), ``/compare?runs=ID,ID``
(the report of several runs together: overlaid charts, final/best values, config diff). JSON (OpenAPI at
``/openapi.json``): runs, one run's diagnosis, its findings, a metric's series downsampled over a
step range, rollout groups with their texts, the page model, events to poll, and the files of a
served folder. Every route returns what the workspace or the diagnosis already computed; nothing
is computed here. Every request passes :func:`_guard` (token or loopback Host, then security
headers on the answer).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from functools import lru_cache
from importlib import resources
from typing import Any, Literal
from urllib.parse import urlencode

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel

from ..diagnosis import READING_ORDER
from ..render import json_dumps, shown
from ..report.html import page_script, plotly_bundle, theme_script
from ..words import in_lang
from .compare import IDS_PATTERN, compare_html, compare_page, compared
from .compress import MIN_SIZE, Compression, compress, compressible, offered, pick
from .page import LANG_COOKIE, index_html, loading_html, pick_lang, run_html
from .security import COOKIE, AccessError, bearer, headers, host_allowed, same_origin, script_hash, token_ok
from .workspace import Workspace

#: a static file asked for with its digest (``?v=``, as the run pages ask for Plotly) never changes under that URL;
#: without it, the browser asks again each time and gets 304 Not Modified while the file is the same (ETag), so a
#: new rlvitals never runs with the scripts of the old one
IMMUTABLE, REVALIDATE = "max-age=31536000, immutable", "no-cache"
LANG_AGE = 365 * 24 * 3600  # the language choice is kept a year, as the switch's own cookie


class RunSummary(BaseModel):
    """One served run: ``status`` is ``loading`` while a remembered run is read again and ``unreadable`` for a
    log no reading has succeeded for; ``error`` says why the last reading failed, or why the last good
    reading is no longer what the log holds (it was deleted, emptied, or rewritten into no training log):
    the run keeps that reading, and ``stale`` marks it (``error_zh``: the error in Chinese); ``algorithm``
    is the detected algorithm's description, ``algorithm_short`` its name in the run list; ``updated`` is
    when it was last diagnosed and ``modified`` when its log was last written (seconds since the epoch)."""

    id: str
    label: str
    path: str
    root: int
    status: str
    version: int
    last_step: int
    verdict: str
    layers: dict[str, str]
    findings: dict[str, int]
    framework: str | None
    algorithm: str | None
    algorithm_short: str | None
    steps: int | None
    updated: float
    modified: float = 0.0
    error: str | None = None
    error_zh: str | None = None
    stale: bool = False


class Problem(BaseModel):
    """Why a request was refused, and what to do instead."""

    detail: str


#: the refusals every API route may answer with, besides its own answer and FastAPI's 422
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "A parameter names nothing this run has (a metric, a step)"},
    401: {"model": Problem, "description": "The dashboard has a token and the request did not carry it"},
    403: {"model": Problem, "description": "Not a loopback Host name (without a token), or a path outside the "
                                           "served folders"},
    404: {"model": Problem, "description": "No such run, root or file in this workspace"},
    503: {"model": Problem, "description": "The run is being read again after a restart; retry shortly"},
}


class Progress(BaseModel):
    """How many of the logs found so far have been read: the list holds the runs of those only."""

    read: int
    total: int


class RunList(BaseModel):
    """The runs in the order asked for; ``messages`` are the notes: each served folder's count of what it
    passed over (rollout folders, rlvitals' own files, files that are not logs), then what was said;
    ``messages_zh`` the same notes in Chinese (a note not translated stays English); ``progress``: how many
    of the logs found have been read yet (a folder of a thousand runs is listed as it is read)."""

    runs: list[RunSummary]
    roots: list[str]
    messages: list[str]
    messages_zh: list[str]
    progress: Progress


class Events(BaseModel):
    """``runs`` updated since the ``after`` asked for; ask next with ``after=seq``. ``moved``: the ids of runs no
    longer listed, each with the id of the run now read in its place (a console read with its training folder once
    the trainer wrote its first checkpoint)."""

    seq: int
    runs: list[RunSummary]
    moved: dict[str, str]


class Series(BaseModel):
    """A metric between two steps: at most ``4 × buckets`` points, every bucket's first, min, max, last."""

    run: str
    version: int
    key: str
    start: float | None
    end: float | None
    buckets: int
    x: list[float]
    y: list[float | None]
    bad: list[list[Any]]
    n: int
    nonfinite: dict[str, Any]


def _json(obj: Any, status: int = 200) -> Response:
    # orjson: NumPy values in evidence, NaN as null (the stdlib would write invalid JSON)
    body = json_dumps(obj)  # a file name that is not UTF-8 shown escaped, never a 500
    return Response(body, status_code=status, media_type="application/json")


@lru_cache(maxsize=8)
def _static(name: str) -> tuple[bytes, str, str]:
    """A static file by name only (no request path ever reaches the file system here): its bytes, media type
    and digest (the first 16 hex digits of their sha256; Plotly's is ``plotly_bundle().digest``)."""
    if name == "plotly.min.js":  # the vendored basic bundle the report inlines (rlvitals.report.html)
        body, kind = plotly_bundle().text.encode("utf-8"), "text/javascript"
    elif name == "report.js":  # the page script the report inlines, served so a live update can run it again
        body, kind = page_script().encode("utf-8"), "text/javascript"
    else:
        package, folder = ("rlvitals.report", "templates") if name == "report.css" else \
            ("rlvitals.server", "static")
        kind = "text/javascript" if name.endswith(".js") else "text/css"
        body = resources.files(package).joinpath(folder, name).read_bytes()
    return body, kind, hashlib.sha256(body).hexdigest()[:16]


@lru_cache(maxsize=16)
def _packed(name: str, encoding: str) -> bytes:
    """A static file compressed once, at the best level (:func:`.compress.compress`)."""
    return compress(_static(name)[0], encoding, best=True)


STATIC = ("live.js", "serve.css", "report.js", "report.css", "plotly.min.js", "compare.js")


def _refuse(status: int, message: str, extra: dict[str, str] | None = None) -> Response:
    response = _json({"detail": message}, status)
    response.headers.update(extra or {})
    return response


def _check(request: Request, token: str | None, hosts: tuple[str, ...]) -> Response | None:
    """The answer that refuses ``request``, or None to let it through."""
    if token is None:
        if not host_allowed(request.headers.get("host"), hosts):
            return _refuse(403, f"Host {request.headers.get('host')!r} is not this machine's loopback name; open "
                                "the dashboard at http://127.0.0.1:PORT/ (a server without --token answers "
                                "loopback names only)")
        return None
    given = (bearer(request.headers.get("authorization")) or request.query_params.get("token")
             or request.cookies.get(COOKIE))
    if not token_ok(token, given):
        return _refuse(401, "this dashboard needs its token: send 'Authorization: Bearer TOKEN', or open "
                            "any page once with ?token=TOKEN", {"WWW-Authenticate": 'Bearer realm="rlvitals"'})
    if "token" in request.query_params and request.method == "GET" and not request.url.path.startswith("/api/"):
        # keep the token out of the address bar, history and logs: a cookie carries it from now on
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        target = same_origin(request.url.path) + ("?" + urlencode(rest) if rest else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        return response
    return None


def create_app(workspace: Workspace, *, token: str | None = None, docs: bool = False,
               hosts: tuple[str, ...] = ()) -> FastAPI:
    """The dashboard over ``workspace``. With ``token`` every request must carry it; without, only
    requests to a loopback Host name (or one of ``hosts``) are answered. ``docs``: serve ``/docs``
    (it loads its script from a CDN, so it is off by default).

    Example:
        >>> from pathlib import Path
        >>> app = create_app(Workspace([Path("run.log")], ServeState(Path("s.sqlite"))))  # doctest: +SKIP
        >>> TestClient(app, base_url="http://127.0.0.1").get("/api/runs").json()["runs"]  # doctest: +SKIP
        []
    """
    app = FastAPI(title="rlvitals dashboard", summary="Live diagnosis of RL post-training runs",
                  docs_url="/docs" if docs else None, redoc_url=None)
    secure = headers([script_hash(page_script()), script_hash(theme_script())])

    @app.middleware("http")
    async def _guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        refused = _check(request, token, hosts)
        response = refused if refused is not None else await call_next(request)
        for name, value in secure.items():
            response.headers.setdefault(name, value)
        return response

    # outside the guard: a refusal is compressed too, and the guard's headers are kept
    app.add_middleware(Compression)

    @app.exception_handler(AccessError)
    async def _access(_: Request, exc: AccessError) -> Response:
        return _refuse(exc.status, str(exc))

    _html_routes(app, workspace)
    _api_routes(app, workspace)
    return app


def _in_lang(request: Request, render: Callable[[str], str]) -> HTMLResponse:
    """A page rendered in the reader's language; a ``?lang=`` also becomes the remembered choice (the
    cookie the pages' switch sets), so the next page opens in it too."""
    asked = request.query_params.get("lang")
    lang = pick_lang(asked, request.cookies.get(LANG_COOKIE))
    response = HTMLResponse(shown(render(lang)))  # a file name that is not UTF-8 as \\xNN: the page is UTF-8
    if asked is not None:
        response.set_cookie(LANG_COOKIE, lang, max_age=LANG_AGE, path="/", samesite="strict",
                            secure=request.url.scheme == "https")
    return response


def _html_routes(app: FastAPI, ws: Workspace) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request, sort: str = "updated") -> HTMLResponse:
        runs = ws.summaries(sort)
        progress = ws.progress()
        return _in_lang(request, lambda lang: index_html(runs, [str(r) for r in ws.roots], ws.notes(),
                                                         READING_ORDER, lang, sort, progress=progress))

    @app.get("/runs/{rid}", response_class=HTMLResponse, include_in_schema=False)
    def run_page(rid: str, request: Request) -> Response:
        moved = ws.moved_to(rid)
        if moved is not None:  # read with its training folder now: that run's page
            return RedirectResponse(f"/runs/{moved}", status_code=308)
        served = ws.get(rid, ready=False)
        if served.diagnosis is None:
            return _in_lang(request, lambda lang: loading_html(served, lang))
        error = ws.error_of(served)  # shown in the live bar: the page keeps the last good reading
        return _in_lang(request, lambda lang: ws.memo(f"html-{lang}", served, lambda: run_html(
            ws.page(served), served, lang, error, *ws.alerts_of(served)), error))

    @app.get("/compare", response_class=HTMLResponse, include_in_schema=False)
    def compare(request: Request, runs: str = "") -> HTMLResponse:
        served = compared(ws, runs)  # 400 for fewer than two ids, 404 naming an unknown one
        page, labels = compare_page(ws, served), ws.labels()
        return _in_lang(request, lambda lang: compare_html(page, served, labels, lang))

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)  # browsers ask for it; an empty answer keeps their consoles clean

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str, request: Request, v: str | None = None) -> Response:
        if name not in STATIC:
            raise AccessError(404, f"static {name!r}: no such file; the dashboard serves {', '.join(STATIC)}")
        return _static_answer(name, request, v)


def _static_answer(name: str, request: Request, v: str | None) -> Response:
    """A static file: immutable under its digest, else revalidated by its ETag (304 while unchanged); compressed
    once for a client that accepts it."""
    body, kind, digest = _static(name)
    tag = f'W/"{digest}"'  # weak: the same file, whichever encoding carries it
    fields = {"Cache-Control": IMMUTABLE if v == digest else REVALIDATE, "ETag": tag, "Vary": "Accept-Encoding"}
    seen = [t.strip().removeprefix("W/") for t in request.headers.get("if-none-match", "").split(",")]
    if f'"{digest}"' in seen or "*" in seen:
        return Response(status_code=304, headers=fields)
    encoding = pick(request.headers.get("accept-encoding"), offered())
    if encoding is not None and compressible(kind) and len(body) >= MIN_SIZE:
        body, fields["Content-Encoding"] = _packed(name, encoding), encoding
    return Response(body, media_type=kind, headers=fields)


def _api_routes(app: FastAPI, ws: Workspace) -> None:
    @app.get("/api/runs", response_model=RunList, responses=ERRORS,
            summary="Every served run with its verdict per layer")
    def runs(sort: Literal["updated", "name"] = Query("updated", description="updated: most recently written "
                                                      "first; name: by name, numbers in order (run2 before run10)")
             ) -> Response:
        notes = ws.notes()
        return _json({"runs": ws.summaries(sort), "roots": [str(r) for r in ws.roots],
                      "messages": [str(m) for m in notes], "messages_zh": [in_lang(m, "zh") for m in notes],
                      "progress": ws.progress()})

    @app.get("/api/runs/{rid}", responses=ERRORS, summary="One run: verdict, layers, findings, metrics")
    def run(rid: str) -> Response:
        served = ws.get(rid)
        assert served.diagnosis is not None and served.run is not None
        return _json({**served.summary(ws.error_of(served)), "diagnosis": served.diagnosis.to_json(),
                      "metrics": served.run.metrics})

    @app.get("/api/runs/{rid}/findings", responses=ERRORS, summary="The findings of a run's diagnosis")
    def findings(rid: str) -> Response:
        served = ws.get(rid)
        assert served.diagnosis is not None
        return _json({"run": rid, "version": served.version,
                      "findings": [f.to_json() for f in served.diagnosis.findings]})

    @app.get("/api/runs/{rid}/series", response_model=Series, responses=ERRORS,
            summary="A metric over a step range, downsampled")
    def series(rid: str, key: str, start: float | None = None, end: float | None = None,
               buckets: int = Query(400, ge=1, le=20000)) -> Response:
        return _json(ws.series(ws.get(rid), key, start, end, buckets))

    @app.get("/api/runs/{rid}/rollouts", responses=ERRORS, summary="Steps with rollouts; a step's groups and texts")
    def rollouts(rid: str, step: int | None = None) -> Response:
        return _json({"run": rid, **ws.rollout_groups(ws.get(rid), step)})

    @app.get("/api/runs/{rid}/page", responses=ERRORS, summary="The report's page model of a run (what its page draws)")
    def page(rid: str) -> Response:
        return _json(ws.page(ws.get(rid)))

    @app.get("/api/compare", responses=ERRORS, summary="Several runs side by side: final/best values, config diff")
    def compare_table(runs: str = Query(..., description="two or more run ids, comma-separated",
                                        pattern=IDS_PATTERN)) -> Response:
        served = compared(ws, runs)
        return _json({"runs": [s.id for s in served], **compare_page(ws, served)["comparison"]["table"]})

    @app.get("/api/events", response_model=Events, responses=ERRORS,
            summary="Runs updated since a sequence number (poll this)")
    def events(after: int = Query(0, ge=0)) -> Response:
        return _json(ws.events(after))

    @app.get("/api/roots", responses=ERRORS, summary="The served folders and files")
    def roots() -> Response:
        return _json({"roots": [{"id": i, "name": r.name, "path": str(r)} for i, r in enumerate(ws.roots)]})

    @app.get("/api/roots/{root}/files", responses=ERRORS, summary="What lies at a path inside a served folder")
    def files(root: int, path: str = "") -> Response:
        return _json(ws.files(root, path))


__all__ = ["create_app"]
