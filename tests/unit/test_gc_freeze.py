"""The engine moves model objects out of the cyclic collector's way once they are loaded."""

from __future__ import annotations

import gc

import pytest

from shared_core import EngineConfig, MemoryEngine


@pytest.mark.parametrize("freeze", [True, False])
def test_loading_the_embedder_freezes_gc_unless_told_not_to(freeze: bool) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    engine = MemoryEngine("postgresql://unused.invalid/db", config=EngineConfig(freeze_gc_after_load=freeze))
    try:
        assert engine.embedder.dimension == 384  # loads the model, no database needed
        assert (gc.get_freeze_count() > 0) is freeze
    finally:
        engine.close()
        gc.unfreeze()
