"""The benchmarks' one timing wrapper (``benchmarks/_timing.py``)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _timing as T


def test_timed_calls_times_every_call_under_its_label_and_restores() -> None:
    sqrt, floor = math.sqrt, math.floor
    with T.timed_calls({(math, "sqrt"): "sqrt", (math, "floor"): lambda x: f"floor {x}"}) as stages:
        assert math.sqrt(9.0) == 3.0  # the wrapped function still answers
        math.floor(1.5)
        math.sqrt(4.0)
    assert {k: len(v) for k, v in stages.items()} == {"sqrt": 2, "floor 1.5": 1}
    assert all(ms >= 0.0 for values in stages.values() for ms in values)
    assert math.sqrt is sqrt and math.floor is floor


def test_timed_calls_restores_after_an_error_and_times_the_failed_call() -> None:
    sqrt = math.sqrt
    with pytest.raises(ValueError), T.timed_calls({(math, "sqrt"): "sqrt"}) as stages:
        math.sqrt(-1.0)
    assert len(stages["sqrt"]) == 1
    assert math.sqrt is sqrt
