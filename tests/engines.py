"""Engines for tests that need pools of their own (a narrow pool, another DSN, one engine per
client) on a real server, sharing the session engine's loaded models so none loads twice."""

from __future__ import annotations

from shared_core import EngineConfig, MemoryEngine


def sharing_models(
    engine: MemoryEngine, dsn: str | None = None, config: EngineConfig | None = None
) -> MemoryEngine:
    """A new engine on ``dsn`` (default: ``engine``'s) with ``config``, sharing ``engine``'s
    embedder, token counter, date parser and entity extractor."""
    return MemoryEngine(
        engine.dsn if dsn is None else dsn,
        embedder=engine.embedder,
        token_counter=engine.token_counter,
        date_parser=engine.date_parser,
        entity_extractor=engine.entity_extractor,
        config=config,
    )
