"""Run a benchmark script with the learned reranker's weights read from a file instead of the
package's ``learned_reranker.json`` (what ``LearnedScorer.default()`` returns, which recall calls),
so a candidate model is judged end to end without touching the package (gen20):

    .venv/bin/python benchmarks/with_weights.py docs/benchmarks/gen20_candidate_reranker.json \\
        benchmarks/locomo.py --conversations all --systems ours --out F.json --md F.md
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import shared_core.recall.learned as learned


def main() -> None:
    weights = sys.argv.pop(1)
    scorer = learned.LearnedScorer.from_dict(json.loads(Path(weights).read_text()))
    learned._default_scorer = lambda: scorer  # type: ignore[assignment]
    print(f"weights: {weights} ({str(scorer.meta.get('trained_on', '?'))[:80]})", file=sys.stderr)
    sys.argv = sys.argv[1:]
    sys.path.insert(0, str(Path(sys.argv[0]).resolve().parent))
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
