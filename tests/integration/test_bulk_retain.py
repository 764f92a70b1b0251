"""retain_bulk stores each batch exactly as retain(batch) does (units, keyword documents,
vectors, dates, entities, links), validates everything before writing, and lands whole or not
at all."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import psycopg
import pytest

from shared_core import MemoryEngine
from shared_core.errors import ConfigurationError, InvalidItemError
from shared_core.types import MemoryItem

T0 = dt.datetime(2024, 5, 3, 14, 0, tzinfo=dt.UTC)
TEXTS = [
    'Caroline said, "I went to the LGBTQ support group yesterday and it was powerful."',
    'Melanie said, "Wow Caroline! I painted a sunrise at the lake last week."',
    'Caroline said, "Next month I\'m moving to Lisbon to work for Northwind Labs."',
    'Melanie said, "lol ok, see you on Friday then."',
    'Jon said, "My dance studio in Denver opens on 20 June 2023."',
    'Gina said, "Jon, I lost my job at Door Dash in January."',
    'Caroline said, "The adoption agency in Boston called me back today."',
    'Melanie said, "pottery class was fun, the kids loved it."',
    'Caroline said, "Yesterday I went to the LGBTQ support group; it was so powerful."',
    'Gina said, "I started my clothing store, Gina\'s Closet, in March."',
]
UNITS = """
SELECT u.id::text AS id, u.text, u.embedding::text AS embedding, u.fact_type, u.occurred_start,
       u.occurred_end, u.date_grain, u.mentioned_at, u.document_id, u.index_context,
       u.search_vector::text AS search_vector, u.metadata,
       coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
                 FROM unit_entities ue JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = u.bank_id AND ue.unit_id = u.id), '{}') AS entities
FROM memory_units u WHERE u.bank_id = %(bank)s ORDER BY (u.metadata->>'n')::int"""
LINKS = """
SELECT from_id::text AS from_id, to_id::text AS to_id, link_type, round(weight::numeric, 5) AS weight
FROM memory_links WHERE bank_id = %(bank)s"""


def _items(per_document: int = 4) -> list[MemoryItem]:
    return [
        MemoryItem(
            text=t,
            mentioned_at=T0 + dt.timedelta(hours=i),
            metadata={"n": i},
            document_id=f"conv-{i // per_document}" if i < 8 else None,
        )
        for i, t in enumerate(TEXTS)
    ]


def _snapshot(engine: MemoryEngine, bank: str) -> tuple[list[dict[str, Any]], set[tuple[Any, ...]]]:
    with psycopg.connect(engine.dsn) as conn:
        cur = conn.cursor(row_factory=psycopg.rows.dict_row)
        units = cur.execute(UNITS, {"bank": bank}).fetchall()
        position = {u["id"]: u["metadata"]["n"] for u in units}
        links = {
            (position[r["from_id"]], position[r["to_id"]], r["link_type"], r["weight"])
            for r in cur.execute(LINKS, {"bank": bank}).fetchall()
        }
    for u in units:
        del u["id"]
    return units, links


def test_bulk_rows_equal_retain_once_per_batch(engine: MemoryEngine, bank: str) -> None:
    one_by_one = f"{bank}-calls"
    items = _items()
    for start in range(0, len(items), 4):
        engine.retain(items[start : start + 4], bank=one_by_one, progress=False)
    ids = engine.retain_bulk(items, bank=bank, batch_size=4, progress=False)
    assert len(ids) == len(items) == len(set(ids))

    bulk_units, bulk_links = _snapshot(engine, bank)
    call_units, call_links = _snapshot(engine, one_by_one)
    assert bulk_units == call_units
    assert bulk_links == call_links
    assert any(u["entities"] for u in bulk_units) and any(u["occurred_start"] for u in bulk_units)
    assert {kind for _, _, kind, _ in bulk_links} >= {"semantic", "temporal"}
    # Later batches link to earlier ones through the database.
    assert any(a >= 4 and b < 4 for a, b, kind, _ in bulk_links if kind == "semantic")


def test_bulk_document_across_batches_is_extended_not_replaced(engine: MemoryEngine, bank: str) -> None:
    engine.retain_bulk(_items(per_document=8), bank=bank, batch_size=3, progress=False)
    assert engine.stats(bank).memories == len(TEXTS)
    # Retained again, the document is replaced once, as a whole.
    engine.retain_bulk(_items(per_document=8), bank=bank, batch_size=3, progress=False)
    assert engine.stats(bank).memories == len(TEXTS) + 2


def test_a_bad_item_in_a_later_batch_writes_nothing_and_names_its_position(
    engine: MemoryEngine, bank: str
) -> None:
    items: list[Any] = [*_items(), {"text": "   "}]
    with pytest.raises(InvalidItemError) as info:
        engine.retain_bulk(items, bank=bank, batch_size=4, progress=False)
    assert info.value.index == len(TEXTS)
    assert engine.stats(bank).memories == 0


def test_a_wrong_dimension_in_a_later_batch_rolls_back_the_earlier_ones(
    engine: MemoryEngine, bank: str
) -> None:
    dim = engine.embedder.dimension
    items = [MemoryItem(text=t, embedding=[0.1] * dim) for t in TEXTS[:5]]
    items.append(MemoryItem(text="Bob skis.", embedding=[0.1] * (dim + 1)))
    with pytest.raises(InvalidItemError) as info:
        engine.retain_bulk(items, bank=bank, batch_size=3, progress=False)
    assert info.value.index == 5
    assert engine.stats(bank).memories == 0


def test_index_references_stay_inside_their_batch(engine: MemoryEngine, bank: str) -> None:
    inside = [MemoryItem(text="The road flooded."), MemoryItem(text="School closed.", caused_by=(0,))]
    engine.retain_bulk(inside, bank=bank, batch_size=2, progress=False)
    assert engine.stats(bank).links_by_type.get("caused_by") == 1
    across = [MemoryItem(text="The road flooded."), MemoryItem(text="School closed.", caused_by=(0,))]
    with pytest.raises(InvalidItemError, match="another batch"):
        engine.retain_bulk(across, bank=f"{bank}-x", batch_size=1, progress=False)


def test_async_twin(engine: MemoryEngine, bank: str) -> None:
    ids = asyncio.run(engine.aretain_bulk(TEXTS[:5], bank=bank, batch_size=2, progress=False))
    assert len(ids) == 5 and engine.stats(bank).memories == 5


def test_bulk_with_extraction_processes_stores_what_in_process_extraction_stores(
    engine: MemoryEngine, bank: str
) -> None:
    in_process = f"{bank}-local"
    engine.retain_bulk(_items(), bank=in_process, batch_size=4, progress=False, processes=0)
    engine.retain_bulk(_items(), bank=bank, batch_size=4, progress=False, processes=2)
    local_units, local_links = _snapshot(engine, in_process)
    units, links = _snapshot(engine, bank)
    assert units == local_units and links == local_links
    assert any(u["entities"] for u in units) and any(u["occurred_start"] for u in units)


def test_a_negative_process_count_is_refused(engine: MemoryEngine, bank: str) -> None:
    with pytest.raises(ConfigurationError, match="processes"):
        engine.retain_bulk(TEXTS[:2], bank=bank, processes=-1, progress=False)


def test_async_twin_with_an_extraction_process(engine: MemoryEngine, bank: str) -> None:
    ids = asyncio.run(engine.aretain_bulk(_items(), bank=bank, batch_size=4, progress=False, processes=1))
    units, _ = _snapshot(engine, bank)
    assert len(ids) == len(TEXTS) and any(u["entities"] for u in units)


POSTINGS_DIFF = """
SELECT count(*) FROM (
    (SELECT * FROM memory_postings WHERE bank_id = %(bank)s
     EXCEPT ALL
     SELECT p.* FROM memory_units u, memory_postings_of(u.bank_id, u.id, u.search_vector) p
     WHERE u.bank_id = %(bank)s)
    UNION ALL
    (SELECT p.* FROM memory_units u, memory_postings_of(u.bank_id, u.id, u.search_vector) p
     WHERE u.bank_id = %(bank)s
     EXCEPT ALL
     SELECT * FROM memory_postings WHERE bank_id = %(bank)s)) d"""


def test_bulk_retain_and_a_dropped_bank_keep_the_keyword_postings_exact(
    engine: MemoryEngine, bank: str
) -> None:
    """The keyword arm's postings (migration 0022) follow the bulk path's writes, a document it
    replaces, and a bank deleted whole (the cascade from ``banks``)."""
    engine.retain_bulk(_items(per_document=8), bank=bank, batch_size=3, progress=False)
    engine.retain_bulk(_items(per_document=8), bank=bank, batch_size=3, progress=False)  # replaces conv-0
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        count = conn.execute("SELECT count(*) FROM memory_postings WHERE bank_id = %(bank)s", {"bank": bank})
        assert (row := count.fetchone()) is not None and row[0] > 0
        assert conn.execute(POSTINGS_DIFF, {"bank": bank}).fetchone() == (0,)
        conn.execute("DELETE FROM banks WHERE bank_id = %(bank)s", {"bank": bank})
        count = conn.execute("SELECT count(*) FROM memory_postings WHERE bank_id = %(bank)s", {"bank": bank})
        assert count.fetchone() == (0,)


DOCUMENT_UNITS = """
SELECT u.text, u.embedding::text AS embedding, u.occurred_start, u.occurred_end, u.date_grain,
       u.document_id, u.index_context, u.search_vector::text AS search_vector,
       coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
                 FROM unit_entities ue JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = u.bank_id AND ue.unit_id = u.id), '{}') AS entities,
       u.id::text AS id
FROM memory_units u WHERE u.bank_id = %(bank)s ORDER BY u.id"""


def _document() -> str:
    """About 1,000 tokens of prose with names, places and dates: several sentence windows."""
    people = ["Amara Okafor", "Jon Reyes", "Gina Park", "Caroline Diaz", "Melanie Stone"]
    places = ["Lisbon", "Denver", "Boston", "Nairobi", "Osaka"]
    months = ["March", "June", "September", "December", "January"]
    sentences = [
        f"In {months[i % 5]} {2011 + i}, {people[i % 5]} moved to {places[(i + 2) % 5]} to work for "
        f"Northwind Labs. Two weeks later {people[(i + 1) % 5]} visited, and they met again on the "
        f"{i % 27 + 1}th of {months[(i + 3) % 5]}."
        for i in range(24)
    ]
    return " ".join(sentences)


def _document_snapshot(engine: MemoryEngine, bank: str) -> tuple[list[dict[str, Any]], set[tuple[Any, ...]]]:
    with psycopg.connect(engine.dsn) as conn:
        cur = conn.cursor(row_factory=psycopg.rows.dict_row)
        units = cur.execute(DOCUMENT_UNITS, {"bank": bank}).fetchall()
        position = {u.pop("id"): i for i, u in enumerate(units)}  # uuid7: in document order
        links = {
            (position[r["from_id"]], position[r["to_id"]], r["link_type"], r["weight"])
            for r in cur.execute(LINKS, {"bank": bank}).fetchall()
        }
    return units, links


def test_a_document_through_extraction_processes_stores_what_retain_stores(
    engine: MemoryEngine, bank: str
) -> None:
    # The 1 MB document's measured alternative (docs/benchmarks/doc20_document.md): the same
    # item through retain_bulk with its extraction in worker processes.
    text = _document()
    retained = f"{bank}-retain"
    engine.retain([MemoryItem(text=text, mentioned_at=T0)], bank=retained, document_id="d", progress=False)
    engine.retain_bulk(
        [MemoryItem(text=text, mentioned_at=T0, document_id="d")], bank=bank, progress=False, processes=2
    )
    units, links = _document_snapshot(engine, bank)
    expected_units, expected_links = _document_snapshot(engine, retained)
    assert len(units) >= 4  # split into sentence windows
    assert units == expected_units and links == expected_links
    assert all(u["occurred_start"] is not None for u in units) and all(u["entities"] for u in units)
