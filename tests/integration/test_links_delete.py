"""A memory's links and mentions go with it, whoever deletes it (migration 0024: a statement
trigger on memory_units, since the foreign keys that cascaded are gone), and a link whose
memory is gone is harmless: recall never returns it nor follows it (every reader joins
memory_units).

Deleted by id, by document (``delete(document_id=...)``, ``delete_documents``, a document
replaced by a re-retain), by a stream's position, and with the whole bank: afterwards no
``memory_links`` row names a memory that is not stored, and no ``unit_entities`` row a memory
or an entity that is not.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from shared_core import MemoryEngine, MemoryItem

NOW = dt.datetime(2024, 6, 10, 12, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)

TEXTS = [
    "Alice went hiking near Denver with Bob last Saturday.",
    "Bob said work at Dunder Mifflin has been hectic since March.",
    "Alice and Bob planned a trip to Denver in July.",
    "Melanie adopted a cat named Pixel in Denver.",
    "Bob moved to Denver for a job at Dunder Mifflin.",
    "Alice told Melanie that Pixel the cat loves the hiking trail.",
]

# A bank's rows naming a memory or an entity that is not stored.
DANGLING = """
SELECT
  (SELECT count(*) FROM memory_links l WHERE l.bank_id = %(b)s AND NOT EXISTS (
      SELECT 1 FROM memory_units u WHERE u.bank_id = l.bank_id AND u.id = l.from_id)) AS from_gone,
  (SELECT count(*) FROM memory_links l WHERE l.bank_id = %(b)s AND NOT EXISTS (
      SELECT 1 FROM memory_units u WHERE u.bank_id = l.bank_id AND u.id = l.to_id)) AS to_gone,
  (SELECT count(*) FROM unit_entities ue WHERE ue.bank_id = %(b)s AND NOT EXISTS (
      SELECT 1 FROM memory_units u WHERE u.bank_id = ue.bank_id AND u.id = ue.unit_id)) AS unit_gone,
  (SELECT count(*) FROM unit_entities ue WHERE ue.bank_id = %(b)s AND NOT EXISTS (
      SELECT 1 FROM entities e WHERE e.bank_id = ue.bank_id AND e.id = ue.entity_id)) AS entity_gone"""

ROWS_OF_BANK = """
SELECT (SELECT count(*) FROM memory_links WHERE bank_id = %(b)s),
       (SELECT count(*) FROM unit_entities WHERE bank_id = %(b)s),
       (SELECT count(*) FROM entities WHERE bank_id = %(b)s),
       (SELECT count(*) FROM memory_units WHERE bank_id = %(b)s)"""

# Links and mentions naming these memories.
NAMING = """
SELECT (SELECT count(*) FROM memory_links
        WHERE bank_id = %(b)s AND (from_id = ANY(%(ids)s::uuid[]) OR to_id = ANY(%(ids)s::uuid[]))),
       (SELECT count(*) FROM unit_entities WHERE bank_id = %(b)s AND unit_id = ANY(%(ids)s::uuid[]))"""


def _items(document_id: str | None = None, start: int = 0) -> list[MemoryItem]:
    return [
        MemoryItem(text=t, mentioned_at=NOW - (10 - start - i) * DAY, document_id=document_id)
        for i, t in enumerate(TEXTS)
    ]


def _one(dsn: str, query: str, params: dict[str, object] | None = None) -> tuple[int, ...]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query, params).fetchone()
    assert row is not None
    return tuple(int(v) for v in row)


def _no_dangling(dsn: str, bank: str) -> None:
    assert _one(dsn, DANGLING, {"b": bank}) == (0, 0, 0, 0)


def _named(dsn: str, bank: str, ids: list[str]) -> tuple[int, ...]:
    return _one(dsn, NAMING, {"b": bank, "ids": ids})


def test_deleting_memories_by_id_takes_their_links_and_mentions(engine: MemoryEngine, bank: str) -> None:
    ids = [engine.retain([item], bank=bank, progress=False)[0] for item in _items()]
    gone = [ids[2], ids[4]]  # both linked from later memories and to earlier ones
    links, mentions = _named(engine.dsn, bank, gone)
    assert links > 0 and mentions > 0  # the test deletes something
    total_links = _one(engine.dsn, ROWS_OF_BANK, {"b": bank})[0]
    assert engine.delete(gone, bank=bank) == 2
    assert _named(engine.dsn, bank, gone) == (0, 0)
    # only theirs went
    assert _one(engine.dsn, ROWS_OF_BANK, {"b": bank})[0] == total_links - links
    _no_dangling(engine.dsn, bank)


def test_deleting_a_document_takes_its_memories_links(engine: MemoryEngine, bank: str) -> None:
    kept = engine.retain(_items(), bank=bank, progress=False)
    doc = engine.retain(_items("doc-a", start=1), bank=bank, progress=False)
    other = engine.retain(_items("doc-b", start=2), bank=bank, progress=False)
    assert _named(engine.dsn, bank, doc)[0] > 0
    assert engine.delete(bank=bank, document_id="doc-a") == len(doc)
    assert _named(engine.dsn, bank, doc) == (0, 0)
    _no_dangling(engine.dsn, bank)
    assert engine.delete_documents(["doc-b"], bank=bank) == len(other)
    assert _named(engine.dsn, bank, other) == (0, 0)
    _no_dangling(engine.dsn, bank)
    assert _named(engine.dsn, bank, kept)[0] > 0  # the others' links stay


def test_replacing_a_document_takes_the_old_memories_links(engine: MemoryEngine, bank: str) -> None:
    engine.retain(_items(), bank=bank, progress=False)
    first = engine.retain(_items("doc"), bank=bank, progress=False)
    assert _named(engine.dsn, bank, first)[0] > 0
    second = engine.retain(_items("doc", start=3), bank=bank, progress=False)
    assert not set(first) & set(second)
    assert _named(engine.dsn, bank, first) == (0, 0)
    _no_dangling(engine.dsn, bank)


def test_a_stream_delete_and_a_bank_drop_leave_nothing_behind(engine: MemoryEngine, bank: str) -> None:
    stream = engine.stream(bank)
    for item in _items():
        engine.retain([item], bank=bank, progress=False)
    engine.retain(_items("doc"), bank=bank, progress=False)
    links, mentions, entities, units = _one(engine.dsn, ROWS_OF_BANK, {"b": bank})
    assert links and mentions and entities and units
    stream.drop()
    assert _one(engine.dsn, ROWS_OF_BANK, {"b": bank}) == (0, 0, 0, 0)
    _no_dangling(engine.dsn, bank)


def test_links_to_missing_memories_are_never_returned_nor_followed(engine: MemoryEngine, bank: str) -> None:
    ids = [engine.retain([item], bank=bank, progress=False)[0] for item in _items()]
    queries = ["Who went hiking near Denver?", "What happened at Dunder Mifflin in March?", "Pixel the cat"]

    def recalled() -> list[list[tuple[str, float]]]:
        return [
            [(m.id, m.score) for m in engine.recall(q, bank=bank, max_tokens=10_000).memories]
            for q in queries
        ]

    before = recalled()
    # Links from stored memories to memories that are not stored (and back), of every type
    # the arms follow, at full weight: what a retain racing a delete leaves (migration 0024).
    ghosts = [str(uuid.uuid4()) for _ in ids]
    with psycopg.connect(engine.dsn) as conn:
        for kind in ("semantic", "temporal", "causes"):
            conn.execute(
                "INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight) "
                "SELECT %(b)s, f, t, %(k)s, 1.0 FROM unnest(%(f)s::uuid[], %(t)s::uuid[]) AS x(f, t)",
                {"b": bank, "k": kind, "f": ids, "t": ghosts},
            )
            conn.execute(
                "INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight) "
                "SELECT %(b)s, f, t, %(k)s, 1.0 FROM unnest(%(f)s::uuid[], %(t)s::uuid[]) AS x(f, t)",
                {"b": bank, "k": kind, "f": ghosts, "t": ids},
            )
    assert recalled() == before
    assert all(m for m in before)  # the queries find something
    # Deleting a memory takes the dangling links that name it too.
    engine.delete([ids[0]], bank=bank)
    assert _named(engine.dsn, bank, [ids[0]]) == (0, 0)


@pytest.mark.parametrize("constraint", ["memory_links", "unit_entities"])
def test_no_foreign_key_checks_links_or_mentions(engine: MemoryEngine, constraint: str) -> None:
    """What a retain's links and mentions cost: no row lock on an old memory or entity."""
    engine.stats("fk-probe")  # the schema exists
    with psycopg.connect(engine.dsn) as conn:
        rows = conn.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = %s::regclass",
            (constraint,),
        ).fetchall()
    assert rows == []


def test_a_retain_waiting_on_a_delete_links_nothing_to_the_deleted_memory(
    engine: MemoryEngine, bank: str
) -> None:
    """The race the dropped keys closed (a retain linking to a memory deleted meanwhile) stays
    closed for the library's writers: a delete takes the bank's ``bank_stats`` row first, and a
    retain claims it before it looks for neighbours (storage/locks.py), so the retain that waits
    for the delete finds the memory gone."""
    ids = [engine.retain([item], bank=bank, progress=False)[0] for item in _items()]
    target = ids[-1]
    with psycopg.connect(engine.dsn) as deleter:
        deleter.execute("SELECT 1 FROM bank_stats WHERE bank_id = %s FOR UPDATE", (bank,))
        deleter.execute("DELETE FROM memory_units WHERE bank_id = %s AND id = %s", (bank, target))
        with ThreadPoolExecutor(1) as pool:
            # The same text a day later: a semantic and a temporal neighbour of the target.
            again = MemoryItem(text=TEXTS[-1], mentioned_at=NOW - 3 * DAY)
            future = pool.submit(engine.retain, [again], bank=bank, progress=False)
            with psycopg.connect(engine.dsn, autocommit=True) as watcher:
                for _ in range(200):  # the retain is waiting for the deleter's row lock
                    row = watcher.execute(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> %s",
                        (deleter.info.backend_pid,),
                    ).fetchone()
                    if row is not None and row[0] > 0:
                        break
                    time.sleep(0.05)
                else:
                    pytest.fail("the retain did not wait for the delete")
            deleter.commit()
            new = future.result(timeout=60)[0]
    assert _named(engine.dsn, bank, [target]) == (0, 0)
    assert _named(engine.dsn, bank, [new])[0] > 0  # it linked to the others
    _no_dangling(engine.dsn, bank)
