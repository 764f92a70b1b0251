"""Measure the cue-phrase causal heuristic on LoCoMo conversation 0: links created, and R@10
per category with the heuristic off and on (passthrough reranker, defaults otherwise).

    .venv/bin/python benchmarks/cue_links.py

Dataset: LoCoMo (CC BY-NC 4.0), read from ../shared/data; skipped when absent.
"""

from __future__ import annotations

import os
import statistics
import sys
import uuid
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ours import conversation_zero, r10_by_category, retain_conversation

from shared_core import EngineConfig, MemoryEngine

LINKS = """SELECT count(*) FROM memory_links WHERE bank_id = %s AND link_type = 'caused_by'"""


def main() -> int:
    conv = conversation_zero()
    if conv is None:
        return 0
    warnings.filterwarnings("ignore")
    import psycopg

    for name, config in (("off", EngineConfig()), ("on", EngineConfig(causal_cue_links=True))):
        bank = f"cue-{name}-{uuid.uuid4().hex[:6]}"
        with MemoryEngine(config=config) as engine:
            retain_conversation(engine, conv, bank)
            with psycopg.connect(engine.dsn) as conn:
                row = conn.execute(LINKS, (bank,)).fetchone()
            per_category = r10_by_category(engine, bank, conv)
            scores = [s for v in per_category.values() for s in v]
            print(
                f"cue links {name}: {row[0] if row else 0} caused_by links for "
                f"{len(conv.turns)} turns; R@10 overall {100 * statistics.mean(scores):.1f}, "
                + ", ".join(
                    f"cat {c} {100 * statistics.mean(v):.1f}" for c, v in sorted(per_category.items())
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
