"""Pure tests of the LoCoMo benchmark harness (benchmarks/_locomo.py, benchmarks/_peers.py).

No dataset, no network, no model download: a tiny hand-made conversation and a deterministic
bag-of-words encoder stand in for LoCoMo and all-MiniLM-L6-v2.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _locomo as L  # noqa: E402

TINY: dict[str, Any] = {
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
            {
                "speaker": "Bob",
                "dia_id": "D1:2",
                "text": "Nice! I went hiking in Alps.",
                "blip_caption": "a photo of a mountain",
                "img_url": ["http://x"],
            },
            {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister plays the violin."},
        ],
        "session_2_date_time": "12:04 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I started painting landscapes."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Rex the dog learned to swim."},
        ],
        # like conv-26: a date key without a session
        "session_3_date_time": "9:00 am on 2 July, 2023",
    },
    "qa": [
        {"question": "What is the name of Ann's dog?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
        {
            "question": "What did Bob do in the Alps and what does he paint?",
            "answer": "x",
            "evidence": ["D1:2; D2:1"],
            "category": 1,
        },
        {
            "question": "When did Rex learn to swim?",
            "answer": "June 2023",
            "evidence": ["D:2:2", "D9:99"],
            "category": 2,
        },
        {
            "question": "Which instrument does Ann's sister play?",
            "answer": "violin",
            "evidence": ["D1:03", "D1:3"],
            "category": 3,
        },
        {
            "question": "What is Bob's cat called?",
            "adversarial_answer": "Tom",
            "evidence": ["D1:2 D1:1"],
            "category": 5,
        },
        {"question": "No evidence at all?", "answer": "?", "evidence": [], "category": 3},
        {"question": "Only broken evidence?", "answer": "?", "evidence": ["D"], "category": 4},
    ],
}


# --- dates ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", dt.datetime(2023, 5, 8, 13, 56)),
        ("12:04 am on 1 June, 2023", dt.datetime(2023, 6, 1, 0, 4)),
        ("12:30 pm on 19 December, 2023", dt.datetime(2023, 12, 19, 12, 30)),
        ("10:04 AM on 19 October, 2023", dt.datetime(2023, 10, 19, 10, 4)),
        ("7:05 pm on 3 Sep 2023", dt.datetime(2023, 9, 3, 19, 5)),
    ],
)
def test_parse_session_datetime(text: str, expected: dt.datetime) -> None:
    assert L.parse_session_datetime(text) == expected


@pytest.mark.parametrize("text", ["", "8 May 2023", "13:00 pm on 8 May, 2023", "1:00 pm on 8 Foo, 2023"])
def test_parse_session_datetime_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        L.parse_session_datetime(text)


# --- evidence repair --------------------------------------------------------------------------
def test_repair_evidence_cases() -> None:
    valid = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D30:5", "D1:1"}
    assert L.repair_evidence(["D8:6; D9:17"], valid) == ["D8:6", "D9:17"]
    assert L.repair_evidence(["D9:1 D4:4 D4:6"], valid) == ["D9:1", "D4:4", "D4:6"]
    assert L.repair_evidence(["D:11:26"], valid) == ["D11:26"]
    assert L.repair_evidence(["D30:05"], valid) == ["D30:5"]
    assert L.repair_evidence(["D"], valid) == []
    assert L.repair_evidence(["D10:19"], valid) == []  # does not exist
    assert L.repair_evidence(["D1:1", "D1:01", "D1:1"], valid) == ["D1:1"]  # dedup


def test_build_conversation() -> None:
    conv = L.build_conversation(TINY, index=3)
    assert conv.index == 3 and conv.sample_id == "tiny-1"
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conv.turns[0].text == 'Ann said, "I adopted a dog named Rex."'
    assert conv.turns[1].text == ('Bob said, "Nice! I went hiking in Alps." and shared a photo of a mountain')
    assert conv.turns[0].mentioned_at == dt.datetime(2023, 5, 8, 13, 56)
    assert conv.turns[3].mentioned_at == dt.datetime(2023, 6, 1, 0, 4)
    # the dangling session_3 date is ignored: query time = last real session + 1 day
    assert conv.query_time == dt.datetime(2023, 6, 2, 0, 4)
    evid = {q.question: q.evidence for q in conv.questions}
    assert evid["What did Bob do in the Alps and what does he paint?"] == ("D1:2", "D2:1")
    assert evid["When did Rex learn to swim?"] == ("D2:2",)
    assert evid["Which instrument does Ann's sister play?"] == ("D1:3",)
    assert evid["What is Bob's cat called?"] == ("D1:2", "D1:1")
    assert len(conv.questions) == 5 and conv.skipped_questions == 2
    assert {q.category_name for q in conv.questions} == {
        "single-hop",
        "multi-hop",
        "temporal",
        "open-domain",
        "adversarial",
    }


def test_parse_selection() -> None:
    assert L.parse_selection("all", 10) == list(range(10))
    assert L.parse_selection("0-1", 10) == [0, 1]
    assert L.parse_selection("5-9,0", 10) == [0, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError):
        L.parse_selection("8-10", 10)


# --- metrics ----------------------------------------------------------------------------------
def test_recall_at_k_fractional() -> None:
    r = L.recall_at_k(["a", "x", "b", "y", "c"], ["a", "b", "c", "d"], ks=(1, 2, 3, 5, 50))
    assert r == {1: 0.25, 2: 0.25, 3: 0.5, 5: 0.75, 50: 0.75}
    # duplicates in the ranking do not take extra slots nor count twice
    assert L.recall_at_k(["a", "a", "b"], ["a", "b"], ks=(2,)) == {2: 1.0}
    assert L.recall_at_k([], ["a"], ks=(1,)) == {1: 0.0}
    with pytest.raises(ValueError):
        L.recall_at_k(["a"], [])


def _qr(conv: int, cat: int, values: tuple[float, ...]) -> L.QuestionResult:
    return L.QuestionResult(conv, cat, dict(zip(L.KS, values, strict=True)))


def test_aggregate_per_category() -> None:
    results = [
        _qr(0, 1, (0.0, 0.5, 0.5, 1.0, 1.0)),
        _qr(0, 1, (1.0, 1.0, 1.0, 1.0, 1.0)),
        _qr(0, 2, (0.0, 0.0, 1.0, 1.0, 1.0)),
        _qr(1, 5, (0.0, 0.0, 0.0, 0.0, 0.0)),
    ]
    agg = L.aggregate(results)
    assert list(agg) == ["overall", "overall-no-adversarial", "multi-hop", "temporal", "adversarial"]
    assert agg["multi-hop"] == {"R@1": 50.0, "R@5": 75.0, "R@10": 75.0, "R@25": 100.0, "R@50": 100.0}
    assert agg["temporal"]["R@10"] == 100.0
    assert agg["adversarial"]["R@50"] == 0.0
    assert agg["overall"]["R@10"] == 62.5  # (0.5 + 1 + 1 + 0) / 4
    assert agg["overall-no-adversarial"]["R@10"] == round(100 * 2.5 / 3, 1) == 83.3
    assert agg["overall"]["R@1"] == 25.0
    assert L.group_counts(results) == {
        "overall": 4,
        "overall-no-adversarial": 3,
        "multi-hop": 2,
        "temporal": 1,
        "adversarial": 1,
    }


def test_markdown_table() -> None:
    table = L.markdown_table({"sys": {"overall": {"R@10": 12.34}}}, k=10, groups=("overall", "temporal"))
    lines = table.splitlines()
    assert lines[0] == "| system (R@10) | overall | temporal |"
    assert lines[2] == "| sys | 12.3 | – |"


# --- peers: embedding cache + dense smoke test ------------------------------------------------
def _bow_encoder(texts: list[str]) -> npt.NDArray[np.float32]:
    """Deterministic hashed bag of words, L2-normalised (stand-in for MiniLM)."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().replace('"', " ").replace("?", " ").replace("'s", " ").split():
            w = word.strip(".,!")
            if len(w) > 2:
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1.0
        n = np.linalg.norm(out[i])
        out[i] = out[i] / n if n else out[i]
        out[i, 0] += 1e-3  # never all-zero
    return out


def test_embedding_cache_persists(tmp_path: Path) -> None:
    import _peers as P

    calls: list[int] = []

    def enc(texts: list[str]) -> npt.NDArray[np.float32]:
        calls.append(len(texts))
        return _bow_encoder(texts)

    cache = P.EmbeddingCache(enc, cache_dir=tmp_path)
    assert cache.ensure(["a dog", "a cat", "a dog"]) == 2
    assert cache.ensure(["a dog"]) == 0
    cache.save()
    assert cache.path is not None and cache.path.exists()
    again = P.EmbeddingCache(enc, cache_dir=tmp_path)
    assert len(again) == 2 and again.get("a cat") == cache.get("a cat")
    assert calls == [2]


def test_dense_peer_end_to_end() -> None:
    import _peers as P

    conv = L.build_conversation(TINY)
    cache = P.EmbeddingCache(_bow_encoder, cache_dir=None)
    peer = P.LangChainDense(cache)
    peer.index(conv.turns, query_time=conv.query_time)
    hits = peer.search("What is the name of Ann's dog Rex?", 3)
    assert len(hits) == 3 and set(hits) <= {t.dia_id for t in conv.turns}
    assert hits[0] in {"D1:1", "D2:2"}
    all_hits = peer.search("violin sister", 50)
    assert sorted(all_hits) == sorted(t.dia_id for t in conv.turns)  # k > corpus
    assert all_hits[0] == "D1:3"
    r = L.recall_at_k(all_hits, ["D1:3"])
    assert r[1] == 1.0
    peer.close()


def test_bm25_peer_end_to_end() -> None:
    import _peers as P

    conv = L.build_conversation(TINY)
    peer = P.LlamaIndexBM25(P.EmbeddingCache(_bow_encoder, cache_dir=None))
    peer.index(conv.turns)
    assert peer.search("Which instrument does the sister play, violin?", 1) == ["D1:3"]


# --- "ours" plug-in contract (fake engine; the real one is built concurrently) ----------------
class _FakeEngine:
    """Records the calls OursSystem makes; recall returns the bank's memories in order."""

    instances: list[_FakeEngine] = []  # noqa: RUF012

    def __init__(self, dsn: str | None = None, *, data_dir: Any = None) -> None:
        self.dsn = dsn
        self.data_dir = data_dir
        self.banks: dict[str, list[Any]] = {}
        self.recall_kwargs: list[dict[str, Any]] = []
        self.deleted: list[tuple[list[str], str]] = []
        self.closed = False
        _FakeEngine.instances.append(self)

    def retain(self, items: list[Any], *, bank: str, progress: bool = True) -> list[str]:
        self.banks[bank] = list(items)
        return [f"id-{i}" for i in range(len(items))]

    def recall(self, query: str, **kwargs: Any) -> Any:
        from shared_core.types import RecalledMemory, RecallResult

        self.recall_kwargs.append(kwargs)
        items = reversed(self.banks[kwargs["bank"]])
        return RecallResult(
            memories=[
                RecalledMemory(id=str(i), text=it.text, fact_type="world", score=1.0, metadata=it.metadata)
                for i, it in enumerate(items)
            ]
        )

    def delete(self, ids: list[str], *, bank: str) -> int:
        self.deleted.append((ids, bank))
        return len(ids)

    def close(self) -> None:
        self.closed = True


def test_ours_plugs_in_with_engine_api() -> None:
    import _peers as P
    import locomo as B

    from shared_core.types import MemoryItem

    conv = L.build_conversation(TINY)

    cache = P.EmbeddingCache(_bow_encoder, cache_dir=None)
    system = B.OursSystem(_FakeEngine, MemoryItem, "default", cache)
    results, _timing = B.run_system(system, [conv])
    engine = _FakeEngine.instances[-1]
    assert engine.dsn is None and engine.closed
    ((bank, items),) = engine.banks.items()
    assert [it.metadata["dia_id"] for it in items] == [t.dia_id for t in conv.turns]
    assert items[0].mentioned_at == dt.datetime(2023, 5, 8, 13, 56)
    assert items[0].embedding is not None and len(items[0].embedding) == 64
    kw = engine.recall_kwargs[0]
    assert kw["bank"] == bank and kw["query_timestamp"] == conv.query_time
    assert kw["budget"] == "mid" and kw["max_tokens"] >= 4096
    assert engine.deleted == [([f"id-{i}" for i in range(5)], bank)]
    assert len(results) == len(conv.questions)
    # recall order = reversed turns, so the first hit is D2:2
    assert results[2].recall[1] == 1.0  # "When did Rex learn to swim?" -> D2:2


def test_ours_unknown_config() -> None:
    import locomo as B

    with pytest.raises(B.SystemUnavailableError):
        B.ours("no-such-config")
