"""The engine moves model objects out of the cyclic collector's way once they are loaded."""

from __future__ import annotations

import gc

import pytest

from shared_core import EngineConfig, MemoryEngine, embedding


@pytest.mark.parametrize("freeze", [True, False])
def test_loading_the_embedder_freezes_gc_unless_told_not_to(
    freeze: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sentence_transformers import SentenceTransformer

    # A fresh process-wide embedder, so that its model loads inside this test (the default
    # embedder loads on first use, after the engine has handed it out).
    monkeypatch.setattr(embedding, "_default", None)
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    engine = MemoryEngine("postgresql://unused.invalid/db", config=EngineConfig(freeze_gc_after_load=freeze))
    try:
        assert engine.embedder.dimension == 384  # loads the model, no database needed
        assert (gc.get_freeze_count() > 0) is freeze
        # The model itself (created by the load, after the engine handed the embedder out)
        # is frozen: the cyclic collector no longer rescans it.
        tracked = [o for o in gc.get_objects() if isinstance(o, SentenceTransformer)]
        assert (not tracked) is freeze
    finally:
        engine.close()
        gc.unfreeze()
