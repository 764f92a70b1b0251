"""A query is embedded on one torch thread (two threads wait on each other whenever a core is
busy: 250 ms instead of 9 ms per query at load 3, measured), and the caller's thread count is
back once every concurrent query has finished."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch

from shared_core.embedding import SentenceTransformerEmbedder, _query_threads, default_embedder


def test_a_query_is_embedded_on_one_thread_and_the_setting_is_restored() -> None:
    embedder = default_embedder()
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    seen: list[int] = []
    model = embedder._load()
    forward = model.forward  # what both a query and encode run (a query skips encode)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(torch.get_num_threads())
        return forward(*args, **kwargs)

    model.forward = spy
    try:
        query = embedder.embed_query("Where does Alice work?")
        documents = embedder.embed_documents(["Where does Alice work?"])
    finally:
        del model.forward
        after = torch.get_num_threads()
        torch.set_num_threads(before)
    assert seen == [1, 2]  # the query on one thread, a document batch on the caller's
    assert after == 2
    np.testing.assert_allclose(query, documents[0], atol=2e-5)  # same vector either way


def test_concurrent_queries_restore_the_callers_setting() -> None:
    embedder = SentenceTransformerEmbedder()
    embedder.embed_query("warm up")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        errors: list[BaseException] = []

        def ask(i: int) -> None:
            try:
                for j in range(5):
                    embedder.embed_query(f"question {i} {j}: what did Bob do in May?")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_query_vector_is_encodes_vector_bit_for_bit() -> None:
    """The query path skips ``encode``'s bookkeeping, not its steps: the same bits as
    ``encode([text], normalize_embeddings=True)``, so recall results cannot move."""
    embedder = default_embedder()
    model = embedder._load()
    texts = ["Where does Alice work?", "what did Bob do in May 2023?", "x", "émigré café " * 40]
    for text in texts:
        with _query_threads():  # a thread count of its own changes the sums' order: the bits
            expected = np.asarray(
                model.encode(
                    [text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
                ),
                dtype=np.float32,
            )[0]
        got = embedder.embed_query(text)
        assert got.dtype == np.float32
        assert got.shape == expected.shape
        assert np.array_equal(got, expected)


def test_a_model_with_a_default_prompt_keeps_encode() -> None:
    """``encode`` prepends a default prompt; the direct path would not, so such a model
    (e5-style "query: ") takes ``encode`` and its vector includes the prompt."""
    embedder = SentenceTransformerEmbedder()
    model = embedder._load()
    plain = embedder.embed_query("Where does Alice work?")
    expected = embedder.embed_query("query: Where does Alice work?")
    model.prompts = {**model.prompts, "q": "query: "}
    model.default_prompt_name = "q"
    try:
        prompted = embedder.embed_query("Where does Alice work?")
    finally:
        model.default_prompt_name = None
    assert not np.array_equal(prompted, plain)
    np.testing.assert_allclose(prompted, expected, atol=2e-5)
