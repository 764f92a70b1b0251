"""What handing the learned reranker's told years to the temporal boost saves (session 17,
helper rec): the learned ranking of a year-window question's candidates (features, both
stages, the boosts' inputs) with the boosts reading each text's years again
(``boosts.stated_time_match``, the code before) against the years ``featurize_told`` found
(``boosts.stated_time_of``), in one run, interleaved.

The lists are paragraphs of ``wiki-dev`` (benchmarks/wiki_paragraphs.py through
dated_paragraphs.py: tuning data) and LoCoMo turns (``<speaker> said, "..."``), ``--n`` texts
a list (300: the candidates of a recall at 100k), every list different (nothing is cached per
text), as benchmarks/text_years_speed.py builds them. Times are best-of-N CPU times of the
thread. Fails unless both ways give the same ``BoostInput`` for every candidate.

    .venv/bin/python benchmarks/told_handoff_speed.py [--n 300] [--repeat 30] [--out F.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_cpu_ms
from text_years_speed import _QUESTIONS, _WINDOW, _lists

from shared_core.recall.boosts import BoostInput
from shared_core.recall.fusion import FusedCandidate
from shared_core.recall.hydrate import MemoryRow
from shared_core.recall.learned import CandidateSignals, LearnedScorer, QuerySignals
from shared_core.recall.pipeline import _boost_input


def _rows(cands: Sequence[CandidateSignals]) -> tuple[list[FusedCandidate], list[MemoryRow]]:
    fused = [FusedCandidate(id=str(c.position), rrf=c.rrf) for c in cands]
    rows = [
        MemoryRow(
            id=str(c.position),
            text=c.text,
            context=None,
            fact_type="world",
            occurred_start=dt.datetime(2000 + c.position % 20, 1, 1, tzinfo=dt.UTC)
            if c.position % 3
            else None,
            occurred_end=None,
            mentioned_at=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            date_grain="year",
            proof_count=1,
            document_id=None,
            chunk_id=None,
            similarity=c.cosine,
        )
        for c in cands
    ]
    return fused, rows


def _before(
    scorer: LearnedScorer, query: QuerySignals, cands: Sequence[CandidateSignals], fused: Any, rows: Any
) -> list[BoostInput]:
    features, seeds = scorer.prepare(query, cands)
    scorer.probabilities(features, seeds, {})
    return [_boost_input(c, r, _WINDOW) for c, r in zip(fused, rows, strict=True)]


def _after(
    scorer: LearnedScorer, query: QuerySignals, cands: Sequence[CandidateSignals], fused: Any, rows: Any
) -> list[BoostInput]:
    features, seeds, told = scorer.prepare_told(query, cands)
    scorer.probabilities(features, seeds, {})
    assert told is not None
    return [
        _boost_input(c, r, _WINDOW, told.get(i, ())) for i, (c, r) in enumerate(zip(fused, rows, strict=True))
    ]


def measure(n: int, repeat: int) -> dict[str, Any]:
    from _locomo import load_locomo
    from dated_paragraphs import DATASETS

    wiki = [t.text for c in DATASETS["wiki-dev"]() for t in c.turns]
    chat = [t.text for c in load_locomo() for t in c.turns]
    scorer = LearnedScorer.default()
    out = []
    for kind, texts in (("encyclopedia", wiki), ("chat", chat)):
        lists = _lists(texts, n, repeat)
        prepared = [_rows(ls) for ls in lists]
        query = QuerySignals.from_query(_QUESTIONS[kind], _WINDOW)
        for ls, (fused, rows) in zip(lists, prepared, strict=True):
            if _before(scorer, query, ls, fused, rows) != _after(scorer, query, ls, fused, rows):
                raise SystemExit(f"{kind}: the boosts' inputs differ")
        times = {"before": float("inf"), "after": float("inf")}
        for _ in range(3):  # interleaved, so a busy neighbour hits both alike
            for label, fn in (("before", _before), ("after", _after)):
                t = best_cpu_ms(
                    lambda i, f=fn, q=query, ls=lists, pr=prepared: f(scorer, q, ls[i], *pr[i]),  # type: ignore[misc]
                    repeat,
                )
                times[label] = min(times[label], t)
        out.append(
            {
                "texts": kind,
                "n": n,
                "before_ms": round(times["before"], 3),
                "after_ms": round(times["after"], 3),
                "saved_ms": round(times["before"] - times["after"], 3),
                "change_pct": round(100 * (times["after"] / times["before"] - 1), 1),
            }
        )
    return {"repeat": repeat, "load_average": [round(x, 2) for x in os.getloadavg()], "rows": out}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    result = measure(args.n, args.repeat)
    print(
        f"learned ranking of a year-window question (features, both stages, boost inputs), {args.n} "
        f"texts a list, best of {args.repeat} CPU times x 3 interleaved rounds, load average "
        f"{result['load_average']}; boost inputs identical"
    )
    print("| texts | before ms | after ms | saved ms | change |")
    print("|---|---:|---:|---:|---:|")
    for r in result["rows"]:
        cells = [r["texts"], r["before_ms"], r["after_ms"], r["saved_ms"], f"{r['change_pct']:+.1f}%"]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if args.out:
        from _report import write_json

        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
