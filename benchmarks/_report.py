"""Writing benchmark reports: JSON and text files, their directories created."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["publish", "write_json", "write_text"]


def write_json(path: Path, report: Any) -> None:
    """``report`` as indented JSON (non-JSON values as ``str``), with a final newline."""
    write_text(path, json.dumps(report, indent=2, default=str) + "\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def publish(report: Any, text: str, *, out: Path | None, md: Path | None = None) -> None:
    """Print a benchmark's markdown ``text``; write ``report`` to ``out`` as JSON and ``text``
    to ``md``, each when given."""
    print(text)
    if out:
        write_json(out, report)
    if md:
        write_text(md, text + "\n")
