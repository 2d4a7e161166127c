"""Running the dashboard: the listening socket, uvicorn, the poll thread, and a server in a thread for tests.

The socket is bound here, before uvicorn starts, so a port in use is a clear error naming the fix
(uvicorn would log it and exit the process) and port 0 gives a free port whose number is known.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import RlvitalsError
from ..words import Words
from .app import create_app
from .security import check_bind, is_loopback
from .store import ServeState
from .workspace import Workspace, WorkspaceOptions


def default_state_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/rlvitals/serve.sqlite`` (``~/.local/state`` when unset): not beside the logs,
    whose folders may be read-only or shared.

    Example:
        >>> default_state_path({"XDG_STATE_HOME": "/s"})
        PosixPath('/s/rlvitals/serve.sqlite')
    """
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(base) / "rlvitals" / "serve.sqlite"


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise RlvitalsError(Words(f"serve: cannot listen on {host}:{port} ({exc.strerror}); choose another --port, "
                                  "or an address of this machine for --host",
                                  f"serve：无法监听 {host}:{port}（{exc.strerror}）；请换一个 --port，"
                                  "或为 --host 选本机的一个地址")) from exc
    sock.listen(128)
    return sock


def _uvicorn(app: Any) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))


def url_of(host: str, port: int) -> str:
    name = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    return f"http://{name}:{port}/"


class ServerThread:
    """A real dashboard server on ``host`` and a free port, in a background thread (tests, benchmarks).

    Example:
        >>> with ServerThread(workspace, "127.0.0.1") as srv:  # doctest: +SKIP
        ...     urllib.request.urlopen(srv.url + "api/runs").status
        200
    """

    def __init__(self, workspace: Workspace, host: str = "127.0.0.1", *, token: str | None = None,
                 port: int = 0) -> None:
        check_bind(host, token)
        self.workspace = workspace
        self.sock = listen(host, port)
        self.port = int(self.sock.getsockname()[1])
        self.url = url_of(host, self.port)
        self.server = _uvicorn(create_app(workspace, token=token, hosts=(host,) if is_loopback(host) else ()))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name="rlvitals-serve", daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            raise RlvitalsError(Words(f"serve: the server on {self.url} did not start within 10 s",
                                      f"serve：{self.url} 上的服务在 10 秒内没有启动"))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def serving_line(paths: int, url: str, token: bool, lang: str = "en") -> str:
    """The line ``serve`` prints once it listens: how many paths, where, how to pass the token, how to stop.

    Example:
        >>> serving_line(2, "http://127.0.0.1:8765", False, "zh")
        'rlvitals serve：在 http://127.0.0.1:8765 展示 2 个路径；按 Ctrl-C 停止'
    """
    if lang == "zh":
        hint = f"（首次打开 {url}?token=YOUR_TOKEN 即可，浏览器会记住令牌）" if token else ""
        return f"rlvitals serve：在 {url} 展示 {paths} 个路径{hint}；按 Ctrl-C 停止"
    hint = f" (open {url}?token=YOUR_TOKEN once; the browser keeps it)" if token else ""
    return f"rlvitals serve: {paths} path(s) at {url}{hint}; Ctrl-C to stop"


def serve(paths: Sequence[Path], *, host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
          state: Path | None = None, options: WorkspaceOptions | None = None, docs: bool = False,
          out: IO[str] | None = None, environ: Mapping[str, str] | None = None, lang: str = "en") -> int:
    """Serve ``paths`` until interrupted (Ctrl-C); returns the exit code. Raises RlvitalsError for a bad
    bind, token, state file or port before anything is served. The lines written to ``out`` are in ``lang``
    (``"en"`` or ``"zh"``)."""
    environ = os.environ if environ is None else environ
    check_bind(host, token)
    options = options or WorkspaceOptions()
    # a folder of finished runs is read whole in a worker process per core (the poll thread stays free to answer)
    options = replace(options, workers=options.workers or (os.cpu_count() or 1))
    workspace = Workspace(paths, ServeState(state or default_state_path(environ)), options)
    try:
        sock = listen(host, port)
        server = _uvicorn(create_app(workspace, token=token, docs=docs,
                                     hosts=(host,) if is_loopback(host) else ()))
        workspace.start()
        url = url_of(host, int(sock.getsockname()[1]))
        if out is not None:
            out.write(serving_line(len(workspace.roots), url, token is not None, lang) + "\n")
            out.flush()
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn stops on Ctrl-C and raises the signal again once it has shut down: a normal stop
    finally:
        workspace.close()
    return 0
