"""What the arm-statement tests share (test_filtered_semantic, test_filtered_temporal,
test_temporal_entry): one query ("a walk in the mountains") as an :class:`ArmQuery`, a bank of
dated notes, whether a note falls in a window, and a statement's rows read as the temporal arm
runs its statements."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import ENTRY_SETTINGS
from shared_core.recall.filters import compile_filter
from shared_core.recall.settings import RecallSettings
from shared_core.types import FactType, TimeWindow

TOPICS = ["hiking in the alps", "a pottery class", "the quarterly budget", "a new puppy", "jazz concerts"]
START = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)


def arm_query(
    engine: MemoryEngine,
    bank: str,
    *,
    spec: dict[str, object] | None = None,
    tags: list[str] | None = None,
    window: TimeWindow | None = None,
    n: int = 20,
    types: tuple[FactType, ...] = ("world", "experience"),
    asks_when: bool = False,
) -> ArmQuery:
    """The query "a walk in the mountains" over ``bank``: metadata filter ``spec``, ``tags``
    (matched ``any_strict``), ``window``, ``n`` hits of ``types``."""
    return ArmQuery(
        bank=bank,
        vector=np.asarray(engine.embedder.embed_query("a walk in the mountains"), dtype=np.float32),
        words=(),
        bigrams=(),
        types=types,
        tags=tuple(tags) if tags else None,
        tags_match="any_strict" if tags else "any",
        n=n,
        window=window,
        settings=RecallSettings(),
        filter=compile_filter(spec),
        asks_when=asks_when,
    )


def dated_notes() -> list[MemoryItem]:
    """90 notes a week apart over two years, of three kinds: dated by a single day, spanning a
    month (some across a window's start), and only said at a time (undated: not dated
    evidence); a fifth of them in team "a", every third tagged "odd"."""
    items = []
    for i in range(90):
        day = START + dt.timedelta(days=8 * i, hours=i % 24)
        kind = i % 3
        items.append(
            MemoryItem(
                text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.",
                fact_type="experience" if i % 4 == 0 else "world",
                occurred_start=day if kind < 2 else None,
                occurred_end=day + dt.timedelta(days=30) if kind == 1 else None,
                mentioned_at=day + dt.timedelta(days=2),
                tags=("odd",) if i % 3 == 1 else (),
                metadata={"team": "a" if i % 5 == 0 else "b"},
            )
        )
    return items


def inside(item: MemoryItem, window: TimeWindow) -> bool:
    """Whether ``item`` belongs to ``window``: said in it, or its occurred span overlaps it."""
    said = item.mentioned_at is not None and window.start <= item.mentioned_at <= window.end
    if item.occurred_start is None:
        return said
    end = item.occurred_end or item.occurred_start
    return said or (item.occurred_start <= window.end and end >= window.start)


def entry_rows(
    engine: MemoryEngine, statement: sql.Composed, params: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """(id, similarity, dates...) of each row of a temporal statement run with the arm's
    settings (:data:`ENTRY_SETTINGS`), in the statement's order."""
    with psycopg.connect(engine.dsn) as conn:
        register_vector(conn)
        for name, value in ENTRY_SETTINGS.items():
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        rows = conn.execute(statement, params).fetchall()
    return [(str(r[0]), float(r[1]), *r[2:]) for r in rows]
