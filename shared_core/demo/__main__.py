"""Run the demo: retain the bundled story into a fresh bank and print recall results.

python -m shared_core.demo [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from shared_core.demo.story import STORY_NOW, story_items
from shared_core.engine import MemoryEngine

QUESTIONS = [
    "Alice works at Google",
    "Where does Alice work?",
    "What did Alice do last spring?",
    "Why did Alice leave Google?",
    "Who has pets?",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=None, help="Postgres DSN (default: embedded server)")
    parser.add_argument("--bank", default="demo-story")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    with MemoryEngine(args.dsn) as engine:
        print(f"engine: {engine!r}")
        engine.delete(bank=args.bank, document_id="story")
        ids = engine.retain(story_items(), bank=args.bank, document_id="story")
        print(
            f"retained {len(ids)} memories in {time.perf_counter() - started:.1f}s: {engine.stats(args.bank)}"
        )
        recall = getattr(engine, "recall", None)
        if recall is None:
            return 0
        for question in QUESTIONS:
            result = recall(question, bank=args.bank, query_timestamp=STORY_NOW, max_tokens=120, trace=True)
            print(f"\nQ: {question}")
            if result.trace is not None and result.trace.time_window is not None:
                w = result.trace.time_window
                print(f"   time window: {w.start:%Y-%m-%d} .. {w.end:%Y-%m-%d}")
            for memory in result.memories[:3]:
                arms = ",".join(sorted(memory.scores.arm_ranks))
                print(f"   {memory.score:.3f}  [{arms}]  {memory.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
