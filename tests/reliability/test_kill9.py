"""A process killed with SIGKILL in the middle of retains leaves nothing partial (issue 14)."""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from typing import Any

import psycopg
import pytest

from shared_core import MemoryEngine

from .conftest import HASH_EMBEDDER, consistency_problems, spawn_python

pytestmark = pytest.mark.slow

BATCH = 40
KILLS = 3

_WRITER = (
    HASH_EMBEDDER
    + """
import sys
from shared_core import MemoryEngine
dsn, bank, run = sys.argv[1], sys.argv[2], sys.argv[3]
with MemoryEngine(dsn, embedder=HashEmbedder()) as engine:
    n = 0
    while True:
        items = [{"text": f"Run {run} batch {n} item {i}: Alice met Bob in Paris on 3 May 2021 "
                          f"about project {run}{n}{i}.", "tags": [f"{run}-{n}"]}
                 for i in range(int(sys.argv[4]))]
        engine.retain(items, bank=bank, progress=False)
        print("done", n, flush=True)
        n += 1
"""
)


def test_sigkill_mid_retain_leaves_whole_batches_and_exact_stats(engine: MemoryEngine) -> None:
    bank = f"kill9-{uuid.uuid4().hex[:8]}"
    rng = random.Random(14)
    landed = 0
    for run in range(KILLS):
        writer = spawn_python(_WRITER, engine.dsn, bank, str(run), str(BATCH))
        assert writer.stdout is not None
        line = writer.stdout.readline()  # one batch landed: the next one is under way
        assert line.startswith("done"), writer.stderr.read() if writer.stderr else line
        time.sleep(rng.uniform(0.0, 0.5))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        landed += 1 + sum(1 for ln in writer.stdout if ln.startswith("done"))

    with psycopg.connect(engine.dsn) as conn:
        sizes = conn.execute(
            "SELECT t, count(*) FROM memory_units, unnest(tags) t WHERE bank_id = %s GROUP BY t", (bank,)
        ).fetchall()
    # Every batch is whole; the batches reported done are all there (the one killed mid-way
    # may have committed before its "done" line was printed, never partly).
    assert all(n == BATCH for _, n in sizes), sizes
    assert landed <= len(sizes) <= landed + KILLS
    stats = engine.stats(bank)
    assert stats.memories == len(sizes) * BATCH
    assert consistency_problems(engine.dsn, bank) == []
    # The killed sessions hold no locks: a new retain into the bank goes through.
    # (with the bank's own embedding model: another one is refused, naming both)
    namespace: dict[str, Any] = {}
    exec(HASH_EMBEDDER, namespace)  # the writers' embedder, defined once in conftest
    with MemoryEngine(engine.dsn, embedder=namespace["HashEmbedder"]()) as same_model:
        same_model.retain(["After the kills."], bank=bank, progress=False)
    assert engine.stats(bank).memories == len(sizes) * BATCH + 1
