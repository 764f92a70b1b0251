"""The small retain (retain/small.py, issue 15.2) stores what the batch plan stores.

Two banks are seeded identically, then the same prepared retain is written into one by the
batch plan (staging table, COPY) and into the other by the small plan (pipelines, one INSERT
per unit). Every stored row (units with their keyword documents and vectors, entities with
their counts and dates, mentions, links with their weights, documents, bank and term
statistics) must be equal, ids aside (they are compared through the units' texts and the
entities' keys).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import psycopg
import pytest

from shared_core import MemoryEngine, MemoryItem
from shared_core.errors import DimensionMismatchError, InvalidItemError
from shared_core.retain.flow import RetainContext, prepare_retain
from shared_core.retain.plan import retain_plan
from shared_core.retain.small import SMALL_RETAIN_MAX_UNITS, is_small, small_retain_plan
from shared_core.storage.plan import Pipeline, Plan, Query

NOW = dt.datetime(2024, 6, 10, 12, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)

SEED = [
    MemoryItem(text="Priya joined Google as a data scientist in March 2023.", mentioned_at=NOW - 90 * DAY),
    MemoryItem(text="Alice went hiking near Denver with Bob last Saturday.", mentioned_at=NOW - 9 * DAY),
    MemoryItem(
        text="Bob said work at Dunder Mifflin has been hectic since March.", mentioned_at=NOW - 8 * DAY
    ),
    MemoryItem(text="Zara signed up for a pottery class in Lisbon.", mentioned_at=NOW - 5 * DAY),
    MemoryItem(text="Melanie adopted a cat named Pixel.", mentioned_at=NOW - 4 * DAY, tags=("pets",)),
    MemoryItem(text="The team offsite in Denver is planned for July.", mentioned_at=NOW - 3 * DAY),
    MemoryItem(text="Liam: ok, sounds good", mentioned_at=NOW - 2 * DAY),
    MemoryItem(text="Google announced a new office in Lisbon yesterday.", mentioned_at=NOW - DAY),
    MemoryItem(text="Alicia went hiking near Denver again.", mentioned_at=NOW - DAY),
]

CASES: dict[str, list[Any]] = {
    "one chat turn": [
        MemoryItem(
            text='Alice said, "I finally went hiking near Denver with Bob last Saturday."',
            mentioned_at=NOW,
        )
    ],
    "lower-case turn": [MemoryItem(text="ok, sounds good, see you then", mentioned_at=NOW)],
    "a document of turns": [
        MemoryItem(text="Caroline: Do you have any pets at home?", mentioned_at=NOW, document_id="chat-7"),
        MemoryItem(text="Melanie: Yes, a cat named Pixel.", mentioned_at=NOW, document_id="chat-7"),
        MemoryItem(
            text="Caroline: google said the Lisbon office opens next week.",
            mentioned_at=NOW + dt.timedelta(minutes=1),
            document_id="chat-7",
        ),
    ],
    "explicit entities, dates, metadata, causes": [
        MemoryItem(
            text="The launch slipped because the vendor was late.",
            mentioned_at=NOW,
            occurred_start=NOW - 2 * DAY,
            entities=["Vendor Co", "Priya"],
            metadata={"source": "standup", "n": 3},
            tags=("work", "launch"),
            fact_type="experience",
        ),
        MemoryItem(text="The vendor was late with the parts.", mentioned_at=NOW, causes=[0]),
    ],
}


def _bank(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _context(engine: MemoryEngine) -> RetainContext:
    return RetainContext(models=engine.models, config=engine.config, now=lambda: NOW)


def _write(engine: MemoryEngine, bank: str, items: list[Any], *, small: bool) -> list[str]:
    request, vectors = prepare_retain(_context(engine), items, bank, None)
    plan = small_retain_plan(request, vectors) if small else retain_plan(request, vectors)
    ids: list[str] = engine.run(plan)
    return ids


def _rows(dsn: str, bank: str) -> dict[str, Any]:
    """Every row the retain wrote in ``bank``, ids replaced by unit texts and entity keys."""
    with psycopg.connect(dsn) as conn:
        text_of: dict[uuid.UUID, str] = dict(
            conn.execute("SELECT id, text FROM memory_units WHERE bank_id = %s", (bank,)).fetchall()
        )
        key_of: dict[uuid.UUID, str] = dict(
            conn.execute("SELECT id, match_key FROM entities WHERE bank_id = %s", (bank,)).fetchall()
        )
        units = conn.execute(
            """SELECT text, context, embedding::text, fact_type, occurred_start, occurred_end,
                      mentioned_at, date_grain, tags, metadata, proof_count, document_id, chunk_id,
                      index_context, search_vector::text, created_at, updated_at, event_date
               FROM memory_units WHERE bank_id = %s ORDER BY text""",
            (bank,),
        ).fetchall()
        entities = conn.execute(
            """SELECT match_key, canonical_name, mention_count, first_seen, last_seen
               FROM entities WHERE bank_id = %s ORDER BY match_key""",
            (bank,),
        ).fetchall()
        mentions = sorted(
            (text_of[u], key_of[e])
            for u, e in conn.execute(
                "SELECT unit_id, entity_id FROM unit_entities WHERE bank_id = %s", (bank,)
            ).fetchall()
        )
        links = sorted(
            (text_of[f], text_of[t], kind, weight)
            for f, t, kind, weight in conn.execute(
                "SELECT from_id, to_id, link_type, weight FROM memory_links WHERE bank_id = %s", (bank,)
            ).fetchall()
        )
        documents = conn.execute(
            "SELECT document_id FROM documents WHERE bank_id = %s ORDER BY 1", (bank,)
        ).fetchall()
        stats = conn.execute(
            "SELECT memories, lexemes FROM bank_stats WHERE bank_id = %s", (bank,)
        ).fetchall()
        terms = conn.execute(
            "SELECT lexeme, df FROM term_stats WHERE bank_id = %s ORDER BY lexeme", (bank,)
        ).fetchall()
    return {
        "units": units,
        "entities": entities,
        "mentions": mentions,
        "links": links,
        "documents": documents,
        "stats": stats,
        "terms": terms,
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_small_path_stores_the_batch_paths_rows(engine: MemoryEngine, case: str) -> None:
    items = CASES[case]
    request, _ = prepare_retain(_context(engine), items, "any", None)
    assert is_small(request)
    batch_bank, small_bank = _bank("batch"), _bank("small")
    for bank in (batch_bank, small_bank):
        _write(engine, bank, SEED, small=False)
    batch_ids = _write(engine, batch_bank, items, small=False)
    small_ids = _write(engine, small_bank, items, small=True)
    assert len(batch_ids) == len(small_ids) == len(request.units)
    batch, small = _rows(engine.dsn, batch_bank), _rows(engine.dsn, small_bank)
    assert batch["links"], "the seed makes links: the comparison covers them"
    for table in batch:
        assert small[table] == batch[table], table


def test_engine_retain_of_one_turn_lands_whole(engine: MemoryEngine, bank: str) -> None:
    """The engine's retain of one item (the small path) writes the unit, its entities and its
    links, and a later recall finds it."""
    engine.retain(SEED, bank=bank, progress=False)
    [memory_id] = engine.retain(["Priya moved to the Lisbon office of Google."], bank=bank, progress=False)
    rows = _rows(engine.dsn, bank)
    assert "Priya moved to the Lisbon office of Google." in {u[0] for u in rows["units"]}
    assert {("Priya moved to the Lisbon office of Google.", k) for k in ("google", "lisbon", "priya")} <= set(
        rows["mentions"]
    )
    assert any(f == "Priya moved to the Lisbon office of Google." for f, _, _, _ in rows["links"])
    found = engine.recall("Where does Priya work now?", bank=bank)
    assert memory_id in {m.id for m in found.memories}


def test_small_path_errors_are_typed_and_write_nothing(engine: MemoryEngine, bank: str) -> None:
    engine.retain(["Alice works at Google."], bank=bank, progress=False)
    with pytest.raises(InvalidItemError, match="caused_by"):
        engine.retain(
            [MemoryItem(text="It rained.", caused_by=[str(uuid.uuid4())])], bank=bank, progress=False
        )
    with pytest.raises(DimensionMismatchError):
        engine.retain(
            [MemoryItem(text="Short vector.", embedding=[0.1, 0.2, 0.3])], bank=bank, progress=False
        )
    assert _rows(engine.dsn, bank)["stats"] == [(1, _rows(engine.dsn, bank)["stats"][0][1])]
    assert [u[0] for u in _rows(engine.dsn, bank)["units"]] == ["Alice works at Google."]


def test_larger_retains_take_the_batch_path(engine: MemoryEngine) -> None:
    items = [f"Memory number {i} about Denver." for i in range(SMALL_RETAIN_MAX_UNITS + 1)]
    request, _ = prepare_retain(_context(engine), items, "any", None)
    assert not is_small(request)


def _deferred_plan(bank: str, *, fail: bool) -> Plan[str]:
    """A bank row, then deferred writes (one breaks a foreign key when ``fail``)."""
    yield Query(
        "INSERT INTO banks (bank_id, embedding_model, embedding_dimension) VALUES (%(b)s, 'm', 3)",
        {"b": bank},
        fetch="none",
    )
    yield Pipeline(
        (
            Query("INSERT INTO bank_stats (bank_id) VALUES (%(b)s)", {"b": bank}, fetch="none"),
            Query(
                "INSERT INTO documents (bank_id, document_id) VALUES (%(b)s, 'd')",
                {"b": bank + "-missing" if fail else bank},
                fetch="none",
            ),
        ),
        wait=False,
    )
    return bank


def _exists(dsn: str, bank: str) -> tuple[bool, bool]:
    with psycopg.connect(dsn) as conn:
        banks = conn.execute("SELECT count(*) FROM banks WHERE bank_id = %s", (bank,)).fetchone()
        docs = conn.execute("SELECT count(*) FROM documents WHERE bank_id = %s", (bank,)).fetchone()
    assert banks is not None and docs is not None
    return bool(banks[0]), bool(docs[0])


def test_deferred_writes_land_with_the_commit_or_not_at_all(engine: MemoryEngine) -> None:
    ok, broken = _bank("deferred"), _bank("deferred")
    assert engine.run(_deferred_plan(ok, fail=False)) == ok
    assert _exists(engine.dsn, ok) == (True, True)
    with pytest.raises(Exception, match=r"foreign key|documents"):
        engine.run(_deferred_plan(broken, fail=True))
    assert _exists(engine.dsn, broken) == (False, False)
    # the pooled connection is clean afterwards
    assert engine.retain(["Alice works at Google."], bank=broken, progress=False)


def test_deferred_writes_async_twin(engine: MemoryEngine) -> None:
    async def scenario() -> None:
        ok, broken = _bank("adeferred"), _bank("adeferred")
        assert await engine.arun(_deferred_plan(ok, fail=False)) == ok
        with pytest.raises(Exception, match=r"foreign key|documents"):
            await engine.arun(_deferred_plan(broken, fail=True))
        assert _exists(engine.dsn, ok) == (True, True)
        assert _exists(engine.dsn, broken) == (False, False)
        assert await engine.aretain(["Alice works at Google."], bank=broken, progress=False)

    asyncio.run(scenario())
