"""Table-driven tests of the default date parser (Duckling plus our own rules).

Every expected window is a closed interval ending at the last microsecond of its grain, in UTC.
Three fixed reference times are used so weekday- and season-relative phrases are unambiguous.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from shared_core.extraction import dates
from shared_core.extraction.dates import (
    DucklingDateParser,
    default_date_parser,
    parse_query_dates,
)
from shared_core.protocols import DateParser
from shared_core.types import DateGrain, TimeWindow

UTC = dt.UTC


def d(y: int, m: int, day: int, h: int = 0, mi: int = 0) -> dt.datetime:
    return dt.datetime(y, m, day, h, mi, tzinfo=UTC)


def eod(y: int, m: int, day: int) -> dt.datetime:
    """The last microsecond of a day: windows are closed intervals."""
    return dt.datetime(y, m, day, 23, 59, 59, 999999, tzinfo=UTC)


R_MON = d(2023, 5, 8, 10)  # Monday 2023-05-08 10:00 UTC
R_WED = d(2024, 3, 13, 12)  # Wednesday 2024-03-13 12:00 UTC
R_SAT = d(2024, 6, 15, 12)  # Saturday 2024-06-15 12:00 UTC

Expected = tuple[dt.datetime, dt.datetime, DateGrain] | None

CASES: list[tuple[str, dt.datetime, Expected]] = [
    # --- relative days ------------------------------------------------------------------------
    ("yesterday", R_MON, (d(2023, 5, 7), eod(2023, 5, 7), "day")),
    ('Melanie said, "I went to the support group yesterday"', R_MON, (d(2023, 5, 7), eod(2023, 5, 7), "day")),
    ("today", R_MON, (d(2023, 5, 8), eod(2023, 5, 8), "day")),
    ("the day before yesterday", R_MON, (d(2023, 5, 6), eod(2023, 5, 6), "day")),
    ("3 days ago", R_MON, (d(2023, 5, 5), eod(2023, 5, 5), "day")),
    ("two weeks ago", R_MON, (d(2023, 4, 24), eod(2023, 4, 24), "day")),
    (
        "yesterday at 5pm",
        R_MON,
        (d(2023, 5, 7, 17), dt.datetime(2023, 5, 7, 17, 59, 59, 999999, tzinfo=UTC), "hour"),
    ),
    # fuzzy counts: couple = 2..3, few = 2..4, several = 3..7 units back
    ("a couple of days ago", R_MON, (d(2023, 5, 5), eod(2023, 5, 6), "day")),
    ("a few weeks ago", R_MON, (d(2023, 4, 10), eod(2023, 4, 24), "week")),
    ("several months ago", R_MON, (d(2022, 10, 1), eod(2023, 2, 28), "month")),
    # --- weeks, weekends, months, years -------------------------------------------------------
    ("last week", R_MON, (d(2023, 5, 1), eod(2023, 5, 7), "week")),
    ("the week before last", R_MON, (d(2023, 4, 24), eod(2023, 4, 30), "week")),
    ("last weekend", R_MON, (d(2023, 5, 6), eod(2023, 5, 7), "day")),
    ("last weekend", R_SAT, (d(2024, 6, 8), eod(2024, 6, 9), "day")),
    ("the weekend before last", R_MON, (d(2023, 4, 29), eod(2023, 4, 30), "day")),
    ("I went hiking over the weekend", R_MON, (d(2023, 5, 6), eod(2023, 5, 7), "day")),
    ("last month", R_MON, (d(2023, 4, 1), eod(2023, 4, 30), "month")),
    ("this month", R_MON, (d(2023, 5, 1), eod(2023, 5, 31), "month")),
    ("the month before last", R_MON, (d(2023, 3, 1), eod(2023, 3, 31), "month")),
    ("last year", R_MON, (d(2022, 1, 1), eod(2022, 12, 31), "year")),
    ("the year before last", R_MON, (d(2021, 1, 1), eod(2021, 12, 31), "year")),
    # --- weekdays, months: the past is preferred ----------------------------------------------
    ("on Friday", R_WED, (d(2024, 3, 8), eod(2024, 3, 8), "day")),
    ("last Friday", R_WED, (d(2024, 3, 8), eod(2024, 3, 8), "day")),
    ("next Friday", R_WED, (d(2024, 3, 22), eod(2024, 3, 22), "day")),  # explicit future kept
    ("Monday", R_SAT, (d(2024, 6, 10), eod(2024, 6, 10), "day")),
    ("in June", R_WED, (d(2023, 6, 1), eod(2023, 6, 30), "month")),
    ("in March", R_WED, (d(2024, 3, 1), eod(2024, 3, 31), "month")),
    ("He turned 21 in March.", R_WED, (d(2024, 3, 1), eod(2024, 3, 31), "month")),
    ("the 4th of July", R_WED, (d(2023, 7, 4), eod(2023, 7, 4), "day")),
    ("from March 1 to March 5", R_WED, (d(2024, 3, 1), eod(2024, 3, 5), "day")),
    # --- absolute -----------------------------------------------------------------------------
    ("in June 2023", R_SAT, (d(2023, 6, 1), eod(2023, 6, 30), "month")),
    ("2023", R_SAT, (d(2023, 1, 1), eod(2023, 12, 31), "year")),
    ("In 2019 I moved to Boston.", R_SAT, (d(2019, 1, 1), eod(2019, 12, 31), "year")),
    ("the year 2023", R_SAT, (d(2023, 1, 1), eod(2023, 12, 31), "year")),
    ("on 7 May 2023", R_SAT, (d(2023, 5, 7), eod(2023, 5, 7), "day")),
    ("May 7, 2023", R_SAT, (d(2023, 5, 7), eod(2023, 5, 7), "day")),
    ("2023-05-07", R_SAT, (d(2023, 5, 7), eod(2023, 5, 7), "day")),
    ("Christmas 2022", R_SAT, (d(2022, 12, 25), eod(2022, 12, 25), "day")),
    (
        "When did Caroline go to the LGBTQ support group on 7 May 2023?",
        R_SAT,
        (d(2023, 5, 7), eod(2023, 5, 7), "day"),
    ),
    # --- seasons (meteorological, northern hemisphere) ----------------------------------------
    ("last spring", R_SAT, (d(2024, 3, 1), eod(2024, 5, 31), "season")),
    ("last summer", R_SAT, (d(2023, 6, 1), eod(2023, 8, 31), "season")),
    ("What did Melanie do last summer?", R_SAT, (d(2023, 6, 1), eod(2023, 8, 31), "season")),
    ("the summer before last", R_SAT, (d(2022, 6, 1), eod(2022, 8, 31), "season")),
    ("this summer", R_SAT, (d(2024, 6, 1), eod(2024, 8, 31), "season")),
    ("this summer", R_WED, (d(2024, 6, 1), eod(2024, 8, 31), "season")),
    ("in the fall", R_SAT, (d(2023, 9, 1), eod(2023, 11, 30), "season")),
    ("last winter", R_SAT, (d(2023, 12, 1), eod(2024, 2, 29), "season")),
    ("next spring", R_SAT, (d(2025, 3, 1), eod(2025, 5, 31), "season")),
    ("summer 2022", R_SAT, (d(2022, 6, 1), eod(2022, 8, 31), "season")),
    ("the winter of 2021", R_SAT, (d(2021, 12, 1), eod(2022, 2, 28), "season")),
    # --- quarters -----------------------------------------------------------------------------
    ("Q3 2022", R_SAT, (d(2022, 7, 1), eod(2022, 9, 30), "quarter")),
    ("2022 Q3", R_SAT, (d(2022, 7, 1), eod(2022, 9, 30), "quarter")),
    ("Q3", R_SAT, (d(2023, 7, 1), eod(2023, 9, 30), "quarter")),
    ("Q1", R_SAT, (d(2024, 1, 1), eod(2024, 3, 31), "quarter")),
    ("the third quarter", R_WED, (d(2023, 7, 1), eod(2023, 9, 30), "quarter")),
    ("the third quarter of 2022", R_SAT, (d(2022, 7, 1), eod(2022, 9, 30), "quarter")),
    ("last quarter", R_SAT, (d(2024, 1, 1), eod(2024, 3, 31), "quarter")),
    # --- early / mid / late: thirds of a year (Jan-Apr, May-Aug, Sep-Dec) or of a month -------
    ("early 2023", R_SAT, (d(2023, 1, 1), eod(2023, 4, 30), "month")),
    ("mid-2021", R_SAT, (d(2021, 5, 1), eod(2021, 8, 31), "month")),
    ("late 2022", R_SAT, (d(2022, 9, 1), eod(2022, 12, 31), "month")),
    ("late last year", R_SAT, (d(2023, 9, 1), eod(2023, 12, 31), "month")),
    ("the beginning of 2020", R_SAT, (d(2020, 1, 1), eod(2020, 4, 30), "month")),
    ("early June", R_SAT, (d(2024, 6, 1), eod(2024, 6, 10), "day")),
    ("mid-June", R_SAT, (d(2024, 6, 11), eod(2024, 6, 20), "day")),
    ("late June", R_SAT, (d(2023, 6, 21), eod(2023, 6, 30), "day")),  # not yet begun: last year
    ("late May 2023", R_SAT, (d(2023, 5, 21), eod(2023, 5, 31), "day")),
    ("the 90s", R_SAT, (d(1990, 1, 1), eod(1999, 12, 31), "decade")),
    ("the early 2000s", R_SAT, (d(2000, 1, 1), eod(2003, 12, 31), "decade")),
    # --- ranges and open-ended ----------------------------------------------------------------
    ("from March to May 2023", R_SAT, (d(2023, 3, 1), eod(2023, 5, 31), "month")),
    ("between March and May", R_SAT, (d(2024, 3, 1), eod(2024, 5, 31), "month")),
    ("since March", R_SAT, (d(2024, 3, 1), R_SAT, "month")),
    ("since 2020", R_SAT, (d(2020, 1, 1), R_SAT, "year")),
    ("since last summer", R_SAT, (d(2023, 6, 1), R_SAT, "season")),
    ("since early 2023", R_SAT, (d(2023, 1, 1), R_SAT, "month")),
    # "before X": a one-year lookback ending just before X starts
    ("before June 2023", R_SAT, (d(2022, 6, 1), eod(2023, 5, 31), "month")),
    ("before June", R_WED, (d(2023, 6, 1), eod(2024, 5, 31), "month")),
    ("in the past two weeks", R_SAT, (d(2024, 6, 1), R_SAT, "week")),
    ("over the last 3 months", R_SAT, (d(2024, 3, 15), R_SAT, "month")),
    ("during the past year", R_SAT, (d(2023, 6, 15), R_SAT, "year")),
    ("from 2019 to 2021 I lived in Berlin", R_SAT, (d(2019, 1, 1), eod(2021, 12, 31), "year")),
    ("Between 2019 and 2021 I lived in Berlin", R_SAT, (d(2019, 1, 1), eod(2021, 12, 31), "year")),
    ("Where did Caroline move from 4 years ago?", R_MON, (d(2019, 5, 1), eod(2019, 5, 31), "month")),
    ("between summer 2022 and spring 2023", R_SAT, (d(2022, 6, 1), eod(2023, 5, 31), "season")),
    # --- not dates ----------------------------------------------------------------------------
    ("", R_SAT, None),
    ("we do", R_SAT, None),
    ("May I ask what you did?", R_SAT, None),
    ("May we come in?", R_SAT, None),
    ("port 2023", R_SAT, None),
    ("ticket 1234", R_SAT, None),
    ("room 2022", R_SAT, None),
    ("version 2021 of the app", R_SAT, None),
    ("We had 2023 visitors", R_SAT, None),
    ("I have 3 cats", R_SAT, None),
    ("at 5", R_SAT, None),
    ("I'd like a second opinion", R_SAT, None),
    ("they march on", R_SAT, None),
    ("you may go", R_SAT, None),
    ("3/4 of the people", R_SAT, None),
    ("I had a bad fall", R_SAT, None),
    ("the spring broke", R_SAT, None),
    ("I sat on the sofa", R_SAT, None),
    ("in the year 0", R_SAT, None),
    ("in 9999", R_SAT, None),
    ("right now", R_SAT, None),
    ("I'll be there in a minute", R_SAT, None),
    ("When did Caroline go to the LGBTQ support group?", R_SAT, None),
    ("I'm in my 30s", R_SAT, None),
    ("I work 9 to 5 on weekdays", R_SAT, None),
    ("I was there from 2 to 4.", R_SAT, None),
    ("The meeting room is on the 5th floor", R_SAT, None),
    ("I teach Sunday school", R_SAT, None),
]


def _case_id(case: tuple[str, dt.datetime, Expected]) -> str:
    return f"{case[0][:70] or '<empty>'}@{case[1]:%Y-%m-%d}"


@pytest.fixture(scope="module")
def parser() -> DucklingDateParser:
    return DucklingDateParser()


def _assert_query_window(parser: DucklingDateParser, text: str, ref: dt.datetime, expected: Expected) -> None:
    """``text``'s query window against ``ref`` is ``expected`` (start, end, grain), or none."""
    window = parser.parse_query_dates(text, ref)
    if expected is None:
        assert window is None, f"{text!r} should not be a date, got {window}"
        return
    assert window is not None, f"{text!r} should be a date"
    assert (window.start, window.end, window.grain) == expected


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert len({_case_id(c) for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("text", "ref", "expected"), CASES, ids=[_case_id(c) for c in CASES])
def test_parse_query_dates_table(
    parser: DucklingDateParser, text: str, ref: dt.datetime, expected: Expected
) -> None:
    _assert_query_window(parser, text, ref, expected)


# --- protocol, API shape ------------------------------------------------------------------------


def test_satisfies_protocol() -> None:
    assert isinstance(DucklingDateParser(), DateParser)
    assert isinstance(default_date_parser(), DateParser)


def test_default_parser_is_cached() -> None:
    assert default_date_parser() is default_date_parser()


def test_module_level_parse_query_dates() -> None:
    window = parse_query_dates("yesterday", R_MON)
    assert window == TimeWindow(start=d(2023, 5, 7), end=eod(2023, 5, 7), grain="day")


def test_naive_reference_is_utc(parser: DucklingDateParser) -> None:
    naive = dt.datetime(2023, 5, 8, 10)
    window = parser.parse_query_dates("yesterday", naive)
    assert window is not None
    assert window.start == d(2023, 5, 7)
    assert window.start.tzinfo is UTC and window.end.tzinfo is UTC


def test_aware_non_utc_reference_is_converted(parser: DucklingDateParser) -> None:
    # 2023-05-08 01:00 in UTC+05:00 is 2023-05-07 20:00 UTC: "yesterday" is the 6th.
    ref = dt.datetime(2023, 5, 8, 1, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    window = parser.parse_query_dates("yesterday", ref)
    assert window is not None and window.start == d(2023, 5, 6)


def test_parse_dates_returns_mentions_with_offsets(parser: DucklingDateParser) -> None:
    text = "We met in June 2023 and again last summer, port 2023."
    mentions = parser.parse_dates(text, R_SAT)
    assert [m.text for m in mentions] == ["in June 2023", "last summer"]
    for mention in mentions:
        assert text[mention.start_char : mention.end_char] == mention.text
    assert mentions[1].window.grain == "season"


def test_offsets_survive_emoji(parser: DucklingDateParser) -> None:
    text = "🎉🎉 party yesterday!"
    (mention,) = parser.parse_dates(text, R_MON)
    assert text[mention.start_char : mention.end_char] == "yesterday"


# --- event_window -------------------------------------------------------------------------------

EVENT_CASES: list[tuple[str, dt.datetime, Expected]] = [
    ("I went to the support group yesterday", R_MON, (d(2023, 5, 7), eod(2023, 5, 7), "day")),
    (
        "In 2022 I started painting, and yesterday I sold my first piece.",
        R_MON,
        (d(2023, 5, 7), eod(2023, 5, 7), "day"),
    ),
    (
        "I woke at 7am and then booked the trip for June 2023.",
        R_SAT,
        (d(2023, 6, 1), eod(2023, 6, 30), "month"),
    ),
    ("Last summer we camped by the lake.", R_SAT, (d(2023, 6, 1), eod(2023, 8, 31), "season")),
    ("Nothing temporal here at all.", R_SAT, None),
    ("May I ask about the ticket 2023?", R_SAT, None),
]


@pytest.mark.parametrize(("text", "ref", "expected"), EVENT_CASES, ids=[_case_id(c) for c in EVENT_CASES])
def test_event_window(parser: DucklingDateParser, text: str, ref: dt.datetime, expected: Expected) -> None:
    window = parser.event_window(text, ref)
    if expected is None:
        assert window is None
    else:
        assert window is not None
        assert (window.start, window.end, window.grain) == expected


# A state that has held "for <n> <units>" (the perfect, or "... now") is dated as "for the past
# <n> <units>" is: the rolling window ending at the reference time. A duration of something
# over, planned, or not in the perfect says no date.
ONGOING_CASES: list[tuple[str, Expected]] = [
    ("I've been doing yoga for about 3 years now.", (d(2021, 6, 15), R_SAT, "year")),
    ("I've had them for 3 years! Their names are Pepper and Panda.", (d(2021, 6, 15), R_SAT, "year")),
    ("Been playing it for a month now - it's challenging.", (d(2024, 5, 15), R_SAT, "month")),
    (
        "My road has been a long one. I've been working on it for two years now.",
        (d(2022, 6, 15), R_SAT, "year"),
    ),
    ("We have known each other for ten years.", (d(2014, 6, 15), R_SAT, "year")),
    ("She has lived in Berlin for 5 years", (d(2019, 6, 15), R_SAT, "year")),
    ("I haven't seen him for two weeks", (d(2024, 6, 1), R_SAT, "week")),
    ("I'm volunteering there for a few months now", (d(2024, 2, 15), R_SAT, "month")),
    ("They've owned the shop for over a year.", (d(2023, 6, 15), R_SAT, "year")),
    # the rolling rule's own phrasing is unchanged
    ("I've been doing yoga for the past 3 years.", (d(2021, 6, 15), R_SAT, "year")),
    ("We stayed for two weeks.", None),
    ("I'll be away for 3 days.", None),
    ("I have to leave for two weeks.", None),
    ("I have a trip for 2 weeks.", None),
    ("I've been busy. We stayed for two weeks.", None),
    ("It has been raining for 3 hours.", None),
    ("I had been sick for two weeks.", None),
]


@pytest.mark.parametrize(("text", "expected"), ONGOING_CASES, ids=[c[0][:40] for c in ONGOING_CASES])
def test_ongoing_state_is_dated_like_the_past_units(
    parser: DucklingDateParser, text: str, expected: Expected
) -> None:
    window = parser.event_window(text, R_SAT)
    if expected is None:
        assert window is None
    else:
        assert window is not None
        assert (window.start, window.end, window.grain) == expected


# --- robustness ---------------------------------------------------------------------------------

GARBAGE = [
    "\x00\x00\x00",
    "a\x00yesterday",
    "🎉🔥💀" * 50,
    "\ud800 lone surrogate yesterday",
    "￿\ufffe" * 20,
    "9" * 5000,
    "0000-00-00 99/99/9999 31/02/2023 2023-13-45",
    "in the year 0000 and the year -5 and 10000000 BC",
    "Q9 2022 Q0",
    "\n\t\r   ",
]


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_never_raises(parser: DucklingDateParser, text: str) -> None:
    mentions = parser.parse_dates(text, R_SAT)
    for mention in mentions:
        assert 1000 <= mention.window.start.year <= R_SAT.year + 20
    parser.parse_query_dates(text, R_SAT)
    parser.event_window(text, R_SAT)


def test_nul_bytes_do_not_hide_later_dates(parser: DucklingDateParser) -> None:
    window = parser.parse_query_dates("a\x00yesterday", R_MON)
    assert window is not None and window.start == d(2023, 5, 7)


@pytest.mark.parametrize(
    "sentence",
    [
        "We talked about the weather in June 2023 and port 2023. ",
        "On 5 May 2023 and 6/7/2022 and last Friday at 3pm, ",  # dense: Duckling is superlinear
    ],
)
def test_huge_text_is_capped(
    monkeypatch: pytest.MonkeyPatch, parser: DucklingDateParser, sentence: str
) -> None:
    # What keeps a huge text fast is that Duckling (superlinear on dense dates) never sees more
    # than the cap; the speed itself is measured in benchmarks/date_parse.py, not asserted here.
    seen: list[int] = []
    call = dates._call_duckling

    def spy(text: str, *args: Any, **kwargs: Any) -> str:
        seen.append(len(text))
        return call(text, *args, **kwargs)

    monkeypatch.setattr(dates, "_call_duckling", spy)
    text = (sentence * 3000)[:100_000]
    mentions = parser.parse_dates(text, R_SAT)
    assert mentions
    assert seen and max(seen) <= parser.max_text_chars
    assert all(m.end_char <= parser.max_text_chars for m in mentions)


def test_duckling_failure_degrades_to_rules(
    monkeypatch: pytest.MonkeyPatch, parser: DucklingDateParser
) -> None:
    def boom(*_args: Any, **_kwargs: Any) -> str:
        raise RuntimeError("duckling exploded")

    monkeypatch.setattr(dates, "_call_duckling", boom)
    assert parser.parse_dates("yesterday", R_MON) == []
    window = parser.parse_query_dates("summer 2022", R_SAT)
    assert window is not None and window.start == d(2022, 6, 1)


def test_duckling_garbage_json_degrades(monkeypatch: pytest.MonkeyPatch, parser: DucklingDateParser) -> None:
    monkeypatch.setattr(dates, "_call_duckling", lambda *_a, **_k: '[{"body": 3}]')
    assert parser.parse_dates("yesterday", R_MON) == []


def test_without_duckling_rules_still_work() -> None:
    parser = DucklingDateParser(use_duckling=False)
    assert parser.parse_query_dates("yesterday", R_MON) is None
    window = parser.parse_query_dates("Q3 2022", R_SAT)
    assert window is not None and window.grain == "quarter"


def test_precheck_skips_duckling(monkeypatch: pytest.MonkeyPatch, parser: DucklingDateParser) -> None:
    calls: list[str] = []

    def spy(text: str, *_args: Any) -> str:
        calls.append(text)
        return "[]"

    monkeypatch.setattr(dates, "_call_duckling", spy)
    parser.parse_dates("When did Caroline go to the LGBTQ support group?", R_SAT)
    assert calls == []
    parser.parse_dates("What did Caroline do in May?", R_SAT)
    assert len(calls) == 1


# --- relative expressions anchored to an explicit date (issue 11) -------------------------------
# 2022-01-23 is a Sunday, 2023-04-10 a Monday, 2023-05-09 a Tuesday, 2023-05-14 a Sunday,
# 2024-05-09 a Thursday. The anchor, not the reference time, fixes the window; when the relation
# is unclear the window stays near the anchor (its day or week), never a span of years. A weekday
# or weekend before/after the date also covers the date itself (dates._ANCHOR_DAY_IN_WINDOW).
ANCHORED_CASES: list[tuple[str, dt.datetime, Expected]] = [
    # weekday "on" a date that is not that weekday: from that weekday up to the date
    (
        "What did Caroline do last Friday on 23 January, 2022?",
        R_SAT,
        (d(2022, 1, 21), eod(2022, 1, 23), "day"),
    ),
    ("last Friday on 5 May 2023", R_SAT, (d(2023, 5, 5), eod(2023, 5, 5), "day")),
    (
        "What did they do the last weekend before April 10, 2023?",
        R_SAT,
        (d(2023, 4, 8), eod(2023, 4, 10), "day"),
    ),
    ("the weekend before 9 May 2023", R_SAT, (d(2023, 5, 6), eod(2023, 5, 9), "day")),
    ("the weekend before 14 May 2023", R_SAT, (d(2023, 5, 6), eod(2023, 5, 14), "day")),
    ("the weekend after 9 May 2023", R_SAT, (d(2023, 5, 9), eod(2023, 5, 14), "day")),
    ("the weekend of 14 May 2023", R_SAT, (d(2023, 5, 13), eod(2023, 5, 14), "day")),
    ("the weekend before May 9", R_SAT, (d(2024, 5, 4), eod(2024, 5, 9), "day")),
    ("What happened the Friday before 9 May 2023?", R_SAT, (d(2023, 5, 5), eod(2023, 5, 9), "day")),
    ("What happened last Friday before May 9, 2023?", R_SAT, (d(2023, 5, 5), eod(2023, 5, 9), "day")),
    ("the Monday after 9 May 2023", R_SAT, (d(2023, 5, 9), eod(2023, 5, 15), "day")),
    ("the Tuesday after 9 May 2023", R_SAT, (d(2023, 5, 9), eod(2023, 5, 16), "day")),
    ("the day before 9 May 2023", R_SAT, (d(2023, 5, 8), eod(2023, 5, 8), "day")),
    ("the day after May 9, 2023", R_SAT, (d(2023, 5, 10), eod(2023, 5, 10), "day")),
    ("the week before 9 May 2023", R_SAT, (d(2023, 5, 1), eod(2023, 5, 7), "week")),
    ("the week after 9 May 2023", R_SAT, (d(2023, 5, 15), eod(2023, 5, 21), "week")),
    ("the week of 9 May 2023", R_SAT, (d(2023, 5, 8), eod(2023, 5, 14), "week")),
    ("the month before 9 May 2023", R_SAT, (d(2023, 4, 1), eod(2023, 4, 30), "month")),
    ("3 days after 9 May 2023", R_SAT, (d(2023, 5, 12), eod(2023, 5, 12), "day")),
    ("two weeks before 9 May 2023", R_SAT, (d(2023, 4, 25), eod(2023, 4, 25), "day")),
    ("the weekend before last Friday", R_SAT, (d(2024, 6, 8), eod(2024, 6, 14), "day")),
    # must NOT change: no relative part, or nothing to anchor to
    ("in 2023", R_SAT, (d(2023, 1, 1), eod(2023, 12, 31), "year")),
    ("last week", R_MON, (d(2023, 5, 1), eod(2023, 5, 7), "week")),
    ("on 23 January 2022", R_SAT, (d(2022, 1, 23), eod(2022, 1, 23), "day")),
    ("between March 2022 and May 2022", R_SAT, (d(2022, 3, 1), eod(2022, 5, 31), "month")),
    ("before 9 May 2023", R_SAT, (d(2022, 5, 9), eod(2023, 5, 8), "day")),
    ("the day before yesterday", R_MON, (d(2023, 5, 6), eod(2023, 5, 6), "day")),
    ("the week before last", R_MON, (d(2023, 4, 24), eod(2023, 4, 30), "week")),
    ("the day of the party", R_SAT, None),
    ("the month of May", R_SAT, (d(2024, 5, 1), eod(2024, 5, 31), "month")),
]


@pytest.mark.parametrize(
    ("text", "ref", "expected"), ANCHORED_CASES, ids=[_case_id(c) for c in ANCHORED_CASES]
)
def test_anchored_to_an_explicit_date(
    parser: DucklingDateParser, text: str, ref: dt.datetime, expected: Expected
) -> None:
    _assert_query_window(parser, text, ref, expected)


def test_anchored_mention_covers_the_whole_expression(parser: DucklingDateParser) -> None:
    text = "We met the weekend before April 10, 2023 and again in June."
    mentions = parser.parse_dates(text, R_SAT)
    assert mentions[0].text == "the weekend before April 10, 2023"
    assert mentions[0].window == TimeWindow(start=d(2023, 4, 8), end=eod(2023, 4, 10), grain="day")


# --- "the <ordinal> day / week / weekend / month of <period>" ---------------------------------
# The named part *within* the period, resolved against it (not against the reference time).
# Weeks of a period are its 7-day blocks (days 1-7, 8-14, ...; the last week is its last 7 days),
# a weekend is the n-th Saturday in the period and the Sunday after it.
PERIOD_PART_CASES: list[tuple[str, dt.datetime, Expected]] = [
    ("the first day of June", R_MON, (d(2022, 6, 1), eod(2022, 6, 1), "day")),
    ("the last day of June", R_MON, (d(2022, 6, 30), eod(2022, 6, 30), "day")),
    ("the 1st day of June", R_MON, (d(2022, 6, 1), eod(2022, 6, 1), "day")),
    ("the third day of June 2023", R_MON, (d(2023, 6, 3), eod(2023, 6, 3), "day")),
    ("the first week of June", R_MON, (d(2022, 6, 1), eod(2022, 6, 7), "week")),
    ("the 2nd week of June", R_MON, (d(2022, 6, 8), eod(2022, 6, 14), "week")),
    ("the second week of July 2022", R_MON, (d(2022, 7, 8), eod(2022, 7, 14), "week")),
    ("the last week of March", R_MON, (d(2023, 3, 25), eod(2023, 3, 31), "week")),
    ("the final week of June", R_MON, (d(2022, 6, 24), eod(2022, 6, 30), "week")),
    ("the first day of next month", R_MON, (d(2023, 6, 1), eod(2023, 6, 1), "day")),
    ("the first day of last month", R_MON, (d(2023, 4, 1), eod(2023, 4, 1), "day")),
    ("the first week of last month", R_MON, (d(2023, 4, 1), eod(2023, 4, 7), "week")),
    ("the first week of the month", R_MON, (d(2023, 5, 1), eod(2023, 5, 7), "week")),
    ("the first day of the year", R_MON, (d(2023, 1, 1), eod(2023, 1, 1), "day")),
    ("the last day of the year", R_MON, (d(2023, 12, 31), eod(2023, 12, 31), "day")),
    ("the first day of this year", R_MON, (d(2023, 1, 1), eod(2023, 1, 1), "day")),
    ("the first day of 2023", R_MON, (d(2023, 1, 1), eod(2023, 1, 1), "day")),
    ("the last day of last year", R_MON, (d(2022, 12, 31), eod(2022, 12, 31), "day")),
    ("the first month of 2023", R_MON, (d(2023, 1, 1), eod(2023, 1, 31), "month")),
    ("the last month of 2022", R_MON, (d(2022, 12, 1), eod(2022, 12, 31), "month")),
    ("the first week of 2023", R_MON, (d(2023, 1, 1), eod(2023, 1, 7), "week")),
    ("the first day of summer", R_MON, (d(2022, 6, 1), eod(2022, 6, 1), "day")),
    ("the last day of summer", R_SAT, (d(2024, 8, 31), eod(2024, 8, 31), "day")),
    ("the first week of last summer", R_MON, (d(2022, 6, 1), eod(2022, 6, 7), "week")),
    ("the first day of spring 2024", R_MON, (d(2024, 3, 1), eod(2024, 3, 1), "day")),
    ("the last week of the summer of 2022", R_MON, (d(2022, 8, 25), eod(2022, 8, 31), "week")),
    ("the first weekend of August 2023", R_MON, (d(2023, 8, 5), eod(2023, 8, 6), "day")),
    ("the first weekend of October 2023", R_MON, (d(2023, 10, 7), eod(2023, 10, 8), "day")),
    ("the last weekend of June", R_SAT, (d(2024, 6, 29), eod(2024, 6, 30), "day")),
    ("the second weekend of the month", R_SAT, (d(2024, 6, 8), eod(2024, 6, 9), "day")),
    ("the last two weeks of August 2023", R_MON, (d(2023, 8, 18), eod(2023, 8, 31), "week")),
    ("the first three days of June 2023", R_MON, (d(2023, 6, 1), eod(2023, 6, 3), "day")),
    ("the last two weekends of June 2023", R_MON, (d(2023, 6, 17), eod(2023, 6, 25), "day")),
    # a part the period has not got: the period itself
    ("the fifth week of February 2023", R_MON, (d(2023, 2, 1), eod(2023, 2, 28), "month")),
    ("the last six weekends of February 2023", R_MON, (d(2023, 2, 1), eod(2023, 2, 28), "month")),
    ("the first day of Q3 2022", R_MON, (d(2022, 7, 1), eod(2022, 7, 1), "day")),
    ("since the first day of June", R_SAT, (d(2024, 6, 1), R_SAT, "day")),
    (
        "Where did Andrew go during the first weekend of August 2023?",
        R_MON,
        (d(2023, 8, 5), eod(2023, 8, 6), "day"),
    ),
    (
        "Which country was Tim visiting in the second week of November?",
        R_MON,
        (d(2022, 11, 8), eod(2022, 11, 14), "week"),
    ),
    (
        "Where was Dave in the last two weeks of August 2023?",
        R_MON,
        (d(2023, 8, 18), eod(2023, 8, 31), "week"),
    ),
    # must NOT become dates: an ordinal day / week of something that is not a period
    ("my first day at work", R_MON, None),
    ("day one", R_MON, None),
    ("on the first day", R_MON, None),
    ("the first day of school", R_MON, None),
    ("the first week of school was hard", R_MON, None),
    ("the last day of the trip", R_MON, None),
    ("the first weekend of the festival", R_MON, None),
    ("for the first time", R_MON, None),
    # an ordinal before a count is a rank among things, not a day of the month
    ("Which year did Mara adopt the first three of her cats?", R_MON, None),
    ("She adopted the first two of her cats in a shelter", R_MON, None),
    ("We kept the first few of them", R_MON, None),
    ("I read the second three chapters", R_MON, None),
    ("the first of May", R_SAT, (d(2024, 5, 1), eod(2024, 5, 1), "day")),
    ("I know this is the third time it's happened", R_MON, None),
    ("What's the second one's name?", R_MON, None),
    ("my last year of college", R_MON, None),
    # must NOT change
    ("the first of June", R_MON, (d(2022, 6, 1), eod(2022, 6, 1), "day")),
    ("the first Monday of June", R_MON, (d(2023, 6, 5), eod(2023, 6, 5), "day")),
    ("the first Monday of next month", R_MON, (d(2023, 6, 5), eod(2023, 6, 5), "day")),
    ("last week", R_MON, (d(2023, 5, 1), eod(2023, 5, 7), "week")),
    ("the week of 9 May 2023", R_SAT, (d(2023, 5, 8), eod(2023, 5, 14), "week")),
    ("the first quarter of 2023", R_MON, (d(2023, 1, 1), eod(2023, 3, 31), "quarter")),
    ("the day before 9 May 2023", R_SAT, (d(2023, 5, 8), eod(2023, 5, 8), "day")),
    ("the last day of the month", R_MON, (d(2023, 5, 31), eod(2023, 5, 31), "day")),
]


@pytest.mark.parametrize(
    ("text", "ref", "expected"), PERIOD_PART_CASES, ids=[_case_id(c) for c in PERIOD_PART_CASES]
)
def test_ordinal_part_of_a_period(
    parser: DucklingDateParser, text: str, ref: dt.datetime, expected: Expected
) -> None:
    _assert_query_window(parser, text, ref, expected)


def test_ordinal_part_mention_covers_the_whole_expression(parser: DucklingDateParser) -> None:
    text = "We left on the last day of June 2022 and came back in May."
    mentions = parser.parse_dates(text, R_MON)
    assert mentions[0].text == "the last day of June 2022"
    assert mentions[0].window == TimeWindow(start=d(2022, 6, 30), end=eod(2022, 6, 30), grain="day")


def test_ordinal_part_without_duckling() -> None:
    rules_only = DucklingDateParser(use_duckling=False)
    window = rules_only.parse_query_dates("the first week of summer 2022", R_MON)
    assert window == TimeWindow(start=d(2022, 6, 1), end=eod(2022, 6, 7), grain="week")


def test_first_time_is_no_day_of_the_month(parser: DucklingDateParser) -> None:
    # Our dated sets' "captained the team for the first time" once dated the paragraph to the
    # first of the month it was stored in, beating the year it states.
    text = (
        "After months of negotiation, Emet Morridge moved to FC Almsted in March 2010. "
        "In 2011 Morridge captained the team for the first time."
    )
    window = parser.event_window(text, d(2024, 5, 20, 9))
    assert window == TimeWindow(start=d(2010, 3, 1), end=eod(2010, 3, 31), grain="month")


# --- "as of X" / "as at X" / "by X" in a question: a state at X, told any time up to X's end ------

AS_OF_CASES: list[tuple[str, dt.datetime, Expected]] = [
    # one year's look-back from the start of X (as "before X" has), ending at X's end, inclusive
    (
        "How long has Tim been playing the piano for, as of December 2023?",
        R_SAT,
        (d(2022, 12, 1), eod(2023, 12, 31), "month"),
    ),
    ("What was Ana reading as of 12 December?", R_SAT, (d(2022, 12, 12), eod(2023, 12, 12), "day")),
    # "at 3 December" alone is 3 a.m. to Duckling: "as at" is read as one word
    ("Where did she live as at 3 December 2023?", R_SAT, (d(2022, 12, 3), eod(2023, 12, 3), "day")),
    ("What was he reading as of last week?", R_MON, (d(2022, 5, 1), eod(2023, 5, 7), "week")),
    ("Where did Ana live as of the summer of 2022?", R_SAT, (d(2021, 6, 1), eod(2022, 8, 31), "season")),
    # "by X" only when a date follows it at once
    (
        "How many tournaments has Nate won by July 10, 2022?",
        R_SAT,
        (d(2021, 7, 10), eod(2022, 7, 10), "day"),
    ),
    # asked after the date, Duckling's "by July 10" (now until next July) left only "2022"
    (
        "How many video game tournaments has Nate won by July 10, 2022?",
        d(2022, 11, 12),
        (d(2021, 7, 10), eod(2022, 7, 10), "day"),
    ),
    # Duckling's own "by December" runs from now to next December; read past-preferred instead
    ("What had she read by December?", R_WED, (d(2022, 12, 1), eod(2023, 12, 31), "month")),
    # unchanged: "in X", "before X", "by" not followed by a date, no date at all
    ("What did Tim do in December 2023?", R_SAT, (d(2023, 12, 1), eod(2023, 12, 31), "month")),
    ("What did Tim do before June 2023?", R_SAT, (d(2022, 6, 1), eod(2023, 5, 31), "month")),
    ("What was shared by John on December 1, 2023?", R_SAT, (d(2023, 12, 1), eod(2023, 12, 1), "day")),
    ("What is Joanna inspired by?", R_SAT, None),
    ("What area was hit by a flood?", R_SAT, None),
]


@pytest.mark.parametrize(("text", "ref", "expected"), AS_OF_CASES, ids=[_case_id(c) for c in AS_OF_CASES])
def test_as_of_in_a_question_looks_back_to_the_end_of_the_time(
    parser: DucklingDateParser, text: str, ref: dt.datetime, expected: Expected
) -> None:
    _assert_query_window(parser, text, ref, expected)


def test_as_of_is_read_in_questions_only(parser: DucklingDateParser) -> None:
    # In a memory "by Friday" is a deadline and "as of December" when a state began: the rule is
    # the question's (what holds at X), so what retain dates stays as it was.
    by_friday = parser.parse_dates("I'll finish the painting by Friday.", R_MON)
    assert [(m.text, m.window) for m in by_friday] == [
        ("by Friday", TimeWindow(start=R_MON, end=eod(2023, 5, 11), grain="day"))
    ]
    as_of = parser.event_window("As of December 2023 I'm vegan.", R_SAT)
    assert as_of == TimeWindow(start=d(2023, 12, 1), end=eod(2023, 12, 31), grain="month")
    as_at = parser.parse_dates("Where did she live as at 3 December 2023?", R_SAT)
    assert [m.text for m in as_at] == ["at 3 December 2023"]  # Duckling's own reading, unchanged


def test_as_of_without_duckling() -> None:
    rules_only = DucklingDateParser(use_duckling=False)
    window = rules_only.parse_query_dates("Where did Ana live as of summer 2022?", R_MON)
    assert window == TimeWindow(start=d(2021, 6, 1), end=eod(2022, 8, 31), grain="season")
