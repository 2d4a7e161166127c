"""What keeps the dashboard to its owner: the bind rule, the token, path confinement, response headers.

- **Bind**: loopback needs nothing; any other address needs a token of at least ``MIN_TOKEN`` characters
  (a short one can be guessed over a network).
- **Token**: every request carries it as ``Authorization: Bearer T``, or as the cookie that a single
  ``?token=T`` visit sets (HttpOnly, SameSite=Strict, so page scripts and other sites cannot use it).
  Compared in constant time. Without a token the server answers only requests whose ``Host`` is a
  loopback name, so a web page that rebinds its own DNS name to 127.0.0.1 cannot read the dashboard.
- **Paths**: a path a request names is relative to a served root; it is refused when absolute, when
  it has a ``..`` part, or when it resolves (symlinks followed) outside the root. The refusal says
  which rule it broke and never carries file content.
- **Headers**: a Content-Security-Policy allowing scripts from this server and the report's own inline
  script only (by hash), so markup that slipped through escaping still could not run.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from ..errors import RlvitalsError
from ..words import Words

COOKIE = "rlvitals_token"
MIN_TOKEN = 16
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


class AccessError(RlvitalsError):
    """A request was refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only accepts connections from this machine.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("example.org")
        (True, True, False, False)
    """
    if host.strip("[]") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def same_origin(path: str) -> str:
    r"""``path`` as a redirect target that stays on this server: one leading slash, never ``//host`` or
    ``/\host``, which a browser reads as another origin (``/%2F%2Fevil.example`` decodes to
    ``//evil.example``).

    Example:
        >>> same_origin("//evil.example/x"), same_origin("/\\evil.example"), same_origin("/runs/a")
        ('/evil.example/x', '/evil.example', '/runs/a')
    """
    return "/" + path.lstrip("/\\")


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen on a non-loopback ``host`` without a token long enough not to be guessed.

    Example:
        >>> check_bind("127.0.0.1", None)
        >>> check_bind("0.0.0.0", None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rlvitals.errors.RlvitalsError: serve: --host 0.0.0.0 is reachable from other machines ...
    """
    if token is not None and len(token) < MIN_TOKEN:
        make = "python -c \"import secrets; print(secrets.token_urlsafe(24))\""
        raise RlvitalsError(Words(f"serve: the token has {len(token)} characters; expected at least {MIN_TOKEN} so "
                                  f"it cannot be guessed — make one with: {make}",
                                  f"serve：令牌只有 {len(token)} 个字符；至少要 {MIN_TOKEN} 个才猜不出来，"
                                  f"可以这样生成：{make}"))
    if not is_loopback(host) and token is None:
        raise RlvitalsError(Words(f"serve: --host {host} is reachable from other machines and would show your logs "
                                  "and rollouts to anyone; pass --token T (or set RLVITALS_TOKEN) so every request "
                                  "must carry it, or bind --host 127.0.0.1",
                                  f"serve：--host {host} 可以从其他机器访问，任何人都能看到你的日志和 rollout；"
                                  "请传入 --token T（或设置 RLVITALS_TOKEN），让每个请求都必须带上它，"
                                  "或者绑定 --host 127.0.0.1"))


def token_ok(expected: str, given: str | None) -> bool:
    """Constant-time comparison of a presented token with the expected one.

    Example:
        >>> token_ok("s3cret-token-0123", "s3cret-token-0123"), token_ok("s3cret-token-0123", None)
        (True, False)
    """
    if given is None:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer T`` header, None for any other header."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def host_name(host_header: str | None) -> str:
    """The name part of a ``Host`` header (``[::1]:8765`` → ``::1``, ``localhost:80`` → ``localhost``)."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host_header: str | None, extra: Iterable[str] = ()) -> bool:
    """Whether a token-less server should answer a request sent to ``host_header``: loopback names only
    (and the names in ``extra``), which defeats DNS rebinding."""
    name = host_name(host_header)
    return name in LOOPBACK_NAMES or name in {e.lower() for e in extra}


def confine(roots: Sequence[Path], root: int, rel: str) -> Path:
    """The real path of ``rel`` inside served root number ``root``; :class:`AccessError` (403/404) when
    the request names anything outside it.

    Example:
        >>> import tempfile
        >>> base = Path(tempfile.mkdtemp()).resolve()
        >>> confine([base], 0, "") == base
        True
        >>> confine([base], 0, "../etc/passwd")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rlvitals.server.security.AccessError: path '../etc/passwd': '..' is not allowed; ...
    """
    if not 0 <= root < len(roots):
        raise AccessError(404, f"root {root}: no such served folder; expected 0 to {len(roots) - 1} (GET /api/roots)")
    if "\x00" in rel or "\\" in rel:
        raise AccessError(403, f"path {rel!r}: NUL and backslash are not allowed; use '/' between parts")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise AccessError(403, f"path {rel!r}: absolute paths are not allowed; name a path relative to the "
                               "served folder")
    if ".." in pure.parts:
        raise AccessError(403, f"path {rel!r}: '..' is not allowed; name a path inside the served folder")
    base = roots[root]
    target = (base / pure).resolve()
    if target != base and not target.is_relative_to(base):
        raise AccessError(403, f"path {rel!r}: it leads outside the served folder (through a symbolic link); "
                               "only files inside it are shown")
    if not target.exists():
        raise AccessError(404, f"path {rel!r}: nothing there in served folder {root}; list it with "
                               f"GET /api/roots/{root}/files")
    return target


def script_hash(text: str) -> str:
    """The CSP source that allows exactly one inline script, ``'sha256-…'``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def headers(inline_scripts: Iterable[str] = ()) -> dict[str, str]:
    """Security headers for every response; ``inline_scripts`` are the CSP sources of allowed inline scripts."""
    scripts = " ".join(["'self'", *inline_scripts])
    csp = (f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
           "frame-ancestors 'none'; form-action 'self'")
    return {"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
