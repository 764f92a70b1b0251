"""Fixtures for the reliability suite: a second, non-embedded PostgreSQL server on a local TCP
port (started with ``initdb`` and ``pg_ctl`` from the embedded server's own binaries), and
helpers to run short Python programs in separate processes."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared_core.server import DEFAULT_EMBEDDED_SERVICE_USER, embedded_bin_dir

REPO = Path(__file__).resolve().parents[2]


def private_root(prefix: str) -> Path:
    """A fresh temp directory the embedded server's user can traverse (see tests/conftest.py)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o711)
    return root


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter of this venv, from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def spawn_python(code: str, *args: str) -> subprocess.Popen[str]:
    """Start ``code`` in a fresh interpreter, with pipes for stdin, stdout and stderr."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def postmaster_running(data_dir: Path) -> bool:
    """Whether a postmaster runs for ``data_dir`` (its pid file names a live process)."""
    import psutil

    try:
        pid = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass
class SecondServer:
    """A plain PostgreSQL cluster on 127.0.0.1:<port> (password auth), not the embedded one."""

    root: Path
    data: Path
    port: int
    password: str
    run_as: dict[str, Any]

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres?connect_timeout=5"

    def ctl(self, *args: str) -> None:
        subprocess.run(
            [str(embedded_bin_dir() / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", *args],
            check=True,
            capture_output=True,
            text=True,
            cwd=self.data,
            **self.run_as,
        )

    def start(self) -> None:
        self.ctl(
            "-l",
            str(self.data / "log"),
            "-o",
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories=''",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self.ctl("-m", mode, "stop")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def second_server() -> Iterator[SecondServer]:
    root = private_root("hindsight-second-")
    data = root / "data"
    run_as: dict[str, Any] = {}
    if os.geteuid() == 0:  # Postgres refuses root: run it as the embedded server's user
        import pwd

        entry = pwd.getpwnam(os.environ.get("HINDSIGHT_EMBEDDED_USER") or DEFAULT_EMBEDDED_SERVICE_USER)
        run_as = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        os.chown(root, entry.pw_uid, entry.pw_gid)
    password = secrets.token_urlsafe(16)
    pwfile = root / "pw"
    pwfile.write_text(password + "\n")
    if run_as:
        os.chown(pwfile, run_as["user"], run_as["group"])
    subprocess.run(
        [
            str(embedded_bin_dir() / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--encoding=utf8",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=root,
        **run_as,
    )
    pwfile.unlink()
    server = SecondServer(root=root, data=data, port=_free_port(), password=password, run_as=run_as)
    server.start()
    yield server
    try:
        server.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# An embedder for child processes: deterministic 384-d unit vectors from a text's hash, so a
# child starts in a second instead of loading a model (the vectors' meaning is not under test).
HASH_EMBEDDER = """
import hashlib
import numpy as np

class HashEmbedder:
    model_name = "hash-384"
    dimension = 384

    def _one(self, text):
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "replace")).digest()[:8], "big")
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts):
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def embed_query(self, text):
        return self._one(text)
"""


def consistency_problems(dsn: str, bank: str) -> list[str]:
    """What does not add up in ``bank``: statistics kept by triggers against direct counts,
    and references that point nowhere."""
    import psycopg

    problems = []
    with psycopg.connect(dsn) as conn:

        def one(query: str) -> Any:
            row = conn.execute(query, {"bank": bank}).fetchone()
            return None if row is None else (row[0] if len(row) == 1 else tuple(row))

        kept = one("SELECT memories, lexemes FROM bank_stats WHERE bank_id = %(bank)s") or (0, 0)
        counted = one(
            "SELECT count(*), coalesce(sum(length(search_vector)), 0) "
            "FROM memory_units WHERE bank_id = %(bank)s"
        )
        if tuple(kept) != tuple(counted):
            problems.append(f"bank_stats {kept} != counted {counted}")
        drift = one("""
            SELECT count(*) FROM (
              SELECT lexeme, df FROM term_stats WHERE bank_id = %(bank)s AND df > 0
              EXCEPT
              SELECT x, count(*) FROM memory_units u, unnest(tsvector_to_array(u.search_vector)) x
              WHERE u.bank_id = %(bank)s GROUP BY x) d""")
        if drift:
            problems.append(f"{drift} term_stats rows differ from direct counts")
        orphans = one("""
            SELECT count(*) FROM entities e WHERE e.bank_id = %(bank)s AND NOT EXISTS (
              SELECT 1 FROM unit_entities ue WHERE ue.bank_id = e.bank_id AND ue.entity_id = e.id)""")
        if orphans:
            problems.append(f"{orphans} entities no memory mentions")
    return problems
