"""A memory anywhere inside the asked window matches it: the one said at the window's end too.

The temporal boost used to read the window proximity ``1 - |date - centre| / (span / 2)``, 1 at
the window's centre and 0 at its edges, so a turn said on the last days of the asked month, or
on X itself under "as of X" (a window from a year before X to X's end: its centre is six
months before X), was boosted down as if it lay outside the window (LoCoMo 5-9, session 18:
"What is Calvin's new business venture as of 1 May, 2023?"). Real server, real embedding
model, real date parser, the default (learned) reranker.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from shared_core import MemoryEngine, MemoryItem

UTC = dt.UTC
QUERY_TIME = dt.datetime(2024, 1, 10, 12, tzinfo=UTC)

# The state at the end of December 2023, told on its last days.
GOLD = 'Tim said, "I started a new job as a baker, I bake bread every morning now."'
GOLD_SAID = dt.datetime(2023, 12, 29, 19, tzinfo=UTC)
# Told mid-year, the centre of the as-of window: about jobs, not saying Tim's new one.
MIDYEAR = [
    'Tim said, "I want a new job, my old one at the office is so boring."',
    'John said, "My new job at the bank keeps me busy."',
]
MIDYEAR_SAID = dt.datetime(2023, 6, 28, 19, tzinfo=UTC)
# In the middle of December, on other topics.
DECEMBER = [
    'Tim said, "We decorated the tree with the kids last night."',
    'John said, "Basketball practice was brutal today."',
]
DECEMBER_SAID = dt.datetime(2023, 12, 15, 19, tzinfo=UTC)


@pytest.fixture(scope="module")
def edge_bank(engine: MemoryEngine) -> str:
    bank = f"edge-{uuid.uuid4().hex[:10]}"
    items = [MemoryItem(text=GOLD, mentioned_at=GOLD_SAID)]
    items += [
        MemoryItem(text=t, mentioned_at=MIDYEAR_SAID + dt.timedelta(hours=i)) for i, t in enumerate(MIDYEAR)
    ]
    items += [
        MemoryItem(text=t, mentioned_at=DECEMBER_SAID + dt.timedelta(hours=i)) for i, t in enumerate(DECEMBER)
    ]
    engine.retain(items, bank=bank, progress=False)
    return bank


def test_a_turn_said_at_the_end_of_an_as_of_window_is_not_boosted_down(
    engine: MemoryEngine, edge_bank: str
) -> None:
    query = "What is Tim's new job as of December 2023?"
    result = engine.recall(query, bank=edge_bank, query_timestamp=QUERY_TIME, trace=True)
    assert result.trace is not None and result.trace.time_window is not None
    window = result.trace.time_window
    assert window.start <= MIDYEAR_SAID and window.end >= GOLD_SAID
    by_text = {m.text: m for m in result.memories}
    gold, midyear = by_text[GOLD], by_text[MIDYEAR[0]]
    # both inside the window: the same (full) temporal boost, whatever their place in it
    assert gold.scores.temporal_proximity == pytest.approx(1.0)
    assert gold.scores.temporal_boost == pytest.approx(midyear.scores.temporal_boost)
    assert gold.scores.temporal_boost > 1.0
    # above every turn of December telling no job (the reranker alone puts the mid-year wish
    # for a new job first: the boost no longer decides that, the text does)
    assert [m.text for m in result.memories].index(GOLD) <= 1


def test_a_turn_said_on_the_last_days_of_the_asked_month_matches_it_as_one_said_mid_month(
    engine: MemoryEngine, edge_bank: str
) -> None:
    query = "What did Tim tell John in December 2023?"
    result = engine.recall(query, bank=edge_bank, query_timestamp=QUERY_TIME, trace=True)
    by_text = {m.text: m for m in result.memories}
    gold, mid = by_text[GOLD], by_text[DECEMBER[0]]
    assert gold.scores.temporal_boost == pytest.approx(mid.scores.temporal_boost)
    assert gold.scores.temporal_boost > 1.0
    # said six months before December: outside it by more than half its span
    assert by_text[MIDYEAR[0]].scores.temporal_proximity == pytest.approx(0.0)
