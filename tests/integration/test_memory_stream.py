"""The memory stream (core, migration 0005): append order, recent entries, exact search under
each pgvector metric, access-time updates, adoption, private banks."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pytest

from shared_core import MemoryEngine
from shared_core.storage.stream import METRICS, MemoryStream

UTC = datetime.UTC


def _vectors(n: int, dim: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = rng.normal(size=(n, dim)).astype(np.float32)
    return [v * np.float32(s) for v, s in zip(out, rng.uniform(0.2, 3.0, n), strict=True)]


def test_append_recent_entries_touch(engine: MemoryEngine, bank: str) -> None:
    stream = engine.stream(bank)
    t0 = datetime.datetime(2024, 1, 1, 12, tzinfo=UTC)
    first = stream.append(["one", "two"], accessed_at=[t0, t0], created_at=[t0, t0])
    second = stream.append(["three"])
    assert first.indexes == [0, 1] and second.indexes == [2]
    assert [e.text for e in stream.recent(2)] == ["two", "three"]
    assert [e.index for e in stream.entries()] == [0, 1, 2]
    assert stream.entries(1)[0].memory_id == first.memory_ids[1]
    later = datetime.datetime(2024, 1, 2, tzinfo=UTC)
    assert stream.touch([0], at=later) == 1
    assert stream.entries()[0].last_accessed_at == later
    assert stream.entries()[1].last_accessed_at == t0


@pytest.mark.parametrize("metric", sorted(METRICS))
@pytest.mark.parametrize("normalise", [False, True])
def test_search_matches_numpy(engine: MemoryEngine, bank: str, metric: str, normalise: bool) -> None:
    dim = engine.embedder.dimension
    vectors = _vectors(6, dim, seed=7)
    stream = engine.stream(bank)
    stream.append([f"memory {i}" for i in range(6)], vectors=vectors)
    q = _vectors(1, dim, seed=8)[0]
    a = np.asarray(vectors, dtype=np.float64)
    b = q.astype(np.float64)
    if normalise:
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b)
    cos = a @ b / (np.linalg.norm(a, axis=1) * np.linalg.norm(b))
    l2 = np.linalg.norm(a - b, axis=1)
    want = {
        "cosine_similarity": cos,
        "cosine_distance": 1 - cos,
        "l2": l2,
        "l2_squared": l2**2,
        "inner_product": a @ b,
        "negative_inner_product": -(a @ b),
    }[metric]
    larger_nearer = metric in ("cosine_similarity", "inner_product")
    order = sorted(range(6), key=lambda i: -want[i] if larger_nearer else want[i])
    got = stream.search(q, k=4, metric=metric, normalise=normalise)  # type: ignore[arg-type]
    assert [e.index for e in got] == order[:4]
    for e in got:
        assert e.distance == pytest.approx(want[e.index], rel=1e-5, abs=1e-5)


def test_adopt_and_split_memories_are_one_entry(engine: MemoryEngine, bank: str) -> None:
    long_text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(200))
    engine.retain(["Alice joined Google.", long_text, "Bob moved to Paris."], bank=bank, progress=False)
    stream = engine.stream(bank)
    assert stream.adopt() >= 4
    entries = stream.entries()
    assert [e.index for e in entries] == [0, 1, 2]
    assert entries[1].text == long_text
    assert stream.adopt() == 0


def test_private_stream_is_dropped_and_orphans_swept(engine: MemoryEngine) -> None:
    private = engine.stream()
    assert private.ephemeral and private.bank not in {b.bank for b in engine.banks()}
    private.append(["secret"])
    assert private.bank in {b.bank for b in engine.banks()}
    private.drop()
    assert private.bank not in {b.bank for b in engine.banks()}
    # A private bank whose process died is swept by the next private stream.
    orphan = engine.stream()
    orphan.append(["left behind"])
    engine.run(_set_owner(orphan.bank, pid=_dead_pid()))
    MemoryStream.private(engine)
    assert orphan.bank not in {b.bank for b in engine.banks()}


def _dead_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def _set_owner(bank: str, pid: int):  # type: ignore[no-untyped-def]
    from shared_core.storage.plan import Query

    yield Query(
        "UPDATE banks SET config = jsonb_set(config, '{ephemeral,pid}', %(pid)s::jsonb) "
        "WHERE bank_id = %(bank)s",
        {"bank": bank, "pid": str(pid)},
        fetch="none",
    )
