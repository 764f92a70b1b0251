"""Who still uses an embedded server: a recorded user stays alive whatever the wall clock does.

The users file records each process by pid and start time. On Linux psutil derives the start
time from the boot time, which the kernel recomputes from the wall clock: on a VM whose clock is
stepped it moves by seconds, and a live user was taken for dead (its server then stopped under
it). The pure reading of the file is tested here with the process table of this machine.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from shared_core import server


def _write(path: Path, entries: list[dict[str, float]]) -> None:
    (path / "hindsight_users.json").write_text(json.dumps(entries))


def _me() -> dict[str, float]:
    started = server._process_start(os.getpid())
    assert started is not None
    return {"pid": os.getpid(), "started": started, **server._start_key(os.getpid())}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the clock-free key is read from /proc")
def test_a_live_user_stays_alive_when_the_boot_time_moves(tmp_path: Path) -> None:
    entry = _me()
    entry["started"] -= 45.0  # what a stepped wall clock did to psutil's create_time
    _write(tmp_path, [entry])
    assert [u["pid"] for u in server._live_users(tmp_path)] == [os.getpid()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the clock-free key is read from /proc")
def test_a_reused_pid_is_not_a_live_user(tmp_path: Path) -> None:
    entry = _me()
    entry["start_ticks"] += 1  # the same pid, started at another instant: another process
    _write(tmp_path, [entry])
    assert server._live_users(tmp_path) == []


def test_a_user_recorded_without_the_key_is_judged_by_its_start_time(tmp_path: Path) -> None:
    started = server._process_start(os.getpid())
    assert started is not None
    _write(tmp_path, [{"pid": os.getpid(), "started": started}])  # a file from an older version
    assert [u["pid"] for u in server._live_users(tmp_path)] == [os.getpid()]
    _write(tmp_path, [{"pid": os.getpid(), "started": started - 45.0}])
    assert server._live_users(tmp_path) == []


def test_a_dead_pid_and_garbage_are_not_users(tmp_path: Path) -> None:
    _write(tmp_path, [{"pid": 2**22 + 12345, "started": 1.0, "start_ticks": 1}, "x", {"pid": "y"}])  # type: ignore[list-item]
    assert server._live_users(tmp_path) == []
