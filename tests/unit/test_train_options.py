"""benchmarks/train_reranker.py's training options: banks parse strictly, wiki-test never trains,
and --without names only features the fit would read (pure; nothing is loaded)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import numpy as np
from train_reranker import VARIANTS, QuestionData, _newton, main, parse_banks, parse_weight, refit_columns

from shared_core.recall.learned import FEATURE_NAMES, LearnedScorer


def test_banks_parse_as_one_or_a_range() -> None:
    assert parse_banks("wiki-dev:0") == ("wiki-dev", (0,))
    assert parse_banks("wiki-dev:0-1") == ("wiki-dev", (0, 1))


@pytest.mark.parametrize("spec", ["wiki-dev", "wiki-dev:", ":0", "wiki-dev:a", "wiki-dev:0-b"])
def test_malformed_banks_are_rejected(spec: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_banks(spec)


def test_wiki_test_never_trains(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--data-dir", str(tmp_path), "--extra-train", "wiki-test:0"])
    assert exc.value.code == 2


def test_without_an_unread_feature_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--data-dir", str(tmp_path), "--without", "no_such_feature"])
    assert exc.value.code == 2


def test_the_compare_variants_leave_out_exactly_the_named_year_features() -> None:
    full = set(VARIANTS["default (scale-free)"])
    assert full - set(VARIANTS["- window_within_text_years"]) == {"window_within_text_years"}
    assert full - set(VARIANTS["- window_year_stated"]) == {"window_year_stated"}
    assert full - set(VARIANTS["- both"]) == {"window_within_text_years", "window_year_stated"}


def test_weights_parse_as_name_and_a_positive_number() -> None:
    assert parse_weight("dated-prose-train=0.5") == ("dated-prose-train", 0.5)
    for spec in ("dated-prose-train", "=1", "dated-prose-train=x", "dated-prose-train=0"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_weight(spec)


def test_nonneg_of_an_unread_feature_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--data-dir", str(tmp_path), "--nonneg", "no_such_feature"])
    assert exc.value.code == 2


def _toy_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    # the second column helps, the third hurts: an unbounded fit gives it a negative weight
    y = (x[:, 0] - 0.8 * x[:, 2] + rng.normal(scale=0.5, size=400) > 0).astype(float)
    return np.column_stack([np.ones(400), x]), y


def test_a_bounded_coefficient_stays_at_or_above_zero_and_the_others_refit() -> None:
    z, y = _toy_data()
    free = _newton(z, y, 1.0)
    bounded = _newton(z, y, 1.0, nonneg=[3])
    assert free[3] < -0.5
    assert bounded[3] == 0.0
    assert bounded[1] > 0.5
    # a bound that does not bind leaves the fit as it was
    assert np.allclose(_newton(z, y, 1.0, nonneg=[1]), free)


def test_the_bounded_fit_is_the_constrained_optimum() -> None:
    """At the bound the loss may only rise when the coefficient moves into the allowed side,
    and the free columns are at their optimum (a zero gradient)."""
    z, y = _toy_data()
    w = _newton(z, y, 1.0, nonneg=[3])
    p = 1.0 / (1.0 + np.exp(-(z @ w)))
    penalty = np.array([0.0, 1.0, 1.0, 1.0])
    grad = z.T @ (p - y) + penalty * w
    assert np.allclose(grad[:3], 0.0, atol=1e-6)
    assert grad[3] > 0  # the loss falls only by making it negative


def test_row_weights_of_one_are_the_unweighted_fit() -> None:
    z, y = _toy_data()
    assert np.allclose(_newton(z, y, 1.0, weights=np.ones(len(y))), _newton(z, y, 1.0))


def _question(rng: np.random.Generator, year_col: bool) -> QuestionData:
    x = np.zeros((30, len(FEATURE_NAMES)))
    x[:, FEATURE_NAMES.index("cosine")] = rng.normal(size=30)
    if year_col:  # the gold writes the asked year, as do a few others
        x[[0, 3, 7], FEATURE_NAMES.index("window_year_stated")] = 1.0
    labels = np.zeros(30)
    labels[0] = 1.0
    ids = tuple(str(i) for i in range(30))
    return QuestionData(
        dataset="t",
        conversation=0,
        category=1,
        x=x,
        labels=labels,
        dia_ids=ids,
        evidence=frozenset({"0"}),
        passthrough=ids,
    )


def test_refitting_a_column_keeps_the_order_of_lists_where_it_is_constant() -> None:
    """--refit-only: the new rows teach only the refitted column; a list in which that column
    is the same for every candidate (a question naming no time) keeps the base model's order."""
    base = LearnedScorer(
        features=("cosine", "window_year_stated"),
        mean=np.zeros(2),
        scale=np.ones(2),
        coef=np.array([0.5, -1.0]),
        intercept=-3.0,
    )
    rng = np.random.default_rng(1)
    new = refit_columns(base, [_question(rng, True) for _ in range(30)], ["window_year_stated"], 1.0)
    assert new.coef[1] > 0  # the rows say a written asked year marks the evidence
    untimed = _question(rng, False)
    assert list(np.argsort(-new.logits(untimed.x))) == list(np.argsort(-base.logits(untimed.x)))
    assert new.features == base.features and new.first_stage is base.first_stage
