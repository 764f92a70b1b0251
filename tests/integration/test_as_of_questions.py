"""A question asking what holds "as of" a time: the evidence was told months before that time.

"How long has Tim been playing the piano for, as of December 2023?" (LoCoMo conversation 4) asks
about a state at the end of December; the only turn that answers it was said in June. Read as
"in December 2023" the window held only December's turns about pianos, which the window arm and
boosts pushed above the evidence. Real server, real embedding model, real date parser.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from shared_core import MemoryEngine, MemoryItem

UTC = dt.UTC
QUERY_TIME = dt.datetime(2024, 1, 10, 12, tzinfo=UTC)

# The only evidence: told in June, about lessons begun "a few months ago" (so dated in spring).
GOLD = 'Tim said, "I started playing the piano a few months ago, I take lessons every week now."'
GOLD_SAID = dt.datetime(2023, 6, 20, 18, tzinfo=UTC)
# Said in December 2023, about pianos or music, none saying how long Tim has played.
DECEMBER = [
    'John said, "The piano concert downtown was packed last night."',
    'Tim said, "My neighbour was playing the piano loudly all evening."',
    'John said, "The Christmas recital had a lovely piano duet."',
    'Tim said, "I watched a video about how pianos are tuned."',
    'John said, "My cousin wants to sell her old piano."',
]
# Other turns before December, on other topics.
EARLIER = [
    'Tim said, "I read two fantasy novels on holiday."',
    'John said, "Basketball practice was brutal today."',
    'Tim said, "We visited my grandparents in the countryside."',
]


@pytest.fixture(scope="module")
def as_of_bank(engine: MemoryEngine) -> str:
    bank = f"asof-{uuid.uuid4().hex[:10]}"
    items = [MemoryItem(text=GOLD, mentioned_at=GOLD_SAID)]
    items += [
        MemoryItem(text=t, mentioned_at=dt.datetime(2023, 12, 3 + 5 * i, 19, tzinfo=UTC))
        for i, t in enumerate(DECEMBER)
    ]
    items += [
        MemoryItem(text=t, mentioned_at=dt.datetime(2023, 8, 2, 19, tzinfo=UTC) + dt.timedelta(days=20 * i))
        for i, t in enumerate(EARLIER)
    ]
    engine.retain(items, bank=bank, progress=False)
    return bank


def test_as_of_a_month_finds_the_evidence_told_months_before(engine: MemoryEngine, as_of_bank: str) -> None:
    query = "How long has Tim been playing the piano for, as of December 2023?"
    result = engine.recall(query, bank=as_of_bank, query_timestamp=QUERY_TIME, trace=True)
    assert result.trace is not None and result.trace.time_window is not None
    window = result.trace.time_window
    # the state at the end of December: told any time up to it, June included
    assert window.start <= GOLD_SAID and window.end >= dt.datetime(2023, 12, 31, tzinfo=UTC)
    assert result.memories[0].text == GOLD


def test_in_a_month_still_reads_the_month(engine: MemoryEngine, as_of_bank: str) -> None:
    # The same bank asked about what happened *in* December keeps December's window.
    query = "What did Tim hear on the piano in December 2023?"
    result = engine.recall(query, bank=as_of_bank, query_timestamp=QUERY_TIME, trace=True)
    assert result.trace is not None and result.trace.time_window is not None
    window = result.trace.time_window
    assert (window.start, window.end.date()) == (
        dt.datetime(2023, 12, 1, tzinfo=UTC),
        dt.date(2023, 12, 31),
    )
    assert result.memories[0].text != GOLD
