"""Retain embeds its units in batches sorted by length: every unit's vector is the one the model
gives it in input-order batches (up to float rounding), in input order."""

from __future__ import annotations

import datetime as dt

import numpy as np

from shared_core.config import EngineConfig
from shared_core.embedding import default_embedder
from shared_core.models import Models
from shared_core.retain.flow import RetainContext, embed
from shared_core.retain.progress import RetainProgress


def test_length_sorted_batches_give_each_text_its_own_vector() -> None:
    embedder = default_embedder()
    short = ["ok", "Thanks!", "See you on Friday.", "Caroline went to the support group."]
    long = [
        " ".join(f"Sentence {i} about Melanie's pottery class in May." for i in range(k)) for k in (5, 30, 12)
    ]
    texts = [t for pair in zip(short, [*long, "Bob skis."], strict=True) for t in pair]
    context = RetainContext(
        models=Models(embedder=embedder),
        config=EngineConfig(embed_batch_size=3),
        now=lambda: dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    )
    batched = embed(context, texts, RetainProgress(False))
    one_by_one = np.stack([embedder.embed_documents([t])[0] for t in texts])
    assert batched.shape == one_by_one.shape
    np.testing.assert_allclose(batched, one_by_one, atol=2e-5)
