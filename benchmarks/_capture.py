"""What the statement-level what-ifs (``type_test_whatif.py``, ``filtered_temporal_ab.py``) share:
capturing the statements a recall runs, with their parameters, and the :class:`ArmQuery` of the
command line's scope, so a captured statement can be rebuilt in another variant and run with the
same parameters.

Both import ``shared_core`` lazily: the scripts choose the tree to measure before it is imported.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from shared_core import MemoryEngine
    from shared_core.recall.arms import ArmQuery

Captured = list[tuple[str, str, dict[str, Any]]]
"""``(kind, statement text, parameters)`` of each captured statement, in the order they ran."""


@contextlib.contextmanager
def capturing(kind_of: Callable[[str], str | None]) -> Iterator[Captured]:
    """Record every composed, parameterised statement any psycopg cursor runs inside the block
    whose text ``kind_of`` names (``None``: not recorded). The statements still run.

    >>> with capturing(lambda text: None) as captured:
    ...     pass
    >>> captured
    []
    """
    captured: Captured = []
    original = psycopg.Cursor.execute

    def execute(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kw: Any) -> Any:
        if params is not None and not isinstance(query, str | bytes):
            text = query.as_string(None)
            kind = kind_of(text)
            if kind is not None:
                captured.append((kind, text, dict(params)))
        return original(self, query, params, **kw)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        yield captured
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]


def scope_arm_query(
    engine: MemoryEngine, bank: str, args: argparse.Namespace, *, dimension: int = 384
) -> ArmQuery:
    """The arms' query for the scope of ``args`` (``_args.add_scope_args``: ``--filter``,
    ``--tags``, ``--tags-match``), every fact type asked, its filter compiled as the semantic
    arm's prepare compiles it (ranges given their values): the ``where`` SQL of the statements
    a recall under that scope ran, so their captured parameters fit the rebuilt statements."""
    import numpy as np

    from shared_core.recall.arms import ArmQuery
    from shared_core.recall.filters import MATCH_ALL, compile_filter, range_values_plan
    from shared_core.recall.settings import RecallSettings
    from shared_core.types import FACT_TYPES

    compiled = engine.run(range_values_plan(bank, compile_filter(args.filter))) if args.filter else MATCH_ALL
    return ArmQuery(
        bank=bank,
        vector=np.zeros(dimension, dtype=np.float32),
        words=(),
        bigrams=(),
        types=FACT_TYPES,
        tags=tuple(args.tags) if args.tags else None,
        tags_match=args.tags_match,
        n=1,
        window=None,
        settings=RecallSettings(),
        filter=compiled,
    )
