"""Command-line options shared by the scripts that recall from the 100k bench bank."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

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
    add_scope_args(p)
    p.add_argument("--explain", action="store_true")
    p.add_argument(
        "--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or data_root("bench-pgdata")
    )


def add_scope_args(p: argparse.ArgumentParser) -> None:
    """``--filter`` (a PGVector-style filter, JSON), ``--tags`` and ``--tags-match``: what a
    recall is scoped to; :func:`scope_options` turns them into recall options."""
    p.add_argument("--filter", type=json.loads, default=None, help="a PGVector-style filter (JSON)")
    p.add_argument("--tags", nargs="*", default=None)
    p.add_argument("--tags-match", default="any")


def scope_options(args: argparse.Namespace) -> dict[str, Any]:
    """The recall options (``filter``, ``tags``, ``tags_match``) the scope arguments ask for;
    none for an unscoped recall.

    >>> p = argparse.ArgumentParser()
    >>> add_scope_args(p)
    >>> scope_options(p.parse_args([])), scope_options(p.parse_args(["--tags", "a", "--filter", "{}"]))
    ({}, {'filter': {}, 'tags': ['a'], 'tags_match': 'any'})
    """
    options: dict[str, Any] = {}
    if args.filter is not None:
        options["filter"] = args.filter
    if args.tags is not None:
        options.update(tags=args.tags, tags_match=args.tags_match)
    return options
