"""Default :class:`~shared_core.protocols.DateParser`: Duckling plus rules for what it misses.

Date expressions in a memory (at retain) or a query (at recall) become closed UTC
:class:`~shared_core.types.TimeWindow` values: ``[first microsecond, last microsecond]`` of the
grain the expression was written in, resolved against a reference time.

>>> import datetime as dt
>>> ref = dt.datetime(2023, 5, 8, 10, tzinfo=dt.UTC)
>>> w = parse_query_dates("I went to the support group yesterday", ref)
>>> (w.start.isoformat(), w.end.isoformat(), w.grain)
('2023-05-07T00:00:00+00:00', '2023-05-07T23:59:59.999999+00:00', 'day')

Design choices (all documented here once; tests in ``tests/unit/test_dates.py``):

* **Past preferred.** Memories and queries talk about what happened. Duckling resolves recurring
  expressions ("in June", "on Friday", "the 1st") to their *next* occurrence; when that occurrence
  starts after the reference time we step back by the recurrence period until it does not
  ("in June" said in March 2024 is June 2023). Non-recurring future expressions ("next Friday",
  "tomorrow", "next spring") are explicit and kept. A recurring expression whose current
  occurrence has already begun is kept ("in March" said on 13 March is this March).
* **Seasons** are meteorological, northern hemisphere: spring Mar-May, summer Jun-Aug, autumn/fall
  Sep-Nov, winter Dec-Feb; "winter 2021" is Dec 2021 - Feb 2022. "last <season>" is the latest one
  that has already *ended*; "this <season>" is the one in progress, else the one starting in the
  reference year; a bare "in the summer" is the latest one that has begun. Duckling's own
  (astronomical, future-preferring) seasons are discarded.
* **early / mid / late** split a year in thirds (Jan-Apr, May-Aug, Sep-Dec, grain ``month``), a
  month in days 1-10, 11-20, 21-end (grain ``day``), a decade in years 0-3, 4-6, 7-9.
  "the beginning / middle / end of X" are synonyms.
* **Open-ended**: "since X" / "after X" run from X to the reference time; "before X" / "until X"
  look back :data:`DEFAULT_OPEN_ENDED_LOOKBACK_YEARS` year(s) from the start of X, ending just
  before it. A bounded lookback keeps the temporal arm selective.
  In a *question* (``parse_query_dates`` only), "as of X" / "as at X" and "by X" (with a date
  straight after "by": "inspired by John" is no time) ask what holds at X, told any time up to
  it: the same look-back from the start of X, ending at the end of X, inclusive ("How long has
  Tim played the piano, as of December 2023?" is 1 December 2022 - 31 December 2023, not December).
  A memory's own dates are read as written: there "by Friday" is a deadline and "as of
  December" when a state began.
* **Fuzzy counts**: "a couple of" = 2-3, "a few" = 2-4, "several" = 3-7 units
  (:data:`DEFAULT_FUZZY_COUNTS`); "a few weeks ago" is the day range those counts span.
  "the past two weeks" / "the last 3 months" / "the past year" are rolling windows ending at the
  reference time; plain "last week" stays the calendar week. A state that has held "for <n>
  <units>" up to now (the present perfect, or "... now": "I've been doing yoga for 3 years now",
  "I've had them for 3 years") is that same rolling window: it says when the state began. A
  duration that is over or planned ("we stayed for two weeks", "I had been ill for a week")
  dates nothing.
* **Anchored to a date**: "the weekend / week / day / <weekday> before|after <date>", "<n> days
  after <date>", "the week of <date>" and "last Friday on <date>" resolve against that date, not
  the reference time (one extra Duckling call on the text after the relation word, only when such
  a head is written). A weekday or weekend before/after the date also covers the date itself
  ("the Sunday before October 25" is 23-25 October: such questions are mostly about what was said
  on that date), and "<weekday> on <date>" naming another weekday ("last Friday on 23 January",
  a Sunday) runs from that weekday to the date: a few days near the date, never years.
* **Weekends** are Saturday 00:00 to Sunday 23:59:59.999999 (grain ``day``); weeks start Monday.
* **Part of a period**: "the first / 2nd / last day | week | weekend | month | year of <period>"
  and "the first / last <n> days | weeks ... of <period>" resolve inside the period ("June",
  "next month", "the year", "2023", "summer", "Q3 2022"), read past-preferred as on its own.
  Weeks of a period are its 7-day blocks from its first day (days 1-7, 8-14, ...; the last week
  is its last 7 days), not calendar weeks; a weekend is the n-th (or last) Saturday in the period
  and the Sunday after it; a part the period has not got ("the fifth week of February") is the
  period itself. When what follows "of" is no period ("the first day of school", "my
  last year of college") no date is read there at all (Duckling would say the first of the
  current month, or yesterday for "the last day of the trip"); a bare spelled ordinal before a
  unit word ("on the first day", "the third time") is not a day of the month either.
* **Text cap**: only the first :data:`DEFAULT_MAX_TEXT_CHARS` characters are read, so a 100 KB
  document costs what a page does; retain splits long texts into units well below this anyway.
  Duckling sees one sentence at a time (:data:`DEFAULT_DUCKLING_CHUNK_CHARS`), and only sentences
  passing the cheap pre-check (a digit or a date word).
* **False positives** are filtered: no latent matches; "May"/"March" lowercase or before a
  pronoun; bare clock numbers ("at 5", "9 to 5"); "the 5th floor"; a spelled ordinal before a
  count ("the first three of her dogs"); fractions ("3/4"); bare
  4-digit numbers named as ids or counts ("port 2023", "2023 visitors"); a lone "from X" is X.
* **Failure**: any error in Duckling (or a date Python cannot represent) drops that mention, never
  raises; if Duckling cannot load at all the regex rules still run.
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from shared_core.timeutil import add_months
from shared_core.types import DATE_GRAINS, DateGrain, DateMention, TimeWindow, as_utc

__all__ = [
    "DEFAULT_BARE_YEAR_MIN",
    "DEFAULT_DUCKLING_CHUNK_CHARS",
    "DEFAULT_FUZZY_COUNTS",
    "DEFAULT_MAX_DUCKLING_CHUNKS",
    "DEFAULT_MAX_TEXT_CHARS",
    "DEFAULT_MAX_YEARS_AHEAD",
    "DEFAULT_MIN_YEAR",
    "DEFAULT_OPEN_ENDED_LOOKBACK_YEARS",
    "DEFAULT_TZ_DB_PATH",
    "DucklingDateParser",
    "default_date_parser",
    "parse_query_dates",
]

# --- defaults -----------------------------------------------------------------------------------
DEFAULT_TZ_DB_PATH: Final = "/usr/share/zoneinfo"
"""Duckling's time-zone database. We always resolve in UTC, so a missing directory is replaced by
an empty one (Duckling aborts the whole process on a path that does not exist)."""
DEFAULT_MAX_TEXT_CHARS: Final = 4000
"""Characters of a text handed to Duckling and the rules; later mentions are ignored."""
DEFAULT_MIN_YEAR: Final = 1000
"""Dates starting before this year are dropped as absurd."""
DEFAULT_MAX_YEARS_AHEAD: Final = 20
"""Dates starting more than this many years after the reference year are dropped as absurd."""
DEFAULT_BARE_YEAR_MIN: Final = 1900
"""A bare 4-digit number ("2019", not "in 1066") counts as a year only from this year on."""
DEFAULT_OPEN_ENDED_LOOKBACK_YEARS: Final = 1
"""How far back "before X" / "until X" reach (from the start of X)."""
DEFAULT_FUZZY_COUNTS: Final[Mapping[str, tuple[int, int]]] = {
    "couple": (2, 3),
    "few": (2, 4),
    "several": (3, 7),
}
"""(fewest, most) units meant by a fuzzy count."""
DEFAULT_DUCKLING_CHUNK_CHARS: Final = 160
"""Duckling is handed one sentence at a time, cut to this many characters: its cost grows
faster than linearly with length (a dense 1600-char text takes ~400 ms, ten 160-char pieces ~20)."""
DEFAULT_MAX_DUCKLING_CHUNKS: Final = 32
"""At most this many pieces of one text go to Duckling (the regex rules still read all of it)."""
DEFAULT_CONTEXT_CACHE_SIZE: Final = 256
"""Duckling contexts (one per reference second) kept; queries mostly share a reference time."""

_LOG = logging.getLogger(__name__)
_ONE_US: Final = _dt.timedelta(microseconds=1)
_ONE_DAY: Final = _dt.timedelta(days=1)
_GRAIN_ORDER: Final[Mapping[str, int]] = {grain: i for i, grain in enumerate(DATE_GRAINS)}
_SUB_DAY: Final = frozenset({"second", "minute", "hour"})

# Priorities when candidates overlap: our rules fix Duckling's known mistakes, and a bare year is
# the weakest evidence of all.
_PRIO_ANCHORED: Final = 4  # "the weekend before <date>" spans, and so beats, both of its halves
_PRIO_RULE: Final = 3
_PRIO_DUCKLING: Final = 2
_PRIO_BARE_YEAR: Final = 1

# --- vocabulary ---------------------------------------------------------------------------------
_MONTHS: Final[Mapping[str, int]] = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_MONTH_RE: Final = "|".join(sorted(_MONTHS, key=len, reverse=True))
_SEASON_START: Final[Mapping[str, int]] = {
    "spring": 3,
    "summer": 6,
    "autumn": 9,
    "fall": 9,
    "winter": 12,
}
_SEASON_RE: Final = "spring|summer|autumn|fall|winter"
_NUMBER_WORDS: Final[Mapping[str, int]] = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_ORDINALS: Final[Mapping[str, int]] = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "last": 4,
    "final": 4,
}
_PART_SYNONYMS: Final[Mapping[str, str]] = {
    "early": "early",
    "mid": "mid",
    "late": "late",
    "beginning": "early",
    "start": "early",
    "middle": "mid",
    "end": "late",
}

# The pre-check: without a digit or one of these words no date expression is possible, so we skip
# Duckling (most LoCoMo-style questions have none: "When did Caroline go to the group?").
_PRECHECK: Final = re.compile(
    r"\d|\b(?:"
    + _MONTH_RE
    + "|"
    + _SEASON_RE
    + r"|mon|monday|tue|tues|tuesday|wed|wednesday|thu|thurs|thursday|fri|friday|sat|saturday"
    r"|sun|sunday|today|tonight|yesterday|tomorrow|ago|weekends?|weeks?|months?|years?|days?"
    r"|decades?|quarters?|fortnight|morning|afternoon|evening|night|noon|midnight|christmas|xmas"
    r"|easter|halloween|thanksgiving|valentine'?s?|new\s+year'?s?|hanukkah|ramadan|diwali"
    r"|(?:[1-9]0|')s)\b",
    re.IGNORECASE,
)

# Duckling bodies that are never a useful date: the reference instant itself, or a grain with no
# anchor ("the day", Duckling's "this day"), or relative to a narrative time we do not know.
_STOP_BODIES: Final = frozenset(
    {
        "now",
        "right now",
        "just now",
        "the day",
        "the week",
        "the month",
        "the year",
        "next day",
        "the next day",
        "a day",
        "the following day",
    }
)
_AMBIGUOUS_BARE: Final = frozenset({"march", "may", "august"})  # verbs/modals when lowercase
_WEEKDAY_ABBREVIATIONS: Final = frozenset({"mon", "tue", "tues", "wed", "thu", "thurs", "fri", "sat", "sun"})
_PRONOUNS: Final = frozenset({"i", "we", "you", "he", "she", "they", "it", "god", "all", "one"})
_LEADING_PREPOSITION: Final = re.compile(r"^(?:in|on|at|during|for|of|by|within|throughout)\s+")
# "3 days ago" said at 10:00 comes back from Duckling at hour grain (10:00 three days ago); a
# memory about it means the day.
_DAYS_AGO: Final = re.compile(r"\b(?:days?|weeks?|fortnights?|months?|years?)\s+ago\b", re.IGNORECASE)
_SEASON_WORD: Final = re.compile(r"\b(?:" + _SEASON_RE + r")\b", re.IGNORECASE)
# Only small numbers and clock words, no am/pm: "at 5", "9 to 5", "from 2 to 4" are not dates.
_BARE_CLOCK: Final = re.compile(
    r"^(?:(?:at|around|about|by|from|between|to|till|until|past|after|and|@|-)\s*"
    r"|\d{1,2}(?:[.:]\d{2})?(?!\d)\s*)+$",
    re.IGNORECASE,
)
_UNITS_ORDINAL: Final = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth"
# "the 5th" and "the first" alike: Duckling reads both as a day of the current month.
_ORDINAL_DAY: Final = re.compile(
    r"^(?:on\s+)?(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)|tenth|eleventh|twelfth|(?:thir|four|fif|six|seven|eigh|nine)teenth"
    r"|twentieth|thirtieth|(?:(?:twenty|thirty)[\s-]?)?(?:" + _UNITS_ORDINAL + r"))$",
    re.IGNORECASE,
)
_NOT_DAY_AFTER: Final = frozenset(
    {
        "floor",
        "grade",
        "place",
        "time",
        "times",
        "row",
        "edition",
        "anniversary",
        "birthday",
        "century",
        "street",
        "avenue",
        "ave",
        "round",
        "level",
        "inning",
        "period",
        "attempt",
        "try",
        "chapter",
        "step",
        "version",
        "generation",
        "year",
        "person",
        "one",
        "ones",
        "team",
        "book",
        "season",
        "episode",
        "game",
        "day",
        "days",
        "week",
        "weeks",
        "weekend",
        "month",
        "months",
        "percentile",
        "amendment",
    }
)
# A spelled ordinal followed by a count ranks things ("the first three of her dogs", "the second
# two chapters"); a day of the month is followed by a month, "of", a year or nothing.
_COUNT_AFTER_ORDINAL: Final = frozenset(word for word, n in _NUMBER_WORDS.items() if n > 1) | {
    "few",
    "couple",
    "several",
    "dozen",
}
_WEEKDAY_INDEX: Final[Mapping[str, int]] = {
    day: i
    for i, day in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
"""Each weekday's ``datetime.weekday()``."""
_WEEKDAYS: Final = frozenset(_WEEKDAY_INDEX)
_NOT_WEEKDAY_AFTER: Final = frozenset(
    {
        "school",
        "kind",
        "best",
        "roast",
        "paper",
        "papers",
        "service",
        "services",
        "league",
        "driver",
        "drivers",
        "blues",
        "mass",
        "comics",
        "edition",
        "special",
        "times",
    }
)
# Duckling reads "He turned 21 in March" as 21 March: re-read what follows the number.
_LEADING_COUNT_IN: Final = re.compile(r"^\d{1,2}\s+(?=in\s)", re.IGNORECASE)
_BARE_FRACTION: Final = re.compile(r"^\d{1,2}\s*[/-]\s*\d{1,2}$")
_TINY_YEAR: Final = re.compile(r"\byear\s+-?\d{1,3}\b", re.IGNORECASE)
_DATE_PREPOSITION_BEFORE: Final = re.compile(
    r"\b(?:on|since|until|till|by|before|after|from)\s*$", re.IGNORECASE
)
_OPEN_PREFIX: Final = re.compile(
    r"\b(?P<prep>since|after|before|until|till|up\s+to|prior\s+to)\s+$", re.IGNORECASE
)
# In a question, what holds at a time: "as of X", "as at X", "by X" (see the module docstring).
_AS_OF_HEAD: Final = re.compile(r"\b(?:as\s+(?:of|at)|by)\s+", re.IGNORECASE)
_AS_OF_LOOKAHEAD_CHARS: Final = 24
"""A head is re-read when a mention starts this close after it: Duckling's own "by July 10" (now
until then) can swallow the date and leave only "2022" of "by July 10, 2022" as a mention."""
# "as of the summer of 2022", "by the 5th": the date may be read from after the article.
_AS_OF_ARTICLE: Final = re.compile(r"the\s+", re.IGNORECASE)

# Bare years: a 4-digit number not glued to other digits, ids or currency ...
_BARE_YEAR: Final = re.compile(r"(?<![\w#$€£¥.,:/@-])(?P<year>[12]\d{3})(?!\w|[.,:/-]\d|%)")
# ... not named by a word that makes it an identifier or a count ...
_NOT_YEAR_BEFORE: Final = frozenset(
    {
        "port",
        "ticket",
        "tickets",
        "room",
        "rooms",
        "id",
        "no",
        "nr",
        "num",
        "number",
        "version",
        "v",
        "ver",
        "page",
        "pages",
        "p",
        "pp",
        "flight",
        "bus",
        "route",
        "apartment",
        "apt",
        "suite",
        "unit",
        "code",
        "pin",
        "extension",
        "ext",
        "zip",
        "model",
        "order",
        "invoice",
        "account",
        "line",
        "channel",
        "gate",
        "chapter",
        "step",
        "item",
        "issue",
        "pr",
        "row",
        "seat",
        "table",
        "level",
        "floor",
        "platform",
        "case",
        "ref",
        "reference",
        "serial",
        "bug",
        "build",
        "error",
        "house",
        "street",
        "box",
        "lot",
        "ward",
        "bed",
        "exit",
        "highway",
        "interstate",
        "score",
        "rank",
        "over",
        "under",
        "about",
        "approximately",
        "nearly",
        "almost",
        "only",
        "exactly",
        "had",
        "have",
        "has",
        "with",
        "got",
        "get",
        "sold",
        "bought",
        "paid",
        "cost",
        "costs",
        "earned",
        "spent",
        "x",
        "times",
        "minus",
        "plus",
        "#",
    }
)
_NOT_YEAR_AFTER: Final = frozenset(
    {
        "people",
        "persons",
        "users",
        "visitors",
        "dollars",
        "euros",
        "pounds",
        "usd",
        "eur",
        "gbp",
        "items",
        "times",
        "miles",
        "km",
        "kilometers",
        "kilometres",
        "meters",
        "metres",
        "feet",
        "ft",
        "words",
        "pages",
        "calories",
        "kcal",
        "steps",
        "points",
        "votes",
        "members",
        "students",
        "employees",
        "units",
        "rows",
        "records",
        "bytes",
        "kb",
        "mb",
        "gb",
        "followers",
        "likes",
        "views",
        "copies",
        "cars",
        "cats",
        "dogs",
        "books",
        "songs",
        "photos",
        "pieces",
        "guests",
        "runners",
        "participants",
        "hours",
        "minutes",
        "seconds",
        "days",
        "weeks",
        "months",
        "years",
        "x",
        "rpm",
        "mph",
        "kg",
        "lbs",
        "grams",
        "g",
    }
)
# ... and introduced like a year: by a temporal word, a determiner, or at a clause start.
_YEAR_CONTEXT_BEFORE: Final = frozenset(
    {
        "in",
        "of",
        "since",
        "during",
        "by",
        "until",
        "till",
        "before",
        "after",
        "from",
        "to",
        "through",
        "throughout",
        "around",
        "circa",
        "c",
        "ca",
        "year",
        "early",
        "mid",
        "late",
        "the",
        "her",
        "his",
        "my",
        "our",
        "their",
        "your",
        "its",
        "this",
        "that",
        "and",
        "between",
        "for",
        "spring",
        "summer",
        "autumn",
        "fall",
        "winter",
        "christmas",
        "easter",
        "class",
        "back",
        "as",
        "than",
        "fy",
        "vintage",
        "season",
        *_MONTHS,
    }
)
_CLAUSE_START: Final = frozenset(".!?;:,\"“”'‘’([{-–—")
_PRECEDING_WORD: Final = re.compile(r"([A-Za-z#]+)\.?\s*$")
_FOLLOWING_WORD: Final = re.compile(r"^\s*([A-Za-z]+)")


# --- value types --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Candidate:
    """A resolved mention before overlaps are settled."""

    start_char: int
    end_char: int
    window: TimeWindow
    priority: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _Period:
    """How far apart two occurrences of a recurring expression are: months or a fixed delta."""

    months: int = 0
    delta: _dt.timedelta = _dt.timedelta(0)

    def back(self, value: _dt.datetime, times: int) -> _dt.datetime:
        if self.months:
            return _add_months(value, -self.months * times)
        return value - self.delta * times


@dataclass(frozen=True, slots=True, kw_only=True)
class _DucklingRuntime:
    """Duckling's loaded handles: load once per process (loading starts a Haskell runtime)."""

    module: Any
    tz_db: Any
    locale: Any
    dimensions: Any


# --- calendar helpers ---------------------------------------------------------------------------


def _add_months(value: _dt.datetime, months: int) -> _dt.datetime:
    """Add calendar months; raises ``ValueError`` when the day does not exist in the target
    (a recurring "the 31st" skips the months without one)."""
    return add_months(value, months, missing_day="raise")


def _floor_day(value: _dt.datetime) -> _dt.datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)


def _floor(value: _dt.datetime, grain: DateGrain) -> _dt.datetime:
    """The first instant of the ``grain`` containing ``value`` (weeks start on Monday)."""
    if grain == "second":
        return value.replace(microsecond=0)
    if grain == "minute":
        return value.replace(second=0, microsecond=0)
    if grain == "hour":
        return value.replace(minute=0, second=0, microsecond=0)
    day = _floor_day(value)
    if grain == "day":
        return day
    if grain == "week":
        return day - _dt.timedelta(days=day.weekday())
    if grain == "month":
        return day.replace(day=1)
    if grain in ("quarter", "season"):
        return day.replace(month=3 * ((day.month - 1) // 3) + 1, day=1)
    if grain == "year":
        return day.replace(month=1, day=1)
    return day.replace(year=day.year - day.year % 10, month=1, day=1)


def _step(value: _dt.datetime, grain: DateGrain, count: int = 1) -> _dt.datetime:
    """``value`` moved by ``count`` grains (calendar-aware for months and longer)."""
    fixed = {
        "second": _dt.timedelta(seconds=1),
        "minute": _dt.timedelta(minutes=1),
        "hour": _dt.timedelta(hours=1),
        "day": _ONE_DAY,
        "week": _dt.timedelta(days=7),
    }
    if grain in fixed:
        return value + fixed[grain] * count
    months = {"month": 1, "quarter": 3, "season": 3, "year": 12, "decade": 120}[grain]
    return _add_months(value, months * count)


def _span(start: _dt.datetime, end_exclusive: _dt.datetime, grain: DateGrain | None) -> TimeWindow:
    """The closed window ``[start, end_exclusive - 1µs]``."""
    return TimeWindow(start=start, end=end_exclusive - _ONE_US, grain=grain)


def _grain_window(start: _dt.datetime, grain: DateGrain, count: int = 1) -> TimeWindow:
    return _span(start, _step(start, grain, count), grain)


def _coarsest(grains: Sequence[DateGrain | None]) -> DateGrain | None:
    known: list[DateGrain] = [g for g in grains if g is not None]
    if not known:
        return None
    return max(known, key=_grain_rank)


def _grain_rank(grain: DateGrain) -> int:
    return _GRAIN_ORDER[grain]


def _as_grain(value: object) -> DateGrain | None:
    if isinstance(value, str) and value in _GRAIN_ORDER:
        return cast(DateGrain, value)
    return None


def _open_ended(prep: str, window: TimeWindow, ref: _dt.datetime, lookback_years: int) -> TimeWindow:
    """Apply "since/after X" (X .. reference) or "before/until X" (lookback .. just before X)."""
    prep = " ".join(prep.lower().split())
    if prep in ("since", "after"):
        start = window.start if prep == "since" else window.end + _ONE_US
        end = ref if ref >= start else _add_months(start, 12 * lookback_years)
        return TimeWindow(start=start, end=end, grain=window.grain)
    return _span(_add_months(window.start, -12 * lookback_years), window.start, window.grain)


# --- Duckling -----------------------------------------------------------------------------------

_RUNTIME_LOCK = threading.Lock()
_PARSE_LOCK = threading.Lock()  # the Haskell FFI is not documented as reentrant: serialise calls
_RUNTIMES: dict[str, _DucklingRuntime | None] = {}


def _load_runtime(tz_db_path: str) -> _DucklingRuntime:
    import duckling  # imported lazily: importing it boots the Haskell runtime

    if not os.path.isdir(tz_db_path):
        # Duckling kills the process on a missing directory; UTC needs no zone files at all.
        tz_db_path = tempfile.mkdtemp(prefix="hindsight-empty-tzdb-")
    tz_db = duckling.load_time_zones(tz_db_path)
    locale = duckling.default_locale_lang(duckling.parse_lang("EN"))
    dimensions = duckling.parse_dimensions(["time"])
    runtime = _DucklingRuntime(module=duckling, tz_db=tz_db, locale=locale, dimensions=dimensions)
    # The first parses pay for lazily built rule tables (~10 ms); pay it here, not in a query.
    ref = duckling.parse_ref_time(tz_db, "UTC", 1_700_000_000)
    context = duckling.Context(ref, locale)
    for warm in ("yesterday at 5pm", "in June 2023 and last Friday", "the day before 3 weeks ago"):
        duckling.parse_text(warm, context, dimensions, False)
    return runtime


def _runtime(tz_db_path: str) -> _DucklingRuntime | None:
    """The process-wide Duckling handles, loaded on first use (thread-safe); None if unavailable."""
    if tz_db_path in _RUNTIMES:
        return _RUNTIMES[tz_db_path]
    with _RUNTIME_LOCK:
        if tz_db_path not in _RUNTIMES:
            try:
                _RUNTIMES[tz_db_path] = _load_runtime(tz_db_path)
            except Exception:  # a retain must never crash on dates: fall back to the rules
                _LOG.warning("Duckling could not be loaded; only regex date rules will run", exc_info=True)
                _RUNTIMES[tz_db_path] = None
        return _RUNTIMES[tz_db_path]


@functools.lru_cache(maxsize=DEFAULT_CONTEXT_CACHE_SIZE)
def _context(tz_db_path: str, timestamp: int) -> Any:
    runtime = _runtime(tz_db_path)
    if runtime is None:
        return None
    ref = runtime.module.parse_ref_time(runtime.tz_db, "UTC", timestamp)
    return runtime.module.Context(ref, runtime.locale)


def _call_duckling(text: str, ref: _dt.datetime, tz_db_path: str) -> str:
    """Duckling's raw JSON answer for ``text`` (non-latent time entities only), or ``"[]"``."""
    runtime = _runtime(tz_db_path)
    if runtime is None:
        return "[]"
    context = _context(tz_db_path, int(ref.timestamp()))
    with _PARSE_LOCK:
        result: str = runtime.module.parse_text(text, context, runtime.dimensions, False)
    return result


def _parse_instant(value: Any) -> _dt.datetime:
    if not isinstance(value, str):
        raise TypeError(f"not a Duckling timestamp: {value!r}")
    return as_utc(_dt.datetime.fromisoformat(value))


def _recurrence(occurrences: Sequence[Any]) -> _Period | None:
    """The period of a recurring Duckling match, from the gap between its first two occurrences."""
    if len(occurrences) < 2:
        return None
    first, second = (_anchor(o) for o in occurrences[:2])
    gap = second - first
    if gap <= _dt.timedelta(0):
        return None
    if gap >= _dt.timedelta(days=28):
        # Months vary in length: "the 1st" recurs monthly, "in June" yearly (12 months).
        return _Period(months=max(1, round(gap.days / 30.436875)))
    return _Period(delta=gap)


def _anchor(occurrence: Any) -> _dt.datetime:
    if "value" in occurrence:
        return _parse_instant(occurrence["value"])
    bound = occurrence.get("from") or occurrence.get("to")
    return _parse_instant(bound["value"])


def _occurrence_window(
    occurrence: Mapping[str, Any],
    ref: _dt.datetime,
    lookback_years: int,
    shift: Callable[[_dt.datetime], _dt.datetime],
    point: bool = False,
) -> TimeWindow | None:
    """One Duckling occurrence as a closed window, its instants moved by ``shift``."""
    if occurrence.get("type") == "value":
        grain = _as_grain(occurrence.get("grain"))
        if grain is None:
            return None
        return _grain_window(shift(_parse_instant(occurrence["value"])), grain)
    lower, upper = occurrence.get("from"), occurrence.get("to")
    grain = _coarsest([_as_grain(b.get("grain")) for b in (lower, upper) if b])
    if grain is None:
        return None
    if lower and upper:
        start = shift(_parse_instant(lower["value"]))
        end = shift(_parse_instant(upper["value"]))  # Duckling's "to" is exclusive
        if end <= start:
            return None
        if grain in _SUB_DAY and end - start > _ONE_DAY:
            grain = "day"  # "last weekend": Fri 18:00 .. Mon 00:00 is days, not hours
        return _span(start, end, grain)
    if lower and point:
        return _grain_window(shift(_parse_instant(lower["value"])), grain)
    if lower:
        start = shift(_parse_instant(lower["value"]))
        end = ref if ref >= start else _add_months(start, 12 * lookback_years)
        return TimeWindow(start=start, end=end, grain=grain)
    if upper:
        end = shift(_parse_instant(upper["value"]))
        return _span(_add_months(end, -12 * lookback_years), end, grain)
    return None


def _unchanged(value: _dt.datetime) -> _dt.datetime:
    return value


def _duckling_window(
    value: Mapping[str, Any], ref: _dt.datetime, lookback_years: int, point: bool = False
) -> TimeWindow | None:
    """Resolve a Duckling value, stepping recurring ones back until they start by ``ref``."""
    occurrences = value.get("values") or [value]
    window = _occurrence_window(value, ref, lookback_years, _unchanged, point)
    period = _recurrence(occurrences)
    if window is None or period is None or window.start <= ref:
        return window
    for times in range(1, 4):  # 3 steps: a day-of-month may skip a short month ("the 31st")
        try:
            shifted = _occurrence_window(
                value, ref, lookback_years, functools.partial(period.back, times=times), point
            )
        except ValueError:
            continue
        if shifted is not None and shifted.start <= ref:
            return shifted
    return window


def _reject_duckling(body: str, text: str, start: int, end: int, grain: str | None) -> bool:
    """Heuristics for Duckling's false positives (see the module docstring)."""
    lowered = " ".join(body.lower().split())
    if _LEADING_PREPOSITION.sub("", lowered) in _STOP_BODIES or grain == "second":
        return True
    if _SEASON_WORD.search(body):
        return True  # our season rules own these (meteorological, past-preferring)
    if _BARE_CLOCK.match(body) or _TINY_YEAR.search(body):
        return True
    if lowered in _WEEKDAY_ABBREVIATIONS:
        return True  # "I sat on the sofa", "the sun"
    following = _FOLLOWING_WORD.match(text[end : end + 30])
    next_word = following.group(1).lower() if following else None
    if _ORDINAL_DAY.match(lowered) and next_word in _NOT_DAY_AFTER:
        return True  # "on the 5th floor"
    if _ORDINAL_DAY.match(lowered) and next_word in _COUNT_AFTER_ORDINAL and not lowered[-1].isdigit():
        return True  # "the first three of her dogs": a rank among things, not a day
    if lowered in _WEEKDAYS and next_word in _NOT_WEEKDAY_AFTER:
        return True  # "Sunday school"
    if lowered in _AMBIGUOUS_BARE:
        if body.islower():
            return True  # "they march on", "you may go"
        if next_word in _PRONOUNS:
            return True  # "May I ask", "May we come in"
    return bool(
        _BARE_FRACTION.match(body) and not _DATE_PREPOSITION_BEFORE.search(text[max(0, start - 8) : start])
    )


_SENTENCE_BREAK: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“'(])|\n+")
_SOFT_BREAK: Final = re.compile(r"[\s,;]")


def _chunks(text: str, max_chars: int) -> Iterator[tuple[int, str]]:
    """``(offset, piece)`` of ``text``: sentences, long ones cut at a space or comma."""
    start = 0
    bounds = [m.start() for m in _SENTENCE_BREAK.finditer(text)] + [len(text)]
    for bound in bounds:
        while bound - start > max_chars:
            cut = max(
                (m.start() for m in _SOFT_BREAK.finditer(text, start + 1, start + max_chars)),
                default=start + max_chars,
            )
            yield start, text[start:cut]
            start = cut
        if bound > start:
            yield start, text[start:bound]
        start = bound


def _all_duckling_candidates(
    text: str,
    ref: _dt.datetime,
    parser: DucklingDateParser,
) -> list[_Candidate]:
    """Duckling's matches over ``text``, one sentence (or piece of one) at a time."""
    candidates: list[_Candidate] = []
    pieces = (c for c in _chunks(text, parser.duckling_chunk_chars) if _PRECHECK.search(c[1]))
    for offset, piece in itertools.islice(pieces, parser.max_duckling_chunks):
        candidates += _duckling_candidates(piece, ref, parser, offset)
    return candidates


def _duckling_candidates(
    text: str, ref: _dt.datetime, parser: DucklingDateParser, offset: int = 0, reread: bool = True
) -> list[_Candidate]:
    """Duckling's filtered matches; ``offset`` places ``text`` in the caller's whole text."""
    try:
        raw = json.loads(_call_duckling(text, ref, parser.tz_db_path))
    except Exception:  # Duckling must never take a retain down
        _LOG.debug("Duckling failed on a text of %d chars", len(text), exc_info=True)
        return []
    candidates: list[_Candidate] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            body, start, end = item["body"], int(item["start"]), int(item["end"])
            value = item["value"]
            if not isinstance(body, str) or _reject_duckling(body, text, start, end, value.get("grain")):
                continue
            count = _LEADING_COUNT_IN.match(body)
            if count is not None and reread:
                inner = start + count.end()
                candidates += _duckling_candidates(text[inner:end], ref, parser, offset + inner, reread=False)
                continue
            # A lone "from X" is mostly "moved from X" / "from 4 years ago": X itself, not
            # "X until now" (which "since X" says).
            point = body.lower().startswith("from ") and "to" not in value
            window = _duckling_window(value, ref, parser.open_ended_lookback_years, point)
            if window is not None and window.grain in _SUB_DAY and _DAYS_AGO.search(body):
                window = _grain_window(_floor_day(window.start), "day")
        except Exception:  # one bad entity (odd JSON, year 0, overflow) drops only itself
            continue
        if window is not None:
            candidates.append(
                _Candidate(
                    start_char=start + offset, end_char=end + offset, window=window, priority=_PRIO_DUCKLING
                )
            )
    return candidates


# --- our rules ----------------------------------------------------------------------------------

_RuleFn = Callable[[re.Match[str], _dt.datetime], TimeWindow | None]


def _season_start(season: str, year: int) -> _dt.datetime:
    return _dt.datetime(year, _SEASON_START[season.lower()], 1, tzinfo=_dt.UTC)


def _season(season: str, year: int) -> TimeWindow:
    return _grain_window(_season_start(season, year), "season")


def _latest_season_started(season: str, ref: _dt.datetime) -> int:
    """The year of the latest ``season`` that has begun by ``ref``."""
    return ref.year if _season_start(season, ref.year) <= ref else ref.year - 1


def _last_season_year(season: str, ref: _dt.datetime) -> int:
    """The year of the latest ``season`` that has *ended* by ``ref`` ("last spring")."""
    year = _latest_season_started(season, ref)
    return year if _season(season, year).end < ref else year - 1


def _rule_season_relative(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    season, rel = m["season"], m["rel"].lower()
    if rel in ("last", "past", "previous"):
        return _season(season, _last_season_year(season, ref))
    if rel in ("next", "coming"):
        year = _latest_season_started(season, ref) + 1
        return _season(season, year)
    current = _season(season, _latest_season_started(season, ref))
    return current if current.end >= ref else _season(season, ref.year)


def _rule_season_before_last(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    return _season(m["season"], _last_season_year(m["season"], ref) - 1)


def _rule_season_year(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    return _season(m["season"], int(m["year"]))


def _rule_season_bare(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    return _season(m["season"], _latest_season_started(m["season"], ref))


def _part_bounds(part: str, size: int) -> tuple[int, int]:
    """(first, last) 0-based sub-unit of ``size`` that "early/mid/late" selects."""
    third = {"early": 0, "mid": 1, "late": 2}[_PART_SYNONYMS[part.lower()]]
    if size == 12:  # months of a year: Jan-Apr, May-Aug, Sep-Dec
        return 4 * third, 4 * third + 3
    return {0: (0, 3), 1: (4, 6), 2: (7, 9)}[third]  # years of a decade


def _part_of_year(part: str, year: int) -> TimeWindow:
    first, last = _part_bounds(part, 12)
    start = _dt.datetime(year, first + 1, 1, tzinfo=_dt.UTC)
    return _span(start, _add_months(start, last - first + 1), "month")


def _part_of_month(part: str, month_start: _dt.datetime) -> TimeWindow:
    third = {"early": 0, "mid": 1, "late": 2}[_PART_SYNONYMS[part.lower()]]
    start = month_start.replace(day=1 + 10 * third)
    end = _add_months(month_start, 1) if third == 2 else start + _dt.timedelta(days=10)
    return _span(start, end, "day")


def _relative_year(rel: str, ref: _dt.datetime) -> int:
    return ref.year + {"this": 0, "last": -1, "next": 1}[rel.lower()]


def _rule_part_year(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    year = int(m["year"]) if m["year"] else _relative_year(m["rel"], ref)
    return _part_of_year(m["part"] or m["part2"], year)


def _rule_part_month(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    month = _MONTHS[m["month"].lower().rstrip(".")]
    part = m["part"] or m["part2"]
    if m["year"]:
        return _part_of_month(part, _dt.datetime(int(m["year"]), month, 1, tzinfo=_dt.UTC))
    window = _part_of_month(part, _dt.datetime(ref.year, month, 1, tzinfo=_dt.UTC))
    if window.start > ref:  # past preferred: "late June" said on 15 June is last year's
        window = _part_of_month(part, _dt.datetime(ref.year - 1, month, 1, tzinfo=_dt.UTC))
    return window


def _rule_part_relative_month(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    offset = {"this": 0, "last": -1, "next": 1}[m["rel"].lower()]
    return _part_of_month(m["part"] or m["part2"], _add_months(_floor(ref, "month"), offset))


def _rule_decade(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    digits = m["decade"].lstrip("'")
    if len(digits) == 2:
        decade = 2000 + int(digits) if 2000 + int(digits) <= ref.year else 1900 + int(digits)
    else:
        decade = int(digits)
    if m["part"]:
        first, last = _part_bounds(m["part"], 10)
        start = _dt.datetime(decade + first, 1, 1, tzinfo=_dt.UTC)
        return _span(start, start.replace(year=decade + last + 1), "decade")
    return _grain_window(_dt.datetime(decade, 1, 1, tzinfo=_dt.UTC), "decade")


def _quarter(year: int, quarter: int) -> TimeWindow:
    return _grain_window(_dt.datetime(year, 3 * quarter - 2, 1, tzinfo=_dt.UTC), "quarter")


def _quarter_year(year: str | None, rel: str | None, quarter: int, ref: _dt.datetime) -> int:
    if year:
        return 2000 + int(year[1:]) if year.startswith("'") else int(year)
    if rel:
        return _relative_year(rel, ref)
    # No year: the latest such quarter that has begun (past preferred).
    return ref.year if _quarter(ref.year, quarter).start <= ref else ref.year - 1


def _rule_quarter(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    quarter = int(m["q"])
    return _quarter(_quarter_year(m["year"], None, quarter, ref), quarter)


def _rule_quarter_ordinal(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    ordinal = m["ord"].lower()
    if ordinal in ("last", "final") and not (m["year"] or m["rel"]):
        return None  # plain "last quarter" is the previous quarter: Duckling gets that right
    quarter = _ORDINALS[ordinal]
    return _quarter(_quarter_year(m["year"], m["rel"], quarter, ref), quarter)


def _rule_year_range(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    first, last = int(m["y1"]), int(m["y2"])
    if last < first:
        return None
    start = _dt.datetime(first, 1, 1, tzinfo=_dt.UTC)
    return _span(start, start.replace(year=last + 1), "year")


def _weekend(saturday: _dt.datetime) -> TimeWindow:
    return _span(saturday, saturday + 2 * _ONE_DAY, "day")


def _this_saturday(ref: _dt.datetime) -> _dt.datetime:
    return _floor(ref, "week") + 5 * _ONE_DAY


def _last_saturday(ref: _dt.datetime) -> _dt.datetime:
    """Saturday of the latest weekend that has ended by ``ref``."""
    saturday = _this_saturday(ref)
    return saturday if saturday + 2 * _ONE_DAY <= ref else saturday - 7 * _ONE_DAY


def _rule_weekend(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    rel = (m["rel"] or "").lower()
    if rel == "this":
        return _weekend(_this_saturday(ref))
    if rel in ("last", "past", "previous"):
        return _weekend(_last_saturday(ref))
    saturday = _this_saturday(ref)  # "over the weekend": the latest one that has begun
    return _weekend(saturday if saturday <= ref else saturday - 7 * _ONE_DAY)


def _rule_before_last(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    unit = m["unit"].lower()
    if unit == "weekend":
        return _weekend(_last_saturday(ref) - 7 * _ONE_DAY)
    grain: DateGrain = "week" if unit == "week" else "month" if unit == "month" else "year"
    return _grain_window(_step(_floor(ref, grain), grain, -2), grain)


def _count(word: str) -> tuple[int, int]:
    """(fewest, most) for a count written as digits, a number word or a fuzzy quantity."""
    word = " ".join(word.lower().split()).removeprefix("a ").removesuffix(" of").strip()
    if word.isdigit():
        return int(word), int(word)
    if word in DEFAULT_FUZZY_COUNTS:
        return DEFAULT_FUZZY_COUNTS[word]
    return _NUMBER_WORDS[word], _NUMBER_WORDS[word]


def _back(ref: _dt.datetime, unit: str, count: int) -> _dt.datetime:
    if unit in ("day", "week"):
        return ref - _dt.timedelta(days=count * (7 if unit == "week" else 1))
    return _add_months(_floor_day(ref).replace(day=1), -count * (12 if unit == "year" else 1))


def _rule_fuzzy_ago(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    low, high = DEFAULT_FUZZY_COUNTS[m["q"].lower()]
    unit = m["unit"].lower()
    grain = cast(DateGrain, unit)
    if unit in ("day", "week"):
        last_day = _floor_day(_back(ref, unit, low))
        return _span(_floor_day(_back(ref, unit, high)), last_day + _ONE_DAY, grain)
    start = _floor(_back(ref, unit, high), grain)
    return _span(start, _step(_floor(_back(ref, unit, low), grain), grain), grain)


def _rule_rolling(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    unit = m["unit"].lower()
    if m["n"]:
        if not m["plural"] and _count(m["n"])[1] != 1:
            return None
        count = _count(m["n"])[1]
    elif m["the"] and not m["plural"]:
        count = 1  # "the past year" is the last 12 months; "last year" is the calendar year
    else:
        return None
    return _rolling_window(ref, unit, count)


def _rolling_window(ref: _dt.datetime, unit: str, count: int) -> TimeWindow:
    """The ``count`` ``unit``s up to ``ref`` ("the past two weeks"), from the same day."""
    day = _floor_day(ref)
    if unit in ("day", "week"):
        start = day - _dt.timedelta(days=count * (7 if unit == "week" else 1))
    else:
        start = _add_months(day.replace(day=min(day.day, 28)), -count * (12 if unit == "year" else 1))
        start = start.replace(day=day.day) if day.day <= 28 else start
    return TimeWindow(start=start, end=ref, grain=cast(DateGrain, unit))


# A state that has held "for <n> <units>" up to now says when it began just as "for the past
# <n> <units>" does: "I've been doing yoga for 3 years now", "I've had them for 3 years", "Been
# playing it for a month now". It counts as ongoing when its clause is in the present perfect
# ("been", or have / has with a past participle: not "have to", not a possessive "have a"), or
# when "now" / "so far" / "already" follows the duration; "had been" (over before now) and a bare
# duration ("we stayed for two weeks", "I'll be away for 3 days") say no date.
_PERFECT: Final = re.compile(
    r"\bbeen\b|(?:\b(?:have|has)|['’]ve)(?:n['’]t)?"
    r"(?:\s+(?:not|never|always|already|also|just|really|only|now|since))*"
    r"\s+(?:had|known|seen|done|kept|taught|run|led|grown|gone|held|spent|\w+ed)\b",
    re.IGNORECASE,
)
_PAST_PERFECT: Final = re.compile(r"(?:\bhad|['’]d)\s+been\b", re.IGNORECASE)
_ONGOING_AFTER: Final = re.compile(r"\s+(?:now|so\s+far|already)\b", re.IGNORECASE)
_CLAUSE_END: Final = re.compile(r"[.!?;:\n]")
_ONGOING_LOOKBACK_CHARS: Final = 80


def _rule_ongoing(m: re.Match[str], ref: _dt.datetime) -> TimeWindow | None:
    text = m.string
    before = text[max(0, m.start() - _ONGOING_LOOKBACK_CHARS) : m.start()]
    clause = _CLAUSE_END.split(before)[-1]
    ongoing = _PERFECT.search(clause) is not None and _PAST_PERFECT.search(clause) is None
    if not ongoing and _ONGOING_AFTER.match(text, m.end()) is None:
        return None
    if not m["plural"] and _count(m["n"])[1] != 1:
        return None
    return _rolling_window(ref, m["unit"].lower(), _count(m["n"])[1])


_FLAGS: Final = re.IGNORECASE
_PART: Final = (
    r"(?:(?P<part>early|mid|late)(?:\s*-\s*|\s+)"
    r"|the\s+(?P<part2>beginning|start|middle|end)\s+of\s+)"
)
_COUNT: Final = (
    r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|several"
)

# (pattern, resolver, honours a since/before prefix). Order does not matter: overlaps between
# rule matches are settled by length.
_RULES: Final[tuple[tuple[re.Pattern[str], _RuleFn, bool], ...]] = (
    (
        re.compile(r"\b(?:the\s+)?(?P<season>" + _SEASON_RE + r")\s+before\s+last\b", _FLAGS),
        _rule_season_before_last,
        True,
    ),
    (
        re.compile(
            r"\b(?P<rel>this|last|next|past|previous|coming)\s+(?P<season>" + _SEASON_RE + r")\b", _FLAGS
        ),
        _rule_season_relative,
        True,
    ),
    (
        re.compile(r"\b(?:the\s+)?(?P<season>" + _SEASON_RE + r")\s+(?:of\s+)?(?P<year>[12]\d{3})\b", _FLAGS),
        _rule_season_year,
        True,
    ),
    (
        re.compile(
            r"\b(?P<prep>in|during|over|through|throughout|since|until|till|by|before|after)"
            r"\s+(?:the\s+)?(?P<season>" + _SEASON_RE + r")\b(?!\s+(?:of|before)\b)",
            _FLAGS,
        ),
        _rule_season_bare,
        True,
    ),
    (
        re.compile(_PART + r"(?:(?P<year>[12]\d{3})|(?P<rel>this|last|next)\s+year)\b(?!s)", _FLAGS),
        _rule_part_year,
        True,
    ),
    (
        re.compile(
            _PART + r"(?P<month>" + _MONTH_RE + r")\.?"
            r"(?:\s*,?\s*(?:of\s+)?(?P<year>[12]\d{3}))?\b",
            _FLAGS,
        ),
        _rule_part_month,
        True,
    ),
    (re.compile(_PART + r"(?P<rel>this|last|next)\s+month\b", _FLAGS), _rule_part_relative_month, True),
    (
        re.compile(
            r"\bthe\s+(?:(?P<part>early|mid|late)(?:\s*-\s*|\s+))?"
            r"(?P<decade>(?:1[0-9]|20)[0-9]0|'?[0-9]0)'?s\b",
            _FLAGS,
        ),
        _rule_decade,
        True,
    ),
    (
        re.compile(r"\bQ(?P<q>[1-4])\b(?:\s*(?:of\s+|/|-)?\s*(?P<year>[12]\d{3}|'\d{2})\b)?", _FLAGS),
        _rule_quarter,
        True,
    ),
    (re.compile(r"\b(?P<year>[12]\d{3})[\s-]?Q(?P<q>[1-4])\b", _FLAGS), _rule_quarter, True),
    (
        re.compile(
            r"\b(?:the\s+)?(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th|last|final)\s+"
            r"quarter\b(?:\s+of\s+(?:(?P<year>[12]\d{3})|(?P<rel>this|last|next)\s+year))?",
            _FLAGS,
        ),
        _rule_quarter_ordinal,
        True,
    ),
    # Duckling reads "from 2019 to 2021" as "from 2019" (open-ended).
    (
        re.compile(
            r"\b(?:from|between)\s+(?P<y1>[12]\d{3})\s*(?:to|and|until|till|through|-|–)\s*"
            r"(?P<y2>[12]\d{3})\b",
            _FLAGS,
        ),
        _rule_year_range,
        False,
    ),
    (
        re.compile(r"\b(?:the\s+)?(?P<unit>week|weekend|month|year)\s+before\s+last\b", _FLAGS),
        _rule_before_last,
        True,
    ),
    (
        re.compile(
            r"\b(?:(?P<rel>this|last|past|previous)\s+|(?:over|on|during|at)\s+the\s+)"
            r"weekend\b",
            _FLAGS,
        ),
        _rule_weekend,
        True,
    ),
    (
        re.compile(
            r"\b(?:a\s+)?(?P<q>couple|few|several)\s+(?:of\s+)?(?P<unit>day|week|month|year)s"
            r"\s+ago\b",
            _FLAGS,
        ),
        _rule_fuzzy_ago,
        False,
    ),
    (
        re.compile(
            r"\b(?:(?:in|over|during|within|for)\s+)?(?P<the>the\s+)?(?:past|last|previous)"
            r"\s+(?:(?P<n>" + _COUNT + r")\s+)?(?P<unit>day|week|month|year)(?P<plural>s)?\b"
            r"(?!\s+(?:of|before|ago)\b)",
            _FLAGS,
        ),
        _rule_rolling,
        False,
    ),
    (
        re.compile(
            r"\bfor\s+(?:(?:about|around|almost|nearly|over|roughly|more\s+than|at\s+least)\s+)?"
            r"(?P<n>" + _COUNT + r")\s+(?P<unit>day|week|month|year)(?P<plural>s)?\b",
            _FLAGS,
        ),
        _rule_ongoing,
        False,
    ),
)


def _rule_candidates(text: str, ref: _dt.datetime, lookback_years: int) -> list[_Candidate]:
    candidates: list[_Candidate] = []
    for pattern, resolve, open_ended in _RULES:
        for match in pattern.finditer(text):
            try:
                window = resolve(match, ref)
                start = match.start()
                if window is not None and open_ended:
                    prep = match.groupdict().get("prep")
                    if prep is None or prep.lower() not in ("since", "until", "till", "before", "after"):
                        prefix = _OPEN_PREFIX.search(text, max(0, start - 12), start)
                        if prefix is not None:
                            prep, start = prefix["prep"], prefix.start()
                        else:
                            prep = None
                    if prep is not None:
                        window = _open_ended(prep, window, ref, lookback_years)
            except (ValueError, KeyError, OverflowError):
                continue  # an impossible date ("winter 9999") is no date
            if window is not None:
                candidates.append(
                    _Candidate(start_char=start, end_char=match.end(), window=window, priority=_PRIO_RULE)
                )
    return candidates


def _bare_year_candidates(text: str, ref: _dt.datetime, min_year: int, max_year: int) -> list[_Candidate]:
    """Four-digit years with no other date words around, if they read like a year."""
    candidates: list[_Candidate] = []
    for match in _BARE_YEAR.finditer(text):
        year = int(match["year"])
        if not min_year <= year <= max_year:
            continue
        before = text[max(0, match.start() - 40) : match.start()]
        word = _PRECEDING_WORD.search(before)
        previous = word.group(1).lower() if word else None
        if previous in _NOT_YEAR_BEFORE:
            continue
        following = _FOLLOWING_WORD.match(text[match.end() : match.end() + 40])
        if following and following.group(1).lower() in _NOT_YEAR_AFTER:
            continue
        stripped = before.rstrip()
        at_clause_start = not stripped or stripped[-1] in _CLAUSE_START
        if not at_clause_start and previous not in _YEAR_CONTEXT_BEFORE:
            continue  # "We had 2023 visitors"
        window = _grain_window(_dt.datetime(year, 1, 1, tzinfo=_dt.UTC), "year")
        candidates.append(
            _Candidate(
                start_char=match.start(), end_char=match.end(), window=window, priority=_PRIO_BARE_YEAR
            )
        )
    return candidates


def _settle(candidates: Sequence[_Candidate]) -> Iterator[_Candidate]:
    """Keep the best of overlapping candidates: higher priority, then longer, then earlier."""
    taken: list[tuple[int, int]] = []
    ranked = sorted(candidates, key=lambda c: (-c.priority, c.start_char - c.end_char, c.start_char))
    for candidate in ranked:
        if all(candidate.end_char <= s or candidate.start_char >= e for s, e in taken):
            taken.append((candidate.start_char, candidate.end_char))
            yield candidate


# --- relative expressions anchored to an explicit date ------------------------------------------

_MAX_ANCHORED_HEADS: Final = 8
"""Each anchored head costs one more Duckling call on the text after it; a text rarely holds more."""
_ANCHOR_LOOKAHEAD_CHARS: Final = 60
"""Characters after the relation word read for the anchor date ("Saturday, 23 September 2023")."""
_ANCHOR_HEAD: Final = re.compile(
    r"\b(?:(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?P<unit>day|week|month)s?"
    r"|(?:the\s+)?(?:(?:last|previous|very)\s+)?"
    r"(?P<what>day|week|weekend|month|" + "|".join(_WEEKDAY_INDEX) + r"))"
    r"\s*,?\s+(?P<rel>before|after|prior\s+to|preceding|following|on|of)\s+",
    re.IGNORECASE,
)
_ANCHOR_DAY_IN_WINDOW: Final = True
"""Whether "the Sunday / weekend before|after <date>" also covers <date> itself. Questions of that
shape are mostly written about the day something was *said* ("last Sunday", told on 25 October):
of the 3 anchored LoCoMo questions on conversations 0-4 (where this was tuned), 2 have their
evidence said on the anchor date (the third 3 days before it), and a memory's own resolved date
can be off by days while its time of saying is exact."""
_BEFORE_WORDS: Final = frozenset({"before", "prior to", "preceding"})
_AFTER_WORDS: Final = frozenset({"after", "following"})


def _weekday_before(anchor: _dt.datetime, weekday: int) -> _dt.datetime:
    """The latest ``weekday`` strictly before the day ``anchor``."""
    return anchor - _dt.timedelta(days=(anchor.weekday() - weekday - 1) % 7 + 1)


def _weekday_after(anchor: _dt.datetime, weekday: int) -> _dt.datetime:
    """The earliest ``weekday`` strictly after the day ``anchor``."""
    return anchor + _dt.timedelta(days=(weekday - anchor.weekday() - 1) % 7 + 1)


def _anchored_window(head: re.Match[str], anchor: _dt.datetime) -> TimeWindow | None:
    """The window ``head`` ("the weekend before") names relative to the day ``anchor``."""
    rel = " ".join(head["rel"].lower().split())
    direction = -1 if rel in _BEFORE_WORDS else 1 if rel in _AFTER_WORDS else 0
    if head["n"]:
        if direction == 0:
            return None  # "3 days on 9 May" says no relation
        count = _count(head["n"])[1] * direction
        unit = head["unit"].lower()
        if unit == "month":
            return _grain_window(_add_months(anchor, count), "day")
        return _grain_window(anchor + _dt.timedelta(days=count * (7 if unit == "week" else 1)), "day")
    what = head["what"].lower()
    if what == "day":
        return _grain_window(anchor + direction * _ONE_DAY, "day")
    if what in ("week", "month"):
        grain: DateGrain = "week" if what == "week" else "month"
        return _grain_window(_step(_floor(anchor, grain), grain, direction), grain)
    if what == "weekend":
        if direction < 0:  # the latest weekend ended by the anchor day (its Sunday is before it)
            return _with_anchor(_weekend(_last_saturday(anchor)), anchor)
        if direction > 0:
            return _with_anchor(_weekend(_weekday_after(anchor, 5)), anchor)
        return _weekend(_this_saturday(anchor))  # the weekend of the anchor's week
    weekday = _WEEKDAY_INDEX[what]
    if direction < 0:
        return _with_anchor(_grain_window(_weekday_before(anchor, weekday), "day"), anchor)
    if direction > 0:
        return _with_anchor(_grain_window(_weekday_after(anchor, weekday), "day"), anchor)
    if anchor.weekday() == weekday:
        return _grain_window(anchor, "day")
    # "last Friday on 23 January" (a Sunday): the Friday, or the date itself; keep both, not years.
    return _span(_weekday_before(anchor, weekday), anchor + _ONE_DAY, "day")


def _with_anchor(target: TimeWindow, anchor: _dt.datetime) -> TimeWindow:
    """``target`` stretched to cover the anchor day too (see :data:`_ANCHOR_DAY_IN_WINDOW`)."""
    if not _ANCHOR_DAY_IN_WINDOW:
        return target
    return _span(min(target.start, anchor), max(target.end + _ONE_US, anchor + _ONE_DAY), "day")


def _anchored_candidates(text: str, ref: _dt.datetime, parser: DucklingDateParser) -> list[_Candidate]:
    """Relative heads ("the weekend before") followed by an explicit day date they are anchored to.

    The anchor is read by the ordinary parser (without this pass, so it cannot recurse) from the
    text right after the relation word; it must start there (an optional "the") and be a day.
    """
    candidates: list[_Candidate] = []
    for head in itertools.islice(_ANCHOR_HEAD.finditer(text), _MAX_ANCHORED_HEADS):
        rest = text[head.end() : head.end() + _ANCHOR_LOOKAHEAD_CHARS]
        mentions = parser._parse(rest, ref, anchored=False)
        if not mentions:
            continue
        first = mentions[0]
        if rest[: first.start_char].strip().lower() not in ("", "the") or first.window.grain != "day":
            continue
        try:
            window = _anchored_window(head, _floor_day(first.window.start))
        except (ValueError, OverflowError):
            continue
        if window is not None:
            candidates.append(
                _Candidate(
                    start_char=head.start(),
                    end_char=head.end() + first.end_char,
                    window=window,
                    priority=_PRIO_ANCHORED,
                )
            )
    return candidates


# --- the n-th day / week / weekend / month of a period -----------------------------------------

_MAX_PERIOD_PART_HEADS: Final = 8
"""Each head costs one more parse of the text after it ("of ..."); a text rarely holds more."""
_PERIOD_LOOKAHEAD_CHARS: Final = 40
"""Characters after "of" read for the period ("the summer of 2022", "September 2023")."""
_SPELLED_ORDINALS: Final[Mapping[str, int]] = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_PERIOD_PART_HEAD: Final = re.compile(
    r"\b(?P<the>the\s+)?(?P<ord>last|final|" + "|".join(_SPELLED_ORDINALS) + r"|[1-9]\d?(?:st|nd|rd|th))\s+"
    r"(?:(?P<n>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+)?"
    r"(?P<unit>day|week|weekend|month|year)(?P<plural>s)?\s+of\s+",
    re.IGNORECASE,
)
_UNIT_GRAIN: Final[Mapping[str, DateGrain]] = {
    "day": "day",
    "week": "week",
    "weekend": "week",
    "month": "month",
    "year": "year",
}
# Periods Duckling does not read on their own: "the year" / "the month" is the reference's own
# (Duckling's reading of "the first day of the year"), a bare season the latest one begun.
_CURRENT_PERIOD: Final = re.compile(
    r"^\s*(?:the|this|the\s+current)\s+(?P<grain>week|month|year)\b(?!\s*,?\s*\d)", re.IGNORECASE
)
_BARE_SEASON: Final = re.compile(
    r"^\s*(?:the\s+)?(?P<season>" + _SEASON_RE + r")\b(?!\s+(?:of\s+)?[12]\d{3}|\s+before\b)", re.IGNORECASE
)


_DETERMINERS: Final = frozenset({"my", "his", "her", "their", "our", "your", "its", "this", "that"})


def _after_determiner(text: str, start: int) -> bool:
    word = _PRECEDING_WORD.search(text[max(0, start - 20) : start])
    return word is not None and word.group(1).lower() in _DETERMINERS


def _ordinal_value(word: str) -> int:
    """1 for "first" / "1st", ..., 0 for "last" / "final" (counted from the end)."""
    word = word.lower()
    if word in ("last", "final"):
        return 0
    return _SPELLED_ORDINALS.get(word) or int(word[:-2])


def _period_part(ordinal: int, count: int, unit: str, period: TimeWindow) -> TimeWindow | None:
    """The ``count`` units starting at the ``ordinal``-th (0: the last ones) within ``period``.

    Weeks are the period's 7-day blocks from its first day (the last week is its last 7 days),
    not calendar weeks: "the first week of June" is 1-7 June whatever weekday June starts on.
    A weekend is a Saturday in the period and the Sunday after it. None when the part does not
    fit ("the fifth week of February").
    """
    first, end = period.start, period.end + _ONE_US
    grain: DateGrain = "day" if unit == "weekend" else _UNIT_GRAIN[unit]
    if unit == "weekend":
        if ordinal:
            start = first + _dt.timedelta(days=(5 - first.weekday()) % 7 + 7 * (ordinal - 1))
        else:
            last_day = _floor_day(end - _ONE_DAY)
            start = last_day - _dt.timedelta(days=(last_day.weekday() - 5) % 7 + 7 * (count - 1))
        stop = start + _dt.timedelta(days=7 * (count - 1) + 2)
        return _span(start, stop, grain) if first <= start < end else None
    if unit in ("month", "year"):
        months = 12 if unit == "year" else 1
        start = _add_months(first, months * (ordinal - 1)) if ordinal else _add_months(end, -months * count)
        stop = _add_months(start, months * count)
    else:
        days = _dt.timedelta(days=7 if unit == "week" else 1)
        start = first + days * (ordinal - 1) if ordinal else end - days * count
        stop = start + days * count
    if start < first or stop > end:
        return None
    return _span(start, stop, grain)


def _period_after(rest: str, ref: _dt.datetime, parser: DucklingDateParser) -> tuple[TimeWindow, int] | None:
    """The period ``rest`` starts with (an optional "the" before it) and the characters it takes."""
    current = _CURRENT_PERIOD.match(rest)
    if current is not None:
        grain = cast(DateGrain, current["grain"].lower())
        return _grain_window(_floor(ref, grain), grain), current.end()
    season = _BARE_SEASON.match(rest)
    if season is not None:
        return _season(season["season"], _latest_season_started(season["season"], ref)), season.end()
    mentions = parser._parse(rest, ref, anchored=False)
    if not mentions or rest[: mentions[0].start_char].strip().lower() not in ("", "the"):
        return None
    return mentions[0].window, mentions[0].end_char


def _period_part_candidates(
    text: str, ref: _dt.datetime, parser: DucklingDateParser, lookback_years: int
) -> tuple[list[_Candidate], list[tuple[int, int]]]:
    """ "the first day / last week / second weekend / first two weeks of <period>", and the
    spans of such heads whose "of ..." is no period (no date may be read inside those).

    The period is read by the ordinary parser (without this pass, so it cannot recurse) from
    the text right after "of" and must be coarser than the part ("the first day of June", not
    "the first day of school", which is no date at all). Duckling reads some of these itself,
    but resolves weeks to calendar weeks, "the first weekend of X" to the first of the current
    month plus X's weekends, and reads "the first day of school" as the first of the current
    month and "the last day of the trip" as yesterday.
    """
    candidates: list[_Candidate] = []
    no_period: list[tuple[int, int]] = []
    for head in itertools.islice(_PERIOD_PART_HEAD.finditer(text), _MAX_PERIOD_PART_HEADS):
        ordinal = _ordinal_value(head["ord"])
        count = _count(head["n"])[1] if head["n"] else 1
        if (count > 1 and ordinal > 1) or (count > 1) != bool(head["plural"]):
            continue  # "the second two weeks of June", "the first days of June": no single reading
        found = _period_after(text[head.end() : head.end() + _PERIOD_LOOKAHEAD_CHARS], ref, parser)
        unit = head["unit"].lower()
        if (
            found is None
            or found[0].grain is None
            or _grain_rank(found[0].grain) <= _grain_rank(_UNIT_GRAIN[unit])
        ):
            if ordinal or head["the"] or _after_determiner(text, head.start()):
                # "the first day of school", "my last year of college"; not "last week of course"
                no_period.append((head.start(), head.end()))
            continue
        period, used = found
        try:
            # A part the period has not got ("the fifth week of February") still says the period.
            window = _period_part(ordinal, count, unit, period) or period
            start = head.start()
            prefix = _OPEN_PREFIX.search(text, max(0, start - 12), start)
            if prefix is not None:
                window, start = _open_ended(prefix["prep"], window, ref, lookback_years), prefix.start()
        except (ValueError, OverflowError):
            continue
        candidates.append(
            _Candidate(start_char=start, end_char=head.end() + used, window=window, priority=_PRIO_ANCHORED)
        )
    return candidates, no_period


_SURROGATES: Final = re.compile(r"[\ud800-\udfff\x00]")


# --- the parser ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DucklingDateParser:
    """Finds dates with Duckling and our rules, resolved against a reference time, past first.

    Duckling itself is loaded once per process, on first use; instances are cheap and immutable.

    >>> import datetime as dt
    >>> parser = DucklingDateParser()
    >>> ref = dt.datetime(2024, 6, 15, tzinfo=dt.UTC)
    >>> w = parser.parse_query_dates("What did Melanie do last spring?", ref)
    >>> (w.start.date().isoformat(), w.end.date().isoformat(), w.grain)
    ('2024-03-01', '2024-05-31', 'season')
    >>> parser.parse_query_dates("May I ask about port 2023?", ref) is None
    True
    """

    tz_db_path: str = DEFAULT_TZ_DB_PATH
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    min_year: int = DEFAULT_MIN_YEAR
    max_years_ahead: int = DEFAULT_MAX_YEARS_AHEAD
    bare_year_min: int = DEFAULT_BARE_YEAR_MIN
    open_ended_lookback_years: int = DEFAULT_OPEN_ENDED_LOOKBACK_YEARS
    duckling_chunk_chars: int = DEFAULT_DUCKLING_CHUNK_CHARS
    max_duckling_chunks: int = DEFAULT_MAX_DUCKLING_CHUNKS
    use_duckling: bool = True

    def parse_dates(self, text: str, reference_time: _dt.datetime) -> list[DateMention]:
        """Every date mention in ``text`` (first ``max_text_chars`` chars), in text order.

        >>> import datetime as dt
        >>> ref = dt.datetime(2023, 5, 8, tzinfo=dt.UTC)
        >>> parser = DucklingDateParser()
        >>> [m.text for m in parser.parse_dates("In June 2023, not in room 2023", ref)]
        ['In June 2023']
        """
        try:
            return self._parse(text, as_utc(reference_time))
        except Exception:  # a date must never crash a retain or a recall
            _LOG.debug("date parsing failed", exc_info=True)
            return []

    def parse_query_dates(self, text: str, reference_time: _dt.datetime) -> TimeWindow | None:
        """The window a query asks about: the hull of all its date mentions, or None.

        Several mentions ("between summer 2022 and spring 2023") span from the earliest start to
        the latest end; the grain is the coarsest of theirs.
        """
        mentions = self._query_mentions(text, reference_time)
        if not mentions:
            return None
        if len(mentions) == 1:
            return mentions[0].window
        windows = [m.window for m in mentions]
        return TimeWindow(
            start=min(w.start for w in windows),
            end=max(w.end for w in windows),
            grain=_coarsest([w.grain for w in windows]),
        )

    def _query_mentions(self, text: str, reference_time: _dt.datetime) -> list[DateMention]:
        """A question's date mentions, a date asked "as of" / "as at" / "by" read as a state at it.

        A head with a mention at or just after it costs one more parse, of the text with those
        heads blanked (Duckling reads "at 3 December" as 3 a.m. and "by December" as now until
        next December); only a date starting right after a head changes. A question with no such
        head parses exactly as :meth:`parse_dates`.
        """
        mentions = self.parse_dates(text, reference_time)
        text = text[: self.max_text_chars]
        heads = [
            head
            for head in _AS_OF_HEAD.finditer(text)
            if any(head.start() <= m.start_char <= head.end() + _AS_OF_LOOKAHEAD_CHARS for m in mentions)
        ]
        if not heads:
            return mentions
        blanked = text
        for head in heads:  # same length: offsets still index the question
            blanked = blanked[: head.start()] + " " * (head.end() - head.start()) + blanked[head.end() :]
        ends = [head.end() for head in heads]
        return [
            _as_of(m, self.open_ended_lookback_years)
            if any(_right_after(end, m.start_char, blanked) for end in ends)
            else m
            for m in self.parse_dates(blanked, reference_time)
        ]

    def event_window(self, text: str, mentioned_at: _dt.datetime) -> TimeWindow | None:
        """The window a memory's text is about: its most specific date mention, or None.

        Day-or-coarser mentions beat times of day ("at 7am" is rarely what a memory is about),
        then the narrowest window wins, then the earliest in the text.

        >>> import datetime as dt
        >>> ref = dt.datetime(2023, 5, 8, 10, tzinfo=dt.UTC)
        >>> DucklingDateParser().event_window("In 2022 I began; yesterday I won.", ref).grain
        'day'
        """
        mentions = self.parse_dates(text, mentioned_at)
        if not mentions:
            return None
        best = min(mentions, key=lambda m: (m.window.grain in _SUB_DAY, m.window.span, m.start_char))
        return best.window

    def _parse(self, text: str, ref: _dt.datetime, *, anchored: bool = True) -> list[DateMention]:
        if not text:
            return []
        # Same length, so offsets still index the caller's text: NUL would end Duckling's C
        # string early, and lone surrogates cannot cross into Rust at all.
        text = _SURROGATES.sub(" ", text[: self.max_text_chars])
        if not _PRECHECK.search(text):
            return []
        max_year = ref.year + self.max_years_ahead
        candidates = _rule_candidates(text, ref, self.open_ended_lookback_years)
        if self.use_duckling:
            candidates += _all_duckling_candidates(text, ref, self)
            if anchored:  # anchors are day dates, which only Duckling reads
                candidates += _anchored_candidates(text, ref, self)
        if anchored:  # the period may be one only our rules read ("the first week of summer 2022")
            parts, no_period = _period_part_candidates(text, ref, self, self.open_ended_lookback_years)
            candidates = [
                c for c in candidates if not any(s <= c.start_char and c.end_char <= e for s, e in no_period)
            ]
            candidates += parts
        candidates += _bare_year_candidates(text, ref, max(self.bare_year_min, self.min_year), max_year)
        mentions = [
            DateMention(
                text=text[c.start_char : c.end_char],
                window=c.window,
                start_char=c.start_char,
                end_char=c.end_char,
            )
            for c in _settle(candidates)
            if self.min_year <= c.window.start.year <= max_year
        ]
        return sorted(mentions, key=lambda m: m.start_char)


def _right_after(head_end: int, start: int, text: str) -> bool:
    """Whether a mention starting at ``start`` is the date of a head ending at ``head_end``."""
    return start == head_end or (
        start > head_end and _AS_OF_ARTICLE.fullmatch(text, head_end, start) is not None
    )


def _as_of(mention: DateMention, lookback_years: int) -> DateMention:
    """``mention`` asked "as of": from the look-back before its start to its end, inclusive."""
    window = mention.window
    try:
        start = _add_months(window.start, -12 * lookback_years)
    except (ValueError, OverflowError):  # a date near year 1: keep what was asked
        return mention
    as_of = TimeWindow(start=start, end=window.end, grain=window.grain)
    return DateMention(
        text=mention.text, window=as_of, start_char=mention.start_char, end_char=mention.end_char
    )


@functools.cache
def default_date_parser() -> DucklingDateParser:
    """The process-wide default parser (Duckling loads on its first parse, not here)."""
    return DucklingDateParser()


def parse_query_dates(text: str, reference_time: _dt.datetime) -> TimeWindow | None:
    """:meth:`DucklingDateParser.parse_query_dates` with the default parser.

    >>> import datetime as dt
    >>> parse_query_dates("Q3 2022", dt.datetime(2024, 1, 1)).grain
    'quarter'
    """
    return default_date_parser().parse_query_dates(text, reference_time)
