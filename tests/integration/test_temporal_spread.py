"""Migration 0026: an unfiltered recall's temporal spread in one call (recall_temporal_spread),
not one statement per hop. It must reach the same memories with the same scores as the hops it
replaces (still what a filtered recall runs): the same frontier order when scores tie (first
grown first), the same links kept when a memory has more than the fanout of equal weight, a
frontier memory's score raised mid-hop carried on, and the link weight read as its text form."""

from __future__ import annotations

import datetime as dt
import uuid

import numpy as np
import psycopg

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import (
    _CAUSAL_BOOST,
    _TEMPORAL_FANOUT,
    _TEMPORAL_FRONTIER,
    _spread_by_hops,
    _spread_in_one_call,
)
from shared_core.recall.filters import compile_filter
from shared_core.recall.settings import RecallSettings
from tests.fakes import unit_vector as vec

START = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)


def _query(engine: MemoryEngine, bank: str) -> ArmQuery:
    vector = np.asarray(engine.embedder.embed_query("xyzzy"), dtype=np.float32)
    return ArmQuery(
        bank=bank,
        vector=vector,
        words=(),
        bigrams=(),
        types=("world", "experience"),
        tags=None,
        tags_match="any",
        n=200,
        window=None,
        settings=RecallSettings(),
        filter=compile_filter(None),
        asks_when=False,
    )


def _memories(engine: MemoryEngine, bank: str, count: int) -> list[str]:
    """``count`` memories at cosine 0.5 to the query, their retain's own links removed."""
    ids = engine.retain(
        [
            MemoryItem(
                text=f"note {i}", occurred_start=START + dt.timedelta(days=i), embedding=vec(0.5, axis=10 + i)
            )
            for i in range(count)
        ],
        bank=bank,
    )
    with psycopg.connect(engine.dsn) as conn:
        conn.execute("DELETE FROM memory_links WHERE bank_id = %s", (bank,))
    return list(ids)


def _link(engine: MemoryEngine, bank: str, links: list[tuple[str, str, str, float]]) -> None:
    with psycopg.connect(engine.dsn) as conn:
        for a, b, kind, weight in links:
            conn.execute(
                "INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)"
                " VALUES (%s, %s, %s, %s, %s)",
                (bank, a, b, kind, weight),
            )


def _both(qeng: MemoryEngine, bank: str, best: dict[str, float]) -> dict[str, tuple[float, object]]:
    q = _query(qeng, bank)
    one = qeng.run(_spread_in_one_call(q, dict(best)))
    hops = qeng.run(_spread_by_hops(q, dict(best)))
    got = {i: (r.propagated, r.hit) for i, r in one.items()}
    assert got == {i: (r.propagated, r.hit) for i, r in hops.items()}
    return got


def test_frontier_ties_keep_the_first_grown(qeng: MemoryEngine, engine: MemoryEngine) -> None:
    """Three entries of equal score, each linked (equal weights) to the fanout's number of
    children: 30 children tie, the frontier keeps the first 20 grown (the first two entries'),
    so only their children's children are reached. One entry also has two links more than
    the fanout, of the same weight: both ways keep the same ten."""
    bank = f"spread-ties-{uuid.uuid4().hex[:10]}"
    fan = _TEMPORAL_FANOUT
    assert 3 * fan > _TEMPORAL_FRONTIER >= 2 * fan  # what the test relies on
    ids = _memories(engine, bank, 3 + 3 * fan + 3 * fan + 2)
    entries, children = ids[:3], ids[3 : 3 + 3 * fan]
    grandchildren, extra = ids[3 + 3 * fan : 3 + 6 * fan], ids[3 + 6 * fan :]
    links = [(entries[c // fan], child, "temporal", 0.9) for c, child in enumerate(children)]
    links += [(entries[0], x, "temporal", 0.9) for x in extra]
    links += [(child, grandchildren[c], "temporal", 0.9) for c, child in enumerate(children)]
    _link(engine, bank, links)
    got = _both(qeng, bank, dict.fromkeys(entries, 1.0))
    decay = RecallSettings().temporal_decay
    child_score = 1.0 * float("0.9") * 1.0 * decay  # the weight as its text form
    reached_children = [c for c in children + extra if c in got]
    assert len(reached_children) == 3 * fan  # entry 0 kept fan of its fan + 2 links
    assert all(got[c][0] == child_score for c in reached_children)
    # the frontier (20 of 30 tied children) is entry 0's and entry 1's: first grown first
    kept = {grandchildren[c] for c, child in enumerate(children) if child in got and c < 2 * fan}
    dropped = set(grandchildren[2 * fan :])
    assert kept and kept <= set(got) and not dropped & set(got)
    assert all(got[g][0] == child_score * float("0.9") * decay for g in kept)


def test_a_frontier_memory_raised_mid_hop_carries_its_new_score(
    qeng: MemoryEngine, engine: MemoryEngine
) -> None:
    """Entry b (score 1.0, first in the frontier) reaches entry a (score 0.3) by a causal link
    (x2): a's best rises in the hop, and a's own links, read later in the same hop, carry the
    new score (as the loop over the hop's rows does)."""
    bank = f"spread-mid-{uuid.uuid4().hex[:10]}"
    a, b, child = _memories(engine, bank, 3)
    _link(engine, bank, [(b, a, "causes", 0.8), (a, child, "temporal", 0.6)])
    got = _both(qeng, bank, {b: 1.0, a: 0.3})
    decay = RecallSettings().temporal_decay
    raised = 1.0 * float("0.8") * _CAUSAL_BOOST * decay
    assert got[a][0] == raised
    assert got[child][0] == raised * float("0.6") * 1.0 * decay
