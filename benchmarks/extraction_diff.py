"""What retain's extraction finds in LoCoMo's turns and our own sets' texts, dumped for a diff
between two source trees (a speed change to extraction must find the same entities and dates).

    PYTHONPATH=/tmp/base .venv/bin/python /tmp/base/benchmarks/extraction_diff.py --dump /tmp/a.pkl
    .venv/bin/python benchmarks/extraction_diff.py --dump /tmp/b.pkl
    .venv/bin/python benchmarks/extraction_diff.py --compare /tmp/a.pkl /tmp/b.pkl

``--dump`` runs every text through the default entity extractor (one call per set, as
``extract`` batches) and, with ``--dates``, the default date parser's event window, and stores
the results with each set's extractor CPU time. The texts: the 5,882 LoCoMo turns as retain
stores them, the dated-paragraph sets (``dated_paragraphs.py``), when-notes
(``when_questions.py``) and 6-sentence windows of a 0.25 MB generated prose document
(``retain.py``'s ``prose_document``). ``--compare`` prints, per set, how many texts' mentions
(and windows) differ, the first few differences, and the CPU times; it exits 1 on a difference.
Pickle, not JSON: the results are the library's own dataclasses (trusted files you made).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DEFAULT_DATA_PATH, locomo_missing
from dated_paragraphs import DATASETS, build_dataset
from retain import locomo_turns, prose_document
from when_questions import when_notes


def texts_by_set(data: Path) -> dict[str, list[tuple[str, dt.datetime]]]:
    """Every set's (text, mentioned_at), in a fixed order."""
    from shared_core.text import split_sentences

    sets = {"locomo": locomo_turns(data, 5_882)}
    for name in DATASETS:
        sets[name] = [(t.text, t.mentioned_at) for c in build_dataset(name) for t in c.turns]
    sets["when-notes"] = [(t.text, t.mentioned_at) for c in when_notes() for t in c.turns]
    sentences = split_sentences(prose_document(250_000))
    said = dt.datetime(2024, 1, 1)
    sets["prose"] = [(" ".join(sentences[i : i + 6]), said) for i in range(0, len(sentences), 6)]
    return sets


def dump(data: Path, out: Path, *, dates: bool) -> None:
    from shared_core.extraction.dates import default_date_parser
    from shared_core.extraction.entities import SpacyEntityExtractor
    from shared_core.extraction.processes import event_window

    extractor = SpacyEntityExtractor()
    extractor.extract(["Alice met Bob in Paris."])  # load the model outside the timings
    report: dict[str, Any] = {"mentions": {}, "windows": {}, "cpu_s": {}, "loadavg": {}}
    report["loadavg"]["start"] = os.getloadavg()
    sets = texts_by_set(data)
    for name, rows in sets.items():
        cpu = time.process_time()
        report["mentions"][name] = extractor.extract([t for t, _ in rows])
        report["cpu_s"][name] = time.process_time() - cpu
        print(f"{name}: {len(rows)} texts, NER CPU {report['cpu_s'][name]:.2f} s", flush=True)
    if dates:
        parser = default_date_parser()
        for name, rows in sets.items():
            report["windows"][name] = [
                event_window(parser, t, m if m.tzinfo else m.replace(tzinfo=dt.UTC)) for t, m in rows
            ]
    report["loadavg"]["end"] = os.getloadavg()
    with out.open("wb") as f:
        pickle.dump(report, f)


def compare(a_path: Path, b_path: Path) -> int:
    with a_path.open("rb") as f:
        a = pickle.load(f)  # files this script wrote: trusted
    with b_path.open("rb") as f:
        b = pickle.load(f)
    differ = 0
    for kind in ("mentions", "windows"):
        for name, before in a[kind].items():
            after = b[kind].get(name)
            if after is None:
                continue
            changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
            differ += len(changed)
            cpu = (
                f", NER CPU {a['cpu_s'][name]:.2f} -> {b['cpu_s'][name]:.2f} s" if kind == "mentions" else ""
            )
            print(f"{kind} {name}: {len(before)} texts, {len(changed)} differ{cpu}")
            for i in changed[:5]:
                print(f"    {i}: {before[i]} | {after[i]}")
    print(f"load: {a['loadavg']} | {b['loadavg']}")
    return 1 if differ else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--dump", type=Path, metavar="OUT")
    group.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"))
    p.add_argument("--dates", action="store_true", help="also dump the event windows")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    args = p.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if locomo_missing(args.data):
        return 0
    dump(args.data, args.dump, dates=args.dates)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
