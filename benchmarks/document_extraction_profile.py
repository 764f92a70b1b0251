"""Where the 1 MB document's extraction CPU goes: the default date parser's ``event_window``
per window (with every Duckling call timed and counted), then the NER over all windows in one
``extract`` call; no database (issue 15.3).

    .venv/bin/python benchmarks/document_extraction_profile.py 1 \\
        > docs/benchmarks/doc20_extraction_profile_1mb.json

The windows are ``retain.py``'s generated document (``prose_document``) cut as retain cuts it
(``sentence_windows`` at the default 128 tokens). CPU times are ``time.process_time`` (all
threads of the process); the load average is recorded at the start, between and at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retain import prose_document


def main() -> int:
    from shared_core.config import DEFAULT_SENTENCE_WINDOW_TOKENS
    from shared_core.extraction import dates
    from shared_core.extraction.entities import SpacyEntityExtractor
    from shared_core.retain.prepare import sentence_windows
    from shared_core.tokens import default_token_counter

    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    windows = sentence_windows(
        prose_document(int(megabytes * 1_000_000)), DEFAULT_SENTENCE_WINDOW_TOKENS, default_token_counter()
    )
    ref = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)
    parser = dates.default_date_parser()
    parser.event_window("Alice met Bob last May.", ref)  # load Duckling outside the timing
    extractor = SpacyEntityExtractor()
    extractor.extract(["Alice met Bob in Paris."])
    calls: list[tuple[int, float, bool]] = []
    call = dates._call_duckling

    def timed(text: str, at: dt.datetime, tz_db_path: str) -> str:
        start = time.process_time()
        out = call(text, at, tz_db_path)
        calls.append((len(text), time.process_time() - start, out != "[]"))
        return out

    dates._call_duckling = timed  # type: ignore[assignment]
    res: dict[str, Any] = {"mb": megabytes, "windows": len(windows), "load_start": os.getloadavg()}
    c0, w0 = time.process_time(), time.perf_counter()
    found = [parser.event_window(w, ref) for w in windows]
    res["dates_wall_s"] = time.perf_counter() - w0
    res["dates_cpu_s"] = time.process_time() - c0
    res["duckling_calls"] = len(calls)
    res["duckling_cpu_s"] = sum(c[1] for c in calls)
    res["duckling_ms_per_call"] = 1e3 * res["duckling_cpu_s"] / max(len(calls), 1)
    res["duckling_calls_nonempty"] = sum(c[2] for c in calls)
    res["duckling_mean_chars"] = sum(c[0] for c in calls) / max(len(calls), 1)
    res["dated_windows"] = sum(w is not None for w in found)
    res["load_mid"] = os.getloadavg()
    c0, w0 = time.process_time(), time.perf_counter()
    extractor.extract(windows)
    res["ner_wall_s"] = time.perf_counter() - w0
    res["ner_cpu_s"] = time.process_time() - c0
    res["ner_ms_per_window"] = 1e3 * res["ner_cpu_s"] / max(len(windows), 1)
    res["load_end"] = os.getloadavg()
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
