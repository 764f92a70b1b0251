"""What each spaCy pipe costs retain, and what dropping it would change (issue 15, diagnosis).

    .venv/bin/python benchmarks/ner_pipes.py --out docs/benchmarks/ner_pipes.json

Every LoCoMo turn (``<speaker> said, "<text>"``, as retain stores it) through the entity
extractor three ways: the default pipeline (tok2vec + tagger, senter, NER: the NER has its own
tok2vec, and so has the senter), without the senter (the NER then sees no sentence starts),
and NER only (no tagger, so no proper-noun fallback either). For each: the time for all
turns in ``nlp.pipe`` batches (the bulk path), the p50 for one turn at a time (the one-memory
path; rounds alternate the variants so load drifts hit all alike), and how many turns' entity
lists differ from the default's. Nothing is written to a database; the load average is
recorded at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DEFAULT_DATA_PATH, locomo_missing
from _report import write_json
from retain import locomo_turns


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--turns", type=int, default=5_882, help="turns (LoCoMo has 5,882)")
    p.add_argument("--single", type=int, default=200, help="turns timed one at a time")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if locomo_missing(args.data):
        return 0

    from shared_core.extraction.entities import SpacyEntityExtractor

    texts = [text for text, _ in locomo_turns(args.data, args.turns)]
    default = SpacyEntityExtractor()
    ner_only = SpacyEntityExtractor(propn_fallback=False)
    nlp = default.pipeline

    def with_disabled(extractor: SpacyEntityExtractor, pipes: tuple[str, ...]) -> Callable[[list[str]], Any]:
        def run(batch: list[str]) -> Any:
            for pipe in pipes:
                nlp.disable_pipe(pipe)
            try:
                return extractor.extract(batch)
            finally:
                for pipe in pipes:
                    nlp.enable_pipe(pipe)

        return run

    variants: dict[str, Callable[[list[str]], Any]] = {
        "default (tok2vec+tagger, senter, ner)": with_disabled(default, ()),
        "without the senter": with_disabled(default, ("senter",)),
        "NER only (no tagger, no senter, no proper-noun fallback)": with_disabled(
            ner_only, ("tok2vec", "tagger", "senter")
        ),
    }
    report: dict[str, Any] = {"turns": len(texts), "loadavg_start": _loadavg(), "variants": {}}
    variants[next(iter(variants))](texts[:50])  # load the model, warm up
    found: dict[str, list[Any]] = {}
    for name, run in variants.items():
        t0 = time.perf_counter()
        found[name] = run(texts)
        seconds = time.perf_counter() - t0
        report["variants"][name] = {
            "batch_seconds": round(seconds, 2),
            "per_turn_ms": round(seconds / len(texts) * 1e3, 3),
        }
    single: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(min(args.single, len(texts))):
        for name, run in variants.items():
            t0 = time.perf_counter()
            run([texts[i * 29 % len(texts)]])
            single[name].append((time.perf_counter() - t0) * 1e3)
    base = found[next(iter(variants))]
    for name in variants:
        got = found[name]
        differ = sum(1 for a, b in zip(base, got, strict=True) if [m.name for m in a] != [m.name for m in b])
        report["variants"][name] |= {
            "single_p50_ms": round(statistics.median(single[name]), 2),
            "turns_with_other_entities": differ,
            "mentions": sum(len(m) for m in got),
        }
    report["loadavg_end"] = _loadavg()
    for k, v in report.items():
        if k == "variants":
            for name, st in v.items():
                print(f"  {name}: {st}")
        else:
            print(f"{k}: {v}")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
