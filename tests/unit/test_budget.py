"""Budget resolution, the greedy token cut and the chunk fill."""

from __future__ import annotations

import pytest

from shared_core.errors import InvalidQueryError
from shared_core.recall.budget import ChunkFill, chunk_fill, resolve_budget, token_cut
from shared_core.tokens import default_token_counter


class WordCounter:
    """One token per whitespace-separated word: makes the arithmetic readable."""

    def count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split()[:max_tokens])


W = WordCounter()


# --- resolve_budget --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "n"), [("low", 100), ("mid", 300), ("high", 1000)])
def test_fixed_budgets(name: str, n: int) -> None:
    assert resolve_budget(name, 4096) == n
    assert resolve_budget(name, 10) == n  # fixed budgets ignore max_tokens


def test_adaptive_budgets() -> None:
    assert resolve_budget("adaptive", 4096) == round(4096 * 0.075)  # 307
    assert resolve_budget("adaptive", 4096) == 307
    assert resolve_budget("adaptive-mid", 4096) == 307
    assert resolve_budget("adaptive-low", 4096) == round(4096 * 0.025)  # 102
    assert resolve_budget("adaptive-high", 4096) == round(4096 * 0.25)  # 1024


def test_adaptive_clamps() -> None:
    assert resolve_budget("adaptive", 100) == 20  # 7.5 → floor of 20
    assert resolve_budget("adaptive-low", 0) == 20
    assert resolve_budget("adaptive", 100_000) == 2000  # 7500 → ceiling of 2000
    assert resolve_budget("adaptive-high", 8000) == 2000
    assert resolve_budget("adaptive-high", 7999) == 2000  # 1999.75 rounds to 2000
    assert resolve_budget("adaptive-high", 7996) == 1999


def test_budget_name_is_case_and_space_insensitive() -> None:
    assert resolve_budget(" MID ", 4096) == 300
    assert resolve_budget("Adaptive-High", 4096) == 1024


def test_unknown_budget_names_allowed_values() -> None:
    with pytest.raises(InvalidQueryError) as info:
        resolve_budget("medium", 4096)
    message = str(info.value)
    for allowed in ("low", "mid", "high", "adaptive", "adaptive-low", "adaptive-high"):
        assert allowed in message
    assert "medium" in message


# --- token_cut -------------------------------------------------------------------------------


def test_token_cut_stops_at_first_overflow() -> None:
    texts = ["a b c", "d e f g", "h", "i j"]  # 3, 4, 1, 2 tokens
    assert token_cut(texts, 7, W) == 2  # 3 + 4 = 7 fits exactly
    # 3 + 4 = 7 > 6: stops at the second text although "h" (1) and "i j" (2) would fit
    assert token_cut(texts, 6, W) == 1
    assert token_cut(texts, 100, W) == 4
    assert token_cut(texts, 2, W) == 0
    assert token_cut([], 10, W) == 0
    assert token_cut(texts, 0, W) == 0


def test_token_cut_with_cl100k() -> None:
    counter = default_token_counter()
    texts = ["hello world", "hello world", "hello world"]  # 2 tokens each
    assert token_cut(texts, 5, counter) == 2


# --- chunk_fill ------------------------------------------------------------------------------


def test_chunk_fill_truncates_the_last_chunk() -> None:
    fill = chunk_fill(["a b c", "d e f g", "h i"], 5, W)
    assert isinstance(fill, ChunkFill)
    assert fill.texts == ("a b c", "d e")  # 3 + 2 of the 4 tokens of the second
    assert fill.truncated == (False, True)
    assert fill.kept == 2
    assert fill.tokens == 5


def test_chunk_fill_everything_fits() -> None:
    fill = chunk_fill(["a b", "c"], 10, W)
    assert fill.texts == ("a b", "c")
    assert fill.truncated == (False, False)
    assert fill.tokens == 3


def test_chunk_fill_exact_fit_stops_without_empty_chunk() -> None:
    fill = chunk_fill(["a b", "c d", "e"], 4, W)
    assert fill.texts == ("a b", "c d")
    assert fill.truncated == (False, False)


def test_chunk_fill_zero_budget_and_empty() -> None:
    assert chunk_fill(["a"], 0, W).texts == ()
    assert chunk_fill([], 10, W).kept == 0


def test_chunk_fill_cl100k_truncation_respects_budget() -> None:
    counter = default_token_counter()
    long = " ".join(["memory"] * 50)
    fill = chunk_fill(["short text", long], 20, counter)
    assert fill.truncated == (False, True)
    assert sum(counter.count(t) for t in fill.texts) <= 20
