"""The embedded server is private to the user who started it (issue 14, item 1)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from shared_core.server import acquire_embedded, embedded_bin_dir, release_embedded

from .conftest import postmaster_running, private_root

pytestmark = pytest.mark.slow


def _modes(path: Path) -> dict[Path, int]:
    return {p: p.stat().st_mode for p in [path, *path.parents]}


def _socket_dir(dsn: str) -> Path:
    return Path(parse_qs(urlsplit(dsn).query)["host"][0])


def test_long_data_dir_is_private_and_changes_no_permission() -> None:
    root = private_root("hindsight-private-")
    # Longer than a Unix socket path may be: the socket must move out of the data dir.
    deep = root / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    for p in (root / ("d" * 60), deep):
        p.chmod(0o711)
    before = _modes(deep)
    path, dsn = acquire_embedded(deep / "pgdata")
    socket_dir = _socket_dir(dsn)
    try:
        assert socket_dir != path, "the data dir path is too long for a socket; it must move"
        st = socket_dir.stat()
        assert stat.S_IMODE(st.st_mode) == 0o700
        assert st.st_uid == path.stat().st_uid  # the server's own user
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        assert _modes(deep) == before, "a parent directory's permissions changed"
        hba = (path / "pg_hba.conf").read_text()
        rules = [ln.split() for ln in hba.splitlines() if ln.strip() and not ln.startswith("#")]
        assert rules and all(r[-1] in {"scram-sha-256", "reject"} for r in rules), rules
        passfile = path / "hindsight.pgpass"
        assert stat.S_IMODE(passfile.stat().st_mode) == 0o600
        assert "password" not in dsn and passfile.read_text().split(":")[-1].strip() not in dsn

        with psycopg.connect(dsn) as conn:  # the owner gets in
            assert conn.execute("SELECT current_setting('listen_addresses')").fetchone() == ("",)
        # Without the password, even the owner is refused: auth is not trust.
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(
                host=str(socket_dir),
                user="postgres",
                dbname="postgres",
                passfile="/dev/null",
                connect_timeout=5,
            )

        if os.geteuid() == 0:
            # Another local user cannot even reach the socket.
            psql = embedded_bin_dir() / "psql"
            out = subprocess.run(
                [
                    "runuser",
                    "-u",
                    "nobody",
                    "--",
                    str(psql),
                    "-h",
                    str(socket_dir),
                    "-U",
                    "postgres",
                    "-d",
                    "postgres",
                    "-w",
                    "-c",
                    "SELECT 1",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            assert out.returncode != 0
            assert "Permission denied" in out.stderr, out.stderr
    finally:
        release_embedded(path)
    try:
        assert not postmaster_running(path)
        assert not socket_dir.exists(), "the private socket directory was left behind"
        assert _modes(deep) == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_use_a_short_path_server_either() -> None:
    root = private_root("hindsight-short-")
    path, dsn = acquire_embedded(root / "pgdata")
    try:
        socket_dir = _socket_dir(dsn)
        assert socket_dir == path
        psql = embedded_bin_dir() / "psql"
        out = subprocess.run(
            [
                "runuser",
                "-u",
                "nobody",
                "--",
                str(psql),
                "-h",
                str(socket_dir),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-w",
                "-c",
                "SELECT 1",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert out.returncode != 0 and "Permission denied" in out.stderr, out.stderr
        # Nor over TCP: the server listens on no address.
        out = subprocess.run(
            [
                "runuser",
                "-u",
                "nobody",
                "--",
                str(psql),
                "-h",
                "127.0.0.1",
                "-p",
                "5432",
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-w",
                "-c",
                "SELECT 1",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert out.returncode != 0
    finally:
        release_embedded(path)
        shutil.rmtree(root, ignore_errors=True)


def test_legacy_trust_directory_is_upgraded_to_password_auth() -> None:
    root = private_root("hindsight-legacy-")
    path, dsn = acquire_embedded(root / "pgdata")
    release_embedded(path)
    # What an older version left: trust everywhere, no passfile.
    (path / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
    (path / "hindsight.pgpass").unlink()
    try:
        path, dsn = acquire_embedded(path)
        try:
            hba = (path / "pg_hba.conf").read_text()
            assert "trust" not in "".join(ln for ln in hba.splitlines() if not ln.startswith("#"))
            with psycopg.connect(dsn) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
            with pytest.raises(psycopg.OperationalError, match="password"):
                psycopg.connect(
                    host=str(_socket_dir(dsn)),
                    user="postgres",
                    dbname="postgres",
                    passfile="/dev/null",
                    connect_timeout=5,
                )
        finally:
            release_embedded(path)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only under root")
def test_a_path_the_server_user_cannot_traverse_is_reported_not_chmodded() -> None:
    import tempfile

    from shared_core.errors import ConfigurationError

    locked = Path(tempfile.mkdtemp(prefix="hindsight-locked-"))  # 0700, root's
    try:
        with pytest.raises(ConfigurationError, match="not traversable") as info:
            acquire_embedded(locked / "pgdata")
        assert str(locked) in str(info.value)
        assert stat.S_IMODE(locked.stat().st_mode) == 0o700
        assert not (locked / "pgdata").exists()
    finally:
        shutil.rmtree(locked, ignore_errors=True)
