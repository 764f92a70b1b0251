"""The retain stage's binary ``COPY`` (``retain/plan.py`` ``COPY_STAGE``, ``stage_row``) stages
exactly what the text ``COPY`` it replaced staged, on a real server: awkward text, NULLs, empty
and quoted arrays, nested JSON, datetimes in other zones, and every float of the vector.
"""

from __future__ import annotations

import datetime as dt
import uuid

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from shared_core import MemoryEngine
from shared_core.retain.plan import COPY_STAGE, CREATE_STAGE, stage_row
from shared_core.retain.prepare import PreparedUnit, json_dumps

# The statement before the change, rows as it took them (str ids, JSON text, Python ints).
TEXT_COPY = COPY_STAGE.replace(" (FORMAT BINARY)", "")
READ_STAGE = """
SELECT id, text, context, embedding::text, fact_type, occurred_start, occurred_end, mentioned_at,
    date_grain, tags, metadata, proof_count, document_id, chunk_id, signals, cjk, index_context
FROM retain_stage ORDER BY id"""


def _units() -> list[PreparedUnit]:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    texts = ["plain", "tab\there, new\nline, back\\slash, quote \" and ' and \\N", "é ☃ 日本語 🙂", ""]
    units = []
    for i, text in enumerate(texts * 3):
        units.append(
            PreparedUnit(
                id=str(uuid.uuid4()),
                item_index=i,
                text=text,
                context=None if i % 2 else "context {i}",
                fact_type=("world", "experience", "observation")[i % 3],
                occurred_start=None if i % 4 == 0 else dt.datetime(2024, 2, 29, 23, 30, i, tzinfo=plus_two),
                occurred_end=None if i % 4 == 0 else dt.datetime(2024, 3, 1, 1, 0, tzinfo=dt.UTC),
                date_grain=None if i % 4 == 0 else "second",
                mentioned_at=dt.datetime(2023, 1, 1, 12, 0, 0, 999_999 - i, tzinfo=dt.UTC),
                tags=() if i % 3 == 0 else ("work", 'a "quoted", {braced} tag', "NULL"),
                metadata_json=json_dumps({"i": i, "nested": {"list": [1, 2.5, None, "x"]}, "é": "☃"}),
                proof_count=i,
                document_id=None if i % 2 else f"doc-{i}",
                chunk_id=None,
                index_context=None if i % 3 else "before",
            )
        )
    return units


def _connect(engine: MemoryEngine) -> psycopg.Connection[object]:
    engine.stats("stage-copy")  # the schema (and pgvector) exist once the engine has run once
    conn = psycopg.connect(engine.dsn)
    register_vector(conn)
    return conn


def _stage(
    conn: psycopg.Connection[object], statement: str, rows: list[tuple[object, ...]]
) -> list[tuple[object, ...]]:
    conn.execute("DROP TABLE IF EXISTS retain_stage")
    conn.execute(CREATE_STAGE)
    with conn.cursor() as cur, cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
    return conn.execute(READ_STAGE).fetchall()


def test_binary_stage_holds_what_the_text_stage_held(engine: MemoryEngine) -> None:
    units = _units()
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((len(units), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    signals = [f"Alice, 2024 {i}" if i % 2 else "" for i in range(len(units))]
    cjk = ["日本 本語" if i % 5 == 0 else "" for i in range(len(units))]
    text_rows = [
        (
            u.id,
            u.text,
            u.context,
            vectors[i],
            u.fact_type,
            u.occurred_start,
            u.occurred_end,
            u.mentioned_at,
            u.date_grain,
            list(u.tags),
            u.metadata_json,
            u.proof_count,
            u.document_id,
            u.chunk_id,
            signals[i],
            cjk[i],
            u.index_context,
        )
        for i, u in enumerate(units)
    ]
    binary_rows = [stage_row(u, vectors[i], signals[i], cjk[i]) for i, u in enumerate(units)]
    with _connect(engine) as conn, conn.transaction(force_rollback=True):
        before = _stage(conn, TEXT_COPY, text_rows)
        after = _stage(conn, COPY_STAGE, binary_rows)
        stored = conn.execute("SELECT embedding FROM retain_stage ORDER BY id").fetchall()
    assert len(after) == len(units)
    assert after == before
    by_id = {u.id: i for i, u in enumerate(units)}
    ids = [str(row[0]) for row in after]
    assert np.array_equal(np.stack([r[0] for r in stored]), vectors[[by_id[i] for i in ids]])


def test_naive_datetimes_are_staged_as_utc(engine: MemoryEngine) -> None:
    unit = _units()[1]
    naive = dt.datetime(2024, 5, 6, 7, 8, 9)
    unit = PreparedUnit(
        **{**{f: getattr(unit, f) for f in PreparedUnit.__dataclass_fields__}, "mentioned_at": naive}
    )
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    with _connect(engine) as conn, conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL TimeZone = 'America/New_York'")
        rows = _stage(conn, COPY_STAGE, [stage_row(unit, vector, "", "")])
    assert rows[0][7] == naive.replace(tzinfo=dt.UTC)
