"""A query is embedded on one torch thread (two threads wait on each other whenever a core is
busy: 250 ms instead of 9 ms per query at load 3, measured), and the caller's thread count is
back once every concurrent query has finished."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch

from shared_core.embedding import SentenceTransformerEmbedder, default_embedder


def test_a_query_is_embedded_on_one_thread_and_the_setting_is_restored() -> None:
    embedder = default_embedder()
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    seen: list[int] = []
    model = embedder._load()
    encode = model.encode

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(torch.get_num_threads())
        return encode(*args, **kwargs)

    model.encode = spy
    try:
        query = embedder.embed_query("Where does Alice work?")
        documents = embedder.embed_documents(["Where does Alice work?"])
    finally:
        del model.encode
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
