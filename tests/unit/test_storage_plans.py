"""Storage plans driven without a database, from recorded rows: each statement's rows arrive
as its frozen row type (``Query(row_type=...)``), and the plans read fields by name."""

from __future__ import annotations

import dataclasses
import datetime as dt
import warnings
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest

from hindsight_langchain._import import _COLUMNS_QUERY, _Fetch, _import_plan, _Options, _Retain
from shared_core.errors import DimensionMismatchError, EmbeddingModelMismatchError
from shared_core.storage import documents, queries, stream
from shared_core.storage.plan import Query
from shared_core.types import BankInfo, BankStats, MemoryRecord
from tests.fakes import run_recorded, statement_text

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
A = "00000000-0000-7000-8000-00000000000a"
B = "00000000-0000-7000-8000-00000000000b"


def _recorded(rows: Any) -> Any:
    """An answer giving ``rows`` to every statement (``fetch="none"`` gets a count of 1)."""
    return lambda query: 1 if query.fetch == "none" else rows


def test_get_plan_reads_a_unit_into_a_record_with_tuples() -> None:
    row = {
        "id": A,
        "bank": "b",
        "text": "Alice works at Google.",
        "context": None,
        "fact_type": "world",
        "occurred_start": None,
        "occurred_end": None,
        "mentioned_at": NOW,
        "date_grain": None,
        "created_at": NOW,
        "updated_at": NOW,
        "last_accessed_at": None,
        "tags": ["work"],
        "metadata": {"k": 1},
        "proof_count": 1,
        "document_id": None,
        "chunk_id": None,
        "entities": ["Alice", "Google"],
    }
    record, ops = run_recorded(queries.get_plan("b", A), _recorded([row]))
    assert isinstance(record, MemoryRecord)
    assert record.tags == ("work",) and record.entities == ("Alice", "Google")
    assert [op.row_type for op in ops if isinstance(op, Query)] == [queries._record]
    assert run_recorded(queries.get_plan("b", A), _recorded([]))[0] is None
    assert run_recorded(queries.get_plan("b", "not-a-uuid"), _recorded([row]))[0] is None


def test_banks_and_stats_plans_return_their_public_types() -> None:
    bank: dict[str, Any] = {
        "bank": "b",
        "embedding_model": "m",
        "embedding_dimension": 384,
        "created_at": NOW,
        "memory_count": 2,
    }
    banks, _ = run_recorded(queries.banks_plan(), _recorded([bank]))
    assert banks == [BankInfo(**bank)]
    stats_row = {
        "memories_by_type": {"world": 2, "experience": 1},
        "documents": 1,
        "chunks": 0,
        "entities": 3,
        "links_by_type": {"entity": 4},
    }
    stats, _ = run_recorded(queries.stats_plan("b"), _recorded([stats_row]))
    assert stats == BankStats(
        bank="b",
        memories=3,
        memories_by_type={"world": 2, "experience": 1},
        documents=1,
        chunks=0,
        entities=3,
        links_by_type={"entity": 4},
    )


def test_delete_by_document_counts_from_the_typed_row() -> None:
    count, ops = run_recorded(queries.delete_plan("b", None, "doc-1"), _recorded([{"n": 5}]))
    assert count == 5
    assert any(op.row_type is queries.CountRow for op in ops if isinstance(op, Query))


def test_bank_embedder_names_both_sides_of_a_mismatch() -> None:
    row, _ = run_recorded(
        queries.bank_embedder_plan("b"), _recorded([{"embedding_model": "m", "embedding_dimension": 384}])
    )
    assert row == queries.BankEmbedder(embedding_model="m", embedding_dimension=384)
    row.check("b", "m", 384)
    with pytest.raises(DimensionMismatchError, match="1536"):
        row.check("b", "m", 1536)
    with pytest.raises(EmbeddingModelMismatchError, match="other"):
        row.check("b", "other", 384)
    assert run_recorded(queries.bank_embedder_plan("b"), _recorded([]))[0] is None


def test_documents_join_their_passages_or_take_the_chunk() -> None:
    rows = [
        {"key": "doc", "text": "first half.", "metadata": {"m": 1}, "chunk": None},
        {"key": "doc", "text": "second half.", "metadata": {"m": 1}, "chunk": None},
        {"key": A, "text": "part", "metadata": {}, "chunk": "the whole text"},
    ]
    found, _ = run_recorded(documents.get_documents_plan("b", [A, "missing", "doc"]), _recorded(rows))
    assert [(d.id, d.text) for d in found] == [(A, "the whole text"), ("doc", "first half. second half.")]
    assert found[1].metadata == {"m": 1}
    deleted, _ = run_recorded(documents.delete_documents_plan("b", ["doc", A]), _recorded([{"n": 2}]))
    assert deleted == 2 + 1  # the document's memories, then the memory named by its id
    vectors, _ = run_recorded(
        documents.vectors_plan("b", [A]), _recorded([{"id": A, "embedding": [1.0, 0.0]}])
    )
    assert vectors[A].dtype == np.float32 and vectors[A].tolist() == [1.0, 0.0]


def _entry_row(index: int, **extra: Any) -> dict[str, Any]:
    return {
        "index": index,
        "memory_id": f"m{index}",
        "text": f"text {index}",
        "chunk_id": None,
        "metadata": {"i": index},
        "created_at": NOW,
        "last_accessed_at": NOW,
        **extra,
    }


def test_stream_rows_become_entries() -> None:
    recent, _ = run_recorded(stream.recent_plan("b", 2), _recorded([_entry_row(4), _entry_row(3)]))
    assert [e.index for e in recent] == [3, 4]  # oldest first
    assert recent[0].metadata == {"i": 3} and recent[0].distance is None
    found, _ = run_recorded(
        stream.search_plan(
            "b", np.ones(2, np.float32), k=1, metric="cosine_distance", normalise=False, filter_json="{}"
        ),
        _recorded([_entry_row(7, distance=0.25)]),
    )
    assert found == [
        stream.StreamEntry(
            index=7,
            memory_id="m7",
            text="text 7",
            metadata={"i": 7},
            created_at=NOW,
            last_accessed_at=NOW,
            distance=0.25,
        )
    ]


def test_sweep_drops_only_banks_of_dead_processes() -> None:
    rows = [
        {"bank_id": "~stream-alive", "owner": stream._owner()},
        {"bank_id": "~stream-dead", "owner": {**stream._owner(), "pid": 2**22 + 12345}},
        {"bank_id": "~stream-odd", "owner": "hand-edited"},
    ]
    dead, ops = run_recorded(stream.sweep_plan(), _recorded(rows))
    assert dead == ["~stream-dead"]
    assert [op.params for op in ops if isinstance(op, Query) and op.fetch == "none"] == [
        {"bank": "~stream-dead"}
    ]


# --- the PGVector import: one sans-I/O pager, driven by a sync and an async runner ----------
_COLUMNS = [
    ("langchain_id", "uuid"),
    ("content", "text"),
    ("embedding", "vector"),
    ("langchain_metadata", "jsonb"),
    ("topic", "text"),
]
_SOURCE = [
    (1, "Alice works at Google.", {"a": 1}, [1.0, 0.0, 0.0], "work"),
    (2, "   ", None, None, "none"),
    (3, "Bob skis.", None, [0.0, 1.0], "sport"),  # a vector of another dimension
    (4, "Carol plays chess.", {}, None, "games"),
    (5, "Dan sings.", {}, None, "music"),
]


def _drive_import(plan: Generator[Any, Any, list[str]]) -> tuple[list[str], list[Any], list[list[Any]]]:
    """Answer the import plan's fetches from ``_SOURCE`` (keyset pages by id)."""
    fetches: list[Any] = []
    retained: list[list[Any]] = []
    value: Any = None
    while True:
        try:
            op = plan.send(value)
        except StopIteration as stop:
            return stop.value, fetches, retained
        if isinstance(op, _Retain):
            retained.append(op.items)
            value = [f"id-{item.document_id}" for item in op.items]
            continue
        assert isinstance(op, _Fetch)
        fetches.append(op)
        text = statement_text(Query(op.statement))
        if op.statement == _COLUMNS_QUERY:
            value = _COLUMNS
        elif text.startswith("SELECT count(*)"):
            value = [(len(_SOURCE),)]
        else:
            params = op.params
            assert isinstance(params, dict)
            after = -1 if params["first"] else params["after"]
            value = [row for row in _SOURCE if row[0] > after][: params["limit"]]


def test_the_import_pager_reads_keyset_pages_and_retains_each_batch() -> None:
    options = _Options(bank="b", reuse=True, dimension=3, batch_size=2, progress=False, progress_threshold=0)
    new_kwargs = {
        "id_column": "langchain_id",
        "content_column": "content",
        "embedding_column": "embedding",
        "metadata_json_column": "langchain_metadata",
        "metadata_columns": None,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids, fetches, retained = _drive_import(_import_plan(None, "docs", "public", options, new_kwargs))
    pages = [f.params for f in fetches if isinstance(f.params, dict) and "limit" in f.params]
    # ids 1-2, 3-4, then 5 (a short page ends the import without another round trip)
    assert [(p["first"], p["after"]) for p in pages] == [(True, None), (False, 2), (False, 4)]
    assert ids == ["id-1", "id-3", "id-4", "id-5"]
    items = [item for batch in retained for item in batch]
    assert items[0].embedding == [1.0, 0.0, 0.0] and items[1].embedding is None
    assert dataclasses.asdict(items[0])["metadata"] == {"a": 1, "topic": "work", "source_id": "1"}
    messages = sorted(str(w.message) for w in caught)
    assert "skipped 1 row(s) with empty text" in messages[1]
    assert "1 stored vector(s) do not have the engine's 3 dimensions" in messages[0]
