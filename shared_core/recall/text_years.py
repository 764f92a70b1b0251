r"""The years a text writes, plus the years it implies by an offset from a year it wrote.

Encyclopedia prose tells a career by its first year and then by offsets: "In 2003 Varga
signed for Ajax. Three years later he moved to Inter." Inter is 2006, but only 2003 is
written, so a question about 2006 finds no year of its window in the paragraph that answers
it, while a lead writing "active from 1990 until 2010" brackets every year. The learned
reranker's window-year features (:func:`shared_core.recall.learned._year_features`) and the
temporal boost's stated time (:func:`shared_core.recall.boosts.stated_time_match`) read
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
the result is the written years unchanged; a text without the lower-case unit word "year",
"season" or "decade" (three substring tests, :func:`may_imply`: the common case, and nearly
every chat turn) is not read further.

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

import itertools
import re
from collections.abc import Sequence
from typing import Final

__all__ = ["YEAR", "may_imply", "narrowest_stint", "offsets", "told_years", "with_implied", "written_years"]

#: A year as the learned reranker and the boosts read it (the one pattern: learned.py and
#: text_scan.py use it, boosts.py through :func:`told_years`).
YEAR: Final = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")

_NUMBER_WORDS: Final = (  # noqa: SIM905
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
).split()
_COUNTS: Final = {w: i + 1 for i, w in enumerate(_NUMBER_WORDS)} | {"a": 1, "an": 1}
_LATER: Final = frozenset({"later", "after", "afterwards", "following", "next", "subsequent"})
_UNITS: Final = {"year": 1, "season": 1, "decade": 10}
_DIGITS: Final = re.compile(r"[12]\d\d\d")  # \d as in YEAR: any Unicode digit, which int() reads
_WORD: Final = re.compile(r"\w").match  # a regex word character at a place (str.isalnum misses "_")
# One regex over the whole text for the full phrase costs ~0.5 µs a character (its alternation
# of count words is tried at every position); finding the unit words with str.find and reading
# the words either side of them costs a small fraction of that.
_DIRECTION: Final = re.compile(r"\s+(later|after|afterwards|earlier|before|previously)\b", re.IGNORECASE)
_RELATIVE: Final = {"following": 1, "next": 1, "subsequent": 1, "previous": -1, "preceding": -1, "prior": -1}
_RELATIVE_ENDS: Final = tuple(f"{w} " for w in _RELATIVE)
_LOOK_BACK: Final = 32  # characters before the unit word: "the subsequent " or "for seventeen "
# An aside whose years anchor nothing: a parenthesis, or a comma aside opened by a participle
# running to the next comma, semicolon, closing parenthesis or sentence end.
_ASIDE: Final = re.compile(
    r"\([^()]*\)"
    r"|,\s*(?:born|died|founded|established|formed|built|opened|completed|created|aged)\b"
    r"[^,;()]*?(?=[,;)]|\.(?:\s|$)|$)",
    re.IGNORECASE,
)
_QUOTE: Final = re.compile(r"\"[^\"]*\"|“[^”]*”")


def may_imply(text: str) -> bool:
    """Whether ``text`` holds the words an offset phrase needs (False: it implies no year).

    Every offset phrase holds a unit word in lower case ("years", "season", "decade": never
    first in its sentence) and a lower-case word giving its direction; a text without both is
    not read further (the fast path: a few substring tests).

    >>> may_imply('Caroline said, "I went camping last year."'), may_imply("Two years later")
    (False, True)
    """
    # spelled out: a generator over the hints costs more than the substring tests themselves
    return ("year" in text or "season" in text or "decade" in text) and (
        "later" in text
        or "after" in text
        or "earlier" in text
        or "before" in text
        or "previous" in text
        or "following" in text
        or "next" in text
        or "subsequent" in text
        or "preceding" in text
        or "prior" in text
    )


def _count(word: str) -> int | None:
    """The number a count word before a unit says ("three", "3", "a"; None: not a count)."""
    word = word.lower()
    if word.isdigit():
        return int(word) if len(word) <= 2 else None
    return _COUNTS.get(word)


def offsets(text: str) -> list[tuple[int, int]]:
    """(where the unit word starts, how many years: negative back) of every offset phrase in
    ``text``, in order.

    >>> offsets("In 2003 he joined; three years later he left, the previous season forgotten.")
    [(25, 3), (59, -1)]
    >>> offsets("He was three years old and stayed for three years before he left.")
    []
    """
    if not may_imply(text):
        return []
    out: list[tuple[int, int]] = []
    for unit, years in _UNITS.items():
        start = text.find(unit)
        while start >= 0:
            stop = start + len(unit)
            plural = text.startswith("s", stop)
            stop += plural
            step = _offset_at(text, start, stop, years, plural) if _is_unit(text, start, stop) else None
            if step is not None:
                out.append((start, step))
            start = text.find(unit, stop)
    out.sort()
    return out


def _is_unit(text: str, start: int, stop: int) -> bool:
    """Whether ``text[start:stop]`` is a word after a space or hyphen ("years", not "yesteryear")."""
    return start > 0 and (text[start - 1].isspace() or text[start - 1] == "-") and not _WORD(text, stop)


def _offset_at(text: str, start: int, stop: int, years: int, plural: bool) -> int | None:
    """The offset of the phrase around the unit word ``text[start:stop]`` (of ``years`` years)."""
    direction = _DIRECTION.match(text, stop)
    if direction is not None:
        # "three years later", "twenty-five years later" (read as five: counts stop at twenty)
        words = text[max(0, start - _LOOK_BACK) : start].split()
        n = _count(words[-1].rsplit("-", 1)[-1].lstrip("(\"“‘'")) if words else None
        if n is None or (len(words) >= 2 and words[-2].lower() == "for"):  # "for three years": a duration
            return None
        return n * years if direction[1].lower() in _LATER else -n * years
    if not plural and years == 1 and text.endswith(_RELATIVE_ENDS, 0, start):
        words = text[max(0, start - _LOOK_BACK) : start].split()
        if len(words) >= 2 and words[-2].lower() == "the":  # "the following season", "the previous year"
            return _RELATIVE[words[-1].lower()]
    return None


def written_years(text: str) -> list[int]:
    """The years ``text`` writes, in order (what :data:`YEAR` finds).

    >>> written_years("From 1998 to 2002, then 2004–05.")
    [1998, 2002, 2004]
    """
    return [int(y) for y in YEAR.findall(text)]


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
    found = offsets(text)
    return with_implied(text, found) if found else written_years(text)


def narrowest_stint(years: Sequence[int], bounds: tuple[int, int]) -> int | None:
    """How many years the narrowest stint of ``years`` holding ``bounds`` (a window's first and
    last year) covers, ``None`` if no stint holds it. A stint is two of the years with no other
    of them between: an introduction writing a career's first and last year holds every year of
    that career (31 years), a paragraph about 2003 to 2008 few (6).

    >>> narrowest_stint([1990, 2003, 2008, 2020], (2005, 2005))
    6
    >>> narrowest_stint([1990, 2020], (2005, 2005)), narrowest_stint([2011], (2005, 2005))
    (31, None)
    """
    lo, hi = bounds
    distinct = sorted(set(years))
    return min((b - a + 1 for a, b in itertools.pairwise(distinct) if a <= lo and hi <= b), default=None)


def _written_at(text: str) -> list[tuple[int, int]]:
    """(where, year) of the years :data:`YEAR` finds: four digits found by a pattern without
    ``\\b`` (a literal first character lets the regex engine skip ahead, four times faster),
    then its word edges checked here. No match of :data:`YEAR` is swallowed: one starts after a
    non-word character, which a run of digits never spans.

    >>> _written_at("In 2003, 12005, 1499 or x1999 and (2010)")
    [(3, 2003), (35, 2010)]
    """
    out = []
    end = len(text)
    for m in _DIGITS.finditer(text):
        start, stop = m.span()
        if (start and _WORD(text, start - 1)) or (stop < end and _WORD(text, stop)):
            continue
        if YEAR.fullmatch(m[0]):
            out.append((start, int(m[0])))
    return out


def with_implied(
    text: str, found: Sequence[tuple[int, int]], written: Sequence[tuple[int, int]] | None = None
) -> list[int]:
    """:func:`told_years` of ``text`` given its :func:`offsets` ``found`` (for a caller that
    tests for offsets first and keeps the written years it has when there are none), and
    optionally the (where, year) of its written years, as :func:`_written_at` finds them (a
    caller that found them already: the learned reranker's text scan).

    >>> text = "In 2003 he joined. A year later he left."
    >>> with_implied(text, offsets(text))
    [2003, 2004]
    """
    quotes = [m.span() for m in _QUOTE.finditer(text)] if '"' in text or "“" in text else []
    asides = [m.span() for m in _ASIDE.finditer(text)]
    # (position, year or None, offset or None) in text order
    events: list[tuple[int, int | None, int | None]] = [
        (at, year, None) for at, year in (_written_at(text) if written is None else written)
    ]
    events += [(where, None, offset) for where, offset in found]
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
