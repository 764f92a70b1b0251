"""Document formatting, score normalisation, passthrough and the cross-encoder reranker.

The real-model test builds a tiny BERT cross-encoder with random weights in a temporary folder
(nothing is downloaded) and loads it through ``Reranker.from_spec(path)``.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared_core.config import DEFAULT_CROSS_ENCODER
from shared_core.protocols import PairScorer
from shared_core.recall import rerank as rerank_mod
from shared_core.recall.rerank import (
    Reranker,
    RerankerFallbackWarning,
    clear_reranker_cache,
    format_document,
    normalise_scores,
    passthrough_scores,
)
from tests.fakes import FakeScorer


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    clear_reranker_cache()
    yield
    clear_reranker_cache()


# --- format_document -------------------------------------------------------------------------


def test_format_document_full() -> None:
    when = dt.datetime(2022, 6, 5, 14, 30, tzinfo=dt.UTC)
    assert (
        format_document("Alice joined Google.", "work", when)
        == "[Date: June 05, 2022 (2022-06-05)] work: Alice joined Google."
    )


def test_format_document_parts_optional() -> None:
    when = dt.datetime(2022, 6, 5)
    assert format_document("Alice.", None, when) == "[Date: June 05, 2022 (2022-06-05)] Alice."
    assert format_document("Alice.", "work", None) == "work: Alice."
    assert format_document("Alice.", "", None) == "Alice."
    assert format_document("Alice.", None, None) == "Alice."


def test_format_document_date_in_utc() -> None:
    plus9 = dt.timezone(dt.timedelta(hours=9))
    when = dt.datetime(2022, 6, 6, 3, 0, tzinfo=plus9)  # = 2022-06-05 18:00 UTC
    assert format_document("x", None, when).startswith("[Date: June 05, 2022 (2022-06-05)]")


# --- normalise_scores / passthrough_scores ---------------------------------------------------


def test_scores_already_in_unit_interval_are_kept() -> None:
    assert normalise_scores([0.2, 0.9, 1.0, 0.0]) == [0.2, 0.9, 1.0, 0.0]


def test_scores_outside_unit_interval_are_sigmoided() -> None:
    out = normalise_scores([-2.0, 0.5, 3.0])
    assert out == pytest.approx([_sigmoid(-2.0), _sigmoid(0.5), _sigmoid(3.0)])
    # one logit out of range is enough to sigmoid all of them (same scale for the whole list)
    assert normalise_scores([0.5, 1.5]) == pytest.approx([_sigmoid(0.5), _sigmoid(1.5)])


def test_nan_becomes_zero_and_extremes_do_not_overflow() -> None:
    assert normalise_scores([float("nan"), 0.5]) == [0.0, 0.5]
    out = normalise_scores([float("nan"), 3.0, -1000.0, 1000.0])
    assert out[0] == 0.0
    assert out[1] == pytest.approx(_sigmoid(3.0))
    assert out[2] == pytest.approx(0.0)
    assert out[3] == pytest.approx(1.0)
    assert normalise_scores([]) == []


def test_passthrough_spread() -> None:
    assert passthrough_scores(0) == []
    assert passthrough_scores(1) == [1.0]
    assert passthrough_scores(2) == [1.0, 0.1]
    # 1 - 0.9·rank/(n-1) with n=5: step 0.225
    assert passthrough_scores(5) == pytest.approx([1.0, 0.775, 0.55, 0.325, 0.1])


# --- Reranker: passthrough, fallback, custom scorers -----------------------------------------


def test_none_spec_is_explicit_passthrough_without_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = Reranker.from_spec("none")
        assert r.name == "passthrough"
        assert r.is_passthrough and r.kind == "passthrough"
        assert r.fallback_reason is None
        raw, norm = r.rerank("q", ["a", "b", "c"])
    assert raw is None
    assert norm == pytest.approx([1.0, 0.55, 0.1])


def _default_model_is_cached() -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(DEFAULT_CROSS_ENCODER, "config.json"), str)


def test_default_falls_back_to_learned_with_one_log_line_per_spec(caplog: pytest.LogCaptureFixture) -> None:
    if _default_model_is_cached():
        pytest.skip(f"{DEFAULT_CROSS_ENCODER} is cached on this machine: no fallback to test")
    caplog.set_level("WARNING", logger="shared_core.recall.rerank")
    first = Reranker.from_spec(None)
    assert not caplog.records, "loading must be lazy: nothing happens before first use"
    assert first.name == "learned"
    assert first.is_learned and first.kind == "learned" and not first.is_passthrough
    second = Reranker.from_spec("default")
    assert second.is_learned
    assert Reranker.from_spec(None).name == "learned"
    fallback = [r for r in caplog.records if r.name == "shared_core.recall.rerank"]
    assert len(fallback) == 1
    message = fallback[0].getMessage()
    assert DEFAULT_CROSS_ENCODER in message and "learned" in message
    assert "\n" not in message and "http" not in message
    assert first.fallback_reason and DEFAULT_CROSS_ENCODER in first.fallback_reason


def test_missing_path_falls_back_with_its_own_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = str(tmp_path / "no-such-model")
    caplog.set_level("WARNING", logger="shared_core.recall.rerank")
    r = Reranker.from_spec(missing)
    assert r.name == "learned"
    assert Reranker.from_spec(missing).is_learned
    assert [rec.getMessage() for rec in caplog.records if "no-such-model" in rec.getMessage()]
    assert len(caplog.records) == 1


def test_learned_spec_is_explicit_without_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="shared_core.recall.rerank")
    r = Reranker.from_spec("learned")
    assert r.name == "learned" and r.kind == "learned" and r.fallback_reason is None
    assert not caplog.records
    # it scores recall candidates, not strings
    with pytest.raises(TypeError, match="learned"):
        r.rerank("q", ["a"])


def test_pair_scorer_used_as_is_with_sigmoid() -> None:
    scorer = FakeScorer([2.0, -1.0, float("nan")])
    assert isinstance(scorer, PairScorer)
    r = Reranker.from_spec(scorer)
    assert r.name == "fake-ce"
    assert not r.is_passthrough and r.kind == "cross-encoder"
    raw, norm = r.rerank("who?", ["d1", "d2", "d3"], batch_size=7)
    assert raw is not None and raw[:2] == [2.0, -1.0] and math.isnan(raw[2])
    assert norm == pytest.approx([_sigmoid(2.0), _sigmoid(-1.0), 0.0])
    assert scorer.calls == [([("who?", "d1"), ("who?", "d2"), ("who?", "d3")], 7)]


def test_pair_scorer_calibrated_scores_kept() -> None:
    r = Reranker.from_spec(FakeScorer([0.3, 0.9]))
    assert r.rerank("q", ["a", "b"]) == ([0.3, 0.9], [0.3, 0.9])


def test_pair_scorer_wrong_length_is_an_error() -> None:
    r = Reranker.from_spec(FakeScorer([0.3]))
    with pytest.raises(ValueError, match="1 scores for 2 documents"):
        r.rerank("q", ["a", "b"])


def test_from_spec_returns_reranker_unchanged() -> None:
    r = Reranker.from_spec("none")
    assert Reranker.from_spec(r) is r


def test_empty_documents() -> None:
    assert Reranker.from_spec("none").rerank("q", []) == (None, [])
    assert Reranker.from_spec(FakeScorer([])).rerank("q", []) == ([], [])


def test_loading_is_lazy_cached_and_thread_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []

    def slow_loader(spec: str) -> Any:
        loads.append(spec)
        time.sleep(0.05)  # widen the race window
        return FakeScorer([5.0] * 100)

    monkeypatch.setattr(rerank_mod, "_load_cross_encoder", slow_loader)
    rerankers = [Reranker.from_spec("some/model") for _ in range(8)]
    assert loads == []
    results: list[list[float]] = []

    def work(r: Reranker) -> None:
        results.append(r.rerank("q", ["a", "b"])[1])

    threads = [threading.Thread(target=work, args=(r,)) for r in rerankers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == ["some/model"]
    assert results == [[pytest.approx(_sigmoid(5.0))] * 2] * 8
    assert rerankers[0].name == "some/model"


# --- a real (tiny, random) cross-encoder -----------------------------------------------------

_WORDS = [
    "alice",
    "bob",
    "joined",
    "google",
    "in",
    "march",
    "paris",
    "went",
    "to",
    "the",
    "when",
    "did",
    "who",
    "where",
    "year",
    "cat",
    "dog",
    "a",
    "is",
    "and",
    ".",
]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-ce")
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(_WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=1,
    )
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _docs(n: int) -> list[str]:
    rng = np.random.default_rng(1)
    return [" ".join(rng.choice(_WORDS, size=int(rng.integers(2, 12)))) for _ in range(n)]


def test_real_cross_encoder_loads_batches_and_normalises(tiny_cross_encoder: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    spec = str(tiny_cross_encoder)
    docs = _docs(41)  # more documents than the batch size
    with warnings.catch_warnings():
        warnings.simplefilter("error", RerankerFallbackWarning)
        r = Reranker.from_spec(spec)
        raw, norm = r.rerank("when did alice join google", docs, batch_size=8)
    assert r.name == spec
    assert not r.is_passthrough
    assert raw is not None and len(raw) == len(norm) == 41
    # raw are the model's logits; normalised is their sigmoid, always (not the [0,1] heuristic)
    assert norm == pytest.approx([_sigmoid(x) for x in raw])
    assert all(0.0 <= s <= 1.0 for s in norm)
    assert len(set(raw)) > 1  # a real model, not a constant

    # batching does not change scores
    raw_big, _ = r.rerank("when did alice join google", docs, batch_size=64)
    assert raw_big == pytest.approx(raw, abs=1e-4)

    # same numbers as running the saved model directly
    tok = AutoTokenizer.from_pretrained(spec, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(spec, local_files_only=True).eval()
    with torch.no_grad():
        enc = tok(
            ["when did alice join google"] * 41, docs, padding=True, truncation=True, return_tensors="pt"
        )
        direct = model(**enc).logits.reshape(-1).tolist()
    assert raw == pytest.approx(direct, abs=1e-4)


def test_real_cross_encoder_is_cached_per_spec(tiny_cross_encoder: Path) -> None:
    a = Reranker.from_spec(str(tiny_cross_encoder))
    b = Reranker.from_spec(str(tiny_cross_encoder))
    a.rerank("q", ["alice"])
    b.rerank("q", ["alice"])
    assert a._backend() is b._backend()
