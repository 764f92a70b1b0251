"""Migration 0023: ``recall_details``, what a returned memory shows besides its ranking fields,
read by a function whose generic plan each connection keeps. It must return what the inline
statement it replaced returned (tags, metadata, a document's pieces in creation order, entity
names sorted), for memories with and without a document, entities, tags and metadata."""

from __future__ import annotations

from typing import Any

import psycopg

from shared_core import MemoryEngine
from shared_core.recall.hydrate import MemoryDetails, details_plan

# The statement recall ran before 0023 (main d31b697), the reference for the function's rows.
_INLINE = """
SELECT u.id::text AS id, u.tags, u.metadata,
       CASE WHEN u.document_id IS NULL THEN 0 ELSE
         (SELECT count(*) FROM memory_units p
          WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id AND p.id < u.id) END::int
         AS piece,
       CASE WHEN u.document_id IS NULL THEN 1 ELSE
         (SELECT count(*) FROM memory_units p
          WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id) END::int AS pieces,
       coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
                 FROM unit_entities ue JOIN entities e
                   ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = u.bank_id AND ue.unit_id = u.id), '{}') AS entities
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.id = ANY(%(ids)b::uuid[])"""

_LONG = " ".join(
    f"In week {i + 1}, Maria Lopez took the train from Lisbon to Porto and met Tom Baker at the "
    f"Serralves museum to plan the exhibition on Portuguese tiles with the curator."
    for i in range(40)
)


def _ids(engine: MemoryEngine, bank: str) -> list[str]:
    with psycopg.connect(engine.dsn) as conn:
        rows = conn.execute("SELECT id::text FROM memory_units WHERE bank_id = %s", (bank,)).fetchall()
    return [r[0] for r in rows]


def _inline(engine: MemoryEngine, bank: str, ids: list[str]) -> dict[str, MemoryDetails]:
    with psycopg.connect(engine.dsn) as conn, conn.cursor() as cur:
        cur.execute(_INLINE, {"bank": bank, "ids": ids})
        names = [d.name for d in cur.description or ()]
        rows: list[dict[str, Any]] = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    return {r["id"]: MemoryDetails(**r) for r in rows}


def test_function_rows_are_the_inline_statements(engine: MemoryEngine, bank: str) -> None:
    engine.retain(
        [
            {
                "text": "Maria Lopez adopted a cat named Pixel in Lisbon.",
                "tags": ["pets", "home"],
                "metadata": {"year": 2024, "source": "chat", "nested": {"a": [1, 2.5, None]}},
            },
            {"text": "the weather was fine"},  # no entity, no tag, no metadata
            {"text": _LONG, "document_id": "diary", "metadata": {"kind": "diary"}},
        ],
        bank=bank,
    )
    ids = _ids(engine, bank)
    expected = _inline(engine, bank, ids)
    assert len(expected) == len(ids) > 3  # the document was split into pieces
    assert any(d.entities for d in expected.values()) and any(not d.entities for d in expected.values())
    assert any(d.pieces > 1 for d in expected.values())
    # A few more runs than psycopg's prepare threshold and Postgres's five custom plans.
    for _ in range(8):
        got = engine.run(details_plan(bank, ids))
        assert got == expected
        assert all(list(got[i].metadata.items()) == list(expected[i].metadata.items()) for i in ids)
    # Ids of another bank, or none stored: nothing.
    assert engine.run(details_plan(bank + "-other", ids)) == {}


def test_function_plans_generically(engine: MemoryEngine, bank: str) -> None:
    engine.stats(bank)  # migrated
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute(
            "SELECT p.proconfig, p.provolatile FROM pg_proc p WHERE p.proname = 'recall_details'"
        ).fetchone()
    assert row is not None
    assert row[0] == ["plan_cache_mode=force_generic_plan"] and row[1] == "s"
