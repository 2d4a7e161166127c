"""The TOML files shipped inside the package (the catalog, the views, the checks), parsed once per content.

Parsing them with the pure-Python ``tomllib`` costs every command about 0.08 s. The parse is kept in
:func:`cache_root` (``$RLVITALS_CACHE``, else ``~/.cache/rlvitals``) under ``toml/``, as marshal data named by
a hash of the file's bytes and the Python version and sealed by a hash of itself, so an edited file, another
Python or a damaged cache file is parsed again. A cache that cannot be read or written is passed over: the
file is parsed as it would be without one, and nothing is said (no data depends on it).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["bundled_toml", "cache_root"]

#: what a cached parse is tied to besides the file's bytes: the marshal format changes between Pythons
_TAG = f"rlvitals-toml-1 {sys.implementation.cache_tag} {marshal.version}".encode()
_SEAL = 16  # bytes of the blake2b digest of the marshal data, in front of it


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$RLVITALS_CACHE``, else ``~/.cache/rlvitals`` (of ``environ``, default ``os.environ``)."""
    given = (os.environ if environ is None else environ).get("RLVITALS_CACHE")
    return Path(given).expanduser() if given else Path.home() / ".cache" / "rlvitals"


def bundled_toml(package: str, name: str) -> dict[str, Any]:
    """The TOML file ``name`` of ``package``, parsed (from the cache when it holds this content's parse)."""
    text = resources.files(package).joinpath(name).read_bytes()
    key = hashlib.blake2b(_TAG + text, digest_size=16).hexdigest()
    path = cache_root() / "toml" / f"{key}.marshal"
    cached = _read(path)
    if cached is not None:
        return cached
    parsed = tomllib.loads(text.decode("utf-8"))
    _write(path, parsed)
    return parsed


def _read(path: Path) -> dict[str, Any] | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    seal, body = blob[:_SEAL], blob[_SEAL:]
    if hashlib.blake2b(body, digest_size=_SEAL).digest() != seal:
        return None  # cut short or damaged: parsed again, and written again
    try:
        data = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, parsed: dict[str, Any]) -> None:
    """The parse, written whole or not at all (a temporary file renamed), so that two commands starting at
    once never read half of one."""
    try:
        body = marshal.dumps(parsed)
    except ValueError:  # a TOML date or time: marshal has no such type; the file is parsed every time
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(hashlib.blake2b(body, digest_size=_SEAL).digest() + body)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
