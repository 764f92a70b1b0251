"""Eight clients at once for 30 seconds, with exact counts afterwards (issue 14)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter

import pytest

from shared_core import MemoryEngine
from tests.engines import sharing_models

from .conftest import consistency_problems

pytestmark = pytest.mark.slow

CLIENTS = 8
SECONDS = float(os.environ.get("HINDSIGHT_RELIABILITY_SECONDS", "30"))


def test_eight_clients_for_thirty_seconds(engine: MemoryEngine) -> None:
    run = uuid.uuid4().hex[:8]
    shared = f"conc-{run}-shared"
    own = [f"conc-{run}-{c}" for c in range(CLIENTS)]
    kept: dict[str, set[str]] = {b: set() for b in [shared, *own]}
    kept_lock = threading.Lock()
    counts: list[Counter[str]] = [Counter() for _ in range(CLIENTS)]
    errors: list[BaseException] = []
    # Each client has an engine of its own (its own pools), sharing the loaded models.
    engines = [sharing_models(engine) for _ in range(CLIENTS)]
    for eng in engines:  # models loaded and schema migrated before the clock starts
        eng.stats(shared)
    deadline = time.monotonic() + SECONDS

    def client(c: int) -> None:
        eng = engines[c]
        step = 0
        try:
            while time.monotonic() < deadline:
                bank = shared if step % 2 else own[c]
                kind = step % 5
                if kind in (0, 1):
                    ids = eng.retain(
                        [
                            f"Client {c} note {step}: Dana met Eli in Oslo.",
                            f"Client {c} note {step}b about herons.",
                        ],
                        bank=bank,
                        progress=False,
                    )
                    with kept_lock:
                        kept[bank].update(ids)
                    counts[c]["retain"] += 1
                elif kind == 2:
                    eng.recall("Where did Dana meet Eli?", bank=bank)
                    counts[c]["recall"] += 1
                elif kind == 3:
                    with kept_lock:
                        victim = next(iter(kept[own[c]]), None)
                        if victim is not None:
                            kept[own[c]].discard(victim)
                    if victim is not None:
                        assert eng.delete([victim], bank=own[c]) == 1
                    counts[c]["delete"] += 1
                else:
                    with kept_lock:
                        some = next(iter(kept[own[c]]), None)
                    if some is not None:
                        assert eng.get(some, bank=own[c]) is not None
                    eng.stats(bank)
                    counts[c]["read"] += 1
                step += 1
        except BaseException as exc:  # reported below, with the client's number
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SECONDS + 120)
    finally:
        for eng in engines:
            eng.close()
    assert not errors, errors[:3]
    ops = sum(counts, Counter())
    total = sum(ops.values())
    assert ops["retain"] >= CLIENTS and ops["recall"] >= CLIENTS, ops
    print(f"\n{CLIENTS} clients, {SECONDS:.0f} s: {total} operations {dict(ops)}, 0 errors")
    for bank, ids in kept.items():
        assert engine.stats(bank).memories == len(ids), bank  # nothing lost, nothing extra
        assert consistency_problems(engine.dsn, bank) == []
    sample = list(kept[shared])[:20]
    assert all(engine.get(i, bank=shared) is not None for i in sample)
