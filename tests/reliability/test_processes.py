"""Several processes share one data directory (issue 14, item 2)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from .conftest import postmaster_running, private_root, run_python, spawn_python

pytestmark = pytest.mark.slow

# A user of the embedded server: opens it at the wall-clock instant argv[2], reports "open",
# then follows commands on stdin: "query" runs a statement, "close" releases the server.
_USER = """
import sys, time, psycopg
from shared_core.server import acquire_embedded, release_embedded
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
path, dsn = acquire_embedded(sys.argv[1])
print("open", flush=True)
for line in sys.stdin:
    if line.strip() == "query":
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            print("ok", conn.execute("SELECT count(*) FROM pg_class").fetchone()[0], flush=True)
    elif line.strip() == "close":
        release_embedded(path)
        print("closed", flush=True)
        break
"""

_OPEN_CLOSE = """
import sys
from shared_core.server import acquire_embedded, release_embedded
path, dsn = acquire_embedded(sys.argv[1])
release_embedded(path)
print("done")
"""


def _ask(proc: subprocess.Popen[str], command: str) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def _wait_open(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != "open":
        assert proc.stderr is not None
        proc.kill()
        raise AssertionError(f"user did not open the server: {line!r} {proc.stderr.read()}")


def test_two_processes_opening_a_new_dir_at_once_share_the_server() -> None:
    root = private_root("hindsight-two-")
    data = root / "pgdata"
    start = str(time.time() + 1.5)  # both call acquire_embedded at this same instant
    first, second = (spawn_python(_USER, str(data), start) for _ in range(2))
    try:
        _wait_open(first)
        _wait_open(second)
        users = json.loads((data / "hindsight_users.json").read_text())
        assert sorted(u["pid"] for u in users) == sorted([first.pid, second.pid])
        assert _ask(first, "query").startswith("ok")
        assert _ask(first, "close") == "closed"
        first.wait(timeout=30)
        # The server stopped under the second user before; now it must still serve it.
        assert postmaster_running(data)
        assert _ask(second, "query").startswith("ok")
        assert _ask(second, "close") == "closed"
        second.wait(timeout=30)
        assert not postmaster_running(data), "the last user's close must stop the server"
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def test_a_killed_user_does_not_keep_the_server_alive() -> None:
    root = private_root("hindsight-killed-")
    data = root / "pgdata"
    try:
        victims = []
        for _ in range(2):  # two users die without closing
            victim = spawn_python(_USER, str(data), "0")
            _wait_open(victim)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait()
            victims.append(victim.pid)
        assert postmaster_running(data)
        # The second open pruned the first dead user; the second one is still listed.
        pids = [u["pid"] for u in json.loads((data / "hindsight_users.json").read_text())]
        assert pids == victims[1:]
        # A later clean open and close prunes the dead and stops the server.
        out = run_python(_OPEN_CLOSE, str(data))
        assert out.stdout.strip() == "done", out.stderr
        assert not postmaster_running(data), "a dead pid kept the postmaster running"
        assert json.loads((data / "hindsight_users.json").read_text()) == []
    finally:
        if postmaster_running(data):  # do not leak a server if an assertion failed
            run_python(_OPEN_CLOSE, str(data))
        shutil.rmtree(root, ignore_errors=True)
