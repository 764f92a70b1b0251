"""Pooled connections run in UTC: recalled dates carry ``datetime.UTC`` (psycopg's tzinfo for a
session in the zone named 'UTC'), on the sync and the async pool, whatever the server's own
default zone; instants never change (the library's times are UTC throughout)."""

from __future__ import annotations

import asyncio
import datetime as dt

from shared_core import MemoryEngine
from shared_core.types import RecallResult


def _dates(result: RecallResult) -> list[dt.datetime]:
    return [
        d
        for m in result.memories
        for d in (m.occurred_start, m.occurred_end, m.mentioned_at)
        if d is not None
    ]


def test_recalled_dates_are_in_utc_on_both_pools(engine: MemoryEngine, bank: str) -> None:
    said = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    engine.retain(
        [{"text": "Alice joined Google in March 2021.", "mentioned_at": said}], bank=bank, progress=False
    )
    synced = engine.recall("When did Alice join Google?", bank=bank, reranker="none")
    awaited = asyncio.run(engine.arecall("When did Alice join Google?", bank=bank, reranker="none"))
    for result in (synced, awaited):
        dates = _dates(result)
        assert dates, "the memory has a mention date at least"
        assert all(d.tzinfo is dt.UTC for d in dates)
        assert said in dates  # the same instant, now written in UTC
