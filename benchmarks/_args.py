"""Command-line options shared by the scripts that recall from the 100k bench bank."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from _plain import data_root


def add_bank_scope_args(p: argparse.ArgumentParser) -> None:
    """``--filter`` / ``--tags`` / ``--tags-match`` (what a recall is scoped to), ``--explain``
    and ``--data-dir`` (the bench server's data directory, ``$HINDSIGHT_BENCH_PGDATA`` first).

    >>> p = argparse.ArgumentParser()
    >>> add_bank_scope_args(p)
    >>> args = p.parse_args(["--filter", '{"team": "er"}', "--tags", "travel"])
    >>> args.filter, args.tags, args.tags_match, args.explain
    ({'team': 'er'}, ['travel'], 'any', False)
    """
    p.add_argument("--filter", type=json.loads, default=None, help="a PGVector-style filter (JSON)")
    p.add_argument("--tags", nargs="*", default=None)
    p.add_argument("--tags-match", default="any")
    p.add_argument("--explain", action="store_true")
    p.add_argument(
        "--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or data_root("bench-pgdata")
    )
