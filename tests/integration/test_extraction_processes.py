"""Extraction in worker processes gives what extraction in this process gives (real spaCy and
Duckling in the children), prints nothing, reports failures typed, and leaves no process."""

from __future__ import annotations

import datetime as dt

import pytest

from shared_core.errors import ConfigurationError, ModelUnavailableError
from shared_core.extraction.dates import default_date_parser
from shared_core.extraction.entities import SpacyEntityExtractor
from shared_core.extraction.processes import ExtractionProcesses, raw_extract

T0 = dt.datetime(2024, 5, 3, 14, 0, tzinfo=dt.UTC)
TEXTS = [
    'Caroline said, "I went to the LGBTQ support group yesterday and it was powerful."',
    'Melanie said, "Wow Caroline! I painted a sunrise at the lake last week."',
    'Caroline said, "Next month I\'m moving to Lisbon to work for Northwind Labs."',
    'Melanie said, "lol ok, see you on Friday then."',
    'Jon said, "My dance studio in Denver opens on 20 June 2023."',
    "ok sounds good",
    'Gina said, "Jon, I lost my job at Door Dash in January."',
]
DATED = [(t, T0 + dt.timedelta(days=i)) for i, t in enumerate(TEXTS)]


def test_processes_return_what_this_process_computes(capfd: pytest.CaptureFixture[str]) -> None:
    extractor, parser = SpacyEntityExtractor(), default_date_parser()
    expected = raw_extract(extractor, parser, TEXTS, DATED)
    with ExtractionProcesses(processes=2, entity_extractor=extractor, date_parser=parser) as workers:
        got = workers.run(TEXTS, DATED)
        # Each batch is cut between the processes differently; a text's result does not change.
        again = workers.run(TEXTS[::-1], DATED[:3])
        children = list(workers._children)
    assert got == expected
    assert again == (expected[0][::-1], expected[1][:3])
    assert any(expected[0]) and any(w is not None for w in expected[1])
    assert all(child.poll() is not None for child in children)  # ended on close
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_no_extractor_or_no_parser_gives_empty_results() -> None:
    with ExtractionProcesses(processes=1, entity_extractor=None, date_parser=default_date_parser()) as w:
        mentions, windows = w.run(TEXTS[:2], DATED[:1])
    assert mentions == [[], []] and windows[0] is not None


def test_a_model_that_cannot_load_in_the_child_raises_typed() -> None:
    broken = SpacyEntityExtractor("no_such_spacy_pipeline")
    with (
        ExtractionProcesses(processes=1, entity_extractor=broken, date_parser=None) as workers,
        pytest.raises(ModelUnavailableError, match="no_such_spacy_pipeline"),
    ):
        workers.run(TEXTS[:1], [])


def test_a_model_that_cannot_be_pickled_is_refused_before_any_process_starts() -> None:
    class Local:  # a class inside a function cannot be pickled
        def extract(self, texts: object) -> list[list[object]]:
            return []

    with pytest.raises(ConfigurationError, match="cannot be sent"):
        ExtractionProcesses(processes=1, entity_extractor=Local(), date_parser=None)  # type: ignore[arg-type]
