r"""The years a text writes, plus the years it implies by an offset from a year it wrote.

Encyclopedia prose tells a career by its first year and then by offsets: "In 2003 Varga
signed for Ajax. Three years later he moved to Inter." Inter is 2006, but only 2003 is
written, so a question about 2006 finds no year of its window in the paragraph that answers
it, while a lead writing "active from 1990 until 2010" brackets every year. The learned
reranker's window-year features (:func:`shared_core.recall.learned._year_features`) read
:func:`told_years` so that the implied years count as told.

The rules, kept simple and deterministic:

* an offset is "N years/seasons later|after|afterwards|earlier|before|previously" (N in
  digits, a number word one to twenty, or "a"/"an"), "a decade later", "two decades earlier",
  "the following|next|subsequent year|season" (+1) and "the previous|preceding|prior
  year|season" (-1); a season counts as one year; "for three years before" is a duration, not
  an offset, and "N years on" is left out ("a year on loan" is the commoner reading in sports
  prose);
* it is anchored on the nearest year before it in the text, written or itself implied (so
  offsets chain: "In 2003 ... Three years later ... The following season ..." gives 2006 then
  2007); prose carries its timeline across sentences, so the chain runs through the text;
* a year inside a parenthesis ("(born 1970 in Brisvale)", "(1998–2002)") or a comma aside
  opened by a participle (", born 1970,", ", founded in 1901,") anchors nothing: the
  timeline is the clause's, not the aside's;
* a quotation is a timeline of its own: its years anchor only offsets inside it, and the
  years outside anchor nothing inside it;
* an offset with no year before it (in its own timeline) implies nothing.

Every written year stays in the result (asides and quotes included): without an offset phrase
the result is the written years unchanged, found by one precompiled regex (the common case,
and every chat turn).

>>> told_years("He joined Ajax in 2003 and three years later moved to Inter.")
[2003, 2006]
>>> told_years("In 1998 she signed for Elsby. The following season she moved to Cardow.")
[1998, 1999]
>>> told_years("Varga (born 1970) signed in 1990. A decade later he retired.")
[1970, 1990, 2000]
>>> told_years("He was three years old in 1975.")
[1975]
>>> told_years("Years later he returned.")
[]
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["OFFSET", "YEAR", "told_years", "written_years"]

#: A year as the learned reranker reads it (the same pattern as ``learned._YEAR``).
YEAR: Final = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")

_NUMBER_WORDS: Final = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_COUNTS: Final = {w: i + 1 for i, w in enumerate(_NUMBER_WORDS)} | {"a": 1, "an": 1}
_LATER: Final = frozenset({"later", "after", "afterwards", "following", "next", "subsequent"})
_UNIT: Final = {"year": 1, "season": 1, "decade": 10}

#: An offset phrase. Its absence (``OFFSET.search(text) is None``) means the text implies no
#: year beyond those it writes: the fast path.
OFFSET: Final = re.compile(
    r"(?<!\bfor\s)\b(?P<count>\d{1,2}|an?|" + "|".join(_NUMBER_WORDS) + r")[\s-]+"
    r"(?P<unit>year|season|decade)s?\s+"
    r"(?P<dir>later|after|afterwards|earlier|before|previously)\b"
    r"|\bthe\s+(?P<rel>following|next|subsequent|previous|preceding|prior)\s+(?P<relunit>year|season)\b",
    re.IGNORECASE,
)
# An aside whose years anchor nothing: a parenthesis, or a comma aside opened by a participle
# running to the next comma, semicolon, closing parenthesis or sentence end.
_ASIDE: Final = re.compile(
    r"\([^()]*\)"
    r"|,\s*(?:born|died|founded|established|formed|built|opened|completed|created|aged)\b"
    r"[^,;()]*?(?=[,;)]|\.(?:\s|$)|$)",
    re.IGNORECASE,
)
_QUOTE: Final = re.compile(r"\"[^\"]*\"|“[^”]*”")


def written_years(text: str) -> list[int]:
    """The years ``text`` writes, in order (what ``learned._YEAR`` finds).

    >>> written_years("From 1998 to 2002, then 2004–05.")
    [1998, 2002, 2004]
    """
    return [int(y) for y in YEAR.findall(text)]


def _offset(match: re.Match[str]) -> int:
    """The number of years an :data:`OFFSET` match moves by (negative: back)."""
    rel = match["rel"]
    if rel is not None:
        return 1 if rel.lower() in _LATER else -1
    count = match["count"].lower()
    n = int(count) if count.isdigit() else _COUNTS[count]
    n *= _UNIT[match["unit"].lower()]
    return n if match["dir"].lower() in _LATER else -n


def _region(spans: list[tuple[int, int]], pos: int) -> int:
    """The index of the span holding ``pos``, -1 if none does (spans are few: a linear scan)."""
    for i, (start, end) in enumerate(spans):
        if start <= pos < end:
            return i
    return -1


def told_years(text: str) -> list[int]:
    """The years ``text`` writes plus those its offset phrases imply, in text order.

    >>> told_years("In 2003 he joined. Three years later he left; two years later he retired.")
    [2003, 2006, 2008]
    >>> told_years('In 1990 he said: "I came in 1980 and a year later I stayed." Two years later he left.')
    [1990, 1980, 1981, 1992]
    >>> told_years("Arnholt, founded in 1901, signed him in 1995. The next year he left.")
    [1901, 1995, 1996]
    >>> told_years("He scored 20 goals.")  # no offset phrase: the written years, as they are
    []
    """
    if OFFSET.search(text) is None:
        return written_years(text)
    quotes = [m.span() for m in _QUOTE.finditer(text)]
    asides = [m.span() for m in _ASIDE.finditer(text)]
    # (position, year or None, offset or None) in text order
    events: list[tuple[int, int | None, int | None]] = [
        (m.start(), int(m[1]), None) for m in YEAR.finditer(text)
    ]
    events += [(m.start(), None, _offset(m)) for m in OFFSET.finditer(text)]
    events.sort(key=lambda e: e[0])
    anchor: dict[int, int] = {}  # timeline (quote index, -1 outside) -> its latest year
    out: list[int] = []
    for pos, year, offset in events:
        timeline = _region(quotes, pos)
        aside = _region(asides, pos) >= 0
        if year is not None:
            out.append(year)
            if not aside:
                anchor[timeline] = year
        elif offset is not None and timeline in anchor:
            implied = anchor[timeline] + offset
            out.append(implied)
            if not aside:
                anchor[timeline] = implied
    return out
