"""Calendar arithmetic shared by date parsing and the boosts."""

from __future__ import annotations

import calendar
import datetime as _dt
from typing import Literal

__all__ = ["add_months"]


def add_months(
    value: _dt.datetime, months: int, *, missing_day: Literal["clamp", "raise"] = "clamp"
) -> _dt.datetime:
    """``value`` moved by ``months`` calendar months (negative: back).

    When the day does not exist in the target month (the 31st in April), ``"clamp"`` takes the
    month's last day, the right end for a period ("a month from January 31st" ends in
    February); ``"raise"`` raises ``ValueError``, for a recurring day of the month that skips
    the months without it ("the 31st" is never in February).

    >>> import datetime as dt
    >>> add_months(dt.datetime(2024, 1, 31), 1)
    datetime.datetime(2024, 2, 29, 0, 0)
    >>> add_months(dt.datetime(2024, 1, 31), 1, missing_day="raise")
    Traceback (most recent call last):
      ...
    ValueError: day is out of range for month
    """
    years, month0 = divmod(value.month - 1 + months, 12)
    year, month = value.year + years, month0 + 1
    day = value.day
    if missing_day == "clamp":
        day = min(day, calendar.monthrange(year, month)[1])
    return value.replace(year=year, month=month, day=day)
