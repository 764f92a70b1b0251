"""Small pure text helpers shared by retain and recall (keyword documents, CJK, sentences)."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from shared_core.types import TimeWindow

__all__ = ["MONTH_NAMES", "cjk_bigrams", "date_renderings", "has_cjk", "split_sentences"]

MONTH_NAMES: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
"""English month names, January first. ``%B`` follows the process locale; what is indexed
and what a model reads must not change with it."""

# Han, Hiragana, Katakana, Hangul: scripts that Postgres' parsers cannot segment into words.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n{2,}")


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run (a lone character is kept as is).

    Bigrams index CJK text without a dictionary segmenter: a query's bigrams match the
    document's, which is what makes a Chinese or Japanese keyword search find anything.

    >>> cjk_bigrams("我喜欢咖啡 ok")
    ['我喜', '喜欢', '欢咖', '咖啡']
    """
    grams: list[str] = []
    for run in _CJK.findall(unicodedata.normalize("NFKC", text)):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def date_renderings(window: TimeWindow | None, grain: str | None) -> list[str]:
    """Readable forms of a date so a keyword query for a month or a day finds the memory.

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2023, 5, 7), end=dt.datetime(2023, 5, 7, 23, 59))
    >>> date_renderings(w, "day")
    ['May 7 2023', 'May 2023', '2023']
    """
    if window is None:
        return []
    start, end = window.start, window.end
    out: list[str] = []
    if grain in (None, "second", "minute", "hour", "day"):
        out.append(f"{MONTH_NAMES[start.month - 1]} {start.day} {start.year}")
    if grain not in ("year", "decade"):
        out.append(f"{MONTH_NAMES[start.month - 1]} {start.year}")
        if (end.year, end.month) != (start.year, start.month):
            out.append(f"{MONTH_NAMES[end.month - 1]} {end.year}")
    out.append(str(start.year))
    if end.year != start.year:
        out.append(str(end.year))
    return out


def split_sentences(text: str) -> list[str]:
    """Split on sentence punctuation followed by space, and on blank lines."""
    parts = [p.strip() for p in _SENTENCE_END.split(text)]
    return [p for p in parts if p]
