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


def test_entity_names_of_several_mentions_keep_their_order(engine: MemoryEngine, bank: str) -> None:
    """Migration 0025 reads the names grouped, each distinct entity once: a memory mentioning
    several entities (some shared with another memory) gets the same names in the same order
    (sorted by the server's collation, as the inline statement sorts them), one mentioning
    none an empty list."""
    engine.retain(
        [{"text": "the weather was fine"}, {"text": "we ate soup at noon"}, {"text": "it rained all day"}],
        bank=bank,
    )
    first, second, third = sorted(_ids(engine, bank))
    names = ["zeta", "Alpha", "beta", "Émile", "Bob", "alpha"]
    with psycopg.connect(engine.dsn) as conn:
        # Entity ids rising as the names' sorted order falls: names read in id order (the
        # mentions' primary key order) would come out reversed, so the order is the sort's.
        by_collation: list[str] = conn.execute(
            "SELECT array_agg(n ORDER BY n) FROM unnest(%s::text[]) n", (names,)
        ).fetchone()[0]  # type: ignore[index]
        ids = {name: f"00000000-0000-7000-8000-{i:012d}" for i, name in enumerate(reversed(by_collation))}
        for name in names:
            conn.execute(
                "INSERT INTO entities (bank_id, id, canonical_name, match_key) VALUES (%s, %s, %s, %s)",
                (bank, ids[name], name, name.lower() + ids[name]),
            )
        for unit, mentioned in ((first, names), (second, ["Bob", "zeta"])):
            for name in mentioned:
                conn.execute(
                    "INSERT INTO unit_entities (bank_id, unit_id, entity_id) VALUES (%s, %s, %s)",
                    (bank, unit, ids[name]),
                )
    expected = _inline(engine, bank, [first, second, third])
    shared = [n for n in by_collation if n in ("Bob", "zeta")]
    for _ in range(8):  # past the prepare threshold and the custom plans, as above
        got = engine.run(details_plan(bank, [first, second, third]))
        assert got == expected
        assert list(got[first].entities) == by_collation
        assert list(got[second].entities) == shared
        assert list(got[third].entities) == []
