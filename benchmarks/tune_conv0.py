"""The conversation-0 tuning grid behind the recall defaults (docs/benchmarks.md, "How the
defaults were chosen"): R@10 on the non-adversarial questions of LoCoMo conversation 0 for
each configuration, set through ``MemoryEngine.recall_settings``.

    .venv/bin/python benchmarks/tune_conv0.py

Dataset: LoCoMo (CC BY-NC 4.0), read from ../shared/data; skipped when absent.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import uuid
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ours import conversation_zero, r10_by_category, retain_conversation

from shared_core import MemoryEngine
from shared_core.recall.boosts import BoostConfig
from shared_core.recall.pipeline import RecallSettings


def _weights(graph: float, temporal: float) -> dict[str, float]:
    return {"semantic": 1.0, "keyword": 1.0, "graph": graph, "temporal": temporal}


def configs(base: RecallSettings) -> dict[str, RecallSettings]:
    """Each row of the table, from the leading implementation's constants to our defaults."""
    leading = dataclasses.replace(
        base,
        boosts=BoostConfig(recency_alpha=0.2),
        arm_weights=_weights(1.0, 1.0),
        keyword_bank_max_df=1.0,
        graph_semantic_link_factor=1.0,
        graph_min_score=0.0,
    )
    step1 = dataclasses.replace(
        leading, boosts=BoostConfig(recency_alpha=0.05), arm_weights=_weights(0.3, 0.5)
    )
    step2 = dataclasses.replace(step1, keyword_bank_max_df=0.25)
    return {
        "leading implementation's constants": leading,
        "recency 0.05, weights graph 0.3 / temporal 0.5": step1,
        "+ keyword drops terms in > 25% of the bank": step2,
        "defaults (+ graph: no semantic-link expansion, score > 0.3)": base,
        "defaults without the graph arm": dataclasses.replace(base, arm_weights=_weights(0.0, 0.5)),
    }


def main() -> int:
    conv = conversation_zero()
    if conv is None:
        return 0
    warnings.filterwarnings("ignore")
    bank = f"tune-conv0-{uuid.uuid4().hex[:6]}"
    with MemoryEngine() as engine:
        retain_conversation(engine, conv, bank)
        for name, settings in configs(engine.recall_settings).items():
            engine.recall_settings = settings
            scores = [s for v in r10_by_category(engine, bank, conv).values() for s in v]
            print(f"{name}: R@10 {100 * statistics.mean(scores):.1f} ({len(scores)} questions)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
