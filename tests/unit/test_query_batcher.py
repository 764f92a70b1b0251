"""QueryBatcher with a fake model: a lone query runs at once through the single-text path;
queries arriving while a pass runs share the next one, each gets its own row, batches respect
the cap, and an error of a pass reaches every caller of its batch.

The first query's pass is held open on an event until the others have joined (read under the
batcher's own condition), so which queries share a pass is fixed, not a matter of timing.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from shared_core.config import DEFAULT_QUERY_BATCH_MAX
from shared_core.embedding import QueryBatcher, SentenceTransformerEmbedder

TEXTS = [f"question {i}" for i in range(8)]
HANG_GUARD_S = 30.0  # a broken batcher fails the test instead of hanging it; never a measurement


def _vector(text: str) -> npt.NDArray[np.float32]:
    """A row that names its text, so a caller given another's row is caught."""
    return np.array([float(TEXTS.index(text)), 1.0, -1.0], dtype=np.float32)


class FakeModel:
    """``one``/``many`` for the batcher: records every pass; the first ``one`` waits for
    ``release`` (holding a pass in flight while other queries arrive)."""

    def __init__(self, fail_many: bool = False) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.release = threading.Event()
        self.fail_many = fail_many
        self._lock = threading.Lock()

    def one(self, text: str) -> npt.NDArray[np.float32]:
        with self._lock:
            self.calls.append(("one", [text]))
            first = len(self.calls) == 1
        if first:
            assert self.release.wait(HANG_GUARD_S)
        return _vector(text)

    def many(self, texts: list[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.calls.append(("many", list(texts)))
        if self.fail_many:
            raise RuntimeError("forward failed")
        return np.stack([_vector(t) for t in texts])


def _waiting(batcher: QueryBatcher) -> list[int]:
    with batcher._cond:
        return [len(b.texts) for b in batcher._waiting]


def _wait_for(predicate: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(HANG_GUARD_S * 1000)):
        if predicate():
            return
        done.wait(0.001)
    raise AssertionError("the queries never joined")


def _ask_all(
    batcher: QueryBatcher, model: FakeModel, texts: list[str], expect_waiting: list[int]
) -> dict[str, npt.NDArray[np.float32] | BaseException]:
    """Start ``texts[0]`` (it holds the pass), then the others one by one, each after the one
    before has joined (so the batches are filled in this order); release; collect results."""
    results: dict[str, npt.NDArray[np.float32] | BaseException] = {}

    def ask(text: str) -> None:
        try:
            results[text] = batcher.embed(text)
        except BaseException as exc:
            results[text] = exc

    threads = [threading.Thread(target=ask, args=(texts[0],))]
    threads[0].start()
    _wait_for(lambda: len(model.calls) == 1)
    for n, text in enumerate(texts[1:], start=1):
        threads.append(threading.Thread(target=ask, args=(text,)))
        threads[-1].start()
        _wait_for(lambda n=n: sum(_waiting(batcher)) == n)
    assert _waiting(batcher) == expect_waiting
    model.release.set()
    for t in threads:
        t.join(HANG_GUARD_S)
        assert not t.is_alive()
    return results


def test_a_lone_query_takes_the_single_text_path() -> None:
    model = FakeModel()
    model.release.set()
    batcher = QueryBatcher(model.one, model.many)
    for text in TEXTS[:3]:
        assert np.array_equal(batcher.embed(text), _vector(text))
    assert model.calls == [("one", [t]) for t in TEXTS[:3]]


def test_queries_arriving_during_a_pass_share_the_next_and_get_their_own_rows() -> None:
    model = FakeModel()
    batcher = QueryBatcher(model.one, model.many, max_batch=16)
    results = _ask_all(batcher, model, TEXTS[:6], expect_waiting=[5])
    assert model.calls == [("one", [TEXTS[0]]), ("many", TEXTS[1:6])]
    for text in TEXTS[:6]:
        got = results[text]
        assert isinstance(got, np.ndarray)
        assert np.array_equal(got, _vector(text))
    assert _waiting(batcher) == [] and not batcher._running  # idle again: the next runs alone
    assert np.array_equal(batcher.embed(TEXTS[7]), _vector(TEXTS[7]))
    assert model.calls[-1] == ("one", [TEXTS[7]])


def test_batches_hold_at_most_max_batch_and_a_batch_of_one_takes_the_single_path() -> None:
    model = FakeModel()
    batcher = QueryBatcher(model.one, model.many, max_batch=2)
    results = _ask_all(batcher, model, TEXTS[:6], expect_waiting=[2, 2, 1])
    assert model.calls == [
        ("one", [TEXTS[0]]),
        ("many", TEXTS[1:3]),
        ("many", TEXTS[3:5]),
        ("one", [TEXTS[5]]),
    ]
    for text in TEXTS[:6]:
        assert np.array_equal(results[text], _vector(text))


def test_an_error_of_a_pass_reaches_every_caller_of_its_batch_and_no_other() -> None:
    model = FakeModel(fail_many=True)
    batcher = QueryBatcher(model.one, model.many)
    results = _ask_all(batcher, model, TEXTS[:5], expect_waiting=[4])
    assert np.array_equal(results[TEXTS[0]], _vector(TEXTS[0]))
    errors = [results[t] for t in TEXTS[1:5]]
    assert all(isinstance(e, RuntimeError) and str(e) == "forward failed" for e in errors)
    assert not batcher._running  # the failed pass let go: the next query runs
    assert np.array_equal(batcher.embed(TEXTS[6]), _vector(TEXTS[6]))


def test_an_error_of_a_lone_pass_is_raised_and_lets_go() -> None:
    calls: list[str] = []

    def one(text: str) -> npt.NDArray[np.float32]:
        calls.append(text)
        if len(calls) == 1:
            raise RuntimeError("forward failed")
        return _vector(text)

    batcher = QueryBatcher(one, lambda texts: np.stack([_vector(t) for t in texts]))
    with pytest.raises(RuntimeError, match="forward failed"):
        batcher.embed(TEXTS[0])
    assert np.array_equal(batcher.embed(TEXTS[1]), _vector(TEXTS[1]))


def test_max_batch_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        QueryBatcher(_vector, lambda texts: np.stack([_vector(t) for t in texts]), max_batch=0)


def test_the_embedder_batches_queries_when_told_more_than_one() -> None:
    # Constructing an embedder loads no model: these are the settings alone.
    assert DEFAULT_QUERY_BATCH_MAX > 1  # on by default (measured: see shared_core/config.py)
    default = SentenceTransformerEmbedder()._queries
    assert default is not None and default._max_batch == DEFAULT_QUERY_BATCH_MAX
    batched = SentenceTransformerEmbedder(query_batch_max=4)._queries
    assert batched is not None and batched._max_batch == 4
    assert SentenceTransformerEmbedder(query_batch_max=1)._queries is None  # each its own pass
    with pytest.raises(ValueError, match="query_batch_max"):
        SentenceTransformerEmbedder(query_batch_max=0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_during_a_pass_embeds_without_waiting_for_it() -> None:
    model = FakeModel()
    batcher = QueryBatcher(model.one, model.many)
    first = threading.Thread(target=batcher.embed, args=(TEXTS[0],))
    first.start()  # its pass is held open on ``release``: in flight when the process forks
    _wait_for(lambda: len(model.calls) == 1)
    pid = os.fork()
    if pid == 0:  # the child: the thread running that pass does not exist here
        code = 1
        try:
            signal.alarm(int(HANG_GUARD_S))  # a hang ends the child instead of the suite
            code = 0 if np.array_equal(batcher.embed(TEXTS[1]), _vector(TEXTS[1])) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    model.release.set()
    first.join(HANG_GUARD_S)
    assert os.waitstatus_to_exitcode(status) == 0
