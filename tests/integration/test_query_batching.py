"""Concurrent queries share forward passes of the real model (QueryBatcher): a lone query keeps
its single-text bits; a query embedded in a batch is not the same bits (other matrix shapes,
other summation order) but agrees with them to float32 rounding, and every caller gets the
vector of its own text.

Measured on the 50 bench queries (``benchmarks/_corpus.make_queries``), batches of 2 to 16:
no row was bit-identical to its single-text vector, the largest difference was 1.75e-7 per
component and 2.4e-7 in cosine. The tolerances below are about 5x that: loose enough for
another CPU's kernels, orders of magnitude below what a padding token counted in the mean or a
caller given another query's row would change.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shared_core.embedding import (
    QueryBatcher,
    SentenceTransformerEmbedder,
    _forward_many,
    _forward_one,
    _query_threads,
    default_embedder,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _corpus as C

ATOL = 1e-6  # per component, of unit vectors
COSINE_TOL = 1e-6
HANG_GUARD_S = 120.0  # a broken batcher fails the test instead of hanging it; never a measurement


def _bench_queries() -> list[str]:
    # The texts only: the vectors come from the real model below, not from the bench's cache.
    zeros = lambda texts: np.zeros((len(texts), C.DIMENSION), dtype=np.float32)  # noqa: E731
    texts = C.make_queries(encoder=zeros, use_cache=False).texts
    assert len(texts) == 50
    return texts


def test_batched_vectors_agree_with_single_text_vectors_within_float32_rounding() -> None:
    model = default_embedder()._load()
    texts = [*_bench_queries(), "x", "émigré café " * 40]  # and a one-token and a truncated one
    with _query_threads():  # the thread count the query path runs with
        single = np.stack([_forward_one(model, t) for t in texts])
        for size in (2, 5, 16):
            for start in range(0, len(texts), size):
                batch = _forward_many(model, texts[start : start + size])
                assert batch.dtype == np.float32
                expected = single[start : start + size]
                np.testing.assert_allclose(batch, expected, rtol=0, atol=ATOL)
                cosines = np.sum(batch * expected, axis=1)
                assert np.all(np.abs(1.0 - cosines) <= COSINE_TOL)
        # a batch of one is the single-text pass, bit for bit
        assert np.array_equal(_forward_many(model, [texts[0]])[0], single[0])


def test_concurrent_real_queries_share_a_pass_and_each_gets_its_own_vector() -> None:
    embedder = SentenceTransformerEmbedder()
    model = embedder._load()
    texts = _bench_queries()[:9]
    with _query_threads():
        single = {t: _forward_one(model, t) for t in texts}
    passes: list[list[str]] = []
    release = threading.Event()

    def one(text: str) -> npt.NDArray[np.float32]:
        passes.append([text])
        if len(passes) == 1:  # hold the first pass while the other queries arrive
            assert release.wait(HANG_GUARD_S)
        return embedder._embed_one(text)

    def many(batch: list[str]) -> npt.NDArray[np.float32]:
        passes.append(list(batch))
        return embedder._embed_many(batch)

    batcher = embedder._queries = QueryBatcher(one, many)
    results: dict[str, npt.NDArray[np.float32]] = {}
    errors: list[BaseException] = []

    def ask(text: str) -> None:
        try:
            results[text] = embedder.embed_query(text)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(t,)) for t in texts]
    threads[0].start()
    joined = threading.Event()
    for _ in range(int(HANG_GUARD_S * 100)):
        if passes:
            break
        joined.wait(0.01)
    for t in threads[1:]:
        t.start()
    for _ in range(int(HANG_GUARD_S * 100)):
        with batcher._cond:
            if sum(len(b.texts) for b in batcher._waiting) == len(texts) - 1:
                break
        joined.wait(0.01)
    release.set()
    for t in threads:
        t.join(HANG_GUARD_S)
        assert not t.is_alive()
    assert errors == []
    assert passes[0] == [texts[0]]
    assert len(passes) == 2 and sorted(passes[1]) == sorted(texts[1:])  # one pass for the eight
    assert np.array_equal(results[texts[0]], single[texts[0]])  # the lone query: same bits
    for text in texts[1:]:
        np.testing.assert_allclose(results[text], single[text], rtol=0, atol=ATOL)
        others = [single[o] for o in texts if o != text]
        assert all(not np.allclose(results[text], o, atol=1e-3) for o in others)  # its own row
