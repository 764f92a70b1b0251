"""Retain without an LLM, against the real server and the real models (issue: extraction)."""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from shared_core import EngineConfig, InvalidItemError, MemoryEngine, MemoryItem


def _rows(engine: MemoryEngine, query: str, params: dict[str, object]) -> list[tuple]:  # type: ignore[type-arg]
    with psycopg.connect(engine.dsn) as conn:
        return conn.execute(query, params).fetchall()  # type: ignore[arg-type]


def test_mentions_of_one_company_share_an_entity_row(engine: MemoryEngine, bank: str) -> None:
    ids = engine.retain(
        ["Alice works at Google in Zurich.", "Bob interviewed at Google last week."], bank=bank
    )
    later = engine.retain(
        [
            MemoryItem(text="she loves the cafeteria at google", entities=["google"]),
            MemoryItem(text="Their parent is Google Inc.", entities=["Google Inc."]),
        ],
        bank=bank,
    )
    rows = _rows(
        engine,
        """
        SELECT ue.unit_id::text, e.canonical_name, e.mention_count
        FROM unit_entities ue JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
        WHERE ue.bank_id = %(bank)s AND e.match_key = 'google'""",
        {"bank": bank},
    )
    assert {r[0] for r in rows} == set(ids + later)
    assert {r[1] for r in rows} == {"Google"}
    assert rows[0][2] == 4
    assert (
        len(
            _rows(
                engine,
                "SELECT 1 FROM entities WHERE bank_id = %(bank)s AND match_key = 'google'",
                {"bank": bank},
            )
        )
        == 1
    )
    record = engine.get(ids[0], bank=bank)
    assert record is not None and "Google" in record.entities and "Alice" in record.entities


def test_yesterday_resolves_against_mentioned_at(engine: MemoryEngine, bank: str) -> None:
    (i,) = engine.retain(
        [
            MemoryItem(
                text='Melanie said, "I went to the support group yesterday."',
                mentioned_at=dt.datetime(2023, 5, 8, 13, 56),
            )
        ],
        bank=bank,
    )
    record = engine.get(i, bank=bank)
    assert record is not None
    assert record.occurred_start == dt.datetime(2023, 5, 7, tzinfo=dt.UTC)
    assert record.occurred_end is not None and record.occurred_end.date() == dt.date(2023, 5, 7)
    assert record.date_grain == "day"


def test_last_spring_is_the_previous_meteorological_spring(engine: MemoryEngine, bank: str) -> None:
    (i,) = engine.retain(
        [MemoryItem(text="Last spring I trained for a marathon.", mentioned_at=dt.datetime(2024, 6, 15))],
        bank=bank,
    )
    record = engine.get(i, bank=bank)
    assert record is not None
    assert record.occurred_start == dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    assert record.occurred_end == dt.datetime(2024, 5, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)


def test_explicit_dates_win_over_extraction(engine: MemoryEngine, bank: str) -> None:
    start = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    (i,) = engine.retain(
        [
            MemoryItem(
                text="Yesterday was great.", occurred_start=start, mentioned_at=dt.datetime(2024, 6, 15)
            )
        ],
        bank=bank,
    )
    record = engine.get(i, bank=bank)
    assert record is not None and record.occurred_start == start


def test_semantic_links_join_paraphrases_not_unrelated_texts(engine: MemoryEngine, bank: str) -> None:
    a, b, c = engine.retain(
        [
            "The cat is sleeping on the warm windowsill.",
            "A cat sleeps on the sunny window sill.",
            "Quarterly tax filings are due in April.",
        ],
        bank=bank,
    )
    links = {
        (r[0], r[1])
        for r in _rows(
            engine,
            """
        SELECT from_id::text, to_id::text FROM memory_links
        WHERE bank_id = %(bank)s AND link_type = 'semantic'""",
            {"bank": bank},
        )
    }
    assert (a, b) in links or (b, a) in links
    assert not {(a, c), (c, a), (b, c), (c, b)} & links
    # Across calls too: a new paraphrase links to the stored one.
    (d,) = engine.retain(["The cat naps on the warm window sill."], bank=bank)
    links = {
        (r[0], r[1])
        for r in _rows(
            engine,
            """
        SELECT from_id::text, to_id::text FROM memory_links
        WHERE bank_id = %(bank)s AND link_type = 'semantic'""",
            {"bank": bank},
        )
    }
    assert (d, a) in links


def test_explicit_caused_by_creates_a_causal_link(engine: MemoryEngine, bank: str) -> None:
    cause, effect = engine.retain(
        [
            MemoryItem(text="The server ran out of disk space."),
            MemoryItem(text="The nightly backup failed.", caused_by=[0]),
        ],
        bank=bank,
    )
    (later,) = engine.retain([MemoryItem(text="We bought a bigger disk.", caused_by=[effect])], bank=bank)
    rows = set(
        _rows(
            engine,
            """
        SELECT from_id::text, to_id::text, weight FROM memory_links
        WHERE bank_id = %(bank)s AND link_type = 'caused_by'""",
            {"bank": bank},
        )
    )
    assert (effect, cause, 1.0) in rows and (later, effect, 1.0) in rows


def test_a_reference_to_an_unknown_memory_writes_nothing(engine: MemoryEngine, bank: str) -> None:
    with pytest.raises(InvalidItemError) as err:
        engine.retain(
            ["fine", MemoryItem(text="dangling", caused_by=["01a22a2f-2f8b-7000-88eb-12db705b2789"])],
            bank=bank,
        )
    assert err.value.index == 1
    assert engine.stats(bank).memories == 0


def test_temporal_links_follow_the_timeline(engine: MemoryEngine, bank: str) -> None:
    base = dt.datetime(2023, 5, 1, 9)
    ids = engine.retain(
        [
            MemoryItem(text=f"Entry {i} of the diary.", mentioned_at=base + dt.timedelta(hours=6 * i))
            for i in range(4)
        ],
        bank=bank,
    )
    rows = {
        (r[0], r[1]): r[2]
        for r in _rows(
            engine,
            """
        SELECT from_id::text, to_id::text, weight FROM memory_links
        WHERE bank_id = %(bank)s AND link_type = 'temporal'""",
            {"bank": bank},
        )
    }
    assert rows[(ids[0], ids[1])] == pytest.approx(0.75)  # 6 hours apart: 1 - 6/24
    assert rows[(ids[0], ids[3])] == pytest.approx(0.3)  # 18 h: 0.25, floored at 0.3


def test_keyword_document_matches_the_month_and_the_entities(engine: MemoryEngine, bank: str) -> None:
    (i,) = engine.retain(
        [
            MemoryItem(
                text="We moved into the new flat.",
                occurred_start=dt.datetime(2023, 5, 7),
                entities=["Lisbon"],
            )
        ],
        bank=bank,
    )
    for words in ("May", "may 2023", "Lisbon"):
        rows = _rows(
            engine,
            """
            SELECT id::text FROM memory_units
            WHERE bank_id = %(bank)s AND search_vector @@ plainto_tsquery('english', %(q)s)""",
            {"bank": bank, "q": words},
        )
        assert [r[0] for r in rows] == [i], words


def test_cue_phrase_causal_links_are_off_by_default_and_conservative(engine: MemoryEngine, bank: str) -> None:
    texts = [
        "The storage server ran out of disk space on Monday.",
        "Our team went hiking in the Alps.",
        "The nightly backup failed because the storage server disk was full.",
    ]
    engine.retain(texts, bank=bank, document_id="ops")
    query = """SELECT u1.text, u2.text FROM memory_links l
               JOIN memory_units u1 ON u1.bank_id = l.bank_id AND u1.id = l.from_id
               JOIN memory_units u2 ON u2.bank_id = l.bank_id AND u2.id = l.to_id
               WHERE l.bank_id = %(bank)s AND l.link_type = 'caused_by'"""
    assert _rows(engine, query, {"bank": bank}) == []
    with MemoryEngine(engine.dsn, config=EngineConfig(causal_cue_links=True)) as cued:
        cued.retain(texts, bank=bank, document_id="ops")
    assert _rows(engine, query, {"bank": bank}) == [(texts[2], texts[0])]
