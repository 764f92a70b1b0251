"""Worker processes of the A/B scripts (``recall_ab.py``, ``single_retain_ab.py``): each source
tree runs in a process of its own (this interpreter, ``PYTHONPATH`` = the tree) that prints
``ready`` once set up, then answers each line ``i`` read from its stdin with one JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Workers load the embedding model: offline, as every benchmark runs (a variable already set wins).
_OFFLINE: Mapping[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def start_worker(
    code: str, argv: Sequence[str], tree: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """Run ``code`` (``python -c``) with ``argv`` on ``tree`` and wait for its ``ready`` line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**_OFFLINE, **os.environ, **(env or {}), "PYTHONPATH": str(tree)},
        cwd=tree,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def ask(proc: subprocess.Popen[str], i: int) -> dict[str, Any]:
    """Send call number ``i`` to a worker and read its JSON answer."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{i}\n")
    proc.stdin.flush()
    result: dict[str, Any] = json.loads(proc.stdout.readline())
    return result
