"""LoCoMo data loading and retrieval metrics (pure: no models, no network, no database).

Dataset: LoCoMo, Maharana et al., ACL 2024 (arXiv:2402.17753), CC BY-NC 4.0. The file is read
from ``/work/shared/data/locomo/locomo10.json`` (or ``$LOCOMO_PATH``) and is never copied into
this repository.

Protocol (paper Table 3, dialog level): one memory per turn, text
``<speaker> said, "<text>"`` (plus `` and shared <blip_caption>``), ``mentioned_at`` = the
session's date and time; per question, fractional recall
``R@k = |gold evidence in top k| / |gold evidence|``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_DATA_PATH = Path(os.environ.get("LOCOMO_PATH", "/work/shared/data/locomo/locomo10.json"))


def locomo_missing(path: Path) -> bool:
    """Whether the LoCoMo file at ``path`` is absent, said on stderr: a benchmark that needs it
    then measures nothing and exits 0. LoCoMo (CC BY-NC 4.0) is read from ../shared/data and
    never shipped; ``--data`` or ``$LOCOMO_PATH`` points elsewhere.

    >>> locomo_missing(Path("/nonexistent/locomo10.json"))
    True
    """
    if path.exists():
        return False
    print(
        f"SKIP: LoCoMo not found at {path} (CC BY-NC 4.0: read from ../shared/data, never shipped; "
        "set --data or $LOCOMO_PATH)",
        file=sys.stderr,
    )
    return True


KS: tuple[int, ...] = (1, 5, 10, 25, 50)

# Category ids in the file do NOT follow the order the paper lists them in (see SOURCE.md).
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5
OVERALL = "overall"
OVERALL_NO_ADV = "overall-no-adversarial"
GROUP_ORDER: tuple[str, ...] = (
    OVERALL,
    OVERALL_NO_ADV,
    *(CATEGORY_NAMES[c] for c in (1, 2, 3, 4, 5)),
)

QUERY_DELAY = dt.timedelta(days=1)

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_RE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for m in names
}
_EVIDENCE_TOKEN = re.compile(r"^D:?(\d+):(\d+)$")


# --- types ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Turn:
    """One dialog turn = one memory."""

    dia_id: str
    speaker: str
    text: str  # the memory text: <speaker> said, "<text>" [and shared <caption>]
    session: int
    mentioned_at: dt.datetime  # naive, the session's wall-clock time


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]  # repaired, deduplicated, existing dia_ids only
    raw_evidence: tuple[str, ...] = ()

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True, slots=True)
class Conversation:
    index: int
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]  # only questions with valid evidence
    query_time: dt.datetime  # one day after the last session
    skipped_questions: int = 0
    repairs: tuple[str, ...] = field(default=())


# --- parsing ----------------------------------------------------------------------------------
def parse_session_datetime(value: str) -> dt.datetime:
    """Parse LoCoMo session times such as ``"1:56 pm on 8 May, 2023"`` to a naive datetime.

    >>> parse_session_datetime("1:56 pm on 8 May, 2023")
    datetime.datetime(2023, 5, 8, 13, 56)
    >>> parse_session_datetime("12:04 am on 1 January, 2024")
    datetime.datetime(2024, 1, 1, 0, 4)
    """
    m = _DATE_RE.match(value)
    if not m:
        raise ValueError(f"unrecognised LoCoMo session time: {value!r}")
    hour, minute = int(m.group(1)), int(m.group(2))
    ampm = m.group(3).lower().replace(".", "")
    month = _MONTHS.get(m.group(5).lower())
    if month is None or not 1 <= hour <= 12:
        raise ValueError(f"unrecognised LoCoMo session time: {value!r}")
    hour = hour % 12 + (12 if ampm == "pm" else 0)
    return dt.datetime(int(m.group(6)), month, int(m.group(4)), hour, minute)


def turn_text(turn: Mapping[str, Any]) -> str:
    """The memory text of one turn: ``<speaker> said, "<text>"`` (+ `` and shared <caption>``)."""
    text = f'{turn["speaker"]} said, "{turn["text"]}"'
    caption = turn.get("blip_caption")
    if caption:
        text += f" and shared {caption}"
    return text


def repair_evidence(raw: Iterable[str], valid_ids: set[str] | frozenset[str]) -> list[str]:
    """Repair LoCoMo evidence strings (SOURCE.md "Known data defects").

    Splits packed ids (``'D8:6; D9:17'``, ``'D9:1 D4:4 D4:6'``), fixes ``'D:11:26'`` →
    ``'D11:26'`` and ``'D30:05'`` → ``'D30:5'``, drops malformed (``'D'``) and non-existent ids,
    and deduplicates keeping the first occurrence.

    >>> repair_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D1:1"],
    ...                 {"D8:6", "D9:17", "D11:26", "D30:5"})
    ['D8:6', 'D9:17', 'D11:26', 'D30:5']
    """
    out: list[str] = []
    for item in raw:
        for token in re.split(r"[;,\s]+", str(item).strip()):
            m = _EVIDENCE_TOKEN.match(token)
            if not m:
                continue
            dia_id = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia_id in valid_ids and dia_id not in out:
                out.append(dia_id)
    return out


def session_numbers(conv: Mapping[str, Any]) -> list[int]:
    """Numbers of sessions that actually hold turns (conv-26 has extra date keys)."""
    nums = []
    for key, value in conv.items():
        m = _SESSION_KEY.match(key)
        if m and isinstance(value, list) and value:
            nums.append(int(m.group(1)))
    return sorted(nums)


def build_conversation(sample: Mapping[str, Any], index: int = 0) -> Conversation:
    """Turn one LoCoMo sample into turns (memories) and questions with repaired evidence."""
    conv = sample["conversation"]
    turns: list[Turn] = []
    for n in session_numbers(conv):
        when = parse_session_datetime(conv[f"session_{n}_date_time"])
        for raw in conv[f"session_{n}"]:
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    speaker=str(raw["speaker"]),
                    text=turn_text(raw),
                    session=n,
                    mentioned_at=when,
                )
            )
    if not turns:
        raise ValueError(f"conversation {sample.get('sample_id')!r} has no turns")
    valid = frozenset(t.dia_id for t in turns)
    questions: list[Question] = []
    repairs: list[str] = []
    skipped = 0
    for qa in sample.get("qa", []):
        raw_ev = tuple(str(e) for e in qa.get("evidence") or ())
        ev = repair_evidence(raw_ev, valid)
        if list(raw_ev) != ev:
            repairs.append(f"{raw_ev!r} -> {ev!r}")
        if not ev:
            skipped += 1
            continue
        questions.append(
            Question(
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=tuple(ev),
                raw_evidence=raw_ev,
            )
        )
    return Conversation(
        index=index,
        sample_id=str(sample.get("sample_id", f"conv-{index}")),
        turns=tuple(turns),
        questions=tuple(questions),
        query_time=max(t.mentioned_at for t in turns) + QUERY_DELAY,
        skipped_questions=skipped,
        repairs=tuple(repairs),
    )


def load_locomo(path: Path | str = DEFAULT_DATA_PATH) -> list[Conversation]:
    """Load and normalise all conversations. Raises FileNotFoundError when absent."""
    with Path(path).open(encoding="utf-8") as fh:
        data = json.load(fh)
    return [build_conversation(sample, i) for i, sample in enumerate(data)]


def parse_selection(spec: str, n_total: int) -> list[int]:
    """``"all"`` | ``"0-1"`` | ``"0,3,5-7"`` → sorted indices.

    >>> parse_selection("0-1", 10), parse_selection("all", 3), parse_selection("2,5-6", 10)
    ([0, 1], [0, 1, 2], [2, 5, 6])
    """
    if spec.strip().lower() == "all":
        return list(range(n_total))
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = (int(x) for x in part.split("-", 1))
            out.update(range(lo, hi + 1))
        else:
            out.add(int(part))
    bad = [i for i in out if not 0 <= i < n_total]
    if bad:
        raise ValueError(f"conversation indices out of range 0..{n_total - 1}: {sorted(bad)}")
    return sorted(out)


# --- metrics ----------------------------------------------------------------------------------
def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], ks: Sequence[int] = KS) -> dict[int, float]:
    """Fractional recall: share of the gold ids found in the first k retrieved (deduplicated).

    >>> recall_at_k(["a", "x", "b"], ["a", "b", "c", "d"], ks=(1, 3))
    {1: 0.25, 3: 0.5}
    """
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall is undefined without gold evidence")
    ranked: list[str] = []
    seen: set[str] = set()
    for r in retrieved:
        if r not in seen:
            seen.add(r)
            ranked.append(r)
    return {k: len(gold_set.intersection(ranked[:k])) / len(gold_set) for k in ks}


@dataclass(frozen=True, slots=True)
class QuestionResult:
    conversation: int
    category: int
    recall: Mapping[int, float]


def aggregate(
    results: Sequence[QuestionResult], ks: Sequence[int] = KS, digits: int = 1
) -> dict[str, dict[str, float]]:
    """Mean recall in percent per group: overall, overall without category 5, each category.

    Groups with no question are omitted.
    """
    groups: dict[str, list[QuestionResult]] = {g: [] for g in GROUP_ORDER}
    for r in results:
        groups[OVERALL].append(r)
        if r.category != ADVERSARIAL:
            groups[OVERALL_NO_ADV].append(r)
        groups.setdefault(CATEGORY_NAMES.get(r.category, f"category-{r.category}"), []).append(r)
    out: dict[str, dict[str, float]] = {}
    for name, rs in groups.items():
        if not rs:
            continue
        out[name] = {f"R@{k}": round(100.0 * sum(r.recall[k] for r in rs) / len(rs), digits) for k in ks}
    return out


def group_counts(results: Sequence[QuestionResult]) -> dict[str, int]:
    counts: dict[str, int] = {g: 0 for g in GROUP_ORDER}
    for r in results:
        counts[OVERALL] += 1
        if r.category != ADVERSARIAL:
            counts[OVERALL_NO_ADV] += 1
        name = CATEGORY_NAMES.get(r.category, f"category-{r.category}")
        counts[name] = counts.get(name, 0) + 1
    return {k: v for k, v in counts.items() if v}


# --- reporting --------------------------------------------------------------------------------
def markdown_table(
    systems: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    k: int = 10,
    groups: Sequence[str] = GROUP_ORDER,
    counts: Mapping[str, int] | None = None,
) -> str:
    """One row per system, one column per group, cells = R@k (percent)."""
    key = f"R@{k}"
    head = [f"{g} (n={counts[g]})" if counts and g in counts else g for g in groups]
    lines = [
        f"| system ({key}) | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(groups),
    ]
    for name, table in systems.items():
        cells = []
        for g in groups:
            v = table.get(g, {}).get(key)
            cells.append("–" if v is None else f"{v:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_curve_table(
    systems: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    group: str = OVERALL,
    ks: Sequence[int] = KS,
) -> str:
    """One row per system, one column per k, for one group."""
    lines = [
        f"| system ({group}) | " + " | ".join(f"R@{k}" for k in ks) + " |",
        "|---|" + "---:|" * len(ks),
    ]
    for name, table in systems.items():
        row = table.get(group, {})
        cells = ["–" if row.get(f"R@{k}") is None else f"{row[f'R@{k}']:.1f}" for k in ks]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dia_ids(hits: Iterable[Any], k: int) -> list[str]:
    """The first ``k`` distinct ``metadata["dia_id"]`` of retrieved items (LangChain documents,
    LlamaIndex nodes or our recalled memories alike), in rank order."""
    out: list[str] = []
    for hit in hits:
        dia = hit.metadata.get("dia_id")
        if dia is not None and str(dia) not in out:
            out.append(str(dia))
        if len(out) >= k:
            break
    return out
