"""The recall budget (how many candidates each arm fetches) and the token filters.

``budget`` names map to N, the per-arm candidate count: ``low``/``mid``/``high`` are fixed
(100/300/1000), the ``adaptive`` variants scale with the caller's ``max_tokens``:
``clamp(round(max_tokens × ratio), 20, 2000)`` with ratio 0.025/0.075/0.25.

The token filter walks results in rank order and stops at the first one that does not fit: it
never skips a long memory to squeeze in a shorter, lower-ranked one, so what is returned is
always a prefix of the ranking.

>>> resolve_budget("mid", 4096), resolve_budget("adaptive", 4096)
(300, 307)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from shared_core.config import (
    ADAPTIVE_BUDGET_MAX,
    ADAPTIVE_BUDGET_MIN,
    ADAPTIVE_BUDGET_RATIOS,
    BUDGET_N,
)
from shared_core.errors import InvalidQueryError
from shared_core.protocols import TokenCounter

__all__ = ["BUDGET_NAMES", "ChunkFill", "chunk_fill", "resolve_budget", "token_cut"]

_ADAPTIVE_PREFIX: Final = "adaptive"
# "adaptive" alone means the mid ratio, like "mid" is the default fixed budget.
_ADAPTIVE_NAMES: Final[dict[str, str]] = {
    _ADAPTIVE_PREFIX: "mid",
    **{f"{_ADAPTIVE_PREFIX}-{level}": level for level in ADAPTIVE_BUDGET_RATIOS},
}
BUDGET_NAMES: Final[tuple[str, ...]] = (*BUDGET_N, *_ADAPTIVE_NAMES)
"""Every accepted budget name."""


def resolve_budget(budget: str, max_tokens: int) -> int:
    """Turn a budget name into N, the number of candidates each arm fetches.

    Names are case-insensitive. Raises :class:`InvalidQueryError` for an unknown name.

    >>> resolve_budget("high", 4096), resolve_budget("adaptive-low", 4096)
    (1000, 102)
    >>> resolve_budget("adaptive", 100)  # 7.5 → raised to the floor
    20
    """
    name = budget.strip().lower()
    if name in BUDGET_N:
        return BUDGET_N[name]
    level = _ADAPTIVE_NAMES.get(name)
    if level is None:
        raise InvalidQueryError(f"unknown budget {budget!r}; expected one of {', '.join(BUDGET_NAMES)}")
    n = round(max_tokens * ADAPTIVE_BUDGET_RATIOS[level])
    return min(ADAPTIVE_BUDGET_MAX, max(ADAPTIVE_BUDGET_MIN, n))


def token_cut(texts: Sequence[str], max_tokens: int, counter: TokenCounter) -> int:
    """How many leading ``texts`` fit in ``max_tokens`` together.

    Greedy, stopping at the first text that would overflow.

    >>> from shared_core.tokens import default_token_counter
    >>> token_cut(["hello world", "a much longer memory text", "hi"], 4, default_token_counter())
    1
    """
    used = 0
    for kept, text in enumerate(texts):
        used += counter.count(text)
        if used > max_tokens:
            return kept
    return len(texts)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkFill:
    """The chunks that fit a chunk token budget, in order; only the last may be truncated."""

    texts: tuple[str, ...]
    truncated: tuple[bool, ...]
    tokens: int

    @property
    def kept(self) -> int:
        """How many chunks (from the start of the input) are returned, whole or truncated."""
        return len(self.texts)


def _truncate_to_fit(text: str, budget: int, counter: TokenCounter) -> tuple[str, int]:
    """Truncate ``text`` to at most ``budget`` tokens as counted on the truncated text.

    Decoding a token prefix and counting it again can give one more token than asked (a word
    split differently at the cut), so shrink until the count really fits.
    """
    limit = budget
    while limit > 0:
        cut = counter.truncate(text, limit)
        used = counter.count(cut)
        if used <= budget:
            return cut, used
        limit -= max(1, used - budget)
    return "", 0


def chunk_fill(chunk_texts_in_order: Sequence[str], max_tokens: int, counter: TokenCounter) -> ChunkFill:
    """Fill a token budget with chunks in result order; the chunk that overflows is truncated.

    Chunks have their own budget (``max_chunk_tokens``), independent of the memory token cut.
    Filling stops after the first truncated chunk, or when the budget is used up exactly.

    >>> from shared_core.tokens import default_token_counter
    >>> fill = chunk_fill(["hello world", "one two three four"], 4, default_token_counter())
    >>> fill.texts, fill.truncated
    (('hello world', 'one two'), (False, True))
    """
    texts: list[str] = []
    truncated: list[bool] = []
    used = 0
    for text in chunk_texts_in_order:
        remaining = max_tokens - used
        if remaining <= 0:
            break
        n = counter.count(text)
        if n <= remaining:
            texts.append(text)
            truncated.append(False)
            used += n
            continue
        cut, n_cut = _truncate_to_fit(text, remaining, counter)
        if cut:
            texts.append(cut)
            truncated.append(True)
            used += n_cut
        break
    return ChunkFill(texts=tuple(texts), truncated=tuple(truncated), tokens=used)
