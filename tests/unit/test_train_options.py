"""benchmarks/train_reranker.py's training options: banks parse strictly, wiki-test never trains,
and --without names only features the fit would read (pure; nothing is loaded)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from train_reranker import VARIANTS, main, parse_banks


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
