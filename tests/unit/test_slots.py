"""Building slotted dataclasses through their slots: the same objects as calling them."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from shared_core.recall.boosts import BoostInput, ScoredCandidate
from shared_core.recall.fusion import ArmHit, FusedCandidate
from shared_core.slots import builder, sequence_builder, slot_fields
from shared_core.types import RecalledMemory, ScoreBreakdown


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Plain:
    a: int
    b: str = "x"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Unslotted:
    a: int


def _example(cls: type) -> dict[str, object]:
    """One value per field, each distinct."""
    return {f.name: (i, f.name) for i, f in enumerate(dataclasses.fields(cls))}


@pytest.mark.parametrize(
    "cls", [Plain, BoostInput, ScoredCandidate, ArmHit, FusedCandidate, RecalledMemory, ScoreBreakdown]
)
def test_a_built_object_equals_the_called_one_field_for_field(cls: type) -> None:
    values = _example(cls)
    names = tuple(reversed(values))  # any order of the fields
    called = cls(**values)
    for built in (
        builder(cls, names)(*(values[n] for n in names)),
        sequence_builder(cls, names)([values[n] for n in names]),
    ):
        assert type(built) is cls and built == called
        assert all(getattr(built, n) == v for n, v in values.items())
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.__setattr__(names[0], 1)


def test_a_class_whose_init_does_more_is_called() -> None:
    assert slot_fields(Checked) is None and slot_fields(Unslotted) is None
    with pytest.raises(ValueError, match="negative"):
        builder(Checked, ("a",))(-1)
    assert builder(Unslotted, ("a",))(3) == Unslotted(a=3)
    # not every field named: called too, so the class's own error
    assert slot_fields(Plain) == {"a", "b"}
    assert builder(Plain, ("a",))(1) == Plain(a=1)


def test_a_builder_takes_exactly_its_fields() -> None:
    make = builder(Plain, ("a", "b"))
    with pytest.raises(TypeError):
        make(1)
    assert make(1, "y") == Plain(a=1, b="y")
    assert builder(ArmHit, ("id", "score", "temporal_proximity"))("m", 0.5, None) == ArmHit(id="m", score=0.5)
    stamp = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    # Fields left at None build what the class's defaults give.
    names = tuple(f.name for f in dataclasses.fields(BoostInput))
    given: dict[str, object] = {"id": "m", "mentioned_at": stamp, "proof_count": 2}
    built = builder(BoostInput, names)(*(given.get(n) for n in names))
    assert built == BoostInput(id="m", mentioned_at=stamp, proof_count=2)
